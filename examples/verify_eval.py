"""Verify a signed Keel evaluation result with the Python standard library alone.

Generated from keel.evals.attest by `standalone_verifier()`; do not edit.
"""
import base64, datetime as dt, hashlib, json, sys
from typing import NamedTuple

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)
_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://keel-project.github.io/keel/eval-result/v1"

def canonical(obj) -> str:
    "Canonical JSON: sorted keys, no spaces, UTF-8 characters kept, NaN and infinity refused."
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)

def row_hash(prev_hash:str, # the previous row's hash, or GENESIS
             kind:str, request_id:str, payload:dict) -> str:
    "SHA-256 over the canonical JSON of `[prev_hash, kind, request_id, payload]`."
    return hashlib.sha256(canonical([prev_hash, kind, request_id, payload]).encode("utf-8")).hexdigest()

class LedgerCheck(NamedTuple):
    "The outcome of a ledger check: ok, rows read, the first bad row and why."
    ok: bool
    rows: int
    first_bad_seq: "int|None" = None
    reason: str = ""

def _bad(n, seq, why): return LedgerCheck(False, n, seq, f"row {seq}: {why}")

def check_rows(rows:"Iterable[dict]", # in file or table order: seq, ts, kind, request_id, payload, prev_hash, hash
               head:"tuple[int, str]|None"=None # a (seq, hash) recorded earlier; the chain must still contain it
              ) -> LedgerCheck:
    "Recompute a hash chain and return where it first breaks."
    prev, expect, n, head_hash = "0" * 64, 1, 0, None
    for r in rows:
        n += 1
        if not isinstance(r, dict) or "_error" in r:
            return _bad(n, expect, (r or {}).get("_error", "not a JSON object"))
        missing = [k for k in ("seq", "ts", "kind", "request_id", "payload", "prev_hash", "hash") if k not in r]
        if missing: return _bad(n, expect, f"lacks field(s) {', '.join(missing)}")
        seq = r["seq"]
        if seq != expect:
            if isinstance(seq, int) and seq > expect:
                return _bad(n, expect, f"is missing (the next row is {seq}): deleted, or rows out of order")
            return _bad(n, expect, f"expected here, found row {seq!r}: rows inserted, duplicated or out of order")
        if r["prev_hash"] != prev:
            return _bad(n, seq,
                        "does not chain from the row before it (prev_hash mismatch): a row was inserted, deleted or "
                        "moved")
        p = r["payload"]
        if not isinstance(p, dict): return _bad(n, seq, "payload is not a JSON object")
        try: h = row_hash(r["prev_hash"], r["kind"], r["request_id"], p)
        except (TypeError, ValueError) as e: return _bad(n, seq, f"cannot be hashed: {e}")
        if h != r["hash"]:
            return _bad(n, seq,
                        "contents do not match its hash: kind, request id or payload edited, or the hash altered")
        if "_ts" in p and p["_ts"] != r["ts"]:
            return _bad(n, seq, f"ts {r['ts']!r} differs from the hashed time {p['_ts']!r}")
        if head and seq == head[0]: head_hash = r["hash"]
        prev, expect = r["hash"], expect + 1
    if head and head[0] > 0:
        if head[0] >= expect:
            return LedgerCheck(False, n, expect,
                               f"truncated: the ledger ends at row {expect - 1} but the recorded head is row {head[0]}")
        if head_hash != head[1]:
            return LedgerCheck(False, n, head[0], f"row {head[0]}: hash differs from the recorded head")
    return LedgerCheck(True, n, None, "")

def _ed_add(a, b):
    "Sum of two points in extended coordinates (X, Y, Z, T)."
    A, B = (a[1] - a[0]) * (b[1] - b[0]) % _P, (a[1] + a[0]) * (b[1] + b[0]) % _P
    C, D = 2 * a[3] * b[3] * _D % _P, 2 * a[2] * b[2] % _P
    E, F, G, H = B - A, D - C, D + C, B + A
    return (E * F % _P, G * H % _P, F * G % _P, E * H % _P)

def _ed_mul(s:int, p):
    "s·p by double-and-add."
    q = (0, 1, 1, 0)
    while s:
        if s & 1: q = _ed_add(q, p)
        p, s = _ed_add(p, p), s >> 1
    return q

def _ed_decode(b:bytes):
    "A point from its 32-byte encoding, or None when it is not on the curve."
    y = int.from_bytes(b, "little"); sign, y = y >> 255, y & ((1 << 255) - 1)
    if y >= _P: return None
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    if x2 == 0: return None if sign else (0, y, 1, 0)
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P: x = x * _SQRT_M1 % _P
    if (x * x - x2) % _P: return None
    if x & 1 != sign: x = _P - x
    return (x, y, 1, x * y % _P)

_G = _ed_decode((4 * pow(5, _P - 2, _P) % _P).to_bytes(32, "little"))

def ed25519_verify(public:bytes, # the 32-byte public key
                   message:bytes, signature:bytes) -> bool:
    "Whether `signature` is a valid Ed25519 signature of `message` under `public` (RFC 8032 §5.1.7)."
    if len(public) != 32 or len(signature) != 64: return False
    A, R, s = _ed_decode(public), _ed_decode(signature[:32]), int.from_bytes(signature[32:], "little")
    if A is None or R is None or s >= _L: return False
    h = int.from_bytes(hashlib.sha512(signature[:32] + public + message).digest(), "little") % _L
    l, r = _ed_mul(s, _G), _ed_add(R, _ed_mul(h, A))
    return (l[0] * r[2] - r[0] * l[2]) % _P == 0 and (l[1] * r[2] - r[1] * l[2]) % _P == 0

def public_key_bytes(pem:bytes|str) -> bytes:
    "The raw 32-byte Ed25519 key of a SubjectPublicKeyInfo PEM (standard library only); ValueError otherwise."
    text = pem.decode("ascii", "replace") if isinstance(pem, bytes) else pem
    body = "".join(l for l in text.strip().splitlines() if l and not l.startswith("-----"))
    der = base64.b64decode(body, validate=True) if "BEGIN PUBLIC KEY" in text else b""
    if len(der) != 44 or not der.startswith(_SPKI_PREFIX): raise ValueError("not an Ed25519 public key PEM")
    return der[12:]

def key_id(public:bytes) -> str:
    "A public key's id: SHA-256 of its 32 raw bytes."
    return hashlib.sha256(public).hexdigest()

def pae(payload_type:str, payload:bytes) -> bytes:
    "DSSE's pre-authentication encoding: what is signed."
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)

def sha256_hex(b:bytes) -> str: return hashlib.sha256(b).hexdigest()

def leaf_hash(item:dict) -> bytes: return hashlib.sha256(b"\x00" + canonical(item).encode("utf-8")).digest()

def _node(l:bytes, r:bytes) -> bytes: return hashlib.sha256(b"\x01" + l + r).digest()

def _split(n:int) -> int: return 1 << ((n - 1).bit_length() - 1)

def merkle_root(leaves:list) -> bytes:
    "RFC 6962 tree head of leaf hashes."
    if not leaves: return hashlib.sha256(b"").digest()
    if len(leaves) == 1: return leaves[0]
    k = _split(len(leaves))
    return _node(merkle_root(leaves[:k]), merkle_root(leaves[k:]))

def merkle_path(leaves:list, i:int) -> list:
    "The audit path of leaf `i`, nearest sibling first."
    if len(leaves) <= 1: return []
    k = _split(len(leaves))
    if i < k: return merkle_path(leaves[:k], i) + [merkle_root(leaves[k:])]
    return merkle_path(leaves[k:], i - k) + [merkle_root(leaves[:k])]

def merkle_check(leaf:bytes, i:int, size:int, path:list, root:bytes) -> bool:
    "Whether `path` proves `leaf` is leaf `i` of the tree of `size` leaves with head `root`."
    if not 0 <= i < size: return False
    fn, sn, r = i, size - 1, leaf
    for p in path:
        if sn == 0: return False
        if fn & 1 or fn == sn:
            r = _node(p, r)
            while not fn & 1 and fn: fn, sn = fn >> 1, sn >> 1
        else: r = _node(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root

def _num(v): return None if v is None else float(v)

def gate_spec(tolerances:dict, floors:dict, significant_only:bool=False) -> dict:
    "The gate as one canonical dictionary."
    return dict(tolerances={k: _num(v) for k, v in tolerances.items()}, floors={k: _num(v) for k, v in floors.items()},
                significant_only=bool(significant_only))

def report_gate(report:dict) -> dict:
    "The gate a run report says it applied."
    g = report.get("gate") or {}
    return gate_spec(g.get("thresholds") or {}, {f["metric"]: f["bound"] for f in g.get("floors") or []},
                     g.get("significant_only"))

def gate_digest(spec:dict) -> str: return sha256_hex(canonical(spec).encode("utf-8"))

def _ts(s:str) -> dt.datetime:
    "A timestamp (ISO 8601, `Z` or an offset) as an aware UTC datetime."
    t = dt.datetime.fromisoformat(str(s).replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)

def _statement(env_bytes:bytes, public:bytes, sig_ok) -> tuple[dict|None, str]:
    "The envelope's statement when the signature verifies, else None and why."
    try:
        env = json.loads(env_bytes); payload = base64.b64decode(env["payload"], validate=True)
        sigs = [(s.get("keyid"), base64.b64decode(s["sig"], validate=True)) for s in env["signatures"]]
        assert env["payloadType"] == PAYLOAD_TYPE
    except Exception: return None, "envelope: not a DSSE envelope of an in-toto statement"
    if not any(sig_ok(public, pae(env["payloadType"], payload), s) for _, s in sigs):
        return None, f"signature: no signature verifies with key {key_id(public)[:16]}"
    try: st = json.loads(payload)
    except ValueError: return None, "statement: the signed payload is not JSON"
    if st.get("_type") != STATEMENT_TYPE or st.get("predicateType") != PREDICATE_TYPE:
        return None, "statement: not a Keel evaluation-result statement"
    return st, f"signature: valid, key {key_id(public)[:16]}"

def _registration_checks(p:dict):
    "The registration the statement names: before the run, the same golden set and gate."
    reg = p.get("registration") or {}; rp = reg.get("payload") or {}
    if not reg: yield "registration", False, "registration: the statement names no pre-registration"; return
    if _ts(reg["ts"]) >= _ts(p["report"]["created_at"]):
        yield "registration", False, (f"registration: ledger row {reg['seq']} was recorded at {reg['ts']}, "
                                      f"not before the run of {p['report']['created_at']}"); return
    if rp.get("golden_digest") != p["golden"]["digest"]:
        yield "registration", False, "registration: it registered another golden set"; return
    if rp.get("gate_sha256") != p["gate"]["sha256"]:
        yield "registration", False, "registration: the run's gate differs from the registered gate"; return
    yield "registration", True, f"registration: ledger row {reg['seq']} at {reg['ts']}, before the run"

def _report_checks(p:dict, report:bytes, item:str|None):
    "The report file: its digest, its items' Merkle root, its summary and its gate against the statement."
    if sha256_hex(report) != p["report"]["sha256"]:
        yield "report", False, "report: its SHA-256 differs from the signed one (the file was changed)"; return
    r = json.loads(report); items = r.get("items", r.get("rows")) or []
    leaves = [leaf_hash(it) for it in items]
    if merkle_root(leaves).hex() != p["items"]["merkle_root"] or len(items) != p["items"]["count"]:
        yield "report", False, "report: its items do not give the signed Merkle root"; return
    if canonical(r.get("summary")) != canonical(p.get("summary")):
        yield "report", False, "report: its summary differs from the signed one"; return
    if gate_digest(report_gate(r)) != p["gate"]["sha256"]:
        yield "report", False, "report: the gate it applied differs from the signed gate"; return
    yield "report", True, f"report: digest, {len(items)} items' Merkle root, summary and gate match"
    if item is not None:
        ids = [it.get("id") for it in items]
        if item not in ids: yield "item", False, f"item: {item!r} is not in the report"; return
        i = ids.index(item)
        ok = merkle_check(leaves[i], i, len(items), merkle_path(leaves, i), bytes.fromhex(p["items"]["merkle_root"]))
        yield (
            "item",
            ok,
            f"item: {item} is leaf {i} of {len(items)}" if ok else f"item: {item}'s Merkle path does not match",
        )

def _disclosure_check(p:dict, d:dict):
    "One item disclosed without the report: its record, index, tree size and audit path against the signed root."
    try:
        ok = (d["size"] == p["items"]["count"] and
              merkle_check(leaf_hash(d["item"]), d["index"], d["size"], [bytes.fromhex(h) for h in d["path"]],
                           bytes.fromhex(p["items"]["merkle_root"])))
    except (KeyError, TypeError, ValueError): ok = False
    name = (d.get("item") or {}).get("id") if isinstance(d, dict) else None
    yield "disclosure", ok, (f"disclosure: item {name} is in the signed results" if ok else
                             f"disclosure: item {name}'s Merkle path does not match the signed root")

def _file_check(name:str, data:bytes, want:str|None):
    ok = want is not None and sha256_hex(data) == want
    yield name, ok, f"{name}: digest matches" if ok else f"{name}: its SHA-256 differs from the signed one"

def _ledger_checks(p:dict, rows:list, env_bytes:bytes):
    "The ledger export: an intact chain holding the registration row as signed and the envelope's digest."
    c = check_rows(rows)
    if not c.ok: yield "ledger", False, f"ledger: broken at {c.reason}"; return
    reg = p.get("registration") or {}
    row = next((r for r in rows if r["seq"] == reg.get("seq")), None)
    if row is None or row["hash"] != reg.get("hash") or canonical(row["payload"]) != canonical(reg.get("payload")):
        yield "ledger", False, f"ledger: row {reg.get('seq')} is not the registration the statement names"; return
    h = sha256_hex(env_bytes)
    if not any(r["kind"] == "eval_attestation" and r["payload"].get("envelope_sha256") == h for r in rows):
        yield "ledger", False, "ledger: no row records this envelope's digest"; return
    yield "ledger", True, f"ledger: {c.rows} rows intact; registration row {reg['seq']} and this envelope anchored"

def verify_checks(env_bytes:bytes, # the envelope file's bytes
                  public:bytes, # the 32-byte public key
                  sig_ok=ed25519_verify, # (public, message, signature) -> bool
                  report:bytes|None=None, golden:bytes|None=None, gate:bytes|None=None, baseline:bytes|None=None,
                  ledger:list|None=None, # a ledger export's rows
                  item:str|None=None, # an item id to find in the report and prove
                  disclosure:dict|None=None): # an item disclosed with its audit path
    "Yield (check, ok, line) for each check, stopping after the first that fails."
    st, why = _statement(env_bytes, public, sig_ok)
    yield "signature", st is not None, why
    if st is None: return
    p = st["predicate"]
    checks = [_registration_checks(p)]
    if report is not None: checks.append(_report_checks(p, report, item))
    if golden is not None: checks.append(_file_check("golden", golden, p["golden"]["sha256"]))
    if gate is not None: checks.append(_file_check("gate", gate, p["gate"].get("file_sha256")))
    if baseline is not None: checks.append(_file_check("baseline", baseline, (p.get("baseline") or {}).get("sha256")))
    if disclosure is not None: checks.append(_disclosure_check(p, disclosure))
    if ledger is not None: checks.append(_ledger_checks(p, ledger, env_bytes))
    for c in checks:
        for name, ok, line in c:
            yield name, ok, line
            if not ok: return
    verdict = {True: "passed", False: "failed"}.get(p["gate"].get("passed"), "has no verdict")
    yield "verdict", True, f"verdict: the signed gate {verdict} over {p['items']['count']} items"

def main(argv):
    import argparse
    p = argparse.ArgumentParser(description="Verify a Keel evaluation result offline (standard library only).")
    p.add_argument("envelope"); p.add_argument("--pub", required=True)
    for k in ("report", "golden", "gate", "baseline", "ledger", "disclosure", "item"): p.add_argument("--" + k)
    a = p.parse_args(argv)
    rd = lambda f: None if f is None else open(f, "rb").read()
    led = None if a.ledger is None else [json.loads(l) for l in open(a.ledger, encoding="utf-8") if l.strip()]
    disc = None if a.disclosure is None else json.loads(rd(a.disclosure))
    ok = True
    for _, ok, line in verify_checks(rd(a.envelope), public_key_bytes(rd(a.pub)), ed25519_verify, report=rd(a.report),
                                     golden=rd(a.golden), gate=rd(a.gate), baseline=rd(a.baseline), ledger=led,
                                     item=a.item, disclosure=disc):
        print(("ok    " if ok else "FAIL  ") + line)
    if ok: print("verified")
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
