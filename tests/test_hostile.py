"""Hostile input at ingest, as an adversary would try it: one test per class of attack, full size, default limits.

Each file is built here from nothing (tests/hostile.py). Failures go through `keel ingest` as an operator
meets them (exit status, one line per source, the fix); what must load is read through the same child
parser process the pipeline uses, so no embedding model is needed.
"""
import os, socket, subprocess, shutil, sys, time
from pathlib import Path
import pytest

import hostile
from keel import airgap
from keel.errors import AirgapViolation, InputError
from keel.ingest.loaders import load, Limits, ParserProcess, DocumentTooLarge, NotText
from keel.yamlfile import parse_yaml

PASSWD = Path("/etc/passwd")


@pytest.fixture(scope="module")
def parser():
    p = ParserProcess()
    yield p
    p.close()


def ingest(keel_cmd, tmp_path, *args, timeout=120, env=None):
    return keel_cmd("--data-dir", tmp_path/"data", "ingest", *args, timeout=timeout, env=env)


# --- 1. confinement --------------------------------------------------------------------------------

def test_manifest_cannot_reach_outside_its_folder(keel_cmd, tmp_path):
    secret = tmp_path/"host"/"shadow.txt"; secret.parent.mkdir(); secret.write_text("root:HOST-SECRET-LINE\n")
    mf = hostile.escaping_manifest(tmp_path/"corpus", secret)
    r = ingest(keel_cmd, tmp_path, mf)
    lines = r.stdout.splitlines()[:-1]   # the last line is the call's summary
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 3 and all(l.startswith("failed  ") for l in lines), lines
    assert all("outside the folders ingest may read" in l and "KEEL_INGEST_ROOTS" in l for l in lines), lines
    assert f"(it leads to {secret.resolve()})" in lines[2]   # the symlink is named with where it leads
    db = tmp_path/"data"/"keel.db"
    if db.exists():
        import sqlite3
        assert sqlite3.connect(db).execute("SELECT count(*) FROM documents").fetchone()[0] == 0


def test_ingest_roots_widen_confinement(tmp_path):
    from keel.ingest.pipeline import confine
    secret = tmp_path/"host"/"shadow.txt"; secret.parent.mkdir(); secret.write_text("x")
    (tmp_path/"corpus").mkdir(); (tmp_path/"corpus"/"link.txt").symlink_to(secret)
    with pytest.raises(InputError, match="KEEL_INGEST_ROOTS"): confine(tmp_path/"corpus"/"link.txt", [tmp_path/"corpus"])
    assert confine(tmp_path/"corpus"/"link.txt", [tmp_path/"corpus", secret.parent]) == secret.resolve()


def test_direct_path_symlink_out_of_its_folder_is_refused(keel_cmd, tmp_path):
    (tmp_path/"docs").mkdir(); (tmp_path/"docs"/"passwd.txt").symlink_to(PASSWD)
    r = ingest(keel_cmd, tmp_path, tmp_path/"docs"/"passwd.txt")
    assert r.returncode == 2 and "outside the folders ingest may read" in r.stdout, (r.stdout, r.stderr)


# --- 2. limits per document ------------------------------------------------------------------------

def test_pdf_pages_sharing_one_huge_stream_stop_quickly(keel_cmd, tmp_path):
    pdf = hostile.shared_stream_pdf(tmp_path/"shared.pdf")
    assert pdf.stat().st_size < 40_000
    r = ingest(keel_cmd, tmp_path, pdf, timeout=60)   # today's main runs past 90 s
    assert r.returncode == 5, (r.stdout, r.stderr)
    assert "bytes of page content is over the limit of 30,000,000" in r.stdout and "KEEL_MAX_PDF_STREAM_BYTES" in r.stdout


def test_pdf_page_count_limit(tmp_path):
    pdf = hostile.shared_stream_pdf(tmp_path/"many.pdf", pages=50, lines=10)
    with pytest.raises(DocumentTooLarge, match="50 pages is over the limit of 40 pages"): load(pdf, limits=Limits(pdf_pages=40))


def test_pdf_stream_decompression_bomb_is_refused(parser, tmp_path):
    pdf = hostile.flate_bomb_pdf(tmp_path/"zeros.pdf")
    assert pdf.stat().st_size < 1_000_000
    with pytest.raises(DocumentTooLarge, match="decompression limit"): load(pdf, parser=parser)


def test_docx_zip_bomb_is_refused_before_extraction(keel_cmd, tmp_path):
    bomb = hostile.docx_bomb(tmp_path/"bomb.docx", unzipped=300_000_000)
    assert bomb.stat().st_size < 3_000_000
    r = ingest(keel_cmd, tmp_path, bomb, timeout=60)
    assert r.returncode == 5, (r.stdout, r.stderr)
    assert "decompressed bytes is over the limit of 200,000,000" in r.stdout and "KEEL_MAX_UNZIPPED_BYTES" in r.stdout


def test_yaml_billion_laughs_manifest_is_refused_fast_and_short(keel_cmd, tmp_path):
    mf = hostile.laughs_manifest(tmp_path/"laughs.yaml")
    assert mf.stat().st_size < 1000
    r = ingest(keel_cmd, tmp_path, mf, timeout=60)   # today's main: about half a minute and gigabytes
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "would expand the document by more than 10,000 nodes" in r.stderr
    assert len(r.stderr) < 600 and "lol" not in r.stderr and "internal error" not in r.stderr


def test_every_yaml_reader_bounds_aliases():
    from keel.evals.golden import load_golden
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = hostile.laughs_manifest(Path(d)/"golden.yaml")
        with pytest.raises(InputError, match="would expand"): load_golden(p)
        with pytest.raises(InputError, match="would expand"): parse_yaml(p.read_text())


def test_deep_html_text_is_kept(parser, tmp_path):
    doc = load(hostile.deep_html(tmp_path/"deep.html", depth=600), parser=parser)   # today's main drops it (depth > 255)
    assert doc.text == "Deep text survives."


def test_html_deeper_than_the_limit_is_refused_with_the_depth(keel_cmd, tmp_path):
    r = ingest(keel_cmd, tmp_path, hostile.deep_html(tmp_path/"deeper.html", depth=1500))
    assert r.returncode == 5, (r.stdout, r.stderr)
    assert "levels of element nesting is over the limit of 1,000" in r.stdout and "KEEL_MAX_HTML_DEPTH" in r.stdout


def test_aes256_pdf_with_empty_password_opens(parser, tmp_path):
    doc = load(hostile.aes_pdf(tmp_path/"aes.pdf"), parser=parser)   # main without `cryptography`: refused
    assert "encrypted files are opened with the empty password" in doc.text


def test_overrunning_parser_is_stopped(parser, tmp_path):
    pdf = hostile.shared_stream_pdf(tmp_path/"slow.pdf", pages=4, lines=100_000)
    t = time.monotonic()
    with pytest.raises(DocumentTooLarge, match="took longer than the limit of 1 s"):
        load(pdf, parser=parser, limits=Limits(seconds=1, pdf_stream_bytes=10**9))
    assert time.monotonic() - t < 30   # stopped, not waited for (generous: the machine is shared)
    assert load(hostile.deep_html(tmp_path/"after.html", depth=3), parser=parser).text == "Deep text survives."   # a fresh child serves on


def test_parser_memory_is_capped(parser, tmp_path):
    html = tmp_path/"big.html"
    html.write_bytes(b"<html><body>" + b"<p>" + b"word " * 4_000_000 + b"</p></body></html>")
    with pytest.raises(DocumentTooLarge, match="memory|parser process ended"):
        load(html, parser=parser, limits=Limits(memory=20_000_000))


def test_error_messages_are_bounded(keel_cmd, tmp_path):
    long = "x" * 50_000
    (tmp_path/"m.yaml").write_text(f"documents:\n  - path: {long}.pdf\n    acl_tags: [public]\n")
    r = ingest(keel_cmd, tmp_path, tmp_path/"m.yaml")
    assert r.returncode == 5 and len(r.stdout) < 2_500 and "characters cut" in r.stdout, len(r.stdout)


# --- 3. text decoding ------------------------------------------------------------------------------

def test_utf16_with_bom_is_decoded(parser, tmp_path):
    doc = load(hostile.utf16_text(tmp_path/"cafe.txt"), parser=parser)
    assert doc.title == "Caf\u00e9 hours" and "na\u00efve r\u00e9sum\u00e9s" in doc.text and "\x00" not in doc.text
    assert doc.meta["encoding"] == "utf-16-le"


def test_random_bytes_named_txt_are_not_text(keel_cmd, tmp_path):
    r = ingest(keel_cmd, tmp_path, hostile.random_txt(tmp_path/"random.txt"))
    assert r.returncode == 5, (r.stdout, r.stderr)
    assert r.stdout.startswith("failed  random.txt  NotText: random.txt: not text") and "(fix: " in r.stdout


# --- 4. output integrity ---------------------------------------------------------------------------

def test_file_name_cannot_forge_a_status_line(keel_cmd, tmp_path):
    (tmp_path/"in").mkdir()
    f = hostile.forged_name_file(tmp_path/"in")
    r = ingest(keel_cmd, tmp_path, f, env={"KEEL_MAX_DOCUMENT_BYTES": "10"})   # fails fast, before any model loads
    assert r.stdout.count("\n") == 2 and r.stdout.splitlines()[1].startswith("1 source: "), r.stdout   # its line, the summary
    assert "\x1b" not in r.stdout and "\\n" in r.stdout and "\\x1b[2K" in r.stdout
    assert r.returncode == 5


def test_closed_pipe_ends_quietly(keel_cmd, tmp_path):
    exe = shutil.which("keel", path=str(Path(sys.executable).parent)) or "keel"
    p = subprocess.Popen([exe, "--data-dir", str(tmp_path/"data"), "ask", "When does the cafe open?"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.close()   # the reader goes away before anything is written, as `| head -0` would
    err = p.stderr.read(); p.wait(timeout=300)
    assert "internal error" not in err and "Traceback" not in err and "BrokenPipeError" not in err, err
    assert p.returncode == 141, (p.returncode, err)


def test_malformed_manifests_are_invalid_input_not_internal_errors(keel_cmd, tmp_path):
    for i, text in enumerate(["documents:\n  - {[a, b]: x}\n", "{[documents]: x}\n", "documents:\n  - {1: a, path: a.md, acl_tags: [public]}\n",
                              "documents: " + "[" * 3000 + "]" * 3000 + "\n"]):
        (tmp_path/f"m{i}.yaml").write_text(text)
        r = ingest(keel_cmd, tmp_path, tmp_path/f"m{i}.yaml")
        assert r.returncode == 2 and "internal error" not in r.stderr and r.stderr.count("\n") == 1, (text[:40], r.stderr)


def test_each_failure_exits_with_its_documented_code(keel_cmd, tmp_path):
    (tmp_path/"empty.md").write_text("")
    r = ingest(keel_cmd, tmp_path, tmp_path/"empty.md")
    assert r.returncode == 5 and "(fix: check that the right file was given)" in r.stdout
    r = ingest(keel_cmd, tmp_path, "http://evil.localhost/policy.html", env={"KEEL_AIRGAP": "true"})
    assert r.returncode == 4 and "air-gap refused" in r.stdout and "KEEL_AIRGAP_ALLOW" in r.stdout, (r.stdout, r.stderr)


# --- 5. air-gap names ------------------------------------------------------------------------------

def test_no_dns_query_leaves_for_any_name_under_the_airgap():
    asked, real = [], {n: airgap._orig[n] for n in ("getaddrinfo", "gethostbyname", "gethostbyname_ex")}
    def recording(n):
        def f(host, *a, **k): asked.append((n, host)); return real[n](host, *a, **k)
        return f
    airgap._orig.update({n: recording(n) for n in real})
    airgap.enforce(True)
    try:
        for name in ("evil.localhost", "data-AKIA1234.attacker.example", "localhost.localdomain", "ip6-localhost", "127.0.0.1.nip.io"):
            with pytest.raises(AirgapViolation): load(f"http://{name}/x.html")
            with pytest.raises(AirgapViolation): socket.getaddrinfo(name, 443)
            with pytest.raises(AirgapViolation): socket.gethostbyname(name)
        assert {i[4][0] for i in socket.getaddrinfo("localhost", 80)} <= {"127.0.0.1", "::1"}
    finally:
        airgap._orig.update(real); airgap.enforce(False)
    assert all(host in ("127.0.0.1", "::1") for _, host in asked), asked   # only numeric loopback reached the resolver
