"""What the benchmark scripts share: measuring a child Python, the run header, and replacing one
generated section of benchmarks/RESULTS.md, keeping everything else."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def run_header(runs: int) -> str:
    """When, on what machine, and over how many runs."""
    return (
        f"Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on"
        f" {platform.processor() or platform.machine()}, {os.cpu_count()} cores,"
        f" Python {platform.python_version()}; median of {runs} runs."
    )


def measure_child(code: str, spec: object, timeout: float) -> list[float]:
    """Run Python `code` in a fresh process with `spec` as JSON in argv[1]; the JSON it prints."""
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if out.returncode != 0:
        raise SystemExit(f"{spec} failed: {out.stderr}")
    return json.loads(out.stdout)


def write_section(name: str, body: str, *, title: str, path: Path = RESULTS, new_file: str = "") -> None:
    """Put `body` between `<!-- name:begin -->` and `<!-- name:end -->`; a missing section is
    appended under `title`; a missing file starts with `new_file`."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    block = f"{begin}\n{body}\n{end}"
    text = path.read_text(encoding="utf-8") if path.is_file() else new_file
    if begin in text and end in text:
        before, rest = text.split(begin, 1)
        text = before + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + f"\n\n{title}\n\n{block}\n"
    path.write_text(text, encoding="utf-8")
