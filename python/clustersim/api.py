"""The Python API: one function per simulating command, with the command's long option names as
keyword arguments (`--dist-opt` → `dist_opt`, `-n/--topology` → `topology`) and typed results.

    simulate(workload, …)              clustersim analytical -w workload …
    run(workload, topology, …)         clustersim run -w workload -n topology …
    train(model, gpus=, gbs=, …)       clustersim train --model model --gpus … --gbs …
    collective(op, topology, …)        clustersim collective op -n topology …
    search(model, gpus=, gbs=, …)      clustersim search --model model --gpus … --gbs …
    sweep(spec, store, workers=, …)    clustersim sweep spec -o store --workers …

The CLI calls these functions, so both give the same numbers for the same inputs
(tests/test_api_cli.py). Results have `to_dict()` (what `--json` prints) and `to_pandas()`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

from clustersim.analytical import AnalyticalResult, simulate
from clustersim.errors import InputError
from clustersim.explore.search import SearchResult, search
from clustersim.table import Table

if TYPE_CHECKING:
    from clustersim.platform import Platform
    from clustersim.reduction_server import ReductionServers
    from clustersim.topology import Topology

__all__ = [
    "AnalyticalResult",
    "CollectiveResult",
    "SearchResult",
    "TrainResult",
    "collective",
    "run",
    "search",
    "simulate",
    "sweep",
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
    fabric's switches (reducing `switch_reduce_gbps` each); the other collectives run as `algo` says."""
    from clustersim.fabric import ecmp_seeds as seed_range
    from clustersim.fabric import qps_option, seed_stats

    topology = _calibrated(topology, calibration)
    seeds = seed_range(seed, ecmp_seeds)
    flow = dict(topology=topology, algorithm=algo, channels=channels, routes=routes, routing=routing)
    flow |= dict(qps=qps_option(qps), reduction=reduction, switch_reduce_gbps=switch_reduce_gbps)
    results = []
    for k, s in enumerate(seeds):
        step = None if progress is None else _part(progress, k, len(seeds))
        results.append(simulate(workload, seed=s, progress=step, **flow, **options))
    result = results[0]
    if len(seeds) > 1:
        rows = [{"seed": s} | r.summary for s, r in zip(seeds, results, strict=True)]
        columns = [k for k in result.summary if k.endswith("_us")]
        result = result._replace(ecmp_seeds=seed_stats(rows, columns))
    return result


def _calibrated(
    topology: str | os.PathLike[str] | Topology | Platform | None, calibration: str | os.PathLike[str] | None
) -> Any:
    """The fabric with the calibration file's link classes applied (clustersim.calibration)."""
    if calibration is None:
        return topology
    from clustersim.calibration import calibrated, read_calibration

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
        """Per-layer times (s) of the stage that finishes last."""
        rows = self.data["layers"]
        keys = ("compute_s", "exposed_comm_s", "comm_s")
        return Table({"layer": [x["name"] for x in rows]} | {k: [x[k] for x in rows] for k in keys})

    def to_dict(self) -> dict[str, Any]:
        """What `clustersim train --json` prints."""
        return {"model": self.model, "accelerator": self.accelerator, "gpus": self.gpus} | self.data

    def to_pandas(self) -> Any:
        """Per-layer times as a pandas DataFrame (needs pandas)."""
        return self.layers.to_pandas()


def train(
    model: str | os.PathLike[str] | dict[str, Any] | None = None,
    *,
    gpus: int,
    gbs: int,
    gpu: str = "h100",
    mix_by: str = "rank",
    accelerators: str | os.PathLike[str] | None = None,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    cp: int = 1,
    vpp: int = 1,
    mbs: int = 1,
    seq: int | None = None,
    sp: bool = False,
    first_stage_layers: int | None = None,
    last_stage_layers: int | None = None,
    account_for_embedding_in_pipeline_split: bool = False,
    account_for_loss_in_pipeline_split: bool = False,
    dist_opt: bool = False,
    zero: int | None = None,
    recompute: str = "none",
    no_flash_attn: bool = False,
    overlap_grad_reduce: bool | None = None,
    overlap_param_gather: bool | None = None,
    tp_comm_overlap: bool | None = None,
    overlap_p2p_comm: bool | None = None,
    ddp_bucket_size: int | None = None,
    gpus_per_server: int = 8,
    nics_per_server: int | None = None,
    nic_busbw: float | None = None,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    ffn: int | None = None,
    vocab: int | None = None,
    experts: int | None = None,
    topk: int | None = None,
    family: str | None = None,
    tie_embeddings: bool | None = None,
    kernels: str | os.PathLike[str] | None = None,
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
) -> TrainResult:
    """One Megatron-Core training iteration of `model` (catalog name, YAML/JSON file, Hugging Face
    config.json, a dict, or None: the shape keyword arguments alone, named "custom") with a parallel
    plan (`clustersim train`). `gpu` is a catalog name, or a mix of types with their GPU counts
    ("h100:128,a100:128", summing to `gpus`) assigned in rank order (`mix_by="rank"`) or by whole
    pipeline stages (`mix_by="stage"`); the result then has `per_type` utilisation. With `topology` the
    communication runs on that fabric with the flow model; `reduction` and `switch_reduce_gbps` as
    for `run`. Raises InputError on bad input and,
    unless `allow_oom`, on a plan that does not fit in memory."""
    from clustersim.training import train as run_training

    spec, acc, plan = plan_options(
        model, **{k: v for k, v in locals().items() if k in PLAN_OPTIONS and k != "model"}
    )
    flow: dict[str, Any] = dict(reduction=reduction, switch_reduce_gbps=switch_reduce_gbps)
    topology = _calibrated(topology, calibration)
    if topology is not None:
        from clustersim.fabric import qps_option

        flow |= dict(
            topology=topology,
            algorithm=algo,
            channels=channels,
            seed=seed,
            routes=routes,
            qps=qps_option(qps),
            routing=routing,
        )
    data = run_training(spec, allow_oom=allow_oom, trace=trace, progress=progress, **plan, **flow)
    text = data.pop("trace", None)
    return TrainResult(
        model=spec["name"],
        accelerator=acc["name"] if "mix" not in plan else gpu.replace(" ", ""),
        gpus=gpus,
        data=data,
        trace=text,
        accelerator_spec=acc,
    )


PLAN_OPTIONS = (
    "model gpus gbs gpu mix_by accelerators tp pp ep cp vpp mbs seq sp first_stage_layers last_stage_layers"
    " account_for_embedding_in_pipeline_split account_for_loss_in_pipeline_split"
    " dist_opt zero recompute no_flash_attn overlap_grad_reduce overlap_param_gather tp_comm_overlap"
    " overlap_p2p_comm ddp_bucket_size gpus_per_server nics_per_server nic_busbw layers hidden"
    " heads kv_heads ffn vocab experts topk family tie_embeddings kernels"
).split()


def plan_options(
    model: str | os.PathLike[str] | dict[str, Any] | None, **options: Any
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(model, accelerator, plan keyword arguments of `clustersim.training`) from the options of
    `clustersim train` and `workload generate`: every name of PLAN_OPTIONS but `model` (their
    defaults are `train`'s)."""
    from clustersim.catalog import lookup
    from clustersim.models import from_flags, resolve

    defaults = {"family": None, "tie_embeddings": None, "kernels": None, "mix_by": "rank"}
    defaults |= {f"account_for_{x}_in_pipeline_split": False for x in ("embedding", "loss")}
    o = SimpleNamespace(**(defaults | options))

    if o.dist_opt and o.zero:
        raise InputError("command line: --dist-opt: cannot be combined with --zero")
    shape = {"layers": o.layers, "hidden": o.hidden, "heads": o.heads, "kv_heads": o.kv_heads, "ffn": o.ffn}
    shape["vocab"] = o.vocab
    if model is None:
        spec = from_flags(shape, o.family, o.seq)
    elif isinstance(model, dict):
        spec = dict(model)
    else:
        spec = resolve(os.fspath(model), shape)
    if o.family is not None:
        spec["family"] = o.family
    if o.tie_embeddings is not None:
        spec["tie_embeddings"] = o.tie_embeddings
    if isinstance(model, dict):
        spec.update({k: v for k, v in shape.items() if v is not None})
        spec.setdefault("name", "model")
    if o.experts or o.topk:
        moe = dict(spec.get("moe") or {"expert_ffn": spec["ffn"], "topk": 1, "experts": 1})
        moe.update({k: v for k, v in (("experts", o.experts), ("topk", o.topk)) if v})
        spec["moe"] = moe
    extra = None if o.accelerators is None else os.fspath(o.accelerators)
    mix = gpu_mix(o.gpu, o.gpus, o.mix_by, extra)
    acc = mix[0][0] if mix is not None else lookup("accelerators", o.gpu, extra)
    if o.kernels is not None and mix is not None:
        raise InputError(
            f"command line: --kernels: a kernel table times one accelerator type, not the mix {o.gpu}"
        )
    if o.kernels is not None:
        from clustersim.kernel_table import read_table

        acc["measured_kernels"] = read_table(o.kernels)
    plan = dict(
        gpus=o.gpus,
        accelerator=acc,
        tp=o.tp,
        pp=o.pp,
        vpp=o.vpp,
        ep=o.ep,
        cp=o.cp,
        mbs=o.mbs,
        gbs=o.gbs,
        seq=o.seq,
        sp=o.sp,
        dp="distributed_optimizer" if o.dist_opt else f"zero{o.zero}" if o.zero else "ddp",
        recompute=o.recompute,
        flash_attention=not o.no_flash_attn,
        overlap={
            "grad_reduce": o.overlap_grad_reduce,
            "param_gather": o.overlap_param_gather,
            "tp_comm": o.tp_comm_overlap,
            "p2p": o.overlap_p2p_comm,
            "bucket_size": o.ddp_bucket_size,
        },
        gpus_per_server=o.gpus_per_server,
        nics_per_server=o.nics_per_server,
        nic_busbw=o.nic_busbw,
        first_stage_layers=o.first_stage_layers,
        last_stage_layers=o.last_stage_layers,
        account_for={
            "embedding": o.account_for_embedding_in_pipeline_split,
            "loss": o.account_for_loss_in_pipeline_split,
        },
    )
    if mix is not None:
        plan.update(mix=mix, mix_by=o.mix_by)
    return spec, acc, plan


def gpu_mix(gpu: str, gpus: int, mix_by: str, extra: str | None) -> list[tuple[dict[str, Any], int]] | None:
    """`--gpu` as a mix of accelerator types ("h100:128,a100:128": catalog entries with their GPU
    counts, which the engine checks against the plan), or None for one type's name."""
    from clustersim.catalog import lookup

    if mix_by not in ("rank", "stage"):
        raise InputError(f"command line: --mix-by: '{mix_by}' is not rank or stage")
    if ":" not in gpu:
        if mix_by != "rank":
            raise InputError(f"command line: --mix-by: assigns a mix of types; --gpu {gpu} names one type")
        return None
    mix = []
    for part in gpu.split(","):
        name, _, count = part.strip().partition(":")
        if not name or not count.strip().isdigit():
            raise InputError(
                f"command line: --gpu: '{part.strip()}' is not TYPE:COUNT (e.g. h100:128,a100:128)"
            )
        mix.append((lookup("accelerators", name.strip(), extra), int(count)))
    return mix


class CollectiveResult(Table):
    """nccl-tests' table for one collective: size, count, type, redop, time_us, algbw_GBps,
    busbw_GBps, algorithm, protocol (and `seed` rows over ECMP seeds)."""

    def __init__(self, op: str, ranks: int, columns: dict[str, list[Any]]) -> None:
        super().__init__(columns)
        self.op = op
        self.ranks = ranks

    def __repr__(self) -> str:
        return f"CollectiveResult({self.op} on {self.ranks} ranks, {len(self)} rows)"


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
) -> CollectiveResult:
    """nccl-tests on the flow model (`clustersim collective`): `op` (allreduce, allgather,
    reducescatter, alltoall, broadcast, reduce) over the first `gpus` GPUs (default all) of
    `topology`, for sizes `minbytes`, ·`stepfactor`, … up to `maxbytes` (bytes, or text with a
    K/M/G suffix as nccl-tests takes them), each on an idle network. `env` (default the process
    environment) supplies NCCL_ALGO, NCCL_PROTO, NCCL_IB_QPS_PER_CONNECTION and SimAI's AS_*.
    `reduction` runs all-reduce on reduction servers (`clustersim.reduction_server`);
    `switch_reduce_gbps` is a switch's reduction throughput for collnet_direct / collnet_chain.
    `calibration` (a file `clustersim calibrate` wrote) rescales the fabric's link classes, and
    each row's time t becomes a_c + t / e_c where the file fits `op` itself."""
    from clustersim.fabric import ecmp_seeds as seed_range
    from clustersim.fabric import gpu_count, load_topology
    from clustersim.nccl_tests import OPS, seed_table, sizes, sweep

    name = op.lower().replace("_", "")
    if name not in OPS:
        raise InputError(f"unknown collective '{op}' (valid: {', '.join(OPS)})")
    if isinstance(channels, bool) or not isinstance(channels, int) or channels < 0:
        raise InputError(f"--channels: must be 0 (auto) or more, got {channels!r}")
    todo = sizes(_bytes(minbytes), _bytes(maxbytes), stepfactor)
    seeds = seed_range(seed, ecmp_seeds)
    topo = load_topology(_calibrated(topology, calibration))
    options = dict(
        algorithm=algo, protocol=proto, channels=channels, gpus=gpus, env=env, qps=qps, routing=routing
    )
    if reduction is not None:
        options["reduction"] = reduction
    if switch_reduce_gbps is not None:
        options["switch_reduce_gbps"] = switch_reduce_gbps
    tables = [
        sweep(
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
        from clustersim.calibration import calibrate_table, read_calibration

        tables = [calibrate_table(read_calibration(calibration), name, t) for t in tables]
    table = tables[0] if len(seeds) == 1 else seed_table(seeds, tables)
    ranks = gpus if gpus is not None else gpu_count(topo)
    return CollectiveResult(name, ranks, {c: table[c] for c in table.columns})


def _bytes(size: int | str) -> int:
    from clustersim.nccl_tests import parse_size

    if isinstance(size, int) and not isinstance(size, bool):
        return size
    return parse_size(str(size))


def sweep(
    spec: str | os.PathLike[str],
    store: str | os.PathLike[str] | None = None,
    *,
    workers: int = 1,
    ray: str | None = None,
    progress: Progress | None = None,
) -> Table:
    """Every point of the sweep spec `spec` (YAML; see clustersim.explore.spec) simulated and stored
    in the SQLite store `store` (default: `spec` with the suffix .sqlite) as it finishes, on
    `workers` processes or on the Ray cluster at `ray`; points already stored are not simulated
    again. Returns every stored point as flat columns (clustersim.explore.export). Worker processes
    are spawned (they inherit no state), so a script that calls this with `workers` > 1 must do
    so under `if __name__ == "__main__":`, as with any `multiprocessing` pool."""
    from pathlib import Path

    from clustersim.explore import export
    from clustersim.explore import store as stores
    from clustersim.explore.execute import sweep as run_sweep
    from clustersim.explore.spec import load_spec

    path = Path(spec).with_suffix(".sqlite") if store is None else store
    run_sweep(load_spec(spec), path, workers=workers, ray=ray, progress=progress)
    return export.table(stores.read(path))
