"""The α–β fit: t(S) = α + β·x(S), x the bytes that load the bottleneck (nccl-tests' bus bytes
S·f(n), or bwtest's (G−1)·S per rank each way). Measured collectives switch protocols between
the two ends, so each parameter is fitted where it governs: β by least squares on the largest
third of the sizes (at least two), t ≈ a + β·x there; then α by least squares with β fixed on
the smallest third, α = mean(t_i − β·x_i) (never below 0). 1/β is the achievable bandwidth
(busbw for nccl-tests), α the latency. On exact α–β data both are recovered exactly.

A model's correction, t_m ≈ a + t_s / e (measured t_m, modelled t_s at the same sizes), is fitted
instead by least squares on the relative residuals over every point, min Σ ((a + u·t_s − t_m)/t_m)²
with u = 1/e: linear in (a, u), so a 2 × 2 normal system. Every size counts by how far off it is
relative to its own time — the measure the comparisons use — and no single point sets a
parameter by itself, as the smallest size sets α and the largest two set β above.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from clustersim.errors import InputError


class AlphaBeta(NamedTuple):
    alpha_s: float
    beta_s_per_byte: float

    @property
    def bandwidth_GBps(self) -> float:
        return 1e-9 / self.beta_s_per_byte

    def time_s(self, x: float) -> float:
        return self.alpha_s + self.beta_s_per_byte * x


def fit(x: list[float], t: list[float], what: str) -> AlphaBeta:
    """α and β of the points (x_i, t_i); `what` names the measurement in errors."""
    if len(set(x)) < 2:
        raise InputError(f"{what}: fit: needs at least two sizes, got {len(set(x))}")
    points = sorted(zip(x, t, strict=True))
    k = max(2, len(points) // 3)
    large = points[-k:]
    if len({xi for xi, _ in large}) < 2:
        large = points
    mx = sum(xi for xi, _ in large) / len(large)
    mt = sum(ti for _, ti in large) / len(large)
    sxx = sum((xi - mx) ** 2 for xi, _ in large)
    if not sxx > 0:  # sizes too close to tell apart in floating point
        raise InputError(f"{what}: fit: the sizes are too close together to fit a bandwidth")
    beta = sum((xi - mx) * (ti - mt) for xi, ti in large) / sxx
    if not beta > 0:
        raise InputError(f"{what}: fit: the times do not grow with the size, so no bandwidth")
    small = points[:k]
    alpha = max(0.0, sum(ti - beta * xi for xi, ti in small) / len(small))
    if not (beta < math.inf and alpha < math.inf):  # times near the float limit
        raise InputError(f"{what}: fit: the times are too large to fit (beyond floating point)")
    return AlphaBeta(alpha, beta)


def correction(modelled: list[float], measured: list[float], what: str) -> tuple[float, float]:
    """(e, a) of measured ≈ a + modelled / e, by least squares on the relative residuals."""
    if len(set(modelled)) < 2:
        raise InputError(f"{what}: fit: needs at least two sizes, got {len(set(modelled))}")
    q = [1 / t for t in measured]  # the residual (a·q + u·r − 1) is relative to the measured time
    r = [s / t for s, t in zip(modelled, measured, strict=True)]
    qq, rr = sum(x * x for x in q), sum(y * y for y in r)
    qr = sum(x * y for x, y in zip(q, r, strict=True))
    det = qq * rr - qr * qr
    if not det > 1e-12 * qq * rr:  # the modelled times are (nearly) all equal
        raise InputError(f"{what}: fit: the sizes are too close together to fit a correction")
    a = (rr * sum(q) - qr * sum(r)) / det
    u = (qq * sum(r) - qr * sum(q)) / det
    if not u > 0:
        raise InputError(f"{what}: fit: the measured times do not grow with the modelled ones")
    if not (math.isfinite(a) and math.isfinite(u)):
        raise InputError(f"{what}: fit: the times are too large to fit (beyond floating point)")
    return 1 / u, a


def relative_errors(model: list[float], measured: list[float]) -> list[float]:
    """(model − measured) / measured, per point."""
    return [(m - t) / t for m, t in zip(model, measured, strict=True)]


def rms(values: list[float]) -> float:
    return (sum(v * v for v in values) / len(values)) ** 0.5
