"""Real model answers for the contradiction check: the packaged model's raw replies to the golden questions.

The fixture corpus and examples/own-documents are ingested into a fresh data directory; each answerable item of both question sets is retrieved as its user
and answered by the default generative model. Its raw reply (before Keel drops unsupported or contradicted
sentences) is split into sentences and written, with the passages the model saw, to
`bench/results/contradiction-answers.json`. A person labels each sentence in
`bench/contradiction_labels.yaml` (`contradicted: true` when a passage in front of the model says the opposite or
gives another figure for the same thing); `bench/bench_contradiction.py --answers` scores the check against those
labels.

    python bench/contradiction_answers.py           # about ten seconds a question on two cores
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
from keel.evals.golden import load_golden

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "contradiction-answers.json"))
    a = ap.parse_args(argv)
    t0, rows = time.perf_counter(), []
    with tempfile.TemporaryDirectory() as d:
        ctx = build_context(load_settings(env={}, dotenv=None, data_dir=Path(d)))
        ctx.ingestor.ingest_manifest(ROOT / "golden" / "corpus" / "manifest.yaml", progress=False)
        own = ROOT / "examples" / "own-documents"
        for p in sorted((own / "docs").glob("*.txt")): ctx.ingestor.ingest_path(p, title=p.stem, acl_tags=("public",))
        eng = ctx.answer_engine
        raw = {}
        def keep(self, text, question, hits, *args, **kw):   # the model's reply as it came, before grounding
            raw["text"], raw["hits"] = text, hits
            return orig(text, question, hits, *args, **kw)
        orig = eng._read_reply
        eng._read_reply = keep.__get__(eng)
        items = [it for f in (ROOT / "golden" / "golden.yaml", own / "questions.yaml") for it in load_golden(f)
                 if not it.expect_refusal]
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
