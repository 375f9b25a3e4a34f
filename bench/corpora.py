"""The benchmark corpora through Keel's production path: a BEIR folder (SciFact train) or PubMedQA's development half
(converted once to BEIR's layout under bench/.cache/), ingested one passage per document into a named data directory
under bench/.cache/ through `Ingestor.ingest_documents`, embeddings cached in bench/.cache/embeddings/ so a warm run
embeds nothing. Imported by the other benchmark scripts; `python bench/corpora.py scifact|pubmedqa` ingests one.
"""
from __future__ import annotations
import json, os, random, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE/".cache"
SHARED = HERE.parent.parent/"shared"/"data"
if not SHARED.is_dir(): SHARED = Path("/work/shared/data")
SCIFACT, PUBMEDQA = SHARED/"scifact-train", SHARED/"pubmedqa-dev"
TAGS = ["benchmark"]          # the benchmark user's tags: every passage carries them, every query asks with them

def pubmedqa_beir(src:Path=PUBMEDQA, out:Path=CACHE/"pubmedqa-dev") -> Path:
    "PubMedQA's development half in BEIR's layout: each question's own abstract (its contexts) is its one relevant passage."
    if (out/"qrels"/"dev.tsv").is_file(): return out
    items = json.loads((src/"pqal_dev.json").read_text())
    (out/"qrels").mkdir(parents=True, exist_ok=True)
    with open(out/"corpus.jsonl", "w") as f:
        for pid, x in items.items(): f.write(json.dumps({"_id": pid, "title": "", "text": " ".join(x["CONTEXTS"])}) + "\n")
    with open(out/"queries.jsonl", "w") as f:
        for pid, x in items.items(): f.write(json.dumps({"_id": f"q{pid}", "text": x["QUESTION"]}) + "\n")
    (out/"qrels"/"dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{pid}\t{pid}\t1\n" for pid in items))
    return out

def beir_documents(folder:Path) -> list:
    "A BEIR corpus as loaded documents: source `<folder name>/<id>`, the title, one page of text, the record's sha256."
    import hashlib
    from keel.ingest.loaders import LoadedDocument, Page
    out = []
    for line in (Path(folder)/"corpus.jsonl").read_bytes().splitlines():
        if not line.strip(): continue
        x = json.loads(line)
        out.append(LoadedDocument(f"{Path(folder).name}/{x['_id']}", x.get("title") or "", "text", hashlib.sha256(line).hexdigest(),
                                  [Page(None, x.get("text") or "")], len(line)))
    return out

def corpus(name:str) -> tuple[Path, str]:
    "(BEIR folder, qrels split) of a corpus by name."
    return (SCIFACT, "train") if name == "scifact" else (pubmedqa_beir(), "dev")

def ingest_order(folder:Path, split:str, docs:list) -> list:
    "Judged documents first, then the others in a seeded random order: a run cut short leaves a fair sample of the corpus."
    judged = {f"{folder.name}/{l.split()[1]}" for l in list(open(folder/"qrels"/f"{split}.tsv"))[1:]}
    rest = [d for d in docs if d.source not in judged]
    random.Random(0).shuffle(rest)
    return [d for d in docs if d.source in judged] + rest

def context(name:str, part:int=0, parts:int=1, ingest:bool=True, cache:str|None=None, **overrides):
    """A Keel context over the corpus's benchmark data directory, its embeddings cached (the corpus ingested on first
    use; `part` of `parts` processes ingesting at once; `ingest=False` takes the directory as it is)."""
    from keel.config import load_settings
    from keel.factory import build_context, make_embeddings
    from keel.evals.retrieval import CachedEmbeddings
    folder, split = corpus(name)
    s = load_settings(dotenv=None, data_dir=CACHE/f"{folder.name}-data").replace(**overrides)
    ctx = build_context(s)
    ctx.__dict__["embeddings"] = CachedEmbeddings(make_embeddings(s), CACHE/"embeddings"/(cache or f"{name}-{part}"))
    n = ctx.con.execute("SELECT count(*) FROM documents").fetchone()[0]
    docs = ingest_order(folder, split, beir_documents(folder))[part::parts]
    if ingest and n < len(docs) * parts:
        t = time.perf_counter()
        res = ctx.ingestor.ingest_documents(docs, TAGS, chunk=False, progress=True)
        ctx.embeddings.save()
        added = sum(r.status == "added" for r in res)
        print(f"ingested {name}: {added} passages added, {sum(r.status == 'duplicate' for r in res)} already there, "
              f"{sum(r.status == 'failed' for r in res)} failed, {sum(r.quarantined for r in res)} quarantined, "
              f"{ctx.embeddings.computed} embedded, {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return ctx, folder, split

if __name__ == "__main__":
    ctx, folder, split = context(sys.argv[1] if len(sys.argv) > 1 else "scifact", *map(int, sys.argv[2:4]))
    print(ctx.con.execute("SELECT count(*) FROM chunks").fetchone()[0], "passages in", ctx.settings.data_dir)
