"""A sweep's report: one self-contained HTML page that needs no network — plotly.js is embedded —
with the Pareto plot of throughput against GPUs (or any other column, lower is better), the
stacked breakdown of where the time of each point goes, a table of every point sortable by any
column (a click on its header), and the spec the sweep ran.

Pareto front: the points no other point beats on both axes — point p is on it when no q has
x_q ≤ x_p and y_q ≥ y_p with one of them strict (lower x, higher y are better).
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

from clustersim.errors import InputError
from clustersim.explore.export import BREAKDOWN, NOT_PARTS, THROUGHPUT, table
from clustersim.explore.store import Stored
from clustersim.files import write_text
from clustersim.table import Table

UNITS = {"breakdown_s.": "s", "summary_us.": "µs"}


def pareto_front(xs: list[float], ys: list[float]) -> list[int]:
    """Indices of the points on the front (lower x and higher y better), by increasing x."""
    order = sorted(range(len(xs)), key=lambda i: (xs[i], -ys[i]))
    front: list[int] = []
    for i in order:
        if not front or ys[i] > ys[front[-1]]:
            front.append(i)
    return front


def numbers(t: Table, column: str, where: str) -> list[float]:
    if column not in t.columns:
        numeric = [c for c in t.columns if all(isinstance(v, (int, float)) for v in t[c] if v is not None)]
        raise InputError(f"command line: {where}: no column '{column}' (numeric: {', '.join(numeric)})")
    values = t[column]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise InputError(f"command line: {where}: column '{column}' is not a number in every feasible point")
    return [float(v) for v in values]


def label(row: dict[str, Any], varying: list[str]) -> str:
    return f"#{row['seq']} " + " ".join(f"{k}={row[k]}" for k in varying if k in row)


def render(stored: Stored, *, x: str = "gpus", y: str = "throughput", title: str | None = None) -> str:
    """The report's HTML text."""
    import plotly.graph_objects as go
    from plotly.offline import get_plotlyjs

    everything = table(stored)
    ok = Table(
        {
            c: [v for v, s in zip(everything[c], everything["status"], strict=True) if s == "ok"]
            for c in everything.columns
        }
    )
    varying = stored.varying
    rows = list(ok.rows())
    labels = [label(r, varying) for r in rows]
    front: set[int] = set()
    figures = []
    if rows:
        xs, ys = numbers(ok, x, "--x"), numbers(ok, y, "--y")
        order = pareto_front(xs, ys)
        front = set(order)
        pareto = go.Figure()
        pareto.add_scatter(
            x=xs,
            y=ys,
            mode="markers",
            name="points",
            text=labels,
            hoverinfo="text+x+y",
            marker={"color": "#8aa", "size": 8},
        )
        pareto.add_scatter(
            x=[xs[i] for i in order],
            y=[ys[i] for i in order],
            mode="lines+markers",
            name="Pareto front",
            text=[labels[i] for i in order],
            hoverinfo="text+x+y",
            line={"shape": "hv", "color": "#c33"},
            marker={"size": 11, "symbol": "star"},
        )
        pareto.update_layout(
            title=f"{y} vs {x} (Pareto front: lower {x}, higher {y})",
            xaxis_title=x,
            yaxis_title=f"{y} ({THROUGHPUT[stored.command]})" if y == "throughput" else y,
            height=460,
        )
        figures.append(("pareto", pareto))
        parts = breakdown_columns(stored.command, ok)
        if parts:
            unit = next((u for p, u in UNITS.items() if parts[0].startswith(p)), "µs")
            bars = go.Figure()
            for part in parts:
                name = part.split(".", 1)[-1]
                bars.add_bar(x=[f"#{r['seq']}" for r in rows], y=ok[part], name=name, hovertext=labels)
            bars.update_layout(
                barmode="stack",
                title="Where the time goes",
                yaxis_title=f"time ({unit})",
                height=460,
                xaxis={"type": "category"},
            )
            figures.append(("breakdown", bars))
    config = {"displaylogo": False, "responsive": True}
    plots = "\n".join(
        f.to_html(full_html=False, include_plotlyjs=False, div_id=name, config=config) for name, f in figures
    )
    infeasible = len(everything) - len(ok)
    heading = title or f"clustersim sweep: {stored.spec.get('command', stored.command)} ({stored.path})"
    summary = (
        f"{len(everything)} points stored, {len(ok)} feasible, {infeasible} infeasible;"
        f" {len(front)} on the Pareto front (★)."
    )
    return PAGE.format(
        title=html.escape(heading),
        plotly=get_plotlyjs(),
        summary=html.escape(summary),
        plots=plots or "<p>No feasible point: nothing to plot.</p>",
        table=html_table(everything, {r["seq"] for i, r in enumerate(rows) if i in front}),
        spec=html.escape(json.dumps(stored.spec, indent=2), quote=False),
        script=SCRIPT,
    )


def breakdown_columns(command: str, t: Table) -> list[str]:
    prefix = BREAKDOWN.get(command)
    if prefix is None:
        return ["time_us"] if "time_us" in t.columns else []
    return [c for c in t.columns if c.startswith(prefix) and c not in NOT_PARTS and any(t[c])]


def cell(value: Any) -> str:
    if value is None:
        return "<td></td>"
    if isinstance(value, float):
        shown = f"{value:.4g}" if math.isfinite(value) else str(value)
        return f"<td data-v='{value!r}'>{shown}</td>"
    if isinstance(value, (int, bool)):
        return f"<td data-v='{int(value)}'>{value}</td>"
    return f"<td>{html.escape(str(value))}</td>"


def html_table(t: Table, front: set[int]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["front", *t.columns])
    body = "\n".join(
        "<tr>"
        + ("<td data-v='1'>★</td>" if r["seq"] in front else "<td data-v='0'></td>")
        + "".join(cell(r[c]) if c != "key" else f"<td title='{r[c]}'>{r[c][:12]}</td>" for c in t.columns)
        + "</tr>"
        for r in t.rows()
    )
    return f"<table id='points' class='sortable'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def write(stored: Stored, path: Any, **options: Any) -> None:
    write_text(path, render(stored, **options))


# Sorting: a click on a header sorts by that column (numbers as numbers), a second click reverses.
SCRIPT = """
window.addEventListener('error', function (e) {
  var p = document.createElement('p'); p.className = 'failed';
  p.textContent = 'This report failed to render: ' + e.message; document.body.prepend(p);
});
document.querySelectorAll('table.sortable th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var body = th.closest('table').tBodies[0], rows = Array.from(body.rows);
    var dir = th.dataset.dir === 'asc' ? -1 : 1;
    th.closest('tr').querySelectorAll('th').forEach(function (h) { delete h.dataset.dir; });
    th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    function key(r) { var c = r.cells[col]; return c.dataset.v !== undefined ? +c.dataset.v : c.textContent; }
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (typeof x === 'number' && typeof y === 'number') return dir * (x - y);
      return dir * String(x).localeCompare(String(y));
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 2px 6px; text-align: right; white-space: nowrap; }}
th {{ background: #eee; cursor: pointer; position: sticky; top: 0; }}
th[data-dir=asc]::after {{ content: " ▲"; }} th[data-dir=desc]::after {{ content: " ▼"; }}
.scroll {{ overflow: auto; max-height: 40em; }} .failed {{ color: #fff; background: #c33; padding: 1em; }}
pre {{ background: #f6f6f6; padding: 1em; }}
</style>
<script>{plotly}</script>
</head><body>
<h1>{title}</h1>
<p>{summary}</p>
{plots}
<h2>Points</h2>
<p>Click a column's header to sort by it.</p>
<div class="scroll">{table}</div>
<h2>Parameters</h2>
<pre id="spec">{spec}</pre>
<script>{script}</script>
</body></html>
"""
