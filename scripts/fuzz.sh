#!/usr/bin/env bash
# The full fuzzing campaign: every reader, CASES generated inputs each (default 10⁶).
#   scripts/fuzz.sh [CASES]
# The engine's readers (crates/engine/tests/fuzz) in release mode, then again with overflow
# checks (debug mode, CASES/20 inputs); the Python readers (benchmarks/fuzz_campaign.py).
# `cargo test` and pytest run a short campaign of each as part of the normal tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-1000000}"
start=$(date +%s)
CLUSTERSIM_FUZZ_CASES="$cases" cargo test --release -q -p clustersim-engine --test fuzz -- --nocapture --test-threads 2
CLUSTERSIM_FUZZ_CASES=$((cases / 20)) cargo test -q -p clustersim-engine --test fuzz -- --nocapture --test-threads 2
python3 benchmarks/fuzz_campaign.py --cases "$cases"
echo "fuzz campaign: $(( $(date +%s) - start )) s on $(nproc) cores"
