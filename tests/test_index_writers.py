"""Two processes (here two contexts) ingesting into one data directory: the vector index on disk must never
be stamped fresh while it lacks the other writer's chunks."""
from pathlib import Path
from keel.config import load_settings
from keel.factory import build_context
from keel.testing import HashEmbeddings


def ctx_for(data_dir):
    c = build_context(load_settings(env={}, dotenv=None, data_dir=data_dir, answer_mode="extractive"))
    c.__dict__["embeddings"] = HashEmbeddings(384)      # a named fake: the race is in the bookkeeping, not the model
    return c


def test_a_second_writer_never_leaves_a_fresh_but_partial_index(tmp_path):
    data = tmp_path/"data"
    for n, text in (("a.md", "# Alpha\n\nAlpha quotes are needed for purchases."), ("b.md", "# Beta\n\nBeta leave is ten days.")):
        (tmp_path/n).write_text(text)
    first, second = ctx_for(data), ctx_for(data)
    assert second.index.count() == 0                     # the second writer loads its index before the first writes
    assert first.ingestor.ingest_path(tmp_path/"a.md").status == "added"
    res = second.ingestor.ingest_path(tmp_path/"b.md")
    assert res.status == "added" and "rebuilt on the next start" in res.detail
    first.close(); second.close()
    fresh = ctx_for(data)
    n = fresh.con.execute("SELECT count(*) FROM chunks WHERE quarantined = 0").fetchone()[0]
    assert n == 2 and fresh.index.count() == n           # rebuilt from the database, not loaded partial
    hits = fresh.retriever.retrieve("alpha quotes purchases", ["public"])
    assert any(h.title == "Alpha" for h in hits)
    fresh.close()
