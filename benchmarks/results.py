"""Replace one generated section of benchmarks/RESULTS.md, keeping everything else."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


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
