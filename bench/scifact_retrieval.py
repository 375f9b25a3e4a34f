"""SciFact (BEIR layout, train split) through the ranked-retrieval benchmark: BM25, vectors and hybrid.

Usage: python bench/scifact_retrieval.py [--data DIR] [--limit N] [--systems bm25 vector hybrid] [--out DIR]

The corpus stays outside the package (../shared/data/scifact-train beside the repository by default).
Passages are embedded with the deployment's embedding model (the packaged MiniLM unless KEEL_EMBED_*
say otherwise) and cached in bench/.cache/, so only the first run pays for embedding the 5,183
abstracts. Writes the JSON and Markdown reports and one TREC run file per system to --out.
"""
from __future__ import annotations
import argparse, json, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_DATA = REPO.parent/"shared"/"data"/"scifact-train"

def embeddings(cache:Path):
    "The profile's embedding model, its weights prepared under the cache folder, wrapped in the vector cache."
    from keel.config import load_settings
    from keel.factory import make_embeddings
    from keel.evals.retrieval_bench import CachedEmbeddings
    s = load_settings(dotenv=None).replace(data_dir=cache/"keel")
    return CachedEmbeddings(make_embeddings(s), cache)

def run(data:Path=DEFAULT_DATA, limit:int|None=None, systems=("bm25", "vector", "hybrid"), out:Path=HERE/".cache"/"scifact",
        cache:Path=HERE/".cache", depth:int=100, permutations:int=10_000):
    "Run the benchmark; returns (result, timings)."
    from keel.evals.retrieval_data import load_beir
    from keel.evals.retrieval_bench import MemoryCorpus, run_benchmark
    from keel.evals.retrieval_report import write_trec_run, write_trec_qrels, to_json, to_markdown
    t0 = time.perf_counter()
    ds, passages = load_beir(data, split="train", cutoffs=(1, 3, 5, 10, 100), limit=limit)
    emb = embeddings(cache) if any(s != "bm25" for s in systems) else None
    corpus = MemoryCorpus(passages, emb, name=ds.id)
    t1 = time.perf_counter()
    if emb is not None: corpus.vectors()
    t2 = time.perf_counter()
    res = run_benchmark(corpus, ds, systems=list(systems), depth=depth, permutations=permutations)
    t3 = time.perf_counter()
    if emb is not None and emb.computed: emb.save()
    out.mkdir(parents=True, exist_ok=True)
    write_trec_qrels(res, out/"qrels.txt", "document")
    for s in res.systems: write_trec_run(res, s, out/f"{s}.run", "document")
    (out/"report.json").write_text(json.dumps(to_json(res), indent=1))
    (out/"report.md").write_text(to_markdown(res))
    timings = {"load": t1 - t0, "embed_corpus": t2 - t1, "benchmark": t3 - t2, "total": t3 - t0,
               "computed_embeddings": emb.computed if emb else 0, **{f"retrieve_{s}": v for s, v in res.seconds.items()}}
    return res, timings

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--limit", type=int)
    p.add_argument("--systems", nargs="+", default=["bm25", "vector", "hybrid"])
    p.add_argument("--out", type=Path, default=HERE/".cache"/"scifact")
    a = p.parse_args(argv)
    if not (a.data/"corpus.jsonl").is_file(): sys.exit(f"no SciFact data at {a.data} (corpus.jsonl missing); pass --data")
    from keel.evals.retrieval_report import format_text
    res, t = run(a.data, a.limit, a.systems, a.out)
    print(format_text(res))
    print()
    print("headline (document level): " + "; ".join(
        f"{s}: nDCG@10 {res.overall(s, 'document')['ndcg@10']:.4f}, Recall@100 {res.overall(s, 'document')['recall@100']:.4f}, "
        f"MRR {res.overall(s, 'document')['mrr']:.4f}" for s in res.systems))
    print("seconds: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in t.items()))

if __name__ == "__main__": main()
