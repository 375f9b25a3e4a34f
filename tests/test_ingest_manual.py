"""A real manual as a newcomer brings it: ten pages of SQLite's HTML documentation, a site menu on every page and one
page whose heading tag is mismatched (`<h2>Documentation</h1>`), ingested with `keel ingest` and the real models."""
import json, shutil, sqlite3
from pathlib import Path
import pytest

from keel.ingest.chunking import MIN_CHUNK

PAGES = Path(__file__).resolve().parent / "fixtures" / "sqlite-manual" / "pages"
QUESTIONS = [   # (question, the page that answers it)
    ("Does SQLite need to be installed or configured before it is used?", "zeroconf.html"),
    ("Does SQLite run a separate server process?", "serverless.html"),
    ("What external libraries or operating system services does SQLite depend on?", "selfcontained.html"),
    ("Are SQLite transactions atomic even after a power failure?", "transactional.html"),
    ("How many files does an SQLite database occupy on disk?", "onefile.html"),
    ("What does the REPLACE command do?", "lang_replace.html"),
    ("How do I open an in-memory database with the name :memory:?", "inmemorydb.html"),
    ("What does the AUTOINCREMENT keyword change about how a ROWID is chosen?", "autoinc.html"),
    ("What is the largest database size SQLite supports?", "about.html"),
    ("What happens when the largest possible ROWID has already been used?", "autoinc.html"),
]
MORE = [
    ("Under what licence is the SQLite source code released?", "about.html"),
    ("What does the AUTOINCREMENT keyword cost in CPU, memory and disk?", "autoinc.html"),
    ("What is the sqlite_sequence table used for?", "autoinc.html"),
    ("Can two database connections share one in-memory database with a shared cache?", "inmemorydb.html"),
    ("What is a temporary database, opened with an empty file name?", "inmemorydb.html"),
    ("Is REPLACE an alias for INSERT OR REPLACE?", "lang_replace.html"),
    ("Can an SQLite database file be copied between 32-bit and 64-bit machines?", "onefile.html"),
    ("Does SQLite need the standard C library to build?", "selfcontained.html"),
    ("What is the difference between classic serverless and neo-serverless?", "serverless.html"),
    ("What happens to a transaction if the program crashes in the middle of it?", "transactional.html"),
]
OFF_CORPUS = ["What is the capital of Australia?", "How do I configure a PostgreSQL streaming replica?",
              "Who won the 2010 football world cup?", "What is the boiling point of ethanol?",
              "How many moons does Mars have?"]
EXTRACTIVE = {"KEEL_ANSWER_MODE": "extractive"}


def _golden(path: Path, answerable) -> Path:
    "A golden set of the tune split: these answerable questions and the five off-corpus ones."
    import yaml
    items = [dict(id=f"a{i}", question=q, user_tags=["public"], expected_answer="-", expected_sources=[page],
                  split="tune") for i, (q, page) in enumerate(answerable)]
    items += [dict(id=f"off{i}", question=q, user_tags=["public"], expected_answer="-", category="off_corpus",
                   expect_refusal=True, split="tune") for i, q in enumerate(OFF_CORPUS)]
    items += [dict(id="h0", question="What does REPLACE do?", user_tags=["public"], expected_answer="-",
                   expected_sources=["lang_replace.html"], split="heldout")]
    path.write_text(yaml.safe_dump({"items": items}))
    return path


def _hits_at_3(data: Path) -> list[bool]:
    "For each question, whether its page is among the top three passages retrieved."
    from keel.config import load_settings
    from keel.factory import build_context
    ctx = build_context(load_settings(data_dir=data))
    try: return [page in {Path(h.source).name for h in ctx.retriever.retrieve(q, None, k=3)} for q, page in QUESTIONS]
    finally: ctx.close()


@pytest.fixture(scope="module")
def manual(tmp_path_factory):
    "The manual ingested twice: as it is, and with the broken page's heading tag corrected; (base, ingest outputs)."
    from subprocess import run
    import sys
    keel = Path(sys.executable).parent / "keel"
    base = tmp_path_factory.mktemp("manual")
    shutil.copytree(PAGES, base / "all")
    shutil.copytree(PAGES, base / "fixed")
    page = base / "fixed" / "docs.html"
    broken = '<h2 align="center">Documentation</h1>'
    assert page.read_text().count(broken) == 1
    page.write_text(page.read_text().replace(broken, '<h2 align="center">Documentation</h2>'))
    out = {k: run([str(keel), "--data-dir", str(base / f"data-{k}"), "ingest", str(base / k)], capture_output=True,
                  text=True, timeout=600) for k in ("all", "fixed")}
    return base, out


def test_broken_heading_and_menus_leave_no_slivers_and_say_so(manual, keel_cmd):
    base, out = manual
    r = out["all"]
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    docs_line = next(l for l in lines if l.startswith("added  docs.html"))
    assert "warning: 1 heading held body text (a mismatched or unclosed tag), read as body" in docs_line, docs_line
    assert "repeated blocks (navigation, footers) dropped" in lines[-1] and "1 document with warnings" in lines[-1]
    con = sqlite3.connect(base / "data-all" / "keel.db")
    rows = con.execute("SELECT d.source, c.text, c.heading FROM chunks c JOIN documents d ON d.id = c.document_id").fetchall()
    # the broken page is chunked like the others: no chunk under the floor, no heading the length of a page
    assert all(len(t.strip()) >= MIN_CHUNK for _, t, _ in rows), min(len(t) for _, t, _ in rows)
    assert max(len(h) for _, _, h in rows) < 200
    docs_chunks = [t for s, t, _ in rows if s.endswith("docs.html")]
    assert 10 < len(docs_chunks) < 60
    # the site menu (Home, Menu, About, Documentation, Download ...) is on every page and in no chunk
    assert not [t for _, t, _ in rows if "- Home" in t and "- Download" in t]
    assert not [t for _, t, _ in rows if "Choose any three" in t]
    meta = [json.loads(m) for (m,) in con.execute("SELECT meta FROM documents")]
    assert all(m["boilerplate"] >= 10 for m in meta)
    con.close()
    st = keel_cmd("--data-dir", base / "data-all", "status")
    assert st.returncode == 0 and "docs.html: 1 heading held body text" in st.stdout, st.stdout
    assert "repeated blocks dropped from 10 HTML pages" in st.stdout


def test_the_broken_page_chunks_and_retrieves_as_if_its_markup_were_right(manual):
    base, out = manual
    assert out["fixed"].returncode == 0 and "warning" not in out["fixed"].stdout, out["fixed"].stdout
    chunks = lambda k: sqlite3.connect(base / f"data-{k}" / "keel.db").execute(
        "SELECT c.text, c.heading FROM chunks c JOIN documents d ON d.id = c.document_id "
        "WHERE d.source LIKE '%docs.html' ORDER BY c.ord").fetchall()
    assert chunks("all") == chunks("fixed")
    broken, fixed = _hits_at_3(base / "data-all"), _hits_at_3(base / "data-fixed")
    assert sum(fixed) >= 7, fixed              # the questions are answerable from their pages
    assert broken == fixed


def test_answer_mode_is_an_option_of_the_call(manual, keel_cmd):
    base, _ = manual
    r = keel_cmd("--data-dir", base / "data-all", "ask", "Does SQLite run a separate server process?",
                 "--answer-mode", "extractive", "--format", "json", env={"KEEL_ANSWER_MODE": "generative"})
    assert r.returncode == 0, r.stderr
    ans = json.loads(r.stdout)
    assert ans["kind"] in ("answer", "evidence") and "server process" in json.dumps(ans), ans   # no model was loaded
    bad = keel_cmd("--data-dir", base / "data-all", "ask", "q", "--answer-mode", "fast")
    assert bad.returncode == 2 and "invalid choice: 'fast'" in bad.stderr
    assert "--answer-mode" in keel_cmd("eval", "run", "--help").stdout


def test_calibrate_tune_split_says_precisely_why_it_cannot(manual, keel_cmd, tmp_path):
    base, _ = manual
    golden = _golden(tmp_path / "golden.yaml", (QUESTIONS + MORE)[:15])
    r = keel_cmd("--data-dir", base / "data-all", "calibrate", golden, "--split", "tune", env=EXTRACTIVE)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "(split tune: 20 of 21 items): 15 usable items, and calibration needs at least 20" in r.stderr, r.stderr
    assert "skipped: 5 expects a refusal (a refused question cannot calibrate" in r.stderr
    assert "add 5 answerable items with expected_sources to the golden set in split tune" in r.stderr
    assert not (base / "data-all" / "calibration.json").exists()


def test_calibration_survives_an_edited_figure_not_a_replaced_half(tmp_path, keel_cmd):
    pages, data = tmp_path / "pages", tmp_path / "data"
    shutil.copytree(PAGES, pages)
    assert keel_cmd("--data-dir", data, "ingest", pages, env=EXTRACTIVE).returncode == 0
    golden = _golden(tmp_path / "golden.yaml", QUESTIONS + MORE)
    run = lambda d: keel_cmd("--data-dir", data, "eval", "run", golden, "--no-judge", "--quiet", "--report-dir",
                             tmp_path / d, "--baseline", tmp_path / "none.json", env=EXTRACTIVE)
    before = run("before")
    assert before.returncode == 0, before.stdout + before.stderr
    r = keel_cmd("--data-dir", data, "calibrate", golden, "--split", "tune", env=EXTRACTIVE)
    assert r.returncode == 0 and "calibrated on 20 items" in r.stdout, r.stdout + r.stderr
    # a run before and a run after calibrating: compare names the thresholds in force, not "nothing differs"
    assert run("after").returncode == 0
    c = keel_cmd("eval", "compare", *[next((tmp_path / d).glob("eval-*.json")) for d in ("before", "after")])
    line = next(l for l in c.stdout.splitlines() if l.strip().startswith("calibration:"))
    assert "shipped default: threshold 0.6209" in line and "-> corpus calibration of" in line, c.stdout
    assert "no recorded configuration field differs" not in c.stdout
    # one figure corrected in one page: the calibration still applies, and status says how much changed
    about = pages / "about.html"
    about.write_text(about.read_text().replace("281 terabytes", "280 terabytes"))
    assert keel_cmd("--data-dir", data, "ingest", about, env=EXTRACTIVE).returncode == 0
    st = keel_cmd("--data-dir", data, "status", env=EXTRACTIVE).stdout
    assert "corpus calibration of" in st and "refused" not in st, st
    assert "of the chunks changed since it was measured; it applies until 10% have" in st, st
    # half the pages replaced by other text: refused, with the share that changed
    for p in sorted(pages.glob("*.html"))[:5]:
        p.write_text(p.read_text().replace("SQLite", "SQLite3"))
    assert keel_cmd("--data-dir", data, "ingest", pages, env=EXTRACTIVE).returncode == 0
    st = keel_cmd("--data-dir", data, "status", env=EXTRACTIVE).stdout
    assert "stored calibration refused" in st and "of its chunks changed, more than 10%" in st, st


def test_loaded_pages_through_the_api_lose_their_menus_too(tmp_path):
    "`Ingestor.ingest_documents` counts every page's blocks before stripping any, as `keel ingest` does."
    from keel.config import load_settings
    from keel.factory import build_context
    from keel.ingest.loaders import load
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=tmp_path / "data"))
    try:
        res = ctx.ingestor.ingest_documents([load(p) for p in sorted(PAGES.glob("*.html"))], progress=False)
        assert len(res) == 10 and all(r.boilerplate >= 10 for r in res), [(r.source, r.boilerplate) for r in res]
        texts = [t for (t,) in ctx.con.execute("SELECT text FROM chunks")]
        assert texts and not [t for t in texts if "- Home" in t and "- Download" in t]
    finally: ctx.close()


def test_check_finds_the_scores_moved_where_few_chunks_changed(tmp_path, keel_cmd):
    "Three small pages that answer six of the twenty probes moved behind a tag: 0% of the chunks' text changed."
    pages, data = tmp_path / "pages", tmp_path / "data"
    shutil.copytree(PAGES, pages)
    assert keel_cmd("--data-dir", data, "ingest", pages, env=EXTRACTIVE).returncode == 0
    golden = _golden(tmp_path / "golden.yaml", QUESTIONS + MORE)
    assert keel_cmd("--data-dir", data, "calibrate", golden, "--split", "tune", env=EXTRACTIVE).returncode == 0
    r = keel_cmd("--data-dir", data, "calibrate", "--check", env=EXTRACTIVE)
    assert r.returncode == 0 and "20 probes asked again" in r.stdout and "holds" in r.stdout, r.stdout + r.stderr
    moved = [pages / n for n in ("selfcontained.html", "transactional.html", "lang_replace.html")]
    assert keel_cmd("--data-dir", data, "ingest", *moved, "--tags", "internal", env=EXTRACTIVE).returncode == 0
    st = keel_cmd("--data-dir", data, "status", env=EXTRACTIVE).stdout
    assert "corpus calibration of" in st and "refused" not in st, st        # the chunk rule alone keeps it
    r = keel_cmd("--data-dir", data, "calibrate", "--check", env=EXTRACTIVE)
    assert r.returncode == 1 and "moved: the calibration is marked stale" in r.stdout, r.stdout + r.stderr
    st = keel_cmd("--data-dir", data, "status", env=EXTRACTIVE).stdout
    assert "stored calibration refused" in st and "answerability of its 20 probes moved" in st, st
    keel_cmd("--data-dir", data, "export-log", tmp_path / "ledger.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert [x["payload"]["moved"] for x in rows if x["kind"] == "calibration_check"] == [False, True]
    r = keel_cmd("--data-dir", tmp_path / "empty", "calibrate", "--check")
    assert r.returncode == 2 and "no stored calibration" in r.stderr and "Traceback" not in r.stderr
