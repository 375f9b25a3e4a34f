"""BM25 index updates: adding (and deleting) 100 documents through the chunk change log (`BM25Index.catch_up`)
against rebuilding the index from the tables, on SciFact (5,183 abstracts) and on 100,000 synthetic chunks.
Also checks that the updated index ranks and scores as the rebuilt one does. Prints a table; asserts nothing.

    .venv/bin/python bench/bm25_update.py [--n-synthetic 100000] [--skip-synthetic]
"""
import argparse, json, random, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import CACHE, SCIFACT
from keel.atomicfile import atomic_path
from keel.db import connect, transaction
from keel.retrieval.bm25 import BM25Index

def add_docs(con, docs):
    "Insert (source, title, text, tags) documents, one chunk each, in one transaction."
    with transaction(con):
        for src, title, text, tags in docs:
            d = con.execute("INSERT INTO documents(source,title,kind,checksum,acl_tags) VALUES (?,?,?,?,?)",
                            (src, title, "text", src, json.dumps(tags))).lastrowid
            con.execute("INSERT INTO chunks(document_id,ord,text,acl_tags) VALUES (?,?,?,?)", (d, 0, text, json.dumps(tags)))

def fresh_db(path, docs):
    if path.exists(): return connect(path)
    with atomic_path(path) as tmp:
        con = connect(tmp)
        for s in range(0, len(docs), 5000): add_docs(con, docs[s:s + 5000])
        con.close()
    return connect(path)

def check(a, b, queries):
    for q in queries:
        x, y = a.search(q, None, 10), b.search(q, None, 10)
        assert [i for i, _ in x] == [i for i, _ in y] and np.allclose([s for _, s in x], [s for _, s in y], atol=1e-9), q

def measure(name, con, extra, queries):
    "Seconds to catch up after adding `extra`, then after deleting them again, against full rebuilds."
    t = time.perf_counter(); bi = BM25Index.build(con); t_build = time.perf_counter() - t
    add_docs(con, extra)
    t = time.perf_counter(); ok = bi.catch_up(con); t_add = time.perf_counter() - t
    t = time.perf_counter(); full = BM25Index.build(con); t_rebuild = time.perf_counter() - t
    check(bi, full, queries)
    with transaction(con): con.execute("DELETE FROM documents WHERE source IN (%s)" % ",".join("?" * len(extra)), [e[0] for e in extra])
    t = time.perf_counter(); ok2 = bi.catch_up(con); t_del = time.perf_counter() - t
    check(bi, BM25Index.build(con), queries)
    t = time.perf_counter(); bi.save(CACHE/f"{name}-bm25.npz"); t_save = time.perf_counter() - t
    n = len(bi)
    print(f"{name:<24} {n:>7} rows  build {t_build:7.2f} s | add 100: catch_up {t_add * 1000:8.1f} ms vs rebuild {t_rebuild:7.2f} s "
          f"(x{t_rebuild / t_add:,.0f}) | delete 100: catch_up {t_del * 1000:8.1f} ms | save (merge + write) {t_save:5.2f} s  [{ok and ok2}]")

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-synthetic", type=int, default=100_000); ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--skip-scifact", action="store_true")
    a = ap.parse_args(argv)
    CACHE.mkdir(parents=True, exist_ok=True)
    print("one run on a shared, busy 2-core machine: timings are noisy; the ratio is the point")
    ap_skip = a.skip_scifact
    docs = [json.loads(l) for l in open(SCIFACT/"corpus.jsonl")] if not ap_skip else []
    rows = [(d["_id"], d.get("title") or "", d.get("text") or "", ["public"]) for d in docs]
    if not ap_skip:
        con = fresh_db(CACHE/"scifact-bm25only.db", rows[:-100])
        queries = [json.loads(l)["text"] for l in open(SCIFACT/"queries.jsonl")][:50]
        measure("SciFact", con, rows[-100:], queries)
        con.close()
    if a.skip_synthetic: return
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(30_000)])
    cdf = np.cumsum(1 / np.arange(1, len(vocab) + 1) ** 1.05); cdf /= cdf[-1]
    def synth(first, n):
        "n documents of 40-119 Zipf-distributed words."
        lens = rng.integers(40, 120, n); words = vocab[np.searchsorted(cdf, rng.random(lens.sum()))]
        cuts = np.concatenate([[0], np.cumsum(lens)])
        return [(f"s{first + i}", "", " ".join(words[cuts[i]:cuts[i + 1]]), ["public"]) for i in range(n)]
    con = fresh_db(CACHE/f"synthetic-bm25only-{a.n_synthetic}.db", synth(0, a.n_synthetic))
    qr = random.Random(1)
    measure(f"synthetic {a.n_synthetic:,}", con, synth(a.n_synthetic, 100),
            [" ".join(qr.choice(vocab[:5000]) for _ in range(qr.randint(3, 12))) for _ in range(50)])
    con.close()

if __name__ == "__main__": main()
