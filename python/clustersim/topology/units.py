"""Rates and delays as SimAI topology files spell them (ns-3 `DataRate` and `Time` strings), read
and written by the engine (one parser: the one that reads SimAI files).

A rate such as `400Gbps` is bits per second with a decimal prefix (ns-3 also accepts bytes per
second, `Bps`, binary prefixes such as `Kibps`, and a bare number of bits per second). A delay such
as `0.0005ms` is 500 ns (a bare number is seconds). The engine works in GB/s (bytes/ns) and ns;
these functions give and take bytes/s and s. Each string is read with one rounding (its decimal's
nearest double), so a value written back as the shortest decimal reads back the same.
"""

from __future__ import annotations

from clustersim import _engine


def parse_rate(text: str) -> float:
    """`'400Gbps'` → 5e10 (bytes/s); ValueError with the engine's reason otherwise."""
    return _engine.read_rate(text) * 1e9


def parse_delay(text: str) -> float:
    """`'0.0005ms'` → 5e-7 (s); ValueError with the engine's reason otherwise."""
    return _engine.read_delay(text) / 1e9


def format_rate(bytes_per_s: float) -> str:
    """5e10 → `'400Gbps'` (gen_Topo_Template.py's spelling: Gbps)."""
    return _engine.format_rate(bytes_per_s / 1e9)


def format_delay(seconds: float) -> str:
    """5e-7 → `'0.0005ms'` (gen_Topo_Template.py's spelling: ms)."""
    return _engine.format_time(seconds * 1e9)
