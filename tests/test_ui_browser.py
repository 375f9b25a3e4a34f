"""The panels in a real JupyterLab, driven by Chromium through Playwright.

A `jupyter lab` server starts on loopback (a random free port, a token, `--allow-root`) over a temporary folder holding
copies of the panel notebooks (so nothing the browser does can touch the repository's notebooks) and a link to
`golden/`. Playwright drives Debian's Chromium, launched by its `executable_path` (no browser download). Each test opens
a notebook, runs every cell from the Run menu, waits for the kernel to go idle, then uses the panel as a person would.
Screenshots of each panel go to `build/screenshots/ui-*.png` (git-ignored; `reports/` is for evaluation reports).

Chromium comes from Debian (`make test` installs it as root when it is missing); without it these tests are skipped,
with the reason printed.
"""
import json, sys, time
from pathlib import Path
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from labdriver import ROOT, CHROMIUM, LabError, start_lab, launch, run_notebook, open_notebook, with_kernelspec

SHOTS = ROOT/"build"/"screenshots"
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: `make install` installs the dev requirements")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (`make test` installs it as root; "
                                                          "or `apt-get install chromium`): the browser tests need it")
NOTEBOOKS = ("92_ui_chat", "93_ui_approvals", "94_ui_dashboard", "95_ui_compare", "96_ui_label")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    "A live JupyterLab over copies of the panel notebooks; stopped after the module."
    root = tmp_path_factory.mktemp("lab")
    (root/"nbs").mkdir(); (root/"golden").symlink_to(ROOT/"golden")
    for n in NOTEBOOKS:   # a kernelspec so that JupyterLab starts the kernel without asking
        nb = with_kernelspec(json.loads((ROOT/"nbs"/f"{n}.ipynb").read_text()))
        (root/"nbs"/f"{n}.ipynb").write_text(json.dumps(nb))
        (root/"nbs"/f"saved_{n}.ipynb").write_text(json.dumps(nb))   # opened without running: the committed outputs
    try:
        with start_lab(root) as lab: yield lab
    except LabError as e: pytest.fail(str(e))


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def shot(loc, name):
    "A screenshot of element `loc`; the page grows first when the element is taller than the window."
    SHOTS.mkdir(parents=True, exist_ok=True)
    h = (loc.bounding_box() or {}).get("height", 0)
    if h > loc.page.viewport_size["height"] - 300: loc.page.set_viewport_size(dict(width=1400, height=int(h) + 400))
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
    # between a refusal and an answer: no answer confirmed, the closest passages shown apart from an answer, with chips
    chat.locator(".keel-question input").fill("Who must approve a purchase worth $120,000?")
    chat.locator("button.keel-ask").click()
    sync_api.expect(chat.locator(".keel-evidence")).to_contain_text("No answer confirmed", timeout=60_000)
    assert chat.locator(".keel-answer-text").count() == 0 and chat.locator("button.keel-chip").count() >= 1
    shot(chat, "ui-chat-public-evidence.png")
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
    assert chat.locator(".keel-history option").count() >= 7   # four asked by the notebook, three here
    shot(chat, "ui-chat-hr-answer.png")
    # the notebook's second panel has anywidget chips: the same question, its chip opens the same passage
    other = page.locator(".keel-chat-anywidget").first
    other.scroll_into_view_if_needed()
    other.locator(".keel-user select").select_option("hr")
    other.locator(".keel-question input").fill(question)
    other.locator("button.keel-ask").click()
    sync_api.expect(other.locator(".keel-answer-text")).to_contain_text("92,000", timeout=60_000)
    other.locator(".keel-anychip button.keel-chip").first.click()
    sync_api.expect(other.locator(".keel-passage")).to_contain_text("Salary Bands 2026")
    sync_api.expect(other.locator(".keel-passage mark")).to_be_visible()
    shot(other, "ui-chat-anywidget-chip.png")
    page.close()


def test_report_page_shows_an_evidence_response(browser, tmp_path):
    "The golden run's HTML report (extractive, the fixture corpus): evidence responses marked apart from answers."
    from keel.config import load_settings
    from keel.factory import build_context
    from keel.evals.run import run_eval
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=tmp_path/"data", answer_mode="extractive"))
    ctx.ingestor.ingest_manifest(ROOT/"golden"/"corpus"/"manifest.yaml", progress=False)
    res = run_eval(ctx, ROOT/"golden"/"golden.yaml", tmp_path/"reports", judge=False, progress=False,
                   baseline_path=tmp_path/"no-baseline.json")
    ctx.close()
    page = browser.new_page(viewport=dict(width=1400, height=900))
    page.goto(res.report_html_path.as_uri())
    cats = page.locator("h2", has_text="Refusal by category").locator("xpath=following-sibling::table[1]")
    sync_api.expect(cats).to_contain_text("answerable")
    shot(cats, "ui-report-evidence-categories.png")
    row = page.locator("tr", has=page.locator("span.evidence", has_text="expected source shown")).first
    sync_api.expect(row).to_contain_text("I could not confirm an answer")
    shot(row, "ui-report-evidence.png")
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


def test_label_panel_accepts_rejects_and_labels_into_the_yaml_and_the_ledger(browser, lab):
    import sqlite3, yaml
    page = run_notebook(browser, lab, "96_ui_label")
    panel = page.locator(".keel-label").last            # the notebook's last panel: fresh files, nothing decided
    panel.scroll_into_view_if_needed()
    golden, labels = panel.locator(".keel-files").inner_text().removeprefix("writes ").split(" and ")
    first = panel.locator(".keel-draft-head b").first.inner_text().strip()
    shot(panel, "ui-label-pending.png")
    panel.locator(".keel-reviewer input").fill("dana")
    panel.locator(".keel-draft-answer textarea").fill("An answer dana wrote.")
    panel.locator("button.keel-accept").click()
    sync_api.expect(panel.locator(".keel-status")).to_contain_text(f"{first} edited and accepted by dana", timeout=30_000)
    sync_api.expect(panel.locator(".keel-ledger")).to_contain_text("dana")
    # the next draft replaces the accepted one once the panel re-renders (the status can land first)
    sync_api.expect(panel.locator(".keel-draft-head b").first).not_to_have_text(first, timeout=30_000)
    second = panel.locator(".keel-draft-head b").first.inner_text().strip()
    assert second != first
    panel.locator(".keel-reason input").fill("not what the passage says")
    panel.locator("button.keel-reject").click()
    sync_api.expect(panel.locator(".keel-status")).to_contain_text(f"{second} rejected by dana", timeout=30_000)
    answer = panel.locator(".keel-judge-head b").first.inner_text().strip()
    for m in ("groundedness", "relevance"): panel.locator(f".keel-pass-{m} input").check()
    panel.locator("button.keel-save-label").click()
    sync_api.expect(panel.locator(".keel-status")).to_contain_text(f"{answer} labelled by dana", timeout=30_000)
    sync_api.expect(panel.locator(".keel-judge-progress")).to_contain_text("groundedness")
    shot(panel, "ui-label.png")
    items = {x["id"]: x for x in yaml.safe_load(Path(golden).read_text())["items"]}
    assert list(items) == [first] and items[first]["expected_answer"] == "An answer dana wrote."
    lab_rows = {x["id"]: x for x in yaml.safe_load(Path(labels).read_text())["labels"]}
    assert lab_rows[answer]["human"] == dict(groundedness=1, relevance=1, correctness=0)
    con = sqlite3.connect(Path(golden).parent.parent/"data"/"keel.db")   # the notebook's data directory
    rows = [json.loads(p) for (p,) in con.execute("SELECT payload FROM ledger WHERE kind = 'label' ORDER BY seq")]
    con.close()
    mine = [(r["item"], r["decision"]) for r in rows if r["by"] == "dana"]
    assert mine == [(first, "edit"), (second, "reject"), (answer, "label")], mine
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
    # the second run picker opens the comparison of an earlier run with the latest, and closes it again
    dash.locator(".keel-compare-picker-run select").select_option(index=2)
    view = dash.locator(".keel-compare")
    sync_api.expect(view.locator(".keel-compare-verdict")).to_be_visible(timeout=30_000)
    sync_api.expect(view.locator(".keel-flips")).to_contain_text("must_include")
    sync_api.expect(view.locator(".keel-compare-chart .js-plotly-plot")).to_have_count(1, timeout=30_000)
    shot(dash, "ui-dashboard-compare.png")
    dash.locator(".keel-compare-picker-run select").select_option(index=0)
    sync_api.expect(view).to_have_count(0)
    page.close()


def test_compare_view_shows_flips_chart_and_both_answers_of_a_clicked_item(browser, lab):
    page = run_notebook(browser, lab, "95_ui_compare")
    view = page.locator(".keel-compare").first
    view.scroll_into_view_if_needed()
    sync_api.expect(view.locator(".keel-compare-verdict")).to_contain_text("context_precision")
    sync_api.expect(view.locator(".keel-flips")).to_contain_text("must_include")
    sync_api.expect(view.locator(".keel-compare-metrics")).to_contain_text("min. detectable")
    sync_api.expect(view.locator(".keel-compare-chart .js-plotly-plot")).to_have_count(1, timeout=30_000)
    buttons = view.locator("button.keel-flip-item")
    assert buttons.count() >= 1
    name = buttons.first.inner_text().strip()
    buttons.first.click()
    detail = view.locator(".keel-compare-detail")
    sync_api.expect(detail).to_contain_text(name)
    sync_api.expect(detail).to_contain_text("Flipped")
    sync_api.expect(detail.locator(".keel-side-a")).to_contain_text("Cites")        # both answers, with their citations
    sync_api.expect(detail.locator(".keel-side-b")).to_contain_text("Cites")
    shot(view, "ui-compare.png")
    view.locator(".keel-compare-picker select").select_option("proc-quotes-mid")   # any item, flipped or not
    sync_api.expect(detail).to_contain_text("How many quotes are needed", timeout=30_000)
    sync_api.expect(detail).to_contain_text("Nothing flipped")
    page.close()


@pytest.mark.parametrize("name,text", [("94_ui_dashboard", "Items of the latest run"), ("92_ui_chat", "Salary Bands 2026"),
                                       ("93_ui_approvals", "we have paper"), ("95_ui_compare", "Items that flipped"),
                                       ("96_ui_label", "Golden items, for the calibration")])
def test_committed_outputs_show_the_panels_without_a_kernel_run(browser, lab, name, text):
    "A reader who opens a panel notebook without running it sees the static pictures saved with it."
    page = open_notebook(browser, lab, f"nbs/saved_{name}.ipynb", f"saved_{name}")
    snap = page.locator(".keel-snapshot").first
    sync_api.expect(snap).to_be_visible(timeout=60_000)
    assert text in " ".join(page.locator(".keel-snapshot").all_text_contents())   # off-screen cells have no innerText
    assert page.get_by_text("Error displaying widget").count() == 0
    shot(snap, f"ui-saved-{name}.png")
    page.close()
