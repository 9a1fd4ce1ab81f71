"""`clustersim report` (the Pareto front, a page that renders offline in headless Chromium with
no console message) and `clustersim compare`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from clustersim.explore import store
from clustersim.explore.report import pareto_front

SPEC = """\
command: train
fixed: {model: llama3-8b, gbs: 64, seq: 2048, dist-opt: true}
grid:
  gpus: [8, 16, 32]
  tp: [1, 2, 8]
  pp: [1, 2]
"""


def test_the_pareto_front_by_hand():
    #        0    1    2    3    4    5    6
    xs = [1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0]
    ys = [10.0, 15.0, 12.0, 14.0, 20.0, 20.0, 19.0]
    # 2 loses to 1 (same x, lower y); 3 to 1 (more x, lower y); 5 ties 4 (the first kept); 6 to 4.
    assert pareto_front(xs, ys) == [0, 1, 4]
    assert pareto_front([3.0, 1.0], [1.0, 2.0]) == [1]
    assert pareto_front([], []) == []


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from clustersim import sweep

    folder = tmp_path_factory.mktemp("report")
    (folder / "s.yaml").write_text(SPEC)
    sweep(folder / "s.yaml")
    return folder


def test_the_page_holds_the_plots_the_table_and_the_spec_and_needs_no_network(swept, run_cli):
    code, out, _ = run_cli("report", "s.sqlite", "-o", "r.html", cwd=swept)
    assert code == 0 and out.splitlines()[-1] == "wrote r.html"
    page = (swept / "r.html").read_text()
    stored = store.read(swept / "s.sqlite")
    ok = [r for r in stored.rows if r.status == "ok"]
    # Every point is a row of the table; the starred rows are the front of (gpus, tokens/s).
    assert page.count("<tr>") == len(stored.rows) + 1
    front = pareto_front([r.result["gpus"] for r in ok], [r.result["tokens_per_s"] for r in ok])
    starred = re.findall(r"<tr><td data-v='1'>★</td><td data-v='(\d+)'>", page)
    assert sorted(int(s) for s in starred) == sorted(ok[i].seq for i in front)
    assert f"{len(stored.rows)} points stored, {len(ok)} feasible" in page
    assert '"model": "llama3-8b"' in page  # the spec
    assert 'id="pareto"' in page and 'id="breakdown"' in page
    # plotly.js is inside; nothing is fetched from anywhere.
    assert "Plotly" in page and not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=", page)


def test_bad_report_axes_are_one_line_errors(swept, run_cli):
    code, _, err = run_cli("report", "s.sqlite", "-o", "r2.html", "--x", "price", cwd=swept)
    assert code == 2 and err.startswith("clustersim: error: command line: --x: no column 'price' (numeric: ")
    assert not (swept / "r2.html").exists()
    code, _, err = run_cli("report", "nothing.sqlite", "-o", "r2.html", cwd=swept)
    assert (code, err) == (
        2,
        "clustersim: error: nothing.sqlite: no such store (clustersim sweep writes one)\n",
    )


CHROMIUM = shutil.which("chromium")


def chromium(*args, cwd):
    # No network: every host name resolves to nothing, and any proxied fetch goes to a closed port.
    offline = ["--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9"]
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", *offline, "--enable-logging=stderr"]
    command += ["--v=0", "--virtual-time-budget=10000", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_page_renders_in_headless_chromium_with_no_console_message(swept, run_cli):
    assert run_cli("report", "s.sqlite", "-o", "r.html", cwd=swept)[0] == 0
    url = (swept / "r.html").as_uri()
    dom = chromium("--dump-dom", url, cwd=swept)
    # Console messages (errors included) are logged as INFO:CONSOLE lines: the page logs none.
    assert "CONSOLE" not in dom.stderr, dom.stderr
    assert 'class="failed"' not in dom.stdout  # the page's own report of a script error
    # plotly drew both figures as SVG: a marker per feasible point, and one more per point on the
    # front; a stack of bars per part of the breakdown.
    pareto = dom.stdout[dom.stdout.index('id="pareto"') : dom.stdout.index('id="breakdown"')]
    breakdown = dom.stdout[dom.stdout.index('id="breakdown"') :]
    assert "js-plotly-plot" in pareto and "main-svg" in pareto and "main-svg" in breakdown
    stored = store.read(swept / "s.sqlite")
    ok = [r for r in stored.rows if r.status == "ok"]
    front = pareto_front([r.result["gpus"] for r in ok], [r.result["tokens_per_s"] for r in ok])
    assert pareto.count('<path class="point"') == len(ok) + len(front)
    parts = {k for r in ok for k, v in r.result["breakdown_s"] if v > 0}
    assert breakdown.count('class="trace bars"') == len(parts) >= 2
    shot = chromium("--hide-scrollbars", "--window-size=1280,1800", "--screenshot=shot.png", url, cwd=swept)
    assert shot.returncode == 0, shot.stderr
    import matplotlib.image

    pixels = matplotlib.image.imread(swept / "shot.png")[..., :3].reshape(-1, 3)
    colours = {tuple(p) for p in (pixels[::97] * 255).round().astype(int).tolist()}
    assert len(colours) > 50 and pixels.std() > 0.05  # not blank: text, axes, bars of many colours


def test_compare_two_train_results_and_two_sweep_points(swept, run_cli):
    common = ["--model", "llama3-8b", "--gpus", "16", "--gbs", "32", "--seq", "2048", "--dist-opt"]
    assert run_cli("train", *common, "--tp", "2", "-o", "a.json", cwd=swept)[0] == 0
    assert run_cli("train", *common, "--tp", "4", "-o", "b.json", cwd=swept)[0] == 0
    a, b = (json.loads((swept / n).read_text()) for n in ("a.json", "b.json"))
    code, out, _ = run_cli("compare", "a.json", "b.json", cwd=swept)
    assert code == 0
    # What made them differ first: the plan's TP alone.
    assert out.splitlines()[:2] == ["what differs: plan", "  plan: tp 2 → 4"]
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert lines["field"] == ["field", "A", "B", "B", "−", "A", "change"]
    row = lines["iteration_s"]
    assert float(row[1]) == pytest.approx(a["iteration_s"], rel=1e-5)
    assert float(row[3]) == pytest.approx(b["iteration_s"] - a["iteration_s"], rel=1e-4)
    change = (b["iteration_s"] - a["iteration_s"]) / a["iteration_s"] * 100
    assert row[4] == f"{change:+.1f}"
    assert lines["model"] == ["model", "llama3-8b", "llama3-8b"]  # equal: no difference shown
    code, out, _ = run_cli("compare", "a.json", "b.json", "--differences", cwd=swept)
    table = out.split("\n\n", 1)[1]  # below what made them differ
    assert "model" not in table and "iteration_s" in table
    stored = store.read(swept / "s.sqlite")
    code, out, _ = run_cli("compare", "s.sqlite:3", f"s.sqlite:{stored.rows[5].key[:10]}", cwd=swept)
    assert code == 0
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert lines["options.pp"][1:3] == [str(stored.rows[3].options["pp"]), str(stored.rows[5].options["pp"])]
    code, _, err = run_cli("compare", "a.json", "s.sqlite:999", cwd=swept)
    assert (code, err) == (
        2,
        "clustersim: error: s.sqlite: point 999: no point of that seq or key in the store\n",
    )
    (swept / "bad.json").write_text('{"a": 1,\n "b": }\n')
    code, _, err = run_cli("compare", "a.json", "bad.json", cwd=swept)
    assert code == 2 and err.startswith("clustersim: error: bad.json:2: JSON: not a JSON result")
