"""End-to-end tests of `keel eval retrieval`: trec_eval parity, strict datasets, the fixture corpus, SciFact against ir_measures."""
import hashlib, importlib.util, json, shutil
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
TREC = SHARED / "trec_eval"
SCIFACT = SHARED / "scifact-train"
FIXTURE = ROOT / "golden" / "retrieval" / "fixture.yaml"

needs_trec = pytest.mark.skipif(not TREC.is_dir(), reason=f"trec_eval's reference outputs are not at {TREC}")
needs_scifact = pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").is_file(), reason=f"SciFact (BEIR layout) is not at {SCIFACT}")

# ---------------------------------------------------------------- trec_eval parity
PARITY = [("qrels.test", "results.test", "out.test", 1, False, None),
          ("qrels.test", "results.test", "out.test.a", 1, False, None),
          ("qrels.test", "results.test", "out.test.aq", 1, False, None),
          ("qrels.rel_level", "results.test", "out.test.aql", 2, False, None),
          ("qrels.test", "results.trunc", "out.test.aqc", 1, True, None),
          ("qrels.test", "results.test", "out.test.meas_params", 1, False, ((3, 5, 7, 10, 20, 2000), (2, 5, 20)))]

@needs_trec
@pytest.mark.parametrize("qrels,run,out,level,complete,cuts", PARITY, ids=[p[2] for p in PARITY])
def test_trec_eval_parity(qrels, run, out, level, complete, cuts):
    from keel.evals.metrics import parity, read_trec_eval, TREC_CUTOFFS, SUCCESS_CUTOFFS
    cutoffs, success = cuts or (TREC_CUTOFFS, SUCCESS_CUTOFFS)
    n, bad = parity(TREC / qrels, TREC / run, TREC / out, rel_level=level, complete=complete, cutoffs=cutoffs, success=success)
    assert bad == []
    ref = read_trec_eval(TREC / out)
    must = {"P_5", "ndcg_cut_10"} if out == "out.test.meas_params" else {"num_rel_ret", "map", "recip_rank", "P_5"}
    must |= {"recall_10", "ndcg_cut_10"} & set(ref["all"])
    assert must <= set(ref["all"]) and n >= len(ref) * len(must), f"only {n} values compared"

@needs_trec
def test_parity_detects_a_wrong_value(tmp_path):
    from keel.evals.metrics import parity
    text = (TREC / "out.test.aql").read_text().replace("recip_rank            \t301\t0.0033", "recip_rank            \t301\t0.0034")
    (tmp_path / "out").write_text(text)
    n, bad = parity(TREC / "qrels.rel_level", TREC / "results.test", tmp_path / "out", rel_level=2)
    assert bad == ["recip_rank 301: ours 0.0033, trec_eval 0.0034"]

# ---------------------------------------------------------------- strict datasets
VALID = """type: retrieval
version: 1
id: t
cutoffs: [1, 5]
cases:
  - id: a
    category: c
    query: how many quotes
    judgments: [{path: procurement-policy.pdf, heading: 2. Purchase thresholds, relevance: 2}]
"""

@pytest.mark.parametrize("change,expect", [
    (("relevance: 2", "relevance: 5"), "case 'a' judgments[0].relevance: 5 is not an integer in 1..3"),
    (("version: 1", "version: 3"), "version 3 is not supported"),
    (("    query:", "    category: d\n    query:"), "duplicate key 'category'"),
    (("    query:", "    topic: x\n    query:"), "case 'a': unknown field 'topic'"),
    (("judgments: [{path: procurement-policy.pdf, heading: 2. Purchase thresholds, relevance: 2}]", "judgments: []"), "case 'a' judgments: a case needs at least one judgment"),
])
def test_invalid_dataset_exits_2_before_anything_runs(keel_cmd, tmp_path, change, expect):
    (tmp_path / "ds.yaml").write_text(VALID.replace(*change))
    r = keel_cmd("--data-dir", tmp_path / "data", "eval", "retrieval", tmp_path / "ds.yaml")
    assert r.returncode == 2, r.stderr
    assert expect in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "data" / "models").exists(), "no model may be prepared for an invalid dataset"

def test_duplicate_case_ids_exit_2(keel_cmd, tmp_path):
    (tmp_path / "ds.yaml").write_text(VALID + VALID[VALID.index("  - id: a"):])
    r = keel_cmd("--data-dir", tmp_path / "data", "eval", "retrieval", tmp_path / "ds.yaml")
    assert r.returncode == 2 and "case 'a': duplicate case id" in r.stderr

def test_the_fixture_dataset_is_valid():
    from keel.evals.retrieval_data import load_dataset
    ds = load_dataset(FIXTURE)
    assert len(ds.cases) >= 20 and len({c.category for c in ds.cases}) >= 5
    assert sum(c.user_tags == ["hr"] for c in ds.cases) >= 3 and any(c.category == "semantic" for c in ds.cases)
    assert all(j.heading for c in ds.cases for j in c.judgments), "fixture judgments are heading-level"
    assert ds.digest == hashlib.sha256(FIXTURE.read_bytes()).hexdigest()

# ---------------------------------------------------------------- the fixture corpus, end to end
@pytest.mark.slow
def test_fixture_benchmark_end_to_end(keel_cmd, tmp_path):
    data = tmp_path / "data"
    r = keel_cmd("--data-dir", data, "ingest", ROOT / "golden" / "corpus" / "manifest.yaml")
    assert r.returncode == 0, r.stderr
    r = keel_cmd("--data-dir", data, "eval", "retrieval", FIXTURE, "--json", tmp_path / "r.json",
                 "--markdown", tmp_path / "r.md", "--run-dir", tmp_path / "runs")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["schema_version"] == 1 and rep["dataset"]["sha256"] == hashlib.sha256(FIXTURE.read_bytes()).hexdigest()
    assert rep["systems"] == ["bm25", "vector", "hybrid"] and "hybrid+rerank" in rep["skipped"]
    assert all(g["passed"] for g in rep["gates"])
    cases = {c["id"]: c for c in rep["cases"]}
    assert cases["hr-band-4"]["results"]["hybrid"]["section"]["mrr"] > 0, "an hr caller finds the salary bands"
    assert rep["overall"]["hybrid"]["document"]["recall@10"] >= 0.9
    assert "| hybrid |" in (tmp_path / "r.md").read_text()
    assert (tmp_path / "runs" / "hybrid.section.run").is_file() and (tmp_path / "runs" / "document.qrels").is_file()
    # a second embedding model (here the packaged MiniLM folder again) runs as vector2; an unreachable one is skipped
    folder = next((data / "models").glob("all-MiniLM*"))
    r = keel_cmd("--data-dir", data, "eval", "retrieval", FIXTURE, "--systems", "bm25", "vector2", "--embed2-path", folder,
                 "--json", tmp_path / "v2.json", "--cache", tmp_path / "cache")
    assert r.returncode == 0, r.stdout + r.stderr
    v2 = json.loads((tmp_path / "v2.json").read_text())
    assert v2["systems"] == ["bm25", "vector2"] and v2["overall"]["vector2"]["document"]["recall@10"] >= 0.9
    assert list((tmp_path / "cache").glob("*.npz")), "vector2's embeddings are cached"
    r = keel_cmd("--data-dir", data, "eval", "retrieval", FIXTURE, "--systems", "bm25", "vector2",
                 "--embed2-endpoint", "http://127.0.0.1:9/v1", "--embed2-model", "none", "--json", tmp_path / "down.json")
    assert r.returncode == 0, r.stdout + r.stderr
    down = json.loads((tmp_path / "down.json").read_text())
    assert down["systems"] == ["bm25"] and "vector2" in down["skipped"]
    # an impossible gate fails the run; an anonymous caller never sees the hr-only salary document
    text = FIXTURE.read_text().replace("metric: mrr, minimum: 0.7}", "metric: mrr, minimum: 1.5}")
    text += "  - {id: anon-band-4, category: leak, query: \"What is the salary range for Band 4?\", judgments: [{path: salary-bands.md, relevance: 3}]}\n"
    (tmp_path / "strict.yaml").write_text(text)
    r = keel_cmd("--data-dir", data, "eval", "retrieval", tmp_path / "strict.yaml", "--json", tmp_path / "s.json")
    assert r.returncode == 1 and "gate hybrid-document-mrr: FAIL" in r.stdout
    rep = json.loads((tmp_path / "s.json").read_text())
    anon = next(c for c in rep["cases"] if c["id"] == "anon-band-4")
    for s in rep["systems"]:
        assert anon["results"][s]["document"]["mrr"] == 0
        assert not any("salary" in d for d in anon["results"][s]["document"]["ranked"])

# ---------------------------------------------------------------- SciFact against ir_measures
def _bench():
    spec = importlib.util.spec_from_file_location("scifact_retrieval", ROOT / "bench" / "scifact_retrieval.py")
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    return m

def _ir_measures(run_file, limit_to):
    import ir_measures
    from ir_measures import nDCG, R, RR
    qrels = {}
    for line in (SCIFACT / "qrels" / "train.tsv").read_text().splitlines()[1:]:
        q, d, s = line.split("\t")
        if q in limit_to: qrels.setdefault(q, {})[d] = int(s)
    return ir_measures.calc_aggregate([nDCG @ 10, R @ 100, RR], qrels, ir_measures.read_trec_run(str(run_file)))

def _agrees(res, out, systems):
    from ir_measures import nDCG, R, RR
    ids = {c.id for c in res.dataset.cases}
    for s in systems:
        assert all(res.ranked[s]["document"][i] for i in ids), f"{s} returned nothing for some query"
        ours, theirs = res.overall(s, "document"), _ir_measures(out / f"{s}.run", ids)
        for mine, m in (("ndcg@10", nDCG @ 10), ("recall@100", R @ 100), ("mrr", RR)):
            assert abs(ours[mine] - theirs[m]) < 5e-5, f"{s} {mine}: ours {ours[mine]:.6f}, ir_measures {theirs[m]:.6f}"

@needs_scifact
@pytest.mark.slow       # the production path ingests (and embeds) all 5,183 abstracts into a fresh data directory first
def test_scifact_bm25_agrees_with_ir_measures(tmp_path):
    res, _ = _bench().run(SCIFACT, limit=150, systems=("bm25",), out=tmp_path / "out", cache=tmp_path / "cache", permutations=200)
    assert len(res.dataset.cases) == 150 and res.systems == ["bm25"]
    assert 0.4 < res.overall("bm25", "document")["ndcg@10"] < 0.9
    _agrees(res, tmp_path / "out", ["bm25"])

@needs_scifact
@pytest.mark.slow
def test_scifact_all_systems_agree_with_ir_measures(tmp_path):
    res, t = _bench().run(SCIFACT, systems=("bm25", "vector", "hybrid"), out=tmp_path / "out", cache=tmp_path / "cache")
    assert res.systems == ["bm25", "vector", "hybrid"] and len(res.dataset.cases) == 809
    _agrees(res, tmp_path / "out", res.systems)
    for s in res.systems: assert res.overall(s, "document")["ndcg@10"] > 0.4
    assert res.overall("hybrid", "document")["recall@100"] >= res.overall("bm25", "document")["recall@100"] - 0.02
