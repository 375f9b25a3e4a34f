"""Peak memory and time per 1,000 chunks of `keel ingest` over a manual-sized HTML corpus, with onnxruntime's CPU
memory arena on (how Keel embedded before) and off (today's default, `FastEmbedEmbeddings(memory_arena=False)`).
Each path runs in a fresh process over its own data directory, through the same command code as `keel ingest`; the
parent compares what they stored (chunk texts, headings, quarantine flags, the vectors in the FAISS index) and the
top hits of queries taken from the corpus. Writes bench/results/ingest-memory-<name>.json and .md. Usage:
    .venv/bin/python bench/bench_ingest_memory.py                       # the committed ten-page SQLite sample
    nice -n 10 .venv/bin/python bench/bench_ingest_memory.py --pages /usr/share/doc/sqlite3 --name sqlite3-doc \\
        --label "sqlite3-doc 3.40.1 (Debian 12)" [--paths new]

The manuals are Debian packages: `apt-get install sqlite3-doc python3-doc` (pages under /usr/share/doc/sqlite3 and
/usr/share/doc/python3/html). Peak memory is the child's own ru_maxrss (the parser process is not counted in it).
"""
import argparse, hashlib, json, os, resource, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
PATHS = dict(old=True, new=False)   # path -> memory_arena

def child(pages:list[str], data:str, arena:bool) -> dict:
    "Ingest `pages` into `data` as `keel ingest` does; peak RSS, time, and digests of what was stored."
    os.environ["KEEL_DATA_DIR"] = data
    from keel.factory import build_context
    from keel.ingest.pipeline import cli
    ctx = build_context()
    ctx.embeddings.memory_arena = arena
    t0 = time.perf_counter()
    rc = cli(list(pages), lambda **kw: ctx)
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = ctx.con.execute("SELECT c.id, d.source, c.ord, c.text, c.heading, c.quarantined FROM chunks c JOIN "
                           "documents d ON d.id = c.document_id ORDER BY d.source, c.ord").fetchall()
    h = hashlib.sha256()
    for r in rows: h.update(json.dumps(r[1:]).encode())
    idx, ids = ctx.index, sorted(ctx.index._tags)
    import numpy as np
    vecs = np.vstack([idx._index.reconstruct(int(i)) for i in ids]) if ids else np.zeros((0, idx.dim), np.float32)
    key = {r[0]: (r[1], r[2]) for r in rows}
    qs = [r[3][:200] for r in rows[:: max(1, len(rows) // 25)]][:25]
    hits = [[key[i] for i, _ in idx.search(ctx.embeddings.embed_query(q), 5, ["public"])] for q in qs]
    return dict(rc=rc, seconds=round(secs, 1), peak_rss_mb=round(peak), chunks=len(rows),
                quarantined=sum(r[5] for r in rows), chunks_digest=h.hexdigest(), indexed=len(ids),
                index_ids=[list(key[i]) for i in ids], vectors_digest=hashlib.sha256(vecs.tobytes()).hexdigest(),
                max_abs_vector=float(np.abs(vecs).max()) if len(ids) else 0.0,
                search_hits=[[list(x) for x in h] for h in hits])

def run_path(name:str, pages:list[str]) -> dict:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)/"out.json"
        p = subprocess.run([sys.executable, __file__, "--child", name, "--out", str(out), "--data", str(Path(d)/"data"),
                            *pages], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode: sys.exit(f"{name} path failed:\n{p.stderr[-2000:]}")
        return json.loads(out.read_text())

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pages_", nargs="*")
    ap.add_argument("--pages", default=str(ROOT/"tests"/"fixtures"/"sqlite-manual"/"pages"))
    ap.add_argument("--name", default="sqlite-sample")
    ap.add_argument("--label", default="tests/fixtures/sqlite-manual/pages (10 pages of SQLite 3.40.1's documentation)")
    ap.add_argument("--paths", default="old,new", help="old (arena on), new (arena off), or both")
    ap.add_argument("--child"); ap.add_argument("--out"); ap.add_argument("--data")
    a = ap.parse_args()
    if a.child:
        Path(a.out).write_text(json.dumps(child(a.pages_, a.data, PATHS[a.child]))); return
    res = dict(corpus=a.label, paths={})
    for name in a.paths.split(","):
        r = run_path(name, [a.pages])
        r["seconds_per_1000_chunks"] = round(1000 * r["seconds"] / max(r["chunks"], 1), 1)
        res["paths"][name] = {k: v for k, v in r.items() if k not in ("index_ids", "search_hits")} | dict(
            _ids=r["index_ids"], _hits=r["search_hits"])
    ps = list(res["paths"].values())
    if len(ps) == 2:
        a0, b0 = ps
        res["same_chunks"] = a0["chunks_digest"] == b0["chunks_digest"]
        res["same_index_ids"] = a0["_ids"] == b0["_ids"]
        res["same_vectors_bitwise"] = a0["vectors_digest"] == b0["vectors_digest"]
        res["same_search_hits"] = a0["_hits"] == b0["_hits"]
    for p in ps: p.pop("_ids"); p.pop("_hits")
    out = HERE/"results"/f"ingest-memory-{a.name}"
    out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    md = [f"# Ingest memory: {a.label}", "", "| path | chunks | quarantined | peak RSS (MB) | seconds | s per 1,000 chunks |",
          "|---|---|---|---|---|---|"]
    md += [f"| {n} ({'arena on' if PATHS[n] else 'arena off'}) | {p['chunks']} | {p['quarantined']} | "
           f"{p['peak_rss_mb']} | {p['seconds']} | {p['seconds_per_1000_chunks']} |" for n, p in res["paths"].items()]
    if len(ps) == 2:
        md += ["", f"- same chunks (source, order, text, heading, quarantine): {res['same_chunks']}",
               f"- same ids in the vector index: {res['same_index_ids']}; vectors bitwise equal: "
               f"{res['same_vectors_bitwise']}", f"- same top-5 hits for 25 queries: {res['same_search_hits']}"]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))

if __name__ == "__main__": main()
