"""The Python API: one function per simulating command, with the command's long option names as
keyword arguments (`--dist-opt` → `dist_opt`, `-n/--topology` → `topology`) and typed results.

    simulate(workload, …)              clustersim analytical -w workload …
    run(workload, topology, …)         clustersim run -w workload -n topology …
    train(model, gpus=, gbs=, …)       clustersim train --model model --gpus … --gbs …
    collective(op, topology, …)        clustersim collective op -n topology …

`search` and `sweep`, which run many of these, are in `clustersim.explore` (and at the package's
top, as all of these are). The CLI calls these functions, so both give the same numbers for the
same inputs (tests/test_api_cli.py). Results have `to_dict()` (what `--json` prints) and `to_pandas()`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from clustersim import provenance, training
from clustersim.analytical import AnalyticalResult, simulate
from clustersim.calibration import calibrate_table, calibrated, read_calibration
from clustersim.errors import InputError
from clustersim.fabric import ecmp_seeds as seed_range
from clustersim.fabric import fault_report, fault_spec, gpu_count, load_topology, qps_option, seed_stats
from clustersim.nccl_tests import OPS, parse_size, seed_table, sizes
from clustersim.nccl_tests import sweep as nccl_tests_sweep
from clustersim.plan import OPTIONS, signature, values
from clustersim.table import Table

if TYPE_CHECKING:
    from clustersim.platform import Platform
    from clustersim.reduction_server import ReductionServers
    from clustersim.topology import Topology

__all__ = [
    "AnalyticalResult",
    "CollectiveResult",
    "TrainResult",
    "collective",
    "run",
    "simulate",
    "train",
]

Progress = Callable[[float], None]


def run(
    workload: str | os.PathLike[str],
    topology: str | os.PathLike[str] | Topology | Platform,
    *,
    algo: str = "auto",
    channels: int = 0,
    seed: int = 0,
    qps: int | None = None,
    routing: str = "ecmp",
    routes: str | os.PathLike[str] | None = None,
    ecmp_seeds: int = 1,
    calibration: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    reduction: ReductionServers | str | None = None,
    switch_reduce_gbps: float | None = None,
    backend: str = "flow",
    faults: str | Sequence[str] | None = None,
    **options: Any,
) -> AnalyticalResult:
    """A SimAI workload on a fabric with the flow model (`clustersim run`): every collective
    becomes the transfers of `algo` (`--algo`'s text: a NAME for every collective, KIND=NAME items
    per kind, e.g. "all_reduce=coherent_ring,all_gather=ring") on `topology` (a SimAI topology
    file, a template `NAME[:GPUS]`, the engine's Platform or a Topology view of one). `options`
    are `simulate`'s (gpus, gpus_per_server, …). With
    `ecmp_seeds` N > 1 the run is repeated for seeds `seed` … `seed` + N − 1: the result is the
    first seed's, and its `ecmp_seeds` holds every seed's summary with mean, min and max.
    `calibration` (a file `clustersim calibrate` wrote) rescales the fabric's link classes.
    `reduction` runs every all-reduce across servers on reduction servers
    (`clustersim.reduction_server`), as `--algo collnet_direct` / `collnet_chain` run it on the
    fabric's switches (reducing `switch_reduce_gbps` each); the other collectives run as `algo` says.
    `backend`: "flow" (max-min fair flows, the default) or "packet" (docs/guides/packet.md), which
    takes the packet model's settings as `packet:cc=NAME:conf=PATH` (either part optional).
    `faults` (`link:<a>-<b>@<time>[:<factor>]` or `nic:<node>@<time>[:<factor>]`, several joined
    by commas or given as a list) take links or NICs down or slow them during the run; the result's
    `faults` then says how much slower the run is than without them (docs/guides/goodput.md)."""
    given = topology
    spec = fault_spec(faults)
    topology = _calibrated(topology, calibration)
    seeds = seed_range(seed, ecmp_seeds)
    flow = dict(
        topology=topology, algorithm=algo, channels=channels, routes=routes, routing=routing, backend=backend
    )
    flow |= dict(qps=qps_option(qps), reduction=reduction, switch_reduce_gbps=switch_reduce_gbps)
    results = []
    for k, s in enumerate(seeds):
        step = None if progress is None else _part(progress, k, len(seeds))
        results.append(simulate(workload, seed=s, progress=step, faults=spec, **flow, **options))
    result = results[0]
    if spec is not None:
        healthy = simulate(workload, seed=seed, **flow, **options)
        report = fault_report(
            spec,
            result.iteration_time_us * 1e-6,
            healthy.iteration_time_us * 1e-6,
            {k.removesuffix("_us"): v * 1e-6 for k, v in result.summary.items() if k != "total_us"},
            {k.removesuffix("_us"): v * 1e-6 for k, v in healthy.summary.items() if k != "total_us"},
        )
        result = result._replace(faults=report)
    if result.provenance is not None:
        asked = dict(workload=workload, topology=given, algo=algo, channels=channels, seed=seed, qps=qps)
        asked |= dict(
            routing=routing, routes=routes, ecmp_seeds=ecmp_seeds, calibration=calibration, **options
        )
        if spec is not None:
            asked["faults"] = spec
        made_by = result.provenance | {"command": provenance.call_text("run", asked)}
        made_by["plan"] = made_by["plan"] | {
            "ecmp_seeds": ecmp_seeds,
            "calibration": _shown_path(calibration),
        }
        if made_by["fabric"] is not None and isinstance(given, (str, os.PathLike)):
            made_by["fabric"] = made_by["fabric"] | {"name": os.fspath(given)}
        result = result._replace(provenance=made_by)
    if len(seeds) > 1:
        rows = [{"seed": s} | r.summary for s, r in zip(seeds, results, strict=True)]
        columns = [k for k in result.summary if k.endswith("_us")]
        result = result._replace(ecmp_seeds=seed_stats(rows, columns))
    return result


def _shown_path(path: str | os.PathLike[str] | None) -> str | None:
    return None if path is None else os.fspath(path)


def _calibrated(
    topology: str | os.PathLike[str] | Topology | Platform | None, calibration: str | os.PathLike[str] | None
) -> Any:
    """The fabric with the calibration file's link classes applied (clustersim.calibration)."""
    if calibration is None:
        return topology
    if topology is None:
        raise InputError(f"--calibration {calibration}: rescales a fabric's links; give the fabric (-n)")
    return calibrated(topology, read_calibration(calibration))


def _part(progress: Progress, k: int, n: int) -> Progress:
    """Progress of run k of n as a fraction of all n."""
    return lambda fraction: progress((k + fraction) / n)


class TrainResult(NamedTuple):
    """One simulated Megatron-Core iteration: time, throughput, MFU, where the time goes, memory
    per GPU and per-layer times (`layers`)."""

    model: str
    accelerator: str
    gpus: int
    #: The engine's result: iteration_s, tokens_per_s, mfu, breakdown_s, memory, layers, …
    data: dict[str, Any]
    #: Chrome/Perfetto trace (JSON text) when asked for with `trace=True`.
    trace: str | None = None
    #: The accelerator's description from the catalog (HBM size, FLOPS, …).
    accelerator_spec: dict[str, Any] | None = None
    #: What made it: command, version, plan, model, fabric, backend (`clustersim.provenance`).
    provenance: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"TrainResult({self.model!r} on {self.gpus} × {self.accelerator}, {self.iteration_s:.3f} s)"

    @property
    def iteration_s(self) -> float:
        return self.data["iteration_s"]

    @property
    def tokens_per_s(self) -> float:
        return self.data["tokens_per_s"]

    @property
    def mfu(self) -> float:
        return self.data["mfu"]

    @property
    def breakdown_s(self) -> dict[str, float]:
        """Seconds of the iteration per part (compute, exposed TP/DP/… comm, bubble, …)."""
        return dict(self.data["breakdown_s"])

    @property
    def memory(self) -> dict[str, Any]:
        return self.data["memory"]

    @property
    def layers(self) -> Table:
        """Per-layer times (s) of the critical stage (the busiest, as `breakdown_s`)."""
        rows = self.data["layers"]
        keys = ("compute_s", "exposed_comm_s", "comm_s")
        return Table({"layer": [x["name"] for x in rows]} | {k: [x[k] for x in rows] for k in keys})

    def to_dict(self) -> dict[str, Any]:
        """What `clustersim train --json` prints: the result, and what made it (`provenance`)."""
        head = {"model": self.model, "accelerator": self.accelerator, "gpus": self.gpus}
        return head | self.data | {"provenance": self.provenance}

    def to_pandas(self) -> Any:
        """Per-layer times as a pandas DataFrame (needs pandas)."""
        return self.layers.to_pandas()


def train(
    model: str | os.PathLike[str] | dict[str, Any] | None = None,
    *,
    allow_oom: bool = False,
    topology: str | os.PathLike[str] | Topology | Platform | None = None,
    algo: str = "auto",
    channels: int = 0,
    seed: int = 0,
    qps: int | None = None,
    routing: str = "ecmp",
    routes: str | os.PathLike[str] | None = None,
    calibration: str | os.PathLike[str] | None = None,
    trace: bool = False,
    progress: Progress | None = None,
    reduction: ReductionServers | str | None = None,
    switch_reduce_gbps: float | None = None,
    backend: str = "flow",
    faults: str | Sequence[str] | None = None,
    **plan: Any,
) -> TrainResult:
    """One Megatron-Core training iteration of `model` (catalog name, YAML/JSON file, Hugging Face
    config.json, a dict, or None: the shape keyword arguments alone, named "custom") with a parallel
    plan (`clustersim train`): `plan` is the plan options of `clustersim.plan.OPTIONS` (gpus, gbs,
    tp, pp, …; `help(clustersim.train)` lists them with their defaults). `gpu` is a catalog name,
    or a mix of types with their GPU counts ("h100:128,a100:128", summing to `gpus`) assigned in
    rank order (`mix_by="rank"`) or by whole pipeline stages (`mix_by="stage"`); the result then
    has `per_type` utilisation. With `topology` the communication runs on that fabric with the
    flow model, or with `backend="packet"` packet by packet (as for `run`); `reduction`,
    `switch_reduce_gbps` and `faults` as for `run` (the result's `faults` says how much slower the
    iteration is than without them). Raises InputError on bad input and, unless `allow_oom`, on a
    plan that does not fit in memory."""
    options = values(plan, TRAIN_OPTIONS, "train")
    resolved = training.resolve_plan(model, options)
    spec = fault_spec(faults)
    flow: dict[str, Any] = dict(reduction=reduction, switch_reduce_gbps=switch_reduce_gbps)
    given = topology
    topology = _calibrated(topology, calibration)
    platform = None if topology is None else load_topology(topology)
    fabric_options = dict(algo=algo, channels=channels, seed=seed, qps=qps, routing=routing, routes=routes)
    fabric_options |= dict(
        calibration=calibration, reduction=reduction, switch_reduce_gbps=switch_reduce_gbps, backend=backend
    )
    if platform is None and backend != "flow":
        # The engine checks the name where there is a fabric; without one, say what is wrong.
        why = (
            "moves a fabric's transfers; give the fabric (topology)"
            if backend.split(":")[0] == "packet"
            else "is not flow or packet"
        )
        raise InputError(f"train: backend: {backend!r} {why}")
    if spec is not None:
        fabric_options["faults"] = spec
    made_by = provenance.record(
        command=provenance.call_text(
            "train",
            {"model": model, **plan, **({"topology": given} | fabric_options if given is not None else {})},
        ),
        plan={**options, **({"fabric_options": fabric_options} if platform is not None else {})},
        model=provenance.model(resolved.model),
        fabric=provenance.fabric(given, platform),
        backend="analytical" if platform is None else backend,
    )
    if platform is not None:
        flow |= dict(
            topology=topology,
            platform=platform,
            algorithm=algo,
            channels=channels,
            seed=seed,
            routes=routes,
            qps=qps_option(qps),
            routing=routing,
            backend=backend,
        )
    data = training.train(
        resolved.model,
        allow_oom=allow_oom,
        trace=trace,
        progress=progress,
        faults=spec,
        **resolved.plan,
        **flow,
    )
    if spec is not None:
        healthy = training.train(resolved.model, allow_oom=allow_oom, **resolved.plan, **flow)
        data["faults"] = fault_report(
            spec,
            data["iteration_s"],
            healthy["iteration_s"],
            dict(data["breakdown_s"]),
            dict(healthy["breakdown_s"]),
        )
    text = data.pop("trace", None)
    return TrainResult(
        model=resolved.model["name"],
        accelerator=resolved.label,
        gpus=resolved.plan["gpus"],
        data=data,
        trace=text,
        accelerator_spec=resolved.accelerator,
        provenance=made_by,
    )


#: `train`'s plan keywords: every plan option but the model (its first argument).
TRAIN_OPTIONS = tuple(o for o in OPTIONS if o.name != "model")
train.__signature__ = signature(train, ((o.name, o.default, o.annotation) for o in TRAIN_OPTIONS))  # type: ignore[attr-defined]


class CollectiveResult(Table):
    """nccl-tests' table for one collective: size, count, type, redop, time_us, algbw_GBps,
    busbw_GBps, algorithm, protocol (and `seed` rows over ECMP seeds)."""

    def __init__(
        self, op: str, ranks: int, columns: dict[str, list[Any]], provenance: dict[str, Any] | None = None
    ) -> None:
        super().__init__(columns)
        self.op = op
        self.ranks = ranks
        #: What made it: command, version, plan, fabric, backend (`clustersim.provenance`).
        self.provenance = provenance

    def __repr__(self) -> str:
        return f"CollectiveResult({self.op} on {self.ranks} ranks, {len(self)} rows)"

    def to_dict(self) -> dict[str, Any]:
        """What `clustersim collective --json` prints: the columns, and what made them
        (`provenance`)."""
        return super().to_dict() | {"provenance": self.provenance}


def collective(
    op: str,
    topology: str | os.PathLike[str] | Topology | Platform,
    *,
    minbytes: int | str = "32M",
    maxbytes: int | str = "32M",
    stepfactor: int = 2,
    algo: str = "auto",
    proto: str = "auto",
    channels: int = 0,
    gpus: int | None = None,
    seed: int = 0,
    qps: int | None = None,
    routing: str = "ecmp",
    ecmp_seeds: int = 1,
    env: Mapping[str, str] | None = None,
    calibration: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    reduction: ReductionServers | str | None = None,
    switch_reduce_gbps: float | None = None,
    backend: str = "flow",
    faults: str | Sequence[str] | None = None,
) -> CollectiveResult:
    """nccl-tests on the flow model (`clustersim collective`): `op` (allreduce, allgather,
    reducescatter, alltoall, broadcast, reduce) over the first `gpus` GPUs (default all) of
    `topology`, for sizes `minbytes`, ·`stepfactor`, … up to `maxbytes` (bytes, or text with a
    K/M/G suffix as nccl-tests takes them), each on an idle network. `env` (default the process
    environment) supplies NCCL_ALGO, NCCL_PROTO, NCCL_IB_QPS_PER_CONNECTION and SimAI's AS_*.
    `reduction` runs all-reduce on reduction servers (`clustersim.reduction_server`);
    `switch_reduce_gbps` is a switch's reduction throughput for collnet_direct / collnet_chain.
    `calibration` (a file `clustersim calibrate` wrote) rescales the fabric's link classes, and
    each row's time t becomes a_c + t / e_c where the file fits `op` itself. `backend`: "flow"
    (max-min fair flows, the default) or "packet" (docs/guides/packet.md). `faults` are not
    taken here yet (an error): run them in a workload with `run` or `train`."""
    if fault_spec(faults) is not None:
        raise InputError(
            "command line: --fault: the nccl-tests sweep takes no faults yet; run them in a workload"
            " (clustersim run, clustersim train -n)"
        )
    name = op.lower().replace("_", "")
    if name not in OPS:
        raise InputError(f"unknown collective '{op}' (valid: {', '.join(OPS)})")
    if isinstance(channels, bool) or not isinstance(channels, int) or channels < 0:
        raise InputError(f"--channels: must be 0 (auto) or more, got {channels!r}")
    todo = sizes(_bytes(minbytes), _bytes(maxbytes), stepfactor)
    seeds = seed_range(seed, ecmp_seeds)
    topo = load_topology(_calibrated(topology, calibration))
    options = dict(
        algorithm=algo,
        protocol=proto,
        channels=channels,
        gpus=gpus,
        env=env,
        qps=qps,
        routing=routing,
        backend=backend,
    )
    if reduction is not None:
        options["reduction"] = reduction
    if switch_reduce_gbps is not None:
        options["switch_reduce_gbps"] = switch_reduce_gbps
    tables = [
        nccl_tests_sweep(
            topo,
            name,
            todo,
            seed=s,
            progress=None if progress is None else _part(progress, k, len(seeds)),
            **options,
        )
        for k, s in enumerate(seeds)
    ]
    if calibration is not None:
        tables = [calibrate_table(read_calibration(calibration), name, t) for t in tables]
    table = tables[0] if len(seeds) == 1 else seed_table(seeds, tables)
    ranks = gpus if gpus is not None else gpu_count(topo)
    sweep = dict(minbytes=_bytes(minbytes), maxbytes=_bytes(maxbytes), stepfactor=stepfactor, gpus=gpus)
    sweep |= dict(algo=algo, proto=proto)
    sweep |= dict(channels=channels, seed=seed, qps=qps, routing=routing, ecmp_seeds=ecmp_seeds)
    sweep |= dict(calibration=calibration, reduction=reduction, switch_reduce_gbps=switch_reduce_gbps)
    made_by = provenance.record(
        command=provenance.call_text("collective", {"op": op, "topology": topology, **sweep}),
        plan={"op": name, "ranks": ranks, **sweep},
        model=None,
        fabric=provenance.fabric(topology, topo),
        backend=backend,
    )
    return CollectiveResult(name, ranks, {c: table[c] for c in table.columns}, made_by)


def _bytes(size: int | str) -> int:
    if isinstance(size, int) and not isinstance(size, bool):
        return size
    return parse_size(str(size))
