"""Build the two corpora the answerability calibration is fitted and tested on, through Keel's own ingest path
(loader, chunker, injection screen, packaged MiniLM embeddings, SQLite), into bench/.cache/answerability/:

- `scifact`: 200 of the 809 SciFact train claims (seeded sample), the abstracts they cite, and other abstracts
  drawn with the same seed up to 400 documents; each claim's sources from qrels. (The whole corpus would take
  about an hour to embed on two shared cores; this keeps it to about twenty minutes.)
- `pubmedqa`: the 500 PubMedQA dev abstracts (contexts without the conclusion); each question's source is its
  own abstract.

Reads ../shared/data (see each SOURCE.md); writes nothing into the package. Usage:
    .venv/bin/python bench/answerability_corpora.py [scifact|pubmedqa ...]
"""
import ast, json, random, sys, time
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = next((p/"shared"/"data" for p in ROOT.parents if (p/"shared"/"data").is_dir()), ROOT.parent/"shared"/"data")   # ../shared/data
CACHE = ROOT/"bench"/".cache"/"answerability"

def scifact_docs_questions(n_claims:int=200, n_docs:int=400, seed:int=0):
    "SciFact documents (those the sampled claims cite, plus seeded distractors) and the sampled claims with their source ids."
    d = DATA/"scifact-train"
    docs = {j["_id"]: j for j in map(json.loads, open(d/"corpus.jsonl"))}
    qrels = {}
    for line in list(open(d/"qrels"/"train.tsv"))[1:]:
        q, doc, _ = line.split(); qrels.setdefault(q, []).append(doc)
    rng = random.Random(seed)
    claims = sorted(rng.sample(sorted(qrels, key=int), n_claims), key=int)
    cited = sorted({x for q in claims for x in qrels[q]}, key=int)
    rest = sorted(set(docs) - set(cited), key=int)
    pick = cited + rng.sample(rest, n_docs - len(cited))
    qs = [dict(id=j["_id"], question=j["text"], sources=qrels[j["_id"]]) for j in map(json.loads, open(d/"queries.jsonl")) if j["_id"] in set(claims)]
    return [dict(id=i, title=docs[i]["title"], text=docs[i]["text"]) for i in pick], qs

def pubmedqa_docs_questions():
    "PubMedQA dev abstracts (sections as paragraphs) and their questions."
    raw = json.load(open(DATA/"pubmedqa-dev"/"pqal_dev.json"))
    docs, qs = [], []
    for pmid, v in raw.items():
        ctx, labels = v["CONTEXTS"], v["LABELS"]
        ctx = ast.literal_eval(ctx) if isinstance(ctx, str) else ctx
        labels = ast.literal_eval(labels) if isinstance(labels, str) else labels
        text = "\n\n".join(f"{l.title()}: {c}" if l else c for l, c in zip(list(labels) + [""] * len(ctx), ctx))
        docs.append(dict(id=pmid, title=f"PubMed {pmid}", text=text))
        qs.append(dict(id=pmid, question=v["QUESTION"], sources=[pmid]))
    return docs, qs

class _NoSaveIndex:
    "The FAISS index without per-document saves (the corpus is built once; the index is rebuilt from the database)."
    def __init__(self, inner): self.inner, self.dim = inner, inner.dim
    def upsert(self, *a): return self.inner.upsert(*a)
    def remove(self, *a): return self.inner.remove(*a)
    def search(self, *a): return self.inner.search(*a)
    def count(self): return self.inner.count()

def build(name:str):
    from keel.config import load_settings
    from keel.db import connect
    from keel.factory import make_embeddings
    from keel.ingest.pipeline import Ingestor
    from keel.providers.faiss import FaissIndex
    from keel.safety.ledger import Ledger
    from keel.safety.screen import screen
    docs, qs = scifact_docs_questions() if name == "scifact" else pubmedqa_docs_questions()
    out = CACHE/name
    if (out/"questions.json").exists(): print(f"{name}: already built in {out}"); return
    (out/"docs").mkdir(parents=True, exist_ok=True)
    s = load_settings(env={}, dotenv=None, data_dir=out/"data")
    con = connect(s.db_path)
    emb = make_embeddings(s)
    ing = Ingestor(con, emb, _NoSaveIndex(FaissIndex(emb.dim)), Ledger(con), screen, s)
    t, chunks = time.time(), 0
    for n, d in enumerate(docs, 1):
        p = out/"docs"/f"{d['id']}.txt"
        p.write_text(d["text"], encoding="utf-8")
        r = ing.ingest_path(p, title=d["title"], acl_tags=["public"])
        if r.error: raise SystemExit(f"{d['id']}: {r.error}")
        chunks += r.chunks
        if n % 100 == 0: print(f"{name}: {n}/{len(docs)} documents, {chunks} chunks, {time.time() - t:.0f} s", flush=True)
    (out/"questions.json").write_text(json.dumps(dict(questions=qs, documents=[d["id"] for d in docs]), indent=0))
    print(f"{name}: {len(docs)} documents, {chunks} chunks, {len(qs)} questions in {time.time() - t:.0f} s")

if __name__ == "__main__":
    for name in sys.argv[1:] or ["pubmedqa", "scifact"]: build(name)
