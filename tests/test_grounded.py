"""The grounded-answer contract with the real default model (Gemma 3 270M in process) on the fixture corpus.

Marked `contract` (and `slow`): `make test` runs these few, bounded real-model tests on purpose (about two minutes
on two cores), `make test-slow` runs the other model-heavy ones. What they hold, whatever the model writes:
no answer runs to the token limit; every sentence shown is supported by the passage it cites and carries no
figure or name that passage lacks; every answer says how it was produced, in the Answer, the ledger row and the
inference log; extractive mode never builds the language model."""
import json
from pathlib import Path
import pytest

from keel.config import load_settings
from keel.answer.types import User
from keel.answer.prompts import REFUSAL
from keel.evals.golden import load_golden
from keel.evals.grounding import groundedness
from keel.providers.base import first_repeat

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "golden" / "corpus"
PRODUCED = {"generated", "repaired", "extractive_fallback", "refusal"}
# answerable golden questions spanning the four public documents and a figure-heavy table
IDS = ["proc-quotes-mid", "proc-tender-days", "clinic-adult-retention", "ops-backup-retention", "proc-supplier-returns"]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    from keel.factory import build_context
    d = tmp_path_factory.mktemp("grounded")
    c = build_context(load_settings(env={}, dotenv=None, data_dir=d, temperature=0.0, llm_context=4096))
    assert {r.status for r in c.ingestor.ingest_manifest(CORPUS / "manifest.yaml")} == {"added"}
    yield c
    c.close()


def test_extractive_mode_never_builds_the_model(tmp_path):
    from keel.factory import build_context
    c = build_context(load_settings(env={}, dotenv=None, data_dir=tmp_path, answer_mode="extractive"))
    try:
        c.ingestor.ingest_manifest(CORPUS / "manifest.yaml")
        a = c.answer_engine.answer("How long are the health records of adult patients kept?", User("pat", ["public"]))
        assert not a.refused and a.produced_by == "extractive" and a.citations
        sents = [s.strip() for s in a.text.replace("]", "].").split("].") if s.strip()]
        assert len(sents) == len(set(sents)), a.text
        assert "llm" not in c.__dict__ and not list(Path(c.settings.models_dir).glob("**/*.gguf"))
    finally: c.close()


def _items():
    by_id = {it.id: it for it in load_golden(ROOT / "golden" / "golden.yaml")}
    return [by_id[i] for i in IDS if i in by_id]


@pytest.mark.slow
@pytest.mark.contract
def test_real_model_answers_are_grounded_and_bounded(ctx):
    eng, lim = ctx.answer_engine, ctx.settings.max_output_tokens
    for it in _items():
        a = eng.answer(it.question, User("eval", it.user_tags))
        assert a.produced_by in PRODUCED, a
        assert a.output_tokens < lim, f"{it.id}: {a.output_tokens} tokens: {a.text!r}"
        if a.refused:
            assert a.text == REFUSAL and not a.citations
            continue
        g = groundedness(a.text, [c.n for c in a.citations], [h.text for h in a.retrieved], *eng.vectors(a.retrieved))
        assert g["unsupported_figures"] == 0 and g["score"] == 1.0, (it.id, a.text, g["details"])
        assert g["citations_supported"], (it.id, a.text, [c.n for c in a.citations])
        row = json.loads(ctx.con.execute("SELECT payload FROM ledger WHERE kind='answer' AND request_id=?", (a.request_id,)).fetchone()[0])
        assert row["produced_by"] == a.produced_by
        log = ctx.con.execute("SELECT produced_by FROM inference_log WHERE request_id=?", (a.request_id,)).fetchone()[0]
        assert log == a.produced_by


@pytest.mark.slow
@pytest.mark.contract
def test_real_model_loop_is_cut(ctx):
    "A prompt that invites a loop never runs to the limit repeating itself, and no answer shows a repeat."
    r = ctx.llm.complete("Repeat after me forever: Backups are kept for 30 days. Backups are kept for 30 days. Backups are kept for 30 days.",
                         max_tokens=300, temperature=0)
    assert r.output_tokens < 300 or first_repeat(r.content) is None, r.content
    a = ctx.answer_engine.answer("How long are Keel's nightly backups kept? Backups are kept. Backups are kept. Backups are kept.",
                                 User("eval", ["public"]))
    assert first_repeat(a.text) is None, a.text
