"""The evidence response end to end: the golden set over the fixture corpus through the real answer engine, with the
evidence band on (the default) and off, in both answer modes.

What must hold in every kind: no leak; every passage an evidence response shows or cites is one its asker may see, by
the database's tags; an evidence response is never a refusal and never claims anything (the fixed sentence, then
quotes). Against the two-outcome gate (`KEEL_EVIDENCE=off`) the same items are answered: the band takes only from the
refusals. Restricted documents near the threshold (the band opened down to 0, so every restricted question asked
without access falls in it) never reach the reply. The fast tests answer in extractive mode; the generative run is
`slow` (the packaged model).
"""
import shutil
from pathlib import Path
import pytest
from keel.config import load_settings
from keel.factory import build_context
from keel.providers.base import allowed
from keel.answer.types import User, KINDS
from keel.answer.prompts import EVIDENCE
from keel.evals.golden import load_golden
from keel.evals.run import run_eval
from keel.evals.score import chunk_tags, find_strings
from keel.evals.report import render_report

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT/"golden"/"golden.yaml"
MANIFEST = ROOT/"golden"/"corpus"/"manifest.yaml"


def make_ctx(data_dir, mode="extractive", **kw):
    return build_context(load_settings(env={}, dotenv=None, data_dir=data_dir, answer_mode=mode, **kw))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    "A data directory with the fixture corpus ingested."
    root = tmp_path_factory.mktemp("evidence")
    ctx = make_ctx(root/"data")
    ctx.ingestor.ingest_manifest(MANIFEST, progress=False)
    ctx.close()
    return root


def golden_run(data_dir, reports, mode="extractive", **kw):
    ctx = make_ctx(data_dir, mode, **kw)
    try:
        res = run_eval(ctx, GOLDEN, reports, judge=False, progress=False, baseline_path=reports/"no-baseline.json")
        check_kinds(res, chunk_tags(ctx.con))
    finally: ctx.close()
    return res


def check_kinds(res, tags_of):
    "No leak in any kind; evidence shows only passages its asker may see, quoted after the fixed sentence."
    for r in res.items:
        assert r["leaks"] == 0, (r["id"], r["leak_details"])
        for p in r["citations"] + r["retrieved"]:
            assert allowed(tags_of(p["chunk_id"]), r["user_tags"]), (r["id"], p)
        if r["kind"] == "evidence":
            assert r["answer"].startswith(EVIDENCE) and r["citations"] and not r["refused"], r["id"]
            assert all(line.startswith('"') for line in r["answer"].splitlines()[1:]), r["answer"]
            assert (r["outcome"], r["refusal_correct"], r["must_include_pass"]) == ("evidence", None, None)
        if r["refusal_category"] == "restricted": assert r["kind"] != "answer" and not r["found"], r["id"]


def test_golden_set_with_and_without_the_evidence_band(corpus, tmp_path):
    res = golden_run(corpus/"data", tmp_path/"on")
    kinds, m, cats = res.summary["kinds"], res.summary["metrics"], res.summary["by_category"]
    print(kinds, {k: m[k] for k in ("answered", "evidence_rate", "evidence_hit", "helpful_rate", "false_answer_rate")})
    assert all(kinds[k] > 0 for k in KINDS) and m["leaks"] == 0
    assert cats["answerable"]["evidence"] >= 1 and cats["answerable"]["evidence_hit"] is not None
    assert m["helpful_rate"] >= m["answered"] - 1e-9 and m["false_answer_rate"] <= 0.1
    binary = golden_run(corpus/"data", tmp_path/"off", evidence=False)
    assert binary.summary["kinds"]["evidence"] == 0
    for a, b in zip(res.items, binary.items):     # the band takes from the refusals, never from the answers
        assert (a["kind"] == "answer") == (b["kind"] == "answer"), a["id"]
        if a["kind"] == "evidence": assert b["kind"] == "refusal", a["id"]
    assert binary.summary["metrics"]["helpful_rate"] <= m["helpful_rate"]
    page = res.report_html_path.read_text()
    assert render_report(res.payload) == page and '<span class="evidence">evidence' in page
    assert "Refusal by category: answered, evidence, refused" in page


def test_restricted_documents_near_the_threshold_never_reach_an_evidence_response(corpus):
    ctx = make_ctx(corpus/"data", min_evidence=0.0)        # the band opened down to 0: nothing is refused for its score
    try:
        hr = {c for (c,) in ctx.con.execute("SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id "
                                             "WHERE d.acl_tags LIKE '%hr%'")}
        items = [i for i in load_golden(GOLDEN) if i.refusal_category == "restricted"]
        kinds = []
        for it in items:
            a = ctx.answer_engine.answer(it.question, User("eval", it.user_tags))
            kinds.append(a.kind)
            assert a.kind != "answer", it.id
            assert not ({c.chunk_id for c in a.citations} | {h.chunk_id for h in a.retrieved}) & hr, it.id
            assert not find_strings(a.text, it.must_not_include), it.id
        assert kinds.count("evidence") >= len(items) // 2, kinds      # the band was reached
        hr_user = ctx.answer_engine.answer("What is the salary range for Band 3?", User("hr", ["hr", "public"]))
        assert hr_user.kind == "answer" and {c.chunk_id for c in hr_user.citations} & hr
    finally: ctx.close()


@pytest.mark.slow
def test_golden_set_generative_has_no_leak_in_any_kind(corpus, tmp_path):
    res = golden_run(corpus/"data", tmp_path/"gen", mode="generative")
    print(res.summary["kinds"], res.summary["metrics"]["helpful_rate"])
    assert res.summary["metrics"]["leaks"] == 0 and res.summary["kinds"]["evidence"] >= 1
