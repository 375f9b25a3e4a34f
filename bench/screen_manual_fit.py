"""Refit the learned injection screen with manual prose among its benign passages, and measure it beside the shipped one.

Manual prose (Debian's HTML manuals, cut as `keel ingest` cuts them; see bench/screen_manuals.py) is full of what the
screen's features key on: imperatives ("do not use X", "set Y before Z"), second person, code, *ignore*, *override*,
*always*. Only chunks of the manuals' `tune` pages (by page hash) are added, as benign passages whose template is
their page (so the cross-validation that sets the threshold keeps a page's chunks in one fold), at most `--per-manual`
per manual, chosen by chunk hash. The `held_out` pages and any manual not named in `--manuals` inform nothing.

Benign passages are fitted on every view the screen scores (sentences, decodings), not only their main view
(`--main-views-only`: as `fit_screen` does): every false quarantine measured on the manuals was on a short sentence
view such as "this object is defined as follows:", which the shipped model never saw in training.

Writes the refitted model (`--out`, default: the packaged `keel/safety/screen_model.json` with `--install`), the ids
of the manual chunks it was fitted on (bench/results/screen-manuals-train-ids.json: manual, page, chunk index, the
SHA-256 of the chunk's text; the text itself is not committed), and the attack recall of both models on the held-out
splits: the labelled set's `held_out` split, the blind set (`golden/safety/independent_set.jsonl`) and the other
author's set (`golden/safety/injection_set.yaml`), under the default rule (patterns + learned layer).

    nice -n 10 .venv/bin/python bench/screen_manual_fit.py [--manuals python3-doc sqlite3-doc] [--per-manual 800] [--install]
"""
import argparse, hashlib, json, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(HERE))
from keel.safety.learned import load_screen_set, fit_screen, save_model, load_model, _default_path
from keel.safety.screen import screen, load_injection_set
from screen_manuals import MANUALS, manual_pages, split_of
import keel.safety.learned as L

def _fit_all_views(items, y, C, min_df, class_weight=None):
    "The candidate recipe: the items' main views and every other view of a benign item (benign too)."
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    texts = [L._views_of(i["text"])[0] for i in items]
    more = [v for i, l in zip(items, y) if not l for v in L._views_of(i["text"])[1:]]   # sentences, decodings
    X, vocab = L._matrix(texts + more, min_df=min_df, class_weight=class_weight)
    yy = np.concatenate([np.asarray(y), np.zeros(len(more), dtype=int)])
    return LogisticRegression(C=C, max_iter=3000, class_weight="balanced").fit(X, yy), vocab

def manual_negatives(names, per_manual:int) -> list[dict]:
    "Benign passages from the tune pages of the named manuals, at most `per_manual` each, chosen by chunk hash."
    out = []
    for name in names:
        _, pages = manual_pages(Path(MANUALS[name]))
        xs = [dict(id=f"{name}:{rel}#{k}", label="benign", kind="manual", lang="en", template=f"{name}:{rel}",
                   split="train", text=t, sha256=hashlib.sha256(t.encode()).hexdigest())
              for rel, texts in pages if split_of(rel) == "tune" for k, t in enumerate(texts)]
        out += sorted(xs, key=lambda i: i["sha256"])[:per_manual]
    return out

def recall(m, items) -> dict:
    "Recall on attacks and FPR on benign passages under the default rule (patterns or the model over its threshold)."
    def hit(t): return m.best_view(t)[0] >= m.threshold or screen(t).quarantine
    inj = [hit(i["text"]) for i in items if i["label"] == "injection"]
    ben = [hit(i["text"]) for i in items if i["label"] == "benign"]
    return dict(attacks=len(inj), recall=round(sum(inj) / max(len(inj), 1), 4), benign=len(ben),
                fpr=round(sum(ben) / max(len(ben), 1), 4))

def attack_sets() -> dict:
    items = load_screen_set(ROOT/"golden/safety/screen_set.jsonl")
    return {"held_out": [i for i in items if i.get("split") == "held_out"],
            "blind": load_screen_set(ROOT/"golden/safety/independent_set.jsonl"),
            "other_author": load_injection_set(ROOT/"golden/safety/injection_set.yaml")}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manuals", nargs="*", default=["python3-doc", "sqlite3-doc"])
    ap.add_argument("--per-manual", type=int, default=800)
    ap.add_argument("--install", action="store_true", help="write the packaged model")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--main-views-only", action="store_true", help="fit on main views alone, as the notebook does")
    a = ap.parse_args()
    if not a.main_views_only: L._fit = _fit_all_views     # the shipped fit trains on main views only
    t0 = time.process_time()
    train = [i for i in load_screen_set(ROOT/"golden/safety/screen_set.jsonl") if i.get("split") == "train"]
    neg = manual_negatives(a.manuals, a.per_manual)
    print(f"{len(train)} labelled passages + {len(neg)} manual chunks", flush=True)
    m = fit_screen(train + [{k: v for k, v in i.items() if k != "sha256"} for i in neg])
    m.meta["manual_negatives"] = dict(manuals=a.manuals, per_manual=a.per_manual, n=len(neg))
    out = a.out or (_default_path() if a.install else HERE/"results"/"screen-model-candidate.json")
    before = load_model()
    save_model(m, out)
    ids = [dict(id=i["id"], sha256=i["sha256"]) for i in neg]
    (HERE/"results"/"screen-manuals-train-ids.json").write_text(json.dumps(
        dict(manuals=a.manuals, per_manual=a.per_manual, ids=ids), indent=0) + "\n")
    res = dict(threshold=dict(before=round(before.threshold, 3), after=round(m.threshold, 3)), meta=m.meta, sets={})
    for name, xs in attack_sets().items():
        res["sets"][name] = dict(before=recall(before, xs), after=recall(m, xs))
        print(name, json.dumps(res["sets"][name]), flush=True)
    res["cpu_s"] = round(time.process_time() - t0, 1)
    (HERE/"results"/"screen-manuals-attacks.json").write_text(json.dumps(res, indent=1) + "\n")

if __name__ == "__main__": main()
