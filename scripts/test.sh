#!/usr/bin/env bash
# Every test: Rust (unit + integration), lints (rustfmt, clippy, ruff, the Python layers), the CLI
# reference and the documentation site, Python (pytest). It installs this package with its `dev`
# extra into the Python that `python3` finds (activate a virtual environment to keep it apart).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "scripts/test.sh: pip install '.[dev]' into $(python3 -c 'import sys; print(sys.prefix)')" >&2
python3 -m pip install -q ".[dev]"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --release -q
ruff check python tests benchmarks
ruff format --check python tests benchmarks
# The Python package's layers: pyproject.toml's [tool.importlinter] contracts, on the source tree.
PYTHONPATH=python lint-imports --no-cache
# The CLI and API references (docs/reference/) are generated from the parsers and docstrings; the site builds with no
# warning and no broken link (into a scratch folder: nothing is written in the tree).
python3 scripts/cli_reference.py --check
python3 scripts/api_reference.py --check
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict --quiet --site-dir "$site"
rm -rf "$site"
# -rs: every skipped test is listed with its reason.
python3 -m pytest -q -rs
