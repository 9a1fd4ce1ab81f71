"""The README and the documentation site: the README's two-command contract and its size, the CLI
reference generated from the parsers and current, every command in the docs accepted by the
parser and run as written (but those that need MPI or a GPU), and nothing cited that a clone does
not have."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex

import pytest
from clustersim.cli import build_parser
from conftest import ROOT, run_clustersim

README = ROOT / "README.md"
DOCS = ROOT / "docs"
# Pages a user reads: the README, the site, the examples' README and CONTRIBUTING.
USER_PAGES = [README, ROOT / "CONTRIBUTING.md", ROOT / "examples" / "README.md", *sorted(DOCS.rglob("*.md"))]


def cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_current():
    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert page == cli_reference().page(), "stale: run python3 scripts/cli_reference.py"


def test_api_reference_is_current():
    spec = importlib.util.spec_from_file_location("api_reference", ROOT / "scripts" / "api_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (DOCS / "reference" / "api.md").read_text(encoding="utf-8")
    assert page == module.page(), "stale: run python3 scripts/api_reference.py"
    for name in ("train", "simulate", "TrainResult.to_pandas", "Workload.from_training"):
        assert f"`{name}`" in page


def test_cli_reference_has_every_command_and_option():
    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    module = cli_reference()
    for path, parser in module.walk(build_parser()):
        if len(path) == 1:
            continue
        assert f" {' '.join(path)}\n" in page, path
        for action in parser._actions:
            if "--help" in action.option_strings:
                continue
            for flag in action.option_strings:
                assert f"`{flag}`" in page, (path, flag)


def readme_block() -> list[str]:
    """The README's first ```bash block's commands, as .ci/run extracts them."""
    lines, inside = [], False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line == "```bash":
            inside = True
        elif line == "```" and inside:
            break
        elif inside and line and not line.startswith("#"):
            lines.append(line)
    return lines


def test_readme_keeps_the_two_command_contract():
    install, tests = readme_block()
    assert install.startswith("pip install . && clustersim train ")
    assert " -r results/" in install  # it writes a result file
    assert tests == "bash scripts/test.sh"
    text = README.read_text(encoding="utf-8")
    # The requirements come before the commands that need them.
    assert text.index("Python ≥ 3.10") < text.index("```bash") and text.index("Rust") < text.index("```bash")
    # What scripts/test.sh installs is said where the command is.
    assert "pip install '.[dev]'" in text[: text.index("bash scripts/test.sh")]


def test_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    words = len(text.split())
    assert words <= 1200, f"README has {words} words"
    first_screen = "\n".join(text.splitlines()[:60])
    for part in ("pip install .", "## Quick start", "| your question | command | example |"):
        assert part in first_screen, part


def commands(text: str) -> list[str]:
    """The `clustersim` command lines of a page's bash and text code blocks."""
    found, fence, pending = [], None, ""
    for line in text.splitlines():
        if line.startswith("```"):
            fence = line.strip("`") if fence is None else None
            continue
        if fence not in ("bash", "text", ""):
            continue
        line = pending + line.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        line = re.sub(r"\s+#.*$", "", " ".join(line.split()))
        if line.startswith(("clustersim ", "mpirun ")) and "…" not in line:
            found.append(line)
    return found


DOC_COMMANDS = sorted(
    {(p.relative_to(ROOT).as_posix(), c) for p in USER_PAGES for c in commands(p.read_text("utf-8"))}
)


def test_the_docs_show_commands():
    pages = {page for page, _ in DOC_COMMANDS}
    assert len(DOC_COMMANDS) >= 50 and "README.md" in pages and "docs/guides/training.md" in pages


def arguments(line: str) -> list[str]:
    """A command line's arguments after `clustersim` (under `mpirun -np N` too)."""
    return shlex.split(re.sub(r"^mpirun -np \d+ ", "", line))[1:]


@pytest.mark.parametrize(("page", "line"), DOC_COMMANDS)
def test_every_command_in_the_docs_parses(page, line):
    argv = arguments(line)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            build_parser(argv[0]).parse_args(argv)
        except SystemExit as e:
            pytest.fail(f"{page}: {line}\n{err.getvalue()}(exit {e.code})")
    for arg in argv:
        if arg.startswith(("examples/", "tests/data/")):
            assert (ROOT / arg).exists(), f"{page}: {line}: {arg} is not in the repository"


def test_nothing_cited_outside_the_repository():
    for page in USER_PAGES:
        text = page.read_text(encoding="utf-8")
        assert "shared/" not in text and "../shared" not in text, page
        # Files of the repository named in code spans exist.
        spans = r"`((?:examples|tests|benchmarks|scripts|docs|crates|python)/[^`\s*…]+)`"
        for path in re.findall(spans, text):
            assert (ROOT / path.rstrip("/")).exists(), f"{page.relative_to(ROOT)}: {path}"


def test_readme_links_exist():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8")):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target


def needs_a_cluster_or_gpu(line: str) -> str | None:
    if line.startswith("mpirun "):
        return "runs under mpirun (tests/test_bwtest.py and tests/test_replay.py run these tools)"
    if "kernels measure" in line and "--device cpu" not in line:
        return "times kernels on a GPU"
    if "--kernels llama3-8b-kernels.csv" in line:
        return "reads the GPU kernel table of the line before"
    return None


def help_examples() -> set[str]:
    """The `--help` examples, which tests/test_cli.py runs as written."""
    found = set()
    for _, parser in cli_reference().walk(build_parser()):
        for line in (parser.epilog or "").splitlines():
            if m := re.match(r"\s*(?:examples?:)?\s*(clustersim .*)$", line):
                found.add(" ".join(m.group(1).split()))
    return found


# Every command of the guides, the README and the examples' README that no `--help` example
# already runs (the CLI reference holds only those), each once.
TO_RUN = sorted({line for page, line in DOC_COMMANDS if page != "docs/reference/cli.md"} - help_examples())


@pytest.mark.parametrize("line", TO_RUN)
def test_every_command_in_the_docs_runs(tmp_path, line):
    if reason := needs_a_cluster_or_gpu(line):
        pytest.skip(reason)
    for folder in ("examples", "tests"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    rc, out, err = run_clustersim(*arguments(line), cwd=tmp_path, timeout=180)
    assert rc == 0, f"{line}\n{err}"
    assert "Traceback" not in err
