"""Refit the learned injection screen with manual prose among its benign passages, and measure it beside the shipped one.

Manual prose (Debian's HTML manuals, cut as `keel ingest` cuts them; see bench/screen_manuals.py) is full of what the
screen's features key on: imperatives ("do not use X", "set Y before Z"), second person, code, *ignore*, *override*,
*always*. Only the manuals' `tune` pages (by page hash) are used, in two halves by a second hash: chunks of the *fit*
pages are added as benign passages whose template is their page (so the cross-validation keeps a page's chunks in one
fold), at most `--per-manual` per manual, chosen by chunk hash; every chunk of the *calibration* pages is scored by the
fitted model and never fitted (`fit_screen(calibration=)`). The `held_out` pages and any manual not named in
`--manuals` inform nothing.

Benign passages are fitted on every view the screen scores (sentences, decodings), not only their main view
(`fit_screen(benign_views=True)`; `--main-views-only` leaves it off): every false quarantine the learned layer made on
the manuals was on a short sentence view such as "note this function is async-signal-safe.", which a model fitted on
main views never saw. The threshold keeps both budgets: at most 2% of the labelled benign passages out of fold, and
at most `--manual-pages` (1%) of the pages with a chunk over it (`kind_fpr`), out of fold on the fit pages and on
the calibration pages. Chunks of pages the model was fitted on score lower than pages it never saw, so the calibration
pages are what set it.

Writes the refitted model (`--out`, default: the packaged `keel/safety/screen_model.json` with `--install`), the ids
of the manual chunks it was fitted on (bench/results/screen-manuals-train-ids.json: manual, page, chunk index, the
SHA-256 of the chunk's text; the text itself is not committed), and the attack recall of both models on the held-out
splits: the labelled set's `held_out` split, the blind set (`golden/safety/independent_set.jsonl`) and the other
author's set (`golden/safety/injection_set.yaml`), under the default rule (patterns + learned layer).

    nice -n 10 .venv/bin/python bench/screen_manual_fit.py [--manuals python3-doc sqlite3-doc] [--per-manual 800]
        [--manual-pages 0.01] [--install]
"""
import argparse, hashlib, json, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(HERE))
from keel.safety.learned import save_model, load_model, default_model_path
from keel.safety.fit import load_screen_set, fit_screen
from keel.safety.screen import screen, load_injection_set
from screen_manuals import MANUALS, INFORMED, manual_pages, page_digest, split_of

def half_of(rel:str) -> str:
    "fit or calibration, for a tune page: the second hex digit of its path's SHA-256."
    return "fit" if page_digest(rel)[1] < "8" else "calibration"

def tune_chunks(names) -> dict[str, list[dict]]:
    "Every chunk of the named manuals' tune pages by half (fit, calibration), as benign passages templated by page."
    out = {"fit": [], "calibration": []}
    for name in names:
        _, pages = manual_pages(Path(MANUALS[name]))
        for rel, texts in pages:
            if split_of(rel) != "tune": continue
            out[half_of(rel)] += [dict(id=f"{name}:{rel}#{k}", label="benign", kind="manual", lang="en",
                                       template=f"{name}:{rel}", split="train", text=t,
                                       sha256=hashlib.sha256(t.encode()).hexdigest()) for k, t in enumerate(texts)]
    return out

def manual_negatives(fit:list[dict], names, per_manual:int) -> list[dict]:
    "At most `per_manual` chunks of each named manual's fit pages (`tune_chunks`), chosen by chunk hash."
    return [i for n in names for i in sorted((i for i in fit if i["id"].startswith(n + ":")),
                                             key=lambda i: i["sha256"])[:per_manual]]

def without_digest(xs:list[dict]) -> list[dict]:
    "The passages without their `sha256` (kept for the ids file; `fit_screen` does not read it)."
    return [{k: v for k, v in i.items() if k != "sha256"} for i in xs]

def packaged_recipe(names, per_manual:int=800, manual_pages:float=0.01, benign_views:bool=True) -> tuple[list, dict]:
    "The manual negatives (with digests) and the other `fit_screen` arguments the packaged model is fitted with."
    chunks = tune_chunks(names)                          # each manual loaded and chunked once
    neg = manual_negatives(chunks["fit"], names, per_manual)
    return neg, dict(benign_views=benign_views, kind_fpr={"manual": manual_pages},
                     calibration=without_digest(chunks["calibration"]))

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
    ap.add_argument("--manuals", nargs="*", default=list(INFORMED))
    ap.add_argument("--per-manual", type=int, default=800)
    ap.add_argument("--install", action="store_true", help="write the packaged model")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--main-views-only", action="store_true", help="fit benign passages on their main views alone")
    ap.add_argument("--manual-pages", type=float, default=0.01, help="share of manual pages the layer may flag")
    a = ap.parse_args()
    t0 = time.process_time()
    train = [i for i in load_screen_set(ROOT/"golden/safety/screen_set.jsonl") if i.get("split") == "train"]
    neg, fit = packaged_recipe(a.manuals, a.per_manual, a.manual_pages, benign_views=not a.main_views_only)
    cal = fit["calibration"]
    print(f"{len(train)} labelled passages + {len(neg)} manual chunks; {len(cal)} calibration chunks", flush=True)
    m = fit_screen(train + without_digest(neg), **fit)
    m.meta["manual_negatives"] = dict(manuals=a.manuals, per_manual=a.per_manual, n=len(neg),
                                      calibration_pages=len({i["template"] for i in cal}))
    out = a.out or (default_model_path() if a.install else HERE/"results"/"screen-model-candidate.json")
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
