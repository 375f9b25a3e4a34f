"""Permission-filtered retrieval, end to end: a generated corpus of thousands of chunks with mixed tags and
quarantined chunks in a real SQLite file, a real FAISS index, random callers and random queries; no hit may
ever fall outside the caller's tags or be quarantined, and every permitted match must be findable.

The property test embeds with `keel.testing.HashEmbeddings`, a deterministic word-hashing model: the packaged MiniLM
embeds about ten chunks a second here, too slow for thousands of chunks per run. The slow test at the end
runs the real model over the fixture corpus (golden/corpus)."""
import json, math, random, sqlite3
from pathlib import Path
import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st, HealthCheck

from keel.config import load_settings
from keel.db import connect, transaction
from keel.providers.base import allowed, effective_tags
from keel.providers.faiss import FaissIndex, build_from_db
from keel.retrieval.bm25 import BM25Index, fts_query, query_terms
from keel.retrieval.retriever import Retriever
from keel.testing import HashEmbeddings

ROOT = Path(__file__).resolve().parent.parent
TAGS = ["public", "hr", "finance", "clinic", "legal"]
RARE = "board"           # only a handful of chunks carry it
WORDS = [f"{a}{b}" for a in ("quot", "tend", "rec", "pay", "band", "leav", "aud", "risk", "fund", "care")
         for b in ("e", "er", "ing", "s", "al", "ion", "ed", "ly", "ity", "ment")]          # 100 content words


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    "3,000 chunks in 60 documents, mixed tags, 5% quarantined (half of them still in the vector index, as after a late quarantine)."
    rng = random.Random(7)
    d = tmp_path_factory.mktemp("retrieval")
    con = connect(d/"keel.db")
    emb = HashEmbeddings(384)
    truth = {}
    with transaction(con):
        for doc in range(60):
            dtags = sorted(set(rng.sample(TAGS, rng.choice([1, 1, 2]))))
            did = con.execute("INSERT INTO documents(source,title,kind,checksum,acl_tags) VALUES (?,?,?,?,?)",
                              (f"doc{doc}.md", f"Document {doc}", "markdown", str(doc), json.dumps(dtags))).lastrowid
            for j in range(50):
                tags = [RARE] if rng.random() < 0.003 else dtags
                words = rng.choices(WORDS, weights=[1 / (i + 1) for i in range(len(WORDS))], k=rng.randint(5, 30))
                text = " ".join(words)
                q = rng.random() < 0.05
                cid = con.execute("INSERT INTO chunks(document_id,ord,text,heading,acl_tags,quarantined,embedding) VALUES (?,?,?,?,?,?,?)",
                                  (did, j, text, "", json.dumps(tags), int(q), emb.embed([text])[0].tobytes())).lastrowid
                truth[cid] = (tags, q)
    if sum(t == [RARE] for t, q in truth.values() if not q) < 2:   # make sure the rare tag exists on searchable chunks
        with transaction(con):
            for cid in list(truth)[:3]:
                con.execute("UPDATE chunks SET acl_tags=?, quarantined=0 WHERE id=?", (json.dumps([RARE]), cid)); truth[cid] = ([RARE], False)
    index = build_from_db(con, emb.dim)
    late = [c for c, (t, q) in truth.items() if q][::2]              # quarantined after indexing: the index still holds them
    rows = con.execute(f"SELECT id, acl_tags, embedding FROM chunks WHERE id IN ({','.join('?' * len(late))})", late).fetchall()
    index.upsert([r[0] for r in rows], np.stack([np.frombuffer(r[2], np.float32) for r in rows]), [json.loads(r[1]) for r in rows])
    s = load_settings(env={}, dotenv=None, data_dir=d)
    r = Retriever(con, emb, index, s)
    yield dict(con=con, r=r, truth=truth, emb=emb, index=index)
    con.close()


def _visible(truth, tags):
    return {c for c, (t, q) in truth.items() if not q and allowed(t, tags)}

def _matching(con, query):
    expr = fts_query(query)
    return {r[0] for r in con.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (expr,))} if expr else set()


users = st.one_of(st.none(), st.just([]), st.lists(st.sampled_from(TAGS + [RARE, "nobody"]), min_size=1, max_size=3))
queries = st.one_of(st.lists(st.sampled_from(WORDS + ["the", "AND", "NOT", "NEAR(", "*", '"', "é", "😀", "x:y", "^"]), max_size=8).map(" ".join),
                    st.text(max_size=200))


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tags=users, query=queries, k=st.integers(1, 40))
def test_no_hit_outside_the_callers_tags_and_every_permitted_match_is_found(corpus, tags, query, k):
    con, r, truth = corpus["con"], corpus["r"], corpus["truth"]
    visible = _visible(truth, tags)
    for name, hits in (("bm25", r.bm25(query, tags, k)), ("vector", r.vector(query, tags, k)),
                       ("hybrid", r.hybrid(query, tags, k)), ("retrieve", r.retrieve(query, tags, k))):
        ids = [h.chunk_id for h in hits]
        assert len(ids) == len(set(ids)) and len(ids) <= k, name
        assert set(ids) <= visible, f"{name} returned {set(ids) - visible} to {tags}"
        assert all(0 <= h.relevance <= 1 for h in hits)
        if tags == []: assert hits == []
    # the filter acts inside the search: exactly min(k, permitted matches) BM25 hits, min(k, permitted) vector hits
    want = _matching(con, query) & visible
    assert {h.chunk_id for h in r.bm25(query, tags, k)} <= want
    assert len(r.bm25(query, tags, k)) == min(k, len(want))
    if query.strip(): assert len(r.vector(query, tags, k)) == min(k, len(visible))
    assert r.violations == 0


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join), k=st.integers(1, 10))
def test_a_caller_whose_chunks_are_rare_still_gets_them(corpus, query, k):
    r, truth = corpus["r"], corpus["truth"]
    rare = _visible(truth, [RARE])
    hits = r.vector(query, [RARE], k)
    assert {h.chunk_id for h in hits} <= rare and len(hits) == min(k, len(rare))
    bm = r.bm25(query, [RARE], k)
    assert len(bm) == min(k, len(_matching(corpus["con"], query) & rare))


def test_vector_hits_are_the_exact_nearest_permitted_chunks(corpus):
    r, truth, emb, con = corpus["r"], corpus["truth"], corpus["emb"], corpus["con"]
    vecs = {i: np.frombuffer(b, np.float32) for i, b in con.execute("SELECT id, embedding FROM chunks")}
    for tags in (None, ["hr"], ["clinic", "legal"], [RARE]):
        q = "quote tender record"
        qv = emb.embed_query(q)
        vis = sorted(_visible(truth, tags), key=lambda i: -float(vecs[i] @ qv))[:10]
        got = r.vector(q, tags, 10)
        assert np.allclose([h.score for h in got], [float(vecs[i] @ qv) for i in vis], atol=1e-5)


def test_bm25_engines_agree(corpus):
    con, r = corpus["con"], corpus["r"]
    f = Retriever(con, corpus["emb"], corpus["index"], r.settings, engine="fts5")
    rng = random.Random(3)
    for _ in range(100):
        q = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
        tags = rng.choice([None, ["hr"], ["finance", "legal"], [RARE], TAGS])
        a, b = r.bm25(q, tags, 15, score=False), f.bm25(q, tags, 15, score=False)
        assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-9)
        assert [h.chunk_id for h in a] == [h.chunk_id for h in b] or sorted(h.score for h in a) == sorted(h.score for h in b)


def test_the_index_follows_changes_to_the_database(corpus, tmp_path):
    con = connect(tmp_path/"keel.db")
    emb = HashEmbeddings(384)
    with transaction(con):
        d = con.execute("INSERT INTO documents(source,title,kind,checksum) VALUES ('a.md','A','markdown','1')").lastrowid
        c = con.execute("INSERT INTO chunks(document_id,ord,text) VALUES (?,0,'quarterly audit findings')", (d,)).lastrowid
    r = Retriever(con, emb, FaissIndex(emb.dim), load_settings(env={}, dotenv=None, data_dir=tmp_path))
    assert [h.chunk_id for h in r.bm25("audit", None)] == [c]
    con.execute("UPDATE chunks SET quarantined=1 WHERE id=?", (c,))      # quarantined after the index was built
    assert r.bm25("audit", None) == []
    other = connect(tmp_path/"keel.db")                                  # a second connection (another process) adds a chunk
    with transaction(other):
        c2 = other.execute("INSERT INTO chunks(document_id,ord,text) VALUES (?,1,'audit committee charter')", (d,)).lastrowid
    assert [h.chunk_id for h in r.bm25("audit", None)] == [c2]
    con.close(); other.close()


@hsettings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(max_size=300), st.text(alphabet=st.sampled_from('"\'()*^:-+{}NEAR/ANDORNOT \u00e9\U0001F600\u200b'), max_size=200),
                      st.integers(0, 10_000).map(lambda n: "😀 AND \"x\" " * (n // 10))))
def test_any_text_becomes_a_safe_fts5_query(text):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
    db.execute("INSERT INTO t VALUES ('near and not or quotes')")
    expr = fts_query(text)
    if expr is not None:
        assert expr.count('"') % 2 == 0 and len(query_terms(text)) <= 32
        db.execute("SELECT rowid FROM t WHERE t MATCH ?", (expr,)).fetchall()


def test_ten_kilobyte_query(corpus):
    r = corpus["r"]
    q = ("quote tender record " + "NOT (x) AND ^y* z:w \"" + "😀é ") * 300
    assert len(q) > 10_000
    assert all(h.chunk_id in _visible(corpus["truth"], None) for h in r.retrieve(q, None))


@pytest.mark.slow
def test_fixture_corpus_relevance_gate(tmp_path):
    "Real MiniLM over golden/corpus: on-topic questions score above min_relevance, off-topic ones below."
    from keel.factory import build_context
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=tmp_path))
    ctx.ingestor.ingest_manifest(ROOT/"golden"/"corpus"/"manifest.yaml", progress=False)
    bar = ctx.settings.min_relevance
    best = lambda q, tags=None: max((h.relevance for h in ctx.retriever.retrieve(q, tags)), default=0.0)
    for q in ("What is the capital of France?", "Who won the 1998 World Cup?"):
        assert best(q) < bar, q
    for q in ("How many quotes are needed for a purchase between $10,000 and $100,000?",
              "For how many days must an open tender be advertised on the council tenders portal?",
              "Who must approve a purchase worth $120,000?"):
        assert best(q) >= bar, q
    hits = ctx.retriever.retrieve("salary bands", None)
    assert all(allowed(h.acl_tags, None) for h in hits) and ctx.retriever.violations == 0
    ctx.close()


def _same_as_rebuild(con, r, rng, n=40, build=BM25Index.build):
    "The retriever's BM25 (kept up to date) ranks and scores as a fresh build does, and as FTS5 does."
    fresh, f = build(con), Retriever(con, r.embeddings, r.index, r.settings, engine="fts5")
    for _ in range(n):
        q = " ".join(rng.choices(WORDS, k=rng.randint(1, 5)))
        tags = rng.choice([None, ["hr"], ["finance", "legal"], [RARE], TAGS])
        a, b, c = r.bm25_index().search(q, tags, 15), fresh.search(q, tags, 15), f._bm25_pairs(q, tags, 15)
        assert [i for i, _ in a] == [i for i, _ in b] == [i for i, _ in c], q
        assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-9) and np.allclose([s for _, s in a], [s for _, s in c], atol=1e-9)


def _add(con, rng, doc, n):
    with transaction(con):
        for j in range(n):
            con.execute("INSERT INTO chunks(document_id,ord,text,acl_tags) VALUES (?,?,?,?)",
                        (doc, 1000 + j, " ".join(rng.choices(WORDS, k=rng.randint(3, 20))), json.dumps(rng.sample(TAGS, 1))))


def test_incremental_bm25_follows_every_kind_of_change(tmp_path):
    rng = random.Random(11)
    con = connect(tmp_path/"keel.db")
    with transaction(con):
        d = con.execute("INSERT INTO documents(source,title,kind,checksum) VALUES ('a.md','Audit','markdown','1')").lastrowid
    _add(con, rng, d, 300)
    emb = HashEmbeddings(384)
    r = Retriever(con, emb, FaissIndex(emb.dim), load_settings(env={}, dotenv=None, data_dir=tmp_path))
    r.bm25_index()
    build = BM25Index.build
    BM25Index.build = None                       # from here on, every update must be incremental
    try:
        for step in range(12):
            ids = [x[0] for x in con.execute("SELECT id FROM chunks")]
            with transaction(con):
                if step % 3 == 0: con.execute(f"DELETE FROM chunks WHERE id IN ({','.join(map(str, rng.sample(ids, 10)))})")
                if step % 3 == 1: con.execute("UPDATE chunks SET quarantined = 1 - quarantined WHERE id = ?", (rng.choice(ids),))
                if step % 3 == 2: con.execute("UPDATE chunks SET acl_tags = ? WHERE id = ?", (json.dumps([RARE, "hr"]), rng.choice(ids)))
            _add(con, rng, d, rng.randint(1, 40))
            _same_as_rebuild(con, r, rng, 10)
        again = Retriever(con, emb, r.index, r.settings)          # a new process: the saved file, caught up from the log
        _same_as_rebuild(con, again, rng)
    finally: BM25Index.build = build
    con.close()


CRASH = """
import sys, os, json, random
import numpy as np
from keel.config import load_settings
from keel.db import connect, transaction
from keel.providers.faiss import FaissIndex
from keel.retrieval.retriever import Retriever
d, when = sys.argv[1], sys.argv[2]
con = connect(d + "/keel.db")
r = Retriever(con, None, FaissIndex(8), load_settings(env={}, dotenv=None, data_dir=d))
r.bm25_index()
with transaction(con):
    for j in range(int(sys.argv[3])):
        con.execute("INSERT INTO chunks(document_id,ord,text,acl_tags) VALUES (1,?,?,'[\\"public\\"]')", (5000 + j, f"crash word{j} audit"))
if when == "after-commit": os._exit(9)          # the database committed, the index never heard of it
real = np.savez
def torn(path, **arrays):                        # write half of the new file, then die before the rename
    real(path, **arrays)
    with open(path, "r+b") as f: f.truncate(os.path.getsize(path) // 2)
    os._exit(9)
np.savez = torn
r.bm25_index()
"""

@pytest.mark.parametrize("when,n", [("after-commit", 5), ("mid-save", 400)])
def test_the_bm25_file_stays_consistent_after_a_crash(tmp_path, when, n):
    import subprocess, sys
    rng = random.Random(5)
    con = connect(tmp_path/"keel.db")
    with transaction(con):
        d = con.execute("INSERT INTO documents(source,title,kind,checksum) VALUES ('a.md','Audit','markdown','1')").lastrowid
    _add(con, rng, d, 200)
    p = subprocess.run([sys.executable, "-c", CRASH, str(tmp_path), when, str(n)], capture_output=True, text=True)
    assert p.returncode == 9, p.stderr
    assert (tmp_path/"bm25-index.npz").exists()
    emb = HashEmbeddings(384)
    r = Retriever(con, emb, FaissIndex(emb.dim), load_settings(env={}, dotenv=None, data_dir=tmp_path))
    _same_as_rebuild(con, r, rng)
    assert r.bm25_index().search("crash word3", None, 1)[0][0] == con.execute("SELECT id FROM chunks WHERE text = 'crash word3 audit'").fetchone()[0]
    con.close()
