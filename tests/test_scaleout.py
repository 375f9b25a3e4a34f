"""Scale-out: ingest embedding, golden items and benchmark queries through an executor give the in-process results.

Two executors stand in for a cluster. `PickledExecutor` (`keel.testing`) is a FAKE remote executor: it runs here, but
every task and item travels through pickle and every task is set up afresh, so a job only works if it ships what a
remote worker needs and brings back only data; it makes the head-side code (replay of ledger and log rows, vectors written in the head's
transaction, rankings scored on the head) testable in the fast suite. The Ray tests use a real private Ray cluster
(`ray.init(address="local", num_cpus=1, include_dashboard=False)`), one actor, tiny data; the whole-corpus Ray
comparisons are `slow`.
"""
import json, os, shutil
from pathlib import Path
import numpy as np
import pytest
from keel.config import load_settings
from keel.factory import build_context
from keel.testing import PickledExecutor
from keel.evals.run import run_eval

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden" / "golden.yaml"
MANIFEST = ROOT / "golden" / "corpus" / "manifest.yaml"
FIXTURE = ROOT / "golden" / "retrieval" / "fixture.yaml"
VOLATILE = ("_ts", "ms", "latency_ms", "seconds", "embed_seconds", "judge_ms", "wall_s", "model_ms", "item_ms",
            "model_seconds", "judge_seconds", "item_seconds", "seconds_per_item", "stamp", "created_at")



def make_ctx(data_dir, executor=None):
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=data_dir, answer_mode="extractive"))
    if executor is not None: ctx.__dict__["_executor"] = executor
    return ctx


def strip(x, ids):
    "x without timings and timestamps, request ids renamed in order of appearance."
    if isinstance(x, dict): return {k: strip(v, ids) for k, v in x.items() if k not in VOLATILE and not k.startswith("latency")}
    if isinstance(x, list): return [strip(v, ids) for v in x]
    if isinstance(x, str) and len(x) == 32 and all(c in "0123456789abcdef" for c in x): return ids.setdefault(x, f"req{len(ids)}")
    return x


def ledger_rows(con):
    ids = {}
    return [strip([k, rid, json.loads(p)], ids) for k, rid, p in con.execute("SELECT kind, request_id, payload FROM ledger ORDER BY seq")]


def log_rows(con):
    ids = {}
    cols = "request_id, user, tags, mode, question, retrieved, answer, refused, citations, scores"
    return [strip(list(r), ids) for r in con.execute(f"SELECT {cols} FROM inference_log ORDER BY id")]


def vectors(con):
    return {r[0]: np.frombuffer(r[1], np.float32) for r in con.execute("SELECT id, embedding FROM chunks ORDER BY id")}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    "The fixture corpus ingested twice: in process (`local`) and through the fake remote executor (`remote`)."
    root = tmp_path_factory.mktemp("scaleout")
    for name, ex in (("local", None), ("remote", PickledExecutor())):
        ctx = make_ctx(root / name, ex)
        res = ctx.ingestor.ingest_manifest(MANIFEST, progress=False)
        assert all(r.status == "added" for r in res), [r.line for r in res]
        ctx.close()
    shutil.copy(GOLDEN, root / "golden.yaml")
    return root


def test_ingest_through_an_executor_writes_the_same_chunks_vectors_and_ledger(pair):
    a, b = (make_ctx(pair / n) for n in ("local", "remote"))
    va, vb = vectors(a.con), vectors(b.con)
    assert len(va) > 10 and va.keys() == vb.keys()
    assert max(float(np.abs(va[k] - vb[k]).max()) for k in va) < 1e-5
    assert ledger_rows(a.con) == ledger_rows(b.con)
    a.close(); b.close()


def test_remote_ingest_uses_remote_embeddings(tmp_path):
    ctx = make_ctx(tmp_path / "d", PickledExecutor())
    assert type(ctx.ingestor.embeddings).__name__ == "RemoteEmbeddings"
    assert type(make_ctx(tmp_path / "e").ingestor.embeddings).__name__ == "FastEmbedEmbeddings"


def test_eval_run_through_an_executor_scores_and_records_the_same(pair):
    out = {}
    for name, ex in (("local", None), ("remote", PickledExecutor())):
        ctx = make_ctx(pair / name, ex)
        n0 = ctx.con.execute("SELECT max(seq) FROM ledger").fetchone()[0]
        res = run_eval(ctx, pair / "golden.yaml", pair / f"reports-{name}", judge=False, progress=False)
        led = [r for r in ledger_rows(ctx.con)][n0:]
        out[name] = (res, led, log_rows(ctx.con))
        ctx.close()
    (ra, la, ga), (rb, lb, gb) = out["local"], out["remote"]
    n = ra.summary["n"]
    assert n >= 22 and strip(ra.summary["metrics"], {}) == strip(rb.summary["metrics"], {})
    assert strip(ra.items, {}) == strip(rb.items, {})
    assert len(la) >= 2 * n and la == lb             # every item's request ... answer rows, in item order
    assert len(ga) == n and ga == gb


def test_workers_refuse_another_database(pair, tmp_path):
    from keel.evals.run import EvalItemTask
    from keel.evals.robustness import ProbeTask
    from keel.evals.retrieval_bench import RetrievalTask
    from keel.factory import WorkerBuilder
    from keel.errors import ConfigError
    ctx = make_ctx(pair / "local")
    other = WorkerBuilder(ctx.settings, fingerprint="not-the-head")
    for task in (EvalItemTask(other, judge=False), ProbeTask(other), RetrievalTask(other)):
        with pytest.raises(ConfigError, match="differs from the head"): task.setup()
    ctx.close()


def test_retrieval_benchmark_through_an_executor_ranks_the_same(pair, tmp_path):
    from keel.evals.retrieval import cli
    for name, ex in (("local", None), ("remote", PickledExecutor())):
        code = cli([str(FIXTURE), "--json", str(tmp_path / f"{name}.json")], lambda: make_ctx(pair / "local", ex))
        assert code in (0, 1)
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("local", "remote"))
    assert a["systems"] and strip(a, {}) == strip(b, {})


def test_robustness_probes_through_an_executor_score_the_same(pair):
    from keel.evals.robustness import run_robustness
    out = {}
    for name, ex in (("local", None), ("remote", PickledExecutor())):
        ctx = make_ctx(pair / "local", ex)
        n0 = ctx.con.execute("SELECT max(seq) FROM ledger").fetchone()[0]
        res = run_robustness(ctx, pair / "golden.yaml", None, limit=2, progress=False)
        assert ctx.con.execute("SELECT max(seq) FROM ledger").fetchone()[0] == n0   # probes never write the deployment's ledger
        out[name] = res
        ctx.close()
    a, b = out["local"], out["remote"]
    assert len(a.rows) > 4 and strip(a.rows, {}) == strip(b.rows, {})
    assert strip(a.table, {}) == strip(b.table, {}) and [g.passed for g in a.gates] == [g.passed for g in b.gates]


# ---------------------------------------------------------------- a real Ray cluster

def ray_job(mode, tmp_path, timeout):
    "Run tests/ray_job.py in a child process; its findings, or a skip when this machine cannot start Ray in time."
    import subprocess, sys
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'keel[ray]')")
    cmd = [sys.executable, str(Path(__file__).parent / "ray_job.py"), mode, str(tmp_path)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try: out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9); out, err = p.communicate()
        if "started" in out: pytest.fail(f"the Ray job started but did not finish in {timeout} s:\n{err[-2000:]}")
        pytest.skip(f"Ray could not start a local cluster within {timeout} s on this machine (is it overloaded?)")
    if "started" not in out and "timed out during startup" in err:
        pytest.skip("Ray could not start a local cluster in time on this machine (its raylet timed out during startup)")
    assert p.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_ray_executor_retries_a_dead_worker_and_embeds_like_in_process(tmp_path):
    r = ray_job("small", tmp_path, timeout=240)
    assert r["doubled"] == [2, 4, 6] and r["died"]          # the worker died on item 2, once; the item was retried
    assert r["max_vector_diff"] < 1e-5


@pytest.mark.slow
def test_ray_whole_fixture_corpus_and_golden_set_match_in_process(tmp_path):
    r = ray_job("corpus", tmp_path, timeout=1200)
    assert r["chunks"] > 10 and r["same_ids"] and r["max_vector_diff"] < 1e-5
    assert r["items"] >= 22 and r["same_items"]
    assert r["ledger_rows"] > r["items"] and r["same_ledger"]
