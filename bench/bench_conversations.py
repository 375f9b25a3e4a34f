"""Follow-up questions with and without the rewrite, on the hand-written conversations of golden/conversations.yaml.

    .venv/bin/python bench/bench_conversations.py [--out bench/results] [--model-sample 10]

The fixture corpus and examples/own-documents are ingested into a fresh data directory; answers are extractive
(no language model in the answer, so the figures measure the rewrite and retrieval). Every conversation is run
twice: with the deterministic carry rewrite and with the history ignored (`rewrite=none`). With a rewrite, a
follow-up without a pronoun that the answerability gate passes as asked is answered as asked, and one that stands
alone but that the gate refuses alone is retried with its topic carried (kept when the gate passes that and its own
words are in what it retrieves). The bundled model's
rewrite (`rewrite=model`, falling back to the carry when its reply fails the checks) is slow on a small CPU, so it
runs on the first `--model-sample` conversations of each split only; the output says so. Figures per split
(tune: the rules were written from it; heldout: only measured) and turn position: hit@3, answered rate of
answerable turns, correct refusals, pass rate, token F1, leaks; the conversations that pass; seconds per turn.

Everything runs twice: with the gate's shipped default calibration, then with the gate calibrated on this corpus by
`keel calibrate golden/golden.yaml` (the corpus's own golden set, which the conversations did not inform), as a
deployment would be. Writes conversations.json and conversations.md to the output folder.
"""
from __future__ import annotations
import argparse, json, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from keel.config import load_settings
from keel.factory import build_context
from keel.evals.conversations import load_conversations, run_conversation, by_position
from keel.evals.score import chunk_tags


def deployment(d:Path):
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=d, answer_mode="extractive"))
    ctx.ingestor.ingest_manifest(ROOT / "golden" / "corpus" / "manifest.yaml", progress=False)
    for p in sorted((ROOT / "examples" / "own-documents" / "docs").glob("*.txt")):
        ctx.ingestor.ingest_path(p, title=p.stem, acl_tags=("public",))
    return ctx


def measure(ctx, convs, rewrite:str) -> dict:
    t0, tags_of = time.perf_counter(), chunk_tags(ctx.con)
    res = [run_conversation(ctx.answer_engine, c, rewrite, tags_of) for c in convs]
    s = time.perf_counter() - t0
    turns = sum(len(c.turns) for c in convs)
    model = sum(r["rewrite"] == "model" for c in res for r in c["turns"])
    kept = sum(r["as_asked"] for c in res for r in c["turns"])
    return dict(rewrite=rewrite, conversations=len(convs), turns=turns, seconds_per_turn=round(s / turns, 3),
                model_rewrites=model, kept_as_asked=kept, **by_position(res),
                failing=[dict(id=c["id"], first_failing_turn=c["first_failing_turn"]) for c in res if not c["passed"]])


def cal_of(out:dict) -> str:
    c = out.get("calibration") or {}
    return "-" if c.get("threshold") is None else f"{c['threshold']:.3f}"


def md(out:dict) -> str:
    lines = ["# Conversations: follow-ups with and without the rewrite", "",
             "Extractive answers over the fixture corpus and examples/own-documents; `carry` is the deterministic "
             "rewrite, `none` ignores the history, `model` is the bundled model's rewrite (carry when it fails its "
             f"checks) on the first {out['model_sample']} conversations of each split only. With `carry` and `model`, "
             "a follow-up without a pronoun that the gate passes as asked is answered as asked, and a question "
             "that stands alone but that the gate refuses alone is retried with its topic carried. `gate`: the shipped "
             "default calibration, or the gate calibrated on this corpus with `keel calibrate golden/golden.yaml` "
             f"(the corpus's own golden set, not the conversations; threshold {cal_of(out)}).", "",
             "| gate | split | rewrite | conversations | position | turns | hit@3 | answered | correct refusals | "
             "passed | token F1 | leaks |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    f = lambda v: "-" if v is None else f"{v:.2f}"
    for r in out["runs"]:
        for pos, v in r["by_position"].items():
            lines.append(f"| {r['gate']} | {r['split']} | {r['rewrite']} | {r['conversations']} | "
                         f"{pos} | {v['turns']} | "
                         f"{f(v['hit_at_3'])} | {f(v['answered'])} | {f(v['refusal_correct'])} | {f(v['passed'])} | "
                         f"{f(v['token_f1'])} | {v['leaks']} |")
    lines += ["", "| gate | split | rewrite | conversations passed | seconds per turn | model rewrites kept | "
              "follow-ups kept as asked |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['gate']} | {r['split']} | {r['rewrite']} | {f(r['conversation']['passed'])} | "
              f"{r['seconds_per_turn']} | "
              f"{r['model_rewrites']} | {r['kept_as_asked']} |" for r in out["runs"]]
    return "\n".join(lines) + "\n"


def calibrate(ctx) -> dict:
    "Calibrate the gate on the corpus's own golden set (golden/golden.yaml, not the conversations), as `keel calibrate`."
    import contextlib, io
    from keel.evals.calibrate import cli
    with contextlib.redirect_stdout(io.StringIO()) as f:
        rc = cli([str(ROOT / "golden" / "golden.yaml")], lambda **kw: ctx)
    if rc: sys.exit(f"keel calibrate failed ({rc}):\n{f.getvalue()[-2000:]}")
    cal = json.loads((Path(ctx.settings.data_dir) / "calibration.json").read_text())
    m = cal.get("measured") or {}
    return dict(threshold=cal.get("threshold"), evidence_threshold=cal.get("evidence_threshold"),
                **{k: m.get(k) for k in ("n_items", "auc", "false_answer", "false_refusal")})


def main(out:Path, model_sample:int=10, skip_model:bool=False):
    convs = load_conversations(ROOT / "golden" / "conversations.yaml")
    with tempfile.TemporaryDirectory() as d:
        ctx = deployment(Path(d) / "data")
        runs, cal = [], None
        for gate in ("default", "calibrated"):
            if gate == "calibrated": cal = calibrate(ctx)
            for split in ("tune", "heldout"):
                part = [c for c in convs if c.split == split]
                for rw in ("carry", "none"): runs.append(dict(gate=gate, split=split, **measure(ctx, part, rw)))
                if not skip_model:
                    runs.append(dict(gate=gate, split=split, **measure(ctx, part[:model_sample], "model")))
        ctx.close()
    res = dict(model_sample=model_sample, calibration=cal, runs=runs)
    out.mkdir(parents=True, exist_ok=True)
    (out / "conversations.json").write_text(json.dumps(res, indent=1) + "\n")
    (out / "conversations.md").write_text(md(res))
    print(md(res))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--model-sample", type=int, default=10)
    p.add_argument("--skip-model", action="store_true")
    a = p.parse_args()
    main(a.out, a.model_sample, a.skip_model)
