"""The calibration file: what `clustersim calibrate` writes (PREFIXcalibration.json) and
`--calibration FILE` reads, in every command that simulates a fabric.

    {"format": "clustersim-calibration/1",
     "classes": {"scale-out": {"bandwidth_efficiency": e, "latency_factor": k}, …},
     "collectives": {"allreduce": {"bandwidth_efficiency": e_c, "call_latency_us": a_c}, …}, …}

Applied the same way everywhere (`calibrated`): each link of class c (scale-up: touching an
NVSwitch; scale-out: every other) gets bandwidth × e and latency × k, so every collective,
transfer and bwtest pattern on the fabric is priced on the rescaled links. Where a command
reports one collective's time by itself (`collective`'s rows, `replay --compare-topology`'s
ops), that time t on the rescaled fabric becomes a_c + t / e_c (`collective_time`; a_c may be
negative, calibrate/model.py says why; a time below 0, far under the measured sizes, is 0): what
one factor per link class cannot hold — Open MPI's ring all-reduce reaching a smaller share of
the link than its all-to-all — is fitted per collective. Other keys (the series, residuals) are the
report and are not read. Errors name the file, the line where the field is and the field.
"""

from __future__ import annotations

import json
import math
import os
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.fabric import load_topology
from clustersim.files import read_text
from clustersim.nccl_tests import OPS
from clustersim.table import Table
from clustersim.topology import Topology, parse_simai

if TYPE_CHECKING:
    from clustersim.platform import Platform

FORMAT = "clustersim-calibration/1"
# The link classes: scale-up (links that touch an NVSwitch: NVLink), scale-out (every other).
SCALE_UP, SCALE_OUT = "scale-up", "scale-out"
CLASSES = (SCALE_UP, SCALE_OUT)
KNOWN = {"format", "classes", "collectives", "bandwidth_efficiency", "latency_factor", "call_latency_us"}
KNOWN |= set(CLASSES) | set(OPS)
# No calibration moves a link by more than this factor either way; beyond it is no measurement.
MOST = 1e6


class CalibrationFile(NamedTuple):
    path: str
    #: Per link class: (bandwidth efficiency e, latency factor k).
    classes: dict[str, tuple[float, float]]
    #: Per collective: (bandwidth efficiency e_c, call latency a_c in seconds).
    collectives: dict[str, tuple[float, float]]


def read_calibration(path: str | os.PathLike[str]) -> CalibrationFile:
    return parse_calibration(read_text(path, "calibration file"), os.fspath(path))


def parse_calibration(text: str, path: str) -> CalibrationFile:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: JSON: {e.msg}") from None
    except (ValueError, RecursionError) as e:  # an integer of too many digits, nesting too deep
        raise InputError(f"{path}:1: JSON: {str(e).splitlines()[0]}") from None

    def fail(keys: tuple[str, ...], message: str) -> NoReturn:
        """At the line of the field; the field named by the keys the format knows."""
        known = [k for k in keys if k in KNOWN] if keys else []
        raise InputError(f"{path}:{_line_of(text, keys)}: {'.'.join(known) or 'document'}: {message}")

    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        fail(("format",) if isinstance(doc, dict) else (), f"expected a calibration file ('{FORMAT}')")
    classes = _section(doc, ("classes", "class"), CLASSES, ("bandwidth_efficiency", "latency_factor"), fail)
    collectives = _section(
        doc, ("collectives", "collective"), OPS, ("bandwidth_efficiency", "call_latency_us"), fail
    )
    return CalibrationFile(path, classes, {op: (e, us * 1e-6) for op, (e, us) in collectives.items()})


def _section(
    doc: dict[str, Any], kind: tuple[str, str], names: tuple[str, ...], fields: tuple[str, str], fail: Any
) -> dict[str, tuple[float, float]]:
    """`doc[name]` (kind: name, one entry's noun): an object of `names` (each optional), each
    holding the two `fields`: the first a factor from 1/MOST to MOST, the second a latency factor
    from 0 to MOST (classes) or a call latency from −MOST to MOST µs (collectives)."""
    name, noun = kind
    section = doc.get(name, {})
    if not isinstance(section, dict):
        fail((name,), "expected an object")
    out = {}
    for key, entry in section.items():
        if key not in names:
            fail((name, key), f"unknown {noun} {_short(key)} (valid: {', '.join(names)})")
        if not isinstance(entry, dict):
            fail((name, key), "expected an object")
        values = []
        for i, field in enumerate(fields):
            v = entry.get(field, None)
            lo = 1 / MOST if i == 0 else 0.0 if name == "classes" else -MOST
            ok = (
                isinstance(v, (int, float))
                and not isinstance(v, bool)
                and math.isfinite(v)
                and lo <= v <= MOST
            )
            if not ok:
                what = (
                    "a factor from 1e-6 to 1e6"
                    if i == 0
                    else f"a number from {'0' if lo == 0 else '-1e6'} to 1e6"
                )
                fail((name, key, field), f"expected {what}, got {_short(v)}")
            values.append(float(v))
        out[key] = (values[0], values[1])
    return out


def _line_of(text: str, keys: tuple[str, ...]) -> int:
    """Line of the last of `keys` found in order in the text (1 if none): where the field is."""
    at, found = 0, 0
    for key in keys:
        k = text.find(json.dumps(key), at)
        if k < 0:
            break
        at = found = k
    return text.count("\n", 0, found) + 1


def _short(value: object) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return text if len(text) <= 40 else text[:37] + "..."


def calibrated(spec: str | os.PathLike[str] | Topology | Platform, cal: CalibrationFile) -> Platform:
    """The fabric `spec` with its link classes rescaled by the calibration."""
    return scaled(editable(spec), cal.classes, str(spec)).platform


def collective_time(cal: CalibrationFile | None, op: str, seconds: float) -> float:
    """A collective's time on the calibrated fabric, corrected by its own fit: a_c + t / e_c."""
    if cal is None or op not in cal.collectives:
        return seconds
    e, a = cal.collectives[op]
    return max(0.0, a + seconds / e)


def calibrate_table(cal: CalibrationFile, op: str, table: Table) -> Table:
    """An nccl-tests table (`clustersim.nccl_tests`) with `collective_time` applied to every row, its
    bandwidths following the time."""
    old = table["time_us"]
    new = [collective_time(cal, op, t * 1e-6) * 1e6 for t in old]
    columns = {c: list(table[c]) for c in table.columns}
    columns["time_us"] = new
    for c in ("algbw_GBps", "busbw_GBps"):
        columns[c] = [bw * t / n for bw, t, n in zip(table[c], old, new, strict=True)]
    return Table(columns)


def editable(spec: str | os.PathLike[str]) -> Topology:
    """The fabric as a Topology whose links can be rescaled (platform files through SimAI text)."""
    topo = load_topology(spec)
    if not isinstance(topo, _engine.Platform):
        return topo
    try:
        text = topo.to_simai()
    except InputError as e:
        raise InputError(
            f"--topology {spec}: calibrate rewrites it as a SimAI topology, which it cannot be ({e})"
        ) from None
    return parse_simai(text, str(spec))


def scaled(topo: Topology, factors: dict[str, tuple[float, float]], where: str) -> Topology:
    """`topo` with each class's links' bandwidth × e and latency × k (factors[class] = (e, k))."""
    kinds = topo.kinds
    links = []
    for link in topo.links:
        up = "nvswitch" in (kinds[link.src], kinds[link.dst])
        e, k = factors.get(SCALE_UP if up else SCALE_OUT, (1.0, 1.0))
        links.append(link._replace(bandwidth=link.bandwidth * e, latency=link.latency * k))
    return Topology.from_links(
        kinds, links, topo.gpus_per_server, topo.gpu_type, name=topo.name, source=where
    )


def calibrated_busbw(
    cal: CalibrationFile, gpu_type: str, nic_type: str, nvlink: float | None, nic: float | None
) -> tuple[float, float]:
    """The analytical model's NVLink and NIC bus bandwidths (GB/s: `-nv` and `-nic`, else those of
    the GPU and NIC types) times the calibration's scale-up and scale-out bandwidth efficiencies,
    as a fabric's NVLink and NIC links are rescaled. The latency factors have nothing to scale
    here: the model's latency is NCCL's per call, not the links' (measure/calibrate/model.py)."""
    built_in = _engine.ServerSpec(gpu_type=gpu_type, nic_type=nic_type)
    nvlink = built_in.nvlink_busbw if nvlink is None else nvlink
    nic = built_in.nic_busbw if nic is None else nic
    return nvlink * cal.classes.get(SCALE_UP, (1.0, 1.0))[0], nic * cal.classes.get(SCALE_OUT, (1.0, 1.0))[0]
