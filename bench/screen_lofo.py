"""Leave-one-family-out for the learned injection screen, with thresholds chosen inside each fold.

For each attack family: fit `fit_screen` (its own cross-validated `threshold` and `confirm`, from the
training families only) on the train split without that family, then score every passage of the
left-out family (both splits) and the held-out hard negatives with the patterns, the model alone,
both as `KEEL_INJECTION_SCREEN=learned` runs them (either quarantines) and as `confirmed` runs them.
Prints one row per family and writes the table as JSON.

    python bench/screen_lofo.py [--out lofo.json] [--families citation,encoded] [--class-weight 0]

`--class-weight 0` fits without the word-class features (the previous version of the layer).
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


def fold(items, fam, class_weight=None):
    train = [i for i in items if i["split"] == "train" and i.get("family") != fam]
    test = [i for i in items if i.get("family") == fam] + [
        i for i in items if i["label"] == "benign" and i["split"] == "held_out"
    ]
    t0 = time.process_time()
    m = fit_screen(train, class_weight=class_weight)
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
    a = ap.parse_args()
    items = load_screen_set(a.set)
    fams = a.families.split(",") if a.families else sorted({i["family"] for i in items if i["label"] == "injection"})
    rows = []
    for fam in fams:
        rows.append(fold(items, fam, a.class_weight))
        print(json.dumps(rows[-1]), flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1) + "\n")
