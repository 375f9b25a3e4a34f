"""Citation chips in a real JupyterLab: the plain ipywidgets `Button` against the `anywidget` (`keel.ui.chat.chip`).

    .venv/bin/python bench/bench_chips.py [--chips 12] [--repeat 5] [--out reports/bench-chips.json]

Not a test: nothing is asserted; it prints what it measured, side by side. JupyterLab runs on loopback and Debian's
Chromium drives it (tests/labdriver.py); no host but 127.0.0.1 resolves and every request for another one is counted, so
what renders is what renders offline. For each kind of chip:

- renders / click: a row of N chips appears after its cell runs; clicking one calls back into Python (the callback
  writes the chip's label into an HTML widget under the row, which the page must then show);
- time to render: Shift+Enter on the row's cell until the N-th chip of that row is in the page, first on a fresh
  browser context where no widget has rendered yet (cold: the widget front ends load), then `--repeat` times again
  (warm), median; both kinds are measured cold in both orders;
- JavaScript: bytes (decoded) the page had loaded from each JupyterLab extension once the first row showed, from
  the browser's resource timing (an installed extension loads at start-up whether a notebook uses it or not), and
  the chip's own inline JavaScript and CSS;
- saved without a kernel: the notebook executed by nbclient with the widget state saved in its metadata (as
  JupyterLab's "save widget state" does), opened again in JupyterLab (with that setting on, so that it restores
  saved widgets), whose new kernel has none of those widgets; and the same notebook as Keel commits notebooks
  (nbdev_clean removes the widget state);
- docs site: what `tools/build_docs.py` keeps of each chip row's output.
"""
import argparse, copy, json, os, shutil, statistics, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent/"tests")); sys.path.insert(0, str(HERE.parent/"tools"))
from labdriver import ROOT, CHROMIUM, OFFLINE, start_lab, launch, wait_idle, with_kernelspec

KINDS = ("ipywidgets", "anywidget")
WIDGET_EXTENSIONS = ("@jupyter-widgets/jupyterlab-manager", "anywidget")
SETUP = '''import itertools
import ipywidgets as W
from keel.ui.chat import chip
_count = {{k: itertools.count() for k in ("ipywidgets", "anywidget")}}
def row(kind, n={n}):
    "A row of n chips of `kind` and a line saying which one was clicked last."
    said = W.HTML("nothing clicked"); said.add_class("bench-said")
    label = lambda w: getattr(w, "label", None) or w.description
    box = W.VBox([W.HBox([chip(f"[{{i}}] {{kind}} chip", "a cited sentence", lambda w: setattr(said, "value", f"clicked {{label(w)}}"), kind)
                          for i in range(n)]), said])
    box.add_class(f"bench-{{kind}}-{{next(_count[kind])}}")
    return box'''


def notebook(n:int) -> dict:
    cell = lambda src: dict(cell_type="code", execution_count=None, id=os.urandom(4).hex(), metadata={}, outputs=[], source=src)
    nb = dict(nbformat=4, nbformat_minor=5, metadata={}, cells=[cell(SETUP.format(n=n))] + [cell(f'row("{k}")') for k in KINDS])
    return with_kernelspec(nb)


def run_cell(page, i:int):
    "Shift+Enter in code cell `i`."
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell").nth(i).locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")


def time_row(page, i:int, sel:str, n:int, timeout=120_000) -> float:
    "Run cell `i`; seconds until `n` chips match `sel`."
    t0 = time.perf_counter(); run_cell(page, i)
    page.wait_for_function(f"() => document.querySelectorAll({json.dumps(sel)}).length >= {n}", polling="raf", timeout=timeout)
    return time.perf_counter() - t0


JS_FILES = """() => Object.fromEntries(performance.getEntriesByType("resource")
  .filter(e => /\\/lab\\/extensions\\/.*\\.js(\\?|$)/.test(e.name)).map(e => [e.name.split("?")[0], e.decodedBodySize]))"""

def by_extension(files:dict) -> dict:
    "Bytes per JupyterLab extension (`/lab/extensions/<name>/...`)."
    out = {}
    for url, n in files.items():
        ext = url.split("/lab/extensions/", 1)[1].split("/static/")[0]
        out[ext] = out.get(ext, 0) + n
    return out


def offline_context(browser, refused:list):
    "A fresh browser context (no cache); requests for other hosts (which cannot resolve: `OFFLINE`) are recorded."
    ctx = browser.new_context(viewport=dict(width=1400, height=1600))
    ctx.add_init_script("performance.setResourceTimingBufferSize(100000)")   # JupyterLab loads more than the default 250
    ctx.on("request", lambda r: None if r.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "blob:", "data:")) else refused.append(r.url))
    return ctx


def measure_kind(browser, lab, kind:str, n:int, repeat:int, refused:list) -> dict:
    "Cold and warm render times, the click, and the JavaScript loaded, for one kind on a fresh context."
    ctx = offline_context(browser, refused)
    page = ctx.new_page()
    page.goto(f"{lab.url}/lab/workspaces/{kind}-{time.monotonic_ns()}/tree/chips.ipynb?reset&token={lab.token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=60_000)
    wait_idle(lab, "chips")
    run_cell(page, 0); wait_idle(lab, "chips")
    i = 1 + KINDS.index(kind)
    cold = time_row(page, i, f".bench-{kind}-0 button.keel-chip", n)
    wait_idle(lab, "chips")
    after = page.evaluate(JS_FILES)
    warm = []
    for r in range(1, repeat + 1):
        warm.append(time_row(page, i, f".bench-{kind}-{r} button.keel-chip", n)); wait_idle(lab, "chips")
    last = page.locator(f".bench-{kind}-{repeat}")
    last.locator("button.keel-chip").nth(2).click()
    try: page.wait_for_function(f"() => document.querySelector('.bench-{kind}-{repeat} .bench-said')?.textContent.includes('[2] {kind} chip')",
                                timeout=30_000); clicked = True
    except Exception: clicked = False
    out = dict(kind=kind, cold_s=cold, warm_s=warm, warm_median_s=statistics.median(warm), click_calls_python=clicked,
               js_loaded=by_extension(after), js_files=sorted(u.split("/lab/extensions/", 1)[1] for u in after))
    ctx.close()
    return out


def saved_views(browser, lab, name:str, refused:list) -> dict:
    "Open notebook `name` (already in the lab's root) and say what each chip row's output shows."
    ctx = offline_context(browser, refused)
    page = ctx.new_page()
    page.goto(f"{lab.url}/lab/workspaces/{name}/tree/{name}.ipynb?reset&token={lab.token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=60_000)
    wait_idle(lab, name); page.wait_for_timeout(3000)
    res = {}
    for i, kind in enumerate(KINDS, 1):
        out = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell").nth(i).locator(".jp-OutputArea")
        chips = out.locator("button.keel-chip")
        res[kind] = dict(chips=chips.count(), text=" ".join(out.all_inner_texts()).strip()[:160])
        if chips.count():   # a chip drawn from saved state: does a click reach Python? (its kernel has no such widget)
            chips.first.click(); page.wait_for_timeout(1500)
            res[kind]["after_click"] = " ".join(out.locator(".bench-said").all_inner_texts()).strip()[:80]
    ctx.close()
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chips", type=int, default=12, help="chips in a row")
    ap.add_argument("--repeat", type=int, default=5, help="warm renders per kind")
    ap.add_argument("--out", type=Path, default=ROOT/"reports"/"bench-chips.json")
    a = ap.parse_args(argv)
    if CHROMIUM is None: sys.exit("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    from nbclient import NotebookClient
    import nbformat
    from build_docs import clean_output
    from keel.ui.chat import CHIP_JS, CHIP_CSS
    root = Path(tempfile.mkdtemp(prefix="keel-chips-"))
    nb = notebook(a.chips)
    (root/"chips.ipynb").write_text(json.dumps(nb))
    # JupyterLab restores widgets from a notebook's saved state only with the widget manager's saveState setting on
    st = root/".settings"/"@jupyter-widgets"/"jupyterlab-manager"; st.mkdir(parents=True)
    (st/"plugin.jupyterlab-settings").write_text('{"saveState": true}')
    # the same notebook executed with its widget state saved, and as Keel commits it (state removed)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    ran = nbformat.reads(json.dumps(nb), as_version=4)
    NotebookClient(ran, kernel_name="python3", store_widget_state=True, resources={"metadata": {"path": str(root)}}).execute()
    state = json.loads(nbformat.writes(ran))
    (root/"saved_state.ipynb").write_text(json.dumps(state))
    stripped = copy.deepcopy(state); stripped["metadata"].pop("widgets", None)
    (root/"saved_clean.ipynb").write_text(json.dumps(stripped))
    docs = {k: [sorted((clean_output(o) or {}).get("data", {})) for o in state["cells"][i]["outputs"]] for i, k in enumerate(KINDS, 1)}
    docs_text = {k: [(clean_output(o) or {}).get("data", {}).get("text/plain", "")[:80] for o in state["cells"][i]["outputs"]]
                 for i, k in enumerate(KINDS, 1)}
    refused, results = [], {}
    t0 = time.perf_counter()
    with start_lab(root) as lab, sync_playwright() as p:
        browser = launch(p, OFFLINE)
        runs = {k: [] for k in KINDS}
        for order in (KINDS, KINDS[::-1]):   # each kind cold first and cold second
            for k in order: runs[k].append(measure_kind(browser, lab, k, a.chips, a.repeat, refused))
        for k, ms_ in runs.items():
            warm = [w for m in ms_ for w in m["warm_s"]]
            results[k] = dict(ms_[0], cold_s=[m["cold_s"] for m in ms_], warm_s=warm, warm_median_s=statistics.median(warm),
                              click_calls_python=all(m["click_calls_python"] for m in ms_))
        saved = {n: saved_views(browser, lab, n, refused) for n in ("saved_state", "saved_clean")}
        browser.close()
    load = os.getloadavg()
    report = dict(chips=a.chips, repeat=a.repeat, results=results, saved=saved, docs=docs, docs_text=docs_text,
                  inline_chip_bytes=len(CHIP_JS.encode()) + len(CHIP_CSS.encode()), refused_requests=refused,
                  seconds=time.perf_counter() - t0, loadavg=load)
    a.out.parent.mkdir(parents=True, exist_ok=True); a.out.write_text(json.dumps(report, indent=1))
    ms = lambda v: f"{v * 1000:.0f}"
    print(f"{a.chips} chips a row, {a.repeat} warm renders per kind per page, two fresh pages per kind; load average {load[0]:.1f}")
    print(f"{'':34}" + "".join(f"{k:>26}" for k in KINDS))
    rows = [("renders, click reaches Python", lambda r: f"yes, {r['click_calls_python']}"),
            ("cold render ms (both orders)", lambda r: " / ".join(ms(v) for v in r["cold_s"])),
            ("warm render ms, median", lambda r: ms(r["warm_median_s"])),
            ("warm render ms, min-max", lambda r: f"{ms(min(r['warm_s']))}-{ms(max(r['warm_s']))}"),
            *[(f"JS KB loaded from {e.split('/')[-1]}", lambda r, e=e: f"{r['js_loaded'].get(e, 0) / 1024:.0f}") for e in WIDGET_EXTENSIONS]]
    for name, f in rows: print(f"{name:34}" + "".join(f"{f(results[k]):>26}" for k in KINDS))
    print("JS KB loaded by the page once the row showed, by extension (ipywidgets page): " +
          ", ".join(f"{e} {v / 1024:.0f}" for e, v in sorted(results[KINDS[0]]["js_loaded"].items())))
    print(f"the anywidget chip's inline JavaScript + CSS: {report['inline_chip_bytes']} bytes")
    for n, s in saved.items(): print(f"{n}: " + "; ".join(f"{k}: {v}" for k, v in s.items()))
    print("docs site keeps: " + "; ".join(f"{k}: {docs[k]} {docs_text[k]}" for k in KINDS))
    print(f"requests to other hosts refused: {len(refused)} {sorted(set(refused))[:5]}")
    print(f"{report['seconds']:.0f} s in all; written to {a.out}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__": main()
