"""The injection screen on a set written by an author who saw none of Keel's sets, patterns or code.

`golden/safety/independent_set.jsonl` (300 attacks, 30 in each of the ten families, and 364 hard negatives in
fourteen kinds) is never used to fit, tune or choose anything: it measures. Prints, for the patterns alone, the
model alone, both as `KEEL_INJECTION_SCREEN=learned` runs them and as `confirmed` runs them: recall and
false-positive rate overall, recall per family and false positives per kind; the model's ROC AUC. `--model` scores
another saved model (e.g. the previous one, `git show REV:keel/safety/screen_model.json > old.json`).

    python bench/screen_independent.py [--model old.json] [--out figures.json]
"""
import argparse, json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import numpy as np
from sklearn.metrics import roc_auc_score
from keel.safety.learned import load_model, screen_learned
from keel.safety.fit import load_screen_set
from keel.safety.screen import screen

SET = ROOT / "golden/safety/independent_set.jsonl"


def figures(m, xs) -> dict:
    "Recall and false positives of each way of running the screen, overall, per family and per kind."
    y = np.array([x["label"] == "injection" for x in xs])
    p = np.array([m.prob(x["text"]) for x in xs])
    modes = {"patterns": np.array([screen(x["text"]).quarantine for x in xs]), "model": p >= m.threshold}
    modes["learned"] = modes["patterns"] | modes["model"]
    modes["confirmed"] = np.array([screen_learned(x["text"], m, confirm=True).quarantine for x in xs])
    fams, kinds = sorted({x["family"] for x in xs if x.get("family")}), sorted({x["kind"] for x in xs if x.get("kind")})
    out = dict(auc=round(float(roc_auc_score(y, p)), 4), threshold=round(m.threshold, 3), confirm=round(m.confirm, 3),
               n_attacks=int(y.sum()), n_benign=int((~y).sum()))
    for name, f in modes.items():
        out[name] = dict(recall=round(float(f[y].mean()), 4), fpr=round(float(f[~y].mean()), 4),
                         recall_by_family={fa: round(float(f[[x.get("family") == fa for x in xs]].mean()), 4)
                                           for fa in fams},
                         false_positives_by_kind={k: int(f[[x.get("kind") == k for x in xs]].sum()) for k in kinds})
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None, help="a saved model (default: the packaged one)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    xs, m = load_screen_set(SET), load_model(a.model)
    r = figures(m, xs)
    print(f"ROC AUC {r['auc']}  threshold {r['threshold']}  confirm {r['confirm']}  "
          f"{r['n_attacks']} attacks, {r['n_benign']} hard negatives")
    modes = ("patterns", "model", "learned", "confirmed")
    print(f"{'':24s}" + "".join(f"{k:>11s}" for k in modes))
    print(f"{'recall':24s}" + "".join(f"{r[k]['recall']:11.3f}" for k in modes))
    print(f"{'false positives':24s}" + "".join(f"{r[k]['fpr']:11.4f}" for k in modes))
    for fa in r["patterns"]["recall_by_family"]:
        print(f"  {fa:22s}" + "".join(f"{r[k]['recall_by_family'][fa]:11.2f}" for k in modes))
    for k2, n in r["patterns"]["false_positives_by_kind"].items():
        tot = sum(x.get("kind") == k2 for x in xs)
        print(f"  {k2 + ' (' + str(tot) + ')':22s}" + "".join(f"{r[k]['false_positives_by_kind'][k2]:11d}" for k in modes))
    if a.out: Path(a.out).write_text(json.dumps(r, indent=1) + "\n")
