"""Identifiers where Keel stores them, end to end through the `keel` command: a question carrying a
tax file number is answered, and the ledger, the inference log and both exports hold it redacted
(or as a keyed digest, or verbatim, as KEEL_PII_MODE says), while the ledger still verifies."""
import json, re
from pathlib import Path
import pytest
from keel.safety.ledger import verify_file

TFN = "123 456 782"
DOC = """# Leave policy

Annual leave accrues at four weeks per year of service. Leave requests go to the team lead, who
answers within five working days. Payroll questions go to payroll@example.org or 0412 345 678.
"""
QUESTION = f"My TFN is {TFN}. How many weeks of annual leave accrue per year?"

@pytest.fixture
def deployment(keel_cmd, tmp_path):
    "A data directory with one ingested document, answering extractively (no LLM needed)."
    (tmp_path / "leave.md").write_text(DOC, encoding="utf-8")
    d = tmp_path / "d"
    r = keel_cmd("--data-dir", d, "ingest", tmp_path / "leave.md", "--tags", "public")
    assert r.returncode == 0, r.stderr
    assert "identifiers: phone 1, email 1" in r.stdout, r.stdout
    return d

def _ask_and_export(keel_cmd, d, tmp_path, mode, question=QUESTION):
    env = {"KEEL_ANSWER_MODE": "extractive", "KEEL_PII_MODE": mode}
    r = keel_cmd("--data-dir", d, "ask", question, "--user", "jo", env=env)
    assert r.returncode == 0, r.stderr   # answered or refused: either way the request is recorded
    r = keel_cmd("--data-dir", d, "export-log", tmp_path / "ledger.jsonl", "--inference", tmp_path / "log.jsonl", env=env)
    assert r.returncode == 0, r.stderr
    assert "inference-log rows" in r.stdout
    ledger = [json.loads(l) for l in (tmp_path / "ledger.jsonl").read_text(encoding="utf-8").splitlines()]
    log = [json.loads(l) for l in (tmp_path / "log.jsonl").read_text(encoding="utf-8").splitlines()]
    return ledger, log

def _digits_free(text):
    "Whether the TFN appears in `text` in any spelling (spaced, unspaced, hyphenated)."
    return "123456782" not in re.sub(r"[\s\-.]", "", text)

def test_tfn_in_a_question_is_redacted_in_ledger_log_and_exports(keel_cmd, deployment, tmp_path):
    ledger, log = _ask_and_export(keel_cmd, deployment, tmp_path, "redact")
    request = next(r for r in ledger if r["kind"] == "request")
    assert request["payload"]["question"] == "My TFN is [TFN]. How many weeks of annual leave accrue per year?"
    assert request["payload"]["user"] == "jo"
    assert log[-1]["question"] == request["payload"]["question"] and log[-1]["user"] == "jo"
    for f in ("ledger.jsonl", "log.jsonl"):
        assert _digits_free((tmp_path / f).read_text(encoding="utf-8")), f
    import sqlite3
    con = sqlite3.connect(deployment / "keel.db")
    stored = " ".join(str(x) for t in ("ledger", "inference_log") for row in con.execute(f"SELECT * FROM {t}") for x in row)
    con.close()
    assert _digits_free(stored)
    assert verify_file(tmp_path / "ledger.jsonl").ok
    r = keel_cmd("--data-dir", deployment, "verify-ledger")
    assert r.returncode == 0 and "intact" in r.stdout

def test_hash_mode_links_one_number_written_two_ways(keel_cmd, deployment, tmp_path):
    _ask_and_export(keel_cmd, deployment, tmp_path, "hash")
    ledger, log = _ask_and_export(keel_cmd, deployment, tmp_path, "hash", question=QUESTION.replace(TFN, "123-456-782"))
    qs = [r["payload"]["question"] for r in ledger if r["kind"] == "request"]
    tags = [re.search(r"\[TFN:[0-9a-f]{12}\]", q).group() for q in qs]
    assert len(tags) == 2 and tags[0] == tags[1], qs
    assert _digits_free((tmp_path / "ledger.jsonl").read_text(encoding="utf-8"))
    assert verify_file(tmp_path / "ledger.jsonl").ok

def test_keep_mode_stores_the_question_as_asked(keel_cmd, deployment, tmp_path):
    ledger, log = _ask_and_export(keel_cmd, deployment, tmp_path, "keep")
    assert [r["payload"]["question"] for r in ledger if r["kind"] == "request"] == [QUESTION]
    assert log[-1]["question"] == QUESTION

def test_an_unknown_mode_is_a_setting_error(keel_cmd, tmp_path):
    r = keel_cmd("--data-dir", tmp_path / "d", "verify-ledger", env={"KEEL_PII_MODE": "mask"})
    assert r.returncode == 2 and "KEEL_PII_MODE" in r.stderr
