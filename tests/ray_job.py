"""The Ray side of tests/test_scaleout.py, run in a child process so a Ray cluster that cannot start on a loaded
machine is bounded by the parent's timeout (Ray 2.60's `ray.init` can hang when its raylet dies during startup).

`python tests/ray_job.py small DIR` and `python tests/ray_job.py corpus DIR` print `started` once the private
cluster is up, then one JSON line of findings; the test asserts on them.
"""
import json, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).parent))
from test_scaleout import make_ctx, vectors, ledger_rows, strip, MANIFEST, GOLDEN
from keel.config import load_settings
from keel.executor import RayExecutor, DieOnce
from keel.factory import WorkerBuilder, make_embeddings
from keel.ingest.pipeline import RemoteEmbeddings
from keel.evals.run import run_eval


def small(ex, d):
    "A worker that dies mid-item is replaced and the item retried; embeddings match in-process ones."
    out = dict(doubled=ex.map(DieOnce(str(d / "flag"), 2), [1, 2, 3]), died=(d / "flag").exists())
    s = load_settings(env={}, dotenv=None, data_dir=d / "data")
    texts = ["three written quotes", "the records officer", "backups run nightly", "an open tender"]
    remote = RemoteEmbeddings(ex, WorkerBuilder(s), make_embeddings(s), batch=2)
    out["max_vector_diff"] = float(np.abs(remote.embed(texts) - make_embeddings(s).embed(texts)).max())
    return out


def corpus(ex, d):
    "The fixture corpus ingested and the golden set run in process and on Ray: vectors, items and ledger rows."
    res = {}
    for name, e in (("local", None), ("ray", ex)):
        ctx = make_ctx(d / name, e)
        ctx.ingestor.ingest_manifest(MANIFEST, progress=False)
        n0 = ctx.con.execute("SELECT max(seq) FROM ledger").fetchone()[0]
        r = run_eval(ctx, GOLDEN, d / f"reports-{name}", judge=False, baseline_path=d / "none.json", progress=False)
        res[name] = (vectors(ctx.con), strip(r.items, {}), ledger_rows(ctx.con), n0)
        ctx.close()
    (va, ia, la, _), (vb, ib, lb, _) = res["local"], res["ray"]
    return dict(chunks=len(va), same_ids=va.keys() == vb.keys(), items=len(ia),
                max_vector_diff=max(float(np.abs(va[k] - vb[k]).max()) for k in va),
                same_items=ia == ib, same_ledger=la == lb, ledger_rows=len(la))


if __name__ == "__main__":
    mode, d = sys.argv[1], Path(sys.argv[2])
    ex = RayExecutor("local", workers=1, num_cpus=1)
    try:
        ex._ray(); print("started", flush=True)
        print(json.dumps((small if mode == "small" else corpus)(ex, d)), flush=True)
    finally: ex.close()
