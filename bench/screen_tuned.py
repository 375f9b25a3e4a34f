"""The fine-tuned MiniLM layer (`KEEL_INJECTION_SCREEN=tuned`) against today's screens, on data that chose nothing.

A model folder written by `tools/train_screen_minilm.py` (its thresholds were set on the training split) is measured
on the held-out split of `golden/safety/screen_set.jsonl` and on the other author's set
(`golden/safety/independent_set.jsonl`): recall, false-positive rate and ROC AUC for today's default (`learned`:
patterns or learned layer), `confirmed`, the learned layer's model alone, the classifier alone and the combination
(learned model or classifier, no patterns). `--prose` adds false quarantines on real prose: the fixture corpus's
chunks, SciFact's abstracts and PubMedQA dev's, cut as ingest cuts them (800/120); each corpus runs in a fresh
process per screen, so the wall time and peak memory of the screening stage of an ingest are measured in the same run
(today's default against the combination).

    python bench/screen_tuned.py --model DIR [--prose] [--out results.json]

Exits cleanly (skipping those corpora) when SciFact or PubMedQA is not on this machine.
"""
import argparse, json, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import numpy as np
from keel.safety.learned import default_model, screen_learned, screen_confirmed
from keel.safety.fit import load_screen_set
from keel.safety.screen import screen
from keel.safety.tuned import TunedScreen

SCIFACT = ROOT.parent / "shared/data/scifact-train/corpus.jsonl"
PUBMEDQA = ROOT.parent / "shared/data/pubmedqa-dev"
# the kinds of the 240 ordinary-prose passages written for the learned layer (`written_set.jsonl`)
PROSE = {"doc_intro", "contact", "faq", "ml_docs", "minutes", "procedure_steps", "news_reports", "scientific"}


def labelled(ts, xs) -> dict:
    "Each way of running the screen on a labelled set: recall, false-positive rate; the two models' ROC AUC."
    from sklearn.metrics import roc_auc_score
    m, card = default_model(), ts.card
    y = np.array([x["label"] == "injection" for x in xs])
    p = np.array([m.prob(x["text"]) for x in xs])
    t0 = time.perf_counter()
    z = np.array([ts.classifier_view(x["text"])[0] for x in xs])
    ms = (time.perf_counter() - t0) * 1000 / len(xs)
    modes = {"default (learned)": np.array([screen_learned(x["text"]).quarantine for x in xs]),
             "confirmed": np.array([screen_confirmed(x["text"]).quarantine for x in xs]),
             "patterns": np.array([screen(x["text"]).quarantine for x in xs]),
             "learned model alone": p >= m.threshold, "classifier alone": z >= card["threshold"],
             "combination (tuned)": (p >= card["learned_threshold"]) | (z >= card["threshold"])}
    out = dict(n_attacks=int(y.sum()), n_benign=int((~y).sum()), auc_learned=round(float(roc_auc_score(y, p)), 4),
               auc_classifier=round(float(roc_auc_score(y, z)), 4), classifier_ms_per_passage=round(ms, 1))
    for k, f in modes.items():
        out[k] = dict(recall=round(float(f[y].mean()), 4), fpr=round(float(f[~y].mean()), 4), fp=int(f[~y].sum()))
    prose = np.array([x.get("kind") in PROSE for x in xs])
    if prose.any():                                          # the ordinary-prose passages among the negatives
        out["prose_passages"] = int(prose.sum())
        out["prose_false_quarantines"] = {k: int(f[prose].sum()) for k, f in modes.items()}
    fams = sorted({x["family"] for x in xs if x["label"] == "injection"})
    out["recall_by_family"] = {fa: {k: round(float(f[[x.get("family") == fa for x in xs]].mean()), 3)
                                    for k, f in modes.items()} for fa in fams}
    return out


def documents(corpus: str) -> list:
    "The corpus's documents as ingest loads them, or [] when it is not on this machine."
    from keel.ingest.loaders import LoadedDocument, Page, load
    if corpus == "fixture":
        import yaml
        docs = yaml.safe_load((ROOT / "golden/corpus/manifest.yaml").read_text())["documents"]
        return [load(ROOT / "golden/corpus" / d["path"]) for d in docs]   # sources written relative to the repository
    if corpus == "scifact":
        path = SCIFACT
    else:
        if not (PUBMEDQA / "pqal_dev.json").exists(): return []
        sys.path.insert(0, str(ROOT / "bench"))
        from corpora import pubmedqa_beir
        path = pubmedqa_beir() / "corpus.jsonl"
    if not path.exists(): return []
    rows = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    return [LoadedDocument(source=f"{corpus}:{d['_id']}", title=d.get("title") or "", kind="text", checksum="",
                           pages=[Page(None, (d["title"] + "\n\n" if d.get("title") else "") + d["text"])])
            for d in rows]


def memory_mb(field: str = "VmHWM") -> float:
    "This process's peak (VmHWM: its own, unlike ru_maxrss, which keeps the forking parent's) or current memory."
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(field + ":"))
    return round(int(line.split()[1]) / 1024, 1)


def stage(corpus: str, mode: str, model: str) -> dict:
    "Screen every chunk of a corpus as ingest does (one process, one screen): flagged documents, time, peak memory."
    from keel.ingest.chunking import chunk_document
    docs = documents(corpus)
    chunks = [(d.source, c.text) for d in docs for c in chunk_document(d, 800, 120)]
    fn = screen_learned if mode == "learned" else TunedScreen(model)
    fn("warm-up: load the models outside the timing.")
    t0, flagged = time.perf_counter(), {}
    for src, text in chunks:
        v = fn(text)
        if v.quarantine: flagged.setdefault(src.replace(str(ROOT) + "/", ""), v.reasons)
    return dict(corpus=corpus, mode=mode, documents=len(docs), chunks=len(chunks), documents_quarantined=len(flagged),
                wall_s=round(time.perf_counter() - t0, 1), ms_per_chunk=round((time.perf_counter() - t0) * 1000
                                                                                / max(1, len(chunks)), 2),
                peak_rss_mb=memory_mb(), rss_end_mb=memory_mb("VmRSS"),
                flagged=dict(list(flagged.items())[:20]))


def prose(model: str) -> list:
    "Each corpus through today's default and the combination, each in a fresh process."
    rows = []
    for corpus in ("fixture", "pubmedqa", "scifact"):
        for mode in ("learned", "tuned"):
            r = subprocess.run([sys.executable, __file__, "--model", model, "--stage", corpus, "--mode", mode],
                               capture_output=True, text=True)
            if r.returncode: sys.exit(r.stderr[-2000:])
            row = json.loads(r.stdout.strip().splitlines()[-1])
            if not row["documents"]: print(f"{corpus}: not on this machine, skipped"); break
            print({k: v for k, v in row.items() if k != "flagged"}, flush=True)
            rows.append(row)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="a folder written by tools/train_screen_minilm.py")
    ap.add_argument("--prose", action="store_true", help="also the real-prose false quarantines and ingest cost")
    ap.add_argument("--stage", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.stage:
        print(json.dumps(stage(a.stage, a.mode, a.model))); sys.exit(0)
    ts = TunedScreen(a.model)
    res = dict(model=a.model, card=ts.card)                 # the model card as training wrote it
    for name, path, keep in (("held_out", "screen_set.jsonl", "held_out"),
                             ("independent", "independent_set.jsonl", None)):
        xs = [x for x in load_screen_set(ROOT / "golden/safety" / path) if keep is None or x.get("split") == keep]
        res[name] = labelled(ts, xs)
        r = res[name]
        print(f"{name}: {r['n_attacks']} attacks, {r['n_benign']} hard negatives; ROC AUC learned "
              f"{r['auc_learned']}, classifier {r['auc_classifier']}; {r['classifier_ms_per_passage']} ms a passage")
        for k in ("default (learned)", "confirmed", "patterns", "learned model alone", "classifier alone",
                  "combination (tuned)"):
            print(f"  {k:22s} recall {r[k]['recall']:.3f}  FPR {r[k]['fpr']:.4f} ({r[k]['fp']})", flush=True)
        if "prose_passages" in r: print(f"  ordinary prose ({r['prose_passages']}): {r['prose_false_quarantines']}")
    if a.prose: res["prose"] = prose(a.model)
    if a.out: Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
