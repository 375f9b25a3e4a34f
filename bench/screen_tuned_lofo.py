"""Leave-one-family-out for the tuned screen, in the part that fits on two cores: a MiniLM head, not a fine-tune.

Fine-tuning the encoder once per left-out family is ten trainings of about 25 minutes each on two cores, so this
measures what can be measured honestly without them: for each attack family, the learned layer is refitted without
it (`fit_screen`, its own cross-validated threshold, as `screen_lofo.py` does), and the MiniLM side is a logistic
head on the packaged (not fine-tuned) MiniLM's sentence embeddings of each passage's views, fitted without the family
too. The two thresholds are set together as the training script sets them: on a calibration part of the fold's
training passages (one template in five) for at most 2% of its hard negatives. Tested on the left-out family's
attacks (both splits) and the held-out hard negatives. The fine-tuned encoder itself saw every family, so it cannot
be measured this way; this is a lower bound on what its leave-one-family-out recall would be only in so far as
fine-tuning helps, and is reported as the head-only proxy it is.

    python bench/screen_tuned_lofo.py [--out lofo.json] [--families citation,encoded]
"""
import argparse, json, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "tools"))
import numpy as np
from sklearn.linear_model import LogisticRegression
from keel.config import load_settings
from keel.factory import make_embeddings
from keel.safety.learned import screen_learned
from keel.safety.fit import load_screen_set, fit_screen, fit_view_model, score_items
from keel.safety.tuned import model_views, TunedScreen
from train_screen_minilm import is_calibration, joint_thresholds


MODES = ("default (learned)", "learned model alone", "head alone", "combination (head proxy)")
FINE = ("classifier alone (fine-tuned)", "combination (fine-tuned)")


def embed_views(items) -> list[np.ndarray]:
    "Each passage's views embedded by the packaged MiniLM (one row per view)."
    emb = make_embeddings(load_settings(dotenv=None))
    vs = [[v for _, v in model_views(i["text"])] for i in items]
    flat = [v for x in vs for v in x]
    E, out, k = np.asarray(emb.embed(flat)), [], 0
    for x in vs: out.append(E[k:k + len(x)]); k += len(x)
    return out


def head_scores(head, E, idx) -> np.ndarray:
    "The head's highest score over each passage's views."
    return np.array([head.decision_function(E[k]).max() for k in idx])


def fine_tuned(folder: Path, m, p, texts) -> dict:
    "The fold's fine-tuned classifier (trained without the family) alone and OR-ed with the fold's learned model."
    ts = TunedScreen(folder)
    z = np.array([ts.classifier_view(t)[0] for t in texts])
    return {"classifier alone (fine-tuned)": z >= ts.card["threshold"],
            "combination (fine-tuned)": (p >= max(m.threshold, ts.card["learned_threshold"]))
                                        | (z >= ts.card["threshold"])}


def fold(items, E, fam, tuned_dir=None) -> dict:
    t0 = time.process_time()
    train = [k for k, i in enumerate(items) if i["split"] == "train" and i.get("family") != fam]
    test = [k for k, i in enumerate(items)
            if i.get("family") == fam or (i["label"] == "benign" and i["split"] == "held_out")]
    fit = [k for k in train if not is_calibration(items[k])]; cal = [k for k in train if is_calibration(items[k])]
    y = np.array([i["label"] == "injection" for i in items], dtype=int)
    head = LogisticRegression(C=1.0, max_iter=3000, class_weight="balanced").fit(
        np.vstack([E[k][:1] for k in fit]), y[fit])                          # main views, as the layer is fitted
    m = fit_screen([items[k] for k in train])
    lr_fit, vocab = fit_view_model([items[k] for k in fit], y[fit], 4.0, 2)
    th = joint_thresholds(score_items(lr_fit, vocab, [items[k] for k in cal]), head_scores(head, E, cal), y[cal],
                          m.threshold, 0.02)
    p = np.array([m.prob(items[k]["text"]) for k in test]); z = head_scores(head, E, test)
    default = np.array([screen_learned(items[k]["text"], m).quarantine for k in test])
    yt = y[test] == 1
    modes = {"default (learned)": default, "learned model alone": p >= m.threshold,
             "head alone": z >= joint_thresholds(np.zeros(len(cal)), head_scores(head, E, cal), y[cal], 1.0,
                                                 0.02)["threshold"],
             "combination (head proxy)": (p >= th["learned_threshold"]) | (z >= th["threshold"])}
    if tuned_dir and (Path(tuned_dir) / fam / "card.json").exists():
        modes.update(fine_tuned(Path(tuned_dir) / fam, m, p, [items[k]["text"] for k in test]))
    row = dict(family=fam, n=int(yt.sum()), thresholds=th, cpu_s=round(time.process_time() - t0, 1))
    for k, f in modes.items(): row[k] = dict(recall=round(float(f[yt].mean()), 4), fpr=round(float(f[~yt].mean()), 4))
    return row


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--families", default=None)
    ap.add_argument("--fine-tuned", default=None,
                    help="a folder of per-family models (DIR/FAMILY, `train_screen_minilm.py --leave-out FAMILY`)")
    a = ap.parse_args()
    items = load_screen_set(ROOT / "golden/safety/screen_set.jsonl")
    t0 = time.time()
    E = embed_views(items)
    print(f"embedded {sum(len(e) for e in E)} views of {len(items)} passages in {time.time() - t0:.0f} s", flush=True)
    fams = a.families.split(",") if a.families else sorted({i["family"] for i in items if i["label"] == "injection"})
    rows = []
    for fam in fams:
        rows.append(fold(items, E, fam, a.fine_tuned))
        r = rows[-1]
        print(f"{fam:14s} n={r['n']:3d}  " + "  ".join(f"{k}: {r[k]['recall']:.2f}/{r[k]['fpr']:.3f}" for k in r
                                                   if k in MODES + FINE), flush=True)
    keys = [k for k in MODES + FINE if all(k in r for r in rows)]
    summary = {k: dict(mean_recall=round(float(np.mean([r[k]["recall"] for r in rows])), 4),
                       mean_fpr=round(float(np.mean([r[k]["fpr"] for r in rows])), 4),
                       families_at_goal=sum(r[k]["recall"] >= 0.8 and r[k]["fpr"] <= 0.02 for r in rows)) for k in keys}
    print(json.dumps(summary, indent=1))
    if a.out: Path(a.out).write_text(json.dumps(dict(rows=rows, summary=summary), indent=1) + "\n")
