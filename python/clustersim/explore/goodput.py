"""Goodput over a long training run: how much of the wall clock a synchronous job on this cluster
spends training, and how many days it needs for a token budget, when its parts fail.

    goodput(model, gpus=, gbs=, …, days=54, tokens=None, checkpoint_interval_min=None, …)

The iteration's time, tokens per second and parameter count come from `clustersim.train` (the
engine's plan and parameter count); the checkpoint is the engine's `checkpoint_bytes` (bf16
weights and Adam's fp32 state) over the storage bandwidth; the failure rates are a profile of the
engine's failure catalog (`failure_profiles()`: Llama 3's Table 5), scaled to this job's GPUs,
servers and NICs. The engine's seeded Monte Carlo (`clustersim_engine::goodput`) runs `trials`
copies of the run; Daly's and Young's closed forms give the checkpoint interval it is compared
with. The model and its assumptions: docs/guides/goodput.md.
"""

from __future__ import annotations

import math
import os
from typing import Any, NamedTuple

from clustersim import _engine
from clustersim.api import TRAIN_OPTIONS, train
from clustersim.errors import InputError
from clustersim.plan import BY_NAME, GOODPUT_OPTIONS, signature, values

__all__ = ["GOODPUT_OPTIONS", "GoodputResult", "failure_profiles", "goodput"]

DAY_S = 86400.0
MIN_S = 60.0
#: Intervals of the goodput-against-interval sweep: Daly's optimum × 2^(k/4), k = −12 … 12.
SWEEP_STEPS = tuple(2 ** (k / 4) for k in range(-12, 13))

#: The plan options goodput takes: train's.
PLAN = TRAIN_OPTIONS


class Spread(NamedTuple):
    """A quantity over the trials."""

    mean: float
    std: float
    p5: float
    p50: float
    p95: float

    def scaled(self, k: float) -> Spread:
        return Spread(*(v * k for v in self))


class GoodputResult(NamedTuple):
    """A long run's goodput: the plan's iteration, the failures, the checkpoint and the Monte
    Carlo's spread (`to_dict()` is what `clustersim goodput --json` prints)."""

    model: str
    accelerator: str
    gpus: int
    iteration_s: float
    tokens_per_s: float
    params: int
    failures: str
    #: Per cause (the profile's order): name, label, category, effect, per, FIT, interruptions per
    #: day of this job and the simulated mean a trial over the window.
    causes: list[dict[str, Any]]
    checkpoint_bytes: float
    checkpoint_write_s: float
    restore_s: float
    restart_s: float
    #: The interval simulated, and the closed forms' (Young, Daly, the exact optimum) for the mean
    #: time between interruptions that lose work (planned stops lose none).
    checkpoint_interval_min: float
    young_min: float
    daly_min: float
    optimum_min: float
    #: The best interval of the simulated sweep (`sweep`).
    simulated_optimum_min: float
    trials: int
    seed: int
    #: Over `days`: effective training time, interruptions (and the closed form's goodput).
    days: float | None
    effective_training_time: Spread | None
    interruptions: Spread | None
    #: Daly's expected goodput counting every interruption as a restart that loses work.
    expected_goodput: float
    #: Where the window's wall time goes, mean fractions: training, lost, checkpoint, wait, restart.
    wall_fractions: dict[str, float] | None
    #: To `tokens`: days to the budget; without failures, `ideal_days`.
    tokens: float | None
    days_to_budget: Spread | None
    ideal_days: float | None
    unfinished: int
    #: Tokens per second kept through the failures: over the window (else to the budget).
    effective_tokens_per_s: float
    #: (interval_min, mean goodput, p5, p95) per interval of the sweep.
    sweep: list[tuple[float, float, float, float]]
    #: Trial 0's interruptions over `days`: (day, cause, lost_min, training days kept so far).
    timeline: list[tuple[float, str, float, float]]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self._asdict().items():
            out[k] = v._asdict() if isinstance(v, Spread) else v
        out["sweep"] = [
            dict(zip(("interval_min", "mean", "p5", "p95"), row, strict=True)) for row in self.sweep
        ]
        keys = ("day", "cause", "lost_min", "trained_days")
        out["timeline"] = [dict(zip(keys, row, strict=True)) for row in self.timeline]
        return out


def failure_profiles() -> list[Any]:
    """The engine's failure catalog: profiles (name, source, gpus, servers, nics, days, causes),
    each cause with its name, label, category, per (gpu/server/nic/job), effect and FIT."""
    return _engine.failure_profiles()


def _profile(name: str) -> Any:
    for p in _engine.failure_profiles():
        if p.name == name:
            return p
    known = ", ".join(p.name for p in _engine.failure_profiles())
    raise InputError(f"--failures: unknown failure profile '{name}' (known: {known})")


def _overrides(text: str | None, causes: list[str]) -> dict[str, float]:
    """--rates NAME=FIT,… as {name: FIT}; one-line errors naming the cause."""
    out: dict[str, float] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise InputError(f"--rates: expected NAME=FIT, got '{item.strip()}'")
        if name not in causes:
            raise InputError(f"--rates: unknown cause '{name}' (known: {', '.join(causes)})")
        try:
            fit = float(value)
        except ValueError:
            raise InputError(f"--rates {name}: must be a number ≥ 0 (FIT), got '{value.strip()}'") from None
        if not (fit >= 0 and math.isfinite(fit)):
            raise InputError(f"--rates {name}: must be a number ≥ 0 (FIT), got {value.strip()}")
        out[name] = fit
    return out


def _positive(name: str, value: float | None, *, zero: bool = False) -> None:
    if value is None:
        return
    ok = value >= 0 if zero else value > 0
    if isinstance(value, bool) or not ok or not math.isfinite(value):
        flag = "--" + name.replace("_", "-")
        raise InputError(f"{flag}: must be a number {'≥' if zero else '>'} 0, got {value}")


def goodput(
    model: str | os.PathLike[str] | dict[str, Any] | None = None, *, allow_oom: bool = False, **options: Any
) -> GoodputResult:
    """A long run of `model` with a parallel plan (the plan options of `clustersim.train`) under
    the failures of a catalog profile (`clustersim goodput`): the Monte Carlo's effective
    training time over `days` and days to a `tokens` budget, the checkpoint interval from
    Young's and Daly's formulas and from a simulated sweep. Every option:
    `help(clustersim.goodput)`; the model: docs/guides/goodput.md. Raises InputError on bad input
    and, unless `allow_oom`, on a plan that does not fit in memory."""
    own = values({k: v for k, v in options.items() if k in _OWN}, GOODPUT_OPTIONS, "goodput")
    plan = {k: v for k, v in options.items() if k not in _OWN}
    for name in ("rate_scale", "restart_min", "repair_hours"):
        _positive(name, own[name], zero=True)
    for name in ("days", "tokens", "checkpoint_interval_min", "storage_write_gbps", "storage_read_gbps"):
        _positive(name, own[name])
    for name, most in (("trials", 2**32 - 1), ("spare_servers", 2**64 - 1), ("seed", 2**64 - 1)):
        v = own[name]
        least = 1 if name == "trials" else 0
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not least <= v <= most):
            flag = "--" + name.replace("_", "-")
            raise InputError(f"{flag}: must be a whole number from {least} to {most}, got {v!r}")
    profile = _profile(own["failures"])
    names = [c.name for c in profile.causes]
    fits = [c.fit for c in profile.causes]
    for name, fit in _overrides(own["rates"], names).items():
        fits[names.index(name)] = fit

    result = train(model, allow_oom=allow_oom, **plan)
    data = result.data
    gpus = result.gpus
    # The job's parts (GPUs, servers, NICs) and each cause's rate: the engine's Profile::job_rates.
    per_server = plan.get("gpus_per_server") or BY_NAME["gpus_per_server"].default
    rates = _engine.failure_rates_per_hour(
        profile=profile.name,
        gpus=gpus,
        gpus_per_server=per_server,
        nics_per_server=plan.get("nics_per_server") or per_server,
        fits=fits,
    )
    per_hour = [r * own["rate_scale"] for r in rates]
    rate_per_s = sum(per_hour) / 3600.0
    mtbf_s = 1.0 / rate_per_s if rate_per_s > 0 else math.inf
    # The interval trades writes against work lost: planned stops save first and lose none, so
    # Young's and Daly's M is the mean time between the interruptions that lose work.
    losing_per_s = (
        sum(r for r, c in zip(per_hour, profile.causes, strict=True) if c.effect != "planned") / 3600
    )
    mtbf_losing_s = 1.0 / losing_per_s if losing_per_s > 0 else math.inf

    params = int(data["params"])
    ckpt_bytes = _engine.checkpoint_bytes(params)
    write_s = ckpt_bytes / (own["storage_write_gbps"] * 1e9)
    restore_s = ckpt_bytes / ((own["storage_read_gbps"] or own["storage_write_gbps"]) * 1e9)
    restart_s = own["restart_min"] * MIN_S
    resume_s = restart_s + restore_s
    _, young_s, daly_s, optimum_s = _engine.goodput_closed_form(
        interval_s=1.0, checkpoint_s=write_s, restart_s=resume_s, mtbf_s=mtbf_losing_s
    )
    interval_s = own["checkpoint_interval_min"] * MIN_S if own["checkpoint_interval_min"] else daly_s
    if not math.isfinite(interval_s):
        interval_s = 1e9  # nothing fails: a checkpoint at the end only
    expected = _engine.goodput_closed_form(
        interval_s=interval_s, checkpoint_s=write_s, restart_s=resume_s, mtbf_s=mtbf_s
    )[0]
    days, tokens = own["days"], own["tokens"]
    if days is None and tokens is None:
        days = profile.days

    # What every run simulated here shares; each adds its window, work and trial count.
    shared = dict(
        names=names,
        effects=[c.effect for c in profile.causes],
        rates_per_s=[r / 3600.0 for r in per_hour],
        interval_s=interval_s,
        checkpoint_s=write_s,
        restart_s=restart_s,
        restore_s=restore_s,
        spare_servers=own["spare_servers"],
        repair_s=own["repair_hours"] * 3600.0,
        seed=own["seed"],
    )

    def run(window_s: float, work_s: float, trials: int = own["trials"]) -> Any:
        return _engine.GoodputRun(**shared, window_s=window_s, work_s=work_s, trials=trials)

    window = budget = None
    simulated: list[float | None] = [None] * len(names)
    ett = interruptions = fractions = days_to = ideal = None
    unfinished = 0
    timeline: list[tuple[float, str, float, float]] = []
    if days is not None:
        window = run(days * DAY_S, math.inf)
        trials = window.simulate()
        ett = Spread(*trials.spread("goodput"))
        interruptions = Spread(*trials.spread("interruptions"))
        wall = days * DAY_S
        fractions = {
            "training": ett.mean,
            **{k: trials.spread(f"{k}_s")[0] / wall for k in ("lost", "checkpoint", "wait", "restart")},
        }
        for i, n in enumerate(trials.by_cause):
            simulated[i] = n / own["trials"]
        timeline = [
            (t / DAY_S, names[c], lost / MIN_S, kept / DAY_S) for t, c, lost, kept in window.timeline(0)
        ]
    if tokens is not None:
        work_s = tokens / result.tokens_per_s
        budget = run(math.inf, work_s)
        trials = budget.simulate()
        days_to = Spread(*trials.spread("wall_s")).scaled(1 / DAY_S)
        ideal = work_s / DAY_S
        unfinished = trials.unfinished
    if ett is not None:
        effective = result.tokens_per_s * ett.mean
    else:
        assert tokens is not None and days_to is not None
        effective = tokens / (days_to.mean * DAY_S)
    # Goodput against the interval, the same failures at each (a tenth of the trials, ≥ 100).
    base = window if window is not None else budget
    assert base is not None
    sweep_trials = max(100, own["trials"] // 10)
    grid = [(daly_s if math.isfinite(daly_s) else interval_s) * k for k in SWEEP_STEPS]
    probe = run(
        days * DAY_S if days is not None else math.inf,
        math.inf if days is not None else tokens / result.tokens_per_s,  # type: ignore[operator]
        trials=sweep_trials,
    )
    spreads = probe.interval_sweep(grid)
    means = [s[0] for s in spreads]
    best_s = _engine.best_interval(grid, means)
    n_causes = len(names)
    causes = [
        {
            "name": names[i],
            "label": profile.causes[i].label,
            "category": profile.causes[i].category,
            "effect": profile.causes[i].effect,
            "per": profile.causes[i].per,
            "fit": fits[i],
            "per_day": per_hour[i] * 24.0,
            # Mean interruptions of this cause a trial over the window (None without --days).
            "interruptions": simulated[i],
        }
        for i in range(n_causes)
    ]
    return GoodputResult(
        model=result.model,
        accelerator=result.accelerator,
        gpus=gpus,
        iteration_s=result.iteration_s,
        tokens_per_s=result.tokens_per_s,
        params=params,
        failures=profile.name,
        causes=causes,
        checkpoint_bytes=ckpt_bytes,
        checkpoint_write_s=write_s,
        restore_s=restore_s,
        restart_s=restart_s,
        checkpoint_interval_min=interval_s / MIN_S,
        young_min=young_s / MIN_S,
        daly_min=daly_s / MIN_S,
        optimum_min=optimum_s / MIN_S,
        simulated_optimum_min=best_s / MIN_S,
        trials=own["trials"],
        seed=own["seed"],
        days=days,
        effective_training_time=ett,
        interruptions=interruptions,
        expected_goodput=expected,
        wall_fractions=fractions,
        tokens=tokens,
        days_to_budget=days_to,
        ideal_days=ideal,
        unfinished=unfinished,
        effective_tokens_per_s=effective,
        sweep=[(g / MIN_S, s[0], s[2], s[4]) for g, s in zip(grid, spreads, strict=True)],
        timeline=timeline,
    )


_OWN = {o.name for o in GOODPUT_OPTIONS}
goodput.__signature__ = signature(  # type: ignore[attr-defined]
    goodput, ((o.name, o.default, o.annotation) for o in (*PLAN, *GOODPUT_OPTIONS))
)
