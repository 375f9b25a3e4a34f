"""False refusals and false answers of the refusal gate on corpora of 1, 3 and 10 documents, with and without the
background prior of `keel.retrieval.answerability` (`prior=0` gives the features as they were before it).

Each draw takes k abstracts of PubMedQA's development half (../shared/data/pubmedqa-dev, see its SOURCE.md) at random
and ingests them, chunked as `keel ingest` chunks, into a fresh data directory with the packaged MiniLM model. The
drawn abstracts' own questions are answerable; questions of abstracts NOT drawn are off-corpus. Every question is
assessed once (the same passages for both feature sets) and scored under the shipped default calibration and its two
thresholds: answer, evidence (the closest passages quoted) or refusal. A false refusal is an answerable question
refused; a false answer is an off-corpus question answered.

The prior's constants were chosen while looking at the DESIGN draws (seeds 0-2); the HELD-OUT draws (seeds 100-129)
did not inform them. Run: `python bench/small_corpora.py` (about 4 minutes on two cores); writes
bench/results/small_corpora.json. Without the data set it says so and exits 0.
"""
from __future__ import annotations
import json, random, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "pubmedqa-dev" / "pqal_dev.json"
if not DATA.is_file(): DATA = Path("/work/shared/data/pubmedqa-dev/pqal_dev.json")
OUT = HERE / "results" / "small_corpora.json"
SIZES, OFF = (1, 3, 10), 10             # corpus sizes; off-corpus questions per draw
DESIGN, HELD_OUT = range(0, 3), range(100, 130)


def draw(items:dict, k:int, seed:int) -> tuple[list[str], list[str]]:
    "(the k drawn abstracts' ids, OFF ids of abstracts not drawn) for one seed."
    ids = sorted(items); rng = random.Random(f"{k}-{seed}")
    chosen = rng.sample(ids, k)
    return chosen, rng.sample([i for i in ids if i not in chosen], OFF)


def run_draw(items:dict, k:int, seed:int, emb, tmp:Path) -> list[dict]:
    "One corpus: each question's outcome with the features before (prior 0) and after (the shipped prior)."
    from keel.config import load_settings
    from keel.db import connect
    from keel.safety.ledger import Ledger
    from keel.safety.screen import screen
    from keel.providers.faiss import FaissIndex
    from keel.ingest.pipeline import Ingestor
    from keel.ingest.loaders import LoadedDocument, Page
    from keel.retrieval.retriever import Retriever
    from keel.retrieval.answerability import (Answerability, DEFAULT_CALIBRATION, features, gate_thresholds,
                                              Assessment, PRIOR_CHUNKS)
    import hashlib
    chosen, off = draw(items, k, seed)
    s = load_settings(env={}, dotenv=None, data_dir=tmp / f"k{k}-s{seed}")
    con = connect(s.db_path)
    ing = Ingestor(con, emb, FaissIndex(emb.dim), Ledger(con), screen, s)
    docs = [LoadedDocument(f"pubmedqa/{i}", "", "text", hashlib.sha256(i.encode()).hexdigest(),
                           [Page(None, " ".join(items[i]["CONTEXTS"]))]) for i in chosen]
    ing.ingest_documents(docs, ["public"], chunk=True, progress=False)
    gate = Answerability(Retriever(con, emb, ing.index, s), s, calibration=DEFAULT_CALIBRATION)
    th, ev = gate_thresholds(DEFAULT_CALIBRATION, s)
    rows = []
    for pid, label in [(i, 1) for i in chosen] + [(i, 0) for i in off]:
        q = items[pid]["QUESTION"]
        qvec = emb.embed_query(q)
        hits = gate.retriever.retrieve(q, ["public"], qvec=qvec)
        row = dict(k=k, seed=seed, pid=pid, label=label)
        for name, prior in (("before", 0), ("after", PRIOR_CHUNKS)):
            p = DEFAULT_CALIBRATION.probability(features(q, hits, gate.retriever.bm25_index(), qvec, gate.stats(), prior))
            row[name] = Assessment(p if hits else 0.0, th, {}, "", evidence_threshold=ev).kind
        rows.append(row)
    con.close()
    return rows


def summarise(rows:list[dict]) -> dict:
    "Per corpus size: the answerable and off-corpus questions' shares answered / evidence / refused, before and after."
    out = {}
    for k in SIZES:
        r = [x for x in rows if x["k"] == k]
        out[str(k)] = {when: {label: {kind: round(sum(x[when] == kind for x in r if x["label"] == y) /
                                                  max(1, sum(x["label"] == y for x in r)), 3)
                                      for kind in ("answer", "evidence", "refusal")} | {
                                          "n": sum(x["label"] == y for x in r)}
                              for label, y in (("answerable", 1), ("off_corpus", 0))}
                       for when in ("before", "after")}
        for when in ("before", "after"):
            s = out[str(k)][when]
            s["false_refusal"], s["false_answer"] = s["answerable"]["refusal"], s["off_corpus"]["answer"]
    return out


def main() -> int:
    if not DATA.is_file():
        print(f"PubMedQA dev not found ({DATA}); nothing measured"); return 0
    from keel.models import default_embedding_dir
    from keel.providers.fastembed import FastEmbedEmbeddings
    items, t0 = json.loads(DATA.read_text()), time.time()
    emb = FastEmbedEmbeddings(default_embedding_dir(HERE / ".cache" / "models"))
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for split, seeds in (("design", DESIGN), ("held_out", HELD_OUT)):
            rows = [r for k in SIZES for seed in seeds for r in run_draw(items, k, seed, emb, Path(tmp))]
            result[split] = dict(seeds=list(seeds), summary=summarise(rows), rows=rows)
            print(split, json.dumps(result[split]["summary"]))
    result["about"] = dict(data="PubMedQA PQA-L dev (500 abstracts), chunked as keel ingest does", off_per_draw=OFF,
                           calibration="shipped default, its answer and evidence thresholds",
                           design_seeds="seen while choosing the prior", held_out_seeds="not seen",
                           seconds=round(time.time() - t0))
    OUT.parent.mkdir(exist_ok=True); OUT.write_text(json.dumps(result, indent=1) + "\n")
    for k in SIZES:
        for when in ("before", "after"):
            s = result["held_out"]["summary"][str(k)][when]
            print(f"held-out, {k:>2} documents, {when:>6}: false refusals {s['false_refusal']:.0%} "
                  f"(evidence {s['answerable']['evidence']:.0%}), false answers {s['false_answer']:.0%} "
                  f"(evidence {s['off_corpus']['evidence']:.0%})")
    return 0


if __name__ == "__main__": sys.exit(main())
