"""The bundled judge on the example rubrics: its agreement with the human labels, and whether each rubric may gate.

The golden set's rubrics (golden/golden.yaml) are scored by the deployment's default judge (Gemma 3 270M in process)
on every labelled answer of golden/rubric_labels.yaml (real answers of the deployment, each scored by a person). Per
rubric: labels, how many the person and the judge passed, accuracy, Cohen's kappa with its 95% bootstrap interval,
unscored replies, and the gate's decision (`keel.evals.rubrics.untrusted_because`). Then the same verdicts against a
planted wrong label set, every label's pass/fail reversed (the judge is not asked again): the rubric must read as
unreliable. Writes bench/results/rubric_agreement.json. About 3 s a judge call on two shared cores: minutes.

    .venv/bin/python bench/rubric_agreement.py
"""
import json, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "rubric_agreement.json"


def planted(labels:list[dict], rubrics:dict) -> list[dict]:
    "Every label's verdict reversed: a pass becomes the scale's lowest score, a fail its highest."
    from keel.evals.golden import RUBRIC_SCALES
    out = []
    for l in labels:
        r = rubrics[l["rubric"]]
        lo, hi = RUBRIC_SCALES[r.scale]
        out.append({**l, "human": lo if r.passes(l["human"]) else hi})
    return out


def main(out:Path=OUT):
    from keel.factory import build_context
    from keel.evals.golden import read_golden_set
    from keel.evals.judge import Judge
    from keel.evals.rubrics import load_rubric_labels, rubric_verdicts, rubric_agreement, untrusted_because
    gs = read_golden_set(ROOT / "golden" / "golden.yaml")
    labels = load_rubric_labels(ROOT / "golden" / "rubric_labels.yaml", gs.rubrics)
    ctx = build_context(None, data_dir=Path(tempfile.mkdtemp(prefix="keel-rubric-bench-")))
    judge, by_name, res = Judge(ctx.llm), {r.name: r for r in gs.rubrics}, {"judge": None, "rubrics": {}}
    wrong = planted(labels, by_name)
    for r in gs.rubrics:
        t0 = time.perf_counter()
        vs = rubric_verdicts(judge, r, labels, progress=True)
        secs = time.perf_counter() - t0
        ag, bad = rubric_agreement(r, labels, vs), rubric_agreement(r, wrong, vs)
        keep = ("labels", "n", "unscored", "human_pass", "judge_pass", "accuracy", "kappa", "kappa_low", "kappa_high")
        res["rubrics"][r.name] = dict(
            scale=r.scale, pass_at=r.pass_at, seconds=round(secs, 1), **{k: ag[k] for k in keep},
            gated=untrusted_because(ag) is None, why=untrusted_because(ag),
            planted={**{k: bad[k] for k in keep}, "gated": untrusted_because(bad) is None, "why": untrusted_because(bad)},
            verdicts=[dict(id=i["id"], human=i["human"], judge=i["judge"], error=i["error"]) for i in ag["items"]])
    res["judge"] = judge.name
    ctx.close()
    for name, a in res["rubrics"].items():
        for label, x in (("labels", a), ("planted wrong labels", a["planted"])):
            kap = "undefined" if x["kappa"] is None else f"{x['kappa']:.2f} ({x['kappa_low']:.2f} to {x['kappa_high']:.2f})"
            print(f"{name} [{label}]: {x['n']} scored of {x['labels']} ({x['unscored']} unscored), person passed "
                  f"{x['human_pass']}, judge passed {x['judge_pass']}, accuracy {x['accuracy']:.2f}, kappa {kap} -> "
                  + ("GATED" if x["gated"] else f"not gated: {x['why']}"))
        print(f"{name}: {a['seconds']:.0f}s judging")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"written: {out.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
