"""End-to-end tests of the tamper-evident ledger: mutations, truncation, export, concurrent writers."""
import ast, json, random, subprocess, sys, multiprocessing as mp
from pathlib import Path
import pytest
from keel.db import connect, transaction
from keel.safety.ledger import (Ledger, LedgerCheck, GENESIS, row_hash, canonical, verify_file,
                                standalone_verifier, verify_ledger_cli)

N = 2000

def _fill(path, n):
    con = connect(path); led = Ledger(con)
    with transaction(con):
        for i in range(n):
            led.append(random.Random(i).choice(["answer", "ingest", "tool_call"]), f"req-{i}",
                       {"i": i, "user": "ana", "text": f"question {i} — café", "ids": [i, i + 1]})
    return con, led

@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    d = tmp_path_factory.mktemp("ledger")
    con, led = _fill(d / "keel.db", N)
    yield con, led, d
    con.close()

def _shift(con, k, by):
    "Renumber rows with seq >= k by `by`, in two steps so the primary key never collides."
    con.execute("UPDATE ledger SET seq = -(seq + ?) WHERE seq >= ?", (by, k))
    con.execute("UPDATE ledger SET seq = -seq WHERE seq < 0")

def _row(con, k): return con.execute("SELECT * FROM ledger WHERE seq=?", (k,)).fetchone()

# Each mutation edits the table and returns the seq that verify must name.
def m_payload(con, k):
    p = json.loads(_row(con, k)["payload"]); p["user"] = "mallory"
    con.execute("UPDATE ledger SET payload=? WHERE seq=?", (canonical(p), k)); return k
def m_kind(con, k): con.execute("UPDATE ledger SET kind='forged' WHERE seq=?", (k,)); return k
def m_request(con, k): con.execute("UPDATE ledger SET request_id='req-x' WHERE seq=?", (k,)); return k
def m_hash(con, k): con.execute("UPDATE ledger SET hash=? WHERE seq=?", ("f" * 64, k)); return k
def m_ts(con, k): con.execute("UPDATE ledger SET ts='2000-01-01T00:00:00.000Z' WHERE seq=?", (k,)); return k
def m_delete(con, k): con.execute("DELETE FROM ledger WHERE seq=?", (k,)); return k
def m_delete_renumber(con, k):
    con.execute("DELETE FROM ledger WHERE seq=?", (k,)); _shift(con, k + 1, -1); return k
def m_insert_forged(con, k):
    "A well-formed forged row (right prev_hash, valid hash) at k: the break shows at the next row."
    prev = _row(con, k - 1)["hash"] if k > 1 else GENESIS
    p = {"i": -1, "_ts": "2026-01-01T00:00:00.000Z"}
    _shift(con, k, 1)
    con.execute("INSERT INTO ledger VALUES (?,?,?,?,?,?,?)", (k, p["_ts"], "answer", "req-forged", canonical(p), prev, row_hash(prev, "answer", "req-forged", p)))
    return k + 1
def m_insert_naive(con, k):
    _shift(con, k, 1)
    con.execute("INSERT INTO ledger VALUES (?,?,?,?,?,?,?)", (k, "t", "answer", "r", "{}", "0" * 64, "0" * 64)); return k
def m_reorder(con, k):
    a, b = _row(con, k), _row(con, k + 1)
    for seq, r in ((k, b), (k + 1, a)):
        con.execute("UPDATE ledger SET ts=?, kind=?, request_id=?, payload=?, prev_hash=?, hash=? WHERE seq=?",
                    (r["ts"], r["kind"], r["request_id"], r["payload"], r["prev_hash"], r["hash"], seq))
    return k

MUTATIONS = [m_payload, m_kind, m_request, m_hash, m_ts, m_delete, m_delete_renumber, m_insert_forged, m_insert_naive, m_reorder]

def _check_mutation(con, led, tmp, mut, k):
    con.execute("BEGIN")
    try:
        want = mut(con, k)
        got = led.verify()
        assert (got.ok, got.first_bad_seq) == (False, want), f"{mut.__name__} at {k}: {got}"
        out = tmp / "mut.jsonl"; led.export(out)
        got_f = verify_file(out)
        assert (got_f.ok, got_f.first_bad_seq) == (False, want), f"{mut.__name__} at {k} (file): {got_f}"
    finally:
        con.execute("ROLLBACK")

def _positions(n, sample):
    "First rows, last rows, and a seeded sample in between; all need a following row."
    pos = {1, 2, n // 2, n - 1} | set(random.Random(7).sample(range(2, n - 1), sample))
    return sorted(pos)

def test_intact(chain):
    con, led, d = chain
    assert led.verify() == LedgerCheck(True, N)
    assert led.export(d / "all.jsonl") == N
    assert verify_file(d / "all.jsonl", led.head()) == LedgerCheck(True, N)
    assert verify_ledger_cli(con)[0] == 0

@pytest.mark.parametrize("mut", MUTATIONS, ids=lambda m: m.__name__[2:])
def test_every_single_row_mutation_is_named(chain, mut):
    con, led, d = chain
    for k in _positions(N, 4):
        _check_mutation(con, led, d, mut, k)
    assert led.verify().ok  # every mutation was rolled back

def test_edits_of_the_last_row(chain):
    con, led, d = chain
    for mut in (m_payload, m_kind, m_request, m_hash, m_ts):
        _check_mutation(con, led, d, mut, N)

def test_truncation_needs_and_uses_a_recorded_head(chain):
    con, led, d = chain
    head = led.head()
    con.execute("BEGIN")
    try:
        con.execute("DELETE FROM ledger WHERE seq > ?", (N - 5,))
        assert led.verify().ok, "a cut tail is a valid shorter chain on its own"
        c = led.verify(head)
        assert (c.ok, c.first_bad_seq) == (False, N - 4) and "truncated" in c.reason
        led.export(d / "cut.jsonl")
        c = verify_file(d / "cut.jsonl", head)
        assert (c.ok, c.first_bad_seq) == (False, N - 4)
        code, msg = verify_ledger_cli(con, f"{head[0]}:{head[1]}")
        assert code == 1 and "truncated" in msg
        # a rewritten tail (valid chain, different last row) is also caught by the head
        prev = _row(con, N - 5)["hash"]
        for s in range(N - 4, N + 1):
            p = {"i": s, "_ts": "t"}; h = row_hash(prev, "answer", "r", p)
            con.execute("INSERT INTO ledger VALUES (?,?,?,?,?,?,?)", (s, "t", "answer", "r", canonical(p), prev, h)); prev = h
        assert led.verify().ok
        c = led.verify(head)
        assert (c.ok, c.first_bad_seq) == (False, N)
    finally:
        con.execute("ROLLBACK")

def test_file_level_edits(chain):
    con, led, d = chain
    out = d / "lines.jsonl"; led.export(out)
    lines = out.read_text(encoding="utf-8").splitlines()
    cases = {
        "swap": (lines[:99] + [lines[100], lines[99]] + lines[101:], 100),
        "drop": (lines[:499] + lines[500:], 500),
        "duplicate": (lines[:700] + [lines[699]] + lines[700:], 701),
        "garbage": (lines[:9] + ["{not json"] + lines[10:], 10),
        "edit": (lines[:41] + [lines[41].replace("ana", "eve")] + lines[42:], 42),
    }
    for name, (ls, want) in cases.items():
        bad = d / f"{name}.jsonl"; bad.write_text("\n".join(ls) + "\n", encoding="utf-8")
        c = verify_file(bad)
        assert (c.ok, c.first_bad_seq) == (False, want), f"{name}: {c}"

def test_standalone_verifier_needs_only_the_standard_library(chain, tmp_path):
    con, led, d = chain
    script = tmp_path / "verify_ledger.py"; script.write_text(standalone_verifier())
    out = tmp_path / "l.jsonl"; led.export(out)
    s, h = led.head()
    # -S: no site-packages (so neither keel nor any third-party package), -I: isolated from the environment
    r = subprocess.run([sys.executable, "-S", "-I", str(script), str(out), f"{s}:{h}"], capture_output=True, text=True)
    assert (r.returncode, r.stdout.strip()) == (0, f"ok {N} rows"), r.stderr
    lines = out.read_text(encoding="utf-8").splitlines(); lines[1233] = lines[1233].replace("req-1233", "req-9999")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-S", "-I", str(script), str(out)], capture_output=True, text=True)
    assert r.returncode == 1 and "row 1234" in r.stdout, r.stdout + r.stderr
    tree = ast.parse(standalone_verifier())
    mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert mods == {"json", "hashlib", "typing", "sys"}, mods

@pytest.mark.slow
@pytest.mark.parametrize("mut", MUTATIONS, ids=lambda m: m.__name__[2:])
def test_exhaustive_mutation_sweep(tmp_path, mut):
    n = 400
    con, led = _fill(tmp_path / "keel.db", n)
    for k in range(1, n):
        _check_mutation(con, led, tmp_path, mut, k)
    con.close()

def _writer(path, worker, n):
    led = Ledger(connect(path))
    for j in range(n):
        led.append("tool_call", f"w{worker}-{j}", {"worker": worker, "j": j})
    led.con.close()

def test_four_processes_make_one_chain(tmp_path):
    path = tmp_path / "keel.db"; connect(path).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 500)) for w in range(4)]
    for p in procs: p.start()
    for p in procs: p.join(300)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    con = connect(path); led = Ledger(con)
    assert led.verify() == LedgerCheck(True, 2000)
    rows = con.execute("SELECT request_id FROM ledger").fetchall()
    assert len({r[0] for r in rows}) == 2000
    for w in range(4):  # each worker's rows appear in its own order
        js = [json.loads(r[0])["j"] for r in con.execute("SELECT payload FROM ledger WHERE request_id LIKE ? ORDER BY seq", (f"w{w}-%",))]
        assert js == list(range(500))
    led.export(tmp_path / "l.jsonl")
    assert verify_file(tmp_path / "l.jsonl", led.head()).ok
    con.close()
