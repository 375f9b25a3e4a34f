"""Precision and recall of `keel.answer.contradiction` on NLI-style pairs built from three corpora.

Each source sentence is a statement of a document's passages. From it the script derives, by fixed rules:
contradictions (its negation toggled, a figure changed, a word swapped for its opposite) and sentences that
must not be flagged (the sentence itself, a shortened or reworded paraphrase, an opposite under a negation, and
a statement from another document). Every sentence is checked against its own document's passages.

The fixture corpus (golden/corpus) informed the rules: it is the tune split. PubMedQA dev abstracts and the
SQLite manual pages in tests/fixtures did not: they are held out. The antonym swaps here use a list written
for this script; many of its pairs are also in the checker's list, so that row measures the mechanism more
than the lexicon's reach.

    python bench/bench_contradiction.py            # all corpora, and the hand-labelled real model answers
    python bench/bench_contradiction.py --quick    # fewer held-out documents
"""
from __future__ import annotations
import argparse, json, random, re, sys, time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from keel.answer.attribution import statements, terms, figures
from keel.answer.contradiction import contradiction

SHARED = ROOT.parent / "shared" / "data"
OUT = ROOT / "bench" / "results"

AUX = ("is are was were can will must should may has have does did could would need shall").split()
SWAPS = dict(increased="decreased", decreased="increased", higher="lower", lower="higher", more="less", less="more",
             improved="worsened", reduced="increased", larger="smaller", smaller="larger", better="worse",
             worse="better", before="after", after="before", early="late", high="low", low="high",
             present="absent", absent="present", included="excluded", excluded="included", allowed="prohibited",
             required="optional", optional="required", enabled="disabled", disabled="enabled", true="false",
             false="true", first="last", last="first", maximum="minimum", minimum="maximum", greater="smaller",
             above="below", below="above", longer="shorter", shorter="longer", older="younger", younger="older",
             effective="ineffective", successful="unsuccessful", common="rare", rare="common",
             similar="different", positive="negative", negative="positive", internal="external",
             public="private", private="public", increase="decrease", decrease="increase", safe="unsafe",
             significant="nonsignificant", frequent="infrequent", likely="unlikely", accepted="rejected",
             supported="unsupported", possible="impossible", always="never", never="always")
SYNONYMS = dict(required="needed", must="has to", approximately="about", significantly="markedly",
                patients="people", study="trial", shows="indicates", showed="indicated", used="employed",
                larger="bigger", rapid="fast", total="overall", however="but", kept="retained", begin="start",
                obtained="collected", evaluated="assessed", assessed="evaluated", examined="studied")

def _sub_word(s:str, old:str, new:str) -> str:
    return re.sub(rf"\b{re.escape(old)}\b", new, s, count=1)

def negate(s:str) -> str|None:
    "The sentence with its first auxiliary negated, or its first `not` removed; None when it has neither."
    m = re.search(r"\b(not|never|no)\s+", s)
    if m: return s[:m.start()] + s[m.end():]
    m = re.search(r"\b(" + "|".join(AUX) + r")\b", s)
    return s[:m.end()] + " not" + s[m.end():] if m else None

def change_figure(s:str, rng:random.Random) -> str|None:
    "The sentence with one of its figures replaced by a different one of the same form."
    ms = [m for m in re.finditer(r"(?<![\w.:])\d+(?:\.\d+)?(?![\w.:]*\d)", s) if not re.fullmatch(r"(19|20)\d\d", m.group())]
    if not ms: return None
    m = rng.choice(ms)
    v = m.group()
    new = (f"{float(v) * 2:.{len(v.split('.')[1])}f}" if "." in v else str(int(v) * 2 if int(v) > 1 else int(v) + 3))
    return s[:m.start()] + new + s[m.end():]

def swap_opposite(s:str) -> str|None:
    "The sentence with its first word that has an opposite in `SWAPS` replaced by it."
    for w in re.findall(r"[A-Za-z]+", s):
        if w.lower() in SWAPS: return _sub_word(s, w, SWAPS[w.lower()])
    return None

def not_opposite(s:str) -> str|None:
    "An opposite under a negation: `higher` -> `not lower` (faithful, and the hardest case for a polarity check)."
    for w in re.findall(r"[A-Za-z]+", s):
        if w.lower() in SWAPS and SWAPS[w.lower()] not in ("never", "always"):
            return _sub_word(s, w, "not " + SWAPS[w.lower()])
    return None

def shorten(s:str) -> str|None:
    "The sentence without its leading clause, or cut at its first clause break, when enough of it is left."
    parts = re.split(r",\s+|;\s+", s)
    if len(parts) < 2: return None
    for cand in (", ".join(parts[1:]), parts[0]):
        if len(terms(cand)) >= 4: return cand[0].upper() + cand[1:].rstrip(".") + "."
    return None

def reword(s:str) -> str|None:
    "The sentence with its first word that has a synonym in `SYNONYMS` replaced."
    for w in re.findall(r"[A-Za-z]+", s):
        if w.lower() in SYNONYMS: return _sub_word(s, w, SYNONYMS[w.lower()])
    return None

def pairs_for(sentence:str, rng:random.Random) -> list[tuple[bool, str, str]]:
    "(contradiction?, edit, text) for each edit that applies to `sentence`."
    out = [(False, "same", sentence)]
    for label, name, f in ((True, "negated", negate), (True, "figure", lambda s: change_figure(s, rng)),
                           (True, "opposite", swap_opposite), (False, "not-opposite", not_opposite),
                           (False, "shortened", shorten), (False, "reworded", reword)):
        t = f(sentence)
        if t and t != sentence: out.append((label, name, t))
    return out

def usable(s:str) -> bool:
    return 6 <= len(terms(s)) <= 40 and "|" not in s and not s.startswith("#") and not s.endswith(":")

# ---- corpora: each a list of (document id, its passages)
def fixture_docs() -> list[tuple[str, list[str]]]:
    from keel.ingest.loaders import load
    from keel.ingest.chunking import chunk_document
    out = []
    for f in sorted((ROOT / "golden" / "corpus").iterdir()):
        if f.suffix in (".pdf", ".docx", ".html", ".txt", ".md") and f.name != "FACTS.md":
            out.append((f.name, [c.text for c in chunk_document(load(f))]))
    return out

def pubmed_docs(n:int, skip:int=0) -> list[tuple[str, list[str]]]:
    own = {p.stem.removeprefix("pubmed-") for p in (ROOT / "examples" / "own-documents" / "docs").glob("*.txt")}
    d = json.loads((SHARED / "pubmedqa-dev" / "pqal_dev.json").read_text())
    ids = [k for k in sorted(d) if k not in own][skip:skip + n]
    return [(f"pubmed-{k}", [*d[k]["CONTEXTS"], d[k]["LONG_ANSWER"]]) for k in ids]

def sqlite_docs() -> list[tuple[str, list[str]]]:
    from keel.ingest.loaders import load
    from keel.ingest.chunking import chunk_document
    pages = ROOT / "tests" / "fixtures" / "sqlite-manual" / "pages"
    return [(p.name, [c.text for c in chunk_document(load(p))]) for p in sorted(pages.glob("*.html"))]

def build(docs, per_doc:int, seed:int=0) -> list[dict]:
    "The pairs of one corpus: edits of up to `per_doc` sentences a document, and one statement of another document."
    rng, rows = random.Random(seed), []
    for i, (doc, passages) in enumerate(docs):
        ss = [s for p in passages for s in statements(p) if usable(s)]
        for s in rng.sample(ss, min(per_doc, len(ss))):
            rows += [dict(doc=doc, source=s, text=t, contradiction=c, edit=e) for c, e, t in pairs_for(s, rng)]
        other = docs[(i + 1) % len(docs)]
        os_ = [s for p in other[1] for s in statements(p) if usable(s)]
        if os_: rows.append(dict(doc=doc, source=None, text=rng.choice(os_), contradiction=False, edit="other-document"))
    return rows

def score(rows:list[dict], passages_of:dict) -> dict:
    "Flags per edit, recall over contradictions, false flags over the rest, precision."
    by = defaultdict(Counter)
    for r in rows:
        r["flag"] = contradiction(r["text"], passages_of[r["doc"]])
        by[r["edit"]]["n"] += 1; by[r["edit"]]["flagged"] += r["flag"] is not None
    tp = sum(1 for r in rows if r["contradiction"] and r["flag"])
    pos = sum(1 for r in rows if r["contradiction"])
    fp = sum(1 for r in rows if not r["contradiction"] and r["flag"])
    neg = len(rows) - pos
    hard = [r for r in rows if not r["contradiction"] and r["edit"] != "same"]
    return dict(pairs=len(rows), contradictions=pos, recall=round(tp / pos, 4) if pos else None,
                faithful=neg, false_flag_rate=round(fp / neg, 4) if neg else None,
                false_flag_rate_edited=round(sum(1 for r in hard if r["flag"]) / len(hard), 4) if hard else None,
                precision=round(tp / (tp + fp), 4) if tp + fp else None,
                by_edit={k: dict(n=v["n"], flagged=v["flagged"], rate=round(v["flagged"] / v["n"], 4))
                         for k, v in sorted(by.items())})

def score_answers(answers:Path, labels:Path, split:str|None=None) -> dict:
    "The check against hand labels of real model sentences (of one `split`): recall, false flags, precision, misses."
    import yaml
    lab = {(r["item"], r["sentence"]): r for r in yaml.safe_load(labels.read_text())["sentences"]
           if split is None or r.get("split", "tune") == split}
    rows = json.loads(answers.read_text())["sentences"]
    out, tp, fp, pos, neg, unlabelled = [], 0, 0, 0, 0, 0
    for r in rows:
        l = lab.get((r["item"], r["sentence"]))
        if l is None:
            unlabelled += split is None; continue
        c = contradiction(r["sentence"], [p["text"] for p in r["passages"]], r["question"])
        pos += l["contradicted"]; neg += not l["contradicted"]
        tp += bool(c) and l["contradicted"]; fp += bool(c) and not l["contradicted"]
        if bool(c) != l["contradicted"]:
            out.append(dict(item=r["item"], sentence=r["sentence"], labelled=l["contradicted"], why=l.get("why"),
                            flag=str(c) if c else ""))
    return dict(sentences=pos + neg, unlabelled=unlabelled, contradictions=pos, recall=round(tp / pos, 4) if pos else None,
                faithful=neg, false_flag_rate=round(fp / neg, 4) if neg else None,
                precision=round(tp / (tp + fp), 4) if tp + fp else None, flagged=tp + fp, errors=out)

def merge_scores(scores:list[dict]) -> dict:
    "One `score_answers` result for several answer files: counts added, rates computed again."
    n = {k: sum(s[k] for s in scores) for k in ("sentences", "unlabelled", "contradictions", "faithful", "flagged")}
    errs = [e for s in scores for e in s["errors"]]
    tp = n["contradictions"] - sum(1 for e in errs if e["labelled"])
    fp = sum(1 for e in errs if not e["labelled"])
    return dict(sentences=n["sentences"], unlabelled=n["unlabelled"], contradictions=n["contradictions"],
                recall=round(tp / n["contradictions"], 4) if n["contradictions"] else None, faithful=n["faithful"],
                false_flag_rate=round(fp / n["faithful"], 4) if n["faithful"] else None,
                precision=round(tp / (tp + fp), 4) if tp + fp else None, flagged=n["flagged"], errors=errs)

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 PubMedQA abstracts instead of 120")
    ap.add_argument("--corpus", action="append", choices=("fixture", "pubmedqa", "sqlite", "pubmedqa_b", "pubmedqa_c"),
                    help="only these corpora (repeatable); all three by default")
    ap.add_argument("--out", default=str(OUT / "contradiction.json"))
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    corpora = dict(fixture=("tune", fixture_docs(), 12), pubmedqa=("held-out", pubmed_docs(20 if a.quick else 120), 3),
                   sqlite=("held-out", sqlite_docs(), 8),
                   pubmedqa_b=("held-out", pubmed_docs(20 if a.quick else 120, skip=120), 3),
                   pubmedqa_c=("held-out", pubmed_docs(20 if a.quick else 120, skip=240), 3))
    res, examples = {}, {}
    for name, (split, docs, per) in corpora.items():
        if a.corpus and name not in a.corpus: continue
        rows = build(docs, per)
        res[name] = dict(split=split, documents=len(docs), **score(rows, dict(docs)))
        examples[name] = [dict(edit=r["edit"], contradiction=r["contradiction"], text=r["text"],
                               flag=r["flag"] and f'{r["flag"].kind}: {r["flag"].detail}')
                          for r in rows if bool(r["flag"]) != r["contradiction"]][:25]
        s = res[name]
        print(f"{name:9} {split:8} docs {len(docs):3}  pairs {s['pairs']:4}  recall {s['recall']:.3f} "
              f"({s['contradictions']})  false flags {s['false_flag_rate']:.3f} ({s['faithful']}; "
              f"edited {s['false_flag_rate_edited']:.3f})  precision {s['precision']}", flush=True)
        print("          " + "  ".join(f"{k} {v['flagged']}/{v['n']}" for k, v in s["by_edit"].items()), flush=True)
    real = {}
    sets = (("real_answers", [""], None), ("real_answers_fresh_tune", ["-fresh"], "tune"),
            ("real_answers_fresh", ["-fresh", "-fresh-b"], "held-out"),
            ("real_answers_fresh_c", ["-fresh-c", "-fresh-d"], "held-out"))   # labelled after every rule change
    for name, suffixes, split in sets:
        files = [(OUT / f"contradiction-answers{x}.json",
                  ROOT / "bench" / f"contradiction_labels{x.replace('-', '_')}.yaml") for x in suffixes]
        if a.corpus or not all(ans.exists() and lab.exists() for ans, lab in files): continue
        r = real[name] = dict(split=split or "tune", **merge_scores([score_answers(*f, split) for f in files]))
        print(f"{name}, hand-labelled ({r['split']}): {r['sentences']} sentences, {r['contradictions']} contradicted; "
              f"recall {r['recall']}  false flags {r['false_flag_rate']}  precision {r['precision']}")
    out = dict(corpora=res, errors=examples, **real, seconds=round(time.perf_counter() - t0, 1))
    Path(a.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {a.out}")

if __name__ == "__main__": main()
