"""Scale-out overhead: the Ray path against in process, measured in one run on this machine.

    .venv/bin/python bench/bench_scaleout.py [--texts 96] [--batch 32] [--json out.json]

Not a test: nothing is asserted. Measures (1) embedding `--texts` SciFact chunks of ~800 characters (the fixture
corpus's chunks when SciFact is absent) in batches, (2) ingesting the fixture corpus, (3) the golden set in extractive
mode without the judge; each in process and through a private one-CPU Ray cluster with one worker. Ray start-up,
actor set-up (the model loading in the worker) and the steady state are reported apart, with the head-side write and
replay times the projection to N workers needs. Timings on a shared machine are noisy.
"""
import argparse, json, sys, tempfile, time
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
MANIFEST, GOLDEN = ROOT / "golden" / "corpus" / "manifest.yaml", ROOT / "golden" / "golden.yaml"


def texts_for(n, con):
    "n SciFact chunks when the shared data is there, else the fixture corpus's chunk texts, repeated."
    try:
        from bench_providers import chunks_800, CORPUS
        if CORPUS.exists(): return chunks_800(n), "SciFact abstracts"
    except ImportError: pass
    t = [r[0] for r in con.execute("SELECT text FROM chunks ORDER BY id")]
    return (t * (n // len(t) + 1))[:n], "fixture corpus chunks"


def timed(f):
    t = time.perf_counter(); v = f(); return v, time.perf_counter() - t


def side(name, ctx, texts, batch, d):
    "Embedding, ingest and golden-set timings through `ctx`'s executor."
    from keel.factory import WorkerBuilder
    from keel.ingest.pipeline import RemoteEmbeddings
    from keel.evals.run import run_eval
    remote = lambda: RemoteEmbeddings(ctx.executor, WorkerBuilder(ctx.settings), ctx.embeddings, batch)  # as ingest's
    emb = remote() if ctx.executor.remote else ctx.embeddings
    _, first = timed(lambda: emb.embed(texts[:4]))          # in process: the model loads; on Ray: the actor and its model
    if not ctx.executor.remote: emb = remote()
    _, embed_s = timed(lambda: emb.embed(texts))
    res, ingest_s = timed(lambda: ctx.ingestor.ingest_manifest(MANIFEST, progress=False))
    chunks, embed_in_ingest = sum(r.chunks for r in res), sum(r.embed_seconds for r in res)
    runs = [timed(lambda: run_eval(ctx, GOLDEN, d / f"reports-{name}", judge=False, baseline_path=d / "none.json", progress=False))
            for _ in range(2)]
    return dict(first_call_s=first, embed_s=embed_s, texts=len(texts), ingest_s=ingest_s, chunks=chunks,
                ingest_embed_s=embed_in_ingest, eval_first_s=runs[0][1], eval_s=runs[1][1], items=runs[1][0].summary["n"])


def ray_side(a, d, texts):
    "The Ray figures, measured in this (child) process."
    from keel.executor import RayExecutor
    import keel.evals.run as run          # the golden run replays its workers' writes through run.replay
    replay_s = [0.0]
    def timed_replay(events, ledger, log, _r=run.replay):
        t = time.perf_counter(); _r(events, ledger, log); replay_s[0] += time.perf_counter() - t
    run.replay = timed_replay
    ex = RayExecutor("local", workers=1, num_cpus=1)
    try:
        _, start_s = timed(ex._ray); print(f"ray started in {start_s:.1f} s", flush=True)
        rc = ctx_at(d / "ray"); rc.__dict__["_executor"] = ex
        out = side("ray", rc, texts, a.batch, d); out.update(start_s=start_s, replay_s=replay_s[0] / 2); rc.close()
    finally: ex.close()
    return out


def ctx_at(path):
    from keel.config import load_settings
    from keel.factory import build_context
    return build_context(load_settings(env={}, dotenv=None, data_dir=path, answer_mode="extractive"))


def in_child(a, d, texts, attempts=3, timeout=300):
    "Run the Ray side in a child process (a Ray start-up that hangs is killed), up to `attempts` times."
    import os, subprocess
    (d / "texts.json").write_text(json.dumps(texts))
    for n in range(1, attempts + 1):
        cmd = [sys.executable, __file__, "--ray-side", str(d), "--batch", str(a.batch)]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try: out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired: os.killpg(p.pid, 9); out, err = p.communicate(); err += f" (killed after {timeout} s)"
        if p.returncode == 0: return json.loads(out.strip().splitlines()[-1]), n
        print(f"Ray attempt {n} failed: {(err.strip().splitlines() or ['?'])[-1][:200]}", flush=True)
    return None, attempts


def main(a):
    if a.ray_side:
        d = Path(a.ray_side); print(json.dumps(ray_side(a, d, json.loads((d / "texts.json").read_text())))); return
    d = Path(tempfile.mkdtemp(prefix="keel-scaleout-"))
    probe = ctx_at(d / "probe"); probe.ingestor.ingest_manifest(MANIFEST, progress=False)
    texts, src = texts_for(a.texts, probe.con); probe.close()
    local = ctx_at(d / "local"); out = {"local": side("local", local, texts, a.batch, d), "texts_from": src}; local.close()
    print(f"in process: {json.dumps(out['local'])}", flush=True)
    out["ray"], out["ray_attempts"] = in_child(a, d, texts, attempts=a.ray_attempts)
    if out["ray"]: report(out)
    else: print("Ray could not start a local cluster on this machine; no Ray figures")
    if a.json: Path(a.json).write_text(json.dumps(out, indent=1))


def report(o):
    L, R = o["local"], o["ray"]
    rows = [("embed texts/s", L["texts"] / L["embed_s"], R["texts"] / R["embed_s"]),
            ("ingest chunks/s (fixture corpus)", L["chunks"] / L["ingest_s"], R["chunks"] / R["ingest_s"]),
            ("golden items/s (extractive, warm)", L["items"] / L["eval_s"], R["items"] / R["eval_s"]),
            ("first call s (model / actor set-up)", L["first_call_s"], R["first_call_s"]),
            ("golden first run s (incl. set-up)", L["eval_first_s"], R["eval_first_s"])]
    print(f"embedding texts: {o['texts_from']}; Ray start-up {R['start_s']:.1f} s; head replay {R['replay_s']:.2f} s per golden run")
    print(f"{'':38}{'in process':>12}{'Ray, 1 worker':>15}{'Ray / in process':>18}")
    for k, a, b in rows: print(f"{k:38}{a:12.2f}{b:15.2f}{b / a:18.2f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--texts", type=int, default=96); p.add_argument("--batch", type=int, default=32)
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--ray-attempts", type=int, default=3, help="tries at starting the Ray side (each bounded to 300 s)")
    p.add_argument("--ray-side", help=argparse.SUPPRESS)
    main(p.parse_args())
