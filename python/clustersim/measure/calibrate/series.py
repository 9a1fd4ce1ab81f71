"""Measurements as series to fit: one collective (or bwtest pattern) on one set of ranks over a
range of sizes, with what loads the bottleneck per byte (x = load · S) and the link class the
traffic crosses (scale-up: every rank on one host; scale-out: more than one host).

Sources: nccl-tests logs (`nccl_log`; a size's time is the mean of its out-of-place and in-place
times), bwtest JSON documents (`clustersim bwtest -o`; documents of one pattern, host set and
mode at different counts make one series, each count's time the step's mean iteration time) and
replay JSON documents (`clustersim replay`'s replay.json; the ops of one collective on one group
size and host set, over every document given, make one series, each size's time the mean of its
ops' times). A replayed group smaller than the world ran on hosts the document does not name
one by one: its series takes the world's link class and no host list.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Any, NamedTuple

from clustersim.calibration import SCALE_OUT, SCALE_UP
from clustersim.errors import InputError
from clustersim.files import read_text
from clustersim.measure.bwtest.report import FORMAT as BWTEST_FORMAT
from clustersim.measure.calibrate.nccl_log import NcclRun, read_nccl_log
from clustersim.measure.replay.report import FORMAT as REPLAY_FORMAT
from clustersim.nccl_tests import OPS, busbw_factor


class Series(NamedTuple):
    source: str
    #: A collective name (allreduce, …) or "bwtest".
    kind: str
    ranks: int
    #: bwtest's group size; None for collectives.
    group_size: int | None
    link_class: str
    sizes: list[int]
    times_s: list[float]
    #: Bottleneck bytes per byte of S: nccl-tests' bus factor f(n), or bwtest's G − 1.
    load: float
    #: Each rank's host where measured (None: simulated).
    hosts: list[str] | None = None

    @property
    def x(self) -> list[float]:
        return [self.load * s for s in self.sizes]

    def label(self) -> str:
        what = self.kind if self.group_size is None else f"bwtest g={self.group_size}"
        return f"{self.source}: {what} on {self.ranks} ranks ({self.link_class})"


def link_class(hosts: list[str]) -> str:
    return SCALE_UP if len(set(hosts)) == 1 else SCALE_OUT


def from_nccl_log(path: str | os.PathLike[str]) -> list[Series]:
    return nccl_series(read_nccl_log(path))


def nccl_series(runs: list[NcclRun]) -> list[Series]:
    out = []
    for run in runs:
        by_size: dict[int, list[float]] = defaultdict(list)
        for size, t in run.points:
            by_size[size].append(t)
        sizes = sorted(by_size)
        times = [sum(by_size[s]) / len(by_size[s]) for s in sizes]
        source = f"{run.path}:{run.line}"
        load = busbw_factor(run.op, run.ranks)
        out.append(
            Series(source, run.op, run.ranks, None, link_class(run.hosts), sizes, times, load, run.hosts)
        )
    return out


BWTEST_FIELDS = ("ranks", "group_size", "groups", "message_bytes")
MODES = ("mpi", "simulate")


def read_bwtest_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A bwtest document, its fields checked (errors name the file and field)."""
    return parse_bwtest_json(read_text(path, "bwtest JSON"), os.fspath(path))


def parse_bwtest_json(text: str, path: str) -> dict[str, Any]:
    doc = _json(text, path)
    if not isinstance(doc, dict) or doc.get("format") != BWTEST_FORMAT:
        raise InputError(
            f"{path}: format: expected a bwtest document ('{BWTEST_FORMAT}';"
            f" a replay one is '{REPLAY_FORMAT}')"
        )
    if doc.get("mode") not in MODES:
        raise InputError(f"{path}: mode: expected one of {', '.join(MODES)}, got {_short(doc.get('mode'))}")
    for key in BWTEST_FIELDS:
        v = doc.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 2**62:
            raise InputError(f"{path}: {key}: expected a whole number from 1 to 2^62, got {_short(v)}")
    t = (doc.get("aggregate") or {}).get("time_s") if isinstance(doc.get("aggregate"), dict) else None
    if not isinstance(t, (int, float)) or isinstance(t, bool) or not 0 < t < float("inf"):
        raise InputError(f"{path}: aggregate.time_s: expected a positive number of seconds, got {_short(t)}")
    if doc["groups"] < 2 or doc["ranks"] != doc["groups"] * doc["group_size"]:
        shape = f"{doc['groups']} groups of {doc['group_size']} for {doc['ranks']} ranks"
        raise InputError(f"{path}: groups: {shape}")
    hosts = doc.get("hosts")
    if hosts is not None and (
        not isinstance(hosts, list)
        or len(hosts) != doc["ranks"]
        or not all(isinstance(h, str) for h in hosts)
    ):
        raise InputError(f"{path}: hosts: expected one host name per rank")
    return doc


def read_replay_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A replay document, its collectives' fields checked (errors name the file and field)."""
    return parse_replay_json(read_text(path, "replay JSON"), os.fspath(path))


def parse_replay_json(text: str, path: str) -> dict[str, Any]:
    doc = _json(text, path)
    if not isinstance(doc, dict) or doc.get("format") != REPLAY_FORMAT:
        raise InputError(f"{path}: format: expected a replay document ('{REPLAY_FORMAT}')")
    ranks = doc.get("ranks")
    if not _whole(ranks):
        raise InputError(f"{path}: ranks: expected a whole number from 1 to 2^62, got {_short(ranks)}")
    hosts = doc.get("hosts")
    if not isinstance(hosts, list) or len(hosts) != ranks or not all(isinstance(h, str) for h in hosts):
        raise InputError(f"{path}: hosts: expected one host name per rank")
    ops = doc.get("ops")
    if not isinstance(ops, list):
        raise InputError(f"{path}: ops: expected a list of the replayed ops, got {_short(ops)}")
    for k, op in enumerate(ops):
        where = f"{path}: ops[{k}]"
        if not isinstance(op, dict):
            raise InputError(f"{where}: expected an object, got {_short(op)}")
        t = op.get("time_s")
        if not _seconds(t) and not (t == 0 and "collective" not in op):
            raise InputError(f"{where}.time_s: expected a positive number of seconds, got {_short(t)}")
        if "collective" not in op:
            continue  # a compute step
        if op["collective"] not in OPS:
            raise InputError(
                f"{where}.collective: expected one of {', '.join(OPS)}, got {_short(op['collective'])}"
            )
        for key in ("ranks", "bytes"):
            if not _whole(op.get(key)):
                raise InputError(
                    f"{where}.{key}: expected a whole number from 1 to 2^62, got {_short(op.get(key))}"
                )
        if op["ranks"] > ranks:
            raise InputError(f"{where}.ranks: {op['ranks']}, more than the document's {ranks}")
    return doc


def from_replay(paths: list[str]) -> list[Series]:
    return replay_series([(path, read_replay_json(path)) for path in paths])


def replay_series(docs: list[tuple[str, dict[str, Any]]]) -> list[Series]:
    """One series per collective, group size and host set, over the (path, document) pairs."""
    runs: dict[tuple[Any, ...], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    sources: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for path, doc in docs:
        for op in doc["ops"]:
            if "collective" in op:
                hosts = tuple(doc["hosts"]) if op["ranks"] == doc["ranks"] else None
                key = (op["collective"], op["ranks"], hosts, link_class(doc["hosts"]))
                runs[key][op["bytes"]].append(op["time_s"])
                if path not in sources[key]:
                    sources[key].append(path)
    out = []
    for key, by_size in runs.items():
        collective, ranks, hosts, cls = key
        if ranks < 2:
            continue  # a group of one moves nothing
        sizes = sorted(by_size)
        times = [sum(by_size[s]) / len(by_size[s]) for s in sizes]
        first = sources[key][0]
        source = first if len(sources[key]) == 1 else f"{first} (+{len(sources[key]) - 1})"
        load = busbw_factor(collective, ranks)
        out.append(
            Series(
                source,
                collective,
                ranks,
                None,
                cls,
                sizes,
                times,
                load,
                None if hosts is None else list(hosts),
            )
        )
    return out


def read_series(paths: list[str]) -> list[Series]:
    """Every measurement file as series: *.json by its format (bwtest or replay), others as
    nccl-tests logs."""
    bwtest, replay, logs = [], [], []
    for path in paths:
        if not str(path).endswith(".json"):
            logs.append(path)
        elif '"clustersim-replay/' in read_text(path, "measurement JSON")[:4096]:
            replay.append(path)
        else:
            bwtest.append(path)
    return [s for f in logs for s in from_nccl_log(f)] + from_bwtest(bwtest) + from_replay(replay)


def _json(text: str, path: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: JSON: {e.msg}") from None
    except (ValueError, RecursionError) as e:  # an integer of too many digits, nesting too deep
        raise InputError(f"{path}: JSON: {str(e).splitlines()[0]}") from None


def _whole(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 2**62


def _seconds(t: object) -> bool:
    return isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t < float("inf")


def _short(value: object) -> str:
    """A value for a one-line message: repr, cut to 40 characters."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return text if len(text) <= 40 else text[:37] + "..."


def from_bwtest(paths: list[str]) -> list[Series]:
    """One series per pattern (ranks, group size), host set and mode."""
    runs: dict[tuple[Any, ...], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for path in paths:
        doc = read_bwtest_json(path)
        hosts = doc.get("hosts") or ["simulated"]
        runs[(doc["ranks"], doc["group_size"], doc["mode"], tuple(hosts))].append((path, doc))
    out = []
    for (ranks, g, mode, hosts), docs in runs.items():
        docs.sort(key=lambda d: d[1]["message_bytes"])
        sizes = [d["message_bytes"] for _, d in docs]
        times = [d["aggregate"]["time_s"] for _, d in docs]
        source = docs[0][0] if len(docs) == 1 else f"{docs[0][0]} (+{len(docs) - 1})"
        measured = list(hosts) if mode == "mpi" else None
        out.append(
            Series(
                source, "bwtest", ranks, g, link_class(list(hosts)), sizes, times, ranks // g - 1, measured
            )
        )
    return out
