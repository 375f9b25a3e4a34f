"""Grounded-answer benchmark: the production answer engine with the default model (Gemma 3 270M in process) on two
sets, answers saved with the passages they were given so every figure can be recomputed from the saved file.

- `golden`: the bundled golden set (golden/golden.yaml) over the fixture corpus, each item asked with its own tags.
- `pubmedqa`: a seeded sample of the PubMedQA development half (../shared/data/pubmedqa-dev, see its SOURCE.md)
  over a corpus of 100 of its abstracts (conclusions left out): the sampled questions' own and others from the same
  half (a bounded corpus: ingesting all 500 takes too long on two shared cores). Sampled from the odd positions of
  the sorted ids; the even positions are the ones `nbs/30a_answer_attribution.ipynb` fits its thresholds on.

Per set: answers that hit the output limit, answers that repeat a sentence, must_include (golden), yes/no/maybe
accuracy (pubmedqa, read from the answer by `verdict_of`), token F1 and answer recall against the reference, the
share of answer sentences supported by the passages they cite, unsupported figures, how the answer was produced,
model-cited rate, p50/p95 latency over all questions and over those the model was asked (the gate refuses the
others in milliseconds). Timings come from a machine shared with other work: noisy. Nothing is asserted.

    .venv/bin/python bench/bench_grounded.py run --set golden --out bench/.cache/golden-after.json
    .venv/bin/python bench/bench_grounded.py run --set pubmedqa --n 16 --out bench/.cache/pubmedqa-after.json
    .venv/bin/python bench/bench_grounded.py score bench/.cache/golden-before.json bench/.cache/golden-after.json
"""
import argparse, json, random, re, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUBMEDQA = ROOT.parent / "shared" / "data" / "pubmedqa-dev" / "pqal_dev.json"
CACHE = ROOT / "bench" / ".cache"


def pubmedqa_split(path=None) -> tuple[dict, list[str], list[str]]:
    "The PubMedQA items, the fit ids (even positions of the sorted ids) and the bench ids (odd positions)."
    d = json.loads(Path(path or PUBMEDQA).read_text())
    ids = sorted(d)
    return d, ids[0::2], ids[1::2]


def _context(settings, data_dir:Path, docs:list[tuple[str, str]]):
    "A context over `data_dir`, ingesting `docs` (title, text) when the directory is new."
    from keel.factory import build_context
    ctx = build_context(settings.replace(data_dir=data_dir))
    if ctx.con.execute("SELECT count(*) FROM documents").fetchone()[0]: return ctx
    src = Path(tempfile.mkdtemp(prefix="keel-bench-docs-"))
    t = time.perf_counter()
    for i, (title, text) in enumerate(docs):
        p = src / f"{i:04d}.txt"; p.write_text(text)
        r = ctx.ingestor.ingest_path(p, title=title)
        if r.error: print(" ", r.line, file=sys.stderr)
    print(f"ingested {len(docs)} documents in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    return ctx


def golden_cases():
    from keel.evals.golden import load_golden
    return [dict(id=it.id, question=it.question, tags=list(it.user_tags), reference=it.expected_answer,
                 must_include=list(it.must_include), expect_refusal=it.expect_refusal, split=it.split)
            for it in load_golden(ROOT / "golden" / "golden.yaml")]


def pubmedqa_cases(n:int, seed:int):
    d, _, bench = pubmedqa_split()
    pick = random.Random(seed).sample(bench, n)
    return [dict(id=k, question=d[k]["QUESTION"], tags=["public"], reference=d[k]["LONG_ANSWER"], decision=d[k]["final_decision"],
                 source=f"PMID {k}", must_include=[], expect_refusal=False) for k in pick]


class RecordingLLM:
    "Wraps the engine's model and keeps every raw reply, so the answers can be re-read later with other attribution thresholds."
    def __init__(self, inner): self.inner, self.name, self.replies = inner, inner.name, []
    @property
    def prompt_style(self): return self.inner.prompt_style
    def complete(self, prompt, **kw):
        r = self.inner.complete(prompt, **kw); self.replies.append(r.content); return r
    def chat(self, messages, **kw):
        r = self.inner.chat(messages, **kw); self.replies.append(r.content); return r


def run(args):
    from keel.config import load_settings
    from keel.answer.types import User
    from keel.answer.engine import AnswerEngine
    s = load_settings(env={}, dotenv=None, llm_threads=args.threads, answer_mode=args.mode)
    if args.max_output_tokens: s = s.replace(max_output_tokens=args.max_output_tokens)
    if args.set == "golden":
        from keel.factory import build_context
        ctx = build_context(s.replace(data_dir=Path(args.data_dir or tempfile.mkdtemp(prefix="keel-bench-golden-"))))
        if not ctx.con.execute("SELECT count(*) FROM documents").fetchone()[0]:
            for r in ctx.ingestor.ingest_manifest(ROOT / "golden" / "corpus" / "manifest.yaml"): print(" ", r.line, file=sys.stderr)
        cases = golden_cases()
    else:
        d, _, bench = pubmedqa_split()
        cases = pubmedqa_cases(args.n, args.seed)
        asked = [c["id"] for c in cases]
        others = random.Random(args.seed + 1).sample([k for k in bench if k not in asked], max(0, min(args.corpus, len(d)) - len(asked)))
        docs = [(f"PMID {k}", "\n\n".join(d[k]["CONTEXTS"])) for k in sorted(asked + others)]
        ctx = _context(s, Path(args.data_dir or CACHE / f"pubmedqa-data-n{args.n}-c{args.corpus}-s{args.seed}"), docs)
    cases = cases[:args.limit] if args.limit else cases
    eng = ctx.answer_engine
    eng.retriever.retrieve("warm up", ["public"], 1)
    rec = None
    if args.mode == "generative":
        ctx.llm.complete("Hello", max_tokens=1, temperature=0)
        rec = RecordingLLM(ctx.llm)
        eng = AnswerEngine(eng.retriever, rec, eng.ledger, eng.log, eng.settings)
    rows = []
    for c in cases:
        n0 = len(rec.replies) if rec else 0
        a = eng.answer(c["question"], User("bench", c["tags"]))
        rows.append(dict(c, answer=a.text, refused=a.refused, latency_ms=a.latency_ms, output_tokens=a.output_tokens,
                         raw=rec.replies[n0:] if rec else [],
                         prompt_tokens=a.prompt_tokens, produced_by=getattr(a, "produced_by", ""),
                         citations=[dict(n=c_.n, chunk_id=c_.chunk_id, inferred=c_.inferred) for c_ in a.citations],
                         retrieved=[dict(chunk_id=h.chunk_id, title=h.title, text=h.text) for h in a.retrieved]))
        print(f"  {a.latency_ms/1000:5.1f}s {a.output_tokens:4d} tok {c['question'][:50]:50} | {a.text[:100]!r}", file=sys.stderr, flush=True)
        out = dict(set=args.set, mode=args.mode, n=len(rows), seed=args.seed, corpus=getattr(args, "corpus", None) if args.set == "pubmedqa" else None,
                   max_output_tokens=s.max_output_tokens, commit=_commit(), rows=rows)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1))     # after every answer: a run stopped early keeps what it has
    ctx.close()


def recover(args):
    "The saved-run JSON rebuilt from a bench data directory's inference log (a run stopped early keeps what it answered)."
    import sqlite3
    con = sqlite3.connect(f"file:{args.data_dir / 'keel.db'}?mode=ro", uri=True)
    if args.set == "golden": cases = golden_cases()
    else: cases = pubmedqa_cases(args.n, args.seed)
    by_q, rows = {c["question"]: c for c in cases}, []
    for rid, q, ans, refused, cites, lat, out_t, p_t, retrieved in con.execute(
            "SELECT request_id, question, answer, refused, citations, latency_ms, output_tokens, prompt_tokens, retrieved FROM inference_log ORDER BY id"):
        if q not in by_q: continue
        ids = [r["chunk_id"] for r in json.loads(retrieved)]
        texts = dict(con.execute(f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids)) if ids else {}
        rows.append(dict(by_q[q], answer=ans, refused=bool(refused), latency_ms=lat, output_tokens=out_t, prompt_tokens=p_t, produced_by="",
                         citations=[dict(n=c["n"], chunk_id=c["chunk_id"], inferred=c["inferred"]) for c in json.loads(cites)],
                         retrieved=[dict(chunk_id=i, title="", text=texts.get(i, "")) for i in ids]))
    out = dict(set=args.set, mode="generative", n=len(rows), seed=args.seed, max_output_tokens=args.max_output_tokens, commit="", recovered=True, rows=rows)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"recovered {len(rows)} of {len(cases)} answers", file=sys.stderr)


def replay(args):
    "Re-read each saved raw reply with the engine's current reading (`_read_reply`) over the same passages from the data directory."
    from keel.config import load_settings
    from keel.factory import build_context
    from keel.providers.base import ChunkHit
    d = json.loads(Path(args.file).read_text())
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=args.data_dir))
    eng = ctx.answer_engine
    for r in d["rows"]:
        if not r.get("raw"): continue
        ids = [h["chunk_id"] for h in r["retrieved"]]
        rows = {x[0]: x for x in ctx.con.execute(f"SELECT c.id, c.text, c.document_id, d.source, d.title, c.heading, c.page FROM chunks c "
                                                 f"JOIN documents d ON d.id = c.document_id WHERE c.id IN ({','.join('?' * len(ids))})", ids)}
        hits = [ChunkHit(i, 0.0, rows[i][1], rows[i][2], rows[i][3], rows[i][4], rows[i][5] or "", rows[i][6]) for i in ids]
        text, cites, refused, how = eng._read_reply(r["raw"][-1], r["question"], hits)
        r.update(answer=text, refused=refused, produced_by=how, citations=[dict(n=c.n, chunk_id=c.chunk_id, inferred=c.inferred) for c in cites])
    d["replayed_with"] = _commit()
    Path(args.out).write_text(json.dumps(d, indent=1))
    ctx.close()


def _commit() -> str:
    import subprocess
    try: return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError: return ""


def verdict_of(text:str) -> str:
    "yes / no / maybe read from a free-text answer: a leading yes or no wins, then hedges, then negations, else yes."
    t = text.lower().strip()
    m = re.match(r"\W*(yes|no)\b", t)
    if m: return m.group(1)
    if re.search(r"\b(may|might|unclear|uncertain|not clear|inconclusive|remains to be|further stud)", t): return "maybe"
    if re.search(r"\b(not|no|did not|does not|neither|nor|without)\b", t): return "no"
    return "yes"


def _repeats(text:str) -> bool:
    "Whether the answer repeats a sentence or runs one phrase over and over (`first_repeat`)."
    from keel.providers.base import first_repeat
    return first_repeat(text) is not None


def _embedder():
    "The packaged embedding model's `embed`, for attribution as the engine does it (None when it cannot load)."
    from keel.models import default_embedding_dir
    from keel.providers.fastembed import FastEmbedEmbeddings
    try: return FastEmbedEmbeddings(default_embedding_dir(CACHE / "models")).embed
    except Exception as e:
        print(f"attribution without embeddings: {e}", file=sys.stderr); return None


def score(path:Path) -> dict:
    "The figures of one saved run."
    from keel.stats import percentile
    d = json.loads(Path(path or PUBMEDQA).read_text())
    rows, lim = d["rows"], d["max_output_tokens"]
    ans = [r for r in rows if not r["expect_refusal"]]
    answered = [r for r in ans if not r["refused"]]
    out = dict(file=Path(path).name, n=len(rows), mode=d["mode"],
               hit_limit=sum(r["output_tokens"] >= lim - 1 for r in rows), repeats_itself=sum(_repeats(r["answer"]) for r in rows),
               refused_answerable=sum(r["refused"] for r in ans),
               latency_p50_s=percentile([r["latency_ms"] / 1000 for r in rows], 50), latency_p95_s=percentile([r["latency_ms"] / 1000 for r in rows], 95))
    called = [r["latency_ms"] / 1000 for r in rows if r["output_tokens"] > 0]     # the model was asked (the gate let it through)
    if called: out.update(model_answers=len(called), model_latency_p50_s=percentile(called, 50), model_latency_p95_s=percentile(called, 95))
    mi = [r for r in ans if r["must_include"]]
    ok = lambda r: not r["refused"] and all(m.lower() in r["answer"].lower() for m in r["must_include"])
    if mi: out["must_include"] = sum(map(ok, mi)) / len(mi)
    for split in ("tune", "heldout"):
        part = [r for r in mi if r.get("split") == split]
        if part: out[f"must_include_{split}"] = f"{sum(map(ok, part))}/{len(part)}"
    if any("decision" in r for r in rows): out["yes_no_maybe_acc"] = sum(verdict_of(r["answer"]) == r["decision"] for r in ans) / len(ans)
    out["model_cited_rate"] = sum(any(not c["inferred"] for c in r["citations"]) for r in answered) / max(1, len(answered))
    from keel.evals.grounding import token_f1, answer_recall, groundedness
    embed = _embedder()
    out["token_f1"] = sum(token_f1(r["answer"] if not r["refused"] else "", r["reference"]) for r in ans) / len(ans)
    out["answer_recall"] = sum(answer_recall(r["answer"] if not r["refused"] else "", r["reference"]) for r in ans) / len(ans)
    g = [groundedness(r["answer"], [c["n"] for c in r["citations"]], [h["text"] for h in r["retrieved"]], embed) for r in answered]
    sents = sum(x["sentences"] for x in g)
    out["answer_sentences"] = sents
    out["supported_sentences"] = sum(x["supported"] for x in g) / sents if sents else None
    out["unsupported_figures"] = sum(x["unsupported_figures"] for x in g)
    out["answers_with_unsupported_figures"] = sum(x["unsupported_figures"] > 0 for x in g)
    out["produced_by"] = {k: sum(r.get("produced_by") == k for r in rows) for k in sorted({r.get("produced_by") or "" for r in rows})}
    return out


def main(argv=None):
    global PUBMEDQA
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="answer one set and save the answers")
    r.add_argument("--set", choices=("golden", "pubmedqa"), required=True)
    r.add_argument("--n", type=int, default=16, help="PubMedQA sample size")
    r.add_argument("--corpus", type=int, default=100, help="PubMedQA abstracts in the corpus: the sampled questions' own and others from the same half")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--mode", choices=("generative", "extractive"), default="generative")
    r.add_argument("--threads", type=int, default=None)
    r.add_argument("--max-output-tokens", type=int, default=0, help="override the setting (0: the default)")
    r.add_argument("--limit", type=int, default=0, help="ask only the first N cases (to match a run stopped early)")
    r.add_argument("--data-dir", type=Path)
    r.add_argument("--pubmedqa", type=Path, help=f"pqal_dev.json (default {PUBMEDQA.relative_to(ROOT.parent)} beside the repository)")
    r.add_argument("--out", type=Path, required=True)
    rc = sub.add_parser("recover", help="rebuild a saved run from a bench data directory (a run stopped early)")
    rc.add_argument("--set", choices=("golden", "pubmedqa"), required=True)
    rc.add_argument("--data-dir", type=Path, required=True)
    rc.add_argument("--n", type=int, default=16); rc.add_argument("--seed", type=int, default=0)
    rc.add_argument("--max-output-tokens", type=int, default=700)
    rc.add_argument("--pubmedqa", type=Path)
    rc.add_argument("--out", type=Path, required=True)
    rp = sub.add_parser("replay", help="re-read a saved run's raw replies with the current engine (same passages, same data directory)")
    rp.add_argument("file", type=Path); rp.add_argument("--data-dir", type=Path, required=True); rp.add_argument("--out", type=Path, required=True)
    sc = sub.add_parser("score", help="print the figures of saved runs side by side")
    sc.add_argument("files", nargs="+", type=Path)
    args = ap.parse_args(argv)
    PUBMEDQA = getattr(args, "pubmedqa", None) or PUBMEDQA
    if args.cmd == "run": return run(args)
    if args.cmd == "recover": return recover(args)
    if args.cmd == "replay": return replay(args)
    res = [score(f) for f in args.files]
    keys = list(dict.fromkeys(k for r in res for k in r))
    print("| figure | " + " | ".join(r["file"] for r in res) + " |\n|---|" + "---|" * len(res))
    for k in keys[1:]:
        print(f"| {k} | " + " | ".join(_fmt(r.get(k)) for r in res) + " |")


def _fmt(v):
    if isinstance(v, float): return f"{v:.2f}"
    return "—" if v is None else str(v)


if __name__ == "__main__": sys.exit(main())
