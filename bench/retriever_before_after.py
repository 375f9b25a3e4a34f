"""The retriever issue 14 started from against the one Keel ships, through the production path, in one run.

"Before" is the hybrid retrieval Keel shipped when the retrieval work began: reciprocal rank fusion (k 60, both lists
alike) with the title weighted like the text in BM25 and no feedback. "After" is today's `Settings` (convex fusion of
z-scored scores, vector weight 0.45, title weight 3). Both are `Retriever.retrieve` over the same data directory and
the same stored vectors, differing only in those settings, so the per-question difference is the fusion and title
change alone. For each corpus (SciFact train, which informed the choice; PubMedQA dev, which informed nothing) and
each layout (one passage per document; chunked as `keel ingest` stores it, a document ranked by its best chunk) the
script prints nDCG@10 and Recall@100 at document level, the difference with its paired bootstrap 95% interval
(10,000 resamples of the questions), its paired randomisation p-value and how many questions got better and worse,
and writes them to bench/results/retriever_before_after.json. Asserts nothing.

    .venv/bin/python bench/retriever_before_after.py [--corpora scifact pubmedqa] [--layouts passage chunked]
                                                    [--limit N] [--permutations 10000]

The data directories and embeddings are those `bench/scifact_retrieval.py [--chunk]` and `bench/chunked_study.py`
build under bench/.cache (built on first use; a warm run embeds only the questions).
"""
from __future__ import annotations
import argparse, json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import CACHE, corpus
from scifact_retrieval import context

RESULTS = Path(__file__).resolve().parent/"results"/"retriever_before_after.json"
BEFORE = dict(fusion="rrf", fusion_weight=0.5, rrf_k=60, bm25_title_weight=1.0, prf_docs=0)
METRICS = ("ndcg@10", "recall@100")

def measure(name:str, chunk:bool, limit=None, permutations:int=10_000) -> dict:
    "Before and after on one corpus and layout: means, difference, p-value per metric."
    from keel.retrieval.retriever import Retriever
    from keel.evals.retrieval_data import load_beir
    from keel.evals.retrieval_bench import run_benchmark, BENCH_TAGS
    from keel.stats import paired_bootstrap
    folder, split = corpus(name)
    ds = load_beir(folder, split=split, cutoffs=(1, 3, 5, 10, 100), limit=limit)[0]
    for c in ds.cases: c.user_tags = list(BENCH_TAGS)
    ctx = context(folder, CACHE, CACHE/f"{folder.name}{'-chunked' if chunk else ''}-data", True, chunk)
    after = ctx.retriever
    before = Retriever(ctx.con, ctx.embeddings, ctx.index, after.settings.replace(**BEFORE))
    systems = {"before": lambda q, t, k: before.retrieve(q, t, k), "after": lambda q, t, k: after.retrieve(q, t, k)}
    t0 = time.perf_counter()
    res = run_benchmark(systems, ds, depth=300 if chunk else 100, permutations=permutations)
    out = {"passages": ctx.con.execute("SELECT count(*) FROM chunks").fetchone()[0], "questions": len(ds.cases),
           "seconds": round(time.perf_counter() - t0, 1)}
    for m in METRICS:
        b, a = res.overall("before", "document")[m], res.overall("after", "document")[m]
        d, p = res.compare("after", "before", "document", m)
        before_s, after_s = res.scores["before"]["document"], res.scores["after"]["document"]
        pairs = [(before_s[c.id][m], after_s[c.id][m]) for c in ds.cases]
        diff = [x - y for y, x in pairs]
        lo, hi = paired_bootstrap(*zip(*pairs), n=10_000)
        out[m] = {"before": b, "after": a, "difference": d, "p": p, "ci95": [lo, hi],
                  "better": sum(x > 1e-12 for x in diff), "worse": sum(x < -1e-12 for x in diff)}
    if ctx.embeddings.computed: ctx.embeddings.save()
    ctx.close()
    return out

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpora", nargs="+", default=["scifact", "pubmedqa"], choices=["scifact", "pubmedqa"])
    p.add_argument("--layouts", nargs="+", default=["passage", "chunked"], choices=["passage", "chunked"])
    p.add_argument("--limit", type=int)
    p.add_argument("--permutations", type=int, default=10_000)
    a = p.parse_args(argv)
    rows = {f"{c} {l}": measure(c, l == "chunked", a.limit, a.permutations) for c in a.corpora for l in a.layouts}
    print(f"{'corpus, layout':<18} {'metric':<11} {'before':>7} {'after':>7} {'after-before':>12} {'95% interval':>17} "
          f"{'p':>7} {'questions better/worse':>22}")
    for key, r in rows.items():
        for m in METRICS:
            x = r[m]; lo, hi = x["ci95"]
            print(f"{key:<18} {m:<11} {x['before']:7.4f} {x['after']:7.4f} {x['difference']:+12.4f} "
                  f"{f'[{lo:+.4f}, {hi:+.4f}]':>17} {x['p']:7.4f} {x['better']:>15}/{x['worse']}")
    print("questions, passages, seconds: " + "; ".join(f"{k} {r['questions']}, {r['passages']}, {r['seconds']}"
                                                     for k, r in rows.items()))
    if a.limit is None:
        old = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
        RESULTS.write_text(json.dumps({"note": __doc__.splitlines()[0], "before": BEFORE,
                                       "rows": {**old.get("rows", {}), **rows}}, indent=1) + "\n")

if __name__ == "__main__": main()
