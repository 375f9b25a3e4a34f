"""What the injection screen costs: time per passage for the patterns alone and for the patterns plus
the learned layer (every view scored), on short labelled passages, on the fixture corpus's chunks and
on SciFact abstracts cut to chunk length; beside it, what ingest already spends per chunk on the
embedding model, so the screen's share of ingest time can be read off.

    python bench/bench_screen.py [--scifact ../shared/data/scifact-train/corpus.jsonl] [--repeat 3]

Timings are wall-clock on whatever machine runs it; on a shared machine they are noisy.
"""

import argparse, json, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import yaml
from keel.safety.screen import screen
from keel.safety.learned import screen_learned, default_model, views
from keel.ingest.loaders import load
from keel.ingest.chunking import chunk_document


def per_passage_ms(fn, texts, repeat):
    best = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for t in texts:
            fn(t)
        best.append((time.perf_counter() - t0) * 1000 / len(texts))
    return round(min(best), 3), round(statistics.median(best), 3)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scifact", default=str(ROOT.parent / "shared/data/scifact-train/corpus.jsonl"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--embed", action="store_true", help="also time the packaged embedding model on the corpus chunks")
    a = ap.parse_args()
    default_model()  # load the weights outside the timing
    sets = {
        "labelled set, held-out passages": [
            json.loads(l)["text"]
            for l in (ROOT / "golden/safety/screen_set.jsonl").read_text().splitlines()
            if '"held_out"' in l
        ][:300]
    }
    docs = yaml.safe_load((ROOT / "golden/corpus/manifest.yaml").read_text())["documents"]
    sets["fixture corpus chunks"] = [
        c.text for d in docs for c in chunk_document(load(ROOT / "golden/corpus" / d["path"]), 800, 120)
    ]
    if Path(a.scifact).exists():
        sets["SciFact abstracts (800 chars)"] = [
            (json.loads(l)["title"] + "\n\n" + json.loads(l)["text"])[:800]
            for l in Path(a.scifact).read_text().splitlines()[:200]
        ]
    rows = []
    for name, texts in sets.items():
        p, l = per_passage_ms(screen, texts, a.repeat), per_passage_ms(screen_learned, texts, a.repeat)
        rows.append(
            dict(
                passages=name,
                n=len(texts),
                chars=round(statistics.mean(map(len, texts))),
                views=round(statistics.mean(len(views(t)) for t in texts), 1),
                patterns_ms=p[0],
                patterns_plus_learned_ms=l[0],
                patterns_median_ms=p[1],
                patterns_plus_learned_median_ms=l[1],
            )
        )
    if a.embed:
        from keel.config import load_settings
        from keel.factory import make_embeddings

        emb, texts = make_embeddings(load_settings(dotenv=None)), sets["fixture corpus chunks"]
        emb.embed(texts[:2])
        t0 = time.perf_counter()
        emb.embed(texts)
        ms = (time.perf_counter() - t0) * 1000 / len(texts)
        rows.append(
            dict(
                passages="fixture corpus chunks: embedding (ingest already pays this)",
                n=len(texts),
                embed_ms=round(ms, 3),
            )
        )
    print(
        "| passages | n | mean chars | mean views | patterns, ms/passage | patterns + learned, ms/passage |\n|---|---|---|---|---|---|"
    )
    for r in rows:
        if "embed_ms" in r:
            print(f"| {r['passages']} | {r['n']} | | | {r['embed_ms']} ms/chunk (MiniLM) | |")
        else:
            print(
                f"| {r['passages']} | {r['n']} | {r['chars']} | {r['views']} | {r['patterns_ms']} (median {r['patterns_median_ms']}) | "
                f"{r['patterns_plus_learned_ms']} (median {r['patterns_plus_learned_median_ms']}) |"
            )
