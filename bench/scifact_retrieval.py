"""SciFact train (BEIR layout) through the production path: the corpus ingested one passage per document into its
own data directory (bench/.cache/scifact-train-data) by `Ingestor.ingest_documents`, searched by that directory's
`Retriever` (`bm25`, `vector`, and `hybrid` = `Retriever.retrieve`) with the benchmark user's tags, scored by
`keel eval retrieval`'s code. `--before` also runs the in-memory copy the benchmark used before (FTS5 with every
query word, its own reciprocal-rank fusion) over the same passages and the same stored vectors, to show where the
two differ.

Usage: python bench/scifact_retrieval.py [--data DIR] [--limit N] [--systems bm25 vector hybrid] [--before] [--out DIR]
                                        [--chunk]

`--chunk` ingests the corpus as `keel ingest` would, each abstract cut into chunks (its own data directory,
bench/.cache/scifact-train-chunked-data); a document's rank is its best chunk's, and the search goes 300 chunks deep so
that Recall@100 counts 100 documents.

The corpus stays outside the package (../shared/data/scifact-train beside the repository by default). The first
run embeds 5,183 abstracts with the deployment's model (cached in bench/.cache/embeddings/); later runs find every
passage already ingested and embed nothing.
"""
from __future__ import annotations
import argparse, json, re, sqlite3, sys, time
from collections import defaultdict
from pathlib import Path
import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_DATA = REPO.parent/"shared"/"data"/"scifact-train"

def context(data:Path, cache:Path, data_dir:Path, ingest:bool=True, chunk:bool=False):
    "The SciFact corpus's own context, ingested through the production path (nothing new when already there)."
    from keel.config import load_settings
    from keel.factory import build_context
    from keel.evals.retrieval_bench import CachedEmbeddings, corpus_context
    from keel.evals.retrieval_data import beir_documents
    base = build_context(load_settings(dotenv=None, data_dir=cache/"keel"))
    if not ingest:                          # the directory as it is (e.g. a corpus whose embedding was cut short)
        ctx = base.derive(data_dir=data_dir).use_embeddings(CachedEmbeddings(base.embeddings, cache/"embeddings"))
        n = ctx.con.execute('SELECT count(*) FROM chunks').fetchone()[0]
        ctx.ingest_summary = f"{n} passages in {data_dir}, taken as they are"
        return ctx
    return corpus_context(base, beir_documents(data), data_dir, CachedEmbeddings(base.embeddings, cache/"embeddings"),
                          progress=True, chunk=chunk)

def before_systems(ctx):
    "The benchmark's old in-memory path over the same passages and stored vectors: FTS5 with every word, its own RRF."
    rows = ctx.con.execute("SELECT c.id, c.text, d.title, d.source, c.embedding FROM chunks c "
                           "JOIN documents d ON d.id = c.document_id WHERE c.quarantined = 0 ORDER BY c.id").fetchall()
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(text, heading, title, "
               "tokenize='porter unicode61 remove_diacritics 2')")
    db.executemany("INSERT INTO fts(rowid, text, heading, title) VALUES (?,?,'',?)",
                   [(i, r[1], r[2]) for i, r in enumerate(rows)])
    V = np.stack([np.frombuffer(r[4], np.float32) for r in rows])
    from keel.providers.base import ChunkHit
    hit = lambda i, s: ChunkHit(rows[i][0], float(s), rows[i][1], 0, rows[i][3], rows[i][2])
    def bm25(q, tags, k):
        expr = " OR ".join(f'"{w}"' for w in dict.fromkeys(w.lower() for w in re.findall(r"\w+", q)))
        if not expr: return []
        sql = "SELECT rowid, bm25(fts) s FROM fts WHERE fts MATCH ? ORDER BY s, rowid LIMIT ?"
        return [hit(i, -s) for i, s in db.execute(sql, (expr, k))]
    def vector(q, tags, k):
        s = V @ ctx.embeddings.embed_query(q); top = np.argsort(-s, kind="stable")[:k]
        return [hit(int(i), s[i]) for i in top]
    def hybrid(q, tags, k):
        fused, score = {}, defaultdict(float)
        for name, hs in (("bm25", bm25(q, tags, k)), ("vector", vector(q, tags, k))):
            for r, h in enumerate(hs, 1): fused.setdefault(h.chunk_id, h); score[h.chunk_id] += 1 / (60 + r)
        return [fused[c] for c in sorted(fused, key=lambda c: -score[c])][:k]
    return {"before-bm25": bm25, "before-vector": vector, "before-hybrid": hybrid}

def run(data:Path=DEFAULT_DATA, limit:int|None=None, systems=("bm25", "vector", "hybrid"),
        out:Path=HERE/".cache"/"scifact", cache:Path=HERE/".cache", depth:int=100, permutations:int=10_000,
        data_dir:Path|None=None, before:bool=False, ingest:bool=True, chunk:bool=False):
    "Run the benchmark; returns (result, timings)."
    from keel.evals.retrieval_data import load_beir
    from keel.evals.retrieval_bench import run_benchmark, BENCH_TAGS
    from keel.evals.retrieval_report import write_trec_run, write_trec_qrels, to_json, to_markdown
    t0 = time.perf_counter()
    ds = load_beir(data, split="train", cutoffs=(1, 3, 5, 10, 100), limit=limit)[0]
    for c in ds.cases: c.user_tags = list(BENCH_TAGS)
    ctx = context(data, cache, data_dir or cache/f"scifact-train{'-chunked' if chunk else ''}-data", ingest, chunk)
    if chunk: depth = max(depth, 300)
    t1 = time.perf_counter()
    res = run_benchmark(ctx, ds, systems=list(systems), extra=before_systems(ctx) if before else None, depth=depth,
                        permutations=permutations)
    t2 = time.perf_counter()
    if ctx.embeddings.computed: ctx.embeddings.save()
    out.mkdir(parents=True, exist_ok=True)
    write_trec_qrels(res, out/"qrels.txt", "document")
    for s in res.systems: write_trec_run(res, s, out/f"{s}.run", "document")
    (out/"report.json").write_text(json.dumps(to_json(res), indent=1))
    (out/"report.md").write_text(to_markdown(res))
    timings = {"ingest": t1 - t0, "benchmark": t2 - t1, "computed_embeddings": ctx.embeddings.computed,
               **{f"retrieve_{s}": v for s, v in res.seconds.items()}}
    print(ctx.ingest_summary, file=sys.stderr)
    ctx.close()
    return res, timings

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--limit", type=int)
    p.add_argument("--systems", nargs="+", default=["bm25", "vector", "hybrid"])
    p.add_argument("--before", action="store_true", help="also run the old in-memory path (same passages and vectors)")
    p.add_argument("--out", type=Path, help="where the runs and reports go (default bench/.cache/scifact[-chunked])")
    p.add_argument("--as-is", action="store_true", help="search the data directory as it is, ingesting nothing")
    p.add_argument("--chunk", action="store_true", help="cut the abstracts into chunks as `keel ingest` does")
    a = p.parse_args(argv)
    if not (a.data/"corpus.jsonl").is_file():
        sys.exit(f"no SciFact data at {a.data} (corpus.jsonl missing); pass --data")
    from keel.evals.retrieval_report import format_text
    systems = a.systems + (["before-bm25", "before-vector", "before-hybrid"] if a.before else [])
    out = a.out or HERE/".cache"/("scifact-chunked" if a.chunk else "scifact")
    res, t = run(a.data, a.limit, systems, out, before=a.before, ingest=not a.as_is, permutations=1000, chunk=a.chunk)
    print(format_text(res))
    print()
    doc = lambda s: res.overall(s, 'document')
    print("headline (document level): " + "; ".join(
        f"{s}: nDCG@10 {doc(s)['ndcg@10']:.4f}, Recall@100 {doc(s)['recall@100']:.4f}, MRR {doc(s)['mrr']:.4f}"
        for s in res.systems))
    print("seconds: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in t.items()))

if __name__ == "__main__": main()
