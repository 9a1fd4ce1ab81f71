"""Where the time of one simulated training iteration goes: one matplotlib figure, written as PNG and
SVG, and a self-contained HTML page with that SVG inline and the numbers in tables. Also a long
run's goodput (`clustersim goodput -v`): one trial's interruptions and goodput against the
checkpoint interval.

The CLI writes these under ``-v``. matplotlib is imported inside :func:`write_all` only: importing it
costs a noticeable fraction of a second and most CLI runs never draw a chart. The HTML page needs no
network (it must open on an air-gapped cluster login node): the SVG is embedded, text drawn as paths.
"""

from __future__ import annotations

import html
import math
import os
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    # Only for annotations: keeps this module importable without the compiled engine or matplotlib.
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from clustersim.table import Table

__all__ = ["figure", "goodput_figure", "write_all", "write_goodput"]

# More names than this turn the per-layer chart into an unreadable comb; the HTML table lists them all.
_MAX_LAYER_NAMES = 15

# Summary key, label, colour; in the order the parts are stacked and listed.
_PARTS = (
    ("compute_us", "Compute", "#1f77b4"),
    ("exposed_dp_us", "Exposed DP comm", "#ff7f0e"),
    ("exposed_dp_ep_us", "Exposed DP_EP comm", "#e377c2"),
    ("exposed_tp_us", "Exposed TP comm", "#d62728"),
    ("exposed_ep_us", "Exposed EP comm", "#9467bd"),
    ("exposed_pp_us", "Exposed PP comm", "#8c564b"),
    ("bubble_us", "Pipeline bubble", "#7f7f7f"),
    ("waiting_us", "Waiting for slower devices", "#bcbd22"),
)

# Per-layer stack: label, colour. Hidden comm is drawn pale because it overlaps compute and costs no time.
_LAYER_KINDS = (
    ("Compute", "#1f77b4"),
    ("Exposed comm", "#d62728"),
    ("Hidden comm (overlapped)", "#ffbb78"),
)

# Per-stage stack: label, colour (a stage's bubble is its idle time up to the iteration's end).
_STAGE_KINDS = (
    ("Compute", "#1f77b4"),
    ("Exposed comm", "#d62728"),
    ("Bubble (waiting)", "#7f7f7f"),
)

_FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'


class _Part(NamedTuple):
    label: str
    us: float
    color: str


class _Layer(NamedTuple):
    name: str
    compute: float
    exposed: float
    hidden: float

    @property
    def total(self) -> float:
        return self.compute + self.exposed + self.hidden


# ---------------------------------------------------------------- data shared by both outputs


def _num(x: object) -> float:
    """A finite float; NaN, None and junk count as 0 so one bad cell cannot break a chart."""
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    return v if math.isfinite(v) else 0.0


def _breakdown(summary: dict[str, float]) -> tuple[list[_Part], float]:
    """All parts of the iteration (zeros included) and the total they are a share of."""
    parts = [_Part(label, _num(summary.get(key)), color) for key, label, color in _PARTS]
    total = _num(summary.get("total_us"))
    if total <= 0:
        # A summary without a total still deserves percentages that add up.
        total = sum(p.us for p in parts if p.us > 0)
    return parts, total


def _layer_rows(layers: Table) -> list[_Layer]:
    """Rows summed per layer name, largest total first (ties keep the order names first appear in)."""
    n = len(layers)
    columns = set(layers.columns)
    if n == 0 or "layer_name" not in columns:
        return []

    def col(name: str) -> list[float]:
        # A missing column reads as zeros rather than failing: a chart is a side product of the run.
        return [_num(v) for v in layers[name]] if name in columns else [0.0] * n

    def col3(what: str) -> list[float]:
        return [sum(v) for v in zip(col(f"fwd {what}"), col(f"wg {what}"), col(f"ig {what}"), strict=True)]

    compute, exposed, comm = col3("compute"), col3("exposed comm"), col3("total comm")

    sums: dict[str, list[float]] = {}  # dicts keep insertion order: first appearance
    for i, name in enumerate(layers["layer_name"]):
        acc = sums.setdefault(str(name), [0.0, 0.0, 0.0])
        acc[0] += compute[i]
        acc[1] += exposed[i]
        acc[2] += comm[i]
    # Clamp: rounding (or a NaN total comm) must not give negative hidden time or negative bar widths.
    rows = [_Layer(name, max(c, 0.0), max(e, 0.0), max(t - e, 0.0)) for name, (c, e, t) in sums.items()]
    return sorted(rows, key=lambda r: r.total, reverse=True)  # stable sort keeps first-appearance ties


def _unit(us: float) -> tuple[str, float]:
    """Display unit for durations up to `us`: ms, or s once ms would need five digits."""
    return ("s", 1e6) if us >= 1e7 else ("ms", 1e3)


def _fmt(v: float) -> str:
    """About three significant digits without switching to scientific notation for large values."""
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _duration(us: float) -> str:
    unit, scale = _unit(us)
    return f"{_fmt(us / scale)} {unit}"


def _pct(us: float, total: float) -> float:
    return 100.0 * us / total if total > 0 else 0.0


def _fmt_pct(p: float) -> str:
    # A part that exists should not read as "0.0%".
    return "<0.1%" if 0 < p < 0.05 else f"{p:.1f}%"


def _short(name: str, limit: int = 34) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _layers_title(rows: list[_Layer]) -> str:
    n = len(rows)
    if n > _MAX_LAYER_NAMES:
        return f"Per layer name (largest {_MAX_LAYER_NAMES} of {n})"
    return f"Per layer name ({n} name{'' if n == 1 else 's'})" if n else "Per layer name"


# ---------------------------------------------------------------- PNG


def _mpl_text(s: str) -> str:
    # matplotlib reads $...$ as math; a layer or run name with a dollar sign must stay literal.
    return s.replace("$", r"\$")


def figure(summary: dict[str, float], layers: Table, title: str, stages: Table | None = None) -> Figure:
    """The iteration breakdown and the per-layer chart, one above the other; below them, with
    `stages` (columns stage, compute, exposed comm, bubble in µs) of more than one pipeline
    stage, where each stage's time goes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    parts, total = _breakdown(summary)
    shown = [p for p in parts if p.us > 0]
    all_rows = _layer_rows(layers)
    rows = all_rows[:_MAX_LAYER_NAMES]
    per_stage = stages is not None and len(stages) > 1

    # Heights in inches grow with the number of bars so that labels never overlap.
    top_h = 0.34 * max(len(shown), 1) + 1.2
    bottom_h = 0.36 * max(len(rows), 2) + 1.6
    heights = [top_h, bottom_h] + ([0.3 * len(stages) + 1.6] if per_stage and stages is not None else [])
    # A bare Figure on an Agg canvas instead of pyplot: no global backend switch (harmless in a notebook)
    # and no pyplot figure registry to leak into, so there is nothing to close; the figure dies with us.
    fig = Figure(figsize=(11, sum(heights) + 0.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(heights), 1, height_ratios=heights)
    ax1, ax2 = axes[0], axes[1]
    if per_stage and stages is not None:
        _stage_chart(axes[2], stages)
    fig.suptitle(_mpl_text(title), fontsize=13, fontweight="bold")

    ax1.set_title(f"Iteration time {_duration(total)}: where it goes", loc="left", fontsize=11)
    if shown:
        unit, scale = _unit(total)
        vals = [p.us / scale for p in shown]
        y = list(range(len(shown)))
        ax1.barh(y, vals, color=[p.color for p in shown], height=0.65)
        ax1.set_yticks(y, labels=[p.label for p in shown])
        ax1.invert_yaxis()
        for i, p in enumerate(shown):
            ax1.text(
                vals[i],
                i,
                f"  {_fmt(vals[i])} {unit} ({_fmt_pct(_pct(p.us, total))})",
                va="center",
                fontsize=9,
            )
        ax1.set_xlim(0, max(vals) * 1.32)  # room for the value labels past the longest bar
        ax1.set_xlabel(f"time per iteration ({unit})")
        _tidy(ax1)
    else:
        _empty(ax1, "no time recorded")

    ax2.set_title(_layers_title(all_rows), loc="left", fontsize=11)
    if any(r.total > 0 for r in rows):
        unit, scale = _unit(max(r.total for r in rows))
        y = list(range(len(rows)))
        left = [0.0] * len(rows)
        for k, (label, color) in enumerate(_LAYER_KINDS):
            vals = [r[1 + k] / scale for r in rows]
            ax2.barh(y, vals, left=left, color=color, label=label, height=0.7)
            left = [a + b for a, b in zip(left, vals, strict=True)]
        ax2.set_yticks(y, labels=[_mpl_text(_short(r.name)) for r in rows])
        ax2.invert_yaxis()
        for i, end in enumerate(left):
            ax2.text(end, i, f" {_fmt(end)}", va="center", fontsize=8)
        ax2.set_xlim(0, (max(left) or 1.0) * 1.12)
        ax2.set_xlabel(f"time ({unit}), summed over every row with that layer name")
        # On the title line, right-aligned: inside the axes it would cover a bar whenever there are few.
        ax2.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=9, frameon=False)
        _tidy(ax2)
    else:
        _empty(ax2, "no per-layer data")

    return fig


def _stage_chart(ax: Axes, stages: Table) -> None:
    """Each pipeline stage's iteration, stacked: compute, exposed communication, bubble."""
    names = [f"stage {s}" for s in stages["stage"]]
    unit, scale = _unit(max(_num(c) + _num(e) + _num(b) for c, e, b in _stage_columns(stages)))
    y = list(range(len(names)))
    left = [0.0] * len(names)
    for k, (label, color) in enumerate(_STAGE_KINDS):
        vals = [row[k] / scale for row in _stage_columns(stages)]
        ax.barh(y, vals, left=left, color=color, label=label, height=0.7)
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.set_yticks(y, labels=names)
    ax.invert_yaxis()
    ax.set_title("Where each pipeline stage's iteration goes", loc="left", fontsize=11)
    ax.set_xlabel(f"time ({unit})")
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=9, frameon=False)
    _tidy(ax)


def _stage_columns(stages: Table) -> list[tuple[float, float, float]]:
    return [
        (_num(c), _num(e), _num(b))
        for c, e, b in zip(stages["compute"], stages["exposed comm"], stages["bubble"], strict=True)
    ]


def _tidy(ax: Axes) -> None:
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def _empty(ax: Axes, message: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", color="#888888", transform=ax.transAxes)


# ---------------------------------------------------------------- HTML


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def _summary_table(parts: list[_Part], total: float) -> str:
    # Zero parts stay in the table (unlike the chart): "no TP time" is an answer too.
    body = [
        f'<tr><td><span class="sw" style="background:{p.color}"></span>{_e(p.label)}</td>'
        f"<td>{p.us:,.1f}</td><td>{p.us / 1e3:,.3f}</td><td>{_e(_fmt_pct(_pct(p.us, total)))}</td></tr>"
        for p in parts
    ]
    body.append(
        f'<tr class="total"><td>Total iteration</td><td>{total:,.1f}</td><td>{total / 1e3:,.3f}</td>'
        f"<td>{'100.0%' if total > 0 else '0.0%'}</td></tr>"
    )
    return (
        "<table>\n<thead><tr><th>Part</th><th>µs</th><th>ms</th><th>% of iteration</th></tr></thead>\n"
        "<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"
    )


def _layers_table(rows: list[_Layer]) -> str:
    body = [
        f"<tr><td>{_e(r.name)}</td><td>{r.compute / 1e3:,.3f}</td><td>{r.exposed / 1e3:,.3f}</td>"
        f"<td>{r.hidden / 1e3:,.3f}</td><td>{r.total / 1e3:,.3f}</td></tr>"
        for r in rows
    ]
    return (
        f"<details><summary>All {len(rows)} layer names (ms)</summary>\n<table>\n"
        "<thead><tr><th>Layer name</th><th>Compute</th><th>Exposed comm</th><th>Hidden comm</th>"
        "<th>Total</th></tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>\n</details>"
    )


_CSS = f"""
body {{ font-family: {_FONT}; color: #222; max-width: 960px; margin: 2em auto; padding: 0 1em; }}
h1 {{ font-size: 1.4em; margin-bottom: 0.2em; }}
h2 {{ font-size: 1.1em; margin-top: 1.8em; }}
table {{ border-collapse: collapse; margin-top: 1em; font-variant-numeric: tabular-nums; }}
th, td {{ padding: 0.25em 0.8em; border-bottom: 1px solid #e5e5e5; }}
th {{ text-align: left; background: #f6f6f6; }}
td + td, th + th {{ text-align: right; }}
tr.total td {{ font-weight: bold; border-top: 2px solid #999; }}
.sw {{ display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.5em; vertical-align: baseline; }}
.note, .empty {{ color: #666; }}
details {{ margin-top: 1em; }}
.chart svg {{ width: 100%; height: auto; }}
"""


def write_all(
    summary: dict[str, float],
    layers: Table,
    title: str,
    *,
    stages: Table | None = None,
    png: str | os.PathLike[str] | None = None,
    svg: str | os.PathLike[str] | None = None,
    html: str | os.PathLike[str] | None = None,
) -> None:
    """Draw :func:`figure` once and write it as PNG, SVG and an offline HTML page (those given)."""
    fig = figure(summary, layers, title, stages)
    # Fixed ids and no date or creator: the same run writes the same bytes.
    inline = _save(fig, png, svg)
    if html is not None:
        _write_html(summary, layers, title, inline[inline.index("<svg") :], html)


def _write_html(
    summary: dict[str, float], layers: Table, title: str, svg: str, path: str | os.PathLike[str]
) -> None:
    """The figure's SVG inline in one offline HTML page, plus the numbers in tables."""
    parts, total = _breakdown(summary)
    rows = _layer_rows(layers)

    sections = [
        f"<h2>Iteration time: {_e(_duration(total))}</h2>",
        f'<div class="chart">{svg}</div>',
        _summary_table(parts, total),
        f"<h2>{_e(_layers_title(rows))}</h2>",
        '<p class="note">Summed over every row with that layer name. Compute is fwd + wg + ig compute; '
        "exposed comm is communication the iteration waits for; hidden comm is the rest of the "
        "communication, overlapped with compute.</p>",
    ]
    if rows:
        sections.append(_layers_table(rows))
    doc = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f"<h1>{_e(title)}</h1>\n" + "\n".join(sections) + "\n</body>\n</html>\n"
    )
    # newline="\n": the same bytes on every platform, so pages can be diffed between runs.
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(doc)


# ---------------------------------------------------------------- goodput


def goodput_figure(
    timeline: list[tuple[float, str, float, float]],
    categories: dict[str, str],
    days: float | None,
    sweep: list[tuple[float, float, float, float]],
    marks: dict[str, float],
    title: str,
) -> Figure:
    """Two panels: one trial's interruptions over the window (training kept against wall days, a
    mark per interruption coloured by its cause's category), and goodput against the checkpoint
    interval (the trials' mean with their 5–95 % band, the intervals of `marks` as lines)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 7.5), layout="constrained")
    fig.suptitle(_mpl_text(title), fontsize=13)
    top, bottom = fig.subplots(2, 1)
    if days is None or not timeline:
        _empty(top, "no window simulated (--days)" if days is None else "no interruption in this trial")
    else:
        x = [0.0]
        y = [0.0]
        for day, _, _, kept in timeline:
            x.append(day)
            y.append(kept)
        top.plot(x, y, color="#1f77b4", linewidth=1.2, label="training kept (trial 0)")
        top.plot([0, days], [0, days], color="#bbbbbb", linewidth=0.8, linestyle="--", label="no failures")
        palette = ("#d62728", "#ff7f0e", "#9467bd", "#2ca02c", "#8c564b", "#7f7f7f", "#17becf")
        colours = {c: palette[i % len(palette)] for i, c in enumerate(dict.fromkeys(categories.values()))}
        seen: set[str] = set()
        for day, cause, _, kept in timeline:
            category = categories.get(cause, "other")
            label = category if category not in seen else None
            seen.add(category)
            top.plot([day], [kept], "|", color=colours.get(category, "#000000"), markersize=9, label=label)
        top.set_xlim(0, days)
        top.set_xlabel("wall clock, days")
        top.set_ylabel("training kept, days")
        top.set_title(f"Interruptions of one trial: {len(timeline)} in {days:g} days", fontsize=11)
        top.legend(fontsize=8, ncol=4, loc="upper left", frameon=False)
        _tidy(top)
    if not sweep:
        _empty(bottom, "no interval sweep")
    else:
        xs = [r[0] for r in sweep]
        bottom.fill_between(
            xs,
            [r[2] for r in sweep],
            [r[3] for r in sweep],
            color="#aec7e8",
            alpha=0.6,
            label="5–95 % of trials",
        )
        bottom.plot(xs, [r[1] for r in sweep], color="#1f77b4", marker="o", markersize=3, label="mean")
        styles = ("--", ":", "-.", (0, (5, 1)))
        for (name, at), style in zip(marks.items(), styles * 2, strict=False):
            if math.isfinite(at) and at > 0:
                bottom.axvline(
                    at, color="#444444", linestyle=style, linewidth=1, label=f"{name} {at:.3g} min"
                )
        bottom.set_xscale("log")
        bottom.set_xlabel("checkpoint interval, minutes of training")
        bottom.set_ylabel("effective training time")
        bottom.set_title("Goodput against the checkpoint interval (the same failures at each)", fontsize=11)
        bottom.legend(fontsize=8, frameon=False)
        _tidy(bottom)
    return fig


def _save(fig: Figure, png: str | os.PathLike[str] | None, svg: str | os.PathLike[str] | None) -> str:
    """Write `fig` as PNG and SVG (those given), the same bytes for the same figure; the SVG's text."""
    import io

    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "clustersim", "svg.fonttype": "path"}):
        # format= explicitly: the caller writes to temporary names whose suffix is not the format's.
        if png is not None:
            fig.savefig(png, dpi=110, format="png", metadata={"Software": None})
        text = io.StringIO()
        fig.savefig(
            text, format="svg", metadata={"Creator": None, "Date": None, "Format": None, "Type": None}
        )
    if svg is not None:
        with open(svg, "w", encoding="utf-8", newline="\n") as f:
            f.write(text.getvalue())
    return text.getvalue()


def write_goodput(
    figure_args: tuple[object, ...],
    title: str,
    rows: list[tuple[str, str]],
    *,
    png: str | os.PathLike[str] | None = None,
    svg: str | os.PathLike[str] | None = None,
    html: str | os.PathLike[str] | None = None,
) -> None:
    """:func:`goodput_figure` (its arguments but the title) as PNG, SVG and an offline HTML page
    with the key numbers (`rows`: label, value) in a table."""
    fig = goodput_figure(*figure_args, title=title)  # type: ignore[misc]
    text = _save(fig, png, svg)
    if html is None:
        return
    table = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows)
    doc = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<h1>{_e(title)}</h1>\n<div class="chart">{text[text.index("<svg") :]}</div>\n'
        f"<table>{table}</table>\n</body>\n</html>\n"
    )
    with open(html, "w", encoding="utf-8", newline="\n") as f:
        f.write(doc)
