"""End-to-end tests of the model layer: packaged weights prepared and loaded offline under the air-gap,
and the OpenAI-compatible client against a real llama.cpp server."""
import json, socket
from pathlib import Path
import numpy as np
import pytest

from keel.errors import ModelError, AirgapViolation
from keel.config import load_settings
from keel.models import prepare_models
from keel.providers.base import ChatMessage, check_llm, check_embeddings
from keel.providers.llama import LlamaCppLLM
from keel.providers.fastembed import FastEmbedEmbeddings
from keel.providers.openai import OpenAILLM, OpenAIEmbeddings, serve_llama, free_port


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    "The packaged models prepared once into a fresh data directory."
    s = load_settings(env={}, dotenv=None, data_dir=tmp_path_factory.mktemp("data"))
    return prepare_models(s)


def test_models_prepare_command(keel_cmd, tmp_path):
    "`keel models prepare` readies both packaged models in a fresh data directory and says where."
    r = keel_cmd("--data-dir", tmp_path, "models", "prepare", env={"KEEL_AIRGAP": "true"})
    assert r.returncode == 0, r.stderr
    gguf = tmp_path/"models"/"gemma-3-270m-q4_k_m.gguf"
    assert gguf.stat().st_size == 253_113_024 and str(gguf) in r.stdout
    assert (tmp_path/"models"/"all-MiniLM-L6-v2-int8"/"model.onnx").is_file()
    again = keel_cmd("--data-dir", tmp_path, "models", "prepare")   # a second run reuses the verified files
    assert again.returncode == 0 and again.stdout == r.stdout


def test_missing_model_path_is_a_clear_error(keel_cmd, tmp_path):
    "A KEEL_LLM_PATH that does not exist is exit code 3 with one line naming it, never a download."
    r = keel_cmd("--data-dir", tmp_path, "models", "prepare", env={"KEEL_LLM_PATH": str(tmp_path/"nope.gguf")})
    assert r.returncode == 3
    assert "nope.gguf" in r.stderr + r.stdout and "Traceback" not in r.stderr


def test_models_load_offline_under_airgap(models):
    "With the air-gap enforced, the packaged embedding model and LLM load and answer; outbound traffic is refused."
    from keel import airgap
    airgap.enforce(True)
    try:
        with pytest.raises(AirgapViolation):
            socket.create_connection(("huggingface.co", 443), timeout=2)
        emb = FastEmbedEmbeddings(models["embeddings"], threads=1)
        check_embeddings(emb)
        v = emb.embed(["Invoices over ten thousand dollars need three quotes.", "How many quotes does a large invoice need?"])
        assert v.shape == (2, 384) and float(v[0] @ v[1]) > 0.5
        llm = LlamaCppLLM(models["llm"], n_ctx=1024, n_threads=1)
        assert llm.prompt_style == "completion"
        r = llm.complete("The capital of France is", max_tokens=4, temperature=0)
        assert r.prompt_tokens > 0 and 0 < r.output_tokens <= 4
    finally:
        airgap.enforce(False)


def test_corrupt_gguf_is_a_model_error(tmp_path):
    "A damaged GGUF file is a ModelError naming the file and the fix, not a crash."
    bad = tmp_path/"broken.gguf"
    bad.write_bytes(b"GGUF" + bytes(200))
    with pytest.raises(ModelError) as e:
        LlamaCppLLM(bad).complete("hi", max_tokens=2)
    assert "broken.gguf" in str(e.value) and "KEEL_LLM_PATH" in str(e.value) and e.value.exit_code == 3


def test_unreachable_endpoint_names_the_url():
    "A closed port is a ModelError naming the endpoint URL, for chat, completion and embeddings."
    url = f"http://127.0.0.1:{free_port()}/v1"
    llm = OpenAILLM(url, timeout=5)
    for call in (lambda: llm.chat([ChatMessage("user", "hi")]), lambda: llm.complete("hi")):
        with pytest.raises(ModelError) as e: call()
        assert url in str(e.value) and e.value.exit_code == 3
    with pytest.raises(ModelError, match="/v1/embeddings"):
        OpenAIEmbeddings(url, "any", dim=8).embed(["x"])


@pytest.mark.slow
def test_openai_client_against_llama_server(models):
    "The OpenAI-compatible client passes the LLM and embeddings checks against a real llama.cpp server."
    with serve_llama(models["llm"], n_ctx=2048, embedding=True) as url:
        llm = OpenAILLM(url, model="gemma", timeout=600)
        check_llm(llm, json_ok=True)
        assert llm.json_mode in ("json_schema", "json_object", "instruction") and llm.has_completions is True
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        r = llm.chat([ChatMessage("user", "Is water wet? Answer as JSON.")], json_schema=schema, max_tokens=20, temperature=0)
        assert isinstance(json.loads(r.content)["ok"], bool)
        emb = OpenAIEmbeddings(url, "gemma")
        check_embeddings(emb)
        assert emb.dim == 640
