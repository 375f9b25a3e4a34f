"""A real JupyterLab on loopback and Chromium driving it: shared by tests/test_ui_browser.py and bench/bench_chips.py.

`start_lab(root)` starts `python -m jupyterlab` over `root` (a random free port, a random token, `--allow-root`, its
config, runtime, settings and workspace folders inside `root`, news and update checks off) with this checkout first on
the kernel's PYTHONPATH; `launch(playwright)` starts Debian's Chromium by its `executable_path` (no browser download).
`run_notebook` opens a notebook, runs every cell from the Run menu and waits until the kernel is idle again.
Failures raise `LabError` with the server's log tail.
"""
import json, os, shutil, socket, secrets, subprocess, sys, time, urllib.request
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LONG = 240_000   # ms: running a notebook embeds the fixture corpus on a shared 2-core machine
KERNELSPEC = dict(name="python3", display_name="Python 3 (ipykernel)", language="python")


class LabError(RuntimeError): "JupyterLab did not start, or a notebook did not run as expected."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


def api(lab, path):
    "GET a JupyterLab REST path as JSON."
    req = urllib.request.Request(f"{lab.url}{path}", headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(req, timeout=10) as r: return json.loads(r.read())


def with_kernelspec(nb:dict) -> dict:
    "A notebook JupyterLab starts a kernel for without asking."
    nb["metadata"]["kernelspec"] = dict(KERNELSPEC); return nb


@contextmanager
def start_lab(root:Path):
    "A live JupyterLab serving `root`; stopped on exit."
    quiet = root/".settings"/"@jupyterlab"/"apputils-extension"   # no news or update prompts over the panels
    quiet.mkdir(parents=True, exist_ok=True)
    (quiet/"notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    for k, d in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                 ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython")): env[k] = str(root/f".{d}")
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log = open(root/"lab.log", "w")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    lab = SimpleNamespace(url=f"http://127.0.0.1:{port}", token=token, root=root, started=time.monotonic())
    try:
        for _ in range(120):
            if proc.poll() is not None: raise LabError(f"jupyter lab exited: {(root/'lab.log').read_text()[-2000:]}")
            try: api(lab, "/api/status"); break
            except OSError: time.sleep(0.5)
        else: raise LabError(f"jupyter lab did not answer within 60 s: {(root/'lab.log').read_text()[-2000:]}")
        yield lab
    finally:
        proc.terminate()
        try: proc.wait(timeout=20)
        except subprocess.TimeoutExpired: proc.kill()
        log.close()


OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"   # no host but loopback resolves

def launch(playwright, *args):
    "Debian's Chromium under Playwright (`OFFLINE` as an argument: no other host than 127.0.0.1 can be reached)."
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", *args])


def kernel_state(lab, name) -> str|None:
    "The execution state of the kernel of notebook `name` (None before it has one)."
    for s in api(lab, "/api/sessions"):
        if s["path"].endswith(f"{name}.ipynb") and s.get("kernel"): return api(lab, f"/api/kernels/{s['kernel']['id']}")["execution_state"]
    return None


def wait_idle(lab, name, timeout=LONG / 1000, settle=3):
    "Wait until the notebook's kernel has been idle for `settle` consecutive checks."
    t0, calm = time.monotonic(), 0
    while time.monotonic() - t0 < timeout:
        calm = calm + 1 if kernel_state(lab, name) == "idle" else 0
        if calm >= settle: return
        time.sleep(0.5)
    raise LabError(f"the kernel of {name} was not idle within {timeout:.0f} s")


def open_notebook(browser, lab, path:str, name:str, **page_kw):
    "A new page showing notebook `path` (relative to the lab's root) in its own workspace `name`."
    page = browser.new_page(viewport=dict(width=1400, height=2400), **page_kw)   # tall: a whole panel fits in its screenshot
    page.goto(f"{lab.url}/lab/workspaces/{name}/tree/{path}?reset&token={lab.token}")   # one notebook per workspace
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=60_000)
    return page


def run_all(page, lab, name):
    "Run All Cells from the Run menu; wait until every code cell has run and the kernel is idle again."
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator('.lm-Menu-itemLabel:text-is("Run All Cells")').click()
    page.wait_for_function("""() => { const ps = [...document.querySelectorAll(
                                 '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')];
                               return ps.length > 0 && ps.every(p => /\\[\\d+\\]/.test(p.textContent)); }""", timeout=LONG)
    wait_idle(lab, name)
    errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').all_inner_texts()
    if bad := [e for e in errors if "Traceback" in e or "Error" in e]: raise LabError(f"{name}: a cell failed: {bad}")


def run_notebook(browser, lab, name):
    "Open `nbs/<name>.ipynb`, wait for an idle kernel, run all cells, wait until they are done; the page."
    page = open_notebook(browser, lab, f"nbs/{name}.ipynb", name)
    wait_idle(lab, name)
    run_all(page, lab, name)
    return page
