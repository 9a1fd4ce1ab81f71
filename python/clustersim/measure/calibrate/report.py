"""What `clustersim calibrate` writes and prints: the side-by-side table per series, the JSON
report, SimAI's busbw.yaml (formats.md §2: line 1 skipped; sections TP/DP; `key,: GB/s`)."""

from __future__ import annotations

from typing import Any

from clustersim.calibration import SCALE_UP
from clustersim.measure.calibrate.fit import AlphaBeta, relative_errors, rms
from clustersim.measure.calibrate.series import Series

BUSBW_KEYS = ("allreduce", "allgather", "reducescatter", "alltoall")


def series_doc(
    s: Series, ab: AlphaBeta, link_class: str, before: list[float] | None, after: list[float] | None
) -> dict[str, Any]:
    fitted = [ab.time_s(x) for x in s.x]
    doc: dict[str, Any] = {
        "source": s.source,
        "kind": s.kind,
        "ranks": s.ranks,
        "group_size": s.group_size,
        "link_class": link_class,
        "alpha_us": ab.alpha_s * 1e6,
        "bandwidth_GBps": ab.bandwidth_GBps,
        "sizes": s.sizes,
        "measured_s": s.times_s,
        "fit_s": fitted,
        "fit_residual": _residual(fitted, s.times_s),
    }
    for name, times in (("before", before), ("after", after)):
        if times is not None:
            doc[f"{name}_s"] = times
            doc[f"{name}_residual"] = _residual(times, s.times_s)
    return doc


def _residual(model: list[float], measured: list[float]) -> dict[str, float]:
    err = relative_errors(model, measured)
    return {"rms": rms(err), "max_abs": max(abs(e) for e in err)}


def print_series(doc: dict[str, Any]) -> None:
    what = doc["kind"] if doc["group_size"] is None else f"bwtest g={doc['group_size']}"
    print(f"# {doc['source']}: {what} on {doc['ranks']} ranks ({doc['link_class']})")
    cols = [("measured", "measured_s"), ("fit", "fit_s"), ("before", "before_s"), ("after", "after_s")]
    cols = [(name, key) for name, key in cols if key in doc]
    head = "".join(f"{name + ' (us)':>16}" + (f"{'err':>8}" if k else "") for k, (name, _) in enumerate(cols))
    print(f"#{'size (B)':>13}{head}")
    for i, size in enumerate(doc["sizes"]):
        t = doc["measured_s"][i]
        row = f"{t * 1e6:>16.2f}"
        for _, key in cols[1:]:
            row += f"{doc[key][i] * 1e6:>16.2f}{(doc[key][i] - t) / t:>+8.1%}"
        print(f" {size:>13}{row}")
    bw = "busbw" if doc["group_size"] is None else "per-rank bandwidth"
    line = f"# fit: α = {doc['alpha_us']:.2f} us, {bw} = {doc['bandwidth_GBps']:.2f} GB/s"
    for name in ("fit", "before", "after"):
        if f"{name}_residual" in doc:
            r = doc[f"{name}_residual"]
            line += f"; {name} rms {r['rms']:.1%}, max {r['max_abs']:.1%}"
    print(line)


def busbw_yaml(docs: list[dict[str, Any]], sources: list[str]) -> str | None:
    """SimAI's busbw.yaml of the collective series' fitted bus bandwidths: TP for scale-up
    groups, DP for scale-out ones; the mean where several series give one key. None if none."""
    values: dict[tuple[str, str], list[float]] = {}
    for d in docs:
        if d["kind"] in BUSBW_KEYS:
            section = "TP" if d["link_class"] == SCALE_UP else "DP"
            values.setdefault((section, d["kind"]), []).append(d["bandwidth_GBps"])
    if not values:
        return None
    lines = [f"clustersim calibrate: busbw (GB/s) fitted from {', '.join(sources)}"]
    for section in ("TP", "DP"):
        keys = [k for k in BUSBW_KEYS if (section, k) in values]
        if keys:
            lines.append(f"{section}:")
            lines += [f"{k},: {sum(values[section, k]) / len(values[section, k]):.6g}" for k in keys]
    return "\n".join(lines) + "\n"
