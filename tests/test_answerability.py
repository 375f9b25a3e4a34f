"""The refusal gate end to end, as a user meets it: the fixture corpus ingested through the `keel` command with the
packaged models, questions asked through the real answer engine, `keel calibrate` and `keel status` run as commands.

Named by the issue: a question whose source document is masked (the way a permission filter masks it) is refused;
a calibration made for another corpus fingerprint is refused with a message to recalibrate; `keel calibrate` with
fewer than 20 usable items exits 2 naming the minimum."""
import re
import json
from pathlib import Path
import pytest, yaml
from keel.config import load_settings
from keel.factory import build_context
from keel.answer.types import User
from keel.answer.prompts import REFUSAL
from keel.retrieval.answerability import load_calibration, CalibrationError
from keel.db import fingerprint

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden" / "golden.yaml"
MANIFEST = ROOT / "golden" / "corpus" / "manifest.yaml"
EXTRACTIVE = {"KEEL_ANSWER_MODE": "extractive"}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("gate") / "data"
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=d, answer_mode="extractive"))
    ctx.ingestor.ingest_manifest(MANIFEST, progress=False)
    ctx.close()
    return d


def ctx_for(d):
    return build_context(load_settings(env={}, dotenv=None, data_dir=d, answer_mode="extractive"))


def test_masked_source_is_refused_visible_is_answered(data_dir):
    ctx = ctx_for(data_dir)
    try:
        q = "How long are the health records of adult patients kept?"
        clinic = [c for (c,) in ctx.con.execute(
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.title = 'Clinic Health Records Policy'")]
        hits, seen = ctx.answerability.assess(q, ["public"])
        masked_hits, masked = ctx.answerability.assess(q, ["public"], exclude=clinic)
        assert seen.answerable and any(h.chunk_id in clinic for h in hits), seen
        assert not masked.answerable and not {h.chunk_id for h in masked_hits} & set(clinic), masked
        # through the answer engine: the document a user may not see is masked by the permission filter itself
        a = ctx.answer_engine.answer("What is the salary range for Band 3?", User("pat", ["public"]))
        assert a.refused and a.text == REFUSAL and a.answerability is not None and a.answerability < 0.5
        assert all("hr" not in h.acl_tags for h in a.retrieved)       # a refusal still shows what retrieval found
        b = ctx.answer_engine.answer("What is the salary range for Band 3?", User("hana", ["hr"]))
        assert not b.refused and "92,000" in b.text
        row = json.loads(ctx.con.execute("SELECT payload FROM ledger WHERE kind='retrieval' AND request_id=?", (a.request_id,)).fetchone()[0])
        assert row["gate"] == "refuse" and set(row["features"]) >= {"cosine_z", "idf_coverage", "agreement"} and row["calibration"].startswith("default")
    finally:
        ctx.close()


def test_calibrate_too_few_items_exits_2_naming_the_minimum(data_dir, tmp_path, keel_cmd):
    raw = yaml.safe_load(GOLDEN.read_text())
    small = tmp_path / "small.yaml"
    small.write_text(yaml.safe_dump({"items": raw["items"][:10]}))
    r = keel_cmd("--data-dir", data_dir, "calibrate", small, env=EXTRACTIVE)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "at least 20" in r.stderr and "Traceback" not in r.stderr
    assert not (data_dir / "calibration.json").exists()


def test_calibrate_stores_reports_and_is_refused_for_another_corpus(data_dir, keel_cmd):
    r = keel_cmd("--data-dir", data_dir, "calibrate", GOLDEN, env=EXTRACTIVE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^calibrate: (\d+)/\1 \(100%\), [\d.]+ item/s, \S+ in all$", r.stderr, re.M), r.stderr
    for s in ("ROC AUC", "threshold", "false refusals", "false answers", "stored:"):
        assert s in r.stdout, r.stdout
    cal = json.loads((data_dir / "calibration.json").read_text())
    assert cal["source"] == "corpus" and cal["measured"]["n_items"] >= 20 and cal["measured"]["false_answer"] <= 0.10
    # what retrieval leaves the gate: the share of items whose sources were among the passages, said in the output
    found = cal["measured"]["ceiling"]["evidence_found"]
    assert 0 < found <= 1 and f"/{cal['measured']['n_items']} items" in r.stdout, r.stdout
    st = keel_cmd("--data-dir", data_dir, "status", env=EXTRACTIVE)
    assert "corpus calibration of" in st.stdout and "refused" not in st.stdout, st.stdout
    assert "Your own documents" not in st.stdout, st.stdout       # calibrated: no pointer to the guide
    # the corpus changes: the stored calibration no longer applies
    keel_cmd("--data-dir", data_dir, "ingest", ROOT / "golden" / "corpus" / "FACTS.md", env=EXTRACTIVE)
    ctx = ctx_for(data_dir)
    try:
        with pytest.raises(CalibrationError, match="recalibrate"):
            load_calibration(data_dir, ctx.embeddings.name, fingerprint(ctx.con))
        cal_now, note = ctx.answerability.calibration()
        assert cal_now.source == "default" and "refused" in note
    finally:
        ctx.close()
    st = keel_cmd("--data-dir", data_dir, "status", env=EXTRACTIVE)
    assert "stored calibration refused" in st.stdout and "keel calibrate" in st.stdout, st.stdout
    assert re.search(r"^  guide: .*\"Your own documents\" \(your_own_documents\.html", st.stdout, re.M), st.stdout
