"""`keel eval compare` as a user runs it: the fixture corpus in a fresh data directory, golden runs in extractive mode
(no language model; the real embeddings, SQLite and FAISS), then the installed `keel` command on their reports and on
copies edited as a person might edit them. The statistics are checked against statsmodels' exact McNemar test and a
paired bootstrap re-computed here with numpy."""
import json, tempfile, os, shutil, subprocess, sys
from pathlib import Path
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN, MANIFEST = ROOT/"golden"/"golden.yaml", ROOT/"golden"/"corpus"/"manifest.yaml"
sm = pytest.importorskip("statsmodels.stats.contingency_tables", reason="statsmodels is a development dependency")


def keel(*args, env=None):
    exe = shutil.which("keel", path=str(Path(sys.executable).parent)) or "keel"
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=600, cwd=ROOT)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    "Three golden runs over the fixture corpus: twice with the default settings, once keeping one passage."
    d = tmp_path_factory.mktemp("compare")
    env = {"KEEL_DATA_DIR": str(d/"data"), "KEEL_ANSWER_MODE": "extractive"}
    assert keel("ingest", MANIFEST, env=env).returncode == 0
    out = {}
    for name, extra in (("a", {}), ("again", {}), ("top1", {"KEEL_TOP_K_FINAL": "1"})):
        r = keel("eval", "run", GOLDEN, "--no-judge", "--quiet", "--report-dir", d/name, "--baseline", d/"none.json",
                 env={**env, **extra})
        assert r.returncode in (0, 1), r.stderr
        out[name] = d/name/"latest.json"
    return out


def compare(*args):
    "Run `keel eval compare` with --json; (exit code, stdout, stderr, the JSON comparison or None)."
    js = Path(tempfile.mkdtemp(prefix="keel-compare-"))/"comparison.json"   # never beside a report in the repository
    r = keel("eval", "compare", *args, "--json", js)
    return r.returncode, r.stdout, r.stderr, json.loads(js.read_text()) if js.exists() else None


def edited(src:Path, dst:Path, change) -> Path:
    "A copy of a report with `change(report)` applied, as a person editing the file would."
    p = json.loads(src.read_text()); change(p)
    dst.write_text(json.dumps(p)); return dst


def write(path:Path, text:str) -> Path:
    path.write_text(text); return path


def passed(r):
    "A golden-run item's pass, recomputed here from its checks."
    checks = (r["refusal_correct"], r["must_include_pass"], r["must_not_include_pass"], r["citation_valid"])
    return all(c is None or bool(c) for c in checks) and not r["leaks"] and not r["error"]


def table(a:Path, b:Path, value):
    "The 2x2 table of a yes/no outcome over two reports' items matched by id: [[both, A only], [B only, neither]]."
    ra, rb = ({r["id"]: r for r in json.loads(p.read_text())["items"]} for p in (a, b))
    pairs = [(value(ra[k]), value(rb[k])) for k in ra if k in rb]
    pairs = [(bool(x), bool(y)) for x, y in pairs if x is not None and y is not None]
    return [[sum(x and y for x, y in pairs), sum(x and not y for x, y in pairs)],
            [sum(y and not x for x, y in pairs), sum(not x and not y for x, y in pairs)]], pairs


def test_two_runs_of_the_same_configuration_compare_as_no_difference(runs):
    code, out, err, c = compare(runs["a"], runs["again"])
    assert code == 0, err
    assert "overall: no difference: no item changed" in out and "items that flipped" not in out
    assert c["n"] == 46 and c["items"] == [] and c["worse"] == c["better"] == []
    assert all(f["a_only"] == f["b_only"] == 0 for f in c["flips"])
    assert all(m["diff"] == 0 and m["p"] == 1 for m in c["metrics"])
    same = next(line for line in out.splitlines() if line.startswith("  the same: "))
    assert {"answer_mode", "model", "settings_digest"} <= set(same[len("  the same: "):].split(", ")), out


def test_a_narrower_retriever_shows_its_flips_item_by_item(runs):
    code, out, err, c = compare(runs["a"], runs["top1"])
    assert code == 0, err                                  # not worse on any metric
    assert "settings_digest:" in out                      # the configuration differs in its settings
    for f in c["flips"]:                                   # every flip count is the reports' own, recomputed here
        if f["outcome"] == "pass":
            t, _ = table(runs["a"], runs["top1"], passed)
            assert (f["both"], f["a_only"], f["b_only"], f["neither"]) == (t[0][0], t[0][1], t[1][0], t[1][1])
    t, _ = table(runs["a"], runs["top1"], lambda r: r["must_include_pass"])
    m = {x["metric"]: x for x in c["metrics"]}
    assert (m["must_include"]["a_only"], m["must_include"]["b_only"]) == (t[0][1], t[1][0])
    assert m["must_include"]["p"] == pytest.approx(sm.mcnemar(t, exact=True).pvalue, abs=1e-12)
    assert m["context_precision"]["diff"] > 0 and "context_precision" in c["better"]   # one passage: on topic
    for it in c["items"]: assert it["item"] in out and it["question"] in out and it["retrieval"]


def test_a_large_deliberate_change_is_significant_and_exits_1(runs, tmp_path):
    a = json.loads(runs["a"].read_text())
    hit = [r["id"] for r in a["items"] if r["must_include_pass"] == 1.0][:15]
    def worse(p):
        for r in p["items"]:
            if r["id"] in hit: r.update(must_include_pass=0.0, answer="I could not find it.")
    b = edited(runs["a"], tmp_path/"worse.json", worse)
    code, out, err, c = compare(runs["a"], b, "--html", tmp_path/"c.html", "--markdown", tmp_path/"c.md",
                                "--report-dir", tmp_path/"reports")
    assert code == 1, (out, err)
    stamped = json.loads(next((tmp_path/"reports").glob("compare-*.json")).read_text())   # the harness's own files
    assert stamped["kind"] == "keel-eval-compare" and stamped["worse"] == c["worse"]
    assert (tmp_path/"reports"/"latest-compare.md").read_text() == (tmp_path/"c.md").read_text()
    assert set(c["worse"]) == {"pass", "must_include"} and "overall: B is worse than A on pass, must_include" in out
    t, pairs = table(runs["a"], b, lambda r: r["must_include_pass"])
    m = {x["metric"]: x for x in c["metrics"]}["must_include"]
    assert (m["a_only"], m["b_only"]) == (15, 0) == (t[0][1], t[1][0])
    assert m["p"] == pytest.approx(sm.mcnemar(t, exact=True).pvalue, abs=1e-12)
    assert m["p_holm"] <= 0.05 and m["p_holm"] >= m["p"]
    # the paired bootstrap, re-computed with numpy (another random stream: equal to within resampling noise)
    d = np.array([float(y) - float(x) for x, y in pairs])
    means = d[np.random.default_rng(0).integers(0, len(d), size=(20000, len(d)))].mean(axis=1)
    assert m["ci_low"] == pytest.approx(np.quantile(means, 0.025), abs=0.03)
    assert m["ci_high"] == pytest.approx(np.quantile(means, 0.975), abs=0.03)
    assert m["diff"] == pytest.approx(d.mean()) and m["mde"] is not None and 0 < m["mde"] <= m["discordance"]
    assert {it["item"] for it in c["items"]} == set(hit) and out.count("B: I could not find it.") == 15
    page = (tmp_path/"c.html").read_text()
    assert page.startswith("<!doctype html>") and page.count("<h3>") == 15 and "<script" not in page
    assert "| must_include |" in (tmp_path/"c.md").read_text()
    code, out, err, c = compare(runs["a"], b, "--metric", "hit_at_3,citation_valid")      # not what changed
    assert code == 0 and [x["metric"] for x in c["metrics"]] == ["hit_at_3", "citation_valid"] and c["worse"] == []


def test_ties_and_one_item_sets_against_statsmodels(runs, tmp_path):
    a = json.loads(runs["a"].read_text())
    passing = [r["id"] for r in a["items"] if r["must_include_pass"] == 1.0]
    assert len(passing) >= 4
    lose, gain = passing[:2], passing[2:4]                  # two items lose must_include, two others gain it
    base = edited(runs["a"], tmp_path/"base.json",
                  lambda p: [r.update(must_include_pass=0.0) for r in p["items"] if r["id"] in gain])
    def tie(p):
        for r in p["items"]:
            if r["id"] in lose: r["must_include_pass"] = 0.0
            elif r["id"] in gain: r["must_include_pass"] = 1.0
    b = edited(base, tmp_path/"tie.json", tie)
    code, out, err, c = compare(base, b, "--metric", "must_include")
    t, _ = table(base, b, lambda r: r["must_include_pass"])
    m = c["metrics"][0]
    assert code == 0 and m["p"] == pytest.approx(sm.mcnemar(t, exact=True).pvalue, abs=1e-12) == 1.0
    assert m["a_only"] == m["b_only"] == len(gain) == t[0][1] == t[1][0] and m["diff"] == 0
    one_a = edited(runs["a"], tmp_path/"one-a.json", lambda p: p.update(items=p["items"][:1]))
    one_b = edited(runs["a"], tmp_path/"one-b.json", lambda p: p.update(items=[dict(p["items"][0], refused=True,
                                                                                  refusal_correct=0.0)]))
    code, out, err, c = compare(one_a, one_b, "--metric", "refused,refusal_correct")
    assert code == 0, err
    for m in c["metrics"]:
        assert (m["n"], abs(m["diff"]), m["p"], m["ci_low"], m["ci_high"]) == (1, 1.0, 1.0, m["diff"], m["diff"])
        assert m["p"] == sm.mcnemar([[0, m["a_only"]], [m["b_only"], 0]], exact=True).pvalue and m["mde"] is None


def test_agent_and_robustness_reports_compare_by_their_own_items(tmp_path):
    agent = ROOT/"golden"/"agent"/"baseline.json"
    code, out, err, c = compare(agent, agent)
    assert code == 0 and c["compared"] == "keel-eval-agent" and "overall: no difference" in out
    fail = edited(agent, tmp_path/"agent.json", lambda p: [r.update(success=False) for r in p["items"]])
    code, out, err, c = compare(agent, fail)
    won = sum(r["success"] for r in json.loads(agent.read_text())["items"])
    assert {x["metric"]: x for x in c["metrics"]}["success"]["a_only"] == won and len(c["items"]) == won
    rob = ROOT/"golden"/"robustness"/"generative-seed0.json"
    flip = edited(rob, tmp_path/"rob.json",
                  lambda p: [r.update(accuracy=1.0 - r["accuracy"]) for r in p["rows"] if r["perturbation"] == "noise"
                             and r["accuracy"] is not None])
    code, out, err, c = compare(rob, flip, "--metric", "accuracy")
    assert code in (0, 1) and c["compared"] == "keel-eval-robustness" and c["kind"] == "keel-eval-compare"
    f = c["flips"][0]
    assert {g["value"] for g in f["groups"] if g["a_only"] or g["b_only"]} == {"noise"}
    assert all(it["item"].split("/")[1] == "noise" for it in c["items"])


def test_different_golden_sets_match_by_id_when_allowed(runs, tmp_path):
    def other(p):
        p["golden_digest"] = "0" * 64
        p["items"] = p["items"][1:] + [dict(p["items"][0], id="new-item")]
    b = edited(runs["a"], tmp_path/"other.json", other)
    code, out, err, c = compare(runs["a"], b)
    assert code == 2 and "different golden sets" in err and "--allow-different-golden" in err
    first = json.loads(runs["a"].read_text())["items"][0]["id"]
    code, out, err, c = compare(runs["a"], b, "--allow-different-golden")
    assert code == 0, err
    assert (c["n"], c["only_a"], c["only_b"]) == (45, [first], ["new-item"])
    assert f"only in A: {first}; only in B: new-item" in out


@pytest.mark.parametrize("make, needle", [
    (lambda a, d: write(d/"cut.json", a.read_text()[:2000]), "is not valid JSON"),
    (lambda a, d: edited(a, d/"edited.json", lambda p: p["items"][3].update(hit_at_3="yes")),
     "hit_at_3 is 'yes', not a number or null"),
    (lambda a, d: edited(a, d/"dup.json", lambda p: p["items"].append(p["items"][0])), "appears twice"),
    (lambda a, d: ROOT/"golden"/"agent"/"baseline.json", "A is a `keel eval run` report and B a `keel eval agent`"),
    (lambda a, d: edited(a, d/"digest.json", lambda p: p.update(golden_digest="1" * 64)), "different golden sets"),
    (lambda a, d: write(d/"list.json", "[1, 2]"),
     "is not a keel-eval-run or keel-eval-agent or keel-eval-robustness or keel-eval-conversations report"),
    (lambda a, d: d/"missing.json", "cannot read report B"),
])
def test_bad_input_is_one_line_and_exit_2(runs, tmp_path, make, needle):
    r = keel("eval", "compare", runs["a"], make(runs["a"], tmp_path))
    assert r.returncode == 2 and needle in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("keel: error: ") and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, needle", [(["--metric", "speed"], "unknown metric 'speed'"),
                                          (["--alpha", "0"], "--alpha 0.0 is not between 0 and 1")])
def test_bad_options_exit_2(runs, args, needle):
    r = keel("eval", "compare", runs["a"], runs["again"], *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr


def test_help_documents_the_exit_codes():
    r = keel("eval", "compare", "--help")
    assert r.returncode == 0 and "1 B is significantly worse than A" in " ".join(r.stdout.split())
