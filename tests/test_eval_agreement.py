"""`keel eval run`, `keel eval retrieval` and `keel eval review` agree on whether each golden item's expected
source was retrieved.

The golden set goes through the real answer engine over the fixture corpus (extractive mode: no language model).
The passages each item was answered from are then scored by the other two commands' own code: the retrieval
benchmark ranks them as a system and judges the ranking (`run_benchmark`, section level), the change review checks
them as a case's evidence (`check_case` on `hits_to_sources`). One case per expected source, so a source the
three disagree on is named; every other item's sources are checked against the same passages too, so the three
must also agree on sources that were not retrieved. Before one matching rule, `Leave` matched `Sick leave` in the golden run only, and a
golden title never matched in the review.
"""
from pathlib import Path
import pytest
from keel.config import load_settings
from keel.factory import build_context
from keel.evals.golden import load_golden
from keel.evals.run import run_eval
from keel.evals.retrieval_data import Case, Dataset, Judgment, passages_from_db
from keel.evals.retrieval_bench import run_benchmark
from keel.evals.review import ReviewCase, Outcome, check_case, hits_to_sources

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden" / "golden.yaml"
CORPUS = ROOT / "golden" / "corpus"


@pytest.fixture(scope="module")
def answered(tmp_path_factory):
    "The golden run's rows and the deployment's chunks by id."
    root = tmp_path_factory.mktemp("agree")
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=root / "data", answer_mode="extractive"))
    ctx.ingestor.ingest_manifest(CORPUS / "manifest.yaml", progress=False)
    res = run_eval(ctx, GOLDEN, root / "reports", judge=False, progress=False)
    chunks = {p.chunk_id: p for p in passages_from_db(ctx.con)}
    ctx.close()
    return {r["id"]: r for r in res.items}, chunks


def per_source(items):
    "(item, key, source): every expected source of an answerable item, and every other item's source as a negative."
    asks = [it for it in items if not it.expect_refusal]
    own = [(it, str(n), s) for it in asks for n, s in enumerate(it.expected_sources) if s.document]
    other = [(it, f"{o.id}.{n}", s) for it in asks for o in asks if o.id != it.id
             for n, s in enumerate(o.expected_sources) if s.document and s not in it.expected_sources]
    return own + other


def test_three_commands_agree_on_each_expected_source(answered):
    rows, chunks = answered
    items = load_golden(GOLDEN)
    shown = {it.id: [chunks[r["chunk_id"]] for r in rows[it.id]["retrieved"]] for it in items}
    sources = per_source(items)
    assert len(sources) >= 100
    # keel eval run: the rule as its item rows record it
    run = {(it.id, n): any(s.matches(h) for h in shown[it.id]) for it, n, s in sources}
    assert all(run[it.id, "0"] == (rows[it.id]["first_relevant_rank"] is not None) for it, n, s in sources
               if len(it.expected_sources) == 1 and n == "0")
    # keel eval retrieval: a system that returns what the answer engine showed, one case per source
    cases = [Case(f"{it.id}/{n}", it.category, f"{it.id}/{n}", [Judgment(s.document, 3, s.heading)], list(it.user_tags))
             for it, n, s in sources]
    replay = lambda q, tags, k: shown[q.split("/")[0]][:k]
    depth = max(len(v) for v in shown.values()) or 1
    res = run_benchmark({"answer-engine": replay}, Dataset("golden", [depth], cases), permutations=10)
    bench = {(it.id, n): res.scores["answer-engine"]["section"][f"{it.id}/{n}"]["mrr"] > 0 for it, n, s in sources}
    # keel eval review: each source as a case's expected source, the shown passages as its evidence
    review = {}
    for it, n, s in sources:
        ref = s.document + (f"#{s.heading}" if s.heading else "")
        case = ReviewCase(f"{it.id}/{n}", it.question, dict(expected_sources=[ref]))
        review[it.id, n] = not check_case(case, Outcome(hits_to_sources(shown[it.id], CORPUS)))
    differ = {k: (run[k], bench[k], review[k]) for k in run if not run[k] == bench[k] == review[k]}
    assert not differ, differ
    own = [k for k in run if "." not in k[1]]
    assert sum(run[k] for k in own) >= 0.8 * len(own)    # most expected sources are retrieved ...
    assert sum(run.values()) < 0.8 * len(run)             # ... and most other items' sources are not: both outcomes are compared
