"""Rates and delays as SimAI topology files spell them (ns-3 `DataRate` and `Time` strings), read
and written by the engine (one parser: the one that reads SimAI files).

A rate such as `400Gbps` is bits per second with a decimal prefix (ns-3 also accepts bytes per
second, `Bps`, binary prefixes such as `Kibps`, and a bare number of bits per second). A delay such
as `0.0005ms` is 500 ns (a bare number is seconds). The engine works in GB/s (bytes/ns) and ns;
these functions give and take bytes/s and s. Each string is read with one rounding (its decimal's
nearest double), so a value written back as the shortest decimal reads back the same.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from clustersim import _engine

RATE_EXAMPLE = "e.g. 400Gbps, 2880Gbps, 100GBps"
DELAY_EXAMPLE = "e.g. 0.0005ms, 500ns, 1us"


def rate_gbs(text: str) -> float:
    """`'400Gbps'` → 50.0 (GB/s, the engine's bytes/ns). ValueError with a short reason otherwise."""
    value = _engine.parse_rate(text)
    if value is None:
        raise ValueError(f"'{text}' is not a data rate ({RATE_EXAMPLE})")
    return value


def delay_ns(text: str) -> float:
    """`'0.0005ms'` → 500.0 (ns). ValueError with a short reason otherwise."""
    value = _engine.parse_time(text)
    if value is None:
        raise ValueError(f"'{text}' is not a delay ({DELAY_EXAMPLE})")
    return value


def parse_rate(text: str) -> float:
    """`'400Gbps'` → 5e10 (bytes/s)."""
    return rate_gbs(text) * 1e9


def parse_delay(text: str) -> float:
    """`'0.0005ms'` → 5e-7 (s)."""
    return delay_ns(text) / 1e9


def parse_error_rate(text: str) -> float:
    """A per-packet drop probability from 0 to 1."""
    try:
        value = float(Decimal(text))
    except (InvalidOperation, ValueError):
        raise ValueError(f"'{text}' is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"'{text}': an error rate is a probability from 0 to 1")
    return value


def format_rate(bytes_per_s: float) -> str:
    """5e10 → `'400Gbps'` (gen_Topo_Template.py's spelling: Gbps)."""
    return _engine.format_rate(bytes_per_s / 1e9)


def format_delay(seconds: float) -> str:
    """5e-7 → `'0.0005ms'` (gen_Topo_Template.py's spelling: ms)."""
    return _engine.format_time(seconds * 1e9)
