"""End-to-end answer benchmark: the fixture corpus (golden/corpus) in a fresh data directory, the default model
(Gemma 3 270M in process), the production answer engine.

Reports, per request and on average: retrieval, prompt processing and generation time (llama.cpp's own counters
split the model call); how often the model's first reply is a bare citation; how often the answer contains every
must_include string (case-insensitive, not refused); how often the model cited a source itself; refusals.
`--compare` runs the same questions under alternative completion prompts (the comparison recorded in
nbs/30_answer_prompts.ipynb). Ratios come from one run; nothing here is asserted.

    .venv/bin/python bench/bench_answer.py [--compare] [--data-dir DIR] [--json OUT]
"""
import argparse, json, statistics, sys, tempfile, time
from pathlib import Path

from keel.config import load_settings
from keel.factory import build_context
from keel.answer import prompts
from keel.answer.engine import AnswerEngine
from keel.answer.prompts import is_bare_citation, strip_scaffolding, RULES, EXAMPLE, REFUSAL, format_sources
from keel.answer.types import User

ROOT = Path(__file__).resolve().parent.parent
# Questions written from golden/corpus/FACTS.md, each with the strings a correct answer must contain.
CASES = [("How many written quotes are needed for purchases from $10,000 to $100,000?", ["three"]),
         ("For how many days must an open tender be advertised?", ["21"]),
         ("Up to what amount can a corporate purchasing card be used for a single transaction?", ["5,000"]),
         ("Within how many days must a gift over $100 be declared in the gifts register?", ["5"]),
         ("How long are adult health records kept after the last visit?", ["7 years"]),
         ("How many years are billing records kept at the clinic?", ["5"]),
         ("Within how many hours must a suspected breach be reported to the Privacy Officer?", ["24"]),
         ("When were the clinic's fax machines decommissioned?", ["31 March 2026"]),
         ("How long are Keel's nightly backups kept?", ["30 days"]),
         ("At what time does the nightly Keel backup run?", ["01:00"])]
# In-domain questions the documents do not answer: the right outcome is a refusal (by the gate or the model).
UNANSWERABLE = ["How many days of annual leave do council staff get each year?", "Where can visitors park at the clinic?"]
USER = User("bench", ["public"])

REFUSAL_EXAMPLE = ("Sources:\n[1] (Security policy, Badges) Visitors must wear a badge at all times.\n"
                   "Question: What time does the cafeteria open?\nAnswer: " + REFUSAL)
EXAMPLE_CITES_1 = ("Sources:\n[1] (Travel guide, Taxis) Taxis to the airport are reimbursed up to $80.\n"
                   "Question: How much is reimbursed for an airport taxi?\nAnswer: Airport taxis are reimbursed up to $80 [1].")

def _variant(example_block:str|None):
    def completion_prompt(question, hits, firm=False):
        rules = RULES + (" " + prompts.FIRMER if firm else "")
        ex = f"{example_block}\n\n" if example_block else ""
        return f"{rules}\n\n{ex}Sources:\n{format_sources(hits)}\nQuestion: {' '.join(question.split())}\nAnswer:"
    return completion_prompt

VARIANTS = {"chosen: rules + example citing [2]": prompts.completion_prompt,
            "rules only": _variant(None),
            "rules + example citing [1]": _variant(EXAMPLE_CITES_1),
            "rules + example + refusal example": _variant(EXAMPLE + "\n\n" + REFUSAL_EXAMPLE)}


class TimedLLM:
    "Wraps the in-process LlamaCppLLM: reads llama.cpp's perf counters around each call (prompt evaluation vs the rest) and keeps each request's first reply."
    def __init__(self, inner): self.inner, self.name, self.replies, self.last_timings = inner, inner.name, [], {}
    @property
    def prompt_style(self): return self.inner.prompt_style
    def _timed(self, call):
        import llama_cpp
        ctx = self.inner._load()._ctx.ctx
        llama_cpp.llama_perf_context_reset(ctx)
        t0 = time.perf_counter()
        res = call()
        wall = (time.perf_counter() - t0) * 1000
        p = llama_cpp.llama_perf_context(ctx).t_p_eval_ms
        self.last_timings = {"prompt_ms": p, "generation_ms": max(0.0, wall - p)}
        self.replies.append(res.content)
        return res
    def complete(self, prompt, **kw): return self._timed(lambda: self.inner.complete(prompt, **kw))
    def chat(self, messages, **kw): return self._timed(lambda: self.inner.chat(messages, **kw))


def run(ctx, llm, label):
    eng = AnswerEngine(ctx.retriever, llm, ctx.ledger, ctx.log, ctx.settings)
    rows = []
    for q, must in CASES + [(q, None) for q in UNANSWERABLE]:
        n0 = len(llm.replies)
        a = eng.answer(q, USER)
        first = llm.replies[n0] if len(llm.replies) > n0 else None
        rows.append(dict(question=q, must=must, text=a.text, refused=a.refused, calls=len(llm.replies) - n0,
                         bare=first is not None and is_bare_citation(strip_scaffolding(first)),
                         correct=must is not None and not a.refused and all(m.lower() in a.text.lower() for m in must),
                         model_cited=any(not c.inferred for c in a.citations), **{k: a.timings.get(k, 0.0) for k in ("retrieval_ms", "prompt_ms", "generation_ms")},
                         latency_ms=a.latency_ms, prompt_tokens=a.prompt_tokens, output_tokens=a.output_tokens))
        print(f"  {'ok ' if rows[-1]['correct'] else 'REF' if a.refused else '-- '} {q[:58]:58} | {a.text[:90]!r}", flush=True)
    ans = [r for r in rows if r["must"] is not None]
    called = [r for r in rows if r["calls"]]
    s = dict(variant=label, correct=sum(r["correct"] for r in ans), answerable=len(ans),
             model_cited=sum(r["model_cited"] for r in ans), false_refusals=sum(r["refused"] for r in ans),
             refused_unanswerable=sum(r["refused"] for r in rows if r["must"] is None), unanswerable=len(UNANSWERABLE),
             bare_first=sum(r["bare"] for r in called), model_requests=len(called),
             **{f"mean_{k}": statistics.mean(r[k] for r in rows) for k in ("retrieval_ms", "prompt_ms", "generation_ms", "latency_ms")},
             mean_prompt_tokens=statistics.mean(r["prompt_tokens"] for r in called) if called else 0,
             mean_output_tokens=statistics.mean(r["output_tokens"] for r in called) if called else 0)
    print(f"{label}: correct {s['correct']}/{s['answerable']}, model cited {s['model_cited']}/{s['answerable']}, "
          f"false refusals {s['false_refusals']}, refused unanswerable {s['refused_unanswerable']}/{s['unanswerable']}, "
          f"bare first reply {s['bare_first']}/{s['model_requests']}; mean ms: retrieval {s['mean_retrieval_ms']:.0f}, "
          f"prompt {s['mean_prompt_ms']:.0f}, generation {s['mean_generation_ms']:.0f}, total {s['mean_latency_ms']:.0f}", flush=True)
    return s, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", action="store_true", help="also run the alternative completion prompts")
    ap.add_argument("--data-dir", type=Path, help="data directory to use (the fixture corpus is ingested if it is empty)")
    ap.add_argument("--json", type=Path, help="write the summaries and rows here")
    ap.add_argument("--top-k", type=int, default=6, help="passages placed in front of the model (settings.top_k_final)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    args = ap.parse_args(argv)
    d = args.data_dir or Path(tempfile.mkdtemp(prefix="keel-bench-answer-"))
    s = load_settings(env={}, dotenv=None, data_dir=d, temperature=0.0, max_output_tokens=120, llm_context=4096, llm_threads=args.threads, top_k_final=args.top_k)
    ctx = build_context(s)
    if not ctx.con.execute("SELECT count(*) FROM documents").fetchone()[0]:
        t = time.perf_counter()
        for r in ctx.ingestor.ingest_manifest(ROOT/"golden"/"corpus"/"manifest.yaml"): print(" ", r.line)
        print(f"ingested the fixture corpus in {time.perf_counter() - t:.1f}s")
    llm = TimedLLM(ctx.llm)
    ctx.retriever.retrieve("warm up", ["public"], 1); llm.complete("Hello", max_tokens=1, temperature=0); llm.replies.clear()
    out = []
    for label, fn in (VARIANTS.items() if args.compare else list(VARIANTS.items())[:1]):
        saved = prompts.completion_prompt
        prompts.completion_prompt = fn
        try: out.append(run(ctx, llm, label))
        finally: prompts.completion_prompt = saved
    print(f"\ntop_k_final={args.top_k}, {len(CASES)} answerable + {len(UNANSWERABLE)} unanswerable questions")
    print("| prompt | correct | model cited | false refusals | refused unanswerable | bare first reply | retrieval ms | prompt ms | generation ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s_, _ in out:
        print(f"| {s_['variant']} | {s_['correct']}/{s_['answerable']} | {s_['model_cited']}/{s_['answerable']} | {s_['false_refusals']} | "
              f"{s_['refused_unanswerable']}/{s_['unanswerable']} | {s_['bare_first']}/{s_['model_requests']} | {s_['mean_retrieval_ms']:.0f} | "
              f"{s_['mean_prompt_ms']:.0f} | {s_['mean_generation_ms']:.0f} |")
    if args.json: args.json.write_text(json.dumps([dict(summary=a, rows=b) for a, b in out], indent=1))
    ctx.close()
    return 0

if __name__ == "__main__": sys.exit(main())
