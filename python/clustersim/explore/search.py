"""Parallel-plan search (`clustersim search`): the best plans of a model on a cluster, exactly as
simulating every plan would rank them, without simulating every plan.

The engine enumerates the plans by `train`'s own rules and memory model
(crates/engine/src/training/search.rs) over every plan dimension `clustersim.plan` marks as a
search axis (sizes, SP, recompute, the optimizer's sharding, the communication overlaps). For each
plan that fits it works out a lower bound on the iteration time (training/bound.rs: compute at
the kernel model's times, the collectives on the compute's chain at their prices, the pipeline's
minimum bubble), never above the simulated time. Branch and bound: plans are simulated best bound
first, in parallel with the GIL released (training/batch.rs), each exactly as `train` runs it
alone; a plan whose bound cannot beat the k-th best simulated so far is never simulated. The top
`top` plans are then exactly those of simulating everything, in the same order. Plans and
results cross as columns; collective prices are kept across the whole search.
"""

from __future__ import annotations

import bisect
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from clustersim import _engine, provenance
from clustersim.errors import InputError
from clustersim.plan import BY_NAME, OPTIONS, signature, values
from clustersim.table import Table
from clustersim.training import input_document, resolve_plan

#: The options search takes as `train` does (the batch apart: `gbs` or `max_gbs`).
FIXED = tuple(o for o in OPTIONS if o.search == "fixed" and o.name not in ("model", "gbs"))
#: The plan sizes it tries: every value `train` accepts, or those given.
AXES = tuple(o.name for o in OPTIONS if o.search == "axis" and o.type is int)
RECOMPUTE = BY_NAME["recompute"].choices
#: The on/off dimensions it tries: SP and the communication overlaps (`clustersim.plan`).
SWITCHES = tuple(o.name for o in OPTIONS if o.search == "axis" and o.type is bool)
#: Every option search varies (the optimizer is its own keyword: DDP, distributed optimizer, ZeRO).
VARIED = tuple(o.name for o in OPTIONS if o.search == "axis")
OPTIMIZERS = ("ddp", "distributed_optimizer", *(f"zero{stage}" for stage in BY_NAME["zero"].choices))
#: Every axis by its name on the command line (`--only AXIS=…`, `--exclude AXIS=…`).
SPACE_AXES = (*AXES, *SWITCHES, "recompute", "optimizer")
PLAN_COLUMNS = (*AXES, "gbs", "sp", "optimizer", "recompute", *(s for s in SWITCHES if s != "sp"))
#: How each plan column reads in a sentence.
LABELS = {"tp": "TP", "pp": "PP", "vpp": "VPP", "ep": "EP", "cp": "CP", "mbs": "MBS", "gbs": "GBS"}
#: The engine's name of each on/off overlap (the field of its `overlap` options).
_ENGINE_SWITCH = {o.name: (o.engine or o.name).rsplit(".", 1)[-1] for o in OPTIONS if o.name in SWITCHES}
_SPACE_COLUMNS = (*PLAN_COLUMNS, "dp", "micro_batches", "memory_gb", "params_gb")
_SPACE_COLUMNS += ("grads_and_optimizer_gb", "activations_gb")


def part_column(part: str) -> str:
    """A breakdown part as a column name: "exposed TP comm" → "exposed_tp_comm_s"."""
    return part.lower().replace(" ", "_") + "_s"


class SearchResult(NamedTuple):
    """The simulated plans of a search, best first: each plan's sizes and options, memory per GPU
    (GB), the lower bound of its iteration time (`bound_s`), iteration_s, tokens_per_s, mfu and
    where the time goes (`compute_s`, `exposed_…_comm_s`, `bubble_s`) — one row per plan
    simulated, in `plans`. The first `top_k` rows are exactly exhaustive simulation's top
    `top_k` (when `complete`); the rows after them are correct, but pruned plans may lie between
    them (`top_k` None: every plan that fits was simulated, the whole table is the ranking)."""

    model: str
    accelerator: str
    gpus: int
    #: Combinations of the axes' values tried, valid or not (what Calculon counts as candidates).
    visited: int
    #: Valid plans enumerated (train's rules), each screened by its lower bound.
    candidates: int
    #: Of the plans whose memory was checked (`checked`), those that fit in `memory_gb` per GPU
    #: (with `top_k` None every valid plan is checked).
    feasible: int
    memory_gb: float
    plans: Table
    #: Breakdown parts (train's names, "compute", "exposed TP comm", …, "bubble"), in order.
    parts: list[str]
    #: Wall-clock seconds of the enumeration, the bounds and the simulations.
    seconds: float
    #: The plans the ranking is exact for (None: every plan that fits was simulated).
    top_k: int | None = None
    #: Plans the branch and bound reached: memory checked, simulated if they fit.
    checked: int = 0
    #: Plans whose bound could not beat the k-th best: neither simulated nor memory-checked.
    pruned: int = 0
    #: Plans neither reached nor pruned when the search stopped early (0 when complete).
    unexplored: int = 0
    #: Why it stopped early: "time budget" or "interrupted"; None when complete.
    stopped: str | None = None
    #: What made it: command, version, the space searched (as the plan), model, backend
    #: (`clustersim.provenance`).
    provenance: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return (
            f"SearchResult({self.model!r} on {self.gpus} × {self.accelerator}: {self.candidates} plans,"
            f" {self.feasible} fit, {self.simulated} simulated)"
        )

    @property
    def simulated(self) -> int:
        return len(self.plans)

    @property
    def complete(self) -> bool:
        return self.stopped is None

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
        changed = [c for c in PLAN_COLUMNS if c in best and best[c] != second[c]]
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

    def summary(self) -> str:
        """The counts in a sentence: the space, what was simulated and pruned, and how it ended."""
        exact = (
            "every plan that fits simulated"
            if self.top_k is None
            else f"the top {self.top_k} exact"
            if self.complete
            else f"stopped ({self.stopped}) with {self.unexplored} plans unexplored: the best found so far"
        )
        rate = self.candidates / self.seconds if self.seconds > 0 else math.inf
        return (
            f"{self.model} on {self.gpus} × {self.accelerator}: {self.visited} combinations tried,"
            f" {self.candidates} valid plans screened; {self.checked} reached, of which"
            f" {self.checked - self.feasible} do not fit in {self.memory_gb:g} GB per GPU and"
            f" {self.simulated} were simulated; {self.pruned} pruned by their bound;"
            f" {self.seconds:.2f} s ({rate:.0f} plans/s; {exact})"
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
            "checked": self.checked,
            "simulated": self.simulated,
            "pruned": self.pruned,
            "unexplored": self.unexplored,
            "stopped": self.stopped,
            "top_k": self.top_k,
            "memory_gb": self.memory_gb,
            "seconds": self.seconds,
            "plans_per_s": self.plans_per_s,
            "why": self.why(),
            "provenance": self.provenance,
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
    if column in SWITCHES:
        return f"{column.replace('_', ' ')} {'on' if value else 'off'}"
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


def _valid(axis: str) -> Sequence[Any] | None:
    """The values an axis takes (None: whole numbers ≥ 1)."""
    if axis in SWITCHES:
        return (False, True)
    return {"recompute": RECOMPUTE, "optimizer": OPTIMIZERS}.get(axis)


class _Budget:
    """Progress, the time budget and the result so far of a branch and bound."""

    def __init__(self, progress: Callable[..., None] | None, seconds: float | None, start: float) -> None:
        self.progress, self.seconds, self.start = progress, seconds, start

    def over(self) -> bool:
        return self.seconds is not None and time.perf_counter() - self.start > self.seconds

    def report(self, fraction: float, note: str) -> None:
        if self.progress is not None:
            try:
                self.progress(fraction, note)
            except TypeError:
                self.progress(fraction)


def search(
    model: str | os.PathLike[str] | dict[str, Any],
    *,
    gbs: int | None = None,
    max_gbs: int | None = None,
    memory_gb: float | None = None,
    optimizer: Sequence[str] | None = None,
    top: int | None = 10,
    exclude: dict[str, Sequence[Any]] | None = None,
    time_budget: float | None = None,
    progress: Callable[..., None] | None = None,
    **options: Any,
) -> SearchResult:
    """The best parallel plans of `model` on `gpus` × `gpu` (`clustersim search`) over TP, PP,
    VPP, EP, CP, micro-batch size, SP, recompute, optimizer (ddp, distributed_optimizer,
    zero1–3) and the communication overlaps (overlap_grad_reduce, overlap_param_gather,
    tp_comm_overlap), each axis over all values `train` accepts or only those given (`tp=[1, 2]`,
    …), less those in `exclude` (`{"tp": [1]}`). Plans that need more than `memory_gb` per GPU
    (default: the accelerator's HBM) are dropped; of the rest, branch and bound simulates (on the
    analytical backend) only those whose lower bound can still beat the `top`-th best, so the
    best `top` are exactly exhaustive simulation's, in the same order (`top=None` simulates every
    plan that fits). The global batch is `gbs` exactly, or with `max_gbs` the largest multiple of
    each plan's DP not above it (Calculon's rule). `time_budget` (seconds) stops the search with
    the best found so far, as Ctrl-C (KeyboardInterrupt) does; the result says how many plans were
    left unexplored. `progress(fraction, note)` hears how far it got. The other `options` are
    `train`'s that search holds fixed (`clustersim.plan`: gpus, gpu, seq, the model's shape, …).
    Raises InputError on bad input and when no plan fits."""
    fixed = values({k: v for k, v in options.items() if k not in VARIED}, FIXED, "search")
    start = time.perf_counter()
    if (gbs is None) == (max_gbs is None):
        raise InputError("search: give the global batch as exactly one of --gbs and --max-gbs")
    batch = gbs if gbs is not None else max_gbs
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise InputError(f"search: {'gbs' if gbs is not None else 'max_gbs'}: must be a whole number ≥ 1")
    if top is not None and (not isinstance(top, int) or isinstance(top, bool) or top < 1):
        raise InputError(f"search: top: must be a whole number ≥ 1 or None, got {top!r}")
    if time_budget is not None and not (isinstance(time_budget, (int, float)) and time_budget > 0):
        raise InputError(f"search: time_budget: must be a positive number of seconds, got {time_budget!r}")
    given = dict(options, optimizer=optimizer)
    space = {axis: _choices(axis, given.get(axis), _valid(axis)) for axis in SPACE_AXES}
    excluded: dict[str, list[Any]] = {}
    for axis, drop in (exclude or {}).items():
        if axis not in SPACE_AXES:
            raise InputError(f"search: exclude: unknown axis '{axis}' (valid: {', '.join(SPACE_AXES)})")
        excluded[axis] = _choices(f"exclude {axis}", drop, _valid(axis)) or []

    # The cluster and model as train takes them; the plan's own options at train's defaults,
    # which the enumeration replaces.
    plan_options = {o.name: o.default for o in OPTIONS if o.name != "model"} | fixed | {"gbs": batch}
    spec, acc, plan, _ = resolve_plan(model, plan_options)
    document = input_document(spec, **plan)
    limit = float(acc["hbm_gb"] if memory_gb is None else memory_gb)
    if not math.isfinite(limit) or limit <= 0:
        raise InputError(f"search: memory_gb: must be a positive number of GB, got {memory_gb!r}")

    engine_space = {_ENGINE_SWITCH.get(k, k): v for k, v in space.items()}
    found = _engine.PlanSearch(
        _engine.TrainingInput(document), gbs=batch, at_most=gbs is None, **engine_space
    )
    valid = list(range(len(found)))
    if excluded:
        drop = {a: found.column(a) for a in excluded}
        valid = [i for i in valid if not any(drop[a][i] in vs for a, vs in excluded.items())]
    rule = "GBS" if gbs is not None else "GBS at most"
    what = f"{spec.get('name', 'model')} on {fixed['gpus']} × {acc['name']} with {rule} {batch}"
    if not valid:
        raise InputError(f"search: no valid plan for {what} within the given choices")
    budget = _Budget(progress, time_budget, start)
    ranked, stopped, unexplored = _branch_and_bound(found, valid, limit, top, budget)
    taken, not_fitting = found.taken
    if not ranked and stopped is None:
        least = min(found.column("memory_gb", valid))
        raise InputError(
            f"search: none of the {len(valid)} valid plans for {what} fits in {limit:g} GB per GPU"
            f" (the smallest needs {least:.1f} GB)"
        )
    done = [i for i in ranked if ranked[i].error is None]
    if not done:
        raise InputError(f"search: {next(iter(ranked.values())).error}" if ranked else "search: stopped")
    parts: list[str] = []
    for i in done:
        parts += [p for p in ranked[i].parts if p not in parts]
    # Best first; equal throughput keeps the enumeration order (stable sort): same inputs, same ranking.
    order = sorted(sorted(done), key=lambda i: -ranked[i].tokens_per_s)
    table = {k: found.column(k, order) for k in (*_SPACE_COLUMNS, "bound_s")}
    for k in ("iteration_s", "tokens_per_s", "mfu"):
        table[k] = [getattr(ranked[i], k) for i in order]
    for p in parts:
        table[part_column(p)] = [ranked[i].breakdown.get(p, 0.0) for i in order]
    return SearchResult(
        model=str(spec.get("name", "model")),
        accelerator=str(acc["name"]),
        gpus=fixed["gpus"],
        visited=found.visited,
        candidates=len(valid),
        feasible=taken - not_fitting,
        memory_gb=limit,
        plans=Table(table),
        parts=parts,
        seconds=time.perf_counter() - start,
        top_k=top,
        checked=taken,
        pruned=len(valid) - taken - unexplored,
        unexplored=unexplored,
        stopped=stopped,
        provenance=provenance.record(
            command=provenance.call_text("search", {"model": model, **given, "gbs": gbs, "max_gbs": max_gbs}),
            plan={**fixed, **space, "gbs": gbs, "max_gbs": max_gbs, "exclude": excluded, "top": top},
            model=provenance.model(spec),
            fabric=None,
            backend="analytical",
        ),
    )


search.__signature__ = signature(  # type: ignore[attr-defined]
    search,
    [(o.name, o.default, o.annotation) for o in FIXED]
    + [(name, None, f"Sequence[{BY_NAME[name].type.__name__}] | None") for name in VARIED],
)


class _Simulated(NamedTuple):
    iteration_s: float
    tokens_per_s: float
    mfu: float
    parts: list[str]
    breakdown: dict[str, float]
    error: str | None


def _branch_and_bound(
    found: Any, valid: list[int], memory_gb: float, top: int | None, budget: _Budget
) -> tuple[dict[int, _Simulated], str | None, int]:
    """Screen the plans `valid` by their lower bounds, then simulate those that fit in
    `memory_gb`, highest ceiling on tokens/s first, until no ceiling left can reach the `top`-th
    best throughput (all of them with `top` None). Returns the simulated plans by index, why it
    stopped early (or None), and how many plans were left unexplored then."""
    budget.report(0.0, f"screening {len(valid)} plans")
    found.screen(valid)
    n = len(valid)
    threads = os.cpu_count() or 1
    ranked: dict[int, _Simulated] = {}
    kth: list[float] = []  # the best `top` throughputs so far, ascending
    stopped = None
    simulated_s = 0.0

    def threshold() -> float:
        # A plan whose ceiling is below the k-th best can never enter the top k: pruned.
        return 0.0 if top is None or len(kth) < top else kth[0]

    try:
        while True:
            if ranked and budget.over():
                stopped = "time budget"
                break
            t0 = time.perf_counter()
            chunk = found.take(threshold(), 2 * threads, memory_gb)
            if not chunk:
                break
            got = found.simulate(chunk)
            simulated_s += time.perf_counter() - t0
            for k, i in enumerate(chunk):
                error, tps = got.error[k], got.tokens_per_s[k]
                breakdown = dict(zip(got.parts, got.breakdown_s[k], strict=True))
                ranked[i] = _Simulated(got.iteration_s[k], tps, got.mfu[k], list(got.parts), breakdown, error)
                if error is None and top is not None:
                    bisect.insort(kth, tps)
                    if len(kth) > top:
                        kth.pop(0)
            left = found.remaining(threshold())
            taken, _ = found.taken
            eta = simulated_s / len(ranked) * left
            best = max((r.tokens_per_s for r in ranked.values() if r.error is None), default=0.0)
            budget.report(
                (n - left) / n,
                f"screened {n}, simulated {len(ranked)}, pruned {n - taken - left},"
                f" best {best:,.0f} tokens/s, ETA ≤ {eta:.0f} s",
            )
    except KeyboardInterrupt:
        # Ctrl-C: the plans simulated so far are the result (a batch cut short is not counted).
        if not ranked:
            raise
        stopped = "interrupted"
    return ranked, stopped, found.remaining(threshold()) if stopped else 0
