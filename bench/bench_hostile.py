"""Hostile-file benchmark: wall time and peak memory to read each hostile file, this checkout against an older one.

    .venv/bin/python bench/bench_hostile.py [--before DIR] [--timeout 60] [--memory-cap 6000000000]

`--before DIR` is a folder holding an older `keel/` package, for example the commit before the
hostile-input limits: `mkdir /tmp/before && git archive 9a9efe1~1 keel | tar -x -C /tmp/before`.

Not a test: nothing is asserted. Each file (built from nothing by tests/hostile.py) is read in a fresh
Python process: `load(path)` (`read_manifest` for the manifest) with the default settings, and for
this checkout also through the child parser process the ingest pipeline uses. Wall time is measured
around the process; peak memory is its maximum resident set (and the parser child's, when there is
one), from `wait4`/`getrusage`. A run past `--timeout` is killed and shown as `>N s`; every process
is capped at `--memory-cap` bytes of address space so a bomb cannot take the machine down. Goal per
file: at most 10 s and 500 MB. The machine is shared, so timings are noisy.
"""
import argparse, json, os, resource, signal, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT/"tests"))
import hostile

CODE = r"""
import json, resource, sys
path, mode = sys.argv[1], sys.argv[2]
out = dict(outcome="", child_kb=0)
try:
    if mode == "manifest":
        from keel.ingest.pipeline import read_manifest
        out["outcome"] = f"read {len(read_manifest(path))} entries"
    else:
        from keel.ingest.loaders import load
        if mode == "parser":
            from keel.ingest.loaders import ParserProcess
            pp = ParserProcess()
            try: doc = load(path, parser=pp)
            finally:
                pp.close(); out["child_kb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        else: doc = load(path)
        out["outcome"] = f"loaded {len(doc.text):,} characters"
except BaseException as e:
    out["outcome"] = f"{type(e).__name__}: {str(e)[:90]}"
    if mode == "parser": out["child_kb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps(out))
"""


def build(folder:Path) -> list[tuple[str, Path, str]]:
    "The hostile files: (label, path, how to read it)."
    return [
        ("PDF, 20 pages sharing one 10 MB stream", hostile.shared_stream_pdf(folder/"shared.pdf"), "load"),
        ("PDF, one 200 MB stream of zeros", hostile.flate_bomb_pdf(folder/"zeros.pdf"), "load"),
        ("DOCX zip bomb, 1 GB document.xml", hostile.docx_bomb(folder/"bomb.docx"), "load"),
        ("YAML billion-laughs manifest", hostile.laughs_manifest(folder/"laughs.yaml"), "manifest"),
        ("HTML nested 600 deep", hostile.deep_html(folder/"deep600.html", depth=600), "load"),
        ("HTML nested 5,000 deep", hostile.deep_html(folder/"deep5000.html", depth=5000), "load"),
        ("UTF-16 text with BOM", hostile.utf16_text(folder/"utf16.txt"), "load"),
        ("64 KB of random bytes as .txt", hostile.random_txt(folder/"random.txt"), "load"),
        ("AES-256 PDF, empty password", hostile.aes_pdf(folder/"aes.pdf"), "load"),
    ]


def run_one(keel_dir, path, mode, timeout, cap) -> dict:
    "Read one file in a fresh process importing keel from `keel_dir`: seconds, peak MB (that process and its parser child), outcome."
    env = {**os.environ, "PYTHONPATH": str(keel_dir)}
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    t = time.monotonic()
    p = subprocess.Popen([sys.executable, "-c", CODE, str(path), mode], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=env, preexec_fn=limit, cwd=keel_dir)
    deadline, killed = t + timeout, False
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid: break
        if time.monotonic() > deadline and not killed: p.kill(); killed = True
        time.sleep(0.02)
    seconds = time.monotonic() - t
    out = p.stdout.read().decode(errors="replace").strip()
    res = json.loads(out.splitlines()[-1]) if out else dict(outcome=f"process ended ({'killed' if killed else status})", child_kb=0)
    if killed: res["outcome"] = f"still running after {timeout:g} s; killed"
    mb = max(usage.ru_maxrss, res.get("child_kb", 0)) / 1024
    return dict(seconds=seconds, killed=killed, mb=mb, outcome=res["outcome"])


def fmt(r) -> str:
    if r is None: return "-"
    t = f">{r['seconds']:.0f} s" if r["killed"] else f"{r['seconds']:.1f} s"
    return f"{t:>8} {r['mb']:7.0f} MB  {r['outcome'][:70]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, help="a folder holding an older keel/ package to compare with")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--memory-cap", type=int, default=6_000_000_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        files = build(Path(d))
        print(f"{'file':40} {'bytes':>9}  {'run':7}{'time':>9} {'peak':>10}  outcome")
        for label, path, mode in files:
            rows = []
            if a.before: rows.append(("before", run_one(a.before, path, mode, a.timeout, a.memory_cap)))
            rows.append(("after", run_one(ROOT, path, mode, a.timeout, a.memory_cap)))
            if mode == "load": rows.append(("parser", run_one(ROOT, path, "parser", a.timeout, a.memory_cap)))
            for i, (name, r) in enumerate(rows):
                head = f"{label:40} {path.stat().st_size:9,}" if i == 0 else " " * 50
                print(f"{head}  {name:7}{fmt(r)}", flush=True)
    print("after: this checkout, in process; parser: this checkout through the ingest pipeline's parser process"
          "; peak = max resident set of the reading process and its parser child")


if __name__ == "__main__": main()
