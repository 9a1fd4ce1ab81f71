"""Rates and delays as SimAI topology files spell them (ns-3 `DataRate` and `Time` strings).

A rate such as `400Gbps` is bits per second with a decimal prefix (ns-3 also accepts bytes per
second, `Bps`, and binary prefixes such as `Gib/s`); clustersim keeps rates in **bytes per second**.
A delay such as `0.0005ms` (500 ns) is converted to **seconds**. Parsing goes through `Decimal`, so
`format_rate(parse_rate(s))` and `format_delay(parse_delay(s))` give back the same number exactly.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_NUMBER = r"([0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?)"
_RATE = re.compile(_NUMBER + r"([kKMGT]i?)?(bps|b/s|Bps|B/s)")
_DELAY = re.compile(_NUMBER + r"(s|ms|us|ns|ps|fs|min|h)")

_PREFIX = {
    None: Decimal(1),
    "k": Decimal(10) ** 3,
    "K": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "ki": Decimal(2) ** 10,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
}
_SECONDS = {
    "s": Decimal(1),
    "ms": Decimal("1e-3"),
    "us": Decimal("1e-6"),
    "ns": Decimal("1e-9"),
    "ps": Decimal("1e-12"),
    "fs": Decimal("1e-15"),
    "min": Decimal(60),
    "h": Decimal(3600),
}

RATE_EXAMPLE = "e.g. 400Gbps, 2880Gbps, 100GBps"
DELAY_EXAMPLE = "e.g. 0.0005ms, 500ns, 1us"


def parse_rate(text: str) -> float:
    """`'400Gbps'` → 5e10 (bytes/s). Raises ValueError with a short reason on anything else."""
    m = _RATE.fullmatch(text)
    if m is None:
        raise ValueError(f"'{text}' is not a data rate ({RATE_EXAMPLE})")
    value = Decimal(m.group(1)) * _PREFIX[m.group(2)]
    if m.group(3) in ("bps", "b/s"):
        value /= 8
    rate = float(value)
    if not rate > 0 or math.isinf(rate):
        raise ValueError(f"'{text}': a data rate must be positive and finite")
    return rate


def parse_delay(text: str) -> float:
    """`'0.0005ms'` → 5e-7 (seconds). Raises ValueError with a short reason on anything else."""
    m = _DELAY.fullmatch(text)
    if m is None:
        raise ValueError(f"'{text}' is not a delay ({DELAY_EXAMPLE})")
    seconds = float(Decimal(m.group(1)) * _SECONDS[m.group(2)])
    if math.isinf(seconds):
        raise ValueError(f"'{text}': a delay must be finite")
    return seconds


def parse_error_rate(text: str) -> float:
    """A per-packet drop probability from 0 to 1."""
    try:
        value = float(Decimal(text))
    except (InvalidOperation, ValueError):
        raise ValueError(f"'{text}' is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"'{text}': an error rate is a probability from 0 to 1")
    return value


def _plain(value: Decimal) -> str:
    """A decimal without exponent or trailing zeros: 400, 0.0005."""
    text = format(value.normalize(), "f")
    return text


def format_rate(bytes_per_s: float) -> str:
    """5e10 → `'400Gbps'` (gen_Topo_Template.py's spelling: bits per second, in Gbps)."""
    return _plain(Decimal(repr(float(bytes_per_s))) * 8 / Decimal(10) ** 9) + "Gbps"


def format_delay(seconds: float) -> str:
    """5e-7 → `'0.0005ms'` (gen_Topo_Template.py's spelling: milliseconds)."""
    return _plain(Decimal(repr(float(seconds))) * 1000) + "ms"


def format_error_rate(value: float) -> str:
    """0 → `'0'`, 0.001 → `'0.001'`."""
    return "0" if value == 0 else _plain(Decimal(repr(float(value))))
