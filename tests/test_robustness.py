"""`keel eval robustness` as a user runs it: a fresh data directory with the fixture corpus, the bundled
golden set, extractive answers (no language model), the real embeddings, SQLite and FAISS."""
import json
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT/"golden"/"golden.yaml"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("robust")/"data"


def env(data_dir): return {"KEEL_DATA_DIR": str(data_dir), "KEEL_ANSWER_MODE": "extractive"}


def test_robustness_run_gates_and_reports(keel_cmd, data_dir, tmp_path):
    r = keel_cmd("ingest", ROOT/"golden"/"corpus"/"manifest.yaml", env=env(data_dir))
    assert r.returncode == 0, r.stderr
    ledger_before = keel_cmd("verify-ledger", env=env(data_dir)).stdout
    r = keel_cmd("eval", "robustness", GOLDEN, "--perturbations", "permission_swap,passage_order,counterfactual",
                 "--limit", "6", "--seed", "3", "--report-dir", tmp_path, "--quiet", env=env(data_dir))
    assert r.returncode in (0, 1), r.stderr
    assert "gate permission_swap.leaks: 0" in r.stdout                 # leaks tolerate nothing, and there are none
    report = json.loads((tmp_path/"latest-robustness.json").read_text())
    assert report["n_items"] == 6 and report["seed"] == 3
    assert {t["perturbation"] for t in report["table"]} == {"permission_swap", "passage_order", "counterfactual"}
    assert r.returncode == (0 if report["gate"]["passed"] else 1)
    assert (tmp_path/"latest-robustness.html").read_text().count("<table>") >= 3
    # what the run cost: non-negative figures that add up over the probe rows, printed and on the page
    cost, rows = report["summary"]["cost"], report["rows"]
    assert set(cost) == {"prompt_tokens", "output_tokens", "model_seconds", "judge_seconds", "item_seconds",
                         "seconds_per_item"} and all(v >= 0 for v in cost.values()), cost
    assert cost["prompt_tokens"] == sum(r["prompt_tokens"] for r in rows)
    assert cost["output_tokens"] == sum(r["output_tokens"] for r in rows)
    assert cost["model_seconds"] == round(sum(r["model_ms"] for r in rows) / 1000, 3)
    assert cost["item_seconds"] == round(sum(r["item_ms"] for r in rows) / 1000, 3) >= cost["model_seconds"]
    assert cost["seconds_per_item"] == round(cost["item_seconds"] / len(rows), 3) and cost["judge_seconds"] == 0
    assert (cost["prompt_tokens"], cost["output_tokens"]) == (0, 0)        # extractive answers call no model
    line = next(l for l in r.stdout.splitlines() if l.startswith("cost: "))
    assert line.startswith("cost: 0 prompt + 0 output tokens") and line in (tmp_path/"latest-robustness.html").read_text()
    # the run asked through a scratch ledger: the deployment's ledger is exactly as it was
    assert keel_cmd("verify-ledger", env=env(data_dir)).stdout == ledger_before


@pytest.mark.slow
def test_robustness_with_the_packaged_model_counts_its_tokens(keel_cmd, data_dir, tmp_path):
    "Generative answers from the packaged model: the report's cost is the sum of its probes' tokens and model time."
    keel_cmd("ingest", ROOT/"golden"/"corpus"/"manifest.yaml", env=env(data_dir))        # a no-op when ingested
    r = keel_cmd("eval", "robustness", GOLDEN, "--perturbations", "passage_order", "--limit", "1",
                 "--report-dir", tmp_path, "--quiet", env={**env(data_dir), "KEEL_ANSWER_MODE": "generative"})
    assert r.returncode in (0, 1), r.stderr
    report = json.loads((tmp_path/"latest-robustness.json").read_text())
    cost, rows = report["summary"]["cost"], report["rows"]
    print("robustness cost:", cost)
    assert len(rows) == 2 and cost["prompt_tokens"] == sum(r["prompt_tokens"] for r in rows) > 0
    assert cost["output_tokens"] == sum(r["output_tokens"] for r in rows) > 0
    assert 0 < cost["model_seconds"] == round(sum(r["model_ms"] for r in rows) / 1000, 3) <= cost["item_seconds"]
    assert any(l.startswith(f"cost: {cost['prompt_tokens']} prompt + ") for l in r.stdout.splitlines())


def test_robustness_same_seed_same_perturbations(keel_cmd, data_dir, tmp_path):
    runs = []
    for d in ("a", "b"):
        r = keel_cmd("eval", "robustness", GOLDEN, "--perturbations", "reworded,noise", "--limit", "3", "--seed", "11",
                     "--report-dir", tmp_path/d, "--quiet", env=env(data_dir))
        assert r.returncode in (0, 1), r.stderr
        rows = json.loads((tmp_path/d/"latest-robustness.json").read_text())["rows"]
        runs.append([(x["id"], x["perturbation"], x["param"], x["question"], x["answer"]) for x in rows])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("args, needle", [
    (["--perturbations", "tornado"], "unknown perturbation 'tornado'"),
    (["--limit", "0"], "--limit 0"),
])
def test_robustness_bad_input_exits_2(keel_cmd, data_dir, args, needle):
    r = keel_cmd("eval", "robustness", GOLDEN, *args, env=env(data_dir))
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr


def test_robustness_missing_golden_set(keel_cmd, data_dir, tmp_path):
    r = keel_cmd("eval", "robustness", tmp_path/"nope.yaml", env=env(data_dir))
    assert r.returncode == 2 and "nope.yaml" in r.stderr and "Traceback" not in r.stderr
