"""False quarantines on domains the injection screen never saw: SciFact or PubMedQA abstracts through the ingest chunker.

Each abstract of `scifact-train/corpus.jsonl` becomes a text document (title, a blank line, the abstract),
is cut by `chunk_document` as `keel ingest` cuts it (800 characters, 120 overlap), and every chunk is
screened by the patterns alone and by the default screen (patterns + learned layer). SciFact has no
attacks, so every quarantine is a false one. Prints the counts of chunks and of documents with a
quarantined chunk, and each flagged document with the view the learned layer flagged it on.

    python bench/screen_scifact.py [--scifact ../shared/data/scifact-train/corpus.jsonl] [--pubmedqa] [--out FILE]

`--out` writes the counts and the flagged documents (ids, score, view, pattern reasons; no abstract text) as JSON:
bench/results/screen-scifact.json and screen-pubmedqa.json are what the safety report renders.

`--pubmedqa` screens PubMedQA's development half instead (its 500 abstracts, no titles; `bench/corpora.py` converts
it once), the second domain the retrieval and answerability work measure on.
"""
import argparse, json, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from keel.ingest.loaders import LoadedDocument, Page
from keel.ingest.chunking import chunk_document
from keel.safety.screen import screen
from keel.safety.learned import screen_learned, default_model

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scifact", default=str(ROOT.parent / "shared/data/scifact-train/corpus.jsonl"))
    ap.add_argument("--pubmedqa", action="store_true", help="PubMedQA dev's abstracts instead of SciFact's")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.pubmedqa:
        sys.path.insert(0, str(ROOT / "bench"))
        from corpora import pubmedqa_beir
        a.scifact = str(pubmedqa_beir() / "corpus.jsonl")
    if not Path(a.scifact).exists():
        sys.exit(f"no SciFact corpus at {a.scifact} (see the bench README for where the data lives)")
    m, t0 = default_model(), time.process_time()
    docs = [json.loads(l) for l in Path(a.scifact).read_text().splitlines() if l.strip()]
    chunks = pats = learned = 0
    flagged = []
    for d in docs:
        head = d["title"] + "\n\n" if d.get("title") else ""
        doc = LoadedDocument(source=f"{Path(a.scifact).parent.name}:{d['_id']}", title=d.get("title") or "",
                             kind="text", checksum="", pages=[Page(None, head + d["text"])])
        hit_p = hit_l = False
        for c in chunk_document(doc, 800, 120):
            chunks += 1
            hit_p |= screen(c.text).quarantine
            if screen_learned(c.text, m).quarantine and not hit_l:
                hit_l = True
                p, kind, _ = m.best_view(c.text)
                flagged.append(dict(doc_id=d["_id"], p=round(p, 3), view=kind, patterns=screen(c.text).reasons,
                                    text=c.text[:160]))
        pats += hit_p; learned += hit_l
    summary = dict(corpus="pubmedqa-dev" if a.pubmedqa else "scifact-train", documents=len(docs), chunks=chunks,
                   documents_quarantined_patterns=pats, documents_quarantined_default=learned,
                   threshold=round(m.threshold, 3), cpu_s=round(time.process_time() - t0, 1))
    print(json.dumps(summary))
    for f in flagged: print(json.dumps(f, ensure_ascii=False))
    if a.out:
        kept = [{k: v for k, v in f.items() if k != "text"} for f in flagged]
        Path(a.out).write_text(json.dumps({**summary, "flagged": kept}, indent=1, ensure_ascii=False) + "\n")
