"""Embed the benchmark corpora's queries once into bench/.cache/embeddings/queries (what bench/fusion_study.py reads)."""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import context
from fusion_study import queries
for name in sys.argv[1:] or ["pubmedqa", "scifact"]:
    ctx, folder, split = context(name, ingest=False, cache="queries")
    t = time.perf_counter()
    for i, (_, text, _) in enumerate(queries(folder, split)):
        ctx.embeddings.embed_query(text)
        if i % 100 == 99: ctx.embeddings.save()
    ctx.embeddings.save()
    print(name, ctx.embeddings.computed, "queries embedded", round(time.perf_counter() - t), "s")
