"""The learned injection screen with and without its word-class features, on data neither was fitted on.

Fits both on the train split of the labelled set (each with its own cross-validated thresholds), then scores the
held-out split and the other author's set (`golden/safety/injection_set.yaml`): recall and false-positive rate at
each model's own threshold, for the model alone and with the patterns (`KEEL_INJECTION_SCREEN=learned`); recall
when the threshold lets through exactly k benign passages (equal false positives for both); ROC AUC.

    python bench/screen_compare.py [--weights 0,2]
"""
import argparse, json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import numpy as np
from sklearn.metrics import roc_auc_score
from keel.safety.fit import load_screen_set, fit_screen
from keel.safety.screen import screen, load_injection_set


def figures(m, xs, ks=(0, 3, 7, 10)):
    p = np.array([m.prob(i["text"]) for i in xs])
    y = np.array([i["label"] == "injection" for i in xs])
    pat = np.array([screen(i["text"]).quarantine for i in xs])
    neg = np.sort(p[~y])[::-1]
    at_k = {k: round(float((p[y] > neg[k]).mean()), 3) for k in ks if k < len(neg)}
    alone, both = p >= m.threshold, (p >= m.threshold) | pat
    return dict(recall_alone=round(float(alone[y].mean()), 3), fpr_alone=round(float(alone[~y].mean()), 4),
                recall_learned_rule=round(float(both[y].mean()), 3), fpr_learned_rule=round(float(both[~y].mean()), 4),
                recall_at_k_false_positives=at_k, auc=round(float(roc_auc_score(y, p)), 4),
                n_attacks=int(y.sum()), n_benign=int((~y).sum()))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", default="0,2", help="comma-separated class weights to compare")
    a = ap.parse_args()
    items = load_screen_set(ROOT / "golden/safety/screen_set.jsonl")
    sets = {"held_out": [i for i in items if i["split"] == "held_out"],
            "other author": load_injection_set(ROOT / "golden/safety/injection_set.yaml")}
    for cw in map(float, a.weights.split(",")):
        m = fit_screen([i for i in items if i["split"] == "train"], class_weight=cw)
        for name, xs in sets.items():
            print(json.dumps(dict(class_weight=cw, threshold=round(m.threshold, 3), set=name, **figures(m, xs))),
                  flush=True)
