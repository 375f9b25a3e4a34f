"""Retrieval benchmark: latency of BM25 (in-memory engine and FTS5), vector and hybrid search at the fixture
corpus, SciFact train and 100k synthetic chunks; BM25 quality on SciFact train beside bm25s; the relevance
calibration's fit (--fit) and its reliability on held-out claims. Prints tables; asserts nothing.

    .venv/bin/python bench/bench_retrieval.py [--fit] [--skip-fixture] [--skip-synthetic] [--n-synthetic 100000]

SciFact vectors come from bench/.cache/scifact_{corpus,queries}.npy (bench/embed_scifact.py, the packaged
MiniLM int8 model, the same pipeline fastembed runs); the databases are built once under bench/.cache/.
"""
import argparse, json, math, random, sys, time
from pathlib import Path
import numpy as np

from keel.config import load_settings
from keel.atomicfile import atomic_path
from keel.db import connect, transaction, fingerprint
from keel.providers.faiss import build_from_db
from keel.retrieval.bm25 import BM25Index, fts_bm25
from keel.retrieval.fusion import RELEVANCE_COEF
from keel.retrieval.retriever import Retriever

ROOT = Path(__file__).resolve().parent
CACHE = ROOT/".cache"
SCIFACT = Path("/work/shared/data/scifact-train") if Path("/work/shared/data/scifact-train").is_dir() else CACHE/"scifact"


class CachedQueryEmbeddings:
    "Query vectors computed once by the packaged model (bench/embed_scifact.py), looked up by text; random unit vectors for unknown text (synthetic corpus only)."
    def __init__(self, texts, vecs, dim=384):
        self.name, self.dim, self._v = "all-MiniLM-L6-v2-int8 (cached)", dim, dict(zip(texts, vecs))
    def embed_query(self, text):
        v = self._v.get(text)
        if v is None:
            v = np.random.default_rng(abs(hash(text)) % 2**32).standard_normal(self.dim).astype(np.float32); v /= np.linalg.norm(v)
        return v
    def embed(self, texts): return np.stack([self.embed_query(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def build_times(con, r, fts5=True):
    "Seconds to build the BM25 index both ways, then to load the saved one as a new process would."
    out = {}
    for tokens in (("python", "fts5") if fts5 else ("python",)):
        t = time.perf_counter(); bi = BM25Index.build(con, tokens=tokens); out[tokens] = time.perf_counter() - t
    bi.save(r.cache_path)
    t = time.perf_counter(); r.bm25_index(); return out, time.perf_counter() - t

def pct(xs, p): return float(np.percentile(np.asarray(xs) * 1000, p))

def timeit(f, queries, reps=1):
    "Per-query latencies in seconds (after one warm-up call)."
    f(queries[0]); out = []
    for _ in range(reps):
        for q in queries:
            t = time.perf_counter(); f(q); out.append(time.perf_counter() - t)
    return out

def row(name, lat, extra=""):
    print(f"  {name:<34} p50 {pct(lat, 50):8.3f} ms   p95 {pct(lat, 95):8.3f} ms  {extra}")


# ---------------------------------------------------------------- SciFact
def scifact_db():
    path = CACHE/"scifact.db"
    docs = [json.loads(l) for l in open(SCIFACT/"corpus.jsonl")]
    ids = json.loads((CACHE/"scifact_ids.json").read_text())
    D = np.load(CACHE/"scifact_corpus.npy")
    assert ids["corpus"] == [d["_id"] for d in docs], "cached vectors do not match corpus.jsonl; rerun bench/embed_scifact.py"
    if not path.exists():
        con = connect(path)
        with transaction(con):
            for d, v in zip(docs, D):
                doc = con.execute("INSERT INTO documents(source,title,kind,checksum) VALUES (?,?,?,?)", (d["_id"], d["title"], "text", d["_id"])).lastrowid
                con.execute("INSERT INTO chunks(document_id,ord,text,embedding) VALUES (?,?,?,?)", (doc, 0, d["text"], v.astype(np.float32).tobytes()))
        con.close()
    con = connect(path)
    src = {r[0]: r[1] for r in con.execute("SELECT c.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id")}
    return con, docs, src

def scifact_queries():
    qs = [json.loads(l) for l in open(SCIFACT/"queries.jsonl")]
    qrels = {}
    for line in list(open(SCIFACT/"qrels"/"train.tsv"))[1:]:
        q, d, s = line.split(); qrels.setdefault(q, {})[d] = int(s)
    Q = np.load(CACHE/"scifact_queries.npy")
    assert json.loads((CACHE/"scifact_ids.json").read_text())["queries"] == [q["_id"] for q in qs]
    qs = [q for q in qs if q["_id"] in qrels]
    return qs, qrels, CachedQueryEmbeddings([q["text"] for q in json.loads("[" + ",".join(open(SCIFACT/"queries.jsonl")) + "]")], Q)

def evaluate(run, qrels):
    import ir_measures
    from ir_measures import nDCG, R
    res = ir_measures.calc_aggregate([nDCG@10, R@100], qrels, run)
    return res[nDCG@10], res[R@100]

def bench_scifact(args):
    con, docs, src = scifact_db()
    qs, qrels, emb = scifact_queries()
    settings = load_settings(env={}, dotenv=None, data_dir=CACHE/"scifact-data")
    t = time.perf_counter(); index = build_from_db(con, 384); t_faiss = time.perf_counter() - t
    r = Retriever(con, emb, index, settings)
    t_build, t_load = build_times(con, r)
    bi = r.bm25_index()
    texts = [q["text"] for q in qs]
    print(f"\nSciFact train: {len(docs)} abstracts, {len(qs)} claims with qrels; FAISS flat built in {t_faiss:.2f} s")
    print(f"BM25Index built in {t_build['python']:.2f} s (FTS5's token table: {t_build['fts5']:.2f} s); loaded from its file in {t_load:.3f} s")

    import bm25s, Stemmer
    stemmer = Stemmer.Stemmer("english")
    t = time.perf_counter()
    corpus_tokens = bm25s.tokenize([d["title"] + " " + d["text"] for d in docs], stopwords="en", stemmer=stemmer, show_progress=False)
    bm = bm25s.BM25(); bm.index(corpus_tokens, show_progress=False)
    t_bm25s = time.perf_counter() - t
    def bm25s_search(q, k=100):
        toks = bm25s.tokenize(q, stopwords="en", stemmer=stemmer, show_progress=False)
        res, sc = bm.retrieve(toks, k=k, show_progress=False, n_threads=1)
        return [(docs[i]["_id"], float(s)) for i, s in zip(res[0], sc[0])]
    print(f"bm25s index built in {t_bm25s:.2f} s")

    # quality
    runs = {
        "keel bm25 (in-memory)": lambda q: [(src[i], s) for i, s in bi.search(q, None, 100)],
        "keel bm25 (fts5)": lambda q: [(src[i], s) for i, s in fts_bm25(con, q, None, 100)],
        "bm25s (README defaults)": bm25s_search,
        "keel vector (MiniLM int8)": lambda q: [(src[h.chunk_id], h.score) for h in r.vector(q, None, 100, score=False)],
        "keel hybrid (RRF 60)": lambda q: [(src[h.chunk_id], h.score) for h in r.hybrid(q, None, 100, score=False)],
    }
    print("\nquality on SciFact train (809 claims)      nDCG@10  Recall@100")
    ranked = {}
    for name, f in runs.items():
        run = {q["_id"]: {d: float(s) for d, s in f(q["text"])} for q in qs}
        ranked[name] = run
        n, rc = evaluate(run, qrels)
        print(f"  {name:<38} {n:.4f}   {rc:.4f}")
    same = sum([d for d, _ in sorted(ranked['keel bm25 (in-memory)'][q['_id']].items(), key=lambda x: -x[1])][:10] ==
               [d for d, _ in sorted(ranked['keel bm25 (fts5)'][q['_id']].items(), key=lambda x: -x[1])][:10] for q in qs)
    print(f"  in-memory and FTS5 engines: identical top-10 for {same}/{len(qs)} claims")

    print("\nlatency per query, SciFact (k=20 unless noted; vector/hybrid use cached query vectors, query embedding excluded)")
    lat = {}
    lat["bm25 in-memory"] = timeit(lambda q: bi.search(q, None, 20), texts)
    lat["bm25 fts5"] = timeit(lambda q: fts_bm25(con, q, None, 20), texts)
    lat["bm25s"] = timeit(lambda q: bm25s_search(q, 20), texts)
    row("bm25 in-memory engine", lat["bm25 in-memory"], f"(x{pct(lat['bm25 in-memory'], 50) / pct(lat['bm25s'], 50):.2f} of bm25s at p50)")
    row("bm25 fts5 engine", lat["bm25 fts5"], f"(x{pct(lat['bm25 fts5'], 50) / pct(lat['bm25s'], 50):.2f} of bm25s at p50)")
    row("bm25s (tokenize + retrieve)", lat["bm25s"])
    row("bm25 in-memory, tags [hr] (rare)", timeit(lambda q: bi.search(q, ["hr"], 20), texts))
    row("Retriever.bm25 (hits from db)", timeit(lambda q: r.bm25(q, None, score=False), texts))
    row("Retriever.vector (faiss flat)", timeit(lambda q: r.vector(q, None, score=False), texts))
    row("Retriever.hybrid", timeit(lambda q: r.hybrid(q, None, score=False), texts))
    row("Retriever.retrieve (+relevance)", timeit(lambda q: r.retrieve(q, None), texts))
    row("keel.db.fingerprint", timeit(lambda q: fingerprint(con), texts[:100]))
    if args.fit: fit_relevance(r, qs, qrels, src)
    con.close()


# ---------------------------------------------------------------- calibration
def fit_relevance(r, qs, qrels, src):
    "Fit the logistic on the even claims' best hybrid hits; reliability on the odd (held-out) claims."
    from sklearn.linear_model import LogisticRegression
    def pairs(sub):
        X, y, rank = [], [], []
        for q in sub:
            for n, h in enumerate(r.hybrid(q["text"], None, 20)):
                X.append((h.scores["cosine"], h.scores["coverage"])); y.append(int(src[h.chunk_id] in qrels[q["_id"]])); rank.append(n)
        return np.array(X), np.array(y), np.array(rank)
    fit = [q for i, q in enumerate(qs) if i % 2 == 0]; held = [q for i, q in enumerate(qs) if i % 2 == 1]
    X, y, rank = pairs(fit)
    for name, sel in (("best hit", rank == 0), ("all top-20 pairs", rank >= 0)):
        m = LogisticRegression(C=100.0).fit(X[sel], y[sel])
        print(f"\nrelevance fit on {len(fit)} claims, {name}: {sel.sum()} pairs ({y[sel].sum()} relevant): "
              f"cosine={m.coef_[0][0]:.2f}, coverage={m.coef_[0][1]:.2f}, bias={m.intercept_[0]:.2f}")
    print(f"  constants in keel.retrieval.fusion: {RELEVANCE_COEF}")
    Xh, yh, rh = pairs(held)
    ph = 1 / (1 + np.exp(-(RELEVANCE_COEF['cosine'] * Xh[:, 0] + RELEVANCE_COEF['coverage'] * Xh[:, 1] + RELEVANCE_COEF['bias'])))
    for name, sel in (("best hit", rh == 0), ("all top-20 pairs", rh >= 0)):
        p, yy = ph[sel], yh[sel]
        print(f"reliability on {len(held)} held-out claims, {name} ({sel.sum()} pairs):")
        print("  predicted bucket   pairs   mean predicted   observed relevant")
        ece = 0
        for lo in np.arange(0, 1, 0.1):
            b = (p >= lo) & ((p < lo + 0.1) if lo < 0.85 else (p <= 1))
            if b.sum():
                ece += b.sum() / len(p) * abs(p[b].mean() - yy[b].mean())
                print(f"  [{lo:.1f}, {lo + 0.1:.1f})         {b.sum():6d}   {p[b].mean():.3f}            {yy[b].mean():.3f}")
        print(f"  expected calibration error {ece:.4f}; Brier {np.mean((p - yy) ** 2):.4f} (base rate {yy.mean():.4f})")
    pt, yt = ph[rh == 0], yh[rh == 0]
    print(f"  best hit >= 0.35 for {np.mean(pt >= 0.35):.3f} of held-out claims; its relevant rate {yt[pt >= 0.35].mean():.3f} above the bar, {yt[pt < 0.35].mean():.3f} below")


# ---------------------------------------------------------------- fixture corpus
FIXTURE_Q = ["How many quotes are needed for a purchase between $10,000 and $100,000?",
             "For how many days must an open tender be advertised?", "Who must approve a purchase worth $120,000?",
             "How long are adult clinic records kept?", "What is the capital of France?", "Who won the 1998 World Cup?"]

def bench_fixture(args):
    from keel.factory import build_context
    d = CACHE/"fixture-data"
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=d))
    if not ctx.con.execute("SELECT count(*) FROM chunks").fetchone()[0]:
        ctx.ingestor.ingest_manifest(ROOT.parent/"golden"/"corpus"/"manifest.yaml", progress=False)
    r = ctx.retriever
    n = ctx.con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    print(f"\nfixture corpus (golden/corpus): {n} chunks; real query embedding included in vector/hybrid/retrieve")
    qs = FIXTURE_Q * 3
    row("bm25 in-memory engine", timeit(lambda q: r.bm25_index().search(q, None, 20), qs))
    row("bm25 fts5 engine", timeit(lambda q: fts_bm25(ctx.con, q, None, 20), qs))
    row("embed_query (MiniLM int8)", timeit(lambda q: ctx.embeddings.embed_query(q), qs))
    row("Retriever.vector", timeit(lambda q: r.vector(q, None, score=False), qs))
    row("Retriever.hybrid", timeit(lambda q: r.hybrid(q, None, score=False), qs))
    row("Retriever.retrieve (+relevance)", timeit(lambda q: r.retrieve(q, None), qs))
    print("  best relevance per question (bar 0.35):")
    for q in FIXTURE_Q:
        hits = r.retrieve(q, ["public", "clinic"])
        print(f"    {max((h.relevance for h in hits), default=0):.3f}  {q}")
    ctx.close()


# ---------------------------------------------------------------- synthetic
def bench_synthetic(args):
    n = args.n_synthetic
    path = CACHE/f"synthetic-{n}.db"
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(30_000)]
    zipf = 1 / np.arange(1, len(vocab) + 1) ** 1.05; zipf /= zipf.sum()
    TAGS = ["public", "hr", "finance", "clinic", "legal", "exec"]
    if not path.exists():
        t = time.perf_counter()
        with atomic_path(path) as tmp:
            con = connect(tmp)
            insert = "INSERT INTO chunks(document_id,ord,text,acl_tags,quarantined,embedding) VALUES (?,?,?,?,?,?)"
            with transaction(con):
                doc = con.execute("INSERT INTO documents(source,title,kind,checksum) "
                                  "VALUES ('synthetic','Synthetic','text','0')").lastrowid
                batch = []
                for i in range(n):
                    words = rng.choice(len(vocab), size=rng.integers(40, 120), p=zipf)
                    tags = [TAGS[j] for j in sorted(set(rng.choice(6, size=rng.integers(1, 3),
                                                                   p=[.5, .1, .15, .1, .1, .05])))]
                    v = rng.standard_normal(384).astype(np.float32); v /= np.linalg.norm(v)
                    batch.append((doc, i, " ".join(vocab[w] for w in words), json.dumps(tags),
                                  int(rng.random() < 0.01), v.tobytes()))
                    if len(batch) == 5000: con.executemany(insert, batch); batch = []
                if batch: con.executemany(insert, batch)
            con.close()
        print(f"\n(built {n} synthetic chunks in {time.perf_counter() - t:.0f} s)")
    con = connect(path)
    settings = load_settings(env={}, dotenv=None, data_dir=CACHE/"synthetic-data")
    emb = CachedQueryEmbeddings([], [])
    t = time.perf_counter(); index = build_from_db(con, 384); t_faiss = time.perf_counter() - t
    r = Retriever(con, emb, index, settings)
    t_build, t_load = build_times(con, r, fts5=args.fts5_build)
    bi = r.bm25_index()
    qrng = random.Random(1)
    qs = [" ".join(qrng.choice(vocab[:5000]) for _ in range(qrng.randint(3, 12))) for _ in range(200)]
    print(f"\nsynthetic: {n} chunks (Zipf words, 6 tags, 1% quarantined, random unit vectors); FAISS flat built in {t_faiss:.1f} s")
    print(f"BM25Index built in {t_build['python']:.1f} s" + (f" (FTS5's token table: {t_build['fts5']:.1f} s)" if 'fts5' in t_build else "") + f"; loaded from its file in {t_load:.2f} s")
    row("bm25 in-memory engine", timeit(lambda q: bi.search(q, None, 20), qs))
    row("bm25 fts5 engine", timeit(lambda q: fts_bm25(con, q, None, 20), qs[:50]))
    row("bm25 in-memory, tags [exec] (rare)", timeit(lambda q: bi.search(q, ["exec"], 20), qs))
    row("Retriever.vector (faiss flat)", timeit(lambda q: r.vector(q, None, score=False), qs))
    row("Retriever.vector, tags [exec]", timeit(lambda q: r.vector(q, ["exec"], score=False), qs))
    row("Retriever.hybrid", timeit(lambda q: r.hybrid(q, None, score=False), qs))
    row("Retriever.retrieve (+relevance)", timeit(lambda q: r.retrieve(q, None), qs))
    row("keel.db.fingerprint", timeit(lambda q: fingerprint(con), qs[:20]))
    con.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fit", action="store_true", help="fit the relevance logistic and print the reliability table")
    ap.add_argument("--skip-fixture", action="store_true"); ap.add_argument("--skip-scifact", action="store_true")
    ap.add_argument("--skip-synthetic", action="store_true"); ap.add_argument("--n-synthetic", type=int, default=100_000)
    ap.add_argument("--fts5-build", action="store_true", help="also time building the BM25 index from FTS5's token table on the synthetic corpus (minutes)")
    args = ap.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    if not args.skip_scifact: bench_scifact(args)
    if not args.skip_fixture: bench_fixture(args)
    if not args.skip_synthetic: bench_synthetic(args)
