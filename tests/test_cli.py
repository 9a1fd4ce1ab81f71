"""One CLI: every `--help` example runs as written, an option shared by several subcommands means
one thing in all of them, `--version`, progress bars only when asked for off a terminal."""

from __future__ import annotations

import argparse
import io
import re
import shlex
import subprocess
import sys

import pytest
from clustersim import __version__
from clustersim.cli import build_parser
from conftest import ROOT, run_clustersim


def parsers(parser=None, path=("clustersim",)):
    """(command path, parser) for every subcommand, nested ones (`workload generate`) included."""
    parser = parser or build_parser()
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


def examples(parser):
    """The command lines of a help text's examples, in order (later ones may read earlier outputs)."""
    lines = (parser.epilog or "").splitlines()
    return [m.group(1) for line in lines if (m := re.match(r"\s*(?:examples?:)?\s*(clustersim .*)$", line))]


WITH_EXAMPLES = {" ".join(path[1:]): p for path, p in parsers() if examples(p)}


def test_every_command_has_an_example():
    commands = {" ".join(path[1:]) for path, _ in parsers() if len(path) > 1}
    assert commands <= set(WITH_EXAMPLES), commands - set(WITH_EXAMPLES)


@pytest.mark.parametrize("command", sorted(WITH_EXAMPLES))
def test_help_examples_run_as_written(tmp_path, command):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for line in examples(WITH_EXAMPLES[command]):
        rc, out, err = run_clustersim(*shlex.split(line)[1:], cwd=tmp_path, timeout=120)
        assert rc == 0, f"{line}\n{err}"
        assert "Traceback" not in err


def option_meaning(action):
    return (
        action.dest,
        getattr(action.type, "__name__", action.type),
        action.nargs,
        action.const,
        type(action),
    )


def test_a_shared_option_means_one_thing_everywhere():
    meanings: dict[str, dict] = {}
    for path, p in parsers():
        for action in p._actions:
            for flag in action.option_strings:
                if flag in ("-h", "--help", "--version"):
                    continue
                meanings.setdefault(flag, {}).setdefault(option_meaning(action), []).append(" ".join(path))
    # bwtest's -g is the Bisection Bandwidth Tester's group size (seed 003, issue 12), not a GPU count.
    meanings["-g"] = {k: v for k, v in meanings["-g"].items() if v != ["clustersim bwtest"]}
    clashes = {flag: m for flag, m in meanings.items() if len(m) > 1}
    assert not clashes, clashes
    # The options the issue found with two meanings, and the fabric option, are now shared.
    shared = {flag: sum(len(v) for v in m.values()) for flag, m in meanings.items()}
    assert shared["-r"] >= 3 and shared["-v"] >= 3 and shared["-n"] >= 3 and shared["-g"] >= 5


def test_every_fabric_option_takes_a_file_or_a_template():
    for path, p in parsers():
        for action in p._actions:
            if "--topology" in action.option_strings:
                assert "NAME[:GPUS]" in action.help and "file" in action.help, path


def test_version():
    rc, out, err = run_clustersim("--version", cwd=ROOT)
    assert (rc, out.strip()) == (0, f"clustersim {__version__}")


COLLECTIVE = ["collective", "allreduce", "-b", "1M", "-e", "4M", "-n", "Spectrum-X:8"]


def test_progress_bar_only_when_asked_off_a_terminal(tmp_path):
    rc, out, quiet = run_clustersim(*COLLECTIVE, cwd=tmp_path)
    assert rc == 0 and quiet == ""
    rc, out, shown = run_clustersim(*COLLECTIVE, "--progress", cwd=tmp_path)
    assert rc == 0 and "100%" in shown and "allreduce" in shown
    # stdout is the same table either way.
    assert out == run_clustersim(*COLLECTIVE, cwd=tmp_path)[1]


def test_files_written_are_listed_last(tmp_path):
    rc, out, err = run_clustersim(
        "train", "--model", "llama3-8b", "-g", "8", "--tp", "8", "--gbs", "8", "-r", "t-", "-o", "t.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert rc == 0, err
    assert out.splitlines()[-1] == "wrote t.json, t-summary.json, t-layers.csv, t-stages.csv, t-trace.json"
    assert all((tmp_path / name).is_file() for name in ("t.json", "t-summary.json", "t-layers.csv"))


def test_an_input_error_exits_2_and_an_engine_fault_70():
    rc, out, err = run_clustersim(
        "train", "--model", "llama3-8b", "-g", "8", "--tp", "3", "--gbs", "8", cwd=ROOT
    )
    assert rc == 2 and err.startswith("clustersim: error: ") and len(err.splitlines()) == 1
    # An engine fault (here a panic raised where the engine would raise it) is a bug, exit 70.
    code = (
        "import sys, clustersim.api as api; from clustersim.errors import EnginePanic\n"
        "def boom(*a, **k): raise EnginePanic('index out of bounds')\n"
        "import clustersim.training as t; t.train = boom\n"
        "from clustersim.cli import main\n"
        "sys.exit(main(['train', '--model', 'llama3-8b', '-g', '8', '--gbs', '8']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 70, proc.stderr
    assert "the engine panicked" in proc.stderr and "this is a bug in clustersim" in proc.stderr


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_bar_waits_a_second(monkeypatch):
    from clustersim.cli.common import Progress

    monkeypatch.setattr(sys, "stderr", Terminal())
    bar = Progress("simulating", None)
    bar(0.5)  # a quick run: nothing shown, tqdm not even imported for it
    assert sys.stderr.getvalue() == "" and bar.bar is None
    bar.start -= 1.0
    bar(0.75)
    bar.close()
    assert "simulating:  75%" in sys.stderr.getvalue()
    off = Progress("simulating", False)
    off.start -= 1.0
    off(0.9)
    assert off.bar is None


def test_a_closed_pipe_ends_quietly():
    # `clustersim … | head -1`: the reader is gone before the table is written.
    code = (
        "import os, sys\n"
        "r, w = os.pipe(); os.close(r); os.dup2(w, 1)\n"
        "from clustersim.cli import main\n"
        "sys.exit(main(['train', '--model', 'gpt-7b', '-g', '16', '--gbs', '16', '--allow-oom']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 141 and done.stderr == "", done.stderr
