"""Dashboard history benchmark: load the run history of a report folder and build the trend chart, pandas vs polars.

    .venv/bin/python bench/bench_dashboard.py [--runs 1000] [--repeat 3] [--template reports/latest.json]

Not a test: nothing is asserted. One real report is the template: by default a fresh extractive run of the golden set
over the fixture corpus (no model call; about ten seconds to ingest and run). It is copied `--runs` times into a
temporary folder with new stamps and jittered metrics, written the way `write_report` writes them (one JSON line).
Then, each `--repeat` times, the same folder is read by
  - pandas: `keel.evals.report.runs_frame` (json.loads of every file) + `trend_figure`, the evaluation notebook's path;
  - polars: `keel.ui.dashboard.load_history` (lazy NDJSON scan with a schema of the header and summary only) +
    `history_trend`, the dashboard's path;
  - polars on indented files: the same reader on reports written with indent=1 (older versions), read file by file.
The median wall time of each is printed side by side, with the ratio. The machine is shared: figures are noisy.
"""
import argparse, json, random, statistics, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def template_report(work:Path) -> dict:
    "One real report: an extractive golden-set run over the fixture corpus."
    from keel.config import load_settings
    from keel.factory import build_context
    from keel.evals.run import run_eval
    with build_context(load_settings(env={}, dotenv=None, data_dir=work/"data", answer_mode="extractive")) as ctx:
        ctx.ingestor.ingest_manifest(ROOT/"golden"/"corpus"/"manifest.yaml", progress=False)
        res = run_eval(ctx, ROOT/"golden"/"golden.yaml", work/"template", judge=False, baseline_path=work/"baseline.json", progress=False)
    return res.payload


def write_runs(payload:dict, folder:Path, runs:int, indent=None, seed:int=0):
    "`runs` copies of `payload` with increasing stamps and jittered rate metrics."
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for i in range(runs):
        p = json.loads(json.dumps(payload, default=str))
        p["stamp"] = f"20260101T{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}-{i:06d}Z"
        p["created_at"] = f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00"
        m = p["summary"]["metrics"]
        for k, v in m.items():
            if isinstance(v, float) and 0 <= v <= 1: m[k] = min(1.0, max(0.0, v + rng.uniform(-.05, .05)))
        text = json.dumps(p, default=str, ensure_ascii=False, indent=indent)
        (folder/f"eval-{p['stamp']}.json").write_text(text + "\n", encoding="utf-8")


def timed(f, repeat:int) -> tuple[float, object]:
    "Median seconds of `repeat` calls of `f`, and its last result."
    ts, out = [], None
    for _ in range(repeat):
        t = time.perf_counter(); out = f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--template", type=Path, help="a report JSON to copy (default: a fresh extractive run)")
    a = ap.parse_args(argv)
    from keel.evals.report import runs_frame, trend_figure
    from keel.ui.dashboard import load_history, history_trend
    work = Path(tempfile.mkdtemp(prefix="keel-bench-dash-"))
    payload = json.loads(a.template.read_text()) if a.template else template_report(work)
    write_runs(payload, work/"lines", a.runs)
    write_runs(payload, work/"indented", a.runs, indent=1)
    size = sum(p.stat().st_size for p in (work/"lines").glob("*.json"))
    print(f"{a.runs} runs of {len(payload['items'])} items, {size / 1e6:.1f} MB of JSON; median of {a.repeat} (shared 2-core machine, noisy)")
    readers = {"pandas: runs_frame (json.loads per file)": (runs_frame, lambda fr: trend_figure(fr)),
               "polars: load_history (NDJSON scan)": (load_history, history_trend),
               "polars: load_history, indented reports": (load_history, history_trend)}
    folders = dict(zip(readers, (work/"lines", work/"lines", work/"indented")))
    trend_figure(runs_frame(work/"lines").head(3))   # warm-up: imports and plotly's first figure
    rows, frames = [], {}
    for name, (load, trend) in readers.items():
        t_load, frame = timed(lambda: load(folders[name]), a.repeat)
        t_trend, _ = timed(lambda: trend(frame), a.repeat)
        rows.append((name, t_load, t_trend)); frames[name] = frame
    pd_frame, pl_frame = list(frames.values())[:2]
    assert len(pd_frame) == pl_frame.height == a.runs
    assert [round(x, 9) for x in pd_frame["hit_at_3"]] == [round(x, 9) for x in pl_frame["hit_at_3"].to_list()], "the readers disagree"
    base = rows[0][1] + rows[0][2]
    print(f"{'reader':42} {'load s':>7} {'trend s':>8} {'total s':>8} {'vs pandas':>10}")
    for name, tl, tt in rows: print(f"{name:42} {tl:7.3f} {tt:8.3f} {tl + tt:8.3f} {base / (tl + tt):9.1f}x")

if __name__ == "__main__": main()
