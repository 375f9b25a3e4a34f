"""False quarantines on real software manuals: Debian's HTML manuals through Keel's ingest path and the screen.

Pages are loaded, stripped of the blocks a site repeats and chunked exactly as `keel ingest` does (the HTML loader,
`strip_boilerplate` with the block counts of every page of the manual, `chunk_document` at the default sizes), and
every chunk goes through the default screen (the patterns and the learned layer, `screen_learned`). A manual has no
planted attacks, so every quarantine is a false one. The set is split by page: a page whose SHA-256 of its path
inside the manual starts with a hex digit below 8 is `tune` (it may inform changes to the screen), the rest is
`held_out` (it must not). Reports, per manual and split, the share of pages with a quarantined chunk and the chunk
false-positive rate, with each flagged chunk's page, rule and score. Manuals are not committed; install them with
`apt-get install -y python3-doc sqlite3-doc postgresql-doc-15 git-doc sphinx-doc` (licences:
bench/results/screen-manuals-SOURCE.md). Each round of changes to the screen was measured on manuals added after the
round before it, and informed by the flagged chunks of the manuals that measured the one before: Git and Sphinx
measured the first round, Flask, Node.js and CMake the second, Django, SQLAlchemy, Jinja, Click and Werkzeug the
third, Requests, pytest, cryptography, psycopg2 and Celery the fourth, Tornado, Scrapy, aiohttp, Hypothesis,
Coverage.py, Python-Markdown, Babel, Mako, Kombu, lxml, Pygments and CherryPy the fifth, and Apache httpd's English
manual with the manuals of attrs, Pint, greenlet, sqlparse, Beautiful Soup, Black, Dask, behave, Blinker, ConfigObj,
Cookiecutter, doit, factory_boy, Flask-Login and Django REST framework the sixth (`FRESH`: they inform nothing).
Install the lot with
`apt-get install -y python-flask-doc nodejs-doc cmake-doc python-django-doc python-sqlalchemy-doc python-jinja2-doc
python-click-doc python-werkzeug-doc python-requests-doc python-pytest-doc python-cryptography-doc python-psycopg2-doc
python-celery-doc python-tornado-doc python-scrapy-doc python-aiohttp-doc python-hypothesis-doc python-coverage-doc
python-markdown-doc python-babel-doc python-mako-doc python-kombu-doc python-lxml-doc python-pygments-doc
python-cherrypy3-doc apache2-doc python-attr-doc python-pint-doc python-greenlet-doc python-sqlparse-doc
python-bs4-doc python-black-doc python-dask-doc python-behave-doc python-blinker-doc python-configobj-doc
python-cookiecutter-doc python-doit-doc python-factory-boy-doc python-flask-login-doc python-djangorestframework-doc`.

    .venv/bin/python bench/screen_manuals.py [--manual NAME ...] [--limit N] [--name before]
    .venv/bin/python bench/screen_manuals.py --compare before previous round2 round3 round4 round5 after  # results/screen-manuals.md
"""
import argparse, hashlib, json, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from keel.ingest.loaders import load
from keel.ingest.chunking import chunk_document
from keel.ingest.boilerplate import BlockCounts, keys_of, strip_boilerplate
from keel.safety.learned import screen_learned, default_model, load_model

MANUALS = {"python3-doc": "/usr/share/doc/python3-doc/html", "sqlite3-doc": "/usr/share/doc/sqlite3",
           "postgresql-doc-15": "/usr/share/doc/postgresql-doc-15/html", "git-doc": "/usr/share/doc/git-doc",
           "sphinx-doc": "/usr/share/doc/sphinx-doc/html", "python-flask-doc": "/usr/share/doc/python-flask-doc/html",
           "nodejs-doc": "/usr/share/doc/nodejs/api", "cmake-doc": "/usr/share/doc/cmake-doc/html",
           "python-django-doc": "/usr/share/doc/python-django-doc/html",
           "python-sqlalchemy-doc": "/usr/share/doc/python-sqlalchemy-doc/html",
           "python-jinja2-doc": "/usr/share/doc/python-jinja2-doc/html", "python-click-doc": "/usr/share/doc/python-click-doc/html",
           "python-werkzeug-doc": "/usr/share/doc/python-werkzeug-doc/html",
           "python-requests-doc": "/usr/share/doc/python-requests-doc/html",
           "python-pytest-doc": "/usr/share/doc/python-pytest-doc/html",
           "python-cryptography-doc": "/usr/share/doc/python-cryptography-doc/html",
           "python-psycopg2-doc": "/usr/share/doc/python-psycopg2-doc/html",
           "python-celery-doc": "/usr/share/doc/python-celery-doc/html",
           "python-tornado-doc": "/usr/share/doc/python-tornado-doc/html",
           "python-scrapy-doc": "/usr/share/doc/python-scrapy-doc/html",
           "python-aiohttp-doc": "/usr/share/doc/python-aiohttp-doc/html",
           "python-hypothesis-doc": "/usr/share/doc/python-hypothesis-doc/html",
           "python-coverage-doc": "/usr/share/doc/python-coverage-doc/html",
           "python-markdown-doc": "/usr/share/doc/python-markdown-doc/docs",
           "python-babel-doc": "/usr/share/doc/python-babel-doc/html",
           "python-mako-doc": "/usr/share/doc/python-mako-doc/html",
           "python-kombu-doc": "/usr/share/doc/python-kombu-doc/html",
           "python-lxml-doc": "/usr/share/doc/python-lxml-doc/html",
           "python-pygments-doc": "/usr/share/doc/python-pygments-doc/html",
           "python-cherrypy3-doc": "/usr/share/doc/python-cherrypy3-doc/html",
           "apache2-doc": "/usr/share/doc/apache2-doc/manual/en",
           **{n: f"/usr/share/doc/{n}/html" for n in (
               "python-attr-doc", "python-pint-doc", "python-greenlet-doc", "python-sqlparse-doc", "python-bs4-doc",
               "python-black-doc", "python-dask-doc", "python-behave-doc", "python-blinker-doc",
               "python-configobj-doc", "python-cookiecutter-doc", "python-doit-doc", "python-factory-boy-doc",
               "python-flask-login-doc")},
           "python-djangorestframework-doc": "/usr/share/doc/python3-djangorestframework/html"}

def page_digest(rel:str) -> str:
    "The SHA-256 (hex) of a page's path inside its manual: what the page splits are drawn from."
    return hashlib.sha256(rel.encode()).hexdigest()

def split_of(rel:str) -> str:
    "tune or held_out, from the page's path inside its manual."
    return "tune" if page_digest(rel)[0] < "8" else "held_out"

def pages_of(root:Path, limit:int|None) -> list[Path]:
    files = sorted(p for p in root.resolve().rglob("*") if p.suffix.lower() in (".html", ".htm")
                   and "_static" not in p.parts and "_sources" not in p.parts)
    if limit:   # an even sample: every k-th page
        k = max(1, len(files) // limit); files = files[::k][:limit]
    return files

def manual_pages(root:Path, limit:int|None=None) -> tuple[int, list]:
    "The number of pages and (path inside the manual, its chunks' texts) for each page that loads, as ingest cuts it."
    files = pages_of(root, limit)
    docs = []
    for f in files:
        try: docs.append((f.relative_to(root.resolve()).as_posix(), load(f)))
        except Exception: pass
    counts = BlockCounts()
    for _, d in docs: counts.add(d.source, keys_of(d.text))
    return len(files), [(rel, [c.text for c in chunk_document(strip_boilerplate(d, counts))]) for rel, d in docs]

def measure(name:str, root:Path, limit:int|None, screen_fn) -> dict:
    n, docs = manual_pages(root, limit)
    res = {s: dict(pages=0, pages_flagged=0, chunks=0, chunks_flagged=0) for s in ("tune", "held_out")}
    flagged = []
    for rel, texts in docs:
        s = split_of(rel); hit = False
        for text in texts:
            res[s]["chunks"] += 1
            v = screen_fn(text)
            if v.quarantine:
                res[s]["chunks_flagged"] += 1; hit = True
                flagged.append(dict(manual=name, page=rel, split=s, score=round(float(v.score), 3),
                                    reasons=list(v.reasons), text=text[:200]))
        res[s]["pages"] += 1; res[s]["pages_flagged"] += hit
    for r in res.values():
        r["page_share"] = round(r["pages_flagged"] / max(r["pages"], 1), 4)
        r["chunk_fpr"] = round(r["chunks_flagged"] / max(r["chunks"], 1), 5)
    return dict(manual=name, pages=n, loaded=len(docs), splits=res, flagged=flagged)

def compare_table(*runs:dict, attacks:dict|None=None, fitted=None, names=None) -> str:
    "Markdown: pages with a quarantined chunk and chunk FPR per manual and split, run by run; attacks beside."
    names = names or (["before", "after"] if len(runs) == 2 else [f"run {k + 1}" for k in range(len(runs))])
    fitted = INFORMED if fitted is None else fitted   # the manuals whose tune pages the last run's model was fitted on
    def split(run, man, s):   # None: the run did not measure that manual
        return next((m["splits"][s] for m in run["manuals"] if m["manual"] == man), None)
    arrow = " → ".join(["{}"] * len(runs))
    lines = [f"| manual | split | informs | pages | pages flagged ({arrow.format(*names)}) | chunks "
             f"| chunk FPR ({arrow.format(*names)}) |", "|---|---|---|---|---|---|---|"]
    for m in runs[-1]["manuals"]:
        for s in ("tune", "held_out"):
            rs = [split(r, m["manual"], s) for r in runs]
            parts = ["fit"] * (s == "tune" and m["manual"] in fitted) + list(RULES_FROM.get(m["manual"], {}).get(s, ()))
            pages = [f"{r['pages_flagged']} ({r['page_share']:.1%})" if r else "-" for r in rs]
            fpr = [f"{r['chunk_fpr']:.2%}" if r else "-" for r in rs]
            lines.append(f"| {m['manual']} | {s} | {', '.join(parts) or 'no'} | {rs[-1]['pages']} | "
                         f"{arrow.format(*pages)} | {rs[-1]['chunks']} | {arrow.format(*fpr)} |")
    unseen = [m["manual"] for m in runs[-1]["manuals"] if m["manual"] in FRESH]
    if unseen:   # the manuals no round informed, both splits together
        def total(run):   # pages, pages flagged, chunks, chunks flagged; None: the run missed one of them
            rs = [split(run, n, s) for n in unseen for s in ("tune", "held_out")]
            return None if None in rs else [sum(r[k] for r in rs) for k in ("pages", "pages_flagged", "chunks",
                                                                             "chunks_flagged")]
        t = [total(r) for r in runs]
        pages = [f"{x[1]} ({x[1] / x[0]:.1%})" if x else "-" for x in t]
        fpr = [f"{x[3] / x[2]:.2%}" if x else "-" for x in t]
        lines.append(f"| **{len(unseen)} manuals no round informed** | all | no | {t[-1][0]} | "
                     f"{arrow.format(*pages)} | {t[-1][2]} | {arrow.format(*fpr)} |")
    if attacks:
        # the attack file compares the last run's model with an earlier one: the first run with its threshold
        first = next((k for k, r in enumerate(runs) if r["threshold"] == attacks["threshold"]["before"]), -2)
        pair = f"{names[first]} → {names[-1]}"
        lines += ["", f"| attack set (held out) | attacks | recall ({pair}) | benign | FPR ({pair}) |",
                  "|---|---|---|---|---|"]
        for n, r in attacks["sets"].items():
            b, a = r["before"], r["after"]
            lines.append(f"| {n} | {a['attacks']} | {b['recall']:.3f} → {a['recall']:.3f} | {a['benign']} | "
                         f"{b['fpr']:.3f} → {a['fpr']:.3f} |")
    return "\n".join(lines) + "\n"

INFORMED = ("python3-doc", "sqlite3-doc")   # their tune pages' chunks are among the packaged model's negatives
# which pages informed the pattern rules and the views, round by round (bench/results/screen-manuals-SOURCE.md): the
# tune pages of three manuals first; the flagged chunks of both splits of all five for the second round; those of
# Flask, Node.js and CMake for the third; those of Django, SQLAlchemy, Jinja, Click and Werkzeug for the fourth;
# those of Requests, pytest, cryptography, psycopg2 and Celery for the fifth; the flagged chunks of the twelve added
# after the fourth, and every informing manual's count of lone learned flags, for the sixth. The sixteen manuals added
# after the fifth round inform nothing.
_BOTH = {"tune": ("rules",), "held_out": ("rules",)}
RULES_FROM = {n: _BOTH for n in ("python3-doc", "sqlite3-doc", "postgresql-doc-15", "git-doc", "sphinx-doc",
                                 "python-flask-doc", "nodejs-doc", "cmake-doc", "python-django-doc",
                                 "python-sqlalchemy-doc", "python-jinja2-doc", "python-click-doc",
                                 "python-werkzeug-doc", "python-requests-doc", "python-pytest-doc",
                                 "python-cryptography-doc", "python-psycopg2-doc", "python-celery-doc",
                                 "python-tornado-doc", "python-scrapy-doc", "python-aiohttp-doc", "python-hypothesis-doc",
                                 "python-coverage-doc", "python-markdown-doc", "python-babel-doc", "python-mako-doc",
                                 "python-kombu-doc", "python-lxml-doc", "python-pygments-doc", "python-cherrypy3-doc")}
FRESH = ("apache2-doc", "python-attr-doc", "python-pint-doc", "python-greenlet-doc", "python-sqlparse-doc",
         "python-bs4-doc", "python-black-doc", "python-dask-doc", "python-behave-doc", "python-blinker-doc", "python-configobj-doc",
         "python-cookiecutter-doc", "python-doit-doc", "python-factory-boy-doc", "python-flask-login-doc",
         "python-djangorestframework-doc")   # no page of these informed anything

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manual", nargs="*", default=list(MANUALS))
    ap.add_argument("--limit", type=int, default=None, help="an even sample of N pages per manual")
    ap.add_argument("--name", default="current")
    ap.add_argument("--model", type=Path, default=None, help="a model file instead of the packaged one")
    ap.add_argument("--compare", nargs="+", metavar="RUN",
                    help="two or more runs' names, oldest first: write the side-by-side table")
    ap.add_argument("--names", nargs="*", default=None, help="with --compare: the runs' names in the table")
    ap.add_argument("--attacks", default="screen-manuals-attacks.json",
                    help="with --compare: the refit's attack recall")
    ap.add_argument("--fitted", nargs="*", default=None,
                    help="with --compare: the manuals the AFTER model was fitted on")
    ap.add_argument("--md", default="screen-manuals.md", help="with --compare: the table's file in bench/results")
    a = ap.parse_args()
    if a.compare:
        names = a.names or a.compare
        runs = [json.loads((HERE/"results"/f"screen-manuals-{n}.json").read_text()) for n in a.compare]
        att, md = HERE/"results"/a.attacks, HERE/"results"/a.md
        md.write_text(f"# The injection screen on Debian's HTML manuals: {' → '.join(names)}\n\n"
                      + compare_table(*runs, attacks=json.loads(att.read_text()) if att.exists() else None,
                                      fitted=a.fitted, names=names))
        print(md.read_text()); return
    m, t0 = (load_model(a.model) if a.model else default_model()), time.process_time()
    out = dict(screen="patterns + learned", model=str(a.model or "packaged"), threshold=round(m.threshold, 3), limit=a.limit, manuals=[])
    for n in a.manual:
        root = Path(MANUALS[n])
        if not root.exists(): print(f"skip {n}: not installed ({root})", file=sys.stderr); continue
        r = measure(n, root, a.limit, lambda t: screen_learned(t, m)); out["manuals"].append(r)
        print(json.dumps(dict(manual=n, loaded=r["loaded"], **{k: {x: v[x] for x in ("pages", "pages_flagged",
              "page_share", "chunks", "chunks_flagged", "chunk_fpr")} for k, v in r["splits"].items()})), flush=True)
    out["cpu_s"] = round(time.process_time() - t0, 1)
    p = HERE/"results"/f"screen-manuals-{a.name}.json"
    p.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {p.relative_to(ROOT)}")

if __name__ == "__main__": main()
