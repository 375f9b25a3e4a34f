"""What answerability scoring costs per question: `Retriever.retrieve` (embedding the question, BM25, vectors, fusion,
relevance) against `Answerability.assess` (the same retrieval with the question embedded once, plus the features and
the logistic), interleaved question by question, on the fixture corpus and, when built, the PubMedQA dev and SciFact
train benchmark data directories (bench/corpora.py: 500 and 5,183 passages). Prints p50/p95 of both and the difference; asserts nothing.
The machine is shared: read the wall-clock figures as noisy; the CPU-time figures (time.process_time, all threads of
this process) are what the work itself costs. Usage:
    .venv/bin/python bench/bench_answerability.py [--repeat 3]
"""
import argparse, json, statistics, sys, tempfile, time
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT/"bench"))
import corpora
from answerability_features import questions

def pct(xs, q): return float(np.percentile(xs, q)) if xs else float("nan")

def fixture():
    from keel.config import load_settings
    from keel.factory import build_context
    from keel.evals.golden import load_golden
    d = Path(tempfile.mkdtemp())
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=d, answer_mode="extractive"))
    ctx.ingestor.ingest_manifest(ROOT/"golden"/"corpus"/"manifest.yaml", progress=False)
    return ctx.retriever, ctx.answerability, [(i.question, list(i.user_tags)) for i in load_golden(ROOT/"golden"/"golden.yaml")]

def cached(name, n=100):
    "The benchmark data directory's retriever, scorer and first `n` judged questions (None when it is not built)."
    folder, split = corpora.corpus(name)
    if not (corpora.CACHE/f"{folder.name}-data"/"keel.db").exists(): return None
    ctx, folder, split = corpora.context(name, ingest=False)
    return ctx.retriever, ctx.answerability, [(q["question"], corpora.TAGS) for q in questions(folder, split)[:n]]

class CachedQueries:
    "The retriever's embedding model with every question embedded once beforehand, so both timed paths skip the model."
    def __init__(self, inner, questions):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.cache = {q: inner.embed_query(q) for q in questions}
    def embed_query(self, q): return self.cache[q] if q in self.cache else self.inner.embed_query(q)
    def embed(self, texts): return self.inner.embed(texts)

def measure(name, r, a, qs, repeat):
    from keel.retrieval.answerability import features
    model = getattr(r.embeddings, "inner", r.embeddings)          # the model itself, past a benchmark's vector cache
    model.embed_query(qs[0][0]); embed_ms = []
    for q, _ in qs[:20]:
        t0 = time.perf_counter(); model.embed_query(q); embed_ms.append((time.perf_counter() - t0) * 1000)
    r.embeddings = CachedQueries(r.embeddings, [q for q, _ in qs])
    for q, t in qs[:3]: r.retrieve(q, t); a.assess(q, t)          # warm: BM25 index, corpus statistics, calibration
    base, full, diff, feat, cbase, cfull, cdiff = [], [], [], [], [], [], []
    for _ in range(repeat):
        for q, t in qs:
            c0, t0 = time.process_time(), time.perf_counter(); r.retrieve(q, t); c1, t1 = time.process_time(), time.perf_counter()
            hits, _ = a.assess(q, t); c2, t2 = time.process_time(), time.perf_counter()
            base.append((t1 - t0) * 1000); full.append((t2 - t1) * 1000); diff.append(full[-1] - base[-1])
            cbase.append((c1 - c0) * 1000); cfull.append((c2 - c1) * 1000); cdiff.append(cfull[-1] - cbase[-1])
            qv = r.embeddings.embed_query(q)
            t3 = time.perf_counter(); features(q, hits, r.bm25_index(), qv, a.stats()); feat.append((time.perf_counter() - t3) * 1000)
    print(f"\n{name}: {len(qs)} questions x {repeat}, {len(r.bm25_index())} chunks; question embeddings cached in both paths")
    print(f"  (embedding one question, not part of either figure: p50 {pct(embed_ms, 50):.1f} ms)")
    print(f"  Retriever.retrieve        p50 {pct(base, 50):7.2f} ms   p95 {pct(base, 95):7.2f} ms")
    print(f"  Answerability.assess      p50 {pct(full, 50):7.2f} ms   p95 {pct(full, 95):7.2f} ms")
    print(f"  added by scoring          p50 {pct(full, 50) - pct(base, 50):+7.2f} ms (difference of p50s); median paired difference {statistics.median(diff):+.2f} ms")
    print(f"  features() alone          p50 {pct(feat, 50):7.2f} ms   p95 {pct(feat, 95):7.2f} ms")
    print(f"  CPU time (this process; what a busy machine's waiting does not inflate):")
    print(f"    retrieve p50 {pct(cbase, 50):.2f} ms, assess p50 {pct(cfull, 50):.2f} ms, added {pct(cfull, 50) - pct(cbase, 50):+.2f} ms "
          f"(median paired {statistics.median(cdiff):+.2f} ms)")

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("--repeat", type=int, default=3); args = ap.parse_args()
    measure("fixture corpus (golden set questions)", *fixture(), args.repeat)
    for name in ("pubmedqa", "scifact"):
        got = cached(name)
        if got: measure(f"{name} benchmark corpus (first 100 questions)", *got, args.repeat)
        else: print(f"\n{name}: not built (python bench/corpora.py {name})")
