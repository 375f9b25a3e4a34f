"""Answerability evidence for every judged question of SciFact train (809 claims, the whole 5,183-abstract corpus) and
PubMedQA dev (500 questions and abstracts), each asked twice through the production retriever of the benchmark data
directory that bench/corpora.py builds (one passage per abstract, the current retrieval defaults): with its cited
documents visible (label 1, the documents answer it) and with them masked the way a permission filter masks them
(label 0). Also records the old gate's number (the best hit's relevance), where the cited document ranked, and the time
the scoring took. Writes data/answerability-features.csv, which nbs/13d_retrieval_answerability.ipynb fits the default
calibration on. Build the corpora first (`python bench/corpora.py scifact`, `... pubmedqa`; minutes of embedding on
two cores, cached after). Usage:
    .venv/bin/python bench/answerability_features.py [scifact pubmedqa] [--limit N] [--chunked] [--ldo]

`--chunked` asks the chunked data directories instead (`bench/chunked_study.py` and `bench/scifact_retrieval.py
--chunk` build them: abstracts cut into chunks as `keel ingest` stores them) and writes
bench/.cache/answerability-chunked-*.csv, leaving the committed CSV alone. `--ldo` prints, for the rows written,
leave-documents-out ROC AUC per domain (5 folds grouped by the cited document, `fit_calibration` on four, scored on
the fifth), the error rates at 10% false answers, and both cross-domain AUCs.

`--sentences` measures sentence-level evidence (tried, not adopted: nbs/13a): every sentence of the passages each
retrieval returned is embedded with the corpus's embedding model (vectors cached under
bench/.cache/embeddings/sentences-<corpus>/, so a rerun embeds nothing), and the best cosine between the question and
any sentence, its gaps, and the like (SENTENCE_FEATURES) are added to the rows, written in full to
bench/.cache/answerability-sentences-<corpus>.csv and, keys and sentence features only, to
data/answerability-sentences.csv, which nbs/13a joins to the committed answerability-features.csv (left alone).
`--budget S` stops embedding after about S seconds (the cache keeps what was done; run again to go on), so each run
fits the heavy-run lock's slot; the rate (sentences/s) is printed as it goes. With `--ldo` it prints the held-out
figures for the shipped features, shipped + sentence features, and sentence features alone.
"""
import argparse, csv, json, sys, time
import numpy as np
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora

OUT = HERE.parent/"data"/"answerability-features.csv"
SENTENCES_OUT = HERE.parent/"data"/"answerability-sentences.csv"

def questions(folder:Path, split:str) -> list[dict]:
    "The judged questions of a BEIR folder with the documents each one cites."
    cites = {}
    for line in list(open(folder/"qrels"/f"{split}.tsv"))[1:]:
        q, d, s = line.split()
        if int(s) > 0: cites.setdefault(q, []).append(d)
    qs = [json.loads(l) for l in open(folder/"queries.jsonl") if l.strip()]
    return [dict(id=q["_id"], question=q["text"], sources=cites[q["_id"]]) for q in qs if q["_id"] in cites]

def rows_for(name:str, limit:int|None=None, keep:list|None=None) -> list[dict]:
    """Two rows per question (sources visible, masked): features, old relevance, the cited document's rank, time.
    `keep`, when given, receives each row's (question vector, retrieved chunk ids)."""
    from keel.retrieval.answerability import Answerability, DEFAULT_CALIBRATION, FEATURES
    ctx, folder, split = corpora.context(name, ingest=False)
    a = Answerability(ctx.retriever, ctx.settings, calibration=DEFAULT_CALIBRATION)
    chunks = {}
    for cid, src in ctx.con.execute("SELECT c.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id"):
        chunks.setdefault(src.split("/", 1)[1], []).append(cid)
    qs, out, t = questions(folder, split)[:limit], [], time.time()
    for n, q in enumerate(qs):
        mask = [c for s in q["sources"] for c in chunks.get(s, [])]
        for label, ex in ((1, ()), (0, mask)):
            t0 = time.perf_counter()
            hits, asm = a.assess(q["question"], corpora.TAGS, exclude=ex)
            ms = (time.perf_counter() - t0) * 1000
            rank = next((i + 1 for i, h in enumerate(hits) if h.chunk_id in set(mask)), 0)
            out.append(dict(domain=name, qid=q["id"], group=q["sources"][0], label=label, source_retrieved=int(rank > 0), source_rank=rank,
                            old_relevance=round(max((h.relevance for h in hits), default=0.0), 6), assess_ms=round(ms, 3),
                            **{f: round(asm.features[f], 6) for f in FEATURES}))
            if keep is not None: keep.append((ctx.embeddings.embed_query(q["question"]), [h.chunk_id for h in hits]))
        if (n + 1) % 100 == 0: print(f"{name}: {n + 1}/{len(qs)} questions, {time.time() - t:.0f} s", file=sys.stderr, flush=True)
    ctx.embeddings.save()                         # the questions' embeddings, for the next run
    if keep is not None: keep.insert(0, ctx)     # the context, for the passages' text and embedding model
    return out

SENTENCE_FEATURES = ("sent_max", "sent_first", "sent_gap", "sent_margin", "sent_z", "sent_over_passage", "sent_top3")

def sentence_vectors(ctx, name:str, chunk_ids, budget:float|None=None) -> tuple[dict, bool]:
    """{chunk id: (sentences x dim) unit vectors} of the chunks' sentences (keel.answer.attribution.sentences), from
    the cache; missing ones embedded in pieces until `budget` seconds have passed. Also whether all were there."""
    from keel.answer.attribution import sentences
    from keel.evals.retrieval_bench import CachedEmbeddings, cache_key
    from keel.factory import make_embeddings
    ids = sorted(set(chunk_ids))
    text = {}
    for i in range(0, len(ids), 900):
        part = ids[i:i + 900]
        text.update(ctx.con.execute(f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(part))})", part))
    sents = {c: sentences(text[c]) or [text[c]] for c in ids}
    cache = CachedEmbeddings(make_embeddings(ctx.settings), corpora.CACHE/"embeddings"/f"sentences-{name}")
    todo = list(dict.fromkeys(x for c in ids for x in sents[c] if cache_key(x) not in cache._load()))
    total = sum(map(len, sents.values()))
    print(f"{name}: {len(ids)} passages, {total} sentences, {len(todo)} to embed", file=sys.stderr, flush=True)
    t0, done = time.perf_counter(), 0
    while done < len(todo) and (budget is None or time.perf_counter() - t0 < budget):
        piece = todo[done:done + 500]
        cache.embed(piece); done += len(piece)
        el = time.perf_counter() - t0
        print(f"{name}: embedded {done}/{len(todo)} sentences, {el:.0f} s, {done / el:.1f} sentences/s",
              file=sys.stderr, flush=True)
    if done < len(todo): return {}, False
    return {c: cache.embed(sents[c]) for c in ids}, True

def sentence_features(qvec, chunk_ids:list, vecs:dict, passage_cosine:float, background:tuple) -> dict:
    "The sentence-level evidence of one retrieval: how close the question comes to any one sentence of its passages."
    if not chunk_ids: return dict.fromkeys(SENTENCE_FEATURES, 0.0)
    q = np.asarray(qvec, np.float32)
    per = [vecs[c] @ q for c in chunk_ids]                   # each passage's sentence cosines
    best = np.array([p.max() for p in per]); alls = np.sort(np.concatenate(per))[::-1]
    mu, sd = background
    return dict(sent_max=float(alls[0]), sent_first=float(best[0]),
                sent_gap=float(alls[0] - np.sort(best)[-2]) if len(best) > 1 else 0.0,
                sent_margin=float(alls[0] - alls.mean()), sent_z=float((alls[0] - mu) / sd),
                sent_over_passage=float(alls[0] - passage_cosine), sent_top3=float(alls[:3].mean()))

def with_sentences(name:str, limit:int|None=None, budget:float|None=None) -> list[dict]|None:
    "The rows of `rows_for` with SENTENCE_FEATURES added; None when the sentence vectors are not all cached yet."
    from keel.retrieval.answerability import CorpusStats
    keep = []
    rows = rows_for(name, limit, keep)
    ctx, kept = keep[0], keep[1:]
    vecs, complete = sentence_vectors(ctx, name, [c for _, ids in kept for c in ids], budget)
    if not complete: return None
    stats = CorpusStats.from_db(ctx.con)
    for r, (qv, ids) in zip(rows, kept):
        r.update({k: round(v, 6) for k, v in sentence_features(qv, ids, vecs, float(r["cosine"]),
                                                               stats.background(qv)).items()})
    return rows

def chunked_context(name:str, ingest:bool=False, **kw):
    "The chunked benchmark data directory of a corpus, as `corpora.context` returns the one-passage one."
    from scifact_retrieval import context
    folder, split = corpora.corpus(name)
    return context(folder, corpora.CACHE, corpora.CACHE/f"{folder.name}-chunked-data", ingest=False), folder, split

def leave_documents_out(rows:list[dict], folds:int=5, seed:int=0, features=None) -> tuple[float, dict]:
    "ROC AUC and the 10%-false-answer operating point of out-of-fold scores, folds grouped by the cited document."
    import random
    from keel.stats import roc_auc
    from keel.retrieval.answerability import fit_calibration, operating_point, FEATURES
    features = features or FEATURES
    groups = sorted({r["group"] for r in rows}); random.Random(seed).shuffle(groups)
    fold = {g: i % folds for i, g in enumerate(groups)}
    p, y = [], []
    for f in range(folds):
        cal = fit_calibration([r for r in rows if fold[r["group"]] != f], features=features)
        test = [r for r in rows if fold[r["group"]] == f]
        p += [cal.probability(r) for r in test]; y += [int(r["label"]) for r in test]
    return roc_auc(p, y), operating_point(p, y, 0.10)

def report(rows:list[dict], features=None, label:str=""):
    "Leave-documents-out and cross-domain figures of `rows`, printed."
    from keel.stats import roc_auc
    from keel.retrieval.answerability import fit_calibration, FEATURES
    features = features or FEATURES
    by = {d: [r for r in rows if r["domain"] == d] for d in ("scifact", "pubmedqa")}
    for d, rs in by.items():
        if not rs: continue
        auc, op = leave_documents_out(rs, features=features)
        answerable = [r for r in rs if int(r["label"])]
        first = sum(int(r["source_rank"]) == 1 for r in answerable) / max(1, len(answerable))
        print(f"{label}{d}: leave-documents-out ROC AUC {auc:.3f}; at <= 10% false answers: false refusals "
              f"{op['false_refusal']:.1%}, false answers {op['false_answer']:.1%}; cited document first {first:.1%}")
    if all(by.values()):
        for a, b in (("pubmedqa", "scifact"), ("scifact", "pubmedqa")):
            cal = fit_calibration(by[a], features=features)
            auc = roc_auc([cal.probability(r) for r in by[b]], [int(r["label"]) for r in by[b]])
            print(f"{label}fit {a} -> test {b}: ROC AUC {auc:.3f}")

def write(rows:list[dict], path:Path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0])); w.writeheader(); w.writerows(rows)

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("domains", nargs="*", default=["scifact", "pubmedqa"])
    ap.add_argument("--limit", type=int); ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--chunked", action="store_true",
                    help="the chunked data directories (the committed CSV is left alone)")
    ap.add_argument("--ldo", action="store_true", help="print leave-documents-out and cross-domain figures")
    ap.add_argument("--sentences", action="store_true",
                    help="add sentence-level features (answerability-features.csv is left alone)")
    ap.add_argument("--budget", type=float, help="with --sentences: stop embedding after about this many seconds")
    args = ap.parse_args()
    if args.sentences:
        from keel.retrieval.answerability import FEATURES
        for name in args.domains:
            rows = with_sentences(name, args.limit, args.budget)
            if rows is None: sys.exit(f"{name}: sentence vectors not all embedded within the budget; run again")
            write(rows, corpora.CACHE/f"answerability-sentences-{name}.csv"); print(f"{name}: {len(rows)} rows")
        parts = [corpora.CACHE/f"answerability-sentences-{n}.csv" for n in ("scifact", "pubmedqa")]
        rows = [r for p in parts if p.exists() for r in csv.DictReader(open(p))]
        if all(p.exists() for p in parts):           # the committed file: the keys and the sentence features only
            write([{k: r[k] for k in ("domain", "qid", "label", *SENTENCE_FEATURES)} for r in rows], SENTENCES_OUT)
            print(f"wrote {len(rows)} rows to {SENTENCES_OUT}")
        if args.ldo:
            for lab, fs in (("shipped", FEATURES), ("shipped + sentences", FEATURES + SENTENCE_FEATURES),
                            ("sentences alone", SENTENCE_FEATURES)):
                report(rows, fs, f"[{lab}] ")
        sys.exit(0)
    if args.chunked: corpora.context = chunked_context
    stem = "answerability-chunked" if args.chunked else "answerability"
    for name in args.domains:                       # one file per domain in the cache, then the two joined
        rows = rows_for(name, args.limit)
        write(rows, corpora.CACHE/f"{stem}-{name}.csv"); print(f"{name}: {len(rows)} rows")
    parts = [corpora.CACHE/f"{stem}-{n}.csv" for n in ("scifact", "pubmedqa")]
    if all(p.exists() for p in parts):
        rows = [r for p in parts for r in csv.DictReader(open(p))]
        if not args.chunked: write(rows, Path(args.out)); print(f"wrote {len(rows)} rows to {args.out}")
        if args.ldo: report(rows)
