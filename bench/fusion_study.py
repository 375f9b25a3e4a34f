"""The fusion study: which hybrid configuration to ship, fitted on SciFact train with 5-fold cross-validation over
the claims (the choice made inside each fold) and measured on PubMedQA's development half, a second domain that
informed nothing.

Both corpora are searched in their benchmark data directories (bench/corpora.py: one passage per document, ingested
through `Ingestor.ingest_documents`, the benchmark user's tags). Per query and BM25 variant, the study computes the
*complete* BM25 scores over the visible passages with the library's own `BM25Index` (title weight, k1 and b,
stopwords, stemming, RM3 feedback) and the complete cosines from the passages' stored embeddings, once; each fusion
configuration (the lists' depths, rank or score fusion, the normalisation, the vector weight) is then a few array
operations over the candidates the two lists bring, ordered as `Retriever.fuse` orders them (ties by chunk id).
The production `Retriever.retrieve` reproduces the configuration it is set to (`bench/scifact_retrieval.py`
prints the same figure). nDCG@10 and Recall@100 at document level with trec_eval's semantics (checked here against
`keel.evals.metrics.query_measures`). Writes bench/results/fusion_study.json (the table the retrieval notebook
shows); asserts nothing.

    .venv/bin/python bench/fusion_study.py [--corpora scifact pubmedqa] [--parts titles others] [--limit N]
"""
from __future__ import annotations
import argparse, itertools, json, pickle, random, sys, time
from collections import Counter
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import context, TAGS, CACHE
import keel.retrieval.bm25 as kr
import keel.retrieval.fusion as kf
from keel.evals.metrics import query_measures

RESULTS = Path(__file__).resolve().parent/"results"/"fusion_study.json"
BASE = dict(title=2.0, k1=1.2, b=0.75, stop=True, stem=True, prf=0)          # the BM25 side as shipped before
VARIANTS = ([dict(BASE, title=t, k1=k1, b=b) for t in (1.0, 1.5, 2.0, 3.0) for k1 in (0.9, 1.2, 1.5) for b in (0.5, 0.75, 0.9)]
            + [dict(BASE, stop=False), dict(BASE, stem=False), dict(BASE, prf=10)])
WEIGHTS = tuple(round(x, 2) for x in np.arange(0.3, 0.851, 0.05))
GROUPS = ([("bm25", None, 100, 100, (None,)), ("vector", None, 100, 100, (None,)), ("rrf", 60, 100, 100, WEIGHTS)]
          + [("convex", n, db, dv, WEIGHTS) for n in ("minmax", "zscore") for db, dv in ((100, 100), (20, 20), (50, 50), (100, 200))])

def queries(folder:Path, split:str, limit=None):
    "(query id, text, {doc id: grade}) of every judged query."
    qs = {str(q["_id"]): q["text"] for q in map(json.loads, open(folder/"queries.jsonl"))}
    qrels = {}
    for n, line in enumerate(open(folder/"qrels"/f"{split}.tsv")):
        f = line.split()
        if n == 0 and not f[-1].isdigit(): continue
        if int(f[2]) > 0: qrels.setdefault(f[0], {})[f"{folder.name}/{f[1]}"] = int(f[2])
    return [(q, qs[q], qrels[q]) for q in qrels][:limit]

def vname(v:dict) -> str:
    "A BM25 variant's name."
    out = [f"title {v['title']:g}", f"k1 {v['k1']:g}", f"b {v['b']:g}"]
    if not v["stop"]: out.append("no stopwords")
    if not v["stem"]: out.append("no stemming")
    if v["prf"]: out.append(f"RM3 {v['prf']}/10/0.5")
    return ", ".join(out)

def fname(method, p, db, dv, w) -> str:
    "A fusion configuration's name."
    if method in ("bm25", "vector"): return f"{method} alone"
    depth = "" if (db, dv) == (100, 100) else f", depth {db}/{dv}"
    return f"RRF k {p}, w {w:g}" if method == "rrf" else f"convex {p}, w {w:g}{depth}"

def top(s:np.ndarray, k:int) -> np.ndarray:
    "Rows of the `k` best finite scores, best first, ties by row (= chunk id order)."
    ok = np.flatnonzero(np.isfinite(s))
    if len(ok) > k:
        thr = s[ok][np.argpartition(-s[ok], k - 1)[k - 1]]
        ok = ok[s[ok] >= thr]                      # keep ties at the threshold, then order by score and row
    return ok[np.lexsort((ok, -s[ok]))][:k]

def fuse_group(method:str, p, db:int, dv:int, ws, b:np.ndarray, v:np.ndarray, blist:np.ndarray, vlist:np.ndarray) -> list:
    """Rows ranked (100 deep) by one fusion method at each vector weight in `ws`, from complete scores `b`, `v` and
    the two ranked lists: as `Retriever.fuse` ranks them (weights 2(1-w) and 2w, ties by chunk id = row)."""
    if method == "bm25": return [blist[:100]]
    if method == "vector": return [vlist[:100]]
    bl, vl = blist[:db], vlist[:dv]
    if method == "rrf":
        cand, inv = np.unique(np.concatenate([bl, vl]), return_inverse=True)
        rb = np.bincount(inv[:len(bl)], 1 / (p + np.arange(1, len(bl) + 1)), minlength=len(cand))
        rv = np.bincount(inv[len(bl):], 1 / (p + np.arange(1, len(vl) + 1)), minlength=len(cand))
        parts = (rb, rv)
    else:
        cand = np.union1d(bl, vl)
        parts = (kf.normalise(b[cand], p), kf.normalise(v[cand], p))     # the library's normalisation
    return [cand[np.argsort(-(2 * (1 - w) * parts[0] + 2 * w * parts[1]), kind="stable")[:100]] for w in ws]

DISCOUNT = 1 / np.log2(np.arange(2, 12))

def measures(ranked:np.ndarray, gain:np.ndarray, idcg:float, R:int) -> tuple[float, float]:
    "(nDCG@10, Recall@100) of rows `ranked` (one passage per document) with trec_eval's semantics; `gain` per row."
    g = gain[ranked[:100]]
    return float((np.maximum(g[:10], 0) * DISCOUNT[:len(g[:10])]).sum() / idcg), float((g > 0).sum() / R)

def judged(rel:dict, row_of:dict, n:int) -> tuple[np.ndarray, float, int]:
    "(gain per row, ideal DCG@10, number relevant) of one query's judgments (documents missing from the corpus count in R)."
    gain = np.zeros(n)
    for d, x in rel.items():
        if d in row_of: gain[row_of[d]] = x
    ideal = np.array(sorted(rel.values(), reverse=True)[:10], float)
    return gain, float((ideal * DISCOUNT[:len(ideal)]).sum()), sum(x > 0 for x in rel.values())

def corpus_data(name:str, limit=None):
    "Everything a corpus's grid needs: the context, queries, rows, sources, visibility, embeddings, query vectors."
    ctx, folder, split = context(name, ingest=False, cache="queries")
    qs = queries(folder, split, limit)
    bi = ctx.retriever.bm25_index()
    ids, vis = bi.ids, bi.visible(TAGS)
    rows = dict(ctx.con.execute("SELECT c.id, c.embedding FROM chunks c"))
    E = np.stack([np.frombuffer(rows[int(i)], np.float32) for i in ids])
    src = dict(ctx.con.execute("SELECT c.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id"))
    docs = [src[int(i)] for i in ids]
    qv = np.stack([ctx.embeddings.embed_query(t) for _, t, _ in qs]).astype(np.float32)
    ctx.embeddings.save()
    return ctx, qs, ids, vis, E, docs, qv

def bm25_scores(ctx, v:dict, qs, vis, built:dict) -> list[np.ndarray]:
    "Complete BM25 scores of every visible row per query under variant `v` (-inf where not visible or no term)."
    if (v["title"], v["stem"]) not in built:      # k1, b, stopwords and RM3 act at query time: one index per title weight and stemming
        an = kr.Analyzer() if v["stem"] else kr.Analyzer("unicode61 remove_diacritics 2")
        built[v["title"], v["stem"]] = kr.BM25Index.build(ctx.con, (1.0, 1.0, v["title"]), analyzer=an)
    bi = built[v["title"], v["stem"]]
    old = kr.K1, kr.B, kr.STOPWORDS
    kr.K1, kr.B = v["k1"], v["b"]
    if not v["stop"]: kr.STOPWORDS = frozenset()
    try:
        out = []
        for _, text, _ in qs:
            qw = bi.expand(text, TAGS, v["prf"], 10, 0.5) if v["prf"] else Counter(bi._columns(text))
            rows, w = bi._postings_of(qw)
            s = np.bincount(rows, weights=w, minlength=len(bi.ids)) if len(rows) else np.zeros(len(bi.ids))
            hit = np.zeros(len(bi.ids), bool); hit[rows] = True
            out.append(np.where(vis & hit, s, -np.inf))
        return out
    finally: kr.K1, kr.B, kr.STOPWORDS = old

def grid(name:str, limit=None, variants=VARIANTS, groups=GROUPS, check:int=20) -> dict:
    "scores: {(variant name, fusion name): array (queries x [nDCG@10, Recall@100])}, and the passage and query counts."
    ctx, qs, ids, vis, E, docs, qv = corpus_data(name, limit)
    t0 = time.perf_counter()
    cos = qv @ E.T
    vlists = [top(np.where(vis, c, -np.inf), 200) for c in cos]
    row_of = {d: r for r, d in enumerate(docs)}
    assert len(row_of) == len(docs), "one passage per document expected"
    gains = [judged(rel, row_of, len(docs)) for _, _, rel in qs]
    out, built = {}, {}
    for v in variants:
        t = time.perf_counter()
        gs = [g for g in groups if g[0] != "vector" or v == BASE]
        res = {}
        for i, (s, (_, _, rel)) in enumerate(zip(bm25_scores(ctx, v, qs, vis, built), qs)):
            blist = top(s, 200)
            s = np.where(np.isfinite(s), s, 0.0)      # a candidate without a query term scores 0 (as `Retriever._complete`)
            for g in gs:
                for w, ranked in zip(g[4], fuse_group(*g, s, cos[i], blist, vlists[i])):
                    m = res.setdefault(fname(*g[:4], w), [])
                    m.append(measures(ranked, *gains[i]))
                    if i < check:       # the fast measures are trec_eval's
                        tm = query_measures([docs[r] for r in ranked], rel, cutoffs=(10, 100), success=())
                        assert abs(tm["ndcg_cut_10"] - m[-1][0]) < 1e-9 and abs(tm["recall_100"] - m[-1][1]) < 1e-9, (g, w, tm, m[-1])
        for f, m in res.items(): out[(vname(v), f)] = np.array(m)
        print(f"  {name}: {vname(v)}: {time.perf_counter() - t:.1f} s", file=sys.stderr)
    print(f"{name}: {len(qs)} queries, {len(ids)} passages ({int(vis.sum())} visible), {len(out)} configurations, "
          f"{time.perf_counter() - t0:.0f} s")
    ctx.close()
    return {"scores": out, "passages": int(vis.sum()), "queries": len(qs)}

def cross_validate(res:dict, folds:int=5, seed:int=0, among=None):
    "Best configuration (of `among`, default all) chosen on 4 folds, scored on the fifth: (nDCG@10, R@100, choices)."
    keys = list(among or res)
    n = len(next(iter(res.values())))
    idx = list(range(n)); random.Random(seed).shuffle(idx)
    parts, nd, rc, chosen = [idx[i::folds] for i in range(folds)], [], [], []
    for f in range(folds):
        train = [i for g in range(folds) if g != f for i in parts[g]]
        best = max(keys, key=lambda c: (round(res[c][train, 0].mean(), 12), -keys.index(c)))
        chosen.append(best); nd += list(res[best][parts[f], 0]); rc += list(res[best][parts[f], 1])
    return float(np.mean(nd)), float(np.mean(rc)), chosen

PARTS = {   # the grid in parts that each take a couple of CPU minutes: (BM25 variants, fusion groups)
    "titles": (lambda v: (v["k1"], v["b"]) == (1.2, 0.75) and v["title"] > 1 and (v["stop"], v["stem"], v["prf"]) == (True, True, 0), GROUPS),
    "others": (lambda v: not PARTS["titles"][0](v), [g for g in GROUPS if (g[2], g[3]) == (100, 100)]),
}

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int)
    ap.add_argument("--corpora", nargs="+", default=["scifact", "pubmedqa"])
    ap.add_argument("--parts", nargs="*", default=list(PARTS), help="grid parts to compute: titles (every fusion, title "
                    "weights 1.5-3), others (every other BM25 variant, lists 100 deep); none: report what is saved")
    ap.add_argument("--shipped", default="title 3, k1 1.2, b 0.75|convex zscore, w 0.45", help="variant|fusion shipped now")
    a = ap.parse_args(argv)
    print("one run on a shared 2-core machine; quality figures are deterministic, timings are not")
    for corpus in a.corpora:
        for part in a.parts:
            keep, groups = PARTS[part]
            res = grid(corpus, a.limit, [v for v in VARIANTS if keep(v)], groups)
            (CACHE/f"fusion-grid-{corpus}-{part}.pkl").write_bytes(pickle.dumps(res))
    results = {}
    for corpus in ("scifact", "pubmedqa"):
        parts = [pickle.loads(p.read_bytes()) for p in sorted(CACHE.glob(f"fusion-grid-{corpus}-*.pkl"))]
        if not parts: continue
        assert len({(p["passages"], p["queries"]) for p in parts}) == 1, f"{corpus}: parts computed on different corpora"
        results[corpus] = dict(parts[0], scores={k: v for p in parts for k, v in p["scores"].items()})
    report(results, tuple(a.shipped.split("|")))

def report(results:dict, shipped:tuple):
    "Print the study's table and cross-validation, write bench/results/fusion_study.json."
    sf, pm = (results[k]["scores"] if k in results else None for k in ("scifact", "pubmedqa"))
    if sf is None: return
    # the choice is made among what the retriever can be set to: BM25 with FTS5's k1 and b, stopwords and stemming on
    # (title weight and RM3 are settings), both lists as deep as the hits asked for (100 here), any fusion
    settable = [c for c in sf if ", k1 1.2, b 0.75" in c[0] and "no " not in c[0] and "depth" not in c[1]]
    cvn, cvr, chosen = cross_validate(sf, among=settable)
    order = sorted(sf, key=lambda c: -sf[c][:, 0].mean())
    win = max(settable, key=lambda c: (round(sf[c][:, 0].mean(), 12), -settable.index(c)))
    mean = lambda r, c: r[c].mean(0).tolist() if r is not None and c in r else [None, None]
    fam = lambda c: ("vector alone" if c[1] == "vector alone" else "BM25 alone" if c[1] == "bm25 alone" else
                     c[1].split(",")[0] + ("" if "depth" not in c[1] else " " + c[1].split(", ")[-1]))
    families = {}                       # the best of each kind on all of train
    for c in order: families.setdefault(fam(c), c)
    old = ("title 1, k1 1.2, b 0.75", "RRF k 60, w 0.5")
    before = ("title 2, k1 1.2, b 0.75", "convex minmax, w 0.6")
    variants = {}                       # the best of each BM25 variant on all of train
    for c in order:
        if c[1] not in ("bm25 alone", "vector alone"): variants.setdefault(c[0], c)
    other_kb = [c for v, c in variants.items() if ", k1 1.2, b 0.75" not in v][:1]      # the best k1/b other than FTS5's
    special = [c for v, c in variants.items() if ", k1 1.2, b 0.75" in v and (v.count(",") > 2 or v.startswith("title 1,"))]
    rows = list(dict.fromkeys([win, shipped, before, old] + order[:6] + list(families.values()) + other_kb + special))
    rows = [c for c in rows if c in sf]
    spread = lambda keys: np.array([cross_validate(sf, seed=s, among=keys)[0] for s in range(20)])
    cv_all, cv_set = spread(list(sf)), spread(settable)
    print(f"\n{'configuration':<70} {'SciFact train':>20} {'PubMedQA dev':>20}")
    print(f"{'':<70} {'nDCG@10':>10}{'R@100':>10} {'nDCG@10':>10}{'R@100':>10}")
    fmt = lambda x: f"{x:>10.4f}" if x is not None else f"{'-':>10}"
    for c in rows:
        s, p = mean(sf, c), mean(pm, c)
        print(f"{c[1] + ' | ' + c[0]:<70} {fmt(s[0])}{fmt(s[1])} {fmt(p[0])}{fmt(p[1])}")
    print(f"\n5-fold cross-validation on SciFact train, the best of the {len(settable)} settable configurations chosen on "
          f"4 folds and scored on the fifth: nDCG@10 {cvn:.4f}, Recall@100 {cvr:.4f}")
    print(f"  over 20 different fold splits: mean {cv_set.mean():.4f}, sd {cv_set.std():.4f}, range {cv_set.min():.4f}-{cv_set.max():.4f}")
    print(f"  choosing among all {len(sf)} configurations (also k1, b, stopwords, stemming, list depths the settings cannot "
          f"express): {cv_all[0]:.4f}; 20 splits: mean {cv_all.mean():.4f}, sd {cv_all.std():.4f}")
    print("chosen per fold: " + "; ".join(f"{c[1]} | {c[0]}" for c in chosen))
    print(f"best settable on all of train: {win[1]} | {win[0]}; best of all: {order[0][1]} | {order[0][0]}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "note": "bench/fusion_study.py: nDCG@10 and Recall@100 at document level, SciFact train (all 809 claims, the whole corpus) "
                "and PubMedQA dev (500 questions)",
        "corpora": {k: {"passages": r["passages"], "queries": r["queries"]} for k, r in results.items()},
        "configurations": len(sf),
        "cross_validation": {"ndcg@10": cvn, "recall@100": cvr, "among": len(settable), "chosen": [" | ".join(c[::-1]) for c in chosen],
                             "splits": {"mean": cv_set.mean(), "sd": cv_set.std(), "min": cv_set.min(), "max": cv_set.max()},
                             "all_configurations": {"ndcg@10": cv_all[0], "mean": cv_all.mean(), "sd": cv_all.std()}},
        "best_on_train": " | ".join(win[::-1]), "best_of_all": " | ".join(order[0][::-1]), "shipped": " | ".join(shipped[::-1]),
        "rows": [{"fusion": c[1], "bm25": c[0], "scifact": mean(sf, c), "pubmedqa": mean(pm, c)} for c in rows],
    }, indent=1) + "\n")

if __name__ == "__main__": main()
