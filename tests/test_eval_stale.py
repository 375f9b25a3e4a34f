"""End-to-end tests of `keel eval stale`: a knowledge base under git changes, the index does or does not follow.

The documents are ingested with `keel ingest` into a fresh data directory, edited in the working tree, and probed
with the installed `keel` command in extractive answer mode (no language model), against the git base (`--base`)
and against an earlier `keel eval run` report (`--since`).
"""
import json, subprocess
from pathlib import Path
import pytest
import yaml
from keel.evals.golden import load_golden

POLICY = """# Purchasing Policy

## Quotes

Purchases from $10,000 to $100,000 need three written quotes from different suppliers.

## Cards

A corporate purchasing card may be used for single transactions up to $5,000.

## Records

Purchase records are kept for 7 years after the contract ends, in the council records system.
"""
NOTE = """# Supplier Note

## Furniture

Furniture orders from $10,000 to $100,000 need three written quotes from different suppliers, as the purchasing
policy says.
"""
EDITED = (POLICY.replace("three written", "two written").replace("$5,000", "$3,000")
          .replace("kept for 7 years", "kept for 10 years"))

def git(repo, *a): subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)

@pytest.fixture
def kb(tmp_path, keel_cmd):
    "A knowledge base under git, ingested as it was committed; returns (folder, run keel with the data dir)."
    kb = tmp_path/"kb"; kb.mkdir()
    (kb/"policy.md").write_text(POLICY); (kb/"supplier-note.md").write_text(NOTE)
    git(kb, "init", "-q"); git(kb, "add", "."); git(kb, "-c", "user.name=t", "-c", "user.email=t@example.org",
                                                 "commit", "-qm", "v1")
    run = lambda *a: keel_cmd("--data-dir", tmp_path/"data", *a, env={"KEEL_ANSWER_MODE": "extractive"})
    r = run("ingest", kb/"policy.md", kb/"supplier-note.md")
    assert r.returncode == 0, r.stderr
    return kb, run

def test_stale_until_every_document_is_reingested(kb, tmp_path):
    kb, run = kb
    (kb/"policy.md").write_text(EDITED)
    r = run("eval", "stale", kb, "--base", "HEAD", "--json", tmp_path/"a.json", "--report-dir", tmp_path/"reports")
    assert r.returncode == 1, r.stdout + r.stderr
    latest = json.loads((tmp_path/"reports"/"latest-stale.json").read_text())
    assert latest["stamp"] == json.loads((tmp_path/"a.json").read_text())["stamp"]
    rep = json.loads((tmp_path/"a.json").read_text())
    assert rep["kind"] == "keel-eval-stale" and rep["summary"]["probes"] == 3
    assert rep["summary"]["stale"] == 3 and rep["summary"]["flagged"] == 3
    assert {i["kind"] for i in rep["items"]} == {"figure"}
    assert all(any(s["kind"] == "chunk" for s in i["stale_from"]) for i in rep["items"])
    assert "a chunk still indexed from an older version of Purchasing Policy" in r.stdout
    assert "re-ingest policy.md" in r.stdout

    assert run("ingest", kb/"policy.md").returncode == 0
    r = run("eval", "stale", kb, "--base", "HEAD", "--json", tmp_path/"b.json")
    rep = json.loads((tmp_path/"b.json").read_text())
    assert rep["summary"]["updated"] >= 2
    named = {x["title"] for i in rep["items"] for x in i["still_stated_by"] if not x["same_document"]}
    assert named == {"Supplier Note"}                                  # the second document is named
    assert "Supplier Note still says 'three'" in r.stdout
    stale = [i for i in rep["items"] if i["outcome"] == "stale"]
    assert all(s["title"] == "Supplier Note" for i in stale for s in i["stale_from"])
    assert r.returncode == (1 if stale else 0)

    (kb/"supplier-note.md").write_text(NOTE.replace("three written", "two written"))
    assert run("ingest", kb/"supplier-note.md").returncode == 0
    r = run("eval", "stale", kb, "--base", "HEAD", "--json", tmp_path/"c.json", "--write", tmp_path/"g.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((tmp_path/"c.json").read_text())
    assert rep["summary"]["stale"] == 0 and rep["summary"]["stale_rate"] == 0
    items = load_golden(tmp_path/"g.yaml")
    assert len(items) == rep["summary"]["probes"] == 4
    two = next(i for i in items if i.must_include == ("two",) and "Purchasing" in i.question)
    assert two.must_not_include == ("three",) and two.category == "stale"
    assert two.expected_sources[0].document == "Purchasing Policy"

def test_written_probes_run_as_golden_items(kb, tmp_path):
    "The probes written as golden items fail `keel eval run` on must_not_include exactly where an answer is stale."
    kb, run = kb
    (kb/"policy.md").write_text(EDITED)
    assert run("ingest", kb/"policy.md").returncode == 0
    run("eval", "stale", kb, "--base", "HEAD", "--write", tmp_path/"g.yaml", "--json", tmp_path/"s.json")
    stale = {i["id"] for i in json.loads((tmp_path/"s.json").read_text())["items"] if i["outcome"] == "stale"}
    r = run("eval", "run", tmp_path/"g.yaml", "--no-judge", "--report-dir", tmp_path/"reports", "--quiet")
    assert r.returncode in (0, 1), r.stderr
    rows = json.loads((tmp_path/"reports"/"latest.json").read_text())["items"]
    assert len(rows) == 3 and stale          # the supplier note still says three: that probe is stale
    assert {i["id"] for i in rows if i["must_not_include_pass"] == 0} == stale

def test_since_a_report_reads_the_old_text_from_the_index(kb, tmp_path):
    kb, run = kb
    g = tmp_path/"golden.yaml"
    g.write_text(yaml.safe_dump({"version": 1, "items": [dict(id="q1", question="How many quotes do purchases need?",
                                 user_tags=["public"], expected_answer="Three written quotes.",
                                 expected_sources=["Purchasing Policy"])]}))
    r = run("eval", "run", g, "--no-judge", "--report-dir", tmp_path/"reports", "--quiet")
    assert r.returncode in (0, 1), r.stderr
    (kb/"policy.md").write_text(EDITED)            # edited, not re-ingested: the index holds the reported version
    r = run("eval", "stale", kb, "--since", tmp_path/"reports"/"latest.json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "3 changed facts in 1 document since" in r.stdout and "stale 3" in r.stdout

@pytest.mark.parametrize("args,says", [
    ((), "one of the arguments --base --since is required"),
    (("--base", "no-such-revision"), "is not a commit"),
    (("--since", "nothing.json"), "cannot read the --since report"),
    (("--base", "HEAD", "--max-stale", "-1"), "--max-stale must be 0 or more"),
])
def test_bad_input_is_one_line_and_exit_2(kb, tmp_path, args, says):
    kb, run = kb
    r = run("eval", "stale", kb, *[tmp_path/a if a.endswith(".json") else a for a in args])
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr

def test_not_a_folder(kb, tmp_path):
    _, run = kb
    r = run("eval", "stale", tmp_path/"missing", "--base", "HEAD")
    assert r.returncode == 2 and "is not a folder" in r.stderr and "Traceback" not in r.stderr

@pytest.mark.slow
def test_generative_answers_keep_the_contract(kb, tmp_path, keel_cmd):
    "With the deployment's own model answering, every probe has an outcome and every stale answer a source."
    kb, _ = kb
    (kb/"policy.md").write_text(EDITED)
    r = keel_cmd("--data-dir", tmp_path/"data", "eval", "stale", kb, "--base", "HEAD", "--answer-mode", "generative",
                 "--json", tmp_path/"g.json", timeout=1800)
    assert r.returncode in (0, 1), r.stderr
    rep = json.loads((tmp_path/"g.json").read_text())
    assert rep["summary"]["probes"] == 3
    assert all(i["outcome"] in ("stale", "updated", "missed", "refused") for i in rep["items"])
    assert all(i["stale_from"] for i in rep["items"] if i["outcome"] == "stale")
    assert r.returncode == (1 if rep["summary"]["stale"] else 0)
