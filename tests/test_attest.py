"""Signed evaluation results end to end, as an auditor meets them: keys made, the gate registered, the golden set run
through `keel eval run` on the fixture corpus (extractive, no judge: no language model), the report attested, then
verified with `keel verify-eval` and with `examples/verify_eval.py` under a bare interpreter; each tampering fails with
one line and exit 1."""
import base64, json, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden" / "golden.yaml"
VERIFIER = ROOT / "examples" / "verify_eval.py"


@pytest.fixture(scope="module")
def attested(tmp_path_factory):
    "A data directory, a key pair, a registration, a golden run, its envelope and the ledger export."
    import os, shutil
    d = tmp_path_factory.mktemp("attest")
    exe = shutil.which("keel", path=str(Path(sys.executable).parent)) or "keel"
    env = {**os.environ, "KEEL_DATA_DIR": str(d / "data"), "KEEL_ANSWER_MODE": "extractive"}
    def keel(*a): return subprocess.run([exe, *map(str, a)], capture_output=True, text=True, env=env, timeout=900)
    (d / "gate.yaml").write_text("tolerances: {hit_at_3: 0.05}\n")
    steps = [("keys", "new", "--out", d / "keys"), ("ingest", ROOT / "golden" / "corpus" / "manifest.yaml"),
             ("eval", "preregister", GOLDEN, "--gate", d / "gate.yaml"),
             ("eval", "run", GOLDEN, "--no-judge", "--quiet", "--report-dir", d / "r", "--baseline", d / "none.json")]
    for s in steps:
        r = keel(*s)
        assert r.returncode in (0, 1) and "Traceback" not in r.stderr, (s, r.stdout, r.stderr)
    report = next((d / "r").glob("eval-*.json"))
    r = keel("eval", "attest", report, "--key", d / "keys" / "keel-eval.key", "--out", d / "eval.dsse.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert keel("export-log", d / "ledger.jsonl").returncode == 0
    return dict(dir=d, keel=keel, report=report, env=d / "eval.dsse.json", pub=d / "keys" / "keel-eval.pub")


def _all(a, **over):
    files = dict(report=a["report"], golden=GOLDEN, gate=a["dir"] / "gate.yaml", ledger=a["dir"] / "ledger.jsonl")
    files.update(over)
    return [x for k, v in files.items() if v is not None for x in (f"--{k}", v)]


def verify(a, env=None, pub=None, **over):
    return a["keel"]("verify-eval", env or a["env"], "--pub", pub or a["pub"], *_all(a, **over))


def flipped(a, path, at=-3):
    b = bytearray(Path(path).read_bytes()); b[at] ^= 1
    out = a["dir"] / ("flipped-" + Path(path).name); out.write_bytes(bytes(b)); return out


def failed_once(r, starts):
    fails = [l for l in r.stdout.splitlines() if l.startswith("FAIL")]
    assert r.returncode == 1 and len(fails) == 1 and fails[0].startswith("FAIL  " + starts), r.stdout + r.stderr


def test_round_trip_verifies_with_keel_and_the_stdlib_script(attested):
    r = verify(attested, item=json.loads(attested["report"].read_text())["items"][0]["id"])
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "verified", r.stdout + r.stderr
    assert [l.split()[1] for l in r.stdout.splitlines()[:-1]] == ["signature:", "registration:", "report:", "item:",
                                                                   "golden:", "gate:", "ledger:", "verdict:"]
    s = subprocess.run([sys.executable, "-I", "-S", VERIFIER, attested["env"], "--pub", attested["pub"],
                        *_all(attested)], capture_output=True, text=True)
    assert s.returncode == 0 and s.stdout.splitlines() == r.stdout.splitlines()[:3] + r.stdout.splitlines()[4:], s.stdout + s.stderr


def test_private_key_is_0600_and_nowhere_else(attested):
    key = attested["dir"] / "keys" / "keel-eval.key"
    assert key.stat().st_mode & 0o777 == 0o600
    body = "".join(key.read_text().splitlines()[1:-1])
    for p in (attested["env"], attested["report"], attested["dir"] / "ledger.jsonl"):
        assert body not in p.read_text()


def test_one_byte_changed_in_the_report_fails(attested):
    failed_once(verify(attested, report=flipped(attested, attested["report"])), "report: its SHA-256 differs")


def test_one_byte_changed_in_the_golden_set_fails(attested):
    failed_once(verify(attested, golden=flipped(attested, GOLDEN, 200)), "golden: its SHA-256 differs")


def test_one_byte_changed_in_the_gate_file_fails(attested):
    failed_once(verify(attested, gate=flipped(attested, attested["dir"] / "gate.yaml", 2)), "gate: its SHA-256 differs")


def test_one_byte_changed_in_the_envelope_fails(attested):
    e = json.loads(attested["env"].read_text())
    pl = bytearray(base64.b64decode(e["payload"])); pl[len(pl) // 2] ^= 1
    bad = attested["dir"] / "bad.dsse.json"; bad.write_text(json.dumps({**e, "payload": base64.b64encode(pl).decode()}))
    failed_once(verify(attested, env=bad), "signature:")


def test_resigned_with_another_key_fails(attested):
    d, keel = attested["dir"], attested["keel"]
    assert keel("keys", "new", "--out", d / "other").returncode == 0
    r = keel("eval", "attest", attested["report"], "--key", d / "other" / "keel-eval.key", "--out", d / "other.dsse.json")
    assert r.returncode == 0, r.stderr
    failed_once(verify(attested, env=d / "other.dsse.json", ledger=None), "signature: no signature verifies")


def test_ledger_rebuilt_without_the_key_fails(attested):
    from keel.safety.ledger import row_hash
    prev, rows = "0" * 64, []
    for l in (attested["dir"] / "ledger.jsonl").read_text().splitlines():
        r = json.loads(l)
        if r["kind"] == "eval_preregistration":   # the registration moved earlier, every hash recomputed
            r["ts"] = "2020-01-01T00:00:00.000Z"; r["payload"]["_ts"] = r["ts"]
        r["prev_hash"] = prev; r["hash"] = prev = row_hash(prev, r["kind"], r["request_id"], r["payload"])
        rows.append(json.dumps(r))
    forged = attested["dir"] / "forged.jsonl"; forged.write_text("\n".join(rows) + "\n")
    failed_once(verify(attested, ledger=forged), "ledger: row")


def test_registration_after_the_run_is_refused(attested):
    d, keel = attested["dir"], attested["keel"]
    r = keel("eval", "preregister", GOLDEN, "--gate", d / "gate.yaml")
    seq = int(r.stdout.split("ledger row ")[1].split()[0])
    r = keel("eval", "attest", attested["report"], "--key", d / "keys" / "keel-eval.key", "--out", d / "late.dsse.json",
             "--registration", seq)
    assert r.returncode == 1 and "is not before the run" in r.stderr and not (d / "late.dsse.json").exists(), r.stderr


def test_gate_changed_after_registration_is_refused(attested):
    d, rep = attested["dir"], json.loads(attested["report"].read_text())
    rep["gate"]["thresholds"]["hit_at_3"] = 0.5
    (d / "regated.json").write_text(json.dumps(rep))
    r = attested["keel"]("eval", "attest", d / "regated.json", "--key", d / "keys" / "keel-eval.key")
    assert r.returncode == 1 and "gate differs from the registered one: tolerance hit_at_3" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_disclosed_item_with_a_wrong_path_fails(attested):
    d, keel = attested["dir"], attested["keel"]
    iid = json.loads(attested["report"].read_text())["items"][1]["id"]
    assert keel("eval", "attest", attested["report"], "--key", d / "keys" / "keel-eval.key", "--disclose", iid,
                "--out", d / "item.json").returncode == 0
    ok = keel("verify-eval", attested["env"], "--pub", attested["pub"], "--disclosure", d / "item.json")
    assert ok.returncode == 0 and f"disclosure: item {iid} is in the signed results" in ok.stdout, ok.stdout + ok.stderr
    disc = json.loads((d / "item.json").read_text()); disc["item"]["answer"] = "a better answer"
    (d / "item-edited.json").write_text(json.dumps(disc))
    failed_once(keel("verify-eval", attested["env"], "--pub", attested["pub"], "--disclosure", d / "item-edited.json"),
                "disclosure:")


def test_statement_matches_its_schema(attested):
    import jsonschema
    schema = json.loads((ROOT / "schemas" / "eval-attestation.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    st = json.loads(base64.b64decode(json.loads(attested["env"].read_text())["payload"]))
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(st)
    st["predicate"]["items"]["merkle_root"] = "not hex"
    with pytest.raises(jsonschema.ValidationError): jsonschema.validate(st, schema)
