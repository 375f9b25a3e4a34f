"""Real model answers for the contradiction check: the packaged model's raw replies to the golden questions.

The fixture corpus and examples/own-documents are ingested into a fresh data directory; each answerable item of both question sets is retrieved as its user
and answered by the default generative model. Its raw reply (before Keel drops unsupported or contradicted
sentences) is split into sentences and written, with the passages the model saw, to
`bench/results/contradiction-answers.json`. A person labels each sentence in
`bench/contradiction_labels.yaml` (`contradicted: true` when a passage in front of the model says the opposite or
gives another figure for the same thing); `bench/bench_contradiction.py` scores the check against those
labels.

    python bench/contradiction_answers.py           # about ten seconds a question on two cores
    python bench/contradiction_answers.py --set fresh

`--set fresh` is a second set that no rule was written from: three pages of the SQLite manual (Debian's
`sqlite3-doc`) with the questions in `bench/contradiction_questions.yaml`, and 40 PubMedQA abstracts that neither
`examples/own-documents` nor the synthetic pairs of `bench/bench_contradiction.py` use, each with its own
question. It writes `bench/results/contradiction-answers-fresh.json`, labelled in
`bench/contradiction_labels_fresh.yaml`. `--set fresh-b` is a third: the SQLite FAQ with the questions in
`bench/contradiction_questions_faq.yaml` and the next 40 abstracts (`-fresh-b` files); `--set fresh-c` a fourth,
"Appropriate Uses For SQLite" (`contradiction_questions_whentouse.yaml`) and the last 36 abstracts; `--set fresh-d`
"Write-Ahead Logging" (`contradiction_questions_wal.yaml`) alone, the abstracts being used up.
"""
from __future__ import annotations
import argparse, json, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from keel.config import load_settings
from keel.factory import build_context
from keel.answer.types import User
from keel.answer.attribution import answer_sentences
from keel.answer.prompts import strip_scaffolding
from keel.answer.contradiction import contradiction
from keel.evals.golden import load_golden, GoldenItem, SourceRef

SQLITE_DOCS = Path("/usr/share/doc/sqlite3")
# set: (its questions, the manual's pages they were written from, PubMedQA abstracts after the 360 that
# bench_contradiction.pubmed_docs makes its synthetic pairs from)
FRESH = {"fresh": ("contradiction_questions.yaml", ("quirks", "autoinc", "limits"), (360, 400)),
         "fresh-b": ("contradiction_questions_faq.yaml", ("faq",), (400, 440)),
         "fresh-c": ("contradiction_questions_whentouse.yaml", ("whentouse",), (440, 476)),
         "fresh-d": ("contradiction_questions_wal.yaml", ("wal",), (476, 476))}

def fresh(ctx, name:str) -> list:
    "Ingest the documents of fresh set `name` into `ctx`; its questions as golden items."
    from bench_contradiction import SHARED
    questions, pages, span = FRESH[name]
    missing = [p for p in pages if not (SQLITE_DOCS / f"{p}.html").exists()]
    if missing:
        sys.exit(f"the SQLite manual is not installed (no {missing[0]}.html); run: apt-get install -y sqlite3-doc")
    if not (SHARED / "pubmedqa-dev" / "pqal_dev.json").exists(): sys.exit(f"no PubMedQA dev set under {SHARED}")
    for p in pages: ctx.ingestor.ingest_path(SQLITE_DOCS / f"{p}.html", title=p, acl_tags=("public",))
    own = {p.stem.removeprefix("pubmed-") for p in (ROOT / "examples" / "own-documents" / "docs").glob("*.txt")}
    d = json.loads((SHARED / "pubmedqa-dev" / "pqal_dev.json").read_text())
    items = list(load_golden(ROOT / "bench" / questions))
    with tempfile.TemporaryDirectory() as t:
        for k in [k for k in sorted(d) if k not in own][slice(*span)]:
            f = Path(t) / f"pubmed-{k}.txt"
            f.write_text("\n\n".join([*d[k]["CONTEXTS"], d[k]["LONG_ANSWER"]]) + "\n", encoding="utf-8")
            ctx.ingestor.ingest_path(f, title=f.stem, acl_tags=("public",))
            items.append(GoldenItem(id=f"fresh-{k}", question=d[k]["QUESTION"], user_tags=("public",),
                                    expected_answer=d[k]["final_decision"], expected_sources=(SourceRef(f.stem),)))
    return items

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("golden", *FRESH), default="golden",
                    help="the golden and own-documents questions (default), or a fresh set")
    ap.add_argument("--out", help="default bench/results/contradiction-answers[-SET].json")
    a = ap.parse_args(argv)
    suffix = "" if a.set == "golden" else "-" + a.set
    a.out = a.out or str(ROOT / "bench" / "results" / f"contradiction-answers{suffix}.json")
    t0, rows = time.perf_counter(), []
    with tempfile.TemporaryDirectory() as d:
        ctx = build_context(load_settings(env={}, dotenv=None, data_dir=Path(d)))
        if a.set != "golden": items = fresh(ctx, a.set)
        else:
            ctx.ingestor.ingest_manifest(ROOT / "golden" / "corpus" / "manifest.yaml", progress=False)
            own = ROOT / "examples" / "own-documents"
            for p in sorted((own / "docs").glob("*.txt")): ctx.ingestor.ingest_path(p, title=p.stem, acl_tags=("public",))
            items = [it for f in (ROOT / "golden" / "golden.yaml", own / "questions.yaml") for it in load_golden(f)
                     if not it.expect_refusal]
        eng = ctx.answer_engine
        raw = {}
        def keep(self, text, question, hits, *args, **kw):   # the model's reply as it came, before grounding
            raw["text"], raw["hits"] = text, hits
            return orig(text, question, hits, *args, **kw)
        orig = eng._read_reply
        eng._read_reply = keep.__get__(eng)
        for i, it in enumerate(items, 1):
            raw.clear()
            eng.answer(it.question, User("eval", list(it.user_tags)))
            if "text" not in raw: continue                   # refused or shown as evidence: no model reply
            passages = [h.text for h in raw["hits"]]
            for j, (s, _) in enumerate(answer_sentences(strip_scaffolding(raw["text"]))):
                c = contradiction(s, passages, it.question)
                rows.append(dict(item=it.id, n=j, question=it.question, sentence=s,
                                 passages=[dict(title=h.title, heading=h.heading, text=h.text) for h in raw["hits"]],
                                 flag=str(c) if c else ""))
            print(f"[{i}/{len(items)}] {it.id}: {len(rows)} sentences so far", flush=True)
    out = dict(model=ctx.settings.llm_model if hasattr(ctx.settings, "llm_model") else "", sentences=rows,
               seconds=round(time.perf_counter() - t0, 1))
    Path(a.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {a.out}: {len(rows)} sentences from {len({r['item'] for r in rows})} answers")

if __name__ == "__main__": main()
