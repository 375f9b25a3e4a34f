"""Execute notebooks in place so that they are committed with their outputs (reports, benchmarks, panels).

    .venv/bin/python tools/run_notebooks.py nbs/94_ui_dashboard.ipynb [more.ipynb ...] [--slow] [--skip-text TEXT ...]

Each notebook runs top to bottom in its own folder, as `nbdev_test` runs it, in one process (execnb). Cells flagged
`#| slow` run only with `--slow`; `#| eval: false` cells never run; code cells containing a `--skip-text` string do not
run either and say so in their output (for cells too heavy to run where the outputs are saved). The outputs are written back, then `nbdev_clean`
strips counts and metadata (it keeps outputs in this project). Plotly figures are saved as their JSON mime bundle,
which JupyterLab renders offline; a widget's live view cannot be saved (its state would live in notebook metadata,
which `nbdev_clean` removes), so only the static picture Keel's panels add to their display data is kept. A failing
cell stops the run and nothing is written.
"""
import argparse, json, os, re, subprocess, sys
from pathlib import Path
from execnb.nbio import read_nb
from execnb.shell import CaptureShell

ROOT = Path(__file__).resolve().parent.parent
WIDGET = "application/vnd.jupyter.widget-view+json"


def directives(source:str) -> dict:
    "The `#| name value` lines at the top of a cell."
    out = {}
    for line in source.splitlines():
        m = re.match(r"#\|\s*([\w-]+:?)\s*(.*)", line)
        if not m: break
        out[m.group(1)] = m.group(2).strip()
    return out

NOT_RUN = "(not run when these outputs were saved: it loads the default model for many minutes; run it in JupyterLab or with make test-slow)\n"

def skip(slow:bool, texts=()):
    "The preprocessor: True for cells not to run (those skipped by `texts` get a line saying so)."
    def f(cell):
        if cell.cell_type != "code": return True
        d = directives(cell.source)
        if d.get("eval:", "").lower() == "false": return True
        if any(t in cell.source for t in texts):
            cell.outputs = [dict(output_type="stream", name="stdout", text=NOT_RUN)]; return True
        return "slow" in d and not slow
    return f


def drop_widget_views(cells:list[dict]):
    "Remove live-widget views (their state cannot be saved); keep any other representation of the output."
    for c in cells:
        outs = []
        for o in c.get("outputs", []):
            data = o.get("data", {})
            if o.get("output_type") in ("execute_result", "display_data") and not data: continue   # an empty result
            if WIDGET in data:
                data.pop(WIDGET)
                if set(data) <= {"text/plain"}: continue   # nothing left worth keeping
            outs.append(o)
        if "outputs" in c: c["outputs"] = outs


def run(path:Path, slow:bool, texts=()):
    nb = read_nb(path)
    k = CaptureShell(path)
    cwd = os.getcwd(); os.chdir(path.parent)
    try:
        k.run("import plotly.io as _pio; _pio.renderers.default = 'plotly_mimetype'")
        k.run_all(nb, exc_stop=True, preproc=skip(slow, texts))
    except Exception:
        sys.stderr.write(k.prettytb(fname=path) + "\n"); raise SystemExit(f"{path}: a cell failed; nothing written")
    finally: os.chdir(cwd)
    raw = json.loads(path.read_text())   # write outputs into the original JSON, cell by cell
    for c, r in zip(nb.cells, raw["cells"]):
        if r["cell_type"] == "code": r["outputs"] = json.loads(json.dumps(c.get("outputs", []), default=str))
    drop_widget_views(raw["cells"])
    path.write_text(json.dumps(raw, indent=1, ensure_ascii=False) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--slow", action="store_true", help="also run cells flagged `#| slow` (model-heavy: minutes)")
    ap.add_argument("--skip-text", action="append", default=[], help="do not run code cells containing this text (repeatable)")
    a = ap.parse_args(argv)
    for p in a.notebooks:
        print(f"running {p}" + (" (with slow cells)" if a.slow else ""), flush=True)
        run(p.resolve(), a.slow, a.skip_text)
    subprocess.run([str(Path(sys.executable).parent/"nbdev_clean")], cwd=ROOT, check=True)


if __name__ == "__main__": main()
