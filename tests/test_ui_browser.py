"""The panels in a real JupyterLab, driven by Chromium through Playwright.

A `jupyter lab` server starts on loopback (a random free port, a token, `--allow-root`) over a temporary folder holding
copies of the panel notebooks (so nothing the browser does can touch the repository's notebooks) and a link to
`golden/`. Playwright drives Debian's Chromium, launched by its `executable_path` (no browser download). Each test opens
a notebook, runs every cell from the Run menu, waits for the kernel to go idle, then uses the panel as a person would.
Screenshots of each panel go to `reports/ui-*.png` (git-ignored).

Chromium comes from Debian (`make test` installs it as root when it is missing); without it these tests are skipped,
with the reason printed.
"""
import json, os, shutil, socket, secrets, subprocess, sys, time, urllib.request
from pathlib import Path
from types import SimpleNamespace
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT/"reports"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: `make install` installs the dev requirements")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (`make test` installs it as root; "
                                                          "or `apt-get install chromium`): the browser tests need it")
NOTEBOOKS = ("92_ui_chat", "93_ui_approvals", "94_ui_dashboard")
LONG = 240_000   # ms: running a notebook embeds the fixture corpus on a shared 2-core machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


def api(lab, path):
    "GET a JupyterLab REST path as JSON."
    req = urllib.request.Request(f"{lab.url}{path}", headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(req, timeout=10) as r: return json.loads(r.read())


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    "A live JupyterLab over copies of the panel notebooks; stopped after the module."
    root = tmp_path_factory.mktemp("lab")
    (root/"nbs").mkdir(); (root/"golden").symlink_to(ROOT/"golden")
    for n in NOTEBOOKS:   # a kernelspec so that JupyterLab starts the kernel without asking
        nb = json.loads((ROOT/"nbs"/f"{n}.ipynb").read_text())
        nb["metadata"]["kernelspec"] = dict(name="python3", display_name="Python 3 (ipykernel)", language="python")
        (root/"nbs"/f"{n}.ipynb").write_text(json.dumps(nb))
        (root/"nbs"/f"saved_{n}.ipynb").write_text(json.dumps(nb))   # opened without running: the committed outputs
    quiet = root/".settings"/"@jupyterlab"/"apputils-extension"   # no news or update prompts over the panels
    quiet.mkdir(parents=True); (quiet/"notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
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
    for _ in range(120):
        if proc.poll() is not None: pytest.fail(f"jupyter lab exited: {(root/'lab.log').read_text()[-2000:]}")
        try: api(lab, "/api/status"); break
        except OSError: time.sleep(0.5)
    else: pytest.fail(f"jupyter lab did not answer within 60 s: {(root/'lab.log').read_text()[-2000:]}")
    yield lab
    proc.terminate()
    try: proc.wait(timeout=20)
    except subprocess.TimeoutExpired: proc.kill()
    log.close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        yield b
        b.close()


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
    pytest.fail(f"the kernel of {name} was not idle within {timeout:.0f} s")


def run_notebook(browser, lab, name):
    "Open notebook `name` in JupyterLab, wait for an idle kernel, run all cells, wait until they are done; the page."
    page = browser.new_page(viewport=dict(width=1400, height=2400))   # tall: a whole panel fits in its screenshot
    page.goto(f"{lab.url}/lab/workspaces/{name}/tree/nbs/{name}.ipynb?reset&token={lab.token}")   # one notebook per workspace
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=60_000)
    wait_idle(lab, name)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator('.lm-Menu-itemLabel:text-is("Run All Cells")').click()
    page.wait_for_function("""() => { const ps = [...document.querySelectorAll(
                                 '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')];
                               return ps.length > 0 && ps.every(p => /\\[\\d+\\]/.test(p.textContent)); }""", timeout=LONG)
    wait_idle(lab, name)
    errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').all_inner_texts()
    assert not [e for e in errors if "Traceback" in e or "Error" in e], errors
    return page


def shot(loc, name):
    SHOTS.mkdir(exist_ok=True)
    loc.scroll_into_view_if_needed(); loc.screenshot(path=str(SHOTS/name))


def test_chat_panel_answers_public_and_hr_users_and_opens_a_cited_passage(browser, lab):
    page = run_notebook(browser, lab, "92_ui_chat")
    chat = page.locator(".keel-chat").first
    chat.scroll_into_view_if_needed()
    question = "What is the salary range for Band 3?"
    # a public caller is refused, and told why
    chat.locator(".keel-user select").select_option("public")
    chat.locator(".keel-question input").fill(question)
    chat.locator("button.keel-ask").click()
    sync_api.expect(chat.locator(".keel-refusal")).to_be_visible(timeout=60_000)
    sync_api.expect(chat.locator(".keel-refusal")).to_contain_text("answerability")
    shot(chat, "ui-chat-public-refusal.png")
    # an hr user gets the answer with citation chips; a chip opens the passage with the cited sentence marked
    chat.locator(".keel-user select").select_option("hr")
    sync_api.expect(chat.locator(".keel-tags input")).to_have_value("hr, public")
    chat.locator(".keel-question input").fill(question)
    chat.locator("button.keel-ask").click()
    sync_api.expect(chat.locator(".keel-answer-text")).to_contain_text("hr:", timeout=60_000)
    sync_api.expect(chat.locator(".keel-answer-text")).to_contain_text("92,000")
    chips = chat.locator("button.keel-chip")
    assert chips.count() >= 1
    chips.first.click()
    sync_api.expect(chat.locator(".keel-passage")).to_contain_text("Salary Bands 2026")
    sync_api.expect(chat.locator(".keel-passage mark")).to_be_visible()
    # the request's ledger rows
    chat.locator("button.keel-request").click()
    sync_api.expect(chat.locator(".keel-ledger-rows")).to_contain_text("retrieval")
    sync_api.expect(chat.locator(".keel-ledger-rows")).to_contain_text("answer")
    assert chat.locator(".keel-history option").count() >= 5   # three asked by the notebook, two here
    shot(chat, "ui-chat-hr-answer.png")
    page.close()


def test_approvals_panel_approves_edited_and_rejects_with_ledger_rows(browser, lab):
    page = run_notebook(browser, lab, "93_ui_approvals")
    panel = page.locator(".keel-approvals").first
    panel.scroll_into_view_if_needed()
    sync_api.expect(panel.locator(".keel-approval")).to_have_count(2)   # #3 and #4 are left pending by the notebook
    shot(panel, "ui-approvals-pending.png")
    panel.locator(".keel-reviewer input").fill("erin")
    row3 = panel.locator(".keel-approval-3")
    row3.locator("textarea").fill(json.dumps(dict(title="Renew the supplier contract", priority="high")))
    row3.locator("button.keel-approve").click()
    sync_api.expect(panel.locator(".keel-ledger")).to_contain_text("approval_modified", timeout=30_000)
    sync_api.expect(panel.locator(".keel-approval")).to_have_count(1)
    row4 = panel.locator(".keel-approval-4")
    row4.locator(".keel-reason input").fill("the door was fixed yesterday")
    row4.locator("button.keel-reject").click()
    sync_api.expect(panel.locator(".keel-ledger")).to_contain_text("approval_rejected", timeout=30_000)
    sync_api.expect(panel.locator(".keel-ledger")).to_contain_text("approval_requested")
    decided = panel.locator(".keel-decided-table")
    sync_api.expect(decided).to_contain_text("the door was fixed yesterday")
    sync_api.expect(decided).to_contain_text("erin")
    sync_api.expect(panel.locator(".keel-pending")).to_contain_text("Nothing is waiting")
    shot(panel, "ui-approvals.png")
    page.close()


def test_dashboard_filters_items_and_shows_an_item(browser, lab):
    page = run_notebook(browser, lab, "94_ui_dashboard")
    dash = page.locator(".keel-dashboard").first
    dash.scroll_into_view_if_needed()
    sync_api.expect(dash.locator(".keel-gate")).to_contain_text("Gate")
    rows = dash.locator(".keel-items-table tr")
    total = rows.count() - 1
    assert total > 5
    dash.locator(".keel-filter-category select").select_option("restricted")
    sync_api.expect(dash.locator(".keel-items")).not_to_contain_text(f"{total} of {total} items")
    cats = [c.strip() for c in dash.locator(".keel-items-table tr td:nth-child(2)").all_text_contents()]
    assert cats and set(cats) == {"restricted"} and len(cats) < total
    dash.locator(".keel-item-picker select").select_option(index=0)
    sync_api.expect(dash.locator(".keel-item-detail")).to_contain_text("Retrieved")
    sync_api.expect(dash.locator(".keel-trend .js-plotly-plot")).to_have_count(1, timeout=30_000)
    shot(dash, "ui-dashboard.png")
    page.close()


@pytest.mark.parametrize("name,text", [("94_ui_dashboard", "Items of the latest run"), ("92_ui_chat", "Salary Bands 2026"),
                                       ("93_ui_approvals", "we have paper")])
def test_committed_outputs_show_the_panels_without_a_kernel_run(browser, lab, name, text):
    "A reader who opens a panel notebook without running it sees the static pictures saved with it."
    page = browser.new_page(viewport=dict(width=1400, height=2400))
    page.goto(f"{lab.url}/lab/workspaces/saved_{name}/tree/nbs/saved_{name}.ipynb?reset&token={lab.token}")
    snap = page.locator(".keel-snapshot").first
    sync_api.expect(snap).to_be_visible(timeout=60_000)
    assert text in " ".join(page.locator(".keel-snapshot").all_inner_texts())
    assert page.get_by_text("Error displaying widget").count() == 0
    shot(snap, f"ui-saved-{name}.png")
    page.close()
