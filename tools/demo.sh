#!/usr/bin/env bash
# The demo behind `make demo`: a fresh data directory, the fixture corpus ingested, questions asked
# as different users, then the golden-set evaluation. Runs entirely offline.
set -uo pipefail
DATA="${1:-.keel/demo}"
KEEL="$(dirname "$0")/../.venv/bin/keel"
export KEEL_DATA_DIR="$DATA"
export KEEL_AIRGAP=true

step() { printf '\n== %s\n' "$*"; }
ask() { step "$1 asks: $2"; "$KEEL" ask "$2" --user "$1" ${3:+--tags "$3"}; }

rm -rf "$DATA"
step "models"
"$KEEL" models prepare || exit $?
step "ingest the fixture corpus (golden/corpus/manifest.yaml)"
"$KEEL" ingest golden/corpus/manifest.yaml   # the planted injection is reported quarantined
step "status"
"$KEEL" status || exit $?
ask "pat (public)" "How many written quotes are needed for a purchase between \$10,000 and \$100,000?" public
ask "pat (public)" "What is the salary range for Band 3?" public
ask "hana (hr)" "What is the salary range for Band 3?" hr
ask "pat (public)" "What is the capital of France?" public
ask "pat (public)" "What does the supplier note say the approval status is?" public
step "verify the ledger"
"$KEEL" verify-ledger || exit $?
step "golden-set evaluation"
"$KEEL" eval run golden/golden.yaml --report-dir reports
code=$?
step "calibrate the refusal gate on this corpus (each answerable golden item asked with its sources visible and masked)"
"$KEEL" calibrate golden/golden.yaml && "$KEEL" status | sed -n '/^answerability:/,/^ledger:/p'
step "report: reports/latest.html (gate exit code $code; the judge is reported but not gated while it disagrees with the human labels)"
exit 0
