"""The model side of a calibration: each series simulated on a described fabric, and the fabric
with its link classes recalibrated.

A link class is scale-up (links that touch an NVSwitch: NVLink) or scale-out (every other link:
NICs and switches). Which class a series loads follows from where its ranks run on the fabric:
all in one scale-up domain, or not. For each class, from the α–β fits of the measured (m) and
simulated (s) series on it, the bandwidth efficiency e = β_s / β_m scales the class's link
bandwidths and the latency factor k = α_m / α_s its link latencies (from bwtest series only:
the flow model times a collective's latency with NCCL's per-call model, not the links').
Where the model clamps a
link (NCCL's achievable NVLink rate) one scaling does not land, so it is repeated on the
recalibrated fabric until e and k are within 0.1 % of 1 (at most 8 rounds). Where a class has
bwtest series, they alone set its e and k: the pattern loads every link at once, as the link
class's rate is defined; collectives on it then get factors of their own.

Per collective, on the recalibrated fabric: e_c and a_c such that a_c + t_s / e_c fits the
measured times t_m of all its series (simulated t_s at the same sizes), by least squares on the
relative residuals (`fit.correction`), which gives a and e back exactly from times that are
a + t_s / e. Every point weighs by its relative error, so one odd size (an MPI library switching algorithm
at one size, a stall) moves the fit by its share only. What they hold: the
collective's implementation (a ring's dependent steps, the MPI library's own overheads) reaching
another share of the links than the class's pattern, and its latency per call beyond the links'.
a_c is negative where the links' fitted latency, paid once per step of the algorithm, already
gives the collective more latency than it measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from clustersim.calibration import SCALE_OUT, SCALE_UP, scaled
from clustersim.errors import InputError
from clustersim.measure.bwtest.pattern import WORD_BYTES, Pattern
from clustersim.measure.bwtest.simulate import simulate as run_bwtest
from clustersim.measure.calibrate.fit import AlphaBeta, correction, fit
from clustersim.measure.calibrate.series import Series
from clustersim.nccl_tests import sweep

if TYPE_CHECKING:
    from clustersim.platform import Platform
    from clustersim.topology import Topology

ROUNDS = 8
TOLERANCE = 1e-3


def series_class(series: Series, platform: Platform) -> str:
    """scale-up if the series' ranks share one scale-up domain of the platform, else scale-out.
    Measured ranks must be grouped on the fabric as on their hosts: ranks r and q share a host
    exactly when the fabric's ranks r and q share a scale-up domain."""
    domains = list(platform.placement[1])[: series.ranks]
    if series.ranks > len(platform.placement[1]):
        raise InputError(
            f"{series.source}: ranks: {series.ranks}, but the fabric has {len(platform.placement[1])}"
        )
    hosts = series.hosts
    pairs = set(zip(hosts, domains, strict=True)) if hosts is not None else set()
    if hosts is not None and not len(pairs) == len(set(hosts)) == len(set(domains)):
        raise InputError(
            f"{series.source}: ranks: measured on {len(set(hosts))} host(s), but the fabric's first"
            f" {series.ranks} ranks are in {len(set(domains))} scale-up domain(s) grouped otherwise;"
            " describe the measured machine"
        )
    return SCALE_UP if len(set(domains)) == 1 else SCALE_OUT


def simulate(series: Series, platform: Platform) -> list[float]:
    """The series' times (s) on the flow model of `platform`."""
    if series.kind == "bwtest":
        out = []
        for s in series.sizes:
            pattern = Pattern.of(series.ranks, series.group_size or 1, max(1, s // WORD_BYTES))
            out.append(run_bwtest(pattern, platform, series.source)[1])
        return out
    table = sweep(platform, series.kind, series.sizes, gpus=series.ranks)
    return [us * 1e-6 for us in table["time_us"]]


def class_factors(
    series: list[Series], classes: list[str], measured: list[AlphaBeta], simulated: list[list[float]]
) -> dict[str, tuple[float, float]]:
    """Per class, the mean e = β_s/β_m over its series and the mean k = α_m/α_s over its bwtest
    series (1 without any, or where α_s = 0): a collective's latency on the flow model is NCCL's
    per-call model, which link latencies do not enter."""
    sums: dict[str, list[list[float]]] = {}
    paced = {c for s, c in zip(series, classes, strict=True) if s.kind == "bwtest"}
    for s, c, m, times in zip(series, classes, measured, simulated, strict=True):
        if c in paced and s.kind != "bwtest":
            continue
        sim = fit(s.x, times, f"{s.source} (simulated)")
        sums.setdefault(c, [[], []])
        sums[c][0].append(sim.beta_s_per_byte / m.beta_s_per_byte)
        if s.kind == "bwtest" and sim.alpha_s > 0:
            sums[c][1].append(m.alpha_s / sim.alpha_s)
    return {c: (sum(es) / len(es), sum(ks) / len(ks) if ks else 1.0) for c, (es, ks) in sums.items()}


class Calibration(NamedTuple):
    topology: Topology
    #: Per class: (bandwidth efficiency e, latency factor k) applied to its links.
    factors: dict[str, tuple[float, float]]
    #: Per class, the factors the model does not respond to ("e", "k"), left at 1.
    inert: dict[str, set[str]]
    classes: list[str]
    before: list[list[float]]
    after: list[list[float]]
    #: Per collective: (bandwidth efficiency e_c, call latency a_c in s) on the rescaled fabric.
    collectives: dict[str, tuple[float, float]]
    #: The series' times with the collectives' factors applied (bwtest series as `after`).
    corrected: list[list[float]]


def calibrate(series: list[Series], measured: list[AlphaBeta], topo: Topology, where: str) -> Calibration:
    """Rescale `topo`'s link classes until its simulated series have the measured α and β. A
    factor whose step is unchanged by the previous round's scaling does not move the model (the
    collectives' latency is NCCL's per-call model, not the links'): it is reset to 1."""
    platform = topo.platform
    classes = [series_class(s, platform) for s in series]
    before = [simulate(s, platform) for s in series]
    total = {c: [1.0, 1.0] for c in classes}
    inert: dict[str, set[str]] = {c: set() for c in classes}
    previous: dict[str, tuple[float, float]] = {}
    times = before
    for _ in range(ROUNDS):
        step = class_factors(series, classes, measured, times)
        for c, (e, k) in step.items():
            for i, name in ((0, "e"), (1, "k")):
                now, then = (e, k)[i], previous.get(c, (1.0, 1.0))[i]
                if c in previous and abs(then - 1) >= TOLERANCE and abs(now / then - 1) < TOLERANCE:
                    inert[c].add(name)
                    total[c][i] = 1.0
        step = {
            c: (1.0 if "e" in inert[c] else e, 1.0 if "k" in inert[c] else k) for c, (e, k) in step.items()
        }
        if all(abs(e - 1) < TOLERANCE and abs(k - 1) < TOLERANCE for e, k in step.values()):
            break
        previous = step
        for c, (e, k) in step.items():
            total[c] = [total[c][0] * e, total[c][1] * k]
        platform = scaled(topo, {c: (e, k) for c, (e, k) in total.items()}, where).platform
        times = [simulate(s, platform) for s in series]
    factors = {c: (e, k) for c, (e, k) in total.items()}
    current = scaled(topo, factors, where)
    platform = current.platform
    after = [simulate(s, platform) for s in series]
    per_op = collective_factors(series, after)
    corrected = [
        [per_op[s.kind][1] + t / per_op[s.kind][0] for t in times] if s.kind in per_op else times
        for s, times in zip(series, after, strict=True)
    ]
    return Calibration(current, factors, inert, classes, before, after, per_op, corrected)


def collective_factors(series: list[Series], simulated: list[list[float]]) -> dict[str, tuple[float, float]]:
    """Per collective kind: (e_c, a_c) fitted over every point of its series (module docs)."""
    points: dict[str, tuple[list[float], list[float], list[str]]] = {}
    for s, times in zip(series, simulated, strict=True):
        if s.kind != "bwtest":
            sim, measured, sources = points.setdefault(s.kind, ([], [], []))
            sim += times
            measured += s.times_s
            sources.append(s.source)
    return {k: correction(sim, m, ", ".join(src)) for k, (sim, m, src) in points.items()}
