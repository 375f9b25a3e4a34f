"""How many labels the labelling panel needs to pin down the refusal gate's calibration on PubMedQA dev, in the panel's
order (the pending item whose scores lie nearest the current threshold first) against items labelled in random order,
with the same estimate and the same stopping rule (`keel.evals.agreement`: the threshold's 95% bootstrap interval within
CALIBRATION_WIDTH and at least keel calibrate's MIN_ITEMS items labelled).

Each PubMedQA dev question is an item with two calibration rows, asked through the production retriever of
bench/corpora.py's data directory with its abstract visible (label 1) and masked (label 0), scored by the shipped
calibration (the answerability features are computed once and cached in bench/.cache/label-efficiency-rows.json).
Each seed draws a pool of 400 of the 500 items; both orders label that pool until the rule says enough (checked every
5 labels), and the threshold reached is applied to the items left unlabelled: their false-answer and false-refusal
rates, beside the rates of the threshold that every label of the pool would choose. Writes
bench/results/label_efficiency.json. PubMedQA dev is read from ../shared/data/pubmedqa-dev/ (its SOURCE.md); without it
the script says so and exits 0. Usage:
    .venv/bin/python bench/label_efficiency.py [--seeds 5] [--pool 400]
"""
import argparse, json, random, sys, time
from pathlib import Path
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora

CACHE, OUT = corpora.CACHE/"label-efficiency-rows.json", HERE/"results"/"label_efficiency.json"

def scored_rows() -> list[dict]:
    "Two rows per PubMedQA dev question (abstract visible: 1, masked: 0) with the shipped calibration's score."
    if CACHE.is_file(): return json.loads(CACHE.read_text())
    from answerability_features import rows_for
    from keel.retrieval.answerability import DEFAULT_CALIBRATION
    t = time.time()
    rows = [dict(item=r["qid"], label=r["label"], score=DEFAULT_CALIBRATION.probability(r)) for r in rows_for("pubmedqa")]
    print(f"scored {len(rows)} rows in {time.time() - t:.0f} s", file=sys.stderr)
    CACHE.parent.mkdir(parents=True, exist_ok=True); CACHE.write_text(json.dumps(rows))
    return rows

def simulate(rows:list[dict], order:str, seed:int, target:float, width:float, step:int=5) -> dict:
    "Label items of the pool in `order` (`panel` or `random`) until enough; the labels used and the threshold reached."
    from keel.evals.agreement import calibration_estimate, calibration_order, calibration_verdict
    items = list(dict.fromkeys(r["item"] for r in rows))
    shuffled = items[:]; random.Random(seed).shuffle(shuffled)
    done, est = set(), None
    while len(done) < len(items):
        pool = [dict(r, label=r["label"] if r["item"] in done else None) for r in rows]
        if order == "random": nxt = next(i for i in shuffled if i not in done)
        else:
            thr = calibration_estimate(pool, target, n=0)["threshold"] if done else None
            nxt = calibration_order(pool, thr if thr is not None else 0.62, [i for i in shuffled if i not in done])[0]
        done.add(nxt)
        if len(done) >= 20 and len(done) % step == 0:
            pool = [dict(r, label=r["label"] if r["item"] in done else None) for r in rows]
            est = calibration_estimate(pool, target, seed=seed)
            if calibration_verdict(est, len(done), width)[0]: break
    return dict(labels=len(done), threshold=est["threshold"], lo=est["lo"], hi=est["hi"], labelled=sorted(done))

def rates(rows:list[dict], threshold:float) -> dict:
    "False answers (label 0 at or above) and false refusals (label 1 below) among `rows`."
    neg, pos = [r for r in rows if r["label"] == 0], [r for r in rows if r["label"] == 1]
    return dict(false_answer=sum(r["score"] >= threshold for r in neg) / max(len(neg), 1),
                false_refusal=sum(r["score"] < threshold for r in pos) / max(len(pos), 1), items=len(pos))

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5); ap.add_argument("--pool", type=int, default=400)
    a = ap.parse_args(argv)
    if not (corpora.PUBMEDQA/"pqal_dev.json").is_file():
        print(f"PubMedQA dev is not at {corpora.PUBMEDQA} (see its SOURCE.md): nothing measured"); return 0
    from keel.evals.agreement import CALIBRATION_WIDTH
    from keel.retrieval.answerability import operating_point
    from keel.stats import mean
    rows, target, t0 = scored_rows(), 0.10, time.time()
    items = sorted({r["item"] for r in rows})
    out = dict(target_false_answer=target, width=CALIBRATION_WIDTH, pool=a.pool, items=len(items), runs=[])
    for seed in range(a.seeds):
        pool_items = set(random.Random(1000 + seed).sample(items, a.pool))
        pool = [r for r in rows if r["item"] in pool_items]
        best = operating_point([r["score"] for r in pool], [r["label"] for r in pool], target)["threshold"]
        for order in ("panel", "random"):
            t = time.time()
            s = simulate(pool, order, seed, target, CALIBRATION_WIDTH)
            done = set(s.pop("labelled"))
            rest = [r for r in pool if r["item"] not in done]
            run = dict(seed=seed, order=order, **s, unlabelled=rates(rest, s["threshold"]),
                       all_labels_threshold=best, unlabelled_at_all_labels=rates(rest, best), seconds=time.time() - t)
            out["runs"].append(run)
            print(f"seed {seed} {order:>6}: {run['labels']:>3} labels, threshold {run['threshold']:.3f} "
                  f"[{run['lo']:.3f}, {run['hi']:.3f}]; unlabelled items: false answers "
                  f"{run['unlabelled']['false_answer']:.1%}, false refusals {run['unlabelled']['false_refusal']:.1%} "
                  f"(all labels: threshold {best:.3f}, {run['unlabelled_at_all_labels']['false_answer']:.1%} / "
                  f"{run['unlabelled_at_all_labels']['false_refusal']:.1%}); {run['seconds']:.0f} s", flush=True)
    out["summary"] = {o: dict(labels_per_seed=[r["labels"] for r in out["runs"] if r["order"] == o],
                              mean_labels=mean([r["labels"] for r in out["runs"] if r["order"] == o]),
                              mean_false_answer=mean([r["unlabelled"]["false_answer"] for r in out["runs"] if r["order"] == o]),
                              mean_false_refusal=mean([r["unlabelled"]["false_refusal"] for r in out["runs"] if r["order"] == o]))
                      for o in ("panel", "random")}
    for o, s in out["summary"].items():
        print(f"{o:>6}: labels per seed {s['labels_per_seed']}, mean {s['mean_labels']:.1f}; on unlabelled items false "
              f"answers {s['mean_false_answer']:.1%}, false refusals {s['mean_false_refusal']:.1%}")
    out["seconds"] = round(time.time() - t0)
    OUT.parent.mkdir(exist_ok=True); OUT.write_text(json.dumps(out, indent=1))
    print(f"wrote {OUT.relative_to(HERE.parent)}")
    return 0

if __name__ == "__main__": sys.exit(main())
