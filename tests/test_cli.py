"""The `keel` command as an operator meets it: instant help, documented exit codes, one-line errors."""
import time

def test_help_is_instant_and_lists_commands(keel_cmd):
    t = time.perf_counter()
    r = keel_cmd("--help")
    assert r.returncode == 0
    for c in ("status", "ingest", "ask", "verify-ledger", "export-log", "eval"):
        assert c in r.stdout
    assert "exit codes" in r.stdout
    assert time.perf_counter() - t < 10   # generous: the point is that no model is imported

def test_no_command_is_a_usage_error(keel_cmd):
    assert keel_cmd().returncode == 2

def test_bad_setting_is_one_line_exit_2(keel_cmd, tmp_path):
    r = keel_cmd("--data-dir", tmp_path, "verify-ledger", env={"KEEL_TOP_K_FINAL": "six"})
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "KEEL_TOP_K_FINAL" in r.stderr and "Traceback" not in r.stderr

def test_unknown_setting_names_the_variable(keel_cmd, tmp_path):
    r = keel_cmd("--data-dir", tmp_path, "verify-ledger", env={"KEEL_CHUNKSIZE": "500"})
    assert r.returncode == 2 and "unknown setting KEEL_CHUNKSIZE" in r.stderr

def test_fresh_data_dir_has_an_intact_empty_ledger(keel_cmd, tmp_path):
    r = keel_cmd("--data-dir", tmp_path / "d", "verify-ledger")
    assert r.returncode == 0, r.stderr
    assert "intact" in r.stdout and (tmp_path / "d" / "keel.db").exists()

def test_corrupt_database_is_a_clear_error(keel_cmd, tmp_path):
    (tmp_path / "keel.db").write_bytes(b"not a database" * 200)
    r = keel_cmd("--data-dir", tmp_path, "verify-ledger")
    assert r.returncode == 1 and "cannot open" in r.stderr and "Traceback" not in r.stderr

def test_quarantine_list_and_release_is_recorded(keel_cmd, tmp_path):
    from pathlib import Path
    note = Path(__file__).resolve().parent.parent / "golden" / "corpus" / "supplier-note.txt"
    d = tmp_path / "d"
    r = keel_cmd("--data-dir", d, "ingest", note, "--tags", "public")
    assert r.returncode == 0, r.stderr
    assert "quarantined" in r.stdout
    r = keel_cmd("--data-dir", d, "quarantine", "list")
    assert r.returncode == 0 and "1 quarantined chunk(s)" in r.stdout and "instruction_override" in r.stdout
    cid = int(r.stdout.split()[0])
    r = keel_cmd("--data-dir", d, "quarantine", "release", cid, "--admin", "ines")
    assert r.returncode == 2 and "--reason" in r.stderr
    r = keel_cmd("--data-dir", d, "quarantine", "release", cid, "--admin", "ines", "--reason", "reviewed")
    assert r.returncode == 0 and f"released chunk {cid}" in r.stdout
    r = keel_cmd("--data-dir", d, "quarantine", "release", cid, "--admin", "ines", "--reason", "again")
    assert r.returncode == 2 and "not quarantined" in r.stderr
    r = keel_cmd("--data-dir", d, "verify-ledger")
    assert r.returncode == 0 and "intact" in r.stdout
