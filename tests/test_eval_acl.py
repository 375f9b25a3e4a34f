"""`keel eval acl` as an engineer runs it: the fixture corpus probed for every persona without access to its
restricted document, clean and with faults seeded in the deployment's SQLite (a chunk whose tags were dropped, a
document re-tagged without its chunks and index). The answer-engine faults (a cache shared across users, evidence
quoting a restricted neighbour) wrap the real engine and are checked in nbs/64_evals_acl.ipynb."""
import json, sqlite3
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "golden" / "corpus" / "manifest.yaml"
ENV = {"KEEL_ANSWER_MODE": "extractive"}


@pytest.fixture
def deployment(tmp_path, keel_cmd):
    data = tmp_path / "data"
    r = keel_cmd("--data-dir", data, "ingest", MANIFEST, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    return data


def test_clean_corpus_every_pair_probed_no_leak(deployment, keel_cmd, tmp_path):
    r = keel_cmd("--data-dir", deployment, "eval", "acl", "--golden", ROOT / "golden" / "golden.yaml",
                 "--report-dir", tmp_path / "reports", env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 restricted documents x 3 personas: 2/2 pairs probed (100%), 12 probes" in r.stdout, r.stdout
    assert "acl: passed (0 leaks at retrieval, citations and answer)" in r.stdout
    report = json.loads((tmp_path / "reports" / "latest-acl.json").read_text())
    assert report["kind"] == "keel-eval-acl" and report["passed"] and report["coverage"]["share"] == 1.0
    assert {(m["persona"], m["doc_tags"]) for m in report["matrix"]} == {("(no tags)", "hr"), ("public", "hr")}
    assert all(m["retrieval"] == m["citations"] == m["answer"] == 0 for m in report["matrix"])
    assert (tmp_path / "reports" / "latest-acl.html").exists() and (tmp_path / "reports" / "latest-acl.md").exists()


@pytest.mark.parametrize("fault, sql", [
    ("a chunk's tags dropped", "UPDATE chunks SET acl_tags = '[\"public\"]' WHERE id = (SELECT c.id FROM chunks c JOIN "
                               "documents d ON d.id = c.document_id WHERE d.title LIKE 'Salary%' ORDER BY c.ord LIMIT 1)"),
    ("a document re-tagged, its index not", "UPDATE documents SET acl_tags = '[\"finance\"]' WHERE title LIKE 'Supplier%'"),
])
def test_seeded_fault_is_found_at_retrieval(deployment, keel_cmd, fault, sql):
    con = sqlite3.connect(deployment / "keel.db"); con.execute(sql); con.commit(); con.close()
    r = keel_cmd("--data-dir", deployment, "eval", "acl", "--format", "json", env=ENV)
    assert r.returncode == 1, (fault, r.stdout[-2000:], r.stderr)
    out = json.loads(r.stdout)
    assert not out["passed"] and out["leaks"]["retrieval"] > 0, (fault, out["leaks"])
    text = keel_cmd("--data-dir", deployment, "eval", "acl", env=ENV).stdout
    assert "LEAK at retrieval: public asked" in text and "acl: FAILED:" in text, text


def test_personas_file_and_bad_input(deployment, keel_cmd, tmp_path):
    p = tmp_path / "personas.yaml"
    p.write_text("personas:\n  - [finance]\n  - [hr]\n")
    r = keel_cmd("--data-dir", deployment, "eval", "acl", "--personas", p, env=ENV)
    assert r.returncode == 0 and "x 2 personas: 1/1 pairs probed" in r.stdout, r.stdout + r.stderr
    p.write_text("personas: everyone\n")
    r = keel_cmd("--data-dir", deployment, "eval", "acl", "--personas", p, env=ENV)
    assert r.returncode == 2 and "lists of tags" in r.stderr and "Traceback" not in r.stderr
    r = keel_cmd("--data-dir", deployment, "eval", "acl", "--probes-per-doc", "0", env=ENV)
    assert r.returncode == 2 and "--probes-per-doc" in r.stderr
