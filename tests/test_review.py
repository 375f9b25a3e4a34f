"""End-to-end tests of the change review, the answer-command protocol and claim replay.

A small git repository of documents is built in a temporary directory with several commits: an
edit that fixes a case, one that breaks a case, one that touches a document no case covers, plus an
untracked file. The review runs through real ingestion, retrieval and answering (extractive mode, no
model), in fresh temporary data directories.
"""
import json, subprocess, sys, textwrap
from pathlib import Path
import pytest
import jsonschema
from keel.config import load_settings
from keel.errors import InputError
from keel.evals.review import review, load_review_dataset
from keel.evals.claims import replay_claims
from keel.factory import build_context

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = [sys.executable, str(ROOT/"examples"/"answer_command.py")]

def validate(obj, name):
    "Validate `obj` against schemas/<name>.schema.json."
    schema = json.loads((ROOT/"schemas"/f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(obj)

def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()

def commit(repo:Path, files:dict, msg:str) -> str:
    "Write `files` (path -> text), commit them, return the commit id."
    for k, v in files.items():
        p = repo/k; p.parent.mkdir(parents=True, exist_ok=True); p.write_text(v)
    git(repo, "add", "-A"); git(repo, "commit", "-qm", msg)
    return git(repo, "rev-parse", "HEAD")

CLINIC = """# Clinic Records Policy

## Breach handling

A suspected data breach must be reported to the privacy officer within {deadline} of discovery.

## Records retention

Adult patient records are kept for seven years after the last visit.
"""
PROCUREMENT = """# Procurement Policy

## Quotes

Purchases above $10,000 need {quotes} from different suppliers.

## Approvals

Purchases above $50,000 must be approved by the finance director.
"""
DATASET = """
type: review
version: 1
id: acceptance
defaults: {budget: 1, limit: 2000}
cases:
  - id: breach-deadline
    question: How quickly must a suspected data breach be reported to the privacy officer?
    expected_sources: ["clinic.md#Breach handling"]
    evidence_contains: ["72 hours"]
  - id: quotes-threshold
    question: How many written quotes are needed for purchases above $10,000?
    expected_sources: ["procurement.md#Quotes"]
    evidence_contains: ["three written quotes"]
  - id: records-retention
    question: How long are adult patient records kept after the last visit?
    expected_sources: ["clinic.md#Records retention"]
    evidence_contains: ["seven years"]
  - id: approval
    question: Who must approve purchases above $50,000?
    expected_sources: ["procurement.md#Approvals"]
    evidence_contains: ["chief executive"]
"""

@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    "A repository whose kb/ folder went through four commits, plus an untracked file on disk."
    r = tmp_path_factory.mktemp("repo")
    git(r, "init", "-q", "-b", "main"); git(r, "config", "user.name", "Keel"); git(r, "config", "user.email", "keel@example.org")
    c = {}
    c["base"] = commit(r, {"kb/clinic.md": CLINIC.format(deadline="five days"),
                           "kb/procurement.md": PROCUREMENT.format(quotes="three written quotes"),
                           "kb/parking.md": "# Parking\n\nVisitor parking is on level 1 of the car park.\n",
                           "review.yaml": textwrap.dedent(DATASET), "README.md": "Policies.\n"}, "base")
    c["fix"] = commit(r, {"kb/clinic.md": CLINIC.format(deadline="72 hours")}, "fix the breach deadline")
    c["break"] = commit(r, {"kb/procurement.md": PROCUREMENT.format(quotes="one written quote")}, "relax the quote rule")
    c["parking"] = commit(r, {"kb/parking.md": "# Parking\n\nVisitor parking is on level 1. Staff park on level 3.\n"}, "parking levels")
    (r/"kb"/"canteen.md").write_text("# Canteen\n\nThe canteen opens at eight in the morning.\n")
    return r, c

@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    "Deterministic, model-free settings (extractive answers) over a temporary data directory."
    return load_settings(env={}, dotenv=None, data_dir=tmp_path_factory.mktemp("data"), airgap=True, answer_mode="extractive")

@pytest.fixture(scope="module")
def reviewed(repo, settings):
    "The working tree reviewed against the base commit, gating on regressions."
    r, c = repo
    return review(r/"review.yaml", r/"kb", base=c["base"], gate="regressions", make_ctx=caller(settings))

def caller(settings):
    "The `make_ctx` a command would pass: builds the caller's context once, on demand."
    box = []
    return lambda: box[0] if box else box.append(build_context(settings)) or box[0]

def by_id(res): return {x.id: x for x in res.cases}

# ---------------------------------------------------------------- base comparison and impact

def test_classifications(reviewed):
    got = {k: v.classification for k, v in by_id(reviewed).items()}
    assert got == {"breach-deadline": "improved", "quotes-threshold": "regressed",
                   "records-retention": "unchanged_pass", "approval": "unchanged_fail"}
    assert not reviewed.passed and reviewed.exit_code == 1
    assert reviewed.reason == "1 case(s) regressed: quotes-threshold"
    s = reviewed.summary()
    assert (s["improved"], s["regressed"], s["unchanged_pass"], s["unchanged_fail"]) == (1, 1, 1, 1)

def test_failures_name_the_check(reviewed):
    cases = by_id(reviewed)
    assert cases["quotes-threshold"].failures == ["evidence_contains: 'three written quotes' is not in the retrieved text"]
    assert cases["breach-deadline"].base_failures == ["evidence_contains: '72 hours' is not in the retrieved text"]
    assert cases["breach-deadline"].failures == []

def test_impact_reasons(reviewed):
    cases = by_id(reviewed)
    for cid, path in (("breach-deadline", "clinic.md"), ("quotes-threshold", "procurement.md")):
        c = cases[cid]
        assert {"source_changed", "retrieval_changed", "outcome_changed"} <= set(c.reasons), (cid, c.reasons)
        assert path in c.changed_sources
        assert c.work.retrieved[0].path == path and c.base.retrieved[0].text != c.work.retrieved[0].text
    breach = cases["breach-deadline"]        # Keel's extractive engine: every sentence cites a passage it was shown
    assert "answer_changed" in breach.reasons and "72 hours" in breach.work.answer and "five days" in breach.base.answer
    assert breach.work.groundedness == 1.0 and breach.work.citations[0].startswith("clinic.md#Breach handling")
    rr = cases["records-retention"]   # its file changed, its own passage and outcome did not
    assert "source_changed" in rr.reasons and "retrieval_changed" not in rr.reasons and "outcome_changed" not in rr.reasons
    assert rr.changed_sources == ["clinic.md"]

def test_changed_and_uncovered_paths(reviewed):
    assert reviewed.changed_paths == ["canteen.md", "clinic.md", "parking.md", "procurement.md"]
    assert reviewed.uncovered == ["canteen.md", "parking.md"]

def test_base_extracted_without_touching_the_checkout(repo, reviewed):
    r, c = repo
    assert git(r, "rev-parse", "HEAD") == c["parking"]
    assert git(r, "status", "--porcelain") == "?? kb/canteen.md"
    assert "72 hours" in (r/"kb"/"clinic.md").read_text()
    assert reviewed.working == dict(commit=c["parking"], dirty=True)
    assert reviewed.base == dict(ref=c["base"], commit=c["base"])

def test_reports(reviewed, tmp_path):
    reviewed.write_files(tmp_path/"r.json", tmp_path/"r.md")
    data = json.loads((tmp_path/"r.json").read_text())
    validate(data, "review-report")
    assert data["gate"] == dict(mode="regressions", passed=False, reason="1 case(s) regressed: quotes-threshold")
    assert data["uncovered"] == ["canteen.md", "parking.md"]
    md = (tmp_path/"r.md").read_text()
    for s in ("Gate `regressions`: ❌ failed", "| quotes-threshold | regressed |", "| breach-deadline | improved |",
              "### Affected questions", "### Uncovered changed paths", "- `parking.md`", "- `canteen.md`"):
        assert s in md, s

@pytest.fixture
def made_dirs(monkeypatch):
    "Record the temporary directories the review creates."
    import tempfile
    made, real = [], tempfile.mkdtemp
    def mkdtemp(*a, **kw):
        d = real(*a, **kw); made.append(Path(d)); return d
    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    return made

def test_temporary_data_directories_are_removed(repo, settings, made_dirs):
    r, c = repo
    review(r/"review.yaml", r/"kb", base=c["fix"], make_ctx=caller(settings))
    ours = [d for d in made_dirs if d.name.startswith("keel-review")]
    assert len(ours) == 3                      # working data, base tree, base data
    assert not any(d.exists() for d in ours)

def test_temporary_directories_removed_on_error(repo, settings, made_dirs, tmp_path):
    r, c = repo
    crash = tmp_path/"crash.py"; crash.write_text("import sys; sys.exit(7)")
    with pytest.raises(InputError, match="exited with status 7"):
        review(r/"review.yaml", r/"kb", base=c["fix"], make_ctx=caller(settings), answer_command=[sys.executable, str(crash)])
    ours = [d for d in made_dirs if d.name.startswith("keel-review")]
    assert len(ours) == 1 and not ours[0].exists()   # the working revision failed before the base was unpacked

# ---------------------------------------------------------------- the keel command and exit codes

def keel_env(settings): return {"KEEL_DATA_DIR": str(settings.data_dir), "KEEL_ANSWER_MODE": "extractive", "KEEL_AIRGAP": "true"}

def test_cli_exit_codes(keel_cmd, repo, settings, tmp_path):
    r, c = repo
    env = keel_env(settings)
    p = keel_cmd("eval", "review", r/"review.yaml", r/"kb", "--base", c["base"], "--gate", "regressions",
                 "--json", tmp_path/"r.json", "--markdown", tmp_path/"r.md", env=env)
    assert p.returncode == 1, p.stderr
    validate(json.loads((tmp_path/"r.json").read_text()), "review-report")
    p = keel_cmd("eval", "review", r/"review.yaml", r/"kb", "--base", c["break"], "--gate", "regressions", env=env)
    assert p.returncode == 0, p.stdout + p.stderr          # only parking.md and an untracked file changed since
    assert "no case regressed" in p.stdout and "- `parking.md`" in p.stdout
    p = keel_cmd("eval", "review", r/"review.yaml", r/"kb", "--gate", "all", env=env)
    assert p.returncode == 1 and "2 case(s) fail in the working revision: quotes-threshold, approval" in p.stdout
    p = keel_cmd("eval", "review", r/"review.yaml", r/"kb", "--gate", "regressions", env=env)
    assert p.returncode == 2 and "--gate regressions needs --base" in p.stderr
    p = keel_cmd("eval", "review", r/"review.yaml", r/"kb", "--base", "no-such-branch", env=env)
    assert p.returncode == 2 and "'no-such-branch' is not a commit" in p.stderr

def test_invalid_dataset_exit_2(keel_cmd, repo, settings, tmp_path):
    r, _ = repo
    bad = tmp_path/"bad.yaml"
    bad.write_text("type: review\nversion: 1\nid: x\ncases:\n  - id: q1\n    question: Why?\n    min_citations: many\n")
    p = keel_cmd("eval", "review", bad, r/"kb", env=keel_env(settings))
    assert p.returncode == 2 and "case q1: field min_citations: 'many' is not an integer" in p.stderr
    assert "Traceback" not in p.stderr

def test_dataset_validation_names_case_and_field(tmp_path):
    p = tmp_path/"d.yaml"
    for body, msg in [("  - {id: a, question: Why}\n", "case a: field expectations are missing"),
                      ("  - {id: a, question: Why, answer_decision: perhaps}\n", "case a: field answer_decision must be answer, abstain or evidence"),
                      ("  - {id: a, question: Why, min_groundedness: 1.5}\n", "case a: field min_groundedness: 1.5 is not in 0..1"),
                      ("  - {id: a, question: Why, evidence_contain: x}\n", "case a: field evidence_contain is unknown"),
                      ("  - {id: a, question: Why, budget: 0, min_sources: 1}\n", "case a: field budget: 0 is not an integer in 1..")]:
        p.write_text("type: review\nversion: 1\nid: d\ncases:\n" + body)
        with pytest.raises(InputError, match=msg): load_review_dataset(p)

# ---------------------------------------------------------------- the answer-command protocol

def script(tmp_path, name, body) -> list[str]:
    p = tmp_path/name; p.write_text(textwrap.dedent(body)); return [sys.executable, str(p)]

def test_example_answer_command(repo, settings, tmp_path):
    r, c = repo
    log = tmp_path/"requests.jsonl"
    tee = script(tmp_path, "tee.py", f"""
        import subprocess, sys
        data = sys.stdin.read()
        open({str(log)!r}, "a").write(data.replace("\\n", " ") + "\\n")
        out = subprocess.run({EXAMPLE!r}, input=data, capture_output=True, text=True)
        sys.stderr.write(out.stderr); sys.stdout.write(out.stdout); sys.exit(out.returncode)
    """)
    res = review(r/"review.yaml", r/"kb", base=c["base"], gate="regressions", make_ctx=caller(settings), answer_command=tee)
    requests = [json.loads(l) for l in log.read_text().splitlines()]
    assert len(requests) == 2 and {q["revision"] for q in requests} == {"working-tree", c["base"]}
    for q in requests:
        validate(q, "answer-request")
        assert [x["id"] for x in q["cases"]] == ["breach-deadline", "quotes-threshold", "records-retention", "approval"]
        assert all(len(x["sources"]) == 1 for x in q["cases"])        # budget 1
    cases = by_id(res)
    breach = cases["breach-deadline"].work
    assert breach.decision == "answer" and "72 hours" in breach.answer
    assert breach.citations == ["clinic.md#Breach handling"] and breach.groundedness == 1.0 and breach.invalid_citations == []
    assert "five days" in cases["breach-deadline"].base.answer
    assert "answer_changed" in cases["breach-deadline"].reasons
    assert cases["quotes-threshold"].classification == "regressed"
    validate(res.to_dict(), "review-report")

@pytest.mark.parametrize("flags", [[], ["--plain"]])
def test_example_command_response_matches_schema(tmp_path, flags):
    req = {"schema_version": 1, "dataset": {"id": "d", "digest": "sha256:" + "0" * 64}, "revision": "working-tree",
           "cases": [{"id": "q1", "question": "Who approves large purchases?", "sources": [
                        {"locator": "p.md#Approvals", "text": "Large purchases are approved by the finance director.",
                         "digest": "sha256:" + "1" * 64, "title": "P", "heading": "Approvals"}]},
                     {"id": "q2", "question": "What is the capital of Peru?", "sources": []}]}
    validate(req, "answer-request")
    out = subprocess.run(EXAMPLE + flags, input=json.dumps(req), capture_output=True, text=True, check=True)
    resp = json.loads(out.stdout)
    validate(resp, "answer-response")
    assert resp["answers"][0]["claims"][0]["citations"] == ["p.md#Approvals"]
    assert resp["answers"][1]["decision"] == "abstain"

def test_invalid_citations_do_not_count(repo, settings, tmp_path):
    r, _ = repo
    liar = script(tmp_path, "liar.py", """
        import json, sys
        req = json.load(sys.stdin)
        print(json.dumps({"schema_version": 1, "answers": [
            {"id": c["id"], "decision": "answer", "answer": "Seventy-two hours.",
             "claims": [{"text": "Seventy-two hours.", "citations": ["made-up.md#Nowhere"]}]} for c in req["cases"]]}))
    """)
    res = review(r/"review.yaml", r/"kb", make_ctx=caller(settings), answer_command=liar)
    w = by_id(res)["breach-deadline"].work
    assert w.citations == [] and w.invalid_citations == ["made-up.md#Nowhere"] and w.groundedness == 0.0

@pytest.mark.parametrize("name,body,extra,message", [
    ("badjson.py", "print('this is not json')", [], "did not print valid JSON"),
    ("missing.py", """
        import json, sys
        req = json.load(sys.stdin)
        print(json.dumps({"schema_version": 1, "answers": [
            {"id": c["id"], "decision": "abstain", "answer": "", "claims": []} for c in req["cases"][1:]]}))
     """, [], "no answer for case(s) breach-deadline"),
    ("extra.py", """
        import json, sys
        req = json.load(sys.stdin)
        print(json.dumps({"schema_version": 1, "answers": [
            {"id": c, "decision": "abstain", "answer": "", "claims": []} for c in [x["id"] for x in req["cases"]] + ["bonus"]]}))
     """, [], "'bonus', which is not a case of the request"),
    ("hang.py", "import time; time.sleep(60)", ["--answer-timeout", "2"], "did not finish within 2 s"),
    ("crash.py", "import sys; sys.stderr.write('model server unreachable'); sys.exit(3)", [], "exited with status 3: model server unreachable"),
    ("flood.py", "import sys; sys.stdout.write('x' * 11_000_000)", [], "wrote more than 10,000,000 bytes"),
])
def test_broken_answer_commands(keel_cmd, repo, settings, tmp_path, name, body, extra, message):
    r, _ = repo
    cmd = script(tmp_path, name, body)
    p = keel_cmd("eval", "review", r/"review.yaml", r/"kb", *extra, "--answer-command", *cmd, env=keel_env(settings))
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert message in p.stderr and "Traceback" not in p.stderr

# ---------------------------------------------------------------- claim replay

CLAIMS = """
type: claims
version: 1
id: acceptance-claims
checkpoints: [{base}, {fix}, {brk}, {parking}]
claims:
  - id: quotes-three
    type: number
    text: Purchases above $10,000 need three written quotes.
    evidence: [{{path: procurement.md, section: Quotes, contains: three written quotes}}]
    checkpoints: {{{base}: supported, {fix}: supported, {brk}: refuted, {parking}: refuted}}
  - id: breach-72h
    type: procedure
    text: A suspected breach is reported within 72 hours.
    evidence: [{{path: clinic.md, section: Breach handling, contains: 72 hours}}]
    checkpoints: {{{base}: refuted, {fix}: supported, {brk}: supported, {parking}: supported}}
  - id: breach-five-days
    type: procedure
    text: A suspected breach is reported within five days.
    evidence: [{{path: clinic.md, contains: five days}}]
    checkpoints: {{{base}: supported, {parking}: refuted}}
  - id: visitor-parking
    type: fact
    text: Visitors park on level 1 and staff do not share it.
    evidence:
      - {{path: parking.md, contains: Visitor parking is on level 1}}
      - {{path: parking.md, excludes: staff park on level 1}}
    checkpoints: {{{base}: supported, {fix}: supported, {brk}: supported, {parking}: supported}}
  - id: canteen-hours
    type: fact
    text: The canteen opens at eight.
    evidence: [{{path: canteen.md, contains: eight in the morning}}]
    checkpoints: {{{parking}: supported}}
"""

def test_claim_replay(repo, tmp_path, keel_cmd):
    r, c = repo
    ds = tmp_path/"claims.yaml"
    ds.write_text(CLAIMS.format(base=c["base"], fix=c["fix"], brk=c["break"], parking=c["parking"]))
    res = replay_claims(ds, r/"kb")
    got = {x.claim.id: [s.status for s in x.steps] for x in res.claims}
    assert got == {"quotes-three": ["supported", "supported", "stale", "stale"],
                   "breach-72h": ["hallucinated", "supported", "supported", "supported"],
                   "breach-five-days": ["supported", "unverified", "unverified", "stale"],
                   "visitor-parking": ["supported"] * 4,
                   "canteen-hours": ["unverified"] * 4}       # untracked on disk, absent from every commit
    assert res.counts() == dict(supported=2, stale=2, hallucinated=0, unverified=1)
    assert res.mismatched == [("canteen-hours", c["parking"])]
    data = res.to_dict(); validate(data, "claims-report")
    env = {}
    p = keel_cmd("eval", "claims", ds, r/"kb", "--json", tmp_path/"c.json", env=env)
    assert p.returncode == 1 and "2 stale claim(s), at most 0 allowed" in p.stdout
    validate(json.loads((tmp_path/"c.json").read_text()), "claims-report")
    p = keel_cmd("eval", "claims", ds, r/"kb", "--max-stale", "2", "--max-unverified", "1", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    p = keel_cmd("eval", "claims", tmp_path/"missing.yaml", r/"kb", env=env)
    assert p.returncode == 2 and "does not exist" in p.stderr

def test_example_datasets_load(tmp_path):
    ds = load_review_dataset(ROOT/"golden"/"review"/"review.yaml")
    assert len(ds.cases) >= 5 and ds.knowledge_base == ROOT/"golden"/"review"/"kb"
    from keel.evals.claims import load_claims
    assert load_claims(ROOT/"golden"/"review"/"claims.yaml").checkpoints == ["HEAD"]

# ---------------------------------------------------------------- the generative default model

@pytest.mark.slow
def test_review_with_generative_model(repo, tmp_path):
    r, c = repo
    s = load_settings(env={}, dotenv=None, data_dir=tmp_path/"data", airgap=True)
    assert s.answer_mode == "generative"
    res = review(r/"review.yaml", r/"kb", base=c["parking"], gate="regressions", make_ctx=caller(s))
    validate(res.to_dict(), "review-report")
    for x in res.cases:
        for o in (x.work, x.base):
            assert o.decision in ("answer", "abstain", "evidence")
            assert o.groundedness is None or 0 <= o.groundedness <= 1
            assert all(l.startswith(("clinic.md", "procurement.md", "parking.md", "canteen.md")) for l in o.citations)
    assert {x.classification for x in res.cases} <= {"improved", "regressed", "unchanged_pass", "unchanged_fail"}
    assert res.changed_paths == ["canteen.md"] and res.uncovered == ["canteen.md"]
