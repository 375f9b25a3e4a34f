"""The fusion study: which hybrid configuration to ship, fitted on SciFact train with 5-fold cross-validation over
the claims and measured on PubMedQA's development half (a second domain that informed nothing).

Every list comes from the production `Retriever` over the corpus's benchmark data directory (bench/corpora.py:
one passage per document, ingested through `Ingestor.ingest_documents`, the benchmark user's tags), 100 deep: the
BM25 list under each BM25 variant (title weight, RM3 feedback), the vector list once. Fusion variants are then
applied to copies of those lists with the library's own `rrf`, `convex` and `Retriever._complete`, which is what
`Retriever.hybrid` does, so the grid costs no further searches. nDCG@10 and Recall@100 at document level, with
trec_eval's semantics (keel.evals.metrics). Prints the table; asserts nothing.

    .venv/bin/python bench/fusion_study.py [--bm25-only] [--limit N]
"""
from __future__ import annotations
import argparse, copy, itertools, json, pickle, random, sys, time
from collections import Counter
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import context, TAGS, CACHE
from keel.evals.metrics import query_measures
from keel.retrieval import Retriever, rrf, convex

TITLE = (1.0, 2.0)
PRF = ((0, 10, 0.5), (10, 10, 0.5), (10, 20, 0.7))
FUSIONS = ([("bm25", None), ("vector", None)] + [("rrf", w) for w in (0.3, 0.4, 0.5, 0.6, 0.7)]
           + [("convex", w) for w in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)])

def queries(folder:Path, split:str, limit=None):
    "(query id, text, {doc id: grade}) of every judged query."
    qs = {str(q["_id"]): q["text"] for q in map(json.loads, open(folder/"queries.jsonl"))}
    qrels = {}
    for n, line in enumerate(open(folder/"qrels"/f"{split}.tsv")):
        f = line.split()
        if n == 0 and not f[-1].isdigit(): continue
        if int(f[2]) > 0: qrels.setdefault(f[0], {})[f"{folder.name}/{f[1]}"] = int(f[2])
    return [(q, qs[q], qrels[q]) for q in qrels][:limit]

def lists(ctx, qs, prf_title):
    "Per query: the vector list and, per BM25 variant, the BM25 list and its query weights (100 deep, benchmark tags)."
    r = ctx.retriever
    qvecs = [ctx.embeddings.embed_query(t) for _, t, _ in qs]
    ctx.embeddings.save()
    vec = [r._hits(r._vector_pairs(v, TAGS, 100), TAGS, "vector") for v in qvecs]
    out = {}
    for title, (docs, terms, keep) in prf_title:
        rb = Retriever(ctx.con, ctx.embeddings, ctx.index, ctx.settings.replace(bm25_title_weight=title, prf_docs=docs, prf_terms=terms, prf_keep=keep))
        rb.cache_path = None if title != ctx.settings.bm25_title_weight else rb.cache_path
        t = time.perf_counter(); bl = []
        for _, text, _ in qs:
            qw = rb._bm25_query(text, TAGS)
            bl.append((rb._hits(rb._bm25_pairs(text, TAGS, 100, qw), TAGS, "bm25"), qw))
        out[(title, docs, terms, keep)] = (rb, bl)
        print(f"  BM25 title {title} prf {docs}/{terms}/{keep}: {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return qvecs, vec, out

def fused(rb, method, w, bm, qw, vec, qvec):
    "One fused ranking of copies of the lists, as `Retriever.fuse` makes it."
    cp = lambda hs: [copy.copy(h) for h in hs]
    for h in (b := cp(bm)) + (v := cp(vec)): h.ranks, h.scores = dict(h.ranks), dict(h.scores)
    if method == "bm25": return b
    if method == "vector": return v
    weights = {"bm25": 2 * (1 - w), "vector": 2 * w}
    if method == "rrf": return rrf({"bm25": b, "vector": v}, 60, weights)
    return convex(rb._complete(rrf({"bm25": b, "vector": v}), qw, np.asarray(qvec, np.float32)), weights)

def score(ctx, qs, data, configs):
    "{config: array of (nDCG@10, Recall@100) per query}."
    qvecs, vec, bm = data
    src = dict(ctx.con.execute("SELECT c.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id"))
    out = {}
    for key, (method, w) in configs:
        rb, bl = bm[key]
        rows = []
        for i, (_, _, rel) in enumerate(qs):
            hits = fused(rb, method, w, bl[i][0], bl[i][1], vec[i], qvecs[i])[:100]
            m = query_measures(list(dict.fromkeys(src[h.chunk_id] for h in hits)), rel, cutoffs=(10, 100), success=())
            rows.append((m["ndcg_cut_10"], m["recall_100"]))
        out[(key, method, w)] = np.array(rows)
    return out

def name(c):
    (title, docs, terms, keep), method, w = c
    side = f"title {title:g}" + (f", RM3 {docs}/{terms}/{keep:g}" if docs else "")
    return f"{method}{'' if w is None else f' w={w:g}'} | {side}"

def cross_validate(res, folds=5, seed=0):
    "Choose the best configuration on 4 folds, score it on the fifth; returns (held-out nDCG, held-out R@100, choices)."
    n = len(next(iter(res.values())))
    idx = list(range(n)); random.Random(seed).shuffle(idx)
    parts, nd, rc, chosen = [idx[i::folds] for i in range(folds)], [], [], []
    for f in range(folds):
        train = [i for g in range(folds) if g != f for i in parts[g]]
        best = max(res, key=lambda c: (res[c][train, 0].mean(), -len(name(c))))
        chosen.append(best); nd += list(res[best][parts[f], 0]); rc += list(res[best][parts[f], 1])
    return float(np.mean(nd)), float(np.mean(rc)), chosen

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bm25-only", action="store_true"); ap.add_argument("--limit", type=int)
    ap.add_argument("--corpora", nargs="+", default=["scifact", "pubmedqa"])
    ap.add_argument("--small", action="store_true", help="a smaller grid: RM3 10/10/0.5 only, weights 0.4 to 0.7")
    ap.add_argument("--reuse", action="store_true", help="reuse the per-corpus scores saved by an earlier run")
    a = ap.parse_args(argv)
    print("one run on a shared, busy 2-core machine; quality figures are deterministic, timings are not")
    variants = [(t, p) for t in TITLE for p in (PRF[:2] if a.small else PRF)]
    fusions = [f for f in FUSIONS if f[0] == "bm25"] if a.bm25_only else FUSIONS
    if a.small: fusions = [f for f in fusions if f[1] is None or 0.4 <= f[1] <= 0.7]
    configs = [((t, *p), f) for t, p in variants for f in fusions]
    configs = [c for c in configs if not (c[1][0] == "vector" and c[0] != (1.0, 0, 10, 0.5))]   # one vector row
    results = {}
    for corpus in a.corpora:
        saved = CACHE/f"fusion-{corpus}.pkl"
        if a.reuse and saved.is_file(): results[corpus] = pickle.loads(saved.read_bytes()); continue
        ctx, folder, split = context(corpus, ingest=False, cache="queries")
        qs = queries(folder, split, a.limit)
        n = ctx.con.execute("SELECT count(*) FROM chunks").fetchone()[0]
        t = time.perf_counter()
        results[corpus] = score(ctx, qs, lists(ctx, qs, variants), configs)
        print(f"{corpus}: {len(qs)} queries, {n} passages, {len(configs)} configurations, {time.perf_counter() - t:.0f} s")
        saved.write_bytes(pickle.dumps(results[corpus]))
        ctx.close()
    sf, pm = results.get("scifact"), results.get("pubmedqa")
    base = ((1.0, 0, 10, 0.5), "rrf", 0.5)
    if sf is not None:
        cvn, cvr, chosen = cross_validate(sf)
        order = sorted(sf, key=lambda c: -sf[c][:, 0].mean())
        print(f"\n{'configuration':<44} {'SciFact train':>22} {'PubMedQA dev':>22}")
        print(f"{'':<44} {'nDCG@10':>11}{'R@100':>11} {'nDCG@10':>11}{'R@100':>11}")
        for c in list(dict.fromkeys(order[:15] + [base] + [c for c in sf if c[1] in ("bm25", "vector") and c[0] == base[0]])):
            p = pm[c].mean(0) if pm is not None else (float("nan"),) * 2
            print(f"{name(c):<44} {sf[c][:, 0].mean():>11.4f}{sf[c][:, 1].mean():>11.4f} {p[0]:>11.4f}{p[1]:>11.4f}")
        print(f"\n5-fold cross-validation on SciFact train (best of {len(sf)} chosen on 4 folds, scored on the fifth): "
              f"nDCG@10 {cvn:.4f}, Recall@100 {cvr:.4f}")
        print("chosen per fold: " + "; ".join(name(c) for c in chosen))
        win = order[0]
        print(f"chosen on all of train: {name(win)}")
        if pm is not None:
            print(f"PubMedQA dev: chosen {pm[win][:, 0].mean():.4f} / {pm[win][:, 1].mean():.4f} against shipped RRF "
                  f"{pm[base][:, 0].mean():.4f} / {pm[base][:, 1].mean():.4f} (nDCG@10 / Recall@100)")
    (CACHE/"fusion_study.json").write_text(json.dumps({k: {name(c): v.mean(0).tolist() for c, v in r.items()} for k, r in results.items()}, indent=1))

if __name__ == "__main__": main()
