"""Answerability evidence for every judged question of SciFact train (809 claims, the whole 5,183-abstract corpus) and
PubMedQA dev (500 questions and abstracts), each asked twice through the production retriever of the benchmark data
directory that bench/corpora.py builds (one passage per abstract, the current retrieval defaults): with its cited
documents visible (label 1, the documents answer it) and with them masked the way a permission filter masks them
(label 0). Also records the old gate's number (the best hit's relevance), where the cited document ranked, and the time
the scoring took. Writes bench/answerability-features.csv, which nbs/13a_answerability.ipynb fits the default
calibration on. Build the corpora first (`python bench/corpora.py scifact`, `... pubmedqa`; minutes of embedding on
two cores, cached after). Usage:
    .venv/bin/python bench/answerability_features.py [scifact pubmedqa] [--limit N] [--chunked] [--ldo]

`--chunked` asks the chunked data directories instead (`bench/chunked_study.py` and `bench/scifact_retrieval.py
--chunk` build them: abstracts cut into chunks as `keel ingest` stores them) and writes
bench/.cache/answerability-chunked-*.csv, leaving the committed CSV alone. `--ldo` prints, for the rows written,
leave-documents-out ROC AUC per domain (5 folds grouped by the cited document, `fit_calibration` on four, scored on
the fifth), the error rates at 10% false answers, and both cross-domain AUCs.
"""
import argparse, csv, json, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora

OUT = HERE/"answerability-features.csv"

def questions(folder:Path, split:str) -> list[dict]:
    "The judged questions of a BEIR folder with the documents each one cites."
    cites = {}
    for line in list(open(folder/"qrels"/f"{split}.tsv"))[1:]:
        q, d, s = line.split()
        if int(s) > 0: cites.setdefault(q, []).append(d)
    qs = [json.loads(l) for l in open(folder/"queries.jsonl") if l.strip()]
    return [dict(id=q["_id"], question=q["text"], sources=cites[q["_id"]]) for q in qs if q["_id"] in cites]

def rows_for(name:str, limit:int|None=None) -> list[dict]:
    "Two rows per question (sources visible, masked): features, old relevance, the cited document's rank, time."
    from keel.answerability import Answerability, DEFAULT_CALIBRATION, FEATURES
    ctx, folder, split = corpora.context(name, ingest=False)
    a = Answerability(ctx.retriever, ctx.settings, calibration=DEFAULT_CALIBRATION)
    chunks = {}
    for cid, src in ctx.con.execute("SELECT c.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id"):
        chunks.setdefault(src.split("/", 1)[1], []).append(cid)
    qs, out, t = questions(folder, split)[:limit], [], time.time()
    for n, q in enumerate(qs):
        mask = [c for s in q["sources"] for c in chunks.get(s, [])]
        for label, ex in ((1, ()), (0, mask)):
            t0 = time.perf_counter()
            hits, asm = a.assess(q["question"], corpora.TAGS, exclude=ex)
            ms = (time.perf_counter() - t0) * 1000
            rank = next((i + 1 for i, h in enumerate(hits) if h.chunk_id in set(mask)), 0)
            out.append(dict(domain=name, qid=q["id"], group=q["sources"][0], label=label, source_retrieved=int(rank > 0), source_rank=rank,
                            old_relevance=round(max((h.relevance for h in hits), default=0.0), 6), assess_ms=round(ms, 3),
                            **{f: round(asm.features[f], 6) for f in FEATURES}))
        if (n + 1) % 100 == 0: print(f"{name}: {n + 1}/{len(qs)} questions, {time.time() - t:.0f} s", file=sys.stderr, flush=True)
    ctx.embeddings.save()                         # the questions' embeddings, for the next run
    return out

def chunked_context(name:str, ingest:bool=False, **kw):
    "The chunked benchmark data directory of a corpus, as `corpora.context` returns the one-passage one."
    from scifact_retrieval import context
    folder, split = corpora.corpus(name)
    return context(folder, corpora.CACHE, corpora.CACHE/f"{folder.name}-chunked-data", ingest=False), folder, split

def leave_documents_out(rows:list[dict], folds:int=5, seed:int=0) -> tuple[float, dict]:
    "ROC AUC and the 10%-false-answer operating point of out-of-fold scores, folds grouped by the cited document."
    import random
    from keel.answerability import fit_calibration, roc_auc, operating_point
    groups = sorted({r["group"] for r in rows}); random.Random(seed).shuffle(groups)
    fold = {g: i % folds for i, g in enumerate(groups)}
    p, y = [], []
    for f in range(folds):
        cal = fit_calibration([r for r in rows if fold[r["group"]] != f])
        test = [r for r in rows if fold[r["group"]] == f]
        p += [cal.probability(r) for r in test]; y += [int(r["label"]) for r in test]
    return roc_auc(p, y), operating_point(p, y, 0.10)

def report(rows:list[dict]):
    "Leave-documents-out and cross-domain figures of `rows`, printed."
    from keel.answerability import fit_calibration, roc_auc
    by = {d: [r for r in rows if r["domain"] == d] for d in ("scifact", "pubmedqa")}
    for d, rs in by.items():
        if not rs: continue
        auc, op = leave_documents_out(rs)
        answerable = [r for r in rs if int(r["label"])]
        first = sum(int(r["source_rank"]) == 1 for r in answerable) / max(1, len(answerable))
        print(f"{d}: leave-documents-out ROC AUC {auc:.3f}; at <= 10% false answers: false refusals "
              f"{op['false_refusal']:.1%}, false answers {op['false_answer']:.1%}; cited document first {first:.1%}")
    if all(by.values()):
        for a, b in (("pubmedqa", "scifact"), ("scifact", "pubmedqa")):
            cal = fit_calibration(by[a])
            auc = roc_auc([cal.probability(r) for r in by[b]], [int(r["label"]) for r in by[b]])
            print(f"fit {a} -> test {b}: ROC AUC {auc:.3f}")

def write(rows:list[dict], path:Path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0])); w.writeheader(); w.writerows(rows)

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("domains", nargs="*", default=["scifact", "pubmedqa"])
    ap.add_argument("--limit", type=int); ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--chunked", action="store_true",
                    help="the chunked data directories (the committed CSV is left alone)")
    ap.add_argument("--ldo", action="store_true", help="print leave-documents-out and cross-domain figures")
    args = ap.parse_args()
    if args.chunked: corpora.context = chunked_context
    stem = "answerability-chunked" if args.chunked else "answerability"
    for name in args.domains:                       # one file per domain in the cache, then the two joined
        rows = rows_for(name, args.limit)
        write(rows, corpora.CACHE/f"{stem}-{name}.csv"); print(f"{name}: {len(rows)} rows")
    parts = [corpora.CACHE/f"{stem}-{n}.csv" for n in ("scifact", "pubmedqa")]
    if all(p.exists() for p in parts):
        rows = [r for p in parts for r in csv.DictReader(open(p))]
        if not args.chunked: write(rows, Path(args.out)); print(f"wrote {len(rows)} rows to {args.out}")
        if args.ldo: report(rows)
