"""The answer engine on the production path: the fixture corpus (golden/corpus) ingested into a fresh data directory
through `build_context`, the real retriever, the real ledger and inference log, and the real default model, both in
process (llama-cpp-python) and behind a real `llama_cpp.server` on loopback through `OpenAILLM`.

The model is weak and its wording varies, so these tests assert the contract, not the prose: a refusal by the gate
never calls the model; every citation points at a retrieved chunk the user may see; a bare-citation reply triggers
exactly one retry; JSON mode returns schema-valid data or reports an error; the ledger gains its three rows per
request and verifies; an unreachable model is a `ModelError` that names the endpoint, with the failure recorded."""
import json, socket
from pathlib import Path
import pytest

from keel.config import load_settings
from keel.errors import ModelError
from keel.providers.base import allowed
from keel.answer.types import User
from keel.answer.engine import AnswerEngine, REFUSAL, format_answer
from keel.answer.prompts import FIRMER, is_bare_citation, strip_scaffolding
from keel.answer.jsonschema import validate
from keel.observe import InferenceLog
from keel.testing import CountingLLM

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "golden" / "corpus"
PUBLIC, HR = User("pat", ["public"]), User("hana", ["hr"])
QUESTIONS = ["How many quotes are needed for a purchase between $10,000 and $100,000?",
             "How long are the health records of adult patients kept?",
             "What exit code does keel verify-ledger give when the ledger chain is broken?",
             "How quickly must a staff member tell the Privacy Officer about a suspected data breach?"]
SALARY = "What is the salary range for Band 3?"
SALARY_SECRETS = ["92,000", "104,000"]          # from golden.yaml: only an `hr` user may ever see these


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    "A fresh deployment with the fixture corpus ingested, built the way the CLI builds it."
    from keel.factory import build_context
    d = tmp_path_factory.mktemp("answer")
    s = load_settings(env={}, dotenv=None, data_dir=d, max_output_tokens=120, temperature=0.0, llm_context=4096)
    c = build_context(s)
    results = c.ingestor.ingest_manifest(CORPUS / "manifest.yaml")
    assert [r.status for r in results] == ["added"] * 5, [r.line for r in results]
    yield c
    c.close()


@pytest.fixture(scope="module", params=["llama", "openai"])
def real_llm(request, ctx):
    "The default model in process, or the same GGUF behind a llama.cpp server on loopback through `OpenAILLM`."
    if request.param == "llama":
        yield ctx.llm
        return
    from keel.providers.openai import OpenAILLM, serve_llama
    from keel.models import resolve_llm_path
    with serve_llama(resolve_llm_path(ctx.settings), n_ctx=4096, n_threads=2) as base:
        llm = OpenAILLM(base, timeout=600)
        yield llm
        llm.close()


def engine(ctx, llm, **settings):
    if type(getattr(llm, "inner", llm)).__name__ == "OpenAILLM":   # a smaller prompt: the HTTP server is the slower path here
        settings = dict(dict(top_k_final=3, max_output_tokens=80), **settings)
    s = ctx.settings.replace(**settings) if settings else ctx.settings
    return AnswerEngine(ctx.retriever, llm, ctx.ledger, ctx.log, s)


def ledger_kinds(ctx, rid):
    return [r[0] for r in ctx.con.execute("SELECT kind FROM ledger WHERE request_id=? ORDER BY seq", (rid,))]


def chunk_tags(ctx, cid):
    return json.loads(ctx.con.execute("SELECT acl_tags FROM chunks WHERE id=?", (cid,)).fetchone()[0])


def check_citations(ctx, a, user):
    "Every citation resolves to a chunk that was placed in front of the model and that `user` may see."
    ids = [h.chunk_id for h in a.retrieved]
    for c in a.citations:
        assert 1 <= c.n <= len(a.retrieved) and a.retrieved[c.n - 1].chunk_id == c.chunk_id, (c, ids)
        assert allowed(chunk_tags(ctx, c.chunk_id), user.tags), f"cited chunk {c.chunk_id} is not visible to {user}"
        assert " ".join(c.snippet.replace(" ...", "").split()) in " ".join(a.retrieved[c.n - 1].text.split())
    for h in a.retrieved: assert allowed(chunk_tags(ctx, h.chunk_id), user.tags) and not h.quarantined
    marks = {int(n) for n in __import__("re").findall(r"\[(\d+)\]", a.text)}
    assert all(1 <= n <= len(a.retrieved) for n in marks), f"out-of-range marker left in {a.text!r}"


# --- fast: no model ---------------------------------------------------------------------------------------------

def test_format_answer_and_log_without_a_model(tmp_path):
    from keel.db import connect
    from keel.answer.types import Answer
    log = InferenceLog(connect(tmp_path / "keel.db"))
    a = Answer(REFUSAL, refused=True, request_id="r1")
    log.record(a, PUBLIC, "What is the salary range for Band 3?")
    assert format_answer(a) == REFUSAL
    assert log.totals()["refusal_rate"] == 1.0 and log.rows()[0]["tags"] == ["public"]


def test_validator_agrees_with_jsonschema_on_answer_schemas():
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"answer": {"type": "string", "minLength": 1},
                                               "source": {"type": "integer", "minimum": 1, "maximum": 6}},
              "required": ["answer", "source"], "additionalProperties": False}
    cases = [{"answer": "x", "source": 1}, {"answer": "", "source": 1}, {"answer": "x", "source": 7}, {"answer": "x"},
             {"answer": "x", "source": 1.0}, {"answer": "x", "source": True}, {"answer": "x", "source": 2, "y": 0}, [], None]
    for x in cases:
        assert (validate(x, schema) == []) == jsonschema.Draft202012Validator(schema).is_valid(x), x


# --- slow: the real default model -------------------------------------------------------------------------------

@pytest.mark.slow
def test_gate_refusals_never_call_the_model(ctx, real_llm):
    llm = CountingLLM(real_llm)
    eng = engine(ctx, llm)
    for user in (User("nobody", []), ):
        a = eng.answer(QUESTIONS[0], user)
        assert a.refused and a.text == REFUSAL and a.retrieved == [] and a.citations == []
    strict = engine(ctx, llm, min_relevance=1.0)      # nothing is ever that relevant: every request is gated
    for q in QUESTIONS[:2] + [SALARY]:
        a = strict.answer(q, PUBLIC)
        assert a.refused and a.text == REFUSAL
        assert ledger_kinds(ctx, a.request_id) == ["request", "retrieval", "answer"]
    assert llm.calls == [], "the refusal gate must not call the model"
    a = eng.answer(SALARY, PUBLIC)                   # public caller, HR-only document: refused or answered without it
    assert not any(s in a.text for s in SALARY_SECRETS)
    check_citations(ctx, a, PUBLIC)


@pytest.mark.slow
def test_answers_cite_only_permitted_retrieved_chunks(ctx, real_llm):
    llm = CountingLLM(real_llm)
    eng = engine(ctx, llm)
    n_calls = 0
    for q in QUESTIONS:
        a = eng.answer(q, PUBLIC)
        assert a.error is None and a.request_id and a.model
        check_citations(ctx, a, PUBLIC)
        assert a.refused or a.citations, f"a non-refusal answer always carries citations: {a.text!r}"
        assert a.refused == (a.text == REFUSAL)
        assert not a.refused or a.citations == []
        assert "Question:" not in a.text and "Sources:" not in a.text and "<end_of_turn>" not in a.text
        first = strip_scaffolding(llm.replies[n_calls])
        expected_calls = 2 if is_bare_citation(first) else 1  # exactly one retry after a bare citation, never more
        assert len(llm.calls) - n_calls == expected_calls
        n_calls = len(llm.calls)
        assert a.retrieved and a.prompt_tokens > 0      # output tokens: some servers report none for chat replies
        assert "retrieval_ms" in a.timings and "generation_ms" in a.timings
        assert ledger_kinds(ctx, a.request_id) == ["request", "retrieval", "answer"]
        row = [r for r in ctx.log.rows() if r["request_id"] == a.request_id]
        assert len(row) == 1 and row[0]["answer"] == a.text and row[0]["user"] == "pat"
        text = format_answer(a)
        assert text.startswith(a.text) and all(f"[{c.n}] " in text for c in a.citations)
    a = eng.answer(SALARY, HR)
    check_citations(ctx, a, HR)
    assert ctx.ledger.verify().ok


@pytest.mark.slow
def test_bare_citation_reply_is_retried_exactly_once(ctx, real_llm):
    llm = CountingLLM(real_llm, first_reply="[1]")
    a = engine(ctx, llm).answer(QUESTIONS[1], PUBLIC)
    assert len(llm.calls) == 2
    second = llm.calls[1] if isinstance(llm.calls[1], str) else "\n".join(m.content for m in llm.calls[1])
    assert FIRMER in second
    assert not is_bare_citation(a.text), "a bare citation is never shown as the answer"
    check_citations(ctx, a, PUBLIC)
    payload = json.loads(ctx.con.execute("SELECT payload FROM ledger WHERE request_id=? AND kind='answer'", (a.request_id,)).fetchone()[0])
    assert payload["retried"] is True


@pytest.mark.slow
def test_json_mode_returns_valid_data_or_an_error(ctx, real_llm):
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 120},
                                               "source": {"type": "integer", "minimum": 1, "maximum": 6}},
              "required": ["answer", "source"], "additionalProperties": False}
    llm = CountingLLM(real_llm)
    a = engine(ctx, llm).answer(QUESTIONS[0], PUBLIC, json_schema=schema)
    assert a.mode == "json" and 1 <= len(llm.calls) <= 2
    if a.error is None: assert a.data is not None and validate(a.data, schema) == []
    else: assert a.data is None and "schema" in a.error
    check_citations(ctx, a, PUBLIC)
    assert ledger_kinds(ctx, a.request_id) == ["request", "retrieval", "answer"]


@pytest.mark.slow
def test_extractive_mode_needs_no_model(ctx):
    llm = CountingLLM(ctx.llm)
    eng = engine(ctx, llm, answer_mode="extractive")
    a = eng.answer(QUESTIONS[0], PUBLIC)
    assert llm.calls == [] and a.mode == "extractive" and not a.refused
    assert "three" in a.text.lower() and a.citations
    check_citations(ctx, a, PUBLIC)
    a = eng.answer(SALARY, PUBLIC)
    assert not any(s in a.text for s in SALARY_SECRETS)


@pytest.mark.slow
def test_unreachable_model_names_the_endpoint_and_is_recorded(ctx):
    from keel.providers.openai import OpenAILLM
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]     # a port nobody listens on
    url = f"http://127.0.0.1:{port}/v1"
    eng = engine(ctx, OpenAILLM(url, timeout=5))
    with pytest.raises(ModelError) as e: eng.answer(QUESTIONS[0], PUBLIC)
    assert f"127.0.0.1:{port}" in str(e.value)
    row = ctx.log.rows()[-1]
    assert row["error"] and f"127.0.0.1:{port}" in row["error"]
    assert ledger_kinds(ctx, row["request_id"]) == ["request", "retrieval", "answer"]
    assert ctx.ledger.verify().ok
