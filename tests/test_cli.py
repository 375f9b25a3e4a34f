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
