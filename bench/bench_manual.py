"""A real HTML manual through the ingest path, without models: how many chunks the site's repeated blocks (menus,
taglines) would make, how many chunks fall under the floor, the longest heading path, and the documents the sanity
check warns about. Pages are loaded and chunked exactly as `keel ingest` does (the loader, `strip_boilerplate` with
the block counts of all the pages, `chunk_document` at the default sizes); no embedding, so a manual of hundreds of
pages takes seconds. Writes bench/results/manual-<name>.json and .md. Usage:
    .venv/bin/python bench/bench_manual.py                      # the committed ten-page SQLite sample
    .venv/bin/python bench/bench_manual.py --pages DIR --name sqlite3-doc --label "sqlite3-doc 3.40.1 (Debian)"

The whole SQLite manual is Debian's `sqlite3-doc` package: `apt-get download sqlite3-doc; dpkg -x sqlite3-doc*.deb x`,
then `--pages x/usr/share/doc/sqlite3`.
"""
import argparse, json, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from keel.ingest.loaders import load
from keel.ingest.chunking import chunk_document, chunk_warnings, MIN_CHUNK
from keel.ingest.boilerplate import BlockCounts, keys_of, block_spans, dropped_blocks, strip_boilerplate
from keel.command import with_progress

def boilerplate_chunks(doc, counts) -> int:
    "Chunks of the page as it was (nothing dropped) with at least half their characters in boilerplate blocks."
    n = 0
    for c in chunk_document(doc):
        text = doc.pages[0].text if c.page is None else next(p.text for p in doc.pages if p.number == c.page)
        spans = block_spans(text)
        drop = dropped_blocks(text, spans, counts)
        gone = sum(max(0, min(b, c.end) - max(a, c.start)) for (a, b), d in zip(spans, drop) if d)
        n += gone * 2 >= c.end - c.start
    return n

def measure(pages:Path) -> dict:
    files = sorted(p for p in pages.rglob("*") if p.suffix.lower() in (".html", ".htm"))
    docs, failed = [], 0
    for f in with_progress(files, "load", "page"):
        try: docs.append(load(f))
        except Exception: failed += 1
    counts = BlockCounts()
    for d in docs: counts.add(d.source, keys_of(d.text))
    before = after = boiler = small = 0; longest = 0; warned = []
    for d in with_progress(docs, "chunk", "page"):
        raw, s = chunk_document(d), strip_boilerplate(d, counts)
        cs = chunk_document(s)
        before += len(raw); after += len(cs); boiler += boilerplate_chunks(d, counts)
        small += sum(len(c.text.strip()) < MIN_CHUNK for c in cs)
        longest = max([longest] + [len(c.heading) for c in cs])
        w = d.meta.get("warnings", []) + chunk_warnings(cs, len(s.text))
        if w: warned.append(dict(page=d.name, warnings=w))
    return dict(pages=len(files), loaded=len(docs), failed=failed, chunks_kept_boilerplate=before,
                chunks=after, boilerplate_chunks=boiler, boilerplate_share=round(boiler / max(before, 1), 4),
                blocks_dropped=sum(strip_boilerplate(d, counts).meta["boilerplate"] for d in docs),
                chunks_under_floor=small, floor=MIN_CHUNK, longest_heading_path=longest, warned=warned)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=Path, default=ROOT/"tests"/"fixtures"/"sqlite-manual"/"pages")
    ap.add_argument("--name", default="sqlite-sample")
    ap.add_argument("--label", default="tests/fixtures/sqlite-manual/pages (10 pages of SQLite 3.40.1's documentation)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    res = dict(corpus=a.label, **measure(a.pages))
    res["seconds"] = round(time.perf_counter() - t0, 1)
    out = HERE/"results"/f"manual-{a.name}"
    out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    md = [f"# Ingest of {a.label}", "",
          f"{res['loaded']} of {res['pages']} pages loaded; {res['chunks']} chunks "
          f"({res['chunks_kept_boilerplate']} with the repeated blocks kept).", "",
          f"- boilerplate: {res['blocks_dropped']} repeated blocks dropped; with them kept, "
          f"{res['boilerplate_chunks']} of {res['chunks_kept_boilerplate']} chunks "
          f"({res['boilerplate_share']:.1%}) would be at least half boilerplate",
          f"- chunks under the floor of {res['floor']} characters: {res['chunks_under_floor']}",
          f"- longest heading path: {res['longest_heading_path']} characters",
          f"- pages with warnings: {len(res['warned'])}", ""]
    md += [f"  - {w['page']}: {'; '.join(w['warnings'])}" for w in res["warned"][:20]]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))

if __name__ == "__main__": main()
