#!/usr/bin/env python3
"""An example answer command for `keel eval review --answer-command`.

It reads one JSON request on stdin (schemas/answer-request.schema.json) and prints one JSON
response on stdout (schemas/answer-response.schema.json). It answers with Keel's own extractive
engine (`keel.answer.engine.extract`) over the sources in the request only: the best-supported
sentences, each cited by the locator of the passage it came from; it abstains when no sentence
matches. Where Keel is not installed it falls back to a plain word-overlap version of the same idea.

    keel eval review golden/review/review.yaml golden/review/kb --base origin/main \\
        --answer-command python examples/answer_command.py

Replace the body of `answer()` with a call to your own model or service; keep the JSON contract.
"""
from __future__ import annotations
import argparse, json, re, sys

SCHEMA_VERSION = 1
STOP = set("""a an and are as at be by can do does for from has have how i in is it its may must of on or our should
that the their there these this to was we what when where which who why will with within you your""".split())

def words(text:str) -> set[str]:
    "Lowercase content words of a text (stemmed crudely so 'reports' meets 'reported')."
    return {re.sub(r"(ing|ed|es|s)$", "", w) or w for w in re.findall(r"[a-z0-9$%]+", text.lower()) if w not in STOP and len(w) > 1}

def sentences(text:str) -> list[str]:
    "Sentences of a passage, Markdown heading lines dropped."
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n{2,}", text) if len(s.strip()) > 3]

def answer(case:dict, min_overlap:float, max_sentences:int) -> dict:
    "One case's answer: the best-matching sentences with their locators, or an abstention."
    q = words(case["question"])
    scored = []
    for src in case["sources"]:
        for s in sentences(src["text"]):
            score = len(q & words(s)) / max(len(q), 1)
            if score >= min_overlap: scored.append((score, s, src["locator"]))
    picked, seen = [], set()
    for score, s, loc in sorted(scored, key=lambda x: -x[0]):
        if s not in seen and len(picked) < max_sentences: picked.append((s, loc)); seen.add(s)
    if not picked:
        return dict(id=case["id"], decision="abstain", answer="", claims=[],
                    refusal_reasons=["no source sentence matches the question" if case["sources"] else "no sources were retrieved"])
    return dict(id=case["id"], decision="answer", answer=" ".join(s for s, _ in picked),
                claims=[dict(text=s, citations=[loc]) for s, loc in picked])

def answer_with_keel(case:dict) -> dict|None:
    "One case answered by Keel's extractive engine over the request's sources; None when Keel is not installed."
    try:
        from keel.answer.engine import extract
        from keel.providers.base import ChunkHit
    except ImportError: return None
    srcs = case["sources"]
    hits = [ChunkHit(i, 1.0, s["text"], i, s["locator"], s["title"], s["heading"]) for i, s in enumerate(srcs)]
    text, _ = extract(case["question"], hits)
    if not text:
        return dict(id=case["id"], decision="abstain", answer="", claims=[],
                    refusal_reasons=["no source sentence supports an answer" if srcs else "no sources were retrieved"])
    claims = [dict(text=m.group(1).strip(), citations=[srcs[int(n) - 1]["locator"] for n in re.split(r"\s*,\s*", m.group(2))])
              for m in re.finditer(r"(.+?)\s*\[(\d+(?:\s*,\s*\d+)*)\]", text)]
    return dict(id=case["id"], decision="answer", answer=" ".join(c["text"] for c in claims), claims=claims)

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-overlap", type=float, default=0.34, help="fallback: share of the question's content words a sentence must contain")
    p.add_argument("--max-sentences", type=int, default=2, help="fallback: most sentences per answer")
    p.add_argument("--plain", action="store_true", help="use the word-overlap fallback even where Keel is installed")
    a = p.parse_args(argv)
    try: req = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        print(f"answer_command: the request is not JSON: {e}", file=sys.stderr); return 2
    if req.get("schema_version") != SCHEMA_VERSION:
        print(f"answer_command: unsupported schema_version {req.get('schema_version')!r}", file=sys.stderr); return 2
    out = dict(schema_version=SCHEMA_VERSION, answers=[(None if a.plain else answer_with_keel(c)) or answer(c, a.min_overlap, a.max_sentences) for c in req["cases"]])
    json.dump(out, sys.stdout, ensure_ascii=False)
    return 0

if __name__ == "__main__":
    sys.exit(main())
