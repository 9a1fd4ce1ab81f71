#!/usr/bin/env bash
# Every test: Rust (unit + integration), lints (rustfmt, clippy, ruff, the Python layers), Python (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q ".[dev]"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --release -q
ruff check python tests benchmarks
ruff format --check python tests benchmarks
# The Python package's layers: pyproject.toml's [tool.importlinter] contracts, on the source tree.
PYTHONPATH=python lint-imports --no-cache
python3 -m pytest -q
