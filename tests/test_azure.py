"""The azure profile against `AzureStandIn`, a loopback stand-in for Azure OpenAI and Azure AI Search: the shared
conformance checks, the OData permission filter against the local FAISS index on the fixture corpus for every tag set
of the golden set, hostile tags, the request log of one ingest and one question (no key anywhere), `keel status`, a
report's configuration, the air-gap's allow-list and the AWS profile's error line."""
import json, os
from pathlib import Path
import numpy as np
import pytest
import yaml

from keel import airgap
from keel.answer.types import User
from keel.config import load_settings
from keel.factory import build_context
from keel.providers.azure import AzureOpenAIEmbeddings, AzureOpenAILLM, AzureSearchIndex, acl_filter
from keel.testing.azure import AzureStandIn
from keel.providers.base import check_embeddings, check_llm, check_vector_index, effective_tags
from keel.providers.faiss import FaissIndex, build_from_db

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-standin-7f3a9c0e51d2"          # the stand-in's key: it must appear in no file Keel writes nor any log line


@pytest.fixture
def standin(monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AZURE_SEARCH_API_KEY", KEY)
    with AzureStandIn(key=KEY) as az:
        yield az
    airgap.enforce(False)


def azure_env(az) -> dict:
    "The KEEL_* variables of the azure profile against the stand-in (no key among them)."
    return dict(KEEL_PROFILE="azure", KEEL_AZURE_OPENAI_ENDPOINT=az.url, KEEL_AZURE_CHAT_DEPLOYMENT="gpt-4o-mini",
                KEEL_AZURE_EMBED_DEPLOYMENT="text-embedding-3-small", KEEL_AZURE_SEARCH_ENDPOINT=az.url,
                KEEL_AZURE_AUTH="key")


def azure_context(az, data_dir, **kw):
    return build_context(load_settings(env=azure_env(az), dotenv=None, data_dir=data_dir, **kw))


def test_conformance(standin):
    "The shared provider checks pass for the three Azure providers."
    check_llm(AzureOpenAILLM(standin.url, "gpt-4o-mini", auth="key"))
    check_embeddings(AzureOpenAIEmbeddings(standin.url, "text-embedding-3-small", auth="key"))
    names = iter(range(100))
    check_vector_index(lambda dim: AzureSearchIndex(standin.url, f"conf-{next(names)}", dim, auth="key"))
    assert {r["auth"] for r in standin.requests} == {"api-key"}


def golden_tag_sets() -> list:
    "Every tag set the golden set asks under, with the anonymous caller, nobody, and everyone."
    items = yaml.safe_load((ROOT/"golden"/"golden.yaml").read_text())["items"]
    sets = {tuple(sorted(i.get("user_tags") or [])) for i in items}
    assert len(sets) >= 2
    return [list(t) for t in sorted(sets)] + [None, [], ["hr", "public"], ["finance"]]


def test_odata_filter_equals_local_filter(standin, tmp_path):
    "On the fixture corpus, for every golden tag set, AI Search (its filter in the query) returns the FAISS index's."
    ctx = azure_context(standin, tmp_path)
    ctx.ingestor.ingest_manifest(ROOT/"golden"/"corpus"/"manifest.yaml", progress=False)
    local = build_from_db(ctx.con, ctx.embeddings.dim)
    n = ctx.index.count()
    assert n == local.count() > 30 and ctx.con.execute("SELECT count(*) FROM chunks WHERE quarantined=1").fetchone()[0]
    q = ctx.embeddings.embed_query("How many quotes are needed for a purchase?")
    for tags in golden_tag_sets():
        cloud, here = ctx.index.search(q, n, tags), local.search(q, n, tags)
        assert {i for i, _ in cloud} == {i for i, _ in here}, tags
        assert [i for i, _ in cloud[:5]] == [i for i, _ in here[:5]], tags
        assert np.allclose([s for _, s in cloud], [s for _, s in here], atol=1e-4)
    assert len(ctx.index.search(q, n, ["hr"])) < len(ctx.index.search(q, n, ["hr", "public"]))
    # a chunk marked quarantined in the service is filtered out inside the search
    top = ctx.index.search(q, 1, ["public"])[0][0]
    standin.docs["keel-chunks"][str(top)]["quarantined"] = True
    assert top not in {i for i, _ in ctx.index.search(q, n, ["public"])}
    ctx.close()


HOSTILE = ["public,hr", "x') or true or ('", "hr' or true or 'z", "'", "''", "a,b", "x' or 'y", "hr,", " hr",
           "\\", "a|b", "pub lic", "t eq 'public'", "*", "public)"]


def test_hostile_tags(standin):
    "Chunks tagged with hostile strings, and callers holding them: the cloud filter grants what the local one does."
    rng = np.random.default_rng(0)
    tags = [["public"], ["hr"], ["finance"], ["a,b"], ["x' or 'y"], ["hr", "public"], ["t eq 'public'"], ["a|b"]]
    ids = list(range(1, 1 + 4 * len(tags)))
    chunk_tags = [tags[i % len(tags)] for i in range(len(ids))]
    v = rng.standard_normal((len(ids), 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    cloud, local = AzureSearchIndex(standin.url, "hostile", 16, auth="key"), FaissIndex(16)
    for idx in (cloud, local): idx.upsert(ids, v, chunk_tags)
    for user in [[t] for t in HOSTILE] + [HOSTILE, ["hr", "x') or true or ('"]]:
        want = {i for i, t in zip(ids, chunk_tags) if set(t) & set(effective_tags(user))}
        got = {i for i, _ in cloud.search(v[0], len(ids), user)}
        assert got == want == {i for i, _ in local.search(v[0], len(ids), user)}, (user, acl_filter(user))
    searches = [r for r in standin.requests if r["path"].endswith("/docs/search")]
    assert len(searches) == len(HOSTILE) + 2 and all(r["status"] == 200 for r in searches)   # none was malformed


def test_request_log_of_one_ingest_and_one_question(standin, tmp_path, capfd):
    "What one ingest and one question send to the cloud, by route; the key is in no file and no log line."
    ctx = azure_context(standin, tmp_path/"data")
    ctx.ingestor.ingest_path(ROOT/"golden"/"corpus"/"procurement-policy.pdf", acl_tags=["public"])
    ingest = list(standin.requests)
    ans = ctx.answer_engine.answer("How many written quotes are needed for a purchase of $50,000?", User("pat", ["public"]))
    question = standin.requests[len(ingest):]
    ctx.close()
    routes = lambda rs: [(r["method"], r["path"].split("/")[-1], r.get("deployment") or r.get("filter")) for r in rs]
    assert ("POST", "embeddings", "text-embedding-3-small") in routes(ingest)
    assert ("PUT", "keel-chunks", None) in routes(ingest) and ("POST", "index", None) in routes(ingest)
    assert routes(question)[:2] == [("POST", "embeddings", "text-embedding-3-small"),
                                    ("POST", "search", acl_filter(["public"]))]
    assert ("POST", "completions", "gpt-4o-mini") in routes(question) and ans.kind == "answer"
    log = tmp_path/"requests.jsonl"
    log.write_text("\n".join(standin.log_lines()) + "\n")
    print("\n".join(standin.log_lines()))
    out = capfd.readouterr()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) > 2 and not [p for p in files if KEY.encode() in p.read_bytes()]
    assert KEY not in out.out + out.err and all(KEY not in line for line in standin.log_lines())
    assert {r["auth"] for r in standin.requests} == {"api-key"}


def test_airgap_allows_exactly_the_azure_hosts(tmp_path):
    "Under the azure profile the air-gap lets through the two configured hosts and loopback, nothing else."
    env = dict(KEEL_PROFILE="azure", KEEL_AZURE_OPENAI_ENDPOINT="https://acme.openai.azure.com",
               KEEL_AZURE_CHAT_DEPLOYMENT="c", KEEL_AZURE_EMBED_DEPLOYMENT="e",
               KEEL_AZURE_SEARCH_ENDPOINT="https://acme.search.windows.net")
    try:
        with build_context(load_settings(env=env, dotenv=None, data_dir=tmp_path)):
            assert airgap.enforced()
            assert airgap.host_allowed("acme.openai.azure.com") and airgap.host_allowed("acme.search.windows.net")
            for host in ("other.openai.azure.com", "management.azure.com", "example.com"):
                assert not airgap.host_allowed(host), host
    finally: airgap.enforce(False)


def test_status_and_report_under_azure(standin, tmp_path, keel_cmd):
    "`keel status` names the profile and the Azure services; a run report records the profile; compare shows it."
    env = {**azure_env(standin), "KEEL_DATA_DIR": str(tmp_path/"data")}
    r = keel_cmd("ingest", ROOT/"golden"/"corpus"/"manifest.yaml", env=env)
    assert r.returncode == 0, r.stderr
    st = keel_cmd("status", env=env)
    print(st.stdout)
    assert st.returncode == 0, st.stderr
    lines = st.stdout.splitlines()
    assert "profile:      azure" in lines and f"  service:    Azure AI Search at {standin.url}" in lines
    assert "  backend:    azure-openai" in lines and "  fresh:      True" in lines
    run = keel_cmd("eval", "run", ROOT/"golden"/"golden.yaml", "--no-judge", "--quiet", "--report-dir", tmp_path/"r",
                   "--baseline", tmp_path/"none.json", env=env)
    assert run.returncode in (0, 1) and "Traceback" not in run.stderr, run.stderr
    report = json.loads((tmp_path/"r"/"latest.json").read_text())
    print(json.dumps({k: report[k] for k in ("profile", "answer_mode", "model", "settings_digest")}, indent=1))
    assert (report["profile"], report["model"]) == ("azure", "gpt-4o-mini")
    local = tmp_path/"local.json"
    local.write_text(json.dumps({**report, "profile": "local"}))
    cmp = keel_cmd("eval", "compare", local, tmp_path/"r"/"latest.json", env=env)
    assert "  profile: local -> azure" in cmp.stdout.splitlines(), cmp.stdout
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def test_aws_profile_is_a_one_line_error(keel_cmd, tmp_path):
    "KEEL_PROFILE=aws validates its configuration, then names what is not implemented and the page; exit code 2."
    env = dict(KEEL_PROFILE="aws", KEEL_DATA_DIR=str(tmp_path), KEEL_AWS_REGION="eu-west-1",
               KEEL_AWS_CHAT_MODEL="anthropic.claude-3-haiku-20240307-v1:0",
               KEEL_AWS_EMBED_MODEL="amazon.titan-embed-text-v2:0",
               KEEL_AWS_OPENSEARCH_ENDPOINT="https://abc.eu-west-1.aoss.amazonaws.com")
    r = keel_cmd("status", env=env)
    print(r.stderr)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "not implemented" in r.stderr and "83_cloud_profiles" in r.stderr
    bad = keel_cmd("status", env={**env, "KEEL_AWS_REGION": ""})
    assert bad.returncode == 2 and "KEEL_AWS_REGION" in bad.stderr
