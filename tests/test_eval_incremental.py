"""`keel eval run --since` and the model-call cache, end to end over the fixture corpus.

A five-step series in extractive mode, each step a corpus state of `bench/incremental_series.py` (the fixture corpus,
then edits, additions, re-tags, a removal and an addition back): at every step the run since the previous one gives
the full run's gate verdict and every item's row, while asking fewer items. The command line takes `--since` and
`--no-cache`, and `keel cache` reports what the cache holds. The `slow` test runs the packaged model through the cache:
a repeated run is served entirely from it and scores the same. The bench script runs the whole series, and the
generative one.
"""
import importlib.util, json, shutil
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN, MANIFEST = ROOT/"golden"/"golden.yaml", ROOT/"golden"/"corpus"/"manifest.yaml"


def bench():
    "bench/incremental_series.py as a module."
    spec = importlib.util.spec_from_file_location("incremental_series", ROOT/"bench"/"incremental_series.py")
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


def test_five_steps_since_equals_full_extractive(tmp_path):
    b = bench()
    start = b.git_states()[-1]
    later = dict(b.scripted(start[1]))
    names = ["edit supplier note (deliveries)", "re-tag supplier note (public, finance)", "remove supplier note",
             "add the supplier note back"]
    s, rows = b.Series(tmp_path, "extractive", None, False), []
    for name, state in [start] + [(n, later[n]) for n in names]:
        r = s.step(name, state)
        rows.append(r); print(r["step"], r["rerun"], r["reasons"], r["inc_s"], r["full_s"])
        assert r["verdict_equal"] and r["rows_equal"], (name, r["differing"])
    assert rows[0]["rerun"] == rows[0]["items"] == 46
    assert all(0 < r["rerun"] < r["items"] for r in rows[1:]), [r["rerun"] for r in rows]
    assert rows[1]["reasons"].get("document") and "settings" not in rows[1]["reasons"]
    assert sum(r["documents"]["removed"] for r in rows) >= 1 and sum(r["documents"]["added"] for r in rows) >= 6


def test_since_and_cache_on_the_command_line(keel_cmd, tmp_path):
    data, reports, env = tmp_path/"data", tmp_path/"reports", {"KEEL_ANSWER_MODE": "extractive"}
    assert keel_cmd("--data-dir", data, "ingest", MANIFEST, env=env).returncode == 0
    first = keel_cmd("--data-dir", data, "eval", "run", GOLDEN, "--no-judge", "--quiet", "--report-dir", reports,
                     "--baseline", tmp_path/"none.json", env=env)
    assert first.returncode == 0, first.stderr
    again = keel_cmd("--data-dir", data, "eval", "run", GOLDEN, "--no-judge", "--quiet", "--report-dir", reports,
                     "--baseline", tmp_path/"none.json", "--since", reports/"latest.json", "--no-cache", env=env)
    assert again.returncode == 0, again.stderr
    assert "asked 0 of 46 items again (nothing changed); 46 carried over" in again.stdout, again.stdout
    rep = json.loads((reports/"latest.json").read_text())
    assert rep["since"]["carried"] == 46 and all(r["carried_from"] for r in rep["items"])
    assert rep["cache"] == {"on": False}
    bad = keel_cmd("--data-dir", data, "eval", "run", GOLDEN, "--no-judge", "--since", tmp_path/"missing.json", env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("keel: error: cannot read the --since report"), bad.stderr
    (data/"llm-cache.db").write_bytes(b"not a database" * 100)
    st = keel_cmd("--data-dir", data, "cache", "stats", env=env)
    assert st.returncode == 0 and "entries: 0" in st.stdout and "set aside" in st.stdout, st.stdout + st.stderr
    assert (data/"llm-cache.db.damaged").exists()
    assert keel_cmd("--data-dir", data, "cache", "clear", env=env).returncode == 0


@pytest.mark.slow
def test_generative_repeat_is_served_from_the_cache(tmp_path):
    "The packaged model and its judge: the second run makes no model call and scores every item the same."
    from keel.config import load_settings
    from keel.factory import build_context
    from keel.evals.run import run_eval
    import yaml
    g = yaml.safe_load(GOLDEN.read_text())
    g["items"], _ = [i for i in g["items"] if i["id"] in ("proc-quotes-mid", "ops-ledger-exit", "offcorpus-leave")], \
        g.pop("rubrics", None)
    (tmp_path/"golden.yaml").write_text(yaml.safe_dump(g, sort_keys=False))
    s = load_settings(env={}, dotenv=None, data_dir=tmp_path/"data", answer_mode="generative")
    with build_context(s) as ctx: ctx.ingestor.ingest_manifest(MANIFEST, progress=False)
    runs = []
    for _ in range(2):
        with build_context(s) as ctx:
            runs.append(run_eval(ctx, tmp_path/"golden.yaml", tmp_path/"reports", progress=False,
                                 labels_path=tmp_path/"no-labels.yaml"))
    cold, warm = (r.payload["cache"] for r in runs)
    assert cold["misses"] >= 4 and warm["misses"] == 0 and warm["hits"] == cold["misses"] + cold["hits"], (cold, warm)
    timed = ("latency_ms", "model_ms", "judge_ms", "item_ms")   # wall-clock figures differ between any two runs
    strip = lambda rows: [{k: v for k, v in r.items() if k not in timed + ("request_id", "cached", "cache_hits",
                                                                            "model_calls")} for r in rows]
    assert strip(runs[0].items) == strip(runs[1].items)
    assert all(r["cached"] for r in runs[1].items if r["model_calls"])
