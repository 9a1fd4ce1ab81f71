"""SimAI-Analytical-compatible simulation of a SimAI workload file: `simulate()`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from clustersim import _engine, provenance
from clustersim.errors import InputError
from clustersim.files import read_text
from clustersim.table import Table

if TYPE_CHECKING:
    from clustersim.reduction_server import ReductionServers

SIMAI = "simai"
# Summary keys in SimAI's order, with the names the JSON output uses.
SUMMARY_KEYS = {
    "Expose DP comm": "exposed_dp_us",
    "Expose DP_EP comm": "exposed_dp_ep_us",
    "Expose TP comm": "exposed_tp_us",
    "Expose_EP_comm": "exposed_ep_us",
    "Expose_PP_comm": "exposed_pp_us",
    "bubble time": "bubble_us",
    "total comp": "compute_us",
    "total exposed comm": "exposed_comm_us",
    "Total time": "total_us",
}


MAX_COUNT = 2**32 - 1


def check_count(name: str, value: int | None) -> None:
    """A GPU or NIC count: None (default) or a whole number from 1 to 2^32 − 1."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT
    ):
        raise InputError(f"command line: {name}: must be a whole number from 1 to {MAX_COUNT}, got {value!r}")


class Percentages(dict):  # type: ignore[type-arg]
    """`AnalyticalResult.breakdown()`: shares (%) keyed `…_pct`. A key of the old spelling
    (`compute_us`, which held a percentage) is a KeyError that names the key to use."""

    def __missing__(self, key: object) -> float:
        if isinstance(key, str) and key.endswith("_us") and key.removesuffix("_us") + "_pct" in self:
            raise KeyError(
                f"{key!r}: breakdown() holds percentages, keyed {key.removesuffix('_us') + '_pct'!r};"
                " the times in µs are in `summary`"
            )
        raise KeyError(key)


# A NamedTuple rather than a dataclass: `dataclasses` costs every command ~8 ms of start-up.
class AnalyticalResult(NamedTuple):
    """One simulated iteration: the summary (µs), a per-row table, and SimAI's CSV text."""

    run_name: str
    mode: str
    workload: str
    plan: dict[str, int]
    summary: dict[str, float]
    layers: Table
    csv: str
    warnings: list[str]
    simulate_seconds: float
    events: int
    #: Flow backend: per directed link, bytes carried and utilisation over the iteration.
    links: Table | None = None
    #: Flow backend: Chrome/Perfetto trace (JSON text) of every op of every rank class.
    trace: str | None = None
    #: `run` over several ECMP seeds: each seed's summary, and per column its mean, min and max.
    ecmp_seeds: dict[str, Any] | None = None
    #: What made it: command, version, plan, model (the workload file), fabric, backend
    #: (`clustersim.provenance`).
    provenance: dict[str, Any] | None = None
    #: With faults (`run(faults=)`): how much slower than without them (`clustersim.fabric.fault_report`).
    faults: dict[str, Any] | None = None

    def __repr__(self) -> str:
        ms = self.iteration_time_us / 1000
        return f"AnalyticalResult({self.run_name!r}, {self.mode}, iteration {ms:.3f} ms)"

    @property
    def iteration_time_us(self) -> float:
        return self.summary["total_us"]

    def breakdown(self) -> dict[str, float]:
        """Share (%) of the iteration time of each part, keyed by the part with `_pct` (the
        summary's `compute_us` is `compute_pct` here): compute, exposed DP/DP_EP/TP/EP/PP
        communication and bubble. The parts sum to 100 (the exposed_comm subtotal is left out).
        The keys ended in `_us` before 0.2 though they held percentages; asking for one of those
        raises a KeyError naming the new key."""
        total = self.iteration_time_us
        parts = {k: v for k, v in self.summary.items() if k not in ("total_us", "exposed_comm_us")}
        return Percentages(
            {k.removesuffix("_us") + "_pct": (v / total * 100.0 if total else 0.0) for k, v in parts.items()}
        )

    def to_pandas(self) -> Any:
        """The per-row table (`layers`) as a pandas DataFrame (needs pandas)."""
        return self.layers.to_pandas()

    def to_dict(self) -> dict[str, Any]:
        """What `clustersim analytical --json` prints (less the list of files written)."""
        seeds = {} if self.ecmp_seeds is None else {"ecmp_seeds": self.ecmp_seeds}
        if self.faults is not None:
            seeds["faults"] = self.faults
        return (
            {
                "run_name": self.run_name,
                "mode": self.mode,
                "workload": self.workload,
                "plan": self.plan,
                "iteration_time_us": self.iteration_time_us,
                "summary_us": self.summary,
                "breakdown_pct": self.breakdown(),
                "warnings": self.warnings,
                "simulate_seconds": self.simulate_seconds,
            }
            | seeds
            | {"provenance": self.provenance}
        )


def simulate(
    workload: str | os.PathLike[str],
    *,
    gpus: int | None = None,
    gpus_per_server: int = 8,
    nics_per_server: int | None = None,
    gpu_type: str = "H100",
    nic_type: str = "cx7",
    nvlink_busbw: float | None = None,
    nic_busbw: float | None = None,
    busbw: str | os.PathLike[str] | None = None,
    compat: str | None = None,
    dp_overlap: float = 0.0,
    tp_overlap: float = 0.0,
    ep_overlap: float = 0.0,
    pp_overlap: float | None = None,
    run_name: str | None = None,
    lenient: bool = False,
    ratio_dir: str | os.PathLike[str] | None = None,
    topology: str | os.PathLike[str] | None = None,
    algorithm: str = "auto",
    channels: int = 0,
    seed: int = 0,
    routes: str | os.PathLike[str] | None = None,
    progress: Callable[[float], None] | None = None,
    qps: int = 0,
    routing: str = "ecmp",
    reduction: ReductionServers | str | None = None,
    switch_reduce_gbps: float | None = None,
    calibration: str | os.PathLike[str] | None = None,
    backend: str = "flow",
    faults: str | None = None,
) -> AnalyticalResult:
    """Simulate one training iteration of a SimAI workload file on the analytical backend.

    `compat="simai"` reproduces SimAI-Analytical's numbers (quirks included); the default mode
    corrects them (docs/guides/simai.md lists each). Bandwidths: `busbw` (a SimAI busbw.yaml) or the built-in
    model from `gpu_type`, `nic_type`, `nvlink_busbw`, `nic_busbw` and the server shape.
    With `topology` (a SimAI topology file) communication runs on the flow model instead: every
    collective becomes the transfers of `algorithm` ("auto": NCCL's tuner, honouring SimAI's AS_*
    environment variables) over `channels` channels (0: one per group rank of a server, at most one
    per NIC), routed with seeded ECMP (or along the routes of the `routes` file) and sharing links
    max-min fairly; `qps` queue pairs per
    connection (0: NCCL's default, 1) are hashed one by one, or `routing="spray"` sprays packets.
    `reduction` (reduction servers on the fabric's cpu nodes) or `switch_reduce_gbps` with
    `algorithm` collnet_direct / collnet_chain run every all-reduce across servers on them, the
    other collectives as `algorithm` says (clustersim.reduction_server).
    `calibration` (a file `clustersim calibrate` wrote) rescales the bandwidths by link class
    (`clustersim.calibration.calibrated_busbw`; with `topology`, the fabric's links).
    With `topology`, `backend="packet"` moves the transfers as packets (docs/guides/packet.md)
    instead of max-min fair flows.
    Raises `clustersim.InputError` with file, line and field on bad input.
    """
    if compat not in (None, SIMAI):
        raise InputError(f"command line: compat: unknown mode '{compat}' (valid: simai)")
    # The servers (`_engine.ServerSpec`'s keywords) and what was asked for, as given: the result's
    # provenance.
    server = dict(
        gpus_per_server=gpus_per_server,
        nics_per_server=nics_per_server,
        gpu_type=gpu_type,
        nic_type=nic_type,
        nvlink_busbw=nvlink_busbw,
        nic_busbw=nic_busbw,
    )
    asked = dict(
        gpus=gpus,
        **server,
        busbw=busbw,
        compat=compat,
        dp_overlap=dp_overlap,
        tp_overlap=tp_overlap,
        ep_overlap=ep_overlap,
        pp_overlap=pp_overlap,
        lenient=lenient,
        ratio_dir=ratio_dir,
        calibration=calibration,
    )
    if topology is not None:
        asked |= dict(
            algorithm=algorithm, channels=channels, seed=seed, routes=routes, qps=qps, routing=routing
        )
        asked |= dict(reduction=reduction, switch_reduce_gbps=switch_reduce_gbps)
    given_topology = topology
    for name, value in (
        ("gpus", gpus),
        ("gpus_per_server", gpus_per_server),
        ("nics_per_server", nics_per_server),
    ):
        check_count(name, value)
    text = read_text(workload, "workload")
    busbw_arg = (str(busbw), read_text(busbw, "busbw file")) if busbw is not None else None
    ratios = None
    if ratio_dir is not None:
        names = ("nvlink_ratio.csv", "nic_ratio.csv", "ata_ratio.csv")
        ratios = [(str(Path(ratio_dir) / n), read_text(Path(ratio_dir) / n, "ratio table")) for n in names]
    if run_name is None:
        run_name = Path(workload).stem + "-"
    fabric, platform = None, None
    # The fabric side (calibration, fabrics, reduction servers) loads only for a run that uses it:
    # `clustersim analytical`'s start-up stays lean.
    if calibration is not None:
        from clustersim.calibration import calibrated, calibrated_busbw, read_calibration

        cal = read_calibration(calibration)
        if topology is not None:
            topology = calibrated(topology, cal)
        elif busbw is not None:
            raise InputError(
                f"command line: --calibration: rescales the built-in NVLink and NIC bandwidths, and"
                f" -busbw {busbw} replaces them by measured ones: give one of the two"
            )
        else:
            nvlink_busbw, nic_busbw = calibrated_busbw(cal, gpu_type, nic_type, nvlink_busbw, nic_busbw)
    if topology is None:
        if reduction is not None or switch_reduce_gbps is not None:  # a lean start-up otherwise
            from clustersim.reduction_server import needs_fabric

            needs_fabric(reduction, switch_reduce_gbps)
        if faults is not None:
            raise InputError(
                "command line: --fault: faults are events on a fabric's links; give the fabric (-n)"
            )
    else:
        from clustersim.fabric import fabric_document, load_topology

        platform = load_topology(topology)
        fabric = fabric_document(
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
    run = _engine.run_analytical(
        str(workload),
        text,
        compat=compat == SIMAI,
        gpus=gpus,
        # With a calibration, the bandwidths it rescaled.
        server=_engine.ServerSpec(**server | dict(nvlink_busbw=nvlink_busbw, nic_busbw=nic_busbw)),
        busbw=busbw_arg,
        ratios=ratios,
        dp_o=dp_overlap,
        tp_o=tp_overlap,
        ep_o=ep_overlap,
        pp_o=(1.0 if compat == SIMAI else 0.0) if pp_overlap is None else pp_overlap,
        run_name=run_name,
        lenient=lenient,
        progress=progress,
        fabric=fabric,
        platform=platform,
    )
    plan: dict[str, Any] = dict(run.plan)
    summary = {SUMMARY_KEYS[k]: v for k, v in run.summary}
    columns: dict[str, list[Any]] = {"layer_name": run.layer_names}
    columns.update(run.layers)
    links = None
    if topology is not None:
        seconds = summary["total_us"] * 1e-6
        links_given = run.links or []
        src, dst, gbps = zip(*links_given, strict=True) if links_given else ((), (), ())
        carried = run.link_bytes
        links = Table(
            {
                "src": list(src),
                "dst": list(dst),
                "bandwidth_gbps": list(gbps),
                "bytes": carried,
                "utilisation": [
                    b / (g * 1e9 * seconds) if seconds > 0 else 0.0
                    for b, g in zip(carried, gbps, strict=True)
                ],
            }
        )
    made_by = provenance.record(
        command=provenance.call_text("simulate", {"workload": workload, "topology": given_topology, **asked}),
        plan=plan | {k: v for k, v in asked.items() if k not in plan},
        model=provenance.workload_file(str(workload), text),
        fabric=provenance.fabric(given_topology, platform),
        backend="analytical" if platform is None else backend,
    )
    return AnalyticalResult(
        run_name=run_name,
        mode="flow" if topology is not None else "compat-simai" if compat == SIMAI else "default",
        workload=str(workload),
        plan=plan,
        summary=summary,
        layers=Table(columns),
        csv=run.csv,
        warnings=run.warnings,
        simulate_seconds=run.simulate_seconds,
        events=run.events,
        links=links,
        trace=run.trace,
        provenance=made_by,
    )
