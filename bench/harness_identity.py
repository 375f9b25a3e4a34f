"""Do the seven harnesses give the same rows and metrics as before a change? Capture their reports, then diff two.

    python bench/harness_identity.py capture OUT [--code DIR]   # fixture corpus, extractive answers, seed 0
    python bench/harness_identity.py diff BEFORE AFTER [--ignore FIELD ...]

`capture` ingests the fixture corpus into a fresh data directory (always the same path, so the settings digest
matches between captures) and writes the golden run (no judge), the fixture retrieval benchmark, the robustness
run (seed 0), the example review and claim replay (the working tree of `golden/review`), the comparison of the
committed baseline with the run, and the agent tasks (the packaged model in process) under OUT. `--code DIR` runs another checkout's
code (its `keel` package first on the path), for the "before" of a refactor. `diff` drops what legitimately
changes between runs (stamps, timings, request and run ids, paths, code digests) and prints every other
difference; exit 0 when there is none. `--rename OLD=NEW` reads a field the change renamed under its new name (a
value: `robustness.kind:robustness=keel-eval-robustness`), and each rename is listed; `--grouped` prints each field
path once (list positions as [*]) with the number of rows it covers.
"""

import argparse, glob, json, os, re, shutil, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(tempfile.gettempdir()) / "keel-harness-identity-data"
VOLATILE = re.compile(
    r"(stamp|created_at|run_id|measured_in|latency|_ms$|^ms$|seconds|wall_s|request_id|report|path|"
    r"data_dir|code_digest|keel_commit|keel_version|checkpoint|html|json$|promoted_at|^commit$|^label$)"
)


def keel(*args, env, out=None):
    "Run the `keel` command of this environment; its output to `out` when given."
    exe = shutil.which("keel", path=str(Path(sys.executable).parent)) or "keel"
    with open(out, "w") if out else open(os.devnull, "w") as f:
        return subprocess.run([exe, *map(str, args)], env=env, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT).returncode


def capture(out: Path, code: str | None):
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(DATA, ignore_errors=True)
    out.mkdir(parents=True)
    env = {
        **os.environ,
        "KEEL_DATA_DIR": str(DATA),
        "KEEL_ANSWER_MODE": "extractive",
        **({"PYTHONPATH": code} if code else {}),
    }
    t0 = time.perf_counter()
    steps = [
        ("models", ["models", "prepare"]),
        ("ingest", ["ingest", "golden/corpus/manifest.yaml"]),
        ("run", ["eval", "run", "golden/golden.yaml", "--no-judge", "--quiet", "--report-dir", out / "run"]),
        ("retrieval", ["eval", "retrieval", "golden/retrieval/fixture.yaml", "--json", out / "retrieval.json"]),
        (
            "robustness",
            ["eval", "robustness", "golden/golden.yaml", "--seed", "0", "--quiet", "--report-dir", out / "rob"],
        ),
        ("review", ["eval", "review", "golden/review/review.yaml", "--json", out / "review.json", "--markdown",
                    out / "review.md"]),
        ("claims", ["eval", "claims", "golden/review/claims.yaml", "golden/review/kb", "--json", out / "claims.json",
                    "--markdown", out / "claims.md"]),
    ]
    for name, args in steps:
        print(
            f"{name}: exit {keel(*args, env=env, out=out/f'{name}.txt')} ({time.perf_counter() - t0:.0f} s)", flush=True
        )
    run = sorted((out / "run").glob("eval-2*.json"))[-1]
    compare = ["eval", "compare", "golden/baseline.json", run, "--json", out / "compare.json"]
    print(f"compare: exit {keel(*compare, env=env, out=out / 'compare.txt')}", flush=True)
    env.pop("KEEL_ANSWER_MODE")  # the agent tasks need the model
    agent = ["eval", "agent", "golden/agent/tasks.yaml", "--report-dir", out / "agent"]
    code = keel(*agent, env=env, out=out / "agent.txt")
    print(f"agent: exit {code} ({time.perf_counter() - t0:.0f} s)")


def _clean(x, ignore):
    if isinstance(x, dict):
        return {k: _clean(v, ignore) for k, v in x.items() if not VOLATILE.search(k) and k not in ignore}
    if isinstance(x, list):  # a table row of an ignored metric goes too, and a compared field that always changes
        return [_clean(v, ignore) for v in x if not (isinstance(v, dict) and (v.get("metric") in ignore
                                                                              or VOLATILE.search(v.get("field") or "~")))]
    return round(x, 12) if isinstance(x, float) else x


def _diff(a, b, path, out):
    if type(a) != type(b) or not isinstance(a, (dict, list)):
        if a != b:
            out.append(f"{path}: {str(a)[:80]!r} != {str(b)[:80]!r}")
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k in a and k in b:
                _diff(a[k], b[k], f"{path}.{k}", out)
            else:
                out.append(f"{path}.{k}: only in {'after' if k not in a else 'before'}")
    elif len(a) != len(b):
        out.append(f"{path}: {len(a)} vs {len(b)} entries")
    else:
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}[{i}]", out)


def reports(d: Path) -> dict:
    last = lambda pat: json.loads(Path(sorted(glob.glob(str(d / pat)))[-1]).read_text())
    one = lambda name: json.loads((d / name).read_text())
    return dict(
        run=last("run/eval-2*.json"),
        retrieval=one("retrieval.json"),
        robustness=last("rob/robustness-2*[0-9Z].json"),
        agent=last("agent/agent-2*[0-9Z].json"),
        review=one("review.json"),
        claims=one("claims.json"),
        compare=one("compare.json"),
    )


def _renamed(x, old: list[str], new: str):
    "Move the value at dotted path `old` to the last name of `new` (`a.b:v=w` renames the value v to w)."
    *up, last = old
    for k in up:
        x = x.get(k) if isinstance(x, dict) else None
    if not isinstance(x, dict) or last.split(":")[0] not in x:
        return
    name, _, value = last.partition(":")
    if value:
        x[name] = new if x[name] == value else x[name]
    else:
        x[new] = x.pop(name)


def rename(report, spec: str):
    "Apply `OLD=NEW` to a report and to every dict of a list on the way (`gate.checks.name=metric`)."
    old, new = spec.split("=", 1)
    parts = old.split(".")
    def walk(x, ps):
        if isinstance(x, list):
            for v in x:
                walk(v, ps)
        elif len(ps) == 1:
            _renamed(x, ps, new)
        elif isinstance(x, dict) and ps[0] in x:
            walk(x[ps[0]], ps[1:])
    walk(report, parts)


def grouped(out: list[str]) -> list[str]:
    "The differences with list positions as [*]: each distinct path once, with how many rows it covers."
    seen = {}
    for line in out:
        path, _, what = line.partition(": ")
        key = (re.sub(r"\[\d+\]", "[*]", path), what if what.startswith("only in") else "changed")
        seen.setdefault(key, []).append(line)
    lines = []
    for (path, what), rows in seen.items():
        if len(rows) > 1: what += f" ({len(rows)} rows)"
        elif what == "changed": what += f" ({rows[0].partition(': ')[2]})"
        lines.append(f"{path}: {what}")
    return lines


def diff(before: Path, after: Path, ignore, renames=(), group=False) -> int:
    a, b, total = reports(before), reports(after), 0
    for spec in renames:
        kind, _, field = spec.partition(".")
        rename(a[kind], field)
        print(f"renamed: {spec}")
    for k in a:
        out = []
        _diff(_clean(a[k], ignore), _clean(b[k], ignore), k, out)
        print(*(grouped(out) if group else out), sep="\n") if out else None
        print(f"{k}: {len(out)} difference(s)")
        total += len(out)
    return 1 if total else 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("out", type=Path)
    c.add_argument("--code")
    d = sub.add_parser("diff")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    d.add_argument(
        "--ignore", nargs="*", default=[], help="fields (and table rows of metrics) to leave out as well, e.g. token_f1"
    )
    d.add_argument("--rename", nargs="*", default=[], metavar="KIND.OLD=NEW",
                   help="a field the change renamed: read the before report's OLD as NEW (listed in the output)")
    d.add_argument("--grouped", action="store_true",
                   help="one line per field path, list positions as [*], with the number of rows it covers")
    a = p.parse_args()
    sys.exit(capture(a.out, a.code) if a.cmd == "capture" else diff(a.before, a.after, set(a.ignore), a.rename,
                                                                                   a.grouped))
