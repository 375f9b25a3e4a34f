"""Keel's evaluation in your own test suite: copy this file into your repository's tests/ folder.

Installing Keel installs its pytest plugin. Point it at your golden set and your deployment's data directory:

    pytest --keel-golden golden/golden.yaml --keel-data-dir /srv/keel/data        # the golden items only
    pytest tests/ --keel-golden golden/golden.yaml --keel-data-dir /srv/keel/data # these tests and the golden items
    pytest --keel-golden golden/golden.yaml -m "procurement and heldout" -n 4     # by marker, on 4 workers
    pytest --keel-golden golden/golden.yaml --lf                                  # only what failed last time

Each golden item is a test named by its id, marked with its category and split; a failure prints the question, the
asker's tags, the answer with its citations, the checks that failed and what was retrieved. A leak always fails. A
rubric of the golden set fails a test only when its judge agrees with the human labels in rubric_labels.yaml (kappa at
least --keel-kappa-bar, 0.4 by default); otherwise its low scores are reported and never fail. --keel-no-judge leaves
the rubrics unscored (no model is loaded for them).

The tests below ask questions written by hand through the same engine and checks (`keel.testing.assert_answer`);
inside a pytest run they answer from the session's context, over --keel-data-dir. Replace the questions and
expectations with your own documents'.
"""
from keel.testing import assert_answer


def test_public_users_never_see_the_salary_bands():
    assert_answer("What is the salary range for Band 3?", ["public"], must_refuse=True,
                  must_not_include=["$92,000", "$104,000"])


def test_hr_sees_the_band_it_asks_about():
    assert_answer("What is the salary range for Band 3?", ["hr"], must_include=["$92,000", "$104,000"])


def test_questions_no_document_answers_are_refused():
    assert_answer("How many days of annual leave do council staff get each year?", ["public"], must_refuse=True)


def test_the_emergency_purchase_answer_is_complete(keel_golden):
    "A rubric of the golden set (`complete`): it fails this test only while its judge agrees with people on it."
    assert_answer("In an emergency, who may approve a purchase without quotes, and up to what amount?", ["public"],
                  must_include=["director", "$50,000"], rubric="complete" if keel_golden else None,
                  reference="A department director, up to $50,000; the CFO confirms in writing within 2 business days.")
