"""Conversations as a user has them: `keel chat` over the fixture corpus answers a follow-up with the turns before it,
rates the last answer with /up, and a restricted follow-up or a tag removed between turns leaks nothing; `keel eval
conversations` writes a report two of which `keel eval compare` reads turn by turn, and its judge sees the history;
`keel eval run --conversations` asks them beside the golden set, and a leak in a turn fails its gate."""
import json, sqlite3
import pytest, yaml
from keel.providers.base import allowed
from pathlib import Path
from keel.config import load_settings
from keel.factory import build_context
from keel.answer.types import User
from keel.answer.conversation import Conversation
from keel.evals.conversations import load_conversations

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "golden" / "corpus" / "manifest.yaml"
ENV = {"KEEL_ANSWER_MODE": "extractive"}
SECRET = ("PELICAN-7741", "$108,000", "$128,000", "Band 4", "Band 5")


def deployment(d:Path):
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=d, answer_mode="extractive"))
    ctx.ingestor.ingest_manifest(MANIFEST, progress=False)
    return ctx


def test_keel_chat_answers_a_follow_up_with_the_history_and_rates_it(tmp_path, keel_cmd):
    deployment(tmp_path / "data").close()
    talk = "How many quotes are needed for a purchase between $10,000 and $100,000?\nAnd which form compares them?\n" \
           "/up helpful\n/sources\n/quit\n"
    r = keel_cmd("--data-dir", tmp_path / "data", "chat", "--user", "ana", "--tags", "public", "--format", "json",
                 input=talk, env=ENV)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert [x["conversation"]["turn"] for x in rows] == [1, 2]
    second = rows[1]
    assert second["conversation"]["rewrite"] == "carry" and "quotes" in second["conversation"]["standalone"]
    assert not second["refused"] and second["citations"], second
    assert second["citations"][0]["title"] == "Procurement Policy"
    assert "feedback up on " + second["request_id"] in r.stdout
    keel_cmd("--data-dir", tmp_path / "data", "export-log", tmp_path / "ledger.jsonl", env=ENV)
    led = [json.loads(x) for x in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    fb = [x for x in led if x["kind"] == "feedback"]
    assert len(fb) == 1 and fb[0]["request_id"] == second["request_id"] and fb[0]["payload"]["verdict"] == "up"
    req = [x for x in led if x["kind"] == "request" and x["request_id"] == second["request_id"]][0]
    assert req["payload"]["conversation"]["turn"] == 2 and req["payload"]["conversation"]["id"]


def test_the_same_follow_up_without_history_does_not_find_the_form(tmp_path):
    ctx = deployment(tmp_path / "data")
    c = Conversation(ctx.answer_engine, User("ana", ("public",)), rewrite="none")
    c.ask("How many quotes are needed for a purchase between $10,000 and $100,000?")
    a = c.ask("And which form compares them?")
    assert a.conversation["standalone"] == "And which form compares them?"
    ctx.close()


def test_restricted_follow_up_is_refused_and_a_removed_tag_takes_effect_next_turn(tmp_path):
    ctx = deployment(tmp_path / "data")
    pub = Conversation(ctx.answer_engine, User("pat", ("public",)))
    pub.ask("Who must approve a purchase worth $120,000?")
    a = pub.ask("And what salary band is a team lead in, and its range?")
    assert all("hr" not in h.acl_tags for h in a.retrieved)
    assert not any(s in a.text for s in SECRET)
    hr = Conversation(ctx.answer_engine, User("hana", ("hr", "public")))
    a1 = hr.ask("What is the salary range for Band 4 team leads?")
    assert any("hr" in h.acl_tags for h in a1.retrieved) and not a1.refused
    hr.user = User("hana", ("public",))          # the hr tag removed between turns
    a2 = hr.ask("And Band 5?")
    assert all("hr" not in h.acl_tags for h in a2.retrieved)
    assert not any(s in a2.text for s in SECRET)
    assert "Salary Bands" not in a2.conversation["standalone"]
    ctx.close()


def test_keel_eval_conversations_scores_every_turn_without_leaks(tmp_path, keel_cmd):
    deployment(tmp_path / "data").close()
    r = keel_cmd("--data-dir", tmp_path / "data", "eval", "conversations", ROOT / "golden" / "conversations.yaml",
                 "--split", "heldout", "--rewrite", "carry", "--json", "--report-dir", tmp_path / "r", env=ENV)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out["by_position"]) == {"turn 1", "turn 2", "turn 3+"}
    assert all(v["leaks"] == 0 for v in out["by_position"].values())
    held = [c for c in load_conversations(ROOT / "golden" / "conversations.yaml") if c.split == "heldout"]
    assert [c["id"] for c in out["results"]] == [c.id for c in held] and len(held) >= 16
    assert json.loads((tmp_path / "r" / "latest-conversations.json").read_text())["stamp"] == out["stamp"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("conversations:\n- id: x\n  turns:\n  - {question: 'q', expected_answer: a, expected_source: [P]}\n"
                   "  - {question: 'r', expected_answer: b, expect_refusal: true}\n")
    r = keel_cmd("--data-dir", tmp_path / "data", "eval", "conversations", bad, "--report-dir", tmp_path / "bad",
                 env=ENV)
    assert r.returncode == 2 and "unknown field expected_source" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "bad").exists()


def test_two_conversation_runs_compare_turn_by_turn(tmp_path, keel_cmd):
    deployment(tmp_path / "data").close()
    for rw in ("carry", "none"):
        r = keel_cmd("--data-dir", tmp_path / "data", "eval", "conversations", ROOT / "golden" / "conversations.yaml",
                     "--split", "heldout", "--rewrite", rw, "--report-dir", tmp_path / rw, env=ENV)
        assert r.returncode == 0 and f"report: {tmp_path / rw}" in r.stdout, r.stderr
    a, b = (tmp_path / rw / "latest-conversations.json" for rw in ("carry", "none"))
    r = keel_cmd("eval", "compare", a, b, "--json", tmp_path / "cmp.json")
    c = json.loads((tmp_path / "cmp.json").read_text())
    assert r.returncode == (1 if c["worse"] else 0), r.stderr
    turns = sum(len(x.turns) for x in load_conversations(ROOT / "golden" / "conversations.yaml") if x.split == "heldout")
    assert c["compared"] == "keel-eval-conversations" and c["n"] == turns and not c["only_a"] and not c["only_b"]
    assert [(d["a"], d["b"]) for d in c["config"] if d["field"] == "rewrite"] == [("carry", "none")]
    flipped = [(it["item"], it["groups"]["position"]) for it in c["items"]]
    assert flipped, "ignoring the history changes no follow-up"
    assert all(pos != "turn 1" and not item.endswith("/1") for item, pos in flipped), flipped   # turn 1 has no history
    assert "position turn 2" in r.stdout and "keel eval compare: two `keel eval conversations` reports" in r.stdout
    r = keel_cmd("eval", "compare", a, a)
    assert r.returncode == 0 and "overall: no difference" in r.stdout, r.stderr


@pytest.mark.slow
def test_the_bundled_model_rewrites_a_follow_up_or_the_carry_takes_over(tmp_path):
    ctx = deployment(tmp_path / "data")
    c = Conversation(ctx.answer_engine, User("ana", ("public",)), rewrite="model")
    c.ask("How long are adult health records kept after the last visit?")
    a = c.ask("And is it the same for patients under 18?")   # "it": always rewritten, never kept as asked
    conv = a.conversation
    assert conv["rewrite"] in ("model", "carry") and conv["standalone"].strip()
    if conv["rewrite"] == "model": assert conv["standalone"] != "And is it the same for patients under 18?"
    else: assert "adult health records" in conv["standalone"]   # the carry names the topic
    assert all(allowed(h.acl_tags, ("public",)) for h in a.retrieved)
    ctx.close()


@pytest.mark.slow
def test_the_judge_grades_a_follow_up_with_the_turns_before_it(tmp_path, keel_cmd):
    deployment(tmp_path / "data").close()
    conv = dict(id="quotes", user_tags=["public"], split="heldout", turns=[
        dict(question="How many quotes are needed for a purchase between $10,000 and $100,000?",
             expected_answer="Three written quotes.", expected_sources=["Procurement Policy"]),
        dict(question="And which form compares them?", expected_answer="The quote comparison form PR-02.",
             expected_sources=["Procurement Policy"])])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(dict(conversations=[conv])))
    r = keel_cmd("--data-dir", tmp_path / "data", "eval", "conversations", tmp_path / "c.yaml", "--judge", "--rewrite",
                 "carry", "--report-dir", tmp_path / "r", "--json", env=ENV)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["judge"]["on"] and rep["judge"]["judges"]
    for t in rep["items"]:
        if t["kind"] == "answer":
            assert t["judge_error"] or all(0 <= t[m] <= 1 for m in ("groundedness", "relevance", "correctness")), t
        else: assert t["groundedness"] is None
    with sqlite3.connect(tmp_path / "data" / "llm-cache.db") as con:
        prompts = [json.loads(q)["prompt"] for (q,) in con.execute("SELECT request FROM calls")]
    graded = [p if isinstance(p, str) else json.dumps(p) for p in prompts if "ANSWER UNDER REVIEW" in str(p)]
    first, follow = conv["turns"][0]["question"], conv["turns"][1]["question"]
    answered = [t["turn"] for t in rep["items"] if t["kind"] == "answer"]
    assert answered, "no turn was answered, so none was judged"
    if 1 in answered: assert any(first in p and "EARLIER TURNS" not in p for p in graded), graded
    if 2 in answered:
        assert any(f"[turn 1] QUESTION: {first}" in p and f"QUESTION (turn 2, the one graded): {follow}" in p
                   for p in graded), graded


def test_keel_eval_run_scores_the_conversations_beside_the_golden_set(tmp_path, keel_cmd):
    deployment(tmp_path / "data").close()
    g = tmp_path / "g"
    g.mkdir()
    (g / "golden.yaml").write_text((ROOT / "golden" / "golden.yaml").read_text())
    (g / "conversations.yaml").write_text((ROOT / "golden" / "conversations.yaml").read_text())
    run = lambda *a: keel_cmd("--data-dir", tmp_path / "data", "eval", "run", g / "golden.yaml", "--no-judge",
                              "--quiet", *a, env=ENV)
    r = run("--conversations", "--report-dir", tmp_path / "r")
    assert r.returncode == 0, r.stderr
    p = json.loads((tmp_path / "r" / "latest-run.json").read_text())
    c = p["conversations"]
    n = len(load_conversations(ROOT / "golden" / "conversations.yaml"))
    assert len(c["results"]) == n and c["leaks"] == 0 and set(c["by_position"]) == {"turn 1", "turn 2", "turn 3+"}
    own = json.loads((tmp_path / "r" / f"conversations-{c['stamp']}.json").read_text())   # the turn-by-turn report
    assert own["by_position"] == c["by_position"]
    assert len(own["items"]) == sum(v["turns"] for v in c["by_position"].values())
    assert p["gate"]["passed"] and f"conversations: turn 1: turns {n}" in r.stdout
    assert "<h2>Conversations</h2>" in (tmp_path / "r" / "latest.html").read_text()
    # a turn whose forbidden string the answer holds is a leak, and a leak in a turn fails the run's gate
    (g / "leaky.yaml").write_text(yaml.safe_dump(dict(conversations=[dict(id="leaky", user_tags=["public"], turns=[
        dict(question="How many quotes are needed for a purchase between $10,000 and $100,000?",
             expected_answer="Three.", expected_sources=["Procurement Policy"]),
        dict(question="Which form are they compared on?", expected_answer="Must refuse.", expect_refusal=True,
             category="restricted", must_not_include=["quotes"])])])))
    r = run("--conversations", g / "leaky.yaml", "--report-dir", tmp_path / "r2")
    assert r.returncode == 1 and "regression: conversations.leaks is 1: zero are tolerated" in r.stdout, r.stdout
    assert json.loads((tmp_path / "r2" / "latest-run.json").read_text())["conversations"]["leaks"] == 1
    (g / "bad.yaml").write_text("conversations:\n- id: x\n  turns:\n  - {question: q, expected_answer: a}\n")
    r = run("--conversations", g / "bad.yaml", "--report-dir", tmp_path / "r3")
    assert r.returncode == 2 and "needs at least two turns" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "r3").exists()                                    # refused before anything was asked
