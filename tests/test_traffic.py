"""Traffic back into the golden set, as an evaluation engineer uses it: `keel feedback`, `keel review-traffic` and
`keel monitor` over requests answered by the real engine (extractive mode: no language model) on the fixture corpus.

200 requests from several users, some off-corpus; three thumbs-down come first in the queue and the off-corpus
requests next; a promoted request is a golden item `keel eval run` runs; a reviewer without the asker's tags sees
none of their passages; a week with a planted day of off-corpus questions is flagged on that day alone.
"""
import json, random
from pathlib import Path
import pytest
from keel.config import load_settings
from keel.factory import build_context
from keel.evals.golden import load_golden
from keel.answer.types import User

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "golden" / "corpus" / "manifest.yaml"
ENV = {"KEEL_ANSWER_MODE": "extractive"}
OFF_CORPUS = ["What is the boiling point of tungsten?", "Who won the 1998 football world cup?",
              "How do I bake sourdough bread at home?", "What is the population of Reykjavik?",
              "Which planet has the most moons?"]
USERS = [User("ana", ("public",)), User("ben", ("public",)), User("hrina", ("hr", "public")), User("anon", None)]


def deployment(d:Path):
    "A data directory with the fixture corpus; its context, and (question, tags) of the golden items it answers."
    ctx = build_context(load_settings(env={}, dotenv=None, data_dir=d, answer_mode="extractive"))
    ctx.ingestor.ingest_manifest(MANIFEST, progress=False)
    pool = [(i.question, User("probe", i.user_tags)) for i in load_golden(ROOT / "golden" / "golden.yaml")
            if not i.expect_refusal]
    return ctx, [(q, u.tags) for q, u in pool if ctx.answer_engine.gated_hits(q, u)[1]]


def ordinary(rng, pool):
    "An answerable golden question and a user whose tags cover it."
    q, tags = rng.choice(pool)
    return q, rng.choice([u for u in USERS if set(tags) <= set(u.effective_tags)])


@pytest.fixture(scope="module")
def traffic(tmp_path_factory):
    "200 requests: 180 answerable golden questions from four users, 20 off-corpus ones."
    root = tmp_path_factory.mktemp("traffic")
    ctx, pool = deployment(root / "data")
    rng, asked = random.Random(0), []
    for n in range(200):
        off = n % 10 == 9
        q, u = (OFF_CORPUS[n // 10 % len(OFF_CORPUS)], rng.choice(USERS)) if off else ordinary(rng, pool)
        a = ctx.answer_engine.answer(q, u)
        asked.append(dict(request_id=a.request_id, off=off, kind=a.kind, user=u.name))
    ctx.close()
    return root, asked


def queue(keel_cmd, root, *args):
    r = keel_cmd("--data-dir", root / "data", "review-traffic", "--format", "json", *args, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_thumbs_down_first_then_off_corpus_and_promotion_runs(traffic, keel_cmd, tmp_path):
    root, asked = traffic
    assert len(asked) == 200 and all(a["kind"] != "answer" for a in asked if a["off"])
    downs = [a["request_id"] for a in asked if not a["off"] and a["kind"] == "answer" and a["user"] == "ana"][:3]
    for rid in downs:
        r = keel_cmd("--data-dir", root / "data", "feedback", rid, "down", "--user", "ana",
                     "--comment", "not what I asked", env=ENV)
        assert r.returncode == 0 and "ledger row" in r.stdout, r.stdout + r.stderr
    q = queue(keel_cmd, root, "--reviewer", "lead", "--tags", "public,hr", "--limit", "40")
    ids = [i["request_id"] for i in q["items"]]
    off = {a["request_id"] for a in asked if a["off"]}
    assert set(ids[:3]) == set(downs)
    assert set(ids[3:3 + len(off)]) == off
    assert all(i["reasons"][0] == "thumbs_down" for i in q["items"][:3])
    # the text form lists the same first request with its passages
    r = keel_cmd("--data-dir", root / "data", "review-traffic", "--reviewer", "lead", "--tags", "public,hr",
                 "--limit", "3", env=ENV)
    assert r.returncode == 0 and ids[0] in r.stdout.splitlines()[1] and "   [1] " in r.stdout
    # one thumbs-down answer and one off-corpus refusal become golden items that `keel eval run` runs
    golden = tmp_path / "from-traffic.yaml"
    refused = next(i for i in ids[3:] if next(a for a in asked if a["request_id"] == i)["kind"] == "refusal")
    r = keel_cmd("--data-dir", root / "data", "review-traffic", "--reviewer", "lead", "--tags", "public,hr",
                 "--promote", downs[0], "--promote", refused, "--golden", golden, env=ENV)
    assert r.returncode == 0 and r.stdout.count("promoted") == 2, r.stdout + r.stderr
    items = load_golden(golden)
    assert [i.expect_refusal for i in items] == [False, True] and items[0].expected_sources
    r = keel_cmd("--data-dir", root / "data", "eval", "run", golden, "--no-judge", "--quiet",
                 "--report-dir", tmp_path / "reports", "--baseline", tmp_path / "none.json", env=ENV)
    assert r.returncode in (0, 1) and "error" not in r.stderr.lower(), r.stdout + r.stderr
    report = json.loads((tmp_path / "reports" / "latest.json").read_text())
    assert len(report["items"]) == 2


def test_reviewer_without_the_askers_tags_sees_no_passages(traffic, keel_cmd, tmp_path):
    root, asked = traffic
    full = queue(keel_cmd, root, "--reviewer", "lead", "--tags", "public,hr", "--limit", "200")
    hr = [i["request_id"] for i in full["items"] if any("hr" in p["acl_tags"] and "public" not in p["acl_tags"]
                                                        for p in i["passages"])]
    assert hr, "some of hrina's requests retrieved the hr document"
    public = queue(keel_cmd, root, "--reviewer", "pat", "--limit", "200")       # no tags: public only
    assert public["hidden"] >= len(hr)
    assert not {i["request_id"] for i in public["items"]} & set(hr)
    assert all("hr" not in p["acl_tags"] for i in public["items"] for p in i["passages"])
    r = keel_cmd("--data-dir", root / "data", "review-traffic", "--reviewer", "pat", "--promote", hr[0],
                 "--golden", tmp_path / "g.yaml", env=ENV)
    assert r.returncode == 2 and "tags do not cover" in r.stderr and not (tmp_path / "g.yaml").exists()
    admin = queue(keel_cmd, root, "--reviewer", "pat", "--limit", "200", "--as-admin")
    assert admin["hidden"] == 0 and set(hr) <= {i["request_id"] for i in admin["items"]}
    r = keel_cmd("--data-dir", root / "data", "export-log", tmp_path / "ledger.jsonl", env=ENV)
    rows = [json.loads(x) for x in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert any(x["kind"] == "review_admin" and x["payload"]["by"] == "pat" for x in rows)


def test_monitor_flags_the_planted_day_only(tmp_path, keel_cmd):
    ctx, pool = deployment(tmp_path / "data")
    rng, days = random.Random(1), [f"2026-11-0{d}" for d in range(1, 8)]
    for d, day in enumerate(days):
        for n in range(30):
            off = d == 4 or rng.random() < 0.15
            q, u = (rng.choice(OFF_CORPUS), rng.choice(USERS)) if off else ordinary(rng, pool)
            a = ctx.answer_engine.answer(q, u)
            ctx.con.execute("UPDATE inference_log SET ts = ? WHERE request_id = ?", (f"{day}T{9 + n // 6:02d}:00:00.000Z",
                                                                                    a.request_id))
    ctx.con.commit(); ctx.close()
    r = keel_cmd("--data-dir", tmp_path / "data", "monitor", "--window", "7d", "--format", "json", env=ENV)
    assert r.returncode == 1, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert [f["date"] for f in out["drift"] if f["flagged"]] == [days[4]]
    day = next(x for x in out["days"] if x["date"] == days[4] and x["tags"] == "*")
    assert day["requests"] == 30 and day["answered_rate"] == 0
    assert out["total"]["requests"] == 210 and out["total"]["model_seconds"] == 0     # extractive: no model time
    r = keel_cmd("--data-dir", tmp_path / "data", "monitor", env=ENV)
    assert r.returncode == 1 and f"DRIFT {days[4]}" in r.stdout and "model seconds" in r.stdout


def test_ask_prints_the_request_id_that_feedback_takes(tmp_path, keel_cmd):
    ctx, pool = deployment(tmp_path / "data"); ctx.close()
    r = keel_cmd("--data-dir", tmp_path / "data", "ask", pool[0][0], "--user", "ana", "--tags", ",".join(pool[0][1]),
                 env=ENV)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stderr.splitlines() if x.startswith("request "))
    rid = line.split()[1]
    assert rid not in r.stdout and len(rid) == 32          # the answer on stdout stays as it was
    r = keel_cmd("--data-dir", tmp_path / "data", "feedback", rid, "down", "--user", "ana", "--comment", "wrong band",
                 env=ENV)
    assert r.returncode == 0, r.stderr
    keel_cmd("--data-dir", tmp_path / "data", "export-log", tmp_path / "ledger.jsonl", env=ENV)
    rows = [json.loads(x) for x in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert any(x["kind"] == "feedback" and x["request_id"] == rid and x["payload"]["verdict"] == "down" for x in rows)
