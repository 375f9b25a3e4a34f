"""Extractive robustness on a second domain, beside the bundled golden set: a golden set built from PubMedQA's
development half (../shared/data/pubmedqa-dev, see its SOURCE.md), which informed no robustness choice.

    .venv/bin/python bench/robustness_pubmedqa.py [--n 40] [--corpus 150] [--seed 0]

The questions come from the half of PubMedQA dev that fitted nothing (odd positions of the sorted ids; the even
half fitted the refusal gate's calibration). Each question's own abstract is its expected source, written as a
Markdown document titled "PubMed <id>"; other abstracts of the same half fill the corpus up to `--corpus`. The
abstracts are split at random (seeded) between two access tags, so the permission swap has a user who reads the
rest of the corpus but not the answering abstract. `must_include` holds a figure that the abstract's conclusion
states and the abstract itself states too: an extractive answer carrying the finding quotes it. Up to half the
sample is drawn from items with such a figure (the counterfactual perturbation needs one); the other items are
scored by token F1 against the conclusion only. Writes bench/.cache/robustness-pubmedqa/ (documents, manifest,
golden.yaml, data directory, reports) and prints both tables and both gates side by side.
"""
from __future__ import annotations
import argparse, json, random, re, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import PUBMEDQA as PUBMEDQA_DIR                    # the shared data beside the repository

ROOT = Path(__file__).resolve().parent.parent
PUBMEDQA = PUBMEDQA_DIR/"pqal_dev.json"
OUT = ROOT/"bench"/".cache"/"robustness-pubmedqa"
TAGS = ("pubmed-a", "pubmed-b")
_NUM = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\w])")


def shared_figure(conclusion:str, contexts:str) -> str|None:
    "The first figure of two or more characters the conclusion states that the abstract states as a whole number too."
    for m in _NUM.finditer(conclusion):
        f = m.group().rstrip(",")
        if len(f) > 1 and re.search(r"(?<![\w.,])" + re.escape(f) + r"(?![\w]|[.,]\d)", contexts): return f
    return None


def build_set(out:Path=OUT, n:int=40, corpus:int=150, seed:int=0, src:Path=PUBMEDQA) -> tuple[Path, Path]:
    "Write the documents, their manifest and the golden set under `out`; return (manifest, golden) paths."
    import yaml
    d = json.loads(Path(src).read_text())
    held = sorted(d)[1::2]                                     # the half that fitted nothing
    rng = random.Random(seed)
    text = {k: " ".join(d[k]["CONTEXTS"]) for k in held}
    fig = {k: shared_figure(d[k]["LONG_ANSWER"], text[k]) for k in held}
    with_fig = rng.sample([k for k in held if fig[k]], min(n // 2, sum(bool(v) for v in fig.values())))
    rest = rng.sample([k for k in held if k not in with_fig], n - len(with_fig))
    asked = with_fig + rest
    others = rng.sample([k for k in held if k not in asked], max(0, corpus - len(asked)))
    docs = sorted(asked + others)
    tag = {k: rng.choice(TAGS) for k in docs}
    (out/"docs").mkdir(parents=True, exist_ok=True)
    for k in docs: (out/"docs"/f"{k}.md").write_text(f"# PubMed {k}\n\n" + "\n\n".join(d[k]["CONTEXTS"]) + "\n")
    manifest = out/"manifest.yaml"
    manifest.write_text(yaml.safe_dump({"documents": [dict(path=f"docs/{k}.md", title=f"PubMed {k}", acl_tags=[tag[k]]) for k in docs]},
                                       sort_keys=False))
    items = [dict(id=f"pmid-{k}", question=d[k]["QUESTION"], user_tags=[tag[k]], expected_answer=d[k]["LONG_ANSWER"],
                  expected_sources=[f"PubMed {k}"], must_include=[fig[k]] if fig[k] else [], category="pubmedqa", split="heldout")
             for k in asked]
    golden = out/"golden.yaml"
    golden.write_text("# Built by bench/robustness_pubmedqa.py from PubMedQA dev (held-out half); do not edit.\n"
                      + yaml.safe_dump({"version": 1, "description": "PubMedQA dev, held-out half", "items": items}, sort_keys=False))
    return manifest, golden


def context(data_dir:Path, manifest:Path|None=None, **overrides):
    "A Keel context over `data_dir` in extractive mode, the manifest ingested when the directory is new."
    from keel.config import load_settings
    from keel.factory import build_context
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=data_dir, answer_mode="extractive", **overrides))
    if manifest is not None and not ctx.con.execute("SELECT count(*) FROM documents").fetchone()[0]:
        t = time.perf_counter()
        for _ in ctx.ingestor.ingest_manifest(manifest, progress=False): pass
        print(f"ingested {manifest}: {ctx.con.execute('SELECT count(*) FROM chunks').fetchone()[0]} chunks, "
              f"{time.perf_counter() - t:.0f} s", file=sys.stderr)
    return ctx


def side_by_side(results:dict):
    "The perturbation x metric tables of several runs, one column group per run."
    import pandas as pd
    frames = {name: pd.DataFrame(r.table).set_index(["perturbation", "param", "metric"])[["n", "clean", "perturbed", "delta", "ci_low", "ci_high"]]
              for name, r in results.items()}
    return pd.concat(frames, axis=1).round(2)


def gates_side_by_side(results:dict):
    import pandas as pd
    return pd.concat({name: pd.DataFrame([dict(gate=g.metric, bound=f"{g.direction} {g.bound}", value=g.current, passed=g.passed)
                                          for g in r.gates]).set_index("gate") for name, r in results.items()}, axis=1).round(2)


def main(argv=None):
    from keel.evals.robustness import run_robustness
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("--n", type=int, default=40, help="questions")
    a.add_argument("--corpus", type=int, default=150, help="abstracts in the corpus (the questions' own and others)")
    a.add_argument("--seed", type=int, default=0, help="sample, tags and perturbations")
    a.add_argument("--pubmedqa", type=Path, default=PUBMEDQA, help="pqal_dev.json")
    a = a.parse_args(argv)
    if not a.pubmedqa.exists(): sys.exit(f"{a.pubmedqa} not found: put the shared data beside the repository or pass --pubmedqa")
    out = OUT/f"n{a.n}-c{a.corpus}-s{a.seed}"
    manifest, golden = build_set(out, a.n, a.corpus, a.seed, a.pubmedqa)
    pctx = context(out/"data", manifest)
    bctx = context(Path(tempfile.mkdtemp(prefix="keel-robustness-bundled-"))/"data", ROOT/"golden"/"corpus"/"manifest.yaml")
    res = {}
    for name, ctx, g in (("bundled", bctx, ROOT/"golden"/"golden.yaml"), ("pubmedqa", pctx, golden)):
        t = time.perf_counter()
        res[name] = run_robustness(ctx, g, out/f"reports-{name}", seed=a.seed, progress=False)
        print(f"{name}: {res[name].payload['n_items']} items, {len(res[name].rows)} probes, {time.perf_counter() - t:.0f} s", file=sys.stderr)
        ctx.close()
    import pandas as pd
    with pd.option_context("display.width", 250, "display.max_rows", 200, "display.max_columns", 20):
        print(side_by_side(res)); print(gates_side_by_side(res))
    print(f"reports: {out}/reports-*/latest-robustness.html")


if __name__ == "__main__":
    main()
