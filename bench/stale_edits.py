"""The scripted edit set of the stale-fact probes: 50 edited facts over the fixture corpus and examples/own-documents.

Each edit is (document, text before, text after, kind, old value, new value): the text before occurs exactly once in
the document's source (the PDF's and DOCX's blocks in golden/corpus/make_corpus.py, the other files as they are), and
the values are what changed in it. `write_knowledge_base(dest, edited)` writes the documents, edited or not, into a
folder, with six rewordings that change no fact (`WORDING`: a fact found in one is spurious); deterministic (the
PDF and DOCX through make_corpus.py's writers). The supplier note is deliberately left stating the old quote count
("three written quotes") that edits 1 and 2 change in the procurement policy:
`SECOND_DOCUMENT` is the correction a fully correct change would also make.
"""
from __future__ import annotations
import importlib.util, shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS, OWN = ROOT/"golden"/"corpus", ROOT/"examples"/"own-documents"/"docs"
P, C, H, S, N = ("corpus/procurement-policy.pdf", "corpus/clinic-records-policy.docx",
                 "corpus/keel-operations-guide.html", "corpus/salary-bands.md", "corpus/supplier-note.txt")
own = lambda pmid: f"own/pubmed-{pmid}.txt"

EDITS = [
    (P, "$100,000 need three written quotes", "$100,000 need two written quotes", "figure", "three", "two"),
    (P, "Three written quotes", "Two written quotes", "figure", "Three", "Two"),
    (P, "for at least 21 days", "for at least 28 days", "figure", "21", "28"),
    (P, "single transactions up to $5,000", "single transactions up to $3,000", "figure", "$5,000", "$3,000"),
    (P, "Procurement Officer within 5 business days", "Procurement Officer within 3 business days", "figure", "5", "3"),
    (P, "in writing within 2 business days", "in writing within 4 business days", "figure", "2", "4"),
    (P, "worth more than $25,000", "worth more than $30,000", "figure", "$25,000", "$30,000"),
    (P, "every six months", "every three months", "figure", "six", "three"),
    (P, "are kept for 7 years after", "are kept for 10 years after", "figure", "7", "10"),
    (P, "effective 1 July 2026", "effective 1 October 2026", "date", "July", "October"),
    (P, "version 3.2", "version 3.3", "figure", "3.2", "3.3"),
    (P, "Policy owner: Chief Financial Officer", "Policy owner: Chief Executive Officer", "named", "Financial",
     "Executive"),
    (P, "Staff should still check", "Staff need not check", "negation", "should still", "need not"),
    (P, "Over $1,000,000", "Over $2,000,000", "figure", "$1,000,000", "$2,000,000"),
    (P, "form PR-02", "form PR-12", "named", "PR-02", "PR-12"),
    (C, "on 3 February 2026", "on 17 February 2026", "date", "3 February", "17 February"),
    (C, "Document CR-01, version 4", "Document CR-01, version 5", "figure", "4", "5"),
    (C, "kept for 7 years after the patient's", "kept for 10 years after the patient's", "figure", "7", "10"),
    (C, "7 years after the last visit", "10 years after the last visit", "figure", "7", "10"),
    (C, "kept until the patient turns 25", "kept until the patient turns 26", "figure", "25", "26"),
    (C, "Until the patient turns 25", "Until the patient turns 26", "figure", "25", "26"),
    (C, "within 24 hours of discovering", "within 12 hours of discovering", "figure", "24", "12"),
    (C, "must be completed within 30 days", "must be completed within 20 days", "figure", "30", "20"),
    (C, "within 72 hours", "within 48 hours", "figure", "72", "48"),
    (C, "decommissioned on 31 March 2026", "decommissioned on 30 June 2026", "date", "31 March", "30 June"),
    (C, "a refresher every 12 months", "a refresher every 24 months", "figure", "12", "24"),
    (C, "does not charge for electronic copies", "charges for electronic copies", "negation", "does not charge",
     "charges"),
    (C, "the Privacy Officer reviews the access log", "the Practice Manager reviews the access log", "named",
     "Privacy Officer", "Practice Manager"),
    (H, "exits with code 4.", "exits with code 5.", "figure", "4", "5"),
    (H, "security team within 1 hour", "security team within 2 hours", "figure", "1", "2"),
    (H, "older than 7 days", "older than 14 days", "figure", "7", "14"),
    (H, "every night at 01:00", "every night at 02:30", "figure", "01:00", "02:30"),
    (H, "is kept for 12 months", "is kept for 24 months", "figure", "12", "24"),
    (H, "larger than 50 MB", "larger than 100 MB", "figure", "50", "100"),
    (H, "entirely is not permitted", "entirely is permitted", "negation", "is not permitted", "is permitted"),
    (S, "| $92,000-$104,000 |", "| $92,000-$106,000 |", "figure", "$104,000", "$106,000"),
    (S, "$92,000 to $104,000", "$92,000 to $106,000", "figure", "$104,000", "$106,000"),
    (S, "contribution is 12% of base", "contribution is 12.5% of base", "figure", "12%", "12.5%"),
    (S, "$45 per night", "$50 per night", "figure", "$45", "$50"),
    (S, "$1,200 a year", "$1,500 a year", "figure", "$1,200", "$1,500"),
    (S, "has four increment points", "has five increment points", "figure", "four", "five"),
    (S, "reviewed every September", "reviewed every October", "date", "September", "October"),
    (S, "are referred to the People and Culture Director", "are referred to the Chief People Officer", "named",
     "People and Culture Director", "Chief People Officer"),
    (N, "since March 2023", "since May 2023", "date", "March", "May"),
    (N, "until 30 June 2027", "until 31 December 2027", "date", "30 June", "31 December"),
    (N, "Dana Whitfield", "Sam Okafor", "named", "Dana Whitfield", "Sam Okafor"),
    (own(12607120), "in 150 patients", "in 160 patients", "figure", "150", "160"),
    (own(17919952), "response rate of 72%", "response rate of 68%", "figure", "72%", "68%"),
    (own(18603989), "50 albino rats", "60 albino rats", "figure", "50", "60"),
    (own(25787073), "evaluated 629 patients", "evaluated 692 patients", "figure", "629", "692"),
]
# rewordings that change no fact: any fact found in them is spurious
WORDING = [
    (H, "run at once", "run immediately"),
    (P, "which have their own policies", "which are covered by their own policies"),
    (C, "go through the secure messaging", "are sent through the secure messaging"),
    (S, "until they reach the top of their band", "until they reach the top of the band"),
    (N, "Prepared by the Procurement Officer", "Written by the Procurement Officer"),
    (own(18603989), "were systematically randomized into", "were randomly assigned to"),
]
SECOND_DOCUMENT = (N, "need three written quotes", "need two written quotes")


def _make_corpus():
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS/"make_corpus.py")
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    return m

def _edit_blocks(blocks, edits):
    "The blocks with every edit applied, each `before` found exactly once."
    texts = lambda b: [b[1]] if b[0] != "table" else [c for row in b[1] for c in row]
    for doc, before, after, *_ in edits:
        n = sum(t.count(before) for b in blocks for t in texts(b))
        assert n == 1, f"{doc}: {before!r} occurs {n} times"
    out = []
    for kind, v in blocks:
        def fix(t):
            for _, before, after, *_ in edits: t = t.replace(before, after)
            return t
        out.append((kind, [[fix(c) for c in row] for row in v] if kind == "table" else fix(v)))
    return out

def _edit_text(text:str, doc:str, edits) -> str:
    for d, before, after, *_ in edits:
        assert text.count(before) == 1, f"{doc}: {before!r} occurs {text.count(before)} times"
        text = text.replace(before, after)
    return text

def write_knowledge_base(dest:Path, edited:bool, second_document:bool=False) -> Path:
    "The fixture corpus (`corpus/`, with its manifest) and the own documents (`own/`) in `dest`, edited or not."
    dest = Path(dest); (dest/"corpus").mkdir(parents=True, exist_ok=True); (dest/"own").mkdir(exist_ok=True)
    edits = [e for e in EDITS + WORDING if edited] + ([SECOND_DOCUMENT] if second_document else [])
    mine = lambda doc: [e for e in edits if e[0] == doc]
    mc = _make_corpus()
    mc.write_pdf(dest/P, _edit_blocks(mc.PROCUREMENT, mine(P)))
    mc.write_docx(dest/C, _edit_blocks(mc.CLINIC, mine(C)))
    shutil.copy(CORPUS/"manifest.yaml", dest/"corpus"/"manifest.yaml")
    for doc in (H, S, N):
        (dest/doc).write_text(_edit_text((CORPUS/Path(doc).name).read_text(), doc, mine(doc)))
    for p in sorted(OWN.glob("*.txt")):
        doc = f"own/{p.name}"
        (dest/doc).write_text(_edit_text(p.read_text(), doc, mine(doc)))
    return dest

assert len(EDITS) == 50, len(EDITS)
