"""The evidence band (answer / evidence / refusal) measured through the answer engine on PubMedQA dev and SciFact train.

Each corpus is ingested (one passage per abstract, embeddings from bench/.cache/embeddings, so nothing is embedded
again once `bench/corpora.py` has run) into its own data directory, bench/.cache/evidence-<corpus>-data, as a
deployment with three kinds of question:

- answerable: the question's cited abstracts are in the corpus, visible to the asker (tags `benchmark`);
- off_corpus: its cited abstracts were never ingested (the documents do not say);
- restricted: its cited abstracts are ingested under the tag `restricted`, which the asker does not carry.

Questions that share a cited abstract are kept together (one component). The *tune* quarter is every component with a
question whose first cited abstract is in the tune quarter of nbs/13d_retrieval_answerability.ipynb (SHA-256 of the
abstract's id is 0 modulo 4: the shipped evidence threshold was chosen on it); everything reported is held out from it.
Off-corpus and restricted questions are drawn from the held-out components (seeded); the tune quarter's answerable
questions are the golden set `keel calibrate` calibrates on (sources visible and masked).

The held-out questions are then asked through `keel eval run`'s own code (`run_eval`, extractive mode, no judge),
twice: with the shipped default calibration and after `keel calibrate` on the tune quarter. Each run is made with the
evidence band on; the two-outcome gate (`KEEL_EVIDENCE=off`) is the same run with every evidence response a refusal
(answers do not depend on the band, and a refusal has no content), and `--binary-check N` asks the first N items again
with the band off to confirm it. For the plot of the three rates against the thresholds, every item also records what
an extractive answer and an evidence response over its passages would have cited, so any pair of thresholds can be
read off without asking again. Writes bench/results/evidence_<corpus>.json, which nbs/55b_evals_calibrate.ipynb
renders.

Usage:
    .venv/bin/python bench/bench_evidence.py [pubmedqa scifact] [--off N] [--restricted N] [--answerable N]
        [--binary-check N]
"""
import argparse, hashlib, json, random, shutil, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora
from answerability_features import questions

RESULTS = HERE/"results"
RESTRICTED = ["restricted"]

def tune_group(doc_id:str) -> bool:
    "The tune quarter of nbs/13d_retrieval_answerability.ipynb (`tune_split`): SHA-256 of the document id, 0 modulo 4."
    return int(hashlib.sha256(str(doc_id).encode()).hexdigest(), 16) % 4 == 0

def components(qs:list[dict]) -> list[list[dict]]:
    "Questions grouped so that two questions citing the same document are in the same group (union-find)."
    parent = {}
    def find(x):
        while parent.setdefault(x, x) != x: parent[x] = parent[parent[x]]; x = parent[x]
        return x
    for q in qs:
        for d in q["sources"][1:]: parent[find(d)] = find(q["sources"][0])
    groups = {}
    for q in qs: groups.setdefault(find(q["sources"][0]), []).append(q)
    return [groups[k] for k in sorted(groups)]

def assign(qs:list[dict], n_off:int, n_res:int, n_ans:int|None, seed:int=0) -> list[dict]:
    "Each question with its split (tune/heldout) and category; held-out categories drawn at random from whole groups."
    comps = components(qs)
    tune = [c for c in comps if any(tune_group(q["sources"][0]) for q in c)]
    held = [c for c in comps if not any(tune_group(q["sources"][0]) for q in c)]
    random.Random(seed).shuffle(held)
    out, want = [], {"off_corpus": n_off, "restricted": n_res, "answerable": n_ans}
    got = dict.fromkeys(want, 0)
    for c in held:
        cat = next((k for k in ("off_corpus", "restricted") if got[k] < want[k]), "answerable")
        if cat == "answerable" and n_ans is not None and got[cat] >= n_ans: cat = "unused"
        for q in c: out.append({**q, "split": "heldout", "refusal_category": cat})
        got[cat] = got.get(cat, 0) + len(c)
    return out + [{**q, "split": "tune", "refusal_category": "answerable"} for c in tune for q in c]

def golden_items(folder:Path, qs:list[dict]) -> list[dict]:
    "Golden items (the YAML form) for questions: the asker's tags, the cited documents as sources, refusals expected."
    out = []
    for q in qs:
        cat = q["refusal_category"]
        item = dict(id=q["id"], question=q["question"], user_tags=corpora.TAGS, split=q["split"],
                    expected_sources=[f"{folder.name}/{d}" for d in q["sources"]],
                    category="restricted" if cat == "restricted" else "off_corpus" if cat == "off_corpus" else "article")
        if cat == "answerable": item["expected_answer"] = "What the cited abstract says."
        else: item.update(expect_refusal=True, expected_answer=f"Must not answer: the abstract is {cat.replace('_', '-')}.")
        if cat == "off_corpus": item["expected_sources"] = []
        out.append(item)
    return out

def write_golden(path:Path, items:list[dict]) -> Path:
    import yaml
    path.write_text(yaml.safe_dump({"version": 1, "items": items}, sort_keys=False, allow_unicode=True))
    return path

def build(name:str, plan:list[dict], fresh:bool=False):
    "The benchmark's data directory: every abstract but the off-corpus ones, the restricted ones under their own tag."
    from keel.config import load_settings
    from keel.factory import build_context, make_embeddings
    from keel.evals.retrieval import CachedEmbeddings
    folder, split = corpora.corpus(name)
    data = corpora.CACHE/f"evidence-{name}-data"
    off = {f"{folder.name}/{d}" for q in plan if q["refusal_category"] == "off_corpus" for d in q["sources"]}
    res = {f"{folder.name}/{d}" for q in plan if q["refusal_category"] == "restricted" for d in q["sources"]}
    key = hashlib.sha256(json.dumps([sorted(off), sorted(res)]).encode()).hexdigest()
    if fresh or not (data/"plan.sha256").exists() or (data/"plan.sha256").read_text() != key:
        shutil.rmtree(data, ignore_errors=True)
    s = load_settings(dotenv=None, data_dir=data, answer_mode="extractive")
    ctx = build_context(s)
    ctx.__dict__["embeddings"] = CachedEmbeddings(make_embeddings(s), corpora.CACHE/"embeddings"/f"{name}-0")
    if not (data/"plan.sha256").exists():
        docs = [d for d in corpora.beir_documents(folder) if d.source not in off]
        t = time.perf_counter()
        ctx.ingestor.ingest_documents([d for d in docs if d.source not in res], corpora.TAGS, chunk=False, progress=True)
        ctx.ingestor.ingest_documents([d for d in docs if d.source in res], RESTRICTED, chunk=False, progress=True)
        ctx.embeddings.save()
        print(f"{name}: {len(docs)} abstracts ingested ({len(off)} left out, {len(res)} restricted), "
              f"{ctx.embeddings.computed} embedded, {time.perf_counter() - t:.0f} s", file=sys.stderr)
        (data/"plan.sha256").write_text(key)
    return ctx, folder

class Recording:
    "The context's answer engine, noting for each answer what an answer and an evidence reply over its passages cite."
    def __init__(self, engine, folder:Path, sources:dict):
        self.engine, self.folder, self.sources, self.seen = engine, folder, sources, {}
    def __getattr__(self, k): return getattr(self.engine, k)
    def answer(self, question, user, **kw):
        from keel.answer.engine import extract, evidence_passages
        a = self.engine.answer(question, user, **kw)
        want, hits = self.sources.get(question, set()), a.retrieved
        def cites(ns): return any(hits[n - 1].source in want for n in ns)
        ans = extract(question, hits)[1]
        ev = [n for n, _ in evidence_passages(question, hits, user.tags)]
        self.seen[question] = dict(ans_ok=cites(ans) if ans else None, ev_ok=cites(ev) if ev else None,
                                   top3=any(h.source in want for h in hits[:3]), found=any(h.source in want for h in hits))
        return a

def run(ctx, golden:Path, report_dir:Path, rec:Recording) -> dict:
    "One `run_eval` over the held-out golden set (extractive, no judge), its report written to `report_dir`."
    from keel.evals.run import run_eval
    ctx.__dict__["_answer_engine"] = rec
    t = time.perf_counter()
    res = run_eval(ctx, golden, report_dir, judge=False, progress=True, baseline_path=report_dir/"no-baseline.json")
    return dict(result=res, seconds=time.perf_counter() - t)

def item_records(res, rec:Recording) -> list[dict]:
    "Per held-out item: category, score, kind, whether its reply cited the source, and the counterfactual citations."
    return [dict(id=r["id"], category=r["refusal_category"], score=r["answerability"], kind=r["kind"],
                 helpful=r.get("helpful"), evidence_hit=r.get("evidence_hit"), leaks=r["leaks"],
                 **rec.seen[r["question"]]) for r in res.items]

def as_binary(items:list[dict]) -> list[dict]:
    "The same items under the two-outcome gate: every evidence response a refusal."
    return [{**r, "kind": "refusal" if r["kind"] == "evidence" else r["kind"],
             "helpful": 0.0 if r["kind"] == "evidence" and r["category"] == "answerable" else r["helpful"],
             "evidence_hit": None} for r in items]

def table(items:list[dict]) -> dict:
    "Per category: items, shares answered / evidence / refused, helpful rate, evidence hit, leaks."
    out = {}
    for c in ("answerable", "off_corpus", "restricted"):
        rs = [r for r in items if r["category"] == c]
        if not rs: continue
        n = len(rs)
        share = lambda k: sum(r["kind"] == k for r in rs) / n
        ev = [r["evidence_hit"] for r in rs if r["evidence_hit"] is not None]
        out[c] = dict(n=n, answered=share("answer"), evidence=share("evidence"), refused=share("refusal"),
                      helpful_rate=sum(r["helpful"] or 0 for r in rs) / n if c == "answerable" else None,
                      answered_correct=sum(r["kind"] == "answer" and bool(r["ans_ok"]) for r in rs) / n
                      if c == "answerable" else None,
                      evidence_hit=sum(ev) / len(ev) if ev else None, leaks=sum(r["leaks"] for r in rs))
    return out

def thresholds_of(ctx) -> dict:
    cal, _ = ctx.answerability.calibration()
    from keel.retrieval.answerability import gate_thresholds
    th, ev = gate_thresholds(cal, ctx.settings)
    return dict(source=cal.source, threshold=th, evidence_threshold=ev, describe=cal.describe())

def binary_check(ctx, items:list[dict], plan:list[dict], n:int) -> dict:
    "The first `n` held-out items asked again with the evidence band off: the kinds must be the derived ones."
    from keel.answer.types import User
    eng = ctx.answer_engine.engine if isinstance(ctx.answer_engine, Recording) else ctx.answer_engine
    q = {p["id"]: p["question"] for p in plan}
    eng.settings = eng.settings.replace(evidence=False)
    try:
        got = [eng.answer(q[r["id"]], User("eval", corpora.TAGS)).kind for r in items[:n]]
    finally: eng.settings = eng.settings.replace(evidence=True)
    want = [r["kind"] for r in as_binary(items[:n])]
    return dict(n=len(got), agree=sum(a == b for a, b in zip(got, want)))

def bench(name:str, n_off:int, n_res:int, n_ans:int|None, check:int) -> dict:
    from keel.evals.calibrate import calibrate, report_lines
    from keel.retrieval.answerability import calibration_path
    folder, split = corpora.corpus(name)
    plan = assign(questions(folder, split), n_off, n_res, n_ans)
    ctx, folder = build(name, plan)
    calibration_path(ctx.settings.data_dir).unlink(missing_ok=True)
    work = corpora.CACHE/f"evidence-{name}"
    work.mkdir(exist_ok=True)
    held = [q for q in plan if q["split"] == "heldout" and q["refusal_category"] != "unused"]
    tune = [q for q in plan if q["split"] == "tune"]
    gh = write_golden(work/"heldout.yaml", golden_items(folder, held))
    gt = write_golden(work/"tune.yaml", golden_items(folder, tune))
    sources = {q["question"]: {f"{folder.name}/{d}" for d in q["sources"]} for q in plan}
    out = dict(corpus=name, questions=len(plan), tune_answerable=len(tune),
               heldout={c: sum(q["refusal_category"] == c for q in held) for c in ("answerable", "off_corpus",
                                                                                   "restricted")},
               unused=sum(q["refusal_category"] == "unused" for q in plan), runs={})
    for label in ("default", "calibrated"):
        if label == "calibrated":
            t = time.perf_counter()
            c = calibrate(ctx, gt)
            root = str(corpora.CACHE.parent.parent) + "/"                    # paths in the results are repo-relative
            lines = [line.replace(root, "") for line in report_lines(c)[:-1]]
            out["calibrate"] = dict(seconds=round(time.perf_counter() - t, 1), lines=lines,
                                    items=c["calibration"].measured["n_items"])
            print("\n".join(report_lines(c)), file=sys.stderr)
        eng = ctx.answer_engine
        rec = Recording(eng.engine if isinstance(eng, Recording) else eng, folder, sources)
        r = run(ctx, gh, work/f"reports-{label}", rec)
        items = item_records(r["result"], rec)
        out["runs"][label] = dict(thresholds=thresholds_of(ctx), seconds=round(r["seconds"], 1),
                                  report=str(r["result"].report_json_path.relative_to(HERE.parent)),
                                  evidence=table(items), binary=table(as_binary(items)), items=items)
        if check and label == "default": out["binary_check"] = binary_check(ctx, items, plan, check)
        print(json.dumps({k: out["runs"][label][k] for k in ("thresholds", "evidence", "binary")}, indent=1),
              file=sys.stderr)
    ctx.embeddings.save()                          # the questions' embeddings, for the next run
    ctx.close()
    return out

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("corpora", nargs="*", default=["pubmedqa", "scifact"])
    ap.add_argument("--off", type=int, default=50, help="held-out off-corpus questions (whole groups, so about)")
    ap.add_argument("--restricted", type=int, default=50, help="held-out restricted questions (about)")
    ap.add_argument("--answerable", type=int, help="held-out answerable questions at most (default: all the rest)")
    ap.add_argument("--binary-check", type=int, default=40, help="items asked again with the evidence band off")
    a = ap.parse_args()
    RESULTS.mkdir(exist_ok=True)
    for name in a.corpora:
        res = bench(name, a.off, a.restricted, a.answerable, a.binary_check)
        path = RESULTS/f"evidence_{name}.json"
        path.write_text(json.dumps(res, indent=1) + "\n")
        print(f"wrote {path}", file=sys.stderr)
