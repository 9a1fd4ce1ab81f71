"""Parallel-plan search (`clustersim search`): every valid plan of a model on a cluster, those that
fit in memory simulated on the analytical backend, ranked by throughput.

The engine enumerates the plans by `train`'s own rules and memory model
(crates/engine/src/training/search.rs) and simulates them in parallel with the GIL released
(training/batch.rs), each exactly as `train` runs it alone; plans and results cross as columns.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.plan import BY_NAME, OPTIONS, signature, values
from clustersim.table import Table
from clustersim.training import input_document, resolve_plan

#: The options search takes as `train` does (the batch apart: `gbs` or `max_gbs`).
FIXED = tuple(o for o in OPTIONS if o.search == "fixed" and o.name not in ("model", "gbs"))
#: The plan sizes it tries: every value `train` accepts, or those given.
AXES = tuple(o.name for o in OPTIONS if o.search == "axis" and o.type is int)
RECOMPUTE = BY_NAME["recompute"].choices
#: The options search varies: the sizes, SP and recompute (the optimizer is its own keyword).
VARIED = (*AXES, "sp", "recompute")
OPTIMIZERS = ("ddp", "distributed_optimizer", *(f"zero{stage}" for stage in BY_NAME["zero"].choices))
PLAN_COLUMNS = (*AXES, "gbs", "sp", "optimizer", "recompute")
#: How each plan column reads in a sentence.
LABELS = {"tp": "TP", "pp": "PP", "vpp": "VPP", "ep": "EP", "cp": "CP", "mbs": "MBS", "gbs": "GBS"}
#: Plans simulated per engine call at least: few enough calls for a smooth progress bar, each
#: long enough that rayon's threads stay busy.
CHUNK = 16


def part_column(part: str) -> str:
    """A breakdown part as a column name: "exposed TP comm" → "exposed_tp_comm_s"."""
    return part.lower().replace(" ", "_") + "_s"


class SearchResult(NamedTuple):
    """The plans of a search, best first: each plan's sizes and options, memory per GPU (GB),
    iteration_s, tokens_per_s, mfu and where the time goes (`compute_s`, `exposed_…_comm_s`,
    `bubble_s`) — one row per plan that fits, in `plans`."""

    model: str
    accelerator: str
    gpus: int
    #: Combinations of the axes' values tried, valid or not (what Calculon counts as candidates).
    visited: int
    #: Valid plans enumerated (train's rules), before the memory filter.
    candidates: int
    #: Of those, the plans that fit in `memory_gb` per GPU (all simulated).
    feasible: int
    memory_gb: float
    plans: Table
    #: Breakdown parts (train's names, "compute", "exposed TP comm", …, "bubble"), in order.
    parts: list[str]
    #: Wall-clock seconds of the enumeration and the simulations.
    seconds: float

    def __repr__(self) -> str:
        return (
            f"SearchResult({self.model!r} on {self.gpus} × {self.accelerator}: {self.candidates} plans,"
            f" {self.feasible} fit)"
        )

    @property
    def plans_per_s(self) -> float:
        """Candidates (valid plans) handled per second, enumeration and simulation included."""
        return self.candidates / self.seconds if self.seconds > 0 else math.inf

    def top(self, k: int) -> Table:
        """The best `k` plans."""
        return Table({c: self.plans[c][:k] for c in self.plans.columns})

    @property
    def best(self) -> dict[str, Any] | None:
        return next(self.top(1).rows(), None)

    def why(self) -> str:
        """Why the best plan beats the runner-up: the plan fields that differ and the breakdown
        parts that differ most (seconds per iteration, the runner-up's scaled to the best's batch)."""
        if len(self.plans) < 2:
            return "only one plan fits" if len(self.plans) == 1 else "no plan fits"
        best, second = self.top(2).rows()
        changed = [c for c in PLAN_COLUMNS if best[c] != second[c]]
        fields = ", ".join(f"{_field(c, best[c])} instead of {_value(c, second[c])}" for c in changed)
        gain = best["tokens_per_s"] / second["tokens_per_s"] - 1
        scale = best["gbs"] / second["gbs"]
        diffs = [(p, best[part_column(p)] - second[part_column(p)] * scale) for p in self.parts]
        total = sum(abs(d) for _, d in diffs) or 1.0
        shown = [(p, d) for p, d in sorted(diffs, key=lambda x: -abs(x[1])) if abs(d) >= 0.05 * total][:3]
        parts = ", ".join(f"{p} {d:+.3g} s" for p, d in shown)
        return (
            f"the best beats the runner-up by {gain * 100:.3g} % in tokens/s ({fields}): {parts or 'a tie'}"
        )

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """What `clustersim search --json` prints: the counts and the best `top` plans (all by default)."""
        table = self.plans if top is None else self.top(top)
        return {
            "model": self.model,
            "accelerator": self.accelerator,
            "gpus": self.gpus,
            "visited": self.visited,
            "candidates": self.candidates,
            "feasible": self.feasible,
            "memory_gb": self.memory_gb,
            "seconds": self.seconds,
            "plans_per_s": self.plans_per_s,
            "why": self.why(),
            "plans": list(Table(table.to_dict()).rows()),
        }

    def to_pandas(self) -> Any:
        """Every simulated plan as a pandas DataFrame, best first (needs pandas)."""
        return self.plans.to_pandas()


def _field(column: str, value: Any) -> str:
    return (
        f"{LABELS.get(column, column)} {_value(column, value)}" if column in LABELS else _value(column, value)
    )


def _value(column: str, value: Any) -> str:
    if column == "sp":
        return "SP" if value else "no SP"
    if column == "recompute":
        return "no recompute" if value == "none" else f"{value} recompute"
    return str(value)


def _choices(name: str, values: Sequence[Any] | None, valid: Sequence[Any] | None = None) -> list[Any] | None:
    if values is None:
        return None
    if isinstance(values, (str, int)):
        values = [values]
    out = list(values)
    if not out:
        raise InputError(f"search: {name}: give at least one value")
    for v in out:
        if valid is not None:
            ok = any(v == x and type(v) is type(x) for x in valid)
        else:
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 1
        if not ok:
            what = f"one of {', '.join(map(str, valid))}" if valid is not None else "a whole number ≥ 1"
            raise InputError(f"search: {name}: {v!r} is not {what}")
    return out


def search(
    model: str | os.PathLike[str] | dict[str, Any],
    *,
    gbs: int | None = None,
    max_gbs: int | None = None,
    memory_gb: float | None = None,
    optimizer: Sequence[str] | None = None,
    progress: Callable[[float], None] | None = None,
    **options: Any,
) -> SearchResult:
    """Every valid parallel plan of `model` on `gpus` × `gpu` (`clustersim search`): TP, PP, VPP,
    EP, CP, micro-batch size, SP, recompute and optimizer (ddp, distributed_optimizer, zero1–3),
    each axis over all values `train` accepts or only those given (`tp=[1, 2]`, …). Plans that
    need more than `memory_gb` per GPU (default: the accelerator's HBM) are dropped, the rest
    simulated on the analytical backend and ranked by tokens/s. The global batch is `gbs`
    exactly, or with `max_gbs` the largest multiple of each plan's DP not above it (Calculon's
    rule). The other `options` are `train`'s that search holds fixed (`clustersim.plan`: gpus,
    gpu, seq, the model's shape, …). Raises InputError on bad input and when no plan fits."""
    fixed = values({k: v for k, v in options.items() if k not in VARIED}, FIXED, "search")
    start = time.perf_counter()
    if (gbs is None) == (max_gbs is None):
        raise InputError("search: give the global batch as exactly one of --gbs and --max-gbs")
    batch = gbs if gbs is not None else max_gbs
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise InputError(f"search: {'gbs' if gbs is not None else 'max_gbs'}: must be a whole number ≥ 1")
    space = {axis: _choices(axis, options.get(axis)) for axis in AXES}
    space["sp"] = _choices("sp", options.get("sp"), (False, True))
    space["recompute"] = _choices("recompute", options.get("recompute"), RECOMPUTE)
    space["dp"] = _choices("optimizer", optimizer, OPTIMIZERS)

    # The cluster and model as train takes them; the plan's own options at train's defaults,
    # which the enumeration replaces.
    plan_options = {o.name: o.default for o in OPTIONS if o.name != "model"} | fixed | {"gbs": batch}
    spec, acc, plan, _ = resolve_plan(model, plan_options)
    doc = json.dumps(input_document(spec, **plan))
    limit = float(acc["hbm_gb"] if memory_gb is None else memory_gb)
    if not math.isfinite(limit) or limit <= 0:
        raise InputError(f"search: memory_gb: must be a positive number of GB, got {memory_gb!r}")

    found = _engine.enumerate_plans(doc, json.dumps(space), gbs=batch, at_most=gbs is None, memory_gb=limit)
    visited = found.pop("visited")
    rule = "GBS" if gbs is not None else "GBS at most"
    what = f"{spec.get('name', 'model')} on {fixed['gpus']} × {acc['name']} with {rule} {batch}"
    if not found["fits"]:
        raise InputError(f"search: no valid plan for {what} within the given choices")
    keep = [i for i, fits in enumerate(found["fits"]) if fits]
    if not keep:
        least = min(found["memory_gb"])
        raise InputError(
            f"search: none of the {len(found['fits'])} valid plans for {what} fits in {limit:g} GB per GPU"
            f" (the smallest needs {least:.1f} GB)"
        )
    columns = {k: [v[i] for i in keep] for k, v in found.items() if k != "fits"}
    results = _simulate(_engine, doc, columns, progress)
    failed = [i for i, e in enumerate(results["error"]) if e is not None]
    if len(failed) == len(keep):
        raise InputError(f"search: {results['error'][0]}")
    parts = list(results["breakdown_s"])
    table = columns | {k: results[k] for k in ("iteration_s", "tokens_per_s", "mfu")}
    table |= {part_column(p): s for p, s in results["breakdown_s"].items()}
    # Best first; equal throughput keeps the enumeration order (stable sort): same inputs, same ranking.
    order = sorted(
        (i for i in range(len(keep)) if results["error"][i] is None), key=lambda i: -table["tokens_per_s"][i]
    )
    plans = Table({k: [v[i] for i in order] for k, v in table.items()})
    return SearchResult(
        model=str(spec.get("name", "model")),
        accelerator=str(acc["name"]),
        gpus=fixed["gpus"],
        visited=visited,
        candidates=len(found["fits"]),
        feasible=len(keep),
        memory_gb=limit,
        plans=plans,
        parts=parts,
        seconds=time.perf_counter() - start,
    )


search.__signature__ = signature(  # type: ignore[attr-defined]
    search,
    [(o.name, o.default, o.annotation) for o in FIXED]
    + [(name, None, f"Sequence[{BY_NAME[name].type.__name__}] | None") for name in VARIED],
)


def _simulate(
    engine: Any, doc: str, columns: dict[str, list[Any]], progress: Callable[[float], None] | None
) -> dict[str, Any]:
    """`simulate_plans` over the plan columns in chunks (progress between them), results joined."""
    n = len(columns["tp"])
    # Chunks also let Ctrl-C stop a long search between them.
    size = max(CHUNK * (os.cpu_count() or 1), math.ceil(n / 100))
    out: dict[str, Any] = {"breakdown_s": {}}
    for lo in range(0, n, size):
        chunk = {k: columns[k][lo : lo + size] for k in PLAN_COLUMNS}
        got = engine.simulate_plans(doc, chunk)
        for k in ("iteration_s", "tokens_per_s", "mfu", "error"):
            out.setdefault(k, []).extend(got[k])
        for part in got["breakdown_s"] | out["breakdown_s"]:
            old = out["breakdown_s"].setdefault(part, [0.0] * lo)
            old.extend(got["breakdown_s"].get(part, [0.0] * len(got["error"])))
        if progress is not None:
            progress(min(lo + size, n) / n)
    return out
