"""Do sentence embeddings from the packaged MiniLM generalise to a left-out attack family better than n-grams?

A feasibility comparison on a sample of the labelled set: 480 passages (24 attacks of each family, 240 benign,
drawn with a fixed seed; few enough to embed in about a minute on two cores). For each family, models are fitted
on the other families' attacks and the train-split benign passages, and tested on the family's attacks and the
held-out benign passages. Four representations: the learned screen's n-grams, the MiniLM embedding, both side
by side, and a nearest-neighbour vote (mean cosine to the three nearest attacks minus to the three nearest benign
passages). Recall is read at each model's own 98th percentile of the test negatives' scores: a comparison of
representations at an equal false-positive rate, not a deployable threshold.

    python bench/screen_embeddings.py
"""

import json, sys, random, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import numpy as np
from keel.safety.fit import load_screen_set, view_texts, feature_matrix
from keel.config import load_settings
from keel.factory import make_embeddings
from sklearn.linear_model import LogisticRegression
from scipy.sparse import hstack, csr_matrix

rng = random.Random(7)
items = load_screen_set(str(ROOT / "golden/safety/screen_set.jsonl"))
fams = sorted({i["family"] for i in items if i["label"] == "injection"})
sub = []
for f in fams:
    sub += rng.sample([i for i in items if i.get("family") == f], 24)
ben = [i for i in items if i["label"] == "benign"]
sub += rng.sample(ben, 240)
main = [view_texts(i["text"])[0] for i in sub]
t0 = time.time()
E = make_embeddings(load_settings(dotenv=None)).embed(main)
print("embedded", len(main), "in", round(time.time() - t0, 1), "s", flush=True)

y = np.array([i["label"] == "injection" for i in sub])
held = np.array([i["split"] == "held_out" for i in sub])
res = {}
for f in fams:
    tr = np.array([(i.get("family") != f) and (i["label"] == "injection" or i["split"] == "train") for i in sub])
    te = np.array([(i.get("family") == f) or (i["label"] == "benign" and i["split"] == "held_out") for i in sub])
    Xn, voc = feature_matrix([main[k] for k in np.where(tr)[0]])
    Xt, _ = feature_matrix([main[k] for k in np.where(te)[0]], voc)
    out = {}
    for name, A, B in (
        ("ngram", Xn, Xt),
        ("embedding", E[tr], E[te]),
        ("ngram+embedding", hstack([Xn, csr_matrix(E[tr])]).tocsr(), hstack([Xt, csr_matrix(E[te])]).tocsr()),
    ):
        s = LogisticRegression(C=4, max_iter=3000, class_weight="balanced").fit(A, y[tr]).predict_proba(B)[:, 1]
        yt = y[te]
        cut = np.quantile(s[~yt], 0.98)  # the test negatives' 98th percentile (a comparison of representations only)
        out[name] = round(float((s[yt] > cut).mean()), 2)
    # nearest known attack vs nearest benign (cosine), the kNN vote
    sims = E[te] @ E[tr].T
    top_inj = np.sort(np.where(y[tr][None, :], sims, -1), axis=1)[:, -3:].mean(1)
    top_ben = np.sort(np.where(~y[tr][None, :], sims, -1), axis=1)[:, -3:].mean(1)
    s = top_inj - top_ben
    yt = y[te]
    cut = np.quantile(s[~yt], 0.98)
    out["knn"] = round(float((s[yt] > cut).mean()), 2)
    res[f] = out
    print(f, out, flush=True)
print(json.dumps(res))
