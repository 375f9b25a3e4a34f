"""`pytest --keel-golden`: the bundled golden set as named tests, checked against `keel eval run` on the same data.

A fresh data directory gets the fixture corpus; the golden set (with its rubrics) and the example test file are
copied beside it; pytest runs in a subprocess in that folder, as a user would, in extractive mode with the judge off
(`--keel-no-judge`, as `keel eval run --no-judge`: rubrics are then unscored and never fail a test). The tests check
one test per item, the same passes and failures as `keel eval run` item by item, `-k`, `-x`, `--lf`, `-n 2`
(pytest-xdist), the message of a deliberately broken item, that a leak fails whatever else passed, and the example
file of hand-written tests.
"""
import json, os, re, shutil, subprocess, sys, time
import xml.etree.ElementTree as ET
from pathlib import Path
import pytest
from keel.config import load_settings
from keel.factory import build_context
from keel.evals.golden import load_golden
from keel.evals.verdict import item_failures

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden" / "golden.yaml"
MANIFEST = ROOT / "golden" / "corpus" / "manifest.yaml"
EXAMPLE = ROOT / "examples" / "tests" / "test_golden.py"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    "A folder with a data directory holding the fixture corpus, and a copy of the golden set and its rubric labels."
    root = tmp_path_factory.mktemp("plugin")
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=root / "data", answer_mode="extractive"))
    ctx.ingestor.ingest_manifest(MANIFEST, progress=False)
    ctx.close()
    for f in ("golden.yaml", "rubric_labels.yaml"): shutil.copy(GOLDEN.parent / f, root / f)
    return root


def run_pytest(cwd:Path, *args, golden="golden.yaml"):
    "pytest with the Keel plugin in `cwd`, extractive, judge off; (CompletedProcess, {test id: outcome}, seconds)."
    junit = cwd / f"junit-{time.monotonic_ns()}.xml"
    env = {**os.environ, "KEEL_ANSWER_MODE": "extractive", "KEEL_DATA_DIR": str(cwd / "data")}
    cmd = [sys.executable, "-m", "pytest", "--keel-golden", golden, "--keel-no-judge", "-q", f"--junitxml={junit}",
           *map(str, args)]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    out = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            bad = case.find("failure") is not None or case.find("error") is not None
            out[case.get("name")] = "skipped" if case.find("skipped") is not None else "failed" if bad else "passed"
    return r, out, wall


@pytest.fixture(scope="module")
def full(site):
    "The whole golden set through pytest once (its cache then holds the failures for `--lf`)."
    return run_pytest(site)


def eval_run(cwd:Path):
    "`keel eval run --no-judge` on the same data: (CompletedProcess, report payload, seconds)."
    exe = shutil.which("keel", path=str(Path(sys.executable).parent)) or "keel"
    env = {**os.environ, "KEEL_ANSWER_MODE": "extractive"}
    t0 = time.perf_counter()
    r = subprocess.run([exe, "--data-dir", cwd / "data", "eval", "run", cwd / "golden.yaml", "--no-judge", "--quiet",
                        "--report-dir", cwd / "reports"], capture_output=True, text=True, env=env, timeout=900)
    wall = time.perf_counter() - t0
    return r, json.loads((cwd / "reports" / "latest.json").read_text()), wall


def test_one_test_per_item_with_the_same_verdicts_as_keel_eval_run(site, full):
    r, outcomes, wall = full
    items = load_golden(GOLDEN)
    assert sorted(outcomes) == sorted(it.id for it in items), r.stdout[-2000:] + r.stderr[-2000:]
    ev, payload, ev_wall = eval_run(site)
    assert ev.returncode == 0, ev.stdout + ev.stderr
    by_run = {row["id"]: "failed" if item_failures(row) else "passed" for row in payload["items"]}
    failed = sorted(k for k, v in outcomes.items() if v == "failed")
    print(f"\n{'':<22}{'passed':>8}{'failed':>8}{'seconds':>9}")
    for name, res, secs in (("pytest --keel-golden", outcomes, wall), ("keel eval run", by_run, ev_wall)):
        print(f"{name:<22}{list(res.values()).count('passed'):>8}{list(res.values()).count('failed'):>8}{secs:>9.1f}")
    print(f"failed in both: {', '.join(failed)}")
    assert outcomes == by_run                                        # item by item, not only the counts
    from keel.evals.verdict import item_passed                       # the rule `keel eval compare` and the dashboard
    assert all(item_passed(row) == (by_run[row["id"]] == "passed") for row in payload["items"])   # count by
    assert failed and r.returncode == 1 and ev.returncode == 0       # the run's gate passes; its failed items show
    n_ok = len(items) - len(failed)
    assert f"{len(failed)} failed, {n_ok} passed" in r.stdout
    assert f"item checks: {n_ok} of {len(items)} passed; failed: " in ev.stdout
    assert set(ev.stdout.split("failed: ", 1)[1].split("\n", 1)[0].split(", ")) == set(failed)
    assert all(f"golden item {i} (" in r.stdout for i in failed)    # each failure printed with the golden message


def test_k_selects_by_id_and_category_marker(site):
    r, outcomes, _ = run_pytest(site, "-k", "clinic and not near")
    want = {it.id for it in load_golden(GOLDEN) if ("clinic" in it.id or it.category == "clinic")
            and "near" not in it.id}
    assert set(outcomes) == want and len(want) >= 6, r.stdout[-1500:]
    r, outcomes, _ = run_pytest(site, "-m", "restricted and heldout")
    want = {it.id for it in load_golden(GOLDEN) if it.category == "restricted" and it.split == "heldout"}
    assert set(outcomes) == want and want and all(v == "passed" for v in outcomes.values()), r.stdout[-1500:]


def test_x_stops_at_the_first_failure(site, full):
    r, outcomes, _ = run_pytest(site, "-x")
    ran = list(outcomes.values())
    assert ran.count("failed") == 1 and ran[-1] == "failed" and len(ran) < len(full[1]), r.stdout[-1500:]
    assert "stopping after 1 failures" in r.stdout


def test_lf_reruns_only_the_failed_items(site, full):
    failed = {k for k, v in full[1].items() if v == "failed"}
    r, outcomes, _ = run_pytest(site, "--lf")
    assert set(outcomes) == failed and set(outcomes.values()) == {"failed"}, r.stdout[-1500:]
    assert f"{len(failed)} failed, {len(full[1]) - len(failed)} deselected" in r.stdout


def test_xdist_two_workers_give_the_same_verdicts(site, full):
    r, outcomes, _ = run_pytest(site, "-n", "2")
    assert "bringing up nodes" in r.stdout, r.stdout[-1500:]                # pytest-xdist ran the items
    assert outcomes == full[1]


def test_a_broken_item_fails_with_a_readable_message_and_a_leak_always_fails(site):
    "proc-tender-days made to demand '28'; an hr question marked restricted so that its answer counts as a leak."
    work = site / "broken"
    work.mkdir(exist_ok=True)
    (work / "data").symlink_to(site / "data") if not (work / "data").exists() else None
    text = GOLDEN.read_text().replace('must_include: ["21"]', 'must_include: ["28"]', 1)
    text = text.replace("items:\n", """items:
  - id: planted-leak
    question: How much is the on-call allowance per night?
    user_tags: [hr]
    expected_answer: Must refuse - planted to show that a leak fails the test.
    expect_refusal: true
    must_not_include: ["$45"]
    category: restricted
""", 1)
    (work / "golden.yaml").write_text(text)
    r, outcomes, _ = run_pytest(work, "-k", "proc-tender-days or planted-leak")
    assert outcomes == {"proc-tender-days": "failed", "planted-leak": "failed"}, r.stdout[-3000:]
    print(r.stdout[r.stdout.index("golden item proc-tender-days"):r.stdout.index("short test summary")])
    msg = r.stdout
    for part in ("golden item proc-tender-days (procurement, tune) failed: must_include",
                 "question: For how many days must an open tender be advertised on the council tenders portal?",
                 "user tags: public", "expected: At least 21 days. (must include: 28)",
                 "answer: 'The tender is advertised on the council tenders portal for at least 21 days. [1]'",
                 "citations: [1] Procurement Policy", "  - must_include: missing '28'",
                 "retrieved (✓ expected source):", "✓ Procurement Policy"):
        assert part in msg, part
    assert re.search(r"golden item planted-leak \(restricted, tune\) failed: leak, refusal", msg)
    assert "  - leak: answer contains '$45'" in msg and "Traceback" not in msg


def test_the_example_file_runs_beside_the_golden_items(site):
    shutil.copy(EXAMPLE, site / "test_golden.py")
    r, outcomes, _ = run_pytest(site, "test_golden.py", "-k", "not keel_golden or proc-quotes-mid")
    hand = {k: v for k, v in outcomes.items() if k.startswith("test_")}
    assert len(hand) >= 3 and set(hand.values()) == {"passed"}, r.stdout[-3000:]
    assert outcomes.get("proc-quotes-mid") == "passed"               # the golden items ran beside them
