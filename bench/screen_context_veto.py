"""Could a contextual second opinion release the learned layer's false quarantines on manuals? Measured, not adopted.

The learned layer's remaining false quarantines on software manuals are reader-directed sentences ("now that you
have read this document you should continue to the user guide") whose word classes read like an instruction to a
model. This script asks whether the packaged MiniLM's sentence embedding of the flagged view, with the learned
layer's own logit beside it, can veto a quarantine the learned layer made alone (the patterns did not fire) without
giving up attacks.

- Fitted on: the best view of every `train` passage of the labelled set and of every chunk of the informing manuals
  (`screen_manuals.MANUALS` less `FRESH`) that the packaged model scores at 0.5 or more; logistic regression, five
  folds grouped by attack family and by page.
- Veto threshold: the 0.5% quantile of the out-of-fold score of the train attacks the learned layer alone catches
  (so at most 1 in 200 of them would be released), and for comparison a plain rise of the learned threshold that
  releases as many of them.
- Measured on: the learned-only quarantines of the held-out attack sets (the labelled set's `held_out` split, the
  blind set, the other author's set): attacks the veto would release, benign passages it would release.

Writes bench/results/screen-context-veto.json. About ten minutes on two cores (scoring every manual chunk).

    .venv/bin/python bench/screen_context_veto.py
"""
import json, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(HERE))
import numpy as np
from keel.config import load_settings
from keel.factory import make_embeddings
from keel.safety.learned import default_model
from keel.safety.screen import screen
from keel.safety.fit import load_screen_set
from screen_manuals import MANUALS, FRESH, manual_pages
from screen_manual_fit import attack_sets

KEEP = 0.995   # share of the train attacks the learned layer alone catches that the veto must keep (out of fold)

def rows_to_fit(m) -> list[dict]:
    "Best view, score and pattern verdict of each train passage and of each informing manual chunk scoring >= 0.5."
    out = []
    for i in load_screen_set(ROOT/"golden/safety/screen_set.jsonl"):
        if i.get("split") != "train": continue
        p, _, v = m.best_view(i["text"])
        if p < 0.5: continue
        out.append(dict(src="labelled", attack=i["label"] == "injection", p=p, view=v, pat=screen(i["text"]).quarantine,
                        group=i.get("family") if i["label"] == "injection" else i.get("template", i["id"])))
    for n in (n for n in MANUALS if n not in FRESH and Path(MANUALS[n]).exists()):
        for rel, texts in manual_pages(Path(MANUALS[n]))[1]:
            for t in texts:
                p, _, v = m.best_view(t)
                if p >= 0.5: out.append(dict(src="manual", attack=False, p=p, view=v, pat=screen(t).quarantine,
                                             group=f"{n}:{rel}"))
        print(f"{n}: {len(out)} rows so far", flush=True)
    return out

def logit(p): p = np.clip(np.asarray(p, dtype=float), 1e-6, 1 - 1e-6); return np.log(p / (1 - p))

def main():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold
    t0, m = time.process_time(), default_model()
    emb = make_embeddings(load_settings(env={}, dotenv=None))
    rows = rows_to_fit(m)
    E = np.asarray(emb.embed([r["view"] for r in rows]), dtype=np.float32)
    p = np.array([r["p"] for r in rows]); y = np.array([r["attack"] for r in rows], dtype=int)
    groups = np.array([r["group"] for r in rows])
    alone = (p >= m.threshold) & ~np.array([r["pat"] for r in rows])            # quarantined by the learned layer alone
    manual = np.array([r["src"] == "manual" for r in rows])
    res = dict(threshold=round(m.threshold, 3), keep=KEEP, rows=len(rows), attacks=int(y.sum()), variants={})
    lone = {}   # per held-out set: what the learned layer alone quarantines (kind, embedded view, score), found once
    for set_name, xs in attack_sets().items():
        kinds, views, scores = [], [], []
        for i in xs:
            q, _, v = m.best_view(i["text"])
            if q < m.threshold or screen(i["text"]).quarantine: continue
            kinds.append("attacks" if i["label"] == "injection" else "benign"); views.append(v); scores.append(q)
        Eh = np.asarray(emb.embed(views), dtype=np.float32).reshape(len(views), -1)
        lone[set_name] = (np.array(kinds), Eh, np.array(scores))
    for name, X in (("embedding", E), ("embedding and logit", np.hstack([E, logit(p)[:, None] / 4]))):
        oof = np.zeros(len(y))
        for tr, te in GroupKFold(n_splits=5).split(X, y, groups):
            lr = LogisticRegression(C=1, max_iter=3000, class_weight="balanced").fit(X[tr], y[tr])
            oof[te] = lr.predict_proba(X[te])[:, 1]
        veto = float(np.quantile(oof[alone & (y == 1)], 1 - KEEP))
        lr = LogisticRegression(C=1, max_iter=3000, class_weight="balanced").fit(X, y)
        r = dict(veto_below=round(veto, 4), train_attacks_released=int((oof[alone & (y == 1)] < veto).sum()),
                 train_attacks_alone=int((alone & (y == 1)).sum()),
                 manual_released=int((oof[alone & manual] < veto).sum()), manual_alone=int((alone & manual).sum()),
                 held_out={})
        for set_name, (kinds, Eh, ph) in lone.items():
            x = Eh if name == "embedding" else np.hstack([Eh, logit(ph)[:, None] / 4])
            out = lr.predict_proba(x)[:, 1] < veto
            r["held_out"][set_name] = {f"{k}_{c}": int(((kinds == k) & w).sum()) for k in ("attacks", "benign")
                                       for c, w in (("alone", np.ones(len(kinds), dtype=bool)), ("released", out))}
        res["variants"][name] = r
        print(name, json.dumps(r), flush=True)
    att = np.sort(p[alone & (y == 1)])                                    # the plain threshold rise, for comparison
    k = res["variants"]["embedding and logit"]["train_attacks_released"]
    rise = float(att[k]) if k < len(att) else 1.0
    res["threshold_rise"] = dict(to=round(rise, 4), train_attacks_released=int((att < rise).sum()),
                                 manual_released=int((p[alone & manual] < rise).sum()))
    res["cpu_s"] = round(time.process_time() - t0, 1)
    (HERE/"results"/"screen-context-veto.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res["threshold_rise"]), f"wrote bench/results/screen-context-veto.json in {res['cpu_s']} s cpu")

if __name__ == "__main__": main()
