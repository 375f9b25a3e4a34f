"""Stale-fact probes on 50 scripted edits (bench/stale_edits.py) of the fixture corpus and examples/own-documents.

    .venv/bin/python bench/bench_stale.py [--out bench/results]

A knowledge base under git holds the documents as they were; the data directory ingests them; then the 50 edits are
written into the working tree. The probes `keel eval stale --base HEAD` makes are measured three ways, in extractive
answer mode by default (no language model, so the figures do not depend on one; `--answer-mode generative` for the
deployment's model, written to stale-probes-generative.*):

1. extraction: the changed facts found against the 50 real edits (recall), and the found facts that match no edit
   (spurious; precision);
2. the same probes asked (a) with the old chunks left in the index (the edited documents not re-ingested),
   (b) after the edited documents are re-ingested, the supplier note still stating the old quote count,
   (c) after the supplier note is corrected and re-ingested too: stale answers, how many have a named source,
   and which sources.

Writes stale-probes.json and stale-probes.md to the output folder.
"""
from __future__ import annotations
import argparse, copy, json, subprocess, sys, tempfile, time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from stale_edits import EDITS, SECOND_DOCUMENT, write_knowledge_base
from keel.config import load_settings
from keel.factory import build_context
from keel.evals.stale import base_changes, extract_facts, make_probe, ask, states, indexed_documents, OUTCOMES


def ingest(ctx, kb:Path):
    "The corpus through its manifest (titles, tags), the own documents one by one."
    ctx.ingestor.ingest_manifest(kb/"corpus"/"manifest.yaml", progress=False)
    for p in sorted((kb/"own").glob("*.txt")): ctx.ingestor.ingest_path(p)

def git(kb:Path, *a): subprocess.run(["git", "-C", str(kb), *a], check=True, capture_output=True)

def matches(fact, edit) -> bool:
    "A found fact is the edit's when it is in the same document and both values contain the edit's."
    doc, _, _, _, old, new = edit
    return fact.document == doc and states(old, fact.old) and states(new, fact.new)

def extraction(facts) -> dict:
    "Recall over the 50 edits, precision over the facts found, and what was missed or spurious."
    found = {i for i, e in enumerate(EDITS) if any(matches(f, e) for f in facts)}
    real = [f for f in facts if any(matches(f, e) for e in EDITS)]
    spurious = [dict(document=f.document, kind=f.kind, old=f.old, new=f.new) for f in facts if f not in real]
    kinds = Counter(e[3] for e in EDITS)
    shared = sum(1 for f in facts if sum(matches(f, e) for e in EDITS) > 1)
    return dict(edits=len(EDITS), facts_found=len(facts), edits_found=len(found),
                recall=round(len(found) / len(EDITS), 4),
                precision=round(len(real) / len(facts), 4) if facts else None, spurious=spurious,
                facts_covering_two_edits=shared,
                missed=[dict(document=e[0], kind=e[3], old=e[4], new=e[5])
                        for i, e in enumerate(EDITS) if i not in found],
                recall_by_kind={k: round(sum(1 for i in found if EDITS[i][3] == k) / n, 4) for k, n in kinds.items()},
                documents=len({f.document for f in facts}))

def measure(ctx, probes) -> dict:
    "Ask every probe again; outcomes, stale rate, stale answers with a named source, and the sources."
    done = [ask(ctx, copy.deepcopy(p)) for p in probes]
    stale = [p for p in done if p.outcome == "stale"]
    flagged = [p for p in stale if any(s["kind"] != "unexplained" for s in p.stale_from)]
    return dict(probes=len(done), **{o: sum(p.outcome == o for p in done) for o in OUTCOMES},
                stale_rate=round(len(stale) / len(done), 4), flagged=len(flagged),
                flagged_rate=round(len(flagged) / len(stale), 4) if stale else None,
                sources=dict(Counter(s["kind"] for p in stale for s in p.stale_from)),
                stale_documents_named=sorted({s["title"] for p in stale for s in p.stale_from
                                              if s["kind"] == "document"}),
                still_stated_elsewhere=sorted({x["title"] for p in done for x in p.still_stated_by
                                               if not x["same_document"]}),
                stale_items=[dict(document=p.fact.document, old=p.fact.old, new=p.fact.new,
                                  sources=[s.get("title") or s["kind"] for s in p.stale_from]) for p in stale])

def main(out:Path, mode:str="extractive"):
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="keel-stale-") as d:
        kb = write_knowledge_base(Path(d)/"kb", edited=False)
        git(kb, "init", "-q"); git(kb, "add", "."); git(kb, "-c", "user.name=bench", "-c", "user.email=b@example.org",
                                                     "commit", "-qm", "before")
        ctx = build_context(load_settings(env={}, dotenv=None, data_dir=Path(d)/"data", answer_mode=mode))
        try:
            ingest(ctx, kb)
            write_knowledge_base(kb, edited=True)
            changes, notes, _ = base_changes(kb, "HEAD")
            facts = [f for c in changes for f in extract_facts(c.path, c.old, c.new)]
            indexed = indexed_documents(ctx.con, kb)
            probes = [make_probe(ctx, f, kb, indexed) for f in facts]
            res = dict(extraction=extraction(facts), changed_documents=len(changes), notes=notes)
            res["old_chunks_left"] = measure(ctx, probes)
            ingest(ctx, kb)
            res["reingested"] = measure(ctx, probes)
            write_knowledge_base(kb, edited=True, second_document=True)
            ctx.ingestor.ingest_path(kb/SECOND_DOCUMENT[0], title="Supplier Note: Coastal Office Supplies",
                                     acl_tags=["public"])
            res["reingested_and_second_document_fixed"] = measure(ctx, probes)
        finally: ctx.close()
    res["setup"] = dict(answer_mode=mode, edits=len(EDITS), documents=31, seconds=round(time.time() - t0))
    out.mkdir(parents=True, exist_ok=True)
    stem = "stale-probes" + ("" if mode == "extractive" else f"-{mode}")
    (out/f"{stem}.json").write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n")
    (out/f"{stem}.md").write_text(markdown(res))
    print(markdown(res))

def markdown(r:dict) -> str:
    e = r["extraction"]
    L = ["# Stale-fact probes on 50 scripted edits", "",
         f"Fixture corpus and examples/own-documents, edits from bench/stale_edits.py, {r['setup']['answer_mode']} "
         f"answer mode; `python bench/bench_stale.py --answer-mode {r['setup']['answer_mode']}`.", "",
         f"Extraction: {e['facts_found']} facts found in {r['changed_documents']} changed documents; "
         f"{e['edits_found']} of {e['edits']} edits found (recall {e['recall']:.0%}); precision {e['precision']:.0%} "
         f"({len(e['spurious'])} spurious). {e['facts_covering_two_edits']} facts match two edits (one value changed "
         "in two sentences of one document, a table row and its prose, is one probe); the edited documents also carry "
         "6 rewordings that change no fact.", "", "Recall by kind: " + ", ".join(f"{k} {v:.0%}" for k, v in
                                                                              e["recall_by_kind"].items()), "",
         "| index state | probes | stale | updated | missed | refused | stale rate | stale with a named source |",
         "|---|---|---|---|---|---|---|---|"]
    for k, name in (("old_chunks_left", "old chunks left (not re-ingested)"),
                    ("reingested", "edited documents re-ingested"),
                    ("reingested_and_second_document_fixed", "... and the supplier note corrected")):
        m = r[k]
        L.append(f"| {name} | {m['probes']} | {m['stale']} | {m['updated']} | {m['missed']} | {m['refused']} | "
                 f"{m['stale_rate']:.0%} | " + ("-" if m["flagged_rate"] is None else
                                                f"{m['flagged']} of {m['stale']} ({m['flagged_rate']:.0%})") + " |")
    L += ["", "Sources of stale answers with the old chunks left: " + json.dumps(r["old_chunks_left"]["sources"]),
          "", "After re-ingesting the edited documents, stale answers come from: "
          + (", ".join(r["reingested"]["stale_documents_named"]) or "none")
          + "; documents still stating an old value: "
          + (", ".join(r["reingested"]["still_stated_elsewhere"]) or "none")
          + ".", ""]
    if e["spurious"]: L += ["Spurious facts:", ""] + [f"- {s['document']}: {s['old']!r} -> {s['new']!r} ({s['kind']})"
                                                    for s in e["spurious"]] + [""]
    if e["missed"]: L += ["Missed edits:", ""] + [f"- {s['document']}: {s['old']!r} -> {s['new']!r} ({s['kind']})"
                                                for s in e["missed"]] + [""]
    return "\n".join(L)

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE/"results")
    ap.add_argument("--answer-mode", choices=("extractive", "generative"), default="extractive",
                    help="generative: the default model answers (Gemma 3 270M unless the settings say otherwise)")
    a = ap.parse_args()
    main(a.out, a.answer_mode)
