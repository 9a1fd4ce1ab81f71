"""benchmarks/RESULTS.md: today's numbers only, one complete section per benchmark script, ≤ 400
lines (`python3 benchmarks/results.py --check`). Reads the page; runs no benchmark."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def results() -> ModuleType:
    spec = importlib.util.spec_from_file_location("results", BENCHMARKS / "results.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("results", module)
    spec.loader.exec_module(module)
    return module


def test_the_page_has_every_section_complete_and_at_most_400_lines(results: ModuleType) -> None:
    assert results.check(BENCHMARKS / "RESULTS.md", BENCHMARKS) == []
    assert len((BENCHMARKS / "RESULTS.md").read_text(encoding="utf-8").splitlines()) <= 400


def test_every_benchmark_script_has_one_section(results: ModuleType) -> None:
    scripts = {p.name for p in BENCHMARKS.glob("*.py")} - {"results.py"}
    assert scripts <= {b.script for b in results.BENCHMARKS}
    markers = [b.marker for b in results.BENCHMARKS]
    assert len(markers) == len(set(markers))


def test_the_check_fails_on_a_broken_page(results: ModuleType, tmp_path: Path) -> None:
    page = (BENCHMARKS / "RESULTS.md").read_text(encoding="utf-8")
    cases = {
        "no section": page.replace("<!-- train:begin -->", ""),
        "no run line": page.replace("Run of ", "Ran ", 1),
        "no command": page.replace("Regenerate: `", "`", 1),
        "too long": page + "\n" * 400,
        "unknown section": page + "\n<!-- nobody:begin -->\n<!-- nobody:end -->\n",
    }
    for what, text in cases.items():
        path = tmp_path / "RESULTS.md"
        path.write_text(text, encoding="utf-8")
        assert results.check(path, BENCHMARKS), what
    (tmp_path / "bench_new.py").write_text("")
    path.write_text(page, encoding="utf-8")
    assert any("bench_new.py" in p for p in results.check(path, tmp_path))


def test_write_section_replaces_one_section_and_keeps_the_rest(results: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    body = "Run of 2026-01-01 00:00 UTC on x86_64, 2 cores, Python 3.11.\n\n| a |\n|---|\n| 1 |"
    results.write_section("train", body, path=path)
    results.write_section("startup", body, path=path)
    results.write_section("train", body.replace("| 1 |", "| 2 |"), path=path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith(results.HEADER)
    assert text.index("<!-- startup:begin -->") < text.index("<!-- train:begin -->")
    assert "| 1 |" in text and "| 2 |" in text and text.count("<!-- train:begin -->") == 1
    assert "Regenerate: `python3 benchmarks/bench_train.py" in text
