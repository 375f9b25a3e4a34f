"""Leave-one-family-out for the learned injection screen, with thresholds chosen inside each fold.

For each attack family: fit `fit_screen` (its own cross-validated `threshold` and `confirm`, from the
training families only) on the train split without that family, then score every passage of the
left-out family (both splits) and the held-out hard negatives with the patterns, the model alone,
both as `KEEL_INJECTION_SCREEN=learned` runs them (either quarantines) and as `confirmed` runs them.
Prints one row per family and writes the table as JSON.

    python bench/screen_lofo.py [--out lofo.json] [--families citation,encoded] [--class-weight 0] [--packaged]

`--class-weight 0` fits without the word-class features. `--packaged` fits each fold as the packaged model is fitted
(bench/screen_manual_fit.py): the manual chunks of the Python and SQLite manuals' fit pages among the negatives,
benign passages on every view, and the threshold within both budgets (2% of the labelled negatives, 1% of the
calibration pages); it needs `apt-get install python3-doc sqlite3-doc` and writes bench/results/screen-lofo-packaged.json
and .md unless `--out` says otherwise. Without it, each fold is fitted on the labelled train split alone.
"""

import argparse, json, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from keel.safety.learned import screen_learned
from keel.safety.fit import load_screen_set, fit_screen
from keel.safety.screen import screen


def rates(flags, items):
    inj = [f for f, i in zip(flags, items) if i["label"] == "injection"]
    ben = [f for f, i in zip(flags, items) if i["label"] == "benign"]
    return round(sum(inj) / len(inj), 4), round(sum(ben) / len(ben), 4)


def fold(items, fam, class_weight=None, extra=(), **fit):
    "One left-out family: `extra` benign passages join the training split, `fit` goes to `fit_screen`."
    train = [i for i in items if i["split"] == "train" and i.get("family") != fam] + list(extra)
    test = [i for i in items if i.get("family") == fam] + [
        i for i in items if i["label"] == "benign" and i["split"] == "held_out"
    ]
    t0 = time.process_time()
    m = fit_screen(train, class_weight=class_weight, **fit)
    pats = [screen(i["text"]).quarantine for i in test]
    learned = [m.prob(i["text"]) >= m.threshold for i in test]
    both = [p or l for p, l in zip(pats, learned)]
    conf = [screen_learned(i["text"], m, confirm=True).quarantine for i in test]
    (rp, fp), (rl, fl), (rb, fb), (rc, fc) = (
        rates(pats, test),
        rates(learned, test),
        rates(both, test),
        rates(conf, test),
    )
    return dict(
        family=fam,
        n=sum(i["label"] == "injection" for i in test),
        threshold=round(m.threshold, 3),
        confirm=round(m.confirm, 3),
        recall_patterns=rp,
        fpr_patterns=fp,
        recall_learned=rl,
        fpr_learned=fl,
        recall_both=rb,
        fpr_both=fb,
        recall_confirmed=rc,
        fpr_confirmed=fc,
        oof_recall=m.meta.get("oof_recall"),
        oof_fpr=m.meta.get("oof_fpr"),
        cpu_s=round(time.process_time() - t0, 1),
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default=str(ROOT / "golden/safety/screen_set.jsonl"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--families", default=None, help="comma-separated; default every family")
    ap.add_argument("--class-weight", type=float, default=None, help="word-class features' weight (default: Keel's)")
    ap.add_argument("--packaged", action="store_true", help="fit each fold as the packaged model is fitted")
    a = ap.parse_args()
    items = load_screen_set(a.set)
    fams = a.families.split(",") if a.families else sorted({i["family"] for i in items if i["label"] == "injection"})
    extra, fit = (), {}
    if a.packaged:
        sys.path.insert(0, str(ROOT / "bench"))
        from screen_manual_fit import packaged_recipe, without_digest, INFORMED
        neg, fit = packaged_recipe(INFORMED)
        extra = without_digest(neg)
        a.out = a.out or str(ROOT / "bench" / "results" / "screen-lofo-packaged.json")
    rows = []
    for fam in fams:
        rows.append(fold(items, fam, a.class_weight, extra, **fit))
        print(json.dumps(rows[-1]), flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1) + "\n")
        keys = ["recall_patterns", "recall_learned", "recall_both", "fpr_learned", "fpr_both", "threshold"]
        md = ["# Leave one family out" + (": the packaged recipe" if a.packaged else ""), "",
              "Each row: a model fitted without the family, its threshold chosen inside the training families; "
              "recall on all of the family's passages, FPR on the labelled held-out hard negatives.", "",
              "| family | attacks | " + " | ".join(keys) + " |", "|---" * (len(keys) + 2) + "|"]
        md += [f"| {r['family']} | {r['n']} | " + " | ".join(f"{r[k]:.3f}" for k in keys) + " |" for r in rows]
        md += [f"| mean | {sum(r['n'] for r in rows)} | " + " | ".join(
            f"{sum(r[k] for r in rows) / len(rows):.3f}" for k in keys) + " |"]
        Path(a.out).with_suffix(".md").write_text("\n".join(md) + "\n")
