"""The run, agent and robustness reports match their JSON schemas in schemas/.

Real reports, made as the end-to-end tests make them: the bundled golden set through the real answer engine over the
fixture corpus (extractive mode, no model), a healthy run promoted to baseline and a run with a broken retriever gated
against it; agent tasks from the bundled task file with the model's replies scripted (the only stand-in), a second
run gated against the first; a robustness run with every perturbation. The committed baselines are reports too and
must match. Each schema is also shown to reject what it should: a report of another kind, a field it requires
removed, a value of the wrong type, a robustness report from before the shared report head.
"""
import copy, json, shutil
from pathlib import Path
import pytest
import jsonschema
from keel.config import load_settings
from keel.factory import build_context
from keel.testing import ScriptedLLM
from keel.evals.run import run_eval, promote_baseline
from keel.evals.agent import run_agent_eval
from keel.evals.robustness import run_robustness, PERTURBATIONS

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden"
TASKS = GOLDEN / "agent" / "tasks.yaml"


def schema(name):
    return json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())


def problems(obj, name) -> list[str]:
    "Every way `obj` breaks schemas/<name>.schema.json (empty when it matches)."
    v = jsonschema.Draft202012Validator(schema(name), format_checker=jsonschema.FormatChecker())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(obj)]


def test_schemas_are_valid_draft_2020_12():
    for name in ("run-report", "agent-report", "robustness-report"):
        jsonschema.Draft202012Validator.check_schema(schema(name))
        assert schema(name)["properties"]["kind"] == {"const": f"keel-eval-{name.removesuffix('-report')}"}


class NothingRetriever:
    "A broken retriever: finds nothing for any question."
    def retrieve(self, *args, **kwargs): return []


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    "{name: the parsed JSON report} of each run below, read back from the files the harnesses wrote."
    root = tmp_path_factory.mktemp("schemas")
    for f in ("golden.yaml", "judge_labels.yaml", "rubric_labels.yaml"): shutil.copy(GOLDEN / f, root / f)
    settings = load_settings(env={}, dotenv=None, data_dir=root / "data", answer_mode="extractive")
    ctx = build_context(settings)
    ctx.ingestor.ingest_manifest(GOLDEN / "corpus" / "manifest.yaml", progress=False)
    out = {}
    healthy = run_eval(ctx, root / "golden.yaml", root / "run", judge=False, progress=False)
    promote_baseline(healthy, root / "baseline.json")
    out["run"] = json.loads(healthy.report_json_path.read_text())
    broken = build_context(settings)
    broken.__dict__["_retriever"] = NothingRetriever()
    res = run_eval(broken, root / "golden.yaml", root / "broken", judge=False, progress=False,
                   baseline_path=root / "baseline.json")
    out["run-broken"] = json.loads(res.report_json_path.read_text())
    broken.close()
    rob = run_robustness(ctx, root / "golden.yaml", root / "robustness", perturbations=PERTURBATIONS, limit=3, seed=1,
                         progress=False)
    out["robustness"] = json.loads((root / "robustness" / "latest-robustness.json").read_text())
    assert rob.payload["stamp"] == out["robustness"]["stamp"]
    call = lambda tool, **a: json.dumps({"tool": tool, "arguments": a})
    say = lambda text: json.dumps({"answer": text})
    ids = ["lookup-tender-days", "ticket-toner", "restricted-band3-public"]
    for name, script, baseline in (
            ("agent", [call("search_docs", query="tender advertised"), say("At least 21 days [1]."),
                       call("create_ticket", title="Toner for level 2"), say("I cannot say.")], None),
            ("agent-worse", [say("I do not know."), say("Done."), say("Band 3 pays $92,000.")], root / "agent.json")):
        ctx.__dict__["llm"] = ScriptedLLM(script)
        res = run_agent_eval(ctx, TASKS, root / name, ids=ids, progress=False, baseline_path=baseline)
        out[name] = json.loads(res.json_path.read_text())
        if baseline is None: shutil.copy(res.json_path, root / "agent.json")
    ctx.close()
    return out


def test_run_reports_match_the_schema(reports):
    healthy, broken = reports["run"], reports["run-broken"]
    assert problems(healthy, "run-report") == []
    assert problems(broken, "run-report") == []
    assert broken["gate"]["regressions"] and not broken["gate"]["passed"]     # the regression rows were checked too
    assert healthy["gate"]["floors"] and "cost" in healthy["summary"]          # so were the floors and the cost


def test_agent_reports_match_the_schema(reports):
    first, worse = reports["agent"], reports["agent-worse"]
    assert problems(first, "agent-report") == []
    assert problems(worse, "agent-report") == []
    assert worse["baseline"]["found"] and worse["gate"]["regressions"]         # gated against the first run
    assert any(r["approval_requested"] for r in first["items"]) and all("item_ms" in r for r in first["items"])


def test_robustness_report_matches_the_schema(reports):
    rob = reports["robustness"]
    assert problems(rob, "robustness-report") == []
    assert {r["perturbation"] for r in rob["rows"]} == {"clean", *PERTURBATIONS}
    assert rob["gate"]["checks"] and rob["table"] and "cost" in rob["summary"]


def test_committed_baselines_match_the_schemas():
    assert problems(json.loads((GOLDEN / "baseline.json").read_text()), "run-report") == []
    assert problems(json.loads((GOLDEN / "agent" / "baseline.json").read_text()), "agent-report") == []


def without(report, *path):
    "A deep copy of `report` with the field at `path` removed."
    r = copy.deepcopy(report); d = r
    for k in path[:-1]: d = d[k]
    del d[path[-1]]
    return r


def test_schemas_reject_what_they_should(reports):
    run, agent, rob = reports["run"], reports["agent"], reports["robustness"]
    assert any("keel-eval-run" in p for p in problems(agent, "run-report"))   # another kind
    assert any("keel-eval-agent" in p for p in problems(rob, "agent-report"))
    for report, name, path in ((run, "run-report", ("summary", "metrics")),
                               (run, "run-report", ("items", 0, "refused")), (run, "run-report", ("gate", "passed")),
                               (agent, "agent-report", ("items", 0, "success")), (agent, "agent-report", ("stamp",)),
                               (rob, "robustness-report", ("rows", 0, "leaks")),
                               (rob, "robustness-report", ("summary",))):
        assert problems(without(report, *path), name), (name, path)
    for report, name in ((agent, "agent-report"), (rob, "robustness-report")):    # the cost is optional there
        assert problems(without(report, "summary", "cost"), name) == []
    bad = copy.deepcopy(agent); bad["summary"]["cost"]["prompt_tokens"] = -1
    assert problems(bad, "agent-report")
    bad = copy.deepcopy(run); bad["items"][0]["kind"] = "maybe"
    assert problems(bad, "run-report")
    bad = copy.deepcopy(rob); bad["gate"]["checks"][0]["direction"] = "max"
    assert problems(bad, "robustness-report")
    old = json.loads((GOLDEN / "robustness" / "generative-seed0.json").read_text())    # before the shared head
    assert any("schema_version" in p for p in problems(old, "robustness-report"))
