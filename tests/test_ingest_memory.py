"""Embedding without onnxruntime's CPU memory arena (the default, which keeps a long ingest's memory flat) stores
exactly what embedding with it stored: the same chunks, the same vectors in the index, the same search results.
Ten pages of SQLite's manual and the fixture's planted injection, ingested with `keel ingest`'s own command code and the
real embedding model."""
import json, shutil
from pathlib import Path
import numpy as np
import pytest

PAGES = Path(__file__).resolve().parent / "fixtures" / "sqlite-manual" / "pages"
PLANTED = Path(__file__).resolve().parent.parent / "golden" / "corpus" / "supplier-note.txt"   # a planted injection
QUERIES = ["How many files does an SQLite database occupy?", "What does AUTOINCREMENT change?",
           "Does SQLite need a server?", "What is an in-memory database?", "What does REPLACE do?"]


def _ingest(data: Path, arena: bool) -> dict:
    "What an ingest of the pages stored, with the arena on or off."
    from keel.config import load_settings
    from keel.factory import build_context
    from keel.ingest.pipeline import cli
    ctx = build_context(load_settings(data_dir=data))
    try:
        assert ctx.embeddings.memory_arena is False            # the default
        ctx.embeddings.memory_arena = arena
        folder = data.parent / f"pages-{arena}"   # the manual's pages and the fixture's planted injection
        folder.mkdir()
        for p in [*PAGES.iterdir(), PLANTED]: shutil.copy(p, folder / p.name)
        assert cli([str(folder)], lambda **kw: ctx) == 0
        rows = ctx.con.execute("SELECT c.id, d.source, c.ord, c.text, c.heading, c.quarantined FROM chunks c "
                               "JOIN documents d ON d.id = c.document_id ORDER BY d.source, c.ord").fetchall()
        key = {r[0]: (Path(r[1]).name, r[2]) for r in rows}
        ids = sorted(ctx.index._tags)
        vecs = {key[i]: ctx.index._index.reconstruct(int(i)) for i in ids}
        hits = [[key[i] for i, _ in ctx.index.search(ctx.embeddings.embed_query(q), 5, ["public"])] for q in QUERIES]
        return dict(chunks=[(Path(r[1]).name, *r[2:]) for r in rows], vecs=vecs, hits=hits)
    finally: ctx.close()


@pytest.mark.slow
def test_ingest_without_arena_stores_the_same(tmp_path):
    on, off = _ingest(tmp_path / "on", True), _ingest(tmp_path / "off", False)
    assert len(off["chunks"]) > 20 and any(c[-1] for c in off["chunks"])   # a real corpus, some chunks quarantined
    assert off["chunks"] == on["chunks"]
    assert sorted(off["vecs"]) == sorted(on["vecs"])
    assert all(np.array_equal(off["vecs"][k], on["vecs"][k]) for k in on["vecs"])
    assert off["hits"] == on["hits"] and all(off["hits"])
