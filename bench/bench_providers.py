"""Provider benchmark: embedding throughput and FAISS search latency, measured in one run and printed as ratios.

    .venv/bin/python bench/bench_providers.py [--chunks 200] [--sizes 10000,100000] [--queries 200] [--hnsw-n 100000]

Not a test: nothing is asserted. Embeddings use the packaged MiniLM (int8 ONNX) through
`FastEmbedEmbeddings` on ~800-character chunks of SciFact abstracts; FAISS uses random unit vectors
of 384 dimensions, compared with a brute-force numpy scan (`matrix @ q` + `argpartition`) in the
same process, and with the permission filter (an ID selector inside the search) at 10% and 50%.
"""
import argparse, json, os, statistics, sys, tempfile, time
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent/"shared"/"data"/"scifact-train"/"corpus.jsonl"


def chunks_800(n:int) -> list[str]:
    "About `n` chunks of ~800 characters cut from SciFact abstracts at word boundaries."
    out = []
    with open(CORPUS) as f:
        for line in f:
            d = json.loads(line)
            text = (d["title"] + ". " + d["text"]).strip()
            while len(text) >= 700 and len(out) < n:
                cut = text.rfind(" ", 0, 800)
                cut = cut if cut > 600 else 800
                out.append(text[:cut]); text = text[cut:].strip()
            if len(out) >= n: break
    return out


def bench_embeddings(n:int, threads:int) -> dict:
    "Chunks per second of FastEmbedEmbeddings, and the share of time spent inside onnxruntime."
    from keel.models import default_embedding_dir
    from keel.providers.fastembed import FastEmbedEmbeddings
    texts = chunks_800(n)
    emb = FastEmbedEmbeddings(default_embedding_dir(Path(tempfile.mkdtemp())/"models"), threads=threads)
    emb.embed(texts[:4])                               # load and warm up
    sess = emb._model.model.model                      # the onnxruntime InferenceSession inside fastembed
    spent, orig = [0.0], sess.run
    def timed(*a, **k):
        t = time.perf_counter(); r = orig(*a, **k); spent[0] += time.perf_counter() - t; return r
    sess.run = timed
    t = time.perf_counter(); emb.embed(texts); total = time.perf_counter() - t
    sess.run = orig
    return dict(n=len(texts), chars=int(np.mean([len(x) for x in texts])), seconds=total, per_s=len(texts)/total, onnx_share=spent[0]/total)


def unit(rng, n, d):
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def per_query_ms(fn, queries) -> float:
    "Median milliseconds per single-vector query."
    for q in queries[:5]: fn(q)
    ts = []
    for q in queries:
        t = time.perf_counter(); fn(q); ts.append(time.perf_counter() - t)
    return 1000 * statistics.median(ts)


def bench_faiss(n:int, queries:int, dim:int=384, seed:int=0) -> list[dict]:
    "Flat search latency per query: raw FAISS, FaissIndex unfiltered and filtered, numpy brute force; 1 and 2 threads."
    import faiss
    from keel.providers.faiss import FaissIndex
    rng = np.random.default_rng(seed)
    X, Q = unit(rng, n, dim), unit(rng, queries, dim)
    r = rng.random(n)
    tags = [["p10", "p50"] if x < 0.1 else ["p50"] if x < 0.5 else ["rest"] for x in r]
    rows = []
    for threads in (1, 2):
        idx = FaissIndex(dim, threads=threads)
        idx.upsert(np.arange(n), X, tags)
        raw = idx._index
        def raw_search(q): faiss.omp_set_num_threads(threads); return raw.search(q[None], 10)
        def brute(q):
            s = X @ q; top = np.argpartition(-s, 10)[:10]; return top[np.argsort(-s[top])]
        row = dict(n=n, threads=threads,
                   numpy=per_query_ms(brute, Q), faiss_raw=per_query_ms(raw_search, Q),
                   index_all=per_query_ms(lambda q: idx.search(q, 10, ["p10", "p50", "rest"]), Q),
                   filt50=per_query_ms(lambda q: idx.search(q, 10, ["p50"]), Q),
                   filt10=per_query_ms(lambda q: idx.search(q, 10, ["p10"]), Q))
        # the filtered results are the exact top 10 of the allowed set
        allowed = np.array([("p10" in t) for t in tags])
        q = Q[0]; s = np.where(allowed, X @ q, -np.inf); want = set(np.argsort(-s)[:10].tolist())
        row["filt10_exact"] = want == {i for i, _ in idx.search(q, 10, ["p10"])}
        rows.append(row)
    return rows


def bench_hnsw(n:int, queries:int, dim:int=384, seed:int=1, threads:int=1) -> dict:
    "HNSW build time, per-query latency unfiltered and filtered at 10%, and recall@10 against flat."
    from keel.providers.faiss import FaissIndex
    import faiss
    rng = np.random.default_rng(seed)
    X, Q = unit(rng, n, dim), unit(rng, queries, dim)
    tags = [["p10"] if x < 0.1 else ["rest"] for x in rng.random(n)]
    flat = FaissIndex(dim, threads=threads); flat.upsert(np.arange(n), X, tags)
    faiss.omp_set_num_threads(2)
    t = time.perf_counter()
    h = FaissIndex(dim, kind="hnsw", threads=threads, ef_construction=80); h.upsert(np.arange(n), X, tags)
    build = time.perf_counter() - t
    out = dict(n=n, build_s=build)
    for name, user in (("all", ["p10", "rest"]), ("filt10", ["p10"])):
        out[f"{name}_ms"] = per_query_ms(lambda q: h.search(q, 10, user), Q)
        out[f"flat_{name}_ms"] = per_query_ms(lambda q: flat.search(q, 10, user), Q)
        hits = sum(len({i for i, _ in flat.search(q, 10, user)} & {i for i, _ in h.search(q, 10, user)}) for q in Q[:100])
        out[f"{name}_recall"] = hits / (10 * min(100, len(Q)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=200)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--hnsw-n", type=int, default=100000)
    a = ap.parse_args(argv)
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}\n")

    print("## Embeddings (packaged all-MiniLM-L6-v2 int8 ONNX via fastembed)")
    print(f"{'threads':>7} {'chunks':>6} {'chars':>5} {'seconds':>8} {'chunks/s':>8} {'onnx share':>10}")
    for th in (1, 2):
        e = bench_embeddings(a.chunks, th)
        print(f"{th:>7} {e['n']:>6} {e['chars']:>5} {e['seconds']:>8.2f} {e['per_s']:>8.1f} {e['onnx_share']:>10.0%}")

    print("\n## FAISS flat, ms per query (median, k=10, 384-d)")
    print(f"{'n':>7} {'thr':>3} {'numpy':>7} {'faiss':>7} {'Index':>7} {'filt50%':>7} {'filt10%':>7} | {'numpy/faiss':>11} {'f50/all':>7} {'f10/all':>7} {'exact':>5}")
    for n in map(int, a.sizes.split(",")):
        for r in bench_faiss(n, a.queries):
            print(f"{r['n']:>7} {r['threads']:>3} {r['numpy']:>7.2f} {r['faiss_raw']:>7.2f} {r['index_all']:>7.2f} {r['filt50']:>7.2f} {r['filt10']:>7.2f} | "
                  f"{r['numpy']/r['faiss_raw']:>11.2f} {r['filt50']/r['index_all']:>7.2f} {r['filt10']/r['index_all']:>7.2f} {str(r['filt10_exact']):>5}")

    if a.hnsw_n:
        print(f"\n## HNSW (M=32, efConstruction=80, efSearch=128) vs flat, 1 search thread")
        h = bench_hnsw(a.hnsw_n, a.queries)
        print(f"n={h['n']} build {h['build_s']:.1f}s")
        print(f"{'filter':>7} {'hnsw ms':>8} {'flat ms':>8} {'flat/hnsw':>9} {'recall@10':>9}")
        for name in ("all", "filt10"):
            print(f"{name:>7} {h[name+'_ms']:>8.2f} {h['flat_'+name+'_ms']:>8.2f} {h['flat_'+name+'_ms']/h[name+'_ms']:>9.1f} {h[name+'_recall']:>9.3f}")


if __name__ == "__main__":
    main()
