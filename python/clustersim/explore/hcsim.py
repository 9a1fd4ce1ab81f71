"""The HCSim paper's studies (Li et al., JCRD 2025, §3.2–§3.3) on its LLaMA2-13B data-parallel
workload graph (`workload_graph.llama2_13b`) and its two systems (`platform.hcsim`):

    scale          Fig. 8: hcsim-pcie (no coherence) against hcsim-cxl, for H100 alone, H100+A100
                   and H100+V100, at each XPU count
    cxl-bandwidth  Fig. 10: hcsim-cxl with the CXL link rate swept (latency 200 ns), at each count
    cxl-latency    Fig. 11: hcsim-cxl with the CXL link latency swept (128 GB/s), at each count
    coherent-ring  Table 6: the ring all-reduce against the coherent ring (§3.3) on hcsim-cxl

Throughput is the paper's: batches the whole system processes per second, N·b / T for N XPUs of
b samples each and an iteration of T seconds. A mix is assigned per ToR as in the paper (§3.1:
the XPUs under one ToR are of one type): H100 under the first ToR, the slower type under every
other, so a mixed system is homogeneous up to one ToR's XPUs (128 with Table 5's 16 servers of 8).

A `Setup` models the system as clustersim does, or as HCSim does (`MODELS`). The paper's Fig. 11
and Table 6 claims rest on HCSim's choices: rings that pay every step's latency over many small
all-reduces, and the platform's link rates whatever the XPU (RESULTS.md, "with HCSim's modelling").

Each study returns a `Table`, one row per simulated point, and `findings` checks the paper's
claims about it on those rows (each with the numbers it rests on), so a claim that does not hold
in our model says so rather than being assumed.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from clustersim import workload_graph
from clustersim.errors import InputError
from clustersim.platform import hcsim
from clustersim.table import Table

STUDIES = ("scale", "cxl-bandwidth", "cxl-latency", "coherent-ring")
MIXES = {"h100": None, "h100+a100": "a100", "h100+v100": "v100"}
"""The paper's systems (Fig. 8): H100 alone, or H100 under the first ToR and the other type beyond."""
SCALES = (64, 128, 256, 512, 1024)
BANDWIDTHS_GBPS = (32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)
LATENCIES_NS = (100.0, 200.0, 500.0, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5)
RING_SYSTEMS = (("h100", 64), ("h100", 256), ("h100+a100", 256), ("h100+v100", 256))
"""Table 6's systems: 64 H100, 256 H100, 128 H100 + 128 A100, 128 H100 + 128 V100."""
CXL_GBPS, CXL_NS = 128.0, 200.0  # §3.2 (1): the CXL link unless a study sweeps it


@dataclass(frozen=True)
class Setup:
    """What every point of a study shares: the workload graph's size and the system's shape."""

    layers: int = 40
    batch: int = 1
    servers_per_tor: int = 16
    xpus_per_server: int = 8
    algorithm: str = "ring"  # the paper's all-reduce (Table 6's "traditional ring")
    # Bytes an XPU keeps in flight to CXL / host memory (Little's law bounds its reads); None: the
    # platform's default (the protocols' tag limits), inf: unbounded, as HCSim's flows are.
    cxl_window_bytes: float | None = None
    dram_window_bytes: float | None = None
    sync: str = "decoder"  # one gradient all-reduce per decoder, or per layer (the paper's graph)
    collectives: str = "nccl"  # how collectives are priced (workload_graph.COLLECTIVES)
    # Every all-reduce starts once its gradients are ready (HCSim's engine starts every ready
    # vertex), instead of one at a time on the job's communicator (NCCL's order; both models).
    concurrent: bool = False

    @property
    def per_tor(self) -> int:
        return self.servers_per_tor * self.xpus_per_server


MODELS = {
    "clustersim": {},
    "hcsim": {
        "sync": "layer",
        "collectives": "cm02",
        "cxl_window_bytes": math.inf,
        "dram_window_bytes": math.inf,
    },
}
"""How a study models the system: clustersim's (one all-reduce per decoder, NCCL's pipelined
collectives, reads bounded by their window) or HCSim's own (§2–§3.1: an all-reduce per neural
layer, SimGrid's CM02 paying every ring step's latency, reads as flows of any size in flight).
Both run the all-reduces of the job's communicator one at a time, as NCCL does; the paper does not
say whether HCSim does, and Fig. 11's claims rest on it (`Setup.concurrent`; RESULTS.md)."""


def mix_of(name: str, xpus: int, per_tor: int) -> list[tuple[str, int]]:
    """(type, count) in rank order: H100 under the first ToR, the mix's other type beyond it."""
    if name not in MIXES:
        raise InputError(f"command line: --mixes: unknown '{name}' (valid: {', '.join(MIXES)})")
    other = MIXES[name]
    if other is None or xpus <= per_tor:
        return [("h100", xpus)]
    return [("h100", per_tor), (other, xpus - per_tor)]


@functools.lru_cache(maxsize=4)
def _graph(layers: int, batch: int, sync: str) -> str:
    return workload_graph.normalize(json.dumps(workload_graph.llama2_13b(batch, layers=layers, sync=sync)))


def point(
    setup: Setup,
    template: str,
    mix: str,
    xpus: int,
    *,
    cxl_gbps: float = CXL_GBPS,
    cxl_ns: float = CXL_NS,
    algorithm: str | None = None,
) -> dict[str, Any]:
    """One simulated iteration: the row of a study's table. The time breakdown is that of the
    rank class that sets the pace (the one least idle)."""
    algorithm = algorithm or setup.algorithm
    windows = {
        k: v
        for k, v in (
            ("cxl_window_bytes", setup.cxl_window_bytes),
            ("dram_window_bytes", setup.dram_window_bytes),
        )
        if v is not None
    }
    platform = hcsim(
        template,
        mix_of(mix, xpus, setup.per_tor),
        links={"cxl": (cxl_gbps, cxl_ns)},
        servers_per_tor=setup.servers_per_tor,
        xpus_per_server=setup.xpus_per_server,
        **windows,
    )
    graph = _graph(setup.layers, setup.batch, setup.sync)
    r = workload_graph.run(
        graph, platform, algorithm=algorithm, collectives=setup.collectives, concurrent=setup.concurrent
    )
    seconds = r["iteration_end_ns"][-1] / 1e9
    pace = min(r["classes"], key=lambda c: c["idle_ns"])
    return {
        "system": template,
        "mix": mix,
        "xpus": xpus,
        "cxl_GBps": cxl_gbps,
        "cxl_latency_ns": cxl_ns,
        "algorithm": algorithm,
        "layers": setup.layers,
        "batch": setup.batch,
        "servers_per_tor": setup.servers_per_tor,
        "xpus_per_server": setup.xpus_per_server,
        "sync": setup.sync,
        "collectives": setup.collectives,
        "concurrent": setup.concurrent,
        "cxl_window_bytes": _window(setup.cxl_window_bytes),
        "dram_window_bytes": _window(setup.dram_window_bytes),
        "iteration_s": seconds,
        "batch_per_s": xpus * setup.batch / seconds,
        "compute_s": pace["compute_ns"] / 1e9,
        "exposed_read_s": pace["read_ns"] / 1e9,
        "exposed_collective_s": pace["collective_ns"] / 1e9,
    }


def _window(window: float | None) -> str:
    """A read window as a row shows it (the third part of a model, beside sync and collectives):
    bytes, inf (unbounded) or default (the platform's); text, so JSON carries inf."""
    return "default" if window is None else "inf" if math.isinf(window) else f"{window:.0f}"


def _table(rows: Iterable[dict[str, Any]], progress: Callable[[dict[str, Any]], None] | None) -> Table:
    done = []
    for row in rows:
        done.append(row)
        if progress is not None:
            progress(row)
    return Table({k: [r[k] for r in done] for k in done[0]} if done else {})


Progress = Callable[[dict[str, Any]], None] | None


def scale(
    setup: Setup,
    scales: Sequence[int] = SCALES,
    mixes: Sequence[str] = tuple(MIXES),
    progress: Progress = None,
) -> Table:
    """Fig. 8: both systems, each mix, each XPU count."""
    return _table(
        (point(setup, t, m, n) for m in mixes for n in scales for t in ("hcsim-pcie", "hcsim-cxl")), progress
    )


def cxl_bandwidth(
    setup: Setup,
    scales: Sequence[int] = (64, 256),
    bandwidths: Sequence[float] = BANDWIDTHS_GBPS,
    mix: str = "h100",
    progress: Progress = None,
) -> Table:
    """Fig. 10: hcsim-cxl, CXL link rate swept at 200 ns."""
    return _table(
        (point(setup, "hcsim-cxl", mix, n, cxl_gbps=b) for n in scales for b in bandwidths), progress
    )


def cxl_latency(
    setup: Setup,
    scales: Sequence[int] = (64, 256),
    latencies_ns: Sequence[float] = LATENCIES_NS,
    mix: str = "h100",
    progress: Progress = None,
) -> Table:
    """Fig. 11: hcsim-cxl, CXL link latency swept at 128 GB/s."""
    return _table(
        (point(setup, "hcsim-cxl", mix, n, cxl_ns=ns) for n in scales for ns in latencies_ns), progress
    )


def coherent_ring(
    setup: Setup,
    systems: Sequence[tuple[str, int]] = RING_SYSTEMS,
    cxl_ns: float = CXL_NS,
    progress: Progress = None,
) -> Table:
    """Table 6: ring against coherent ring all-reduce on hcsim-cxl, each (mix, XPUs)."""
    return _table(
        (
            point(setup, "hcsim-cxl", m, n, cxl_ns=cxl_ns, algorithm=a)
            for m, n in systems
            for a in ("ring", "coherent_ring")
        ),
        progress,
    )


# --- the paper's claims, checked on a table ---------------------------------------------------------

Finding = tuple[str, bool, str]
"""(the paper's claim, whether our rows bear it out, the numbers it rests on)."""


def _by(t: Table, *keys: str) -> dict[tuple[Any, ...], float]:
    return {tuple(r[k] for k in keys): r["batch_per_s"] for r in t.rows()}


def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


def scale_findings(t: Table, per_tor: int) -> list[Finding]:
    got = _by(t, "system", "mix", "xpus")
    mixes = list(dict.fromkeys(t["mix"]))
    scales = sorted(set(t["xpus"]))
    gains = {(m, n): got["hcsim-cxl", m, n] / got["hcsim-pcie", m, n] - 1 for m in mixes for n in scales}
    out: list[Finding] = [
        (
            "coherent (hcsim-cxl) beats non-coherent (hcsim-pcie) at every scale and mix",
            all(g > 0 for g in gains.values()),
            "cxl over pcie: " + ", ".join(f"{m} {n}: {_pct(g)}" for (m, n), g in gains.items()),
        )
    ]
    within = [n for n in scales if n <= per_tor]
    beyond = [n for n in scales if n > per_tor]
    for m in mixes:
        if MIXES.get(m) is None or not within or not beyond:
            continue
        for system in ("hcsim-pcie", "hcsim-cxl"):
            a, b = within[-1], beyond[0]
            per_a, per_b = got[system, m, a] / a, got[system, m, b] / b
            drop = per_b / per_a - 1
            out.append(
                (
                    f"{m} on {system}: throughput per XPU jumps down past the first ToR ({a} → {b} XPUs)",
                    per_b < 0.8 * per_a,
                    f"batch/s {got[system, m, a]:.4g} → {got[system, m, b]:.4g}; per XPU {_pct(drop)}",
                )
            )
    return out


def _series(t: Table, x: str) -> dict[int, list[tuple[float, float]]]:
    out: dict[int, list[tuple[float, float]]] = {}
    for r in t.rows():
        out.setdefault(r["xpus"], []).append((r[x], r["batch_per_s"]))
    return {n: sorted(v) for n, v in out.items()}


def bandwidth_findings(t: Table) -> list[Finding]:
    out: list[Finding] = []
    for n, s in _series(t, "cxl_GBps").items():
        steps = [(b1, y1 / y0 - 1) for (_, y0), (b1, y1) in zip(s, s[1:], strict=False)]
        rising = all(g > -1e-6 for _, g in steps)
        diminishing = len(steps) >= 2 and steps[-1][1] < steps[0][1] and steps[0][1] > 0
        detail = ", ".join(f"→{b:g} GB/s {_pct(g)}" for b, g in steps)
        out.append(
            (f"{n} XPUs: more CXL bandwidth helps, with diminishing returns", rising and diminishing, detail)
        )
    return out


def latency_findings(t: Table) -> list[Finding]:
    series = _series(t, "cxl_latency_ns")
    out: list[Finding] = []
    loss_at_max = {}
    for n, s in series.items():
        base = s[0][1]
        small = [y / base - 1 for ns, y in s if ns <= 1e3]
        large = [(ns, y / base - 1) for ns, y in s if ns >= 1e4]
        little = bool(small) and min(small) > -0.05
        strong = bool(large) and large[-1][1] < -0.2
        loss_at_max[n] = large[-1][1] if large else 0.0
        out.append(
            (
                # The paper: beyond 10 µs latency "gradually becomes" decisive; checked at the largest.
                f"{n} XPUs: latency matters little up to 1 µs (< 5 % lost), strongly beyond 10 µs (> 20 %"
                f" at the largest, {large[-1][0] / 1e3:g} µs)"
                if large
                else f"{n} XPUs: latency matters little up to 1 µs (< 5 % lost), strongly beyond 10 µs",
                little and strong,
                f"up to 1 µs: {_pct(min(small, default=0.0))}; "
                + ", ".join(f"{ns / 1e3:g} µs {_pct(g)}" for ns, g in large),
            )
        )
    if len(series) >= 2:
        ns_sorted = sorted(loss_at_max)
        losses = [loss_at_max[n] for n in ns_sorted]
        out.append(
            (
                "high latency costs more at larger scale",
                all(b < a for a, b in zip(losses, losses[1:], strict=False)),
                ", ".join(f"{n} XPUs {_pct(g)}" for n, g in zip(ns_sorted, losses, strict=True))
                + " at the largest latency",
            )
        )
    return out


def ring_gains(t: Table) -> dict[tuple[str, int], float]:
    got = _by(t, "mix", "xpus", "algorithm")
    keys = list(dict.fromkeys((m, n) for m, n, _ in got))
    return {(m, n): got[m, n, "coherent_ring"] / got[m, n, "ring"] - 1 for m, n in keys}


def ring_findings(t: Table) -> list[Finding]:
    gains = ring_gains(t)
    detail = ", ".join(f"{m} {n}: {_pct(g)}" for (m, n), g in gains.items())
    out: list[Finding] = [
        (
            "the coherent ring gives a gain, and a small one (under 10 %)",
            all(0 < g < 0.1 for g in gains.values()),
            detail,
        )
    ]
    homogeneous = sorted((n, g) for (m, n), g in gains.items() if MIXES.get(m) is None)
    if len(homogeneous) >= 2:
        out.append(
            (
                "the gain grows with scale (H100 alone)",
                all(b[1] > a[1] for a, b in zip(homogeneous, homogeneous[1:], strict=False)),
                ", ".join(f"{n}: {_pct(g)}" for n, g in homogeneous),
            )
        )
    for n in sorted({n for _, n in gains}):
        at = {m: g for (m, k), g in gains.items() if k == n}
        if "h100" in at and len(at) >= 2:
            # Faster XPUs: H100 alone > H100+A100 > H100+V100 (A100, V100 slower in FP32).
            order = [m for m in MIXES if m in at]
            out.append(
                (
                    f"the gain grows with XPU speed at {n} XPUs",
                    all(at[a] > at[b] for a, b in zip(order, order[1:], strict=False)),
                    ", ".join(f"{m} {_pct(at[m])}" for m in order),
                )
            )
    return out


# --- writing ------------------------------------------------------------------------------------------


def csv_rows(t: Table) -> list[list[Any]]:
    return [t.columns, *([r[c] for c in t.columns] for r in t.rows())]


def figure(study: str, t: Table) -> Any:
    """The study's plot (plotly), drawn as the paper's figure: batch/s against its variable."""
    import plotly.graph_objects as go

    fig = go.Figure()
    if study == "coherent-ring":
        labels = list(dict.fromkeys(f"{m} × {n}" for m, n in zip(t["mix"], t["xpus"], strict=True)))
        for a in ("ring", "coherent_ring"):
            ys = [r["batch_per_s"] for r in t.rows() if r["algorithm"] == a]
            fig.add_bar(x=labels, y=ys, name=a.replace("_", " "))
        fig.update_layout(barmode="group", xaxis_title="system (mix × XPUs)")
    else:
        x, title, curve = {
            "scale": ("xpus", "XPUs", lambda r: f"{r['mix']}, {r['system']}"),
            "cxl-bandwidth": ("cxl_GBps", "CXL link bandwidth (GB/s)", lambda r: f"{r['xpus']} XPUs"),
            "cxl-latency": ("cxl_latency_ns", "CXL link latency (ns)", lambda r: f"{r['xpus']} XPUs"),
        }[study]
        lines: dict[str, list[tuple[float, float]]] = {}
        for r in t.rows():
            lines.setdefault(curve(r), []).append((r[x], r["batch_per_s"]))
        for name, pts in lines.items():
            pts.sort()
            dash = "dash" if "pcie" in name else "solid"
            fig.add_scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], name=name, line={"dash": dash})
        fig.update_xaxes(type="log", title=title)
    titles = {
        "scale": "Coherent vs non-coherent (HCSim Fig. 8)",
        "cxl-bandwidth": "CXL bandwidth (HCSim Fig. 10), latency 200 ns",
        "cxl-latency": "CXL latency (HCSim Fig. 11), 128 GB/s",
        "coherent-ring": "Ring vs coherent ring all-reduce (HCSim Table 6)",
    }
    # The model every row shares (Setup): the page says which one it plots.
    r = next(t.rows(), None)
    sizes = model = ""
    if r is not None:
        servers = r["servers_per_tor"]
        sizes = (
            f" ({r['layers']} decoders, batch {r['batch']}, ToRs of {servers} server{'s' * (servers != 1)}"
            f" of {r['xpus_per_server']} XPUs)"
        )
        model = (
            f" (all-reduce per {r['sync']}, {r['collectives']} collectives"
            f"{', concurrent' if r['concurrent'] else ''}, CXL read window {r['cxl_window_bytes']},"
            f" DRAM read window {r['dram_window_bytes']})"
        )
    fig.update_layout(
        title=f"LLaMA2-13B data parallel{sizes}: {titles[study]}{model}",
        yaxis_title="batch/s",
        template="plotly_white",
    )
    return fig


def html(study: str, t: Table, findings: list[Finding]) -> str:
    """A self-contained page (plotly.js embedded: it opens without a network): the plot and the
    findings."""
    import html as html_escape

    body = figure(study, t).to_html(full_html=True, include_plotlyjs=True)
    esc = html_escape.escape
    notes = "".join(
        f"<li><b>{'holds' if ok else 'does not hold'}</b>: {esc(claim)} — {esc(d)}</li>"
        for claim, ok, d in findings
    )
    return body.replace("</body>", f"<ul>{notes}</ul></body>", 1)


def text_table(t: Table) -> str:
    """The table as aligned text: numbers to 4 significant figures."""

    def cell(v: Any) -> str:
        return f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else str(v)

    cells = [t.columns, *([cell(r[c]) for c in t.columns] for r in t.rows())]
    widths = [max(len(row[i]) for row in cells) for i in range(len(t.columns))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells)
