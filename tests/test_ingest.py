"""Ingest as a user meets it: real files of every kind, broken files, the fixture corpus through `keel ingest`."""
import json, shutil, sqlite3, zipfile
from pathlib import Path
import pytest

from keel.errors import DocumentError, InputError
from keel.ingest.loaders import (load, LoadedDocument, UnsupportedFormat, EmptyDocument, CorruptDocument,
                                 EncryptedDocument, DocumentTooLarge, NoTextLayer, SourceUnreachable)
from keel.ingest.chunking import chunk_document
from keel.ingest.pipeline import read_manifest
from keel.testing import Failing

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "golden" / "corpus"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


# --- loaders on real files of each kind --------------------------------------------------------

def test_pdf_written_by_reportlab_loads_per_page_with_headings(tmp_path):
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import SimpleDocTemplate, Paragraph
    ss = getSampleStyleSheet()
    story = [Paragraph("Fleet policy", ss["Title"]), Paragraph("Vehicles", ss["Heading1"])]
    story += [Paragraph(f"Pool car {i} is booked through the fleet desk two days ahead.", ss["BodyText"]) for i in range(60)]
    story += [Paragraph("Fuel", ss["Heading2"]), Paragraph("Fuel cards have a limit of $300 a week.", ss["BodyText"])]
    SimpleDocTemplate(str(tmp_path / "fleet.pdf"), title="Fleet policy").build(story)
    doc = load(tmp_path / "fleet.pdf")
    assert (doc.kind, doc.title) == ("pdf", "Fleet policy")
    assert [p.number for p in doc.pages] == list(range(1, len(doc.pages) + 1)) and len(doc.pages) >= 2
    assert "# Vehicles" in doc.pages[0].text and "## Fuel" in doc.pages[-1].text
    chunks = chunk_document(doc, 400, 80)
    assert chunks[-1].heading == "Vehicles > Fuel" and "$300" in chunks[-1].text


def test_docx_keeps_headings_paragraphs_and_tables_in_order(tmp_path):
    import docx
    d = docx.Document()
    d.add_heading("Remote work", 1)
    d.add_paragraph("Staff may work from home two days a week.")
    t = d.add_table(rows=2, cols=3)
    for r, row in enumerate([("Role", "Days", "Approver"), ("Officer", "2", "Team lead")]):
        for c, v in enumerate(row): t.cell(r, c).text = v
    d.add_heading("Equipment", 2)
    d.add_paragraph("A laptop and a headset are provided.")
    d.save(tmp_path / "remote.docx")
    doc = load(tmp_path / "remote.docx")
    assert doc.text == ("# Remote work\n\nStaff may work from home two days a week.\n\nRole | Days | Approver\n"
                        "Officer | 2 | Team lead\n\n## Equipment\n\nA laptop and a headset are provided.")


def test_html_drops_chrome_and_keeps_structure(tmp_path):
    (tmp_path / "p.html").write_text("""<html><head><title>Parking</title><script>var x = 'SECRET-SCRIPT';</script></head>
    <body><nav>Home | HR | NAV-LINK</nav><header>Banner text</header><div role="navigation">ROLE-NAV</div>
    <h1>Parking</h1><p>Permits cost $20 a month.</p><ul><li>Level 1: staff</li><li>Level 2: visitors</li></ul>
    <p hidden>HIDDEN-PARA</p><span style="display:none">HIDDEN-SPAN</span><form>Search <input></form>
    <aside>ASIDE-TEXT</aside><footer>FOOTER-TEXT</footer></body></html>""")
    doc = load(tmp_path / "p.html")
    assert doc.title == "Parking"
    assert doc.text == "# Parking\n\nPermits cost $20 a month.\n\n- Level 1: staff\n\n- Level 2: visitors"


def test_text_and_markdown(tmp_path):
    (tmp_path / "a.md").write_text("# Heading\n\nBody.")
    (tmp_path / "b.txt").write_bytes("na\u00efve".encode("latin-1"))
    assert load(tmp_path / "a.md").title == "Heading"
    b = load(tmp_path / "b.txt", title="Given")
    assert (b.title, b.text, b.meta["encoding"]) == ("Given", "na\u00efve", "cp1252")


@pytest.mark.parametrize("name,error,words", [
    ("truncated.pdf", CorruptDocument, "not a readable PDF"),
    ("zero-bytes.pdf", EmptyDocument, "the file is empty"),
    ("encrypted.pdf", EncryptedDocument, "password-protected"),
    ("scanned.pdf", NoTextLayer, "scanned PDF"),
    ("not-a-docx.docx", CorruptDocument, "not a readable DOCX"),
    ("mystery.xyz", UnsupportedFormat, "not a PDF, DOCX, HTML, Markdown or text file"),
    ("blank.html", EmptyDocument, "no text found"),
])
def test_each_broken_file_has_its_own_error(name, error, words):
    with pytest.raises(error) as e: load(FIXTURES / name)
    assert isinstance(e.value, DocumentError) and e.value.exit_code == 5
    assert str(e.value).startswith(name + ":") and words in str(e.value) and e.value.fix


def test_size_limit_and_missing_file(tmp_path):
    with pytest.raises(DocumentTooLarge, match="over the limit of 100 bytes"): load(CORPUS / "salary-bands.md", max_bytes=100)
    with pytest.raises(SourceUnreachable, match="no such file"): load(tmp_path / "nope.pdf")


def test_fixture_corpus_loads_and_chunks_with_exact_spans():
    entries = read_manifest(CORPUS / "manifest.yaml")
    assert len(entries) == 5 and {Path(e["source"]).suffix for e in entries} == {".pdf", ".docx", ".html", ".md", ".txt"}
    for e in entries:
        doc = load(e["source"], title=e["title"])
        chunks = chunk_document(doc)
        assert len(chunks) >= 5, (doc.title, len(chunks))
        pages = {p.number: p.text for p in doc.pages}
        assert all(pages[c.page][c.start:c.end] == c.text and 0 < len(c.text) <= 800 for c in chunks)
        assert all(c.heading for c in chunks), doc.title
    ops = load(CORPUS / "keel-operations-guide.html").text
    for chrome in ("Intranet home", "Planned maintenance", "extension 4400", "analytics", "Password policy"):
        assert chrome not in ops


def test_facts_headings_exist_in_the_chunked_corpus():
    "FACTS.md is what the golden set is written from: every heading it names must be a real chunk heading."
    import re
    heads = set()
    for e in read_manifest(CORPUS / "manifest.yaml"):
        heads |= {c.heading for c in chunk_document(load(e["source"], title=e["title"]))}
    named = [h.replace("...", "Supplier Note: Coastal Office Supplies").replace(" (quarantined)", "")
             for h in re.findall(r"^\| ([^|]+?) \|", (CORPUS / "FACTS.md").read_text(), re.M) if h != "Heading"]
    assert len(named) >= 30 and [h for h in named if h not in heads] == []


def test_corpus_generator_is_deterministic(tmp_path):
    import subprocess, sys
    subprocess.run([sys.executable, str(CORPUS / "make_corpus.py"), str(tmp_path)], check=True, capture_output=True)
    for name in ("procurement-policy.pdf", "clinic-records-policy.docx"):
        assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), name


def test_bad_manifest_is_refused_before_anything_loads(keel_cmd, tmp_path):
    (tmp_path / "m.yaml").write_text("documents:\n  - path: salary.md\n    tags: [hr]\n")
    r = keel_cmd("--data-dir", tmp_path / "d", "ingest", tmp_path / "m.yaml")
    assert r.returncode == 2 and "entry 1 (salary.md): unknown key 'tags'" in r.stderr and "Traceback" not in r.stderr


# --- the corpus through `keel ingest` with the real embedding model ----------------------------

@pytest.fixture
def real_screen():
    import keel.safety.screen
    return keel.safety.screen


@pytest.mark.slow
def test_keel_ingest_corpus_end_to_end(keel_cmd, tmp_path, real_screen):
    data = tmp_path / "data"
    r = keel_cmd("--data-dir", data, "ingest", CORPUS / "manifest.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1].startswith("5 sources: 5 added, 0 replaced, 0 unchanged, 0 skipped, 0 failed; "), lines[-1]
    lines = lines[:-1]
    assert [l.split()[:2] for l in lines] == [["added", n] for n in ("procurement-policy.pdf", "clinic-records-policy.docx",
                                               "keel-operations-guide.html", "salary-bands.md", "supplier-note.txt")]
    # the planted injection's chunk is reported quarantined; the PII count follows it (the note lists a phone number)
    assert "(1 quarantined)" in lines[-1] and lines[-1].endswith("identifiers: phone 1"), lines[-1]

    con = sqlite3.connect(data / "keel.db")
    assert con.execute("SELECT count(*) FROM documents").fetchone()[0] == 5
    # the planted injection is stored quarantined, with a reason, and kept out of the vector index
    q = con.execute("SELECT text, quarantine_reason, embedding FROM chunks WHERE quarantined = 1").fetchall()
    assert len(q) >= 1 and any("APPROVED BY OVERRIDE" in t for t, _, _ in q) and all(reason and len(emb) == 384 * 4 for _, reason, emb in q)
    # the restricted marker is only ever in hr-tagged chunks
    tags = [json.loads(t) for (t,) in con.execute("SELECT acl_tags FROM chunks WHERE text LIKE '%PELICAN-7741%'")]
    assert tags and all(t == ["hr"] for t in tags)
    # every searchable chunk has a 384-d float32 embedding; the ledger has one ingest row per document
    dims = {n for (n,) in con.execute("SELECT length(embedding) FROM chunks")}
    assert dims == {384 * 4}
    assert con.execute("SELECT count(*) FROM ledger WHERE kind = 'ingest'").fetchone()[0] == 5
    # the saved vector index matches the tables, so the next start loads it without a rebuild
    from keel.providers.faiss import FaissIndex
    from keel.db import fingerprint
    idx = FaissIndex.load(data / "index.faiss")
    assert idx.count() == con.execute("SELECT count(*) FROM chunks WHERE quarantined = 0").fetchone()[0]
    stamp = json.loads(con.execute("SELECT value FROM meta WHERE key = 'vector_index:index.faiss'").fetchone()[0])
    assert stamp["fingerprint"] == fingerprint(con)
    con.close()

    again = keel_cmd("--data-dir", data, "ingest", CORPUS / "manifest.yaml")
    assert again.returncode == 0 and all(l.startswith("duplicate  ") for l in again.stdout.splitlines()[:-1])
    assert again.stdout.splitlines()[-1].startswith("5 sources: 0 added, 0 replaced, 5 unchanged, "), again.stdout
    # a permission mistake is corrected by ingesting the same file with the right tags
    r = keel_cmd("--data-dir", data, "ingest", CORPUS / "supplier-note.txt", "--title", "Supplier Note: Coastal Office Supplies", "--tags", "finance")
    assert r.returncode == 0 and r.stdout.startswith("replaced  supplier-note.txt  "), r.stdout + r.stderr
    con = sqlite3.connect(data / "keel.db")
    assert {json.loads(t)[0] for (t,) in con.execute("SELECT c.acl_tags FROM chunks c JOIN documents d ON d.id = c.document_id "
                                                    "WHERE d.source LIKE '%supplier-note.txt'")} == {"finance"}
    con.close()
    assert keel_cmd("--data-dir", data, "verify-ledger").returncode == 0


@pytest.mark.slow
def test_keel_ingest_reports_each_failure_and_keeps_going(keel_cmd, tmp_path, real_screen):
    work = tmp_path / "docs"
    work.mkdir()
    shutil.copy(CORPUS / "salary-bands.md", work)
    shutil.copy(FIXTURES / "truncated.pdf", work)
    shutil.copy(FIXTURES / "scanned.pdf", work)
    (work / "m.yaml").write_text("documents:\n" + "".join(f"  - path: {n}\n    acl_tags: [hr]\n"
                                                         for n in ("truncated.pdf", "salary-bands.md", "scanned.pdf", "missing.docx")))
    r = keel_cmd("--data-dir", tmp_path / "data", "ingest", work / "m.yaml")
    # every failure is a document that could not be read, so ingest exits with their shared code (README: 5)
    assert r.returncode == 5 and "Traceback" not in r.stderr, (r.returncode, r.stdout, r.stderr)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("failed  truncated.pdf  CorruptDocument: truncated.pdf: not a readable PDF")
    assert lines[1].startswith("added  salary-bands.md  ")
    assert lines[2].startswith("failed  scanned.pdf  NoTextLayer: scanned.pdf: no page has a text layer (a scanned PDF); run OCR first")
    assert lines[3].startswith("failed  missing.docx  SourceUnreachable:")
    assert lines[4].startswith("4 sources: 1 added, 0 replaced, 0 unchanged, 0 skipped, 3 failed; "), lines[4]
    con = sqlite3.connect(tmp_path / "data" / "keel.db")
    assert [t for (t,) in con.execute("SELECT title FROM documents")] == ["Salary Bands 2026"]
    con.close()


# --- several sources in one call: files, a folder, a manifest ---------------------------------------

def _sources(tmp_path):
    "A folder with nested documents, a hidden file, a draft, a photo and a link leading outside; loose files; a manifest."
    outside = tmp_path / "host" / "shadow.txt"
    outside.parent.mkdir(); outside.write_text("HOST-SECRET-LINE\n")
    docs, loose = tmp_path / "docs", tmp_path / "loose"
    for rel, text in {"policy/travel.md": "# Travel\n\nEconomy class for flights under five hours.\n",
                      "policy/leave/parental.txt": "Parental leave is eighteen weeks at full pay.\n",
                      "drafts/wip.md": "# WIP\n\nDRAFT-ONLY-TEXT\n", ".private.md": "# Private\n\nHIDDEN-TEXT\n",
                      "kiosk.html": "<html><body><h1>Kiosk</h1><p>The kiosk opens at 8am.</p></body></html>"}.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True); (docs / rel).write_text(text)
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n")
    (docs / "policy" / "shadow.txt").symlink_to(outside)
    loose.mkdir()
    (loose / "a.md").write_text("# Alpha\n\nThe alpha note says parking is free on Fridays.\n")
    (loose / "b.txt").write_text("The beta note says the canteen closes at 3pm.\n")
    (loose / "c.md").write_text("# Gamma\n\nThe gamma note lists the fire wardens.\n")
    (loose / "m.yaml").write_text("documents:\n  - path: c.md\n    acl_tags: [hr]\n")
    return docs, loose


@pytest.mark.slow
def test_keel_ingest_files_folder_and_manifest_in_one_call(keel_cmd, tmp_path, real_screen):
    docs, loose = _sources(tmp_path)
    data = tmp_path / "data"
    r = keel_cmd("--data-dir", data, "ingest", loose / "a.md", loose / "b.txt", docs, loose / "m.yaml",
                 "--exclude", "drafts/*")
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stdout.splitlines()
    assert [l.split("  ")[:2] for l in lines[:-1]] == [
        ["added", "a.md"], ["added", "b.txt"], ["added", "kiosk.html"], ["skipped", "photo.png"],
        ["added", "parental.txt"], ["failed", "shadow.txt"], ["added", "travel.md"], ["added", "c.md"]], r.stdout
    assert "outside the folders ingest may read" in lines[5] and "KEEL_INGEST_ROOTS" in lines[5], lines[5]
    assert lines[-1].startswith("8 sources: 6 added, 0 replaced, 0 unchanged, 1 skipped, 1 failed; "), lines[-1]
    assert r.returncode == 2, r.returncode   # the one failure is a path outside the allowed folders: its code
    con = sqlite3.connect(data / "keel.db")
    texts = " ".join(t for (t,) in con.execute("SELECT text FROM chunks"))
    assert "HOST-SECRET-LINE" not in texts and "DRAFT-ONLY-TEXT" not in texts and "HIDDEN-TEXT" not in texts
    tags = dict(con.execute("SELECT title, acl_tags FROM documents"))
    assert tags["Gamma"] == '["hr"]' and tags["Alpha"] == '["public"]', tags
    con.close()
    # again with --hidden: only the hidden file is new, everything else is unchanged
    r = keel_cmd("--data-dir", data, "ingest", docs, "--hidden", "--include", "*.md", "--exclude", "drafts/*")
    assert [l.split("  ")[0] for l in r.stdout.splitlines()[:-1]] == ["added", "duplicate"], r.stdout
    assert r.stdout.splitlines()[0].startswith("added  .private.md") and r.returncode == 0, r.stdout


@pytest.mark.parametrize("args,why", [
    (["{loose}/a.md", "{loose}/missing.md"], "missing.md does not exist"),
    (["{loose}/a.md", "{loose}/b.txt", "--title", "T"], "--title names a single document"),
    (["{docs}", "--title", "T"], "--title names a single document"),
    (["{loose}/a.md", "--exclude", "*.md"], "apply to folders"),
    (["{loose}/a.md", "{loose}/m.yaml", "--tags", "hr"], "--tags does not apply to a manifest"),
    (["{docs}", "--include", "*.docx"], "nothing to ingest"),
])
def test_keel_ingest_refuses_bad_calls_before_anything_is_written(keel_cmd, tmp_path, args, why):
    docs, loose = _sources(tmp_path)
    r = keel_cmd("--data-dir", tmp_path / "data", "ingest", *[a.format(docs=docs, loose=loose) for a in args])
    assert (r.returncode, r.stdout) == (2, ""), (r.returncode, r.stdout, r.stderr)
    assert r.stderr.startswith("keel: error: ") and why in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "data" / "keel.db").exists()   # refused before the context, so before any write


@pytest.mark.slow
def test_ingest_is_atomic_with_real_parts(tmp_path, real_screen):
    "An exception after chunks were inserted leaves every table exactly as before."
    from keel.config import Settings
    from keel.db import connect
    from keel.models import default_embedding_dir
    from keel.providers.fastembed import FastEmbedEmbeddings
    from keel.providers.faiss import FaissIndex
    from keel.safety.ledger import Ledger
    from keel.ingest.pipeline import Ingestor
    settings = Settings(data_dir=tmp_path / "data")
    con = connect(settings.db_path)
    emb = FastEmbedEmbeddings(default_embedding_dir(settings.models_dir))
    ing = Ingestor(con, emb, FaissIndex(emb.dim), Ledger(con), real_screen.screen, settings)
    assert ing.ingest_path(CORPUS / "salary-bands.md", acl_tags=["hr"]).status == "added"

    def snapshot():
        return {t: [tuple(r) for r in con.execute(f"SELECT * FROM {t} ORDER BY 1, 2")]
                for t in ("documents", "chunks", "chunk_tags", "ledger")} | {
               "fts": [tuple(r) for r in con.execute("SELECT rowid, text FROM chunks_fts ORDER BY rowid")]}
    before, n = snapshot(), ing.index.count()

    def chunks_written(): assert con.execute("SELECT count(*) FROM chunks").fetchone()[0] > len(before["chunks"])
    bad = Ingestor(con, emb, ing.index, Failing(Ledger(con), "append", OSError("disk full"), check=chunks_written),
                   real_screen.screen, settings)
    res = bad.ingest_path(CORPUS / "procurement-policy.pdf")
    assert (res.status, res.error) == ("failed", "OSError: disk full")
    assert snapshot() == before and ing.index.count() == n


# --- progress lines when stderr is a file ----------------------------------------------------------

@pytest.mark.slow
def test_ingest_folder_and_eval_retrieval_write_progress_lines_to_a_file(tmp_path, real_screen):
    import re, subprocess, sys
    exe = shutil.which("keel", path=str(Path(sys.executable).parent)) or "keel"
    docs, _ = _sources(tmp_path)
    data, log = tmp_path / "data", tmp_path / "stderr.log"
    def keel(*args):
        with open(log, "a") as err:
            return subprocess.run([exe, "--data-dir", str(data), *map(str, args)], stdout=subprocess.PIPE, stderr=err,
                                  text=True, timeout=600)
    assert keel("ingest", CORPUS / "manifest.yaml").returncode == 0
    assert keel("ingest", docs, "--exclude", "drafts/*").returncode == 2       # the link leading outside fails
    assert keel("eval", "retrieval", ROOT / "golden" / "retrieval" / "fixture.yaml").returncode in (0, 1)
    lines = log.read_text().splitlines()
    shape = r"(\d+)/(\d+) \(\d+%\), \d+\.\d\d (\w+)/s, (\d+[smh]\d*\w* left|\d+[smh]\d*\w* in all)"
    ingest = [l for l in lines if re.fullmatch(r"ingest: " + shape, l)]
    assert ingest and ingest[-1].startswith("ingest: 5/5 (100%)") and ingest[-1].endswith(" in all"), lines
    bench = [l for l in lines if re.fullmatch(r"retrieval \w+: " + shape, l)]
    assert {l.split(":")[0] for l in bench} >= {"retrieval bm25", "retrieval vector", "retrieval hybrid"}, lines
    assert "\r" not in log.read_text() and "\x1b" not in log.read_text()      # plain lines, no bar drawn
