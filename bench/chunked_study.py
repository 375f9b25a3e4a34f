"""Hybrid retrieval over *chunked* corpora, the way `keel ingest` stores documents: each abstract cut into chunks
that fit the embedding model's window, a document ranked by its best chunk.

Why: the benchmark's default layout (one passage per document) hands the embedding model whole abstracts, and
all-MiniLM-L6-v2 reads only its first 256 tokens: 71% of SciFact's abstracts are longer (median 316 tokens, 90th
percentile 502), so the vector side never sees their conclusions. Chunked, every sentence is embedded.

For each corpus (SciFact train, fitted with 5-fold cross-validation over the claims; PubMedQA dev, the second domain
that informed nothing) the script asks the production `Retriever` of the chunked data directory
(`bench/scifact_retrieval.py --chunk` builds SciFact's; this script builds PubMedQA's the same way) for the BM25 and
vector lists of every question once per title weight, completes their scores with `Retriever._complete`, and orders
each fusion configuration with the library's own `convex` / `rrf` - the same functions `Retriever.fuse` calls, so
the shipped row equals what `Retriever.retrieve` returns. nDCG@10 and Recall@100 at document level with trec_eval's
semantics (`keel.evals.metrics.query_measures`). Per-question scores go to bench/.cache/chunked_study.json (a later
run for one corpus keeps the other's); the means and the cross-validation to bench/results/chunked_study.json.
Asserts nothing.

    .venv/bin/python bench/chunked_study.py [--corpora scifact pubmedqa] [--depth 300] [--limit N]
"""
from __future__ import annotations
import argparse, json, random, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import SCIFACT, TAGS, CACHE, corpus, pubmedqa_beir
from fusion_study import queries
from scifact_retrieval import context as beir_context
import keel.retrieval.fusion as kr
from keel.evals.metrics import query_measures

RESULTS = Path(__file__).resolve().parent/"results"/"chunked_study.json"
SCORES = CACHE/"chunked_study.json"
TITLES = (1.0, 2.0, 3.0)
WEIGHTS = tuple(round(x, 2) for x in np.arange(0.3, 0.751, 0.05))
CONFIGS = ([("bm25", None, None), ("vector", None, None)] + [("rrf", None, w) for w in WEIGHTS]
           + [("convex", n, w) for n in ("minmax", "zscore") for w in WEIGHTS])

def order(method:str, norm, w, lists:dict, completed:list) -> list:
    "One configuration's fused ranking, through the library's own fusion functions."
    if method in ("bm25", "vector"): return lists[method]
    weights = {"bm25": 2 * (1 - w), "vector": 2 * w}
    return kr.rrf(lists, weights=weights) if method == "rrf" else kr.convex(completed, weights, norm)

def docs(hits) -> list[str]:
    "Documents in the order of their best chunk."
    return list(dict.fromkeys(h.source for h in hits))

def measure(name:str, depth:int, limit=None) -> dict:
    "Per configuration name: per-question (nDCG@10, Recall@100), in question order."
    folder, split = corpus(name)
    ctx = beir_context(folder, CACHE, CACHE/f"{folder.name}-chunked-data", ingest=True, chunk=True)
    print(ctx.ingest_summary, file=sys.stderr)
    n = ctx.con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    r, base = ctx.retriever, ctx.retriever.settings
    qs = queries(folder, split, limit)
    out, t0 = {}, time.perf_counter()
    from tqdm import tqdm
    for title in TITLES:
        r.settings, r._bm25 = base.replace(bm25_title_weight=title), None     # the BM25 index is built per title weight
        for qid, text, judged in tqdm(qs, desc=f"{name} title {title:g}", unit="q", mininterval=5):
            qvec = ctx.embeddings.embed_query(text)
            lists, qw = r.ranked_lists(text, TAGS, depth, depth, qvec)
            completed = r._complete(kr.rrf(lists), qw, np.asarray(qvec, np.float32))
            for method, norm, w in CONFIGS:
                if method == "vector" and title != TITLES[0]: continue
                key = cname(method, norm, w, title)
                m = query_measures(docs(order(method, norm, w, lists, completed)), judged)
                out.setdefault(key, []).append((m["ndcg_cut_10"], m["recall_100"]))
    r.settings, r._bm25 = base, None
    if ctx.embeddings.computed: ctx.embeddings.save()
    ctx.close()
    print(f"{name}: {len(qs)} questions over {n} chunks, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return {"chunks": n, "questions": len(qs), "scores": out}

def cname(method, norm, w, title) -> str:
    "A configuration's name."
    if method == "vector": return "vector alone"
    side = f"title {title:g}"
    if method == "bm25": return f"bm25 alone, {side}"
    return f"{'RRF' if method == 'rrf' else 'convex ' + norm}, w {w:g}, {side}"

def cross_validate(scores:dict, folds:int=5, seed:int=0) -> tuple[float, list[str]]:
    "Mean nDCG@10 of the configuration chosen on the other folds, over every question; the choices made."
    names = [k for k in scores if "alone" not in k]
    n = len(scores[names[0]])
    idx = list(range(n)); random.Random(seed).shuffle(idx)
    A = np.array([[s[0] for s in scores[k]] for k in names])
    total, chosen = 0.0, []
    for f in range(folds):
        test = np.array(idx[f::folds]); train = np.setdiff1d(np.arange(n), test)
        best = int(np.argmax(A[:, train].mean(1)))
        total += A[best, test].sum(); chosen.append(names[best])
    return total / n, chosen

def joint(res:dict) -> dict|None:
    """The choice made on SciFact over both layouts at once: each claim's nDCG@10 averaged over its one-passage score
    (bench/fusion_study.py's cached grid) and its chunked score, cross-validated as above; PubMedQA for what it
    picks."""
    import pickle
    grid = {}
    for corpus in ("scifact", "pubmedqa"):
        grid[corpus] = {}
        for part in ("titles", "others"):
            f = CACHE/f"fusion-grid-{corpus}-{part}.pkl"
            if not f.is_file(): return None
            grid[corpus].update(pickle.load(open(f, "rb"))["scores"])
    def one_passage(k):
        f, w, t = k.split(", ")
        fusion = f"convex {f.split()[1]}, {w}" if f.startswith("convex") else f"RRF k 60, {w}"
        return (f"title {t.split()[1]}, k1 1.2, b 0.75", fusion)
    names = [k for k in res["scifact"]["scores"] if "alone" not in k and one_passage(k) in grid["scifact"]]
    u = {k: np.asarray(grid["scifact"][one_passage(k)])[:, 0] for k in names}
    c = {k: np.array([x[0] for x in res["scifact"]["scores"][k]]) for k in names}
    both = {k: [((a + b) / 2, 0.0) for a, b in zip(u[k], c[k])] for k in names}
    cv, chosen = cross_validate(both)
    splits = [cross_validate(both, seed=s)[0] for s in range(20)]
    best = max(names, key=lambda k: np.mean(u[k]) + np.mean(c[k]))
    row = lambda k: {"scifact": [float(np.mean(u[k])), float(np.mean(c[k]))],
                     "pubmedqa": [float(np.asarray(grid["pubmedqa"][one_passage(k)])[:, 0].mean()),
                                  float(np.mean([x[0] for x in res["pubmedqa"]["scores"][k]]))]}
    shown = dict.fromkeys([best, "convex zscore, w 0.45, title 3", "convex minmax, w 0.6, title 2"])
    return {"ndcg@10": cv, "chosen": chosen, "best_on_train": best, "rows": {k: row(k) for k in shown},
            "over_20_splits": {"mean": float(np.mean(splits)), "min": float(min(splits)), "max": float(max(splits))}}

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpora", nargs="*", default=["scifact", "pubmedqa"],
                   help="corpora to measure again (none: summarise the cached scores)")
    p.add_argument("--depth", type=int, default=300, help="chunks each list brings (300 chunks cover 100 documents)")
    p.add_argument("--limit", type=int)
    a = p.parse_args(argv)
    res = json.loads(SCORES.read_text()) if SCORES.is_file() else {}
    for name in a.corpora: res[name] = measure(name, a.depth, a.limit)
    SCORES.write_text(json.dumps(res))
    from keel.config import Settings
    d = Settings()
    shipped = cname(d.fusion, d.fusion_norm, d.fusion_weight, d.bm25_title_weight)
    if "scifact" in res:
        cv, chosen = cross_validate(res["scifact"]["scores"])
        splits = [cross_validate(res["scifact"]["scores"], seed=s)[0] for s in range(20)]
        res["cv"] = {"ndcg@10": cv, "chosen": chosen, "over_20_splits": {"mean": float(np.mean(splits)),
                     "sd": float(np.std(splits)), "min": float(min(splits)), "max": float(max(splits))}}
        print(f"SciFact 5-fold CV nDCG@10 {cv:.4f} (over 20 splits: mean {np.mean(splits):.4f}, "
              f"range {min(splits):.4f}-{max(splits):.4f}); chosen: {', '.join(dict.fromkeys(chosen))}")
    if {"scifact", "pubmedqa"} <= set(res) and (j := joint(res)):
        res["joint"] = j
        print(f"Both layouts at once: 5-fold CV nDCG@10 {j['ndcg@10']:.4f} "
              f"(20 splits: mean {j['over_20_splits']['mean']:.4f}); "
              f"best on train {j['best_on_train']}")
        for k, v in j["rows"].items():
            print(f"  {k}: SciFact one passage / chunked {v['scifact'][0]:.4f} / {v['scifact'][1]:.4f}; "
                  f"PubMedQA {v['pubmedqa'][0]:.4f} / {v['pubmedqa'][1]:.4f}")
    summary = {c: {"chunks": res[c]["chunks"], "questions": res[c]["questions"],
                   "mean": {k: [float(np.mean(v)) for v in zip(*x)] for k, x in res[c]["scores"].items()}}
               for c in ("scifact", "pubmedqa") if c in res}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({**summary, "cv": res.get("cv"), "joint": res.get("joint"), "shipped": shipped},
                                  indent=1))
    have = [c for c in ("scifact", "pubmedqa") if c in res]
    rows = sorted(res[have[0]]["scores"], key=lambda k: -np.mean([s[0] for s in res[have[0]]["scores"][k]]))
    print(f"{'configuration':<34}" + "".join(f"{c + ' nDCG@10':>18}{'R@100':>8}" for c in have))
    for k in rows[:12] + [r for r in rows[12:] if "alone" in r or r == shipped]:
        print(f"{k + (' (shipped)' if k == shipped else ''):<34}" + "".join(
            f"{np.mean([s[0] for s in res[c]['scores'][k]]):>18.4f}{np.mean([s[1] for s in res[c]['scores'][k]]):>8.4f}"
            for c in have))

if __name__ == "__main__": main()
