"""Training iterations from a model and a parallel plan: `train()`."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from clustersim import _engine
from clustersim.catalog import accelerator as read_accelerator
from clustersim.catalog import lookup
from clustersim.errors import InputError
from clustersim.fabric import fabric_document, load_topology
from clustersim.kernel_table import read_table
from clustersim.models import from_flags, resolve
from clustersim.plan import OPTIONS
from clustersim.reduction_server import ReductionServers, needs_fabric
from clustersim.table import Table

if TYPE_CHECKING:
    from clustersim.platform import Platform
    from clustersim.topology import Topology

MODEL_KEYS = (
    "family",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn",
    "vocab",
    "seq_len",
    "moe",
    "mla",
    "tie_embeddings",
)
SP_AT_TP1 = "--sp at TP 1: sequence parallelism switched off, as Megatron does (it needs TP > 1)"


class ResolvedPlan(NamedTuple):
    """The plan options resolved, once: the model's description, the accelerator's catalog entry
    (a mix's first type), the plan as `input_document` takes it, and the accelerator as results
    name it (a mix as given: "h100:128,a100:128")."""

    model: dict[str, Any]
    accelerator: dict[str, Any]
    plan: dict[str, Any]
    label: str


def resolve_plan(
    model: str | os.PathLike[str] | dict[str, Any] | None, options: Mapping[str, Any]
) -> ResolvedPlan:
    """The plan `options` (every option of `clustersim.plan.OPTIONS` but the model, by name, as
    `clustersim.plan.values` fills them) for `model`: the options whose `engine` field names the
    plan's field become it as they are; the model, the accelerator (`--gpu`, `--accelerators`,
    `--kernels`), the optimizer and the attention are resolved here."""
    o = options
    if o["dist_opt"] and o["zero"]:
        raise InputError("command line: --dist-opt: cannot be combined with --zero")
    shape = {k: o[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")}
    if model is None:
        spec = from_flags(shape, o["family"], o["seq"])
    elif isinstance(model, dict):
        spec = dict(model)
    else:
        spec = resolve(os.fspath(model), shape)
    if o["family"] is not None:
        spec["family"] = o["family"]
    if o["tie_embeddings"] is not None:
        spec["tie_embeddings"] = o["tie_embeddings"]
    if isinstance(model, dict):
        spec.update({k: v for k, v in shape.items() if v is not None})
        spec.setdefault("name", "model")
    if o["experts"] or o["topk"]:
        moe = dict(spec.get("moe") or {"expert_ffn": spec["ffn"], "topk": 1, "experts": 1})
        moe.update({k: v for k, v in (("experts", o["experts"]), ("topk", o["topk"])) if v})
        spec["moe"] = moe
    extra = None if o["accelerators"] is None else os.fspath(o["accelerators"])
    mix = gpu_mix(o["gpu"], o["gpus"], o["mix_by"], extra)
    acc = mix[0][0] if mix is not None else lookup("accelerators", o["gpu"], extra)
    if o["kernels"] is not None and mix is not None:
        raise InputError(
            f"command line: --kernels: a kernel table times one accelerator type, not the mix {o['gpu']}"
        )
    if o["kernels"] is not None:
        acc["measured_kernels"] = read_table(o["kernels"])
    zero = o["zero"]
    plan: dict[str, Any] = {
        "accelerator": acc,
        "dp": "distributed_optimizer" if o["dist_opt"] else f"zero{zero}" if zero else "ddp",
        "flash_attention": not o["no_flash_attn"],
    }
    for option in OPTIONS:
        if option.engine is not None:
            field, _, key = option.engine.partition(".")
            if key:
                plan.setdefault(field, {})[key] = o[option.name]
            else:
                plan[field] = o[option.name]
    if mix is not None:
        plan.update(mix=mix, mix_by=o["mix_by"])
    label = acc["name"] if mix is None else o["gpu"].replace(" ", "")
    return ResolvedPlan(spec, acc, plan, label)


def gpu_mix(gpu: str, gpus: int, mix_by: str, extra: str | None) -> list[tuple[dict[str, Any], int]] | None:
    """`--gpu` as a mix of accelerator types ("h100:128,a100:128": catalog entries with their GPU
    counts, which the engine checks against the plan), or None for one type's name."""
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


def plan_warnings(*, tp: int = 1, sp: bool = False, **_: Any) -> list[str]:
    """What a plan asks for that Megatron adjusts with a warning (same arguments as `train`)."""
    return [SP_AT_TP1] if sp and tp == 1 else []


def train(
    model: str | dict[str, Any], *, progress: Callable[[float], None] | None = None, **plan: Any
) -> dict[str, Any]:
    """Simulate one training iteration; returns time, throughput, MFU, breakdown, memory and
    warnings (what Megatron would adjust). Keyword arguments: see `input_document`; the fabric
    (`topology`) goes to the engine as its `Platform` (`platform`, where the caller loaded it)."""
    platform = plan.pop("platform", None)
    if platform is None and plan.get("topology") is not None:
        platform = load_topology(plan["topology"])
    result = _engine.run_training(engine_input(model, platform=platform, **plan), progress=progress)
    return result | {"warnings": plan_warnings(**plan)}


def workload_text(model: str | dict[str, Any], *, aicb_compat: bool = False, **plan: Any) -> str:
    """One iteration of one pipeline stage as a SimAI workload file (same arguments as `train`):
    the collectives Megatron-Core issues, or with `aicb_compat` the rows AICB writes."""
    one_type(plan, "a SimAI workload file")
    return _engine.generate_workload(engine_input(model, **plan), aicb_compat=aicb_compat)


def layer_times(model: str | dict[str, Any], **plan: Any) -> tuple[float, float]:
    """Forward and backward seconds of one dense layer for one micro-batch, TP communication
    included (same arguments as `train`)."""
    one_type(plan, "a layer's time")
    return _engine.layer_seconds(engine_input(model, **plan))


def engine_input(
    model: str | dict[str, Any], *, platform: Platform | None = None, **plan: Any
) -> _engine.TrainingInput:
    """The engine's typed input of `input_document(model, **plan)`, on `platform` (the loaded
    fabric of its "fabric") where given."""
    return _engine.TrainingInput(input_document(model, **plan), platform=platform)


def one_type(plan: dict[str, Any], what: str) -> None:
    """Refuse a mix of accelerator types where `what` describes one type."""
    if plan.get("mix") is not None:
        names = ",".join(f"{acc['name']}:{n}" for acc, n in plan["mix"])
        raise InputError(f"command line: --gpu: {what} describes one accelerator type, not the mix {names}")


def input_document(
    model: str | dict[str, Any],
    *,
    gpus: int,
    accelerator: str | dict[str, Any] = "h100",
    tp: int = 1,
    pp: int = 1,
    vpp: int = 1,
    ep: int = 1,
    cp: int = 1,
    mbs: int = 1,
    gbs: int,
    seq: int | None = None,
    sp: bool = False,
    dp: str = "ddp",
    recompute: str = "none",
    flash_attention: bool = True,
    overlap: dict[str, Any] | None = None,
    gpus_per_server: int = 8,
    nics_per_server: int | None = None,
    nic_busbw: float | None = None,
    allow_oom: bool = False,
    trace: bool = False,
    topology: str | os.PathLike[str] | Topology | Platform | None = None,
    algorithm: str = "auto",
    channels: int = 0,
    seed: int = 0,
    routes: str | os.PathLike[str] | None = None,
    qps: int = 0,
    routing: str = "ecmp",
    backend: str = "flow",
    first_stage_layers: int | None = None,
    last_stage_layers: int | None = None,
    account_for: dict[str, bool] | None = None,
    mix: list[tuple[dict[str, Any], int]] | None = None,
    mix_by: str = "rank",
    reduction: ReductionServers | str | None = None,
    switch_reduce_gbps: float | None = None,
    slow_gpus: str | None = None,
    faults: str | None = None,
) -> dict[str, Any]:
    """The engine's input: model, plan (sizes, batch, options), accelerator and network (the
    analytical model on the accelerator's links, or with `topology` the flow model on that fabric:
    a SimAI topology or platform file, a template NAME[:GPUS], a Platform or a Topology; the
    document names it, and `train` hands the engine its Platform). `mix` lists accelerator
    entries with their GPU counts for a job of several types, assigned by `mix_by` ("rank" or
    "stage"); the analytical network then runs at the slowest type's NVLink, NVLS and NIC figures
    (a collective moves at its slowest member's pace; NVLS only where every type has it).
    `reduction` (reduction servers) and `switch_reduce_gbps` (CollNet) take the all-reduces across
    servers on the fabric (clustersim.reduction_server). `slow_gpus` ("RANK:FACTOR,…") runs
    those ranks' compute FACTOR times as long; `faults` (`clustersim.fabric.fault_spec`) takes
    links or NICs of the fabric down or slows them during the run."""
    m = resolve(model) if isinstance(model, str) else dict(model)
    if isinstance(accelerator, str):
        acc = lookup("accelerators", accelerator)
    else:
        measured = accelerator.get("measured_kernels")
        name = str(accelerator.get("name", "accelerator"))
        acc = read_accelerator(name, dict(accelerator), "accelerator", None)
        if measured is not None:
            acc["measured_kernels"] = measured
    m.setdefault("kv_heads", m.get("heads"))
    types = [acc] if mix is None else [a for a, _ in mix]
    nvls = [a.get("nvls_busbw") for a in types]
    nvls = None if None in nvls else nvls
    doc = {
        "model": {k: m[k] for k in MODEL_KEYS if k in m} | {"name": m.get("name", "model")},
        "plan": {
            "gpus": gpus,
            "gpus_per_server": gpus_per_server,
            "tp": tp,
            "pp": pp,
            "vpp": vpp,
            "ep": ep,
            "cp": cp,
            "mbs": mbs,
            "gbs": gbs,
            "seq": seq if seq is not None else m["seq_len"],
            # Megatron switches sequence parallelism off at TP 1 (plan_warnings says so).
            "sp": sp and tp > 1,
            "dp": dp,
            "recompute": recompute,
            "first_stage_layers": first_stage_layers,
            "last_stage_layers": last_stage_layers,
            # Megatron-Core's --account-for-embedding/loss-in-pipeline-split.
            "account_for": account_for or {},
        },
        "accelerator": acc,
        "network": {
            "nvlink_busbw": min(a["nvlink_busbw"] for a in types),
            "nvls_busbw": None if nvls is None else min(nvls),
            "nic_busbw": nic_busbw if nic_busbw is not None else min(a["nic_busbw"] for a in types),
            "nics_per_server": nics_per_server if nics_per_server is not None else gpus_per_server,
        },
        "flash_attention": flash_attention,
        # Megatron-Core's overlaps; None keeps its default for the plan.
        "overlap": {k: v for k, v in (overlap or {}).items() if v is not None},
        "allow_oom": allow_oom,
        "trace": trace,
    }
    if mix is not None:
        parts = [{"accelerator": a, "gpus": n} for a, n in mix]
        doc["mix"] = {"parts": parts, "by": mix_by}
    if slow_gpus is not None:
        doc["slow_gpus"] = slow_gpus
    if topology is None:
        needs_fabric(reduction, switch_reduce_gbps)
        if faults is not None:
            raise InputError(
                "command line: --fault: faults are events on a fabric's links; give the fabric (-n)"
            )
    else:
        # The flow backend: communication becomes transfers on this fabric (the engine gets its Platform).
        doc["fabric"] = fabric_document(
            topology,
            algorithm=algorithm,
            channels=channels,
            seed=seed,
            routes=routes,
            qps=qps,
            routing=routing,
            reduction=reduction,
            switch_reduce_gbps=switch_reduce_gbps,
            backend=backend,
            faults=faults,
        )
    return doc


def chart_inputs(result: dict[str, Any]) -> tuple[dict[str, float], Table]:
    """A `train()` result in the shape the charts take: summary in µs per part, and per-layer times."""
    keys = {"compute": "compute_us", "bubble": "bubble_us", WAITING: "waiting_us"}
    summary = {"total_us": result["iteration_s"] * 1e6}
    for part, seconds in result["breakdown_s"]:
        group = part.removeprefix("exposed ").removesuffix(" comm").lower()
        summary[keys.get(part, f"exposed_{group}_us")] = seconds * 1e6
    layers = result["layers"]
    table = Table(
        {
            "layer_name": [x["name"] for x in layers],
            "fwd compute": [x["compute_s"] * 1e6 for x in layers],
            "fwd exposed comm": [x["exposed_comm_s"] * 1e6 for x in layers],
            "fwd total comm": [x["comm_s"] * 1e6 for x in layers],
        }
    )
    return summary, table


#: The part of a mixed job's breakdown in which a faster type's ranks wait for slower ones
#: (the engine's `training::WAITING_FOR_SLOWER_DEVICES`), told apart from the pipeline's bubble.
WAITING = "waiting for slower devices"


def stage_parts(stage: dict[str, Any]) -> tuple[float, float, float, float]:
    """(compute, exposed communication, bubble, waiting for slower devices) of one entry of a
    result's `stages`, seconds."""
    parts = dict(stage["breakdown_s"])
    compute, bubble = parts.get("compute", 0.0), parts.get("bubble", 0.0)
    return compute, stage["busy_s"] - compute, bubble, parts.get(WAITING, 0.0)


def stage_table(result: dict[str, Any]) -> Table:
    """Each pipeline stage's compute, exposed communication and idle time (the bubble and any
    waiting for slower devices; µs), for the charts."""
    rows = [stage_parts(s) for s in result["stages"]]
    return Table(
        {
            "stage": [s["stage"] for s in result["stages"]],
            "compute": [r[0] * 1e6 for r in rows],
            "exposed comm": [r[1] * 1e6 for r in rows],
            "bubble": [(r[2] + r[3]) * 1e6 for r in rows],
        }
    )


def stages_rows(result: dict[str, Any]) -> list[list[object]]:
    """Every stage's layers, memory (GB) and breakdown (seconds), header first, for a CSV file: one
    column per part."""
    names = [k for k, _ in result["stages"][0]["breakdown_s"]] if result["stages"] else []
    parts = [n.replace(" ", "_") + "_s" for n in names]
    rows: list[list[object]] = [["stage", "layers", "memory_gb", "end_s", "busy_s", *parts]]
    for s in result["stages"]:
        values = [s["memory_gb"], s["end_s"], s["busy_s"], *[v for _, v in s["breakdown_s"]]]
        rows.append([s["stage"], s["layers"], *[f"{v:.9g}" for v in values]])
    return rows


def layers_rows(result: dict[str, Any]) -> list[list[object]]:
    """Per-layer times of the critical stage (seconds), header first, for a CSV file."""
    rows: list[list[object]] = [["layer", "compute_s", "exposed_comm_s", "comm_s"]]
    for x in result["layers"]:
        rows.append([x["name"]] + [f"{x[k]:.9g}" for k in ("compute_s", "exposed_comm_s", "comm_s")])
    return rows
