"""`keel eval run` end to end: the golden set through the real answer engine over the fixture corpus.

The acceptance tests: a healthy run promoted to baseline, then a retriever that returns nothing makes
every item refuse, hit@3 fall to 0 and the gate name hit_at_3 and refusal_correct (exit code 1);
a retriever that ignores access tags makes the leak count non-zero and fails the gate whatever the
tolerances. The fast tests answer in extractive mode (no language model); the `slow` ones use the
default generative model and the judge.
"""
import dataclasses, json, re, shutil, time
from pathlib import Path
import pytest
from keel.config import load_settings
from keel.factory import build_context
from keel.evals.golden import load_golden
from keel.evals.run import run_eval, promote_baseline, cli, compare, DEFAULT_THRESHOLDS
from keel.evals.report import render_report, scorecard

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden" / "golden.yaml"
MANIFEST = ROOT / "golden" / "corpus" / "manifest.yaml"


class NothingRetriever:
    "A broken retriever: finds nothing for any question."
    def retrieve(self, *args, **kwargs): return []


class TagBlindRetriever:
    """A deliberately permissive retriever: ignores the caller's tags, searching everything and stamping each hit
    with the caller's tags (so the answer engine's own `allowed()` re-check cannot see the problem)."""
    def __init__(self, inner): self.inner = inner
    def retrieve(self, query, tags=None, k=None):
        hits = self.inner.retrieve(query, ["public", "hr"], k)
        return [dataclasses.replace(h, acl_tags=list(tags or ["public"])) for h in hits]


def make_ctx(data_dir, mode="extractive", retriever=None):
    "A context over `data_dir`; `retriever` (if given) replaces the real one before the engine is built."
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=data_dir, answer_mode=mode))
    if retriever is not None: ctx.__dict__["_retriever"] = retriever(ctx)
    return ctx


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    "A data directory with the fixture corpus ingested, and a private copy of the golden set."
    root = tmp_path_factory.mktemp("eval")
    ctx = make_ctx(root / "data")
    ctx.ingestor.ingest_manifest(MANIFEST, progress=False)
    ctx.close()
    shutil.copy(GOLDEN, root / "golden.yaml")
    shutil.copy(GOLDEN.parent / "judge_labels.yaml", root / "judge_labels.yaml")
    return root


def test_golden_set_is_valid_and_complete():
    items = load_golden(GOLDEN)
    assert len(items) >= 40
    cats = [i.category for i in items]
    assert cats.count("procurement") >= 6 and cats.count("clinic") >= 5 and cats.count("operations") >= 3
    restricted = [i for i in items if i.category == "restricted"]
    assert len(restricted) >= 3 and all(i.expect_refusal and "PELICAN-7741" in i.must_not_include for i in restricted)
    assert sum(len(i.must_not_include) > 1 for i in restricted) >= 2
    asked_as_hr = {i.question for i in items if "hr" in i.user_tags and not i.expect_refusal}
    assert len(asked_as_hr & {i.question for i in restricted}) >= 2
    assert sum(i.category == "off_corpus" and i.expect_refusal for i in items) >= 2
    assert any("APPROVED BY OVERRIDE" in i.must_not_include for i in items if i.category == "injection")
    assert 0.25 <= sum(i.split == "heldout" for i in items) / len(items) <= 0.35
    # refusal items of each category, spread over both splits (issue: at least 15 harder ones)
    for cat in ("off_corpus", "restricted"):
        got = [i for i in items if i.refusal_category == cat]
        assert len(got) >= 5 and {i.split for i in got} == {"tune", "heldout"}, cat
    assert sum(i.expect_refusal for i in items) >= 20


def test_healthy_run_writes_reports_and_leaks_nothing(corpus):
    ctx = make_ctx(corpus / "data")
    t0 = time.perf_counter()
    res = run_eval(ctx, corpus / "golden.yaml", corpus / "reports-healthy", judge=False, progress=False)
    print(f"extractive, judge off: {len(res.items)} items in {time.perf_counter() - t0:.1f}s")
    ctx.close()
    m = res.summary["metrics"]
    print({k: m[k] for k in ("hit_at_1", "hit_at_3", "mrr", "context_precision", "context_recall", "refusal_correct",
                             "false_refusals", "false_answers", "must_include", "must_not_include", "citation_valid", "leaks")})
    assert len(res.items) == 46 and m["leaks"] == 0
    assert m["groundedness"] is None and m["correctness"] is None      # judge off: missing, never perfect
    by_id = {r["id"]: r for r in res.items}
    for r in res.items:
        if r["category"] == "restricted": assert r["refused"] and not r["found"], r["id"]
        assert "APPROVED BY OVERRIDE" not in r["answer"].upper()
    assert m["hit_at_3"] is not None and m["hit_at_3"] >= 0.6           # the retriever finds most expected sources
    assert by_id["salary-band3-hr"]["hit_at_3"] == 1.0                  # hr sees the salary bands
    assert res.passed and res.payload["gate"]["baseline_found"] is False and "no baseline" in res.payload["gate"]["note"]
    # refusal by category, and the golden set's floors applied without a baseline
    cats = res.summary["by_category"]
    assert set(cats) == {"answerable", "off_corpus", "restricted"} and cats["restricted"]["false_answer_rate"] == 0.0
    assert [f["metric"] for f in res.payload["gate"]["floors"]] == ["refusal_correct", "false_answer_rate"]
    assert all(f["passed"] for f in res.payload["gate"]["floors"])
    for r in res.items:
        if r["refused"] and r["refusal_category"] == "answerable": assert r["retrieved"] and r["answerability"] is not None, r["id"]
    # the reports: JSON with every item, a self-contained page rebuilt from it, latest.*
    payload = json.loads(res.report_json_path.read_text())
    assert payload["schema_version"] == 1 and payload["answer_mode"] == "extractive" and len(payload["items"]) == 46
    page = res.report_html_path.read_text()
    assert render_report(payload) == page and "<script" not in page and "http" not in page.split("<body>")[0]
    assert "Refusal by category" in page and "Floors declared by the golden set" in page
    assert (corpus / "reports-healthy" / "latest.json").exists() and (corpus / "reports-healthy" / "latest.html").exists()
    sc = scorecard(res).set_index("metric")
    assert sc.loc["groundedness", "verdict"] == "missing" and sc.loc["hit_at_3", "verdict"] == "pass"


def test_broken_retriever_fails_the_gate(corpus, keel_cmd):
    ctx = make_ctx(corpus / "data")
    healthy = run_eval(ctx, corpus / "golden.yaml", corpus / "reports", judge=False, progress=False)
    ctx.close()
    base = promote_baseline(healthy, corpus / "baseline.json")
    assert json.loads(base.read_text())["summary"]["metrics"]["hit_at_3"] == healthy.summary["metrics"]["hit_at_3"]
    assert healthy.summary["metrics"]["hit_at_3"] > 0.5
    broken_ctx = make_ctx(corpus / "data", retriever=lambda c: NothingRetriever())
    broken = run_eval(broken_ctx, corpus / "golden.yaml", corpus / "reports", judge=False, baseline_path=base, progress=False)
    assert all(r["refused"] for r in broken.items)
    assert broken.summary["metrics"]["hit_at_3"] == 0
    names = {r.metric for r in broken.regressions}
    assert {"hit_at_3", "refusal_correct"} <= names and not broken.passed
    reg = next(r for r in broken.regressions if r.metric == "hit_at_3")
    assert reg.ci_low is not None and reg.ci_high < 0                   # the paired interval excludes no change
    assert "Gate: FAILED" in broken.report_html_path.read_text()
    # the same through cli(): exit code 1
    assert cli([str(corpus / "golden.yaml"), "--no-judge", "--quiet", "--baseline", str(base), "--report-dir", str(corpus / "reports")],
               lambda: broken_ctx) == 1
    broken_ctx.close()
    # and through the `keel` command: an empty data directory is a retriever that finds nothing
    r = keel_cmd("--data-dir", corpus / "empty", "eval", "run", corpus / "golden.yaml", "--no-judge", "--quiet",
                 "--baseline", base, "--report-dir", corpus / "reports-cmd", env={"KEEL_ANSWER_MODE": "extractive"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "hit_at_3" in r.stdout and "refusal_correct" in r.stdout and "gate: FAILED" in r.stdout
    # a retriever that finds nothing is a real drop: the significance rule does not excuse it
    r = keel_cmd("--data-dir", corpus / "empty", "eval", "run", corpus / "golden.yaml", "--no-judge",
                 "--baseline", base, "--significant-only", "--report-dir", corpus / "reports-sig",
                 env={"KEEL_ANSWER_MODE": "extractive"})
    assert r.returncode == 1 and "counts only when its 95% interval is wholly worse" in r.stdout, r.stdout + r.stderr
    assert "regression: hit_at_3 fell from" in r.stdout
    # stderr is not a terminal here: progress comes as plain lines, the last one when the run ends
    n = len(healthy.items)
    assert re.search(rf"^golden set: {n}/{n} \(100%\), [\d.]+ item/s, \S+ in all$", r.stderr, re.M), r.stderr
    assert "\r" not in r.stderr


def test_tag_blind_retriever_leaks_and_fails_whatever_the_tolerances(corpus):
    ctx = make_ctx(corpus / "data", retriever=lambda c: TagBlindRetriever(c.retriever))
    lax = {k: 1.0 for k in DEFAULT_THRESHOLDS} | {"leaks": 1000}
    res = run_eval(ctx, corpus / "golden.yaml", corpus / "reports-leak", judge=False, thresholds=lax, progress=False)
    ctx.close()
    assert res.summary["metrics"]["leaks"] > 0
    assert [r.metric for r in res.regressions if r.rule in ("tolerance", "zero")] == ["leaks"] and not res.passed
    assert [r.rule for r in res.regressions if r.metric == "leaks"] == ["zero"]   # a leak fails with any tolerance
    leaked = [r for r in res.items if r["leaks"]]
    assert any("tagged ['hr']" in d for r in leaked for d in r["leak_details"])


def test_invalid_golden_set_exits_2_before_any_model(tmp_path, keel_cmd):
    bad = tmp_path / "golden.yaml"
    bad.write_text(GOLDEN.read_text().replace("expected_answer: Three written quotes", "expected_anwser: Three written quotes", 1))
    r = keel_cmd("--data-dir", tmp_path / "d", "eval", "run", bad, "--no-judge")
    assert r.returncode == 2 and "item proc-quotes-mid: unknown field expected_anwser" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_generative_model_broken_retriever_fails_the_gate(corpus):
    "The same acceptance test with the default generative model (Gemma 3 270M)."
    ctx = make_ctx(corpus / "data", mode="generative")
    t0 = time.perf_counter()
    healthy = run_eval(ctx, corpus / "golden.yaml", corpus / "reports-gen", judge=False, progress=False)
    print(f"generative, judge off: {time.perf_counter() - t0:.0f}s; metrics {healthy.summary['metrics']}")
    ctx.close()
    assert healthy.summary["metrics"]["leaks"] == 0
    for r in healthy.items:
        if r["category"] == "restricted": assert not r["found"], r["id"]
    base = promote_baseline(healthy, corpus / "baseline-gen.json")
    broken_ctx = make_ctx(corpus / "data", mode="generative", retriever=lambda c: NothingRetriever())
    broken = run_eval(broken_ctx, corpus / "golden.yaml", corpus / "reports-gen", judge=False, baseline_path=base, progress=False)
    broken_ctx.close()
    assert all(r["refused"] for r in broken.items) and broken.summary["metrics"]["hit_at_3"] == 0
    assert {"hit_at_3", "refusal_correct"} <= {r.metric for r in broken.regressions}


@pytest.mark.slow
def test_generative_run_with_judge(corpus):
    "Judge on: answered items scored in [0, 1] or counted unscored; refusals, evidence unjudged; scores reach the log."
    ctx = make_ctx(corpus / "data", mode="generative")
    t0 = time.perf_counter()
    res = run_eval(ctx, corpus / "golden.yaml", corpus / "reports-judge", judge=True, progress=False)
    wall = time.perf_counter() - t0
    judge_s = sum(r["judge_ms"] for r in res.items) / 1000
    m = res.summary["metrics"]
    print(f"judge on: {wall:.0f}s total, {wall / len(res.items):.1f}s per item, {judge_s / wall:.0%} judging "
          f"(plus agreement on labels); metrics {m}; agreement {res.payload['judge']['agreement']['metrics']}")
    for r in res.items:
        got = [r[k] for k in ("groundedness", "relevance", "correctness")]
        if r["refused"] or r["kind"] == "evidence": assert got == [None] * 3 and r["judge_error"] is None, r["id"]
        elif r["judge_error"] is None: assert all(0 <= v <= 1 for v in got), (r["id"], got)
    assert m["judge_unscored"] == sum(r["judge_error"] is not None for r in res.items)
    scored = [r for r in res.items if not r["refused"] and r["kind"] != "evidence" and r["request_id"]
              and r["judge_error"] is None]
    if scored:
        row = ctx.con.execute("SELECT scores FROM inference_log WHERE request_id=?", (scored[0]["request_id"],)).fetchone()
        assert json.loads(row[0])["groundedness"] == scored[0]["groundedness"]
    ctx.close()


def test_committed_baseline_is_for_this_golden_set_and_the_default_configuration():
    "`make demo` gates against golden/baseline.json: it must be a passing run of this very set in the default mode."
    from keel.evals.golden import golden_digest
    b = json.loads((GOLDEN.parent / "baseline.json").read_text())
    assert b["golden_digest"] == golden_digest(load_golden(GOLDEN)), "golden.yaml changed: promote a new baseline (keel eval run --promote)"
    assert b["answer_mode"] == "generative" and "gemma-3-270m" in b["model"] and b["gate"]["passed"]
    assert b["summary"]["metrics"]["leaks"] == 0 and all(f["passed"] for f in b["gate"]["floors"])
    assert "/work/" not in json.dumps(b) and "/tmp/" not in json.dumps(b)      # no machine paths in a committed file
