"""Answerability evidence for every question of the two calibration corpora (built by answerability_corpora.py),
each asked twice through the production retriever: with its source documents visible (label 1, the documents
answer it) and with them masked the way a permission filter masks them (label 0). Also records the old gate's
number (the best hit's relevance) and the time the scoring added. Writes bench/answerability-features.csv, which
nbs/13a_answerability.ipynb fits the default calibration on. Usage:
    .venv/bin/python bench/answerability_features.py [--limit N]
"""
import argparse, csv, json, time
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT/"bench"/".cache"/"answerability"
OUT = ROOT/"bench"/"answerability-features.csv"

def open_corpus(name):
    from keel.config import load_settings
    from keel.db import connect
    from keel.factory import make_embeddings
    from keel.providers.faiss import build_from_db
    from keel.retrieval import Retriever
    from keel.answerability import Answerability, DEFAULT_CALIBRATION
    d = CACHE/name
    s = load_settings(env={}, dotenv=None, data_dir=d/"data")
    con = connect(s.db_path)
    emb = make_embeddings(s)
    r = Retriever(con, emb, build_from_db(con, emb.dim), s)
    meta = json.loads((d/"questions.json").read_text())
    docs = {}
    for cid, src in con.execute("SELECT c.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id"):
        docs.setdefault(Path(src).stem, []).append(cid)
    return Answerability(r, s, calibration=DEFAULT_CALIBRATION), meta["questions"], docs

def rows_for(name, limit=None):
    from keel.answerability import FEATURES
    a, qs, docs = open_corpus(name)
    out = []
    for n, q in enumerate(qs[:limit]):
        mask = [c for s in q["sources"] for c in docs.get(s, [])]
        for label, ex in ((1, ()), (0, mask)):
            t0 = time.perf_counter()
            hits, asm = a.assess(q["question"], None, exclude=ex)
            ms = (time.perf_counter() - t0) * 1000
            found = any(h.chunk_id in set(mask) for h in hits)
            out.append(dict(domain=name, qid=q["id"], group=q["sources"][0], label=label, source_retrieved=int(found),
                            old_relevance=round(max((h.relevance for h in hits), default=0.0), 6), assess_ms=round(ms, 3),
                            **{f: round(asm.features[f], 6) for f in FEATURES}))
        if (n + 1) % 100 == 0: print(f"{name}: {n + 1}/{len(qs)}", flush=True)
    return out

def write(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0])); w.writeheader(); w.writerows(rows)

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("domains", nargs="*", default=["scifact", "pubmedqa"])
    ap.add_argument("--limit", type=int); ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    for name in args.domains:                       # one file per domain in the cache, then the two joined
        rows = rows_for(name, args.limit)
        write(rows, CACHE/name/"features.csv"); print(f"{name}: {len(rows)} rows")
    parts = [CACHE/n/"features.csv" for n in ("scifact", "pubmedqa")]
    if all(p.exists() for p in parts):
        rows = [r for p in parts for r in csv.DictReader(open(p))]
        write(rows, args.out); print(f"wrote {len(rows)} rows to {args.out}")
