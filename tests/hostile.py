"""Hostile files, each built from nothing: shared by tests/test_hostile.py and bench/bench_hostile.py."""
import os, zipfile
from pathlib import Path


def shared_stream_pdf(path, pages=20, lines=150_000):
    "A PDF of a few kilobytes whose `pages` pages all draw one content stream of `lines` text lines (about 70 bytes each)."
    import pypdf
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject
    w = pypdf.PdfWriter()
    s = DecodedStreamObject()
    s.set_data(b"BT /F1 12 Tf 72 720 Td (All work and no play makes a dull page.) Tj ET\n" * lines)
    ref = w._add_object(s.flate_encode())
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    res = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): w._add_object(font)})})
    for _ in range(pages):
        p = w.add_blank_page(612, 792)
        p[NameObject("/Contents")], p[NameObject("/Resources")] = ref, res
    w.write(path)
    return Path(path)


def docx_bomb(path, unzipped=1_000_000_000):
    "A valid DOCX whose word/document.xml holds one paragraph of `unzipped` bytes: a few hundred KB on disk."
    import docx
    d = docx.Document(); d.add_paragraph("x"); d.save(path)
    with zipfile.ZipFile(path) as z: parts = {i.filename: z.read(i) for i in z.infolist()}
    head, tail = parts["word/document.xml"].split(b"<w:t>x</w:t>")
    block = b"A" * 1_000_000
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for n, data in parts.items():
            if n != "word/document.xml": z.writestr(n, data); continue
            with z.open(n, "w", force_zip64=True) as f:
                f.write(head + b"<w:t>")
                for _ in range(unzipped // len(block)): f.write(block)
                f.write(b"</w:t>" + tail)
    return Path(path)


def laughs_manifest(path, levels=8):
    "A manifest of a few hundred bytes whose entry's `path` expands through YAML aliases to 10**levels strings."
    lines = ['x0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    Path(path).write_text("documents:\n  - " + "\n    ".join(lines) + f"\n    path: *a{levels - 1}\n    acl_tags: [public]\n")
    return Path(path)


def deep_html(path, depth=600, text="Deep text survives."):
    "An HTML page whose only paragraph sits `depth` elements deep."
    Path(path).write_bytes(b"<html><body>" + b"<div>" * depth + f"<p>{text}</p>".encode() + b"</div>" * depth + b"</body></html>")
    return Path(path)


def utf16_text(path, text="# Caf\u00e9 hours\n\nThe caf\u00e9 opens at 7:30 \u2014 na\u00efve r\u00e9sum\u00e9s welcome.\n"):
    "A UTF-16 text file with its byte-order mark."
    Path(path).write_bytes(text.encode("utf-16"))
    return Path(path)


def random_txt(path, n=64_000, seed=7):
    "Random bytes named .txt."
    import random
    Path(path).write_bytes(random.Random(seed).randbytes(n))
    return Path(path)


def aes_pdf(path, text="The AES policy says encrypted files are opened with the empty password."):
    "A PDF encrypted with AES-256 and an empty user password."
    import pypdf
    from reportlab.pdfgen import canvas
    plain = Path(path).with_suffix(".plain.pdf")
    c = canvas.Canvas(str(plain)); c.drawString(72, 720, text); c.showPage(); c.save()
    w = pypdf.PdfWriter(clone_from=pypdf.PdfReader(plain))
    w.encrypt("", algorithm="AES-256"); w.write(path)
    plain.unlink()
    return Path(path)


FORGED_NAME = "notes\nadded  payroll.pdf  99 chunks\x1b[2K\x1b[31m.md"   # a newline forges a line; ANSI clears and colours it


def forged_name_file(folder):
    "A Markdown file whose name carries a newline and ANSI escapes."
    p = Path(folder)/FORGED_NAME
    p.write_text("# Notes\n\nThe kettle is descaled on Fridays.\n")
    return p


def escaping_manifest(folder, secret):
    "A manifest whose entries escape its folder: `../..` to `secret`, an absolute path, and a symlink beside it."
    folder = Path(folder); folder.mkdir(parents=True, exist_ok=True)
    rel = os.path.relpath(secret, folder)
    (folder/"link.txt").symlink_to(secret)
    (folder/"m.yaml").write_text("documents:\n"
                                 f"  - {{path: '{rel}', acl_tags: [public]}}\n"
                                 f"  - {{path: '{secret}', acl_tags: [public]}}\n"
                                 "  - {path: link.txt, acl_tags: [public]}\n")
    return folder/"m.yaml"


def flate_bomb_pdf(path, unzipped=200_000_000):
    "A one-page PDF whose content stream is `unzipped` zero bytes, compressed to a few hundred KB."
    import zlib, pypdf
    from pypdf.generic import StreamObject, NameObject
    w = pypdf.PdfWriter()
    s = StreamObject()
    z = zlib.compressobj(9)
    s._data = b"".join(z.compress(b"\0" * 10_000_000) for _ in range(unzipped // 10_000_000)) + z.flush()
    s[NameObject("/Filter")] = NameObject("/FlateDecode")
    p = w.add_blank_page(612, 792)
    p[NameObject("/Contents")] = w._add_object(s)
    w.write(path)
    return Path(path)
