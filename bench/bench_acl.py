"""`keel eval acl` on a corpus nobody on the project wrote: the 24 PubMedQA abstracts of examples/own-documents,
part of them tagged (every fourth `clinical`, every sixth of the rest `legal`), ingested with the real embedding model
and probed extractively (no language model). Also the fixture corpus. Prints and writes
bench/results/acl-probes.json and .md: documents, personas, pairs probed, probes, leaks per layer, seconds in all and
per probe. Usage: .venv/bin/python bench/bench_acl.py
"""
import json, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from keel.config import load_settings
from keel.factory import build_context
from keel.evals.acl import acl_probes
from keel.evals.golden import read_golden_set

def context(d:Path):
    return build_context(load_settings(env={}, dotenv=None, data_dir=d, answer_mode="extractive"))

def own_documents(d:Path) -> dict:
    "The abstracts ingested under three tag sets; the ingest's seconds."
    files = sorted((ROOT / "examples" / "own-documents" / "docs").glob("*.txt"))
    clinical = files[::4]
    legal = [f for f in files if f not in clinical][::6]
    groups = {("clinical",): clinical, ("legal",): legal,
              ("public",): [f for f in files if f not in clinical and f not in legal]}
    ctx, t0 = context(d), time.perf_counter()
    for tags, fs in groups.items():
        for f in fs: ctx.ingestor.ingest_path(f, acl_tags=list(tags))
    ctx.close()
    return dict(ingest_s=round(time.perf_counter() - t0, 1), tagged={",".join(k): len(v) for k, v in groups.items()})

def run(name:str, d:Path, golden=None) -> dict:
    ctx = context(d)
    try:
        t0 = time.perf_counter(); res = acl_probes(ctx, golden=golden); s = time.perf_counter() - t0
    finally: ctx.close()
    c = res.coverage()
    return dict(corpus=name, restricted=c["documents"], personas=len(res.personas), pairs=c["pairs"],
                probed=c["probed"], coverage=c["share"], probes=c["probes"], leaks=res.leaks, seconds=round(s, 2),
                ms_per_probe=round(c["ms_per_probe"], 1), passed=res.passed)

def main():
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ctx = context(tmp / "fixture"); ctx.ingestor.ingest_manifest(ROOT / "golden/corpus/manifest.yaml", progress=False)
        ctx.close()
        out.append(run("fixture corpus", tmp / "fixture", read_golden_set(ROOT / "golden/golden.yaml")))
        meta = own_documents(tmp / "own")
        out.append({**run("examples/own-documents (part tagged)", tmp / "own"), **meta})
    head = "| corpus | restricted | personas | pairs probed | probes | leaks (retrieval/citations/answer) | s | ms per probe |"
    rows = [f"| {r['corpus']} | {r['restricted']} | {r['personas']} | {r['probed']}/{r['pairs']} ({r['coverage']:.0%}) | "
            f"{r['probes']} | {r['leaks']['retrieval']}/{r['leaks']['citations']}/{r['leaks']['answer']} | "
            f"{r['seconds']} | {r['ms_per_probe']} |" for r in out]
    md = ("## keel eval acl, extractive (no language model)\n\n" + head + "\n|---|---|---|---|---|---|---|---|\n"
          + "\n".join(rows) + "\n\nown-documents tagged: " + json.dumps(out[1]["tagged"])
          + f"; its ingest took {out[1]['ingest_s']} s (not counted above).\n")
    res = ROOT / "bench" / "results"
    (res / "acl-probes.json").write_text(json.dumps(out, indent=1) + "\n")
    (res / "acl-probes.md").write_text(md)
    print(md)

if __name__ == "__main__": main()
