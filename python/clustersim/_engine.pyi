"""Type stubs of clustersim's compiled engine (crates/python): conversion only, every function
raises `InputError` on bad input and `InternalError` (or a PanicException) on a bug.
tests/test_engine_stub.py checks that these names and parameters are the module's."""

from collections.abc import Callable, Sequence
from typing import Any

class InputError(Exception):
    """Bad input: the message names the file, line and field."""

class InternalError(Exception):
    """A broken invariant of the engine: a bug in clustersim."""

class PanicException(BaseException):
    """A Rust panic in the engine: a bug in clustersim."""

#: Op kinds of the workload IR (COMP, COMM_COLL, SEND, RECV).
OP_KINDS: list[str]
#: Collective names of the workload IR.
COLLECTIVES: list[str]
#: Phases of an op (fwd, ig, wg, other).
PHASES: list[str]
# Data types of compute ops' work (the workload columns' `dtype` is 1 + an index, 0 for none).
DTYPES: list[str]

class Platform:
    """The engine's platform: typed nodes, directed links, ranks placed on GPUs. Arrays in bulk."""

    @staticmethod
    def parse(path: str, text: str) -> Platform:
        """A platform file or a SimAI topology file; accelerator types are the catalog's."""
    @staticmethod
    def parse_simai(path: str, text: str) -> Platform:
        """A SimAI topology file only."""
    @staticmethod
    def from_arrays(
        source: str,
        kinds: Sequence[int],
        src: Sequence[int],
        dst: Sequence[int],
        bandwidth: Sequence[float],
        latency: Sequence[float],
        error_rate: Sequence[float],
        gpus_per_server: int,
        gpu_type: str,
    ) -> Platform:
        """SimAI-convention platform from full-duplex links (GB/s, ns, drop probability).

        Kinds: 0 GPU, 1 NVSwitch, 2 switch."""
    @property
    def ranks(self) -> int: ...
    @property
    def kinds(self) -> list[str]: ...
    @property
    def names(self) -> list[str]: ...
    @property
    def links(self) -> tuple[list[int], list[int], list[float], list[float]]:
        """(src, dst, bandwidth GB/s, latency ns) of every directed link."""
    @property
    def forwards(self) -> list[bool]:
        """Per node, whether routes pass through it (switches, NICs; never a GPU)."""
    @property
    def error_rates(self) -> list[float]: ...
    @property
    def gpus_per_server(self) -> int: ...
    @property
    def gpu_type(self) -> str: ...
    def duplex_links(self) -> tuple[list[int], list[int], list[float], list[float], list[float]]:
        """(src, dst, bandwidth GB/s, latency ns, error rate) of every full-duplex link."""
    def to_simai(self) -> str:
        """The SimAI topology file text (rates in Gbps, delays in ms, as gen_Topo_Template.py)."""
    @property
    def placement(self) -> tuple[list[int], list[int], list[int]]:
        """(device node, scale-up domain, rail) of every rank."""
    @property
    def accelerator_types(self) -> list[str]: ...
    @staticmethod
    def parse_graph(path: str, text: str) -> Platform:
        """A platform graph document (node-link JSON, HCSim's Table 2 attributes); XPU types are
        the catalog's."""
    @staticmethod
    def hcsim(
        source: str,
        coherent: bool,
        mix: Sequence[tuple[str, int]],
        xpus_per_server: int = 8,
        servers_per_tor: int = 16,
        cpus_per_server: int = 2,
        nics_per_server: int = 2,
        pcie_uplinks: int = 4,
        links: dict[str, tuple[float, float]] = ...,
        cxl_uplink: float | None = None,
        dram_bytes: float = ...,
        cxl_memory_bytes: float = ...,
    ) -> Platform:
        """HCSim's Fig. 6a system, or Fig. 6b when `coherent`; links by class as (GB/s, ns)."""
    def to_graph_json(self, name: str) -> str:
        """The platform as a graph document that `parse_graph` reads back."""
    def to_simgrid(self, routing: str = "full", dtype: str = "fp32", seed: int = 0) -> str:
        """SimGrid platform XML; routing full, floyd or dijkstra."""
    def route(self, src: int, dst: int, flow: int = 0, seed: int = 0) -> list[int]:
        """Nodes of the path our router gives flow `flow` from `src` to `dst`."""
    @property
    def node_specs(self) -> list[tuple[str, float, str, str]]:
        """Per node: (XPU type or "", memory bytes or 0, "hbm"/"dram"/"cxl" or "", tier or "")."""

class TemplateParams:
    """gen_Topo_Template.py's parameters resolved for a template (None: the custom fabric) with the
    --ro/--dt/--dp flags and parameters by name (None: not given); each parameter is an attribute."""

    topology: str | None
    rail_optimized: bool
    dual_tor: bool
    dual_plane: bool
    def __init__(
        self,
        topology: str | None = None,
        params: dict[str, object] | None = None,
        *,
        ro: bool = False,
        dt: bool = False,
        dp: bool = False,
    ) -> None: ...
    def __getattr__(self, name: str) -> int | str: ...
    def to_dict(self) -> dict[str, int | str]: ...
    def file_name(self) -> str:
        """The file name gen_Topo_Template.py gives these parameters (one pod)."""
    def build(self, pods: int | None = None) -> tuple[Platform, str, list[str]]:
        """(platform, name, warnings) of the fabric, `pods` pods joined by a core tier."""

def fat_tree(k: int, params: dict[str, object] | None = None) -> tuple[Platform, str, list[str]]:
    """(platform, name, warnings) of a k-ary fat-tree with SimAI's link and server parameters."""

def template_parameters() -> list[tuple[str, str, str, str]]:
    """(name, short flag, kind, help) of every gen_Topo_Template.py parameter."""

def simai_templates() -> list[str]:
    """gen_Topo_Template.py's template names."""

def read_rate(text: str) -> float:
    """An ns-3 DataRate string in GB/s; ValueError with the reason if it is not one."""

def read_delay(text: str) -> float:
    """An ns-3 Time string in ns; ValueError with the reason if it is not one."""

def parse_rate(text: str) -> float | None:
    """An ns-3 DataRate string in GB/s (bytes/ns); None if it is not one."""

def parse_time(text: str) -> float | None:
    """An ns-3 Time string in ns; None if it is not one."""

def format_rate(bytes_per_ns: float) -> str:
    """GB/s as gen_Topo_Template.py spells rates (`400Gbps`)."""

def format_time(ns: float) -> str:
    """ns as gen_Topo_Template.py spells delays (`0.0005ms`)."""

Progress = Callable[[float], object] | None
Columns = dict[str, Any]

def end_to_end_csv(
    run_name: str, summary: Sequence[float], layer_names: Sequence[str], layers: Sequence[Sequence[float]]
) -> str:
    """SimAI's EndToEnd CSV (the engine's writer): summary in its 9 columns' order, 15 values a layer."""

class ServerSpec:
    """The analytical model's servers: GPUs and NICs per server, SimAI's `-g_type` (a profile of
    the accelerator catalog) and `-nic_t`, and overrides of the bus bandwidths (GB/s)."""

    def __init__(
        self,
        *,
        gpus_per_server: int = 8,
        nics_per_server: int | None = None,
        gpu_type: str = "H100",
        nic_type: str = "cx7",
        nvlink_busbw: float | None = None,
        nic_busbw: float | None = None,
    ) -> None: ...
    @property
    def nvlink_busbw(self) -> float:
        """NVLink bus bandwidth per GPU, GB/s (the override, else the GPU type's)."""
    @property
    def nic_busbw(self) -> float:
        """Bus bandwidth per NIC, GB/s (the override, else the NIC type's)."""

def run_analytical(
    path: str,
    text: str,
    *,
    compat: bool,
    gpus: int | None,
    server: ServerSpec,
    busbw: tuple[str, str] | None,
    ratios: Sequence[tuple[str, str]] | None,
    dp_o: float,
    tp_o: float,
    ep_o: float,
    pp_o: float,
    run_name: str,
    lenient: bool,
    progress: Progress,
    fabric: dict[str, Any] | None = None,
    platform: Platform | None = None,
) -> AnalyticalRun:
    """A SimAI workload file (`text`, named `path` in errors) through the executor; with `fabric`
    (a training input's "fabric") the flow model on `platform`."""

class AnalyticalRun:
    """One run of a SimAI workload file; each part is converted when it is read."""

    @property
    def summary(self) -> list[tuple[str, float]]:
        """(column, µs) in EndToEnd.csv's summary order."""
    @property
    def layer_names(self) -> list[str]: ...
    @property
    def layers(self) -> list[tuple[str, list[float]]]:
        """(column, values) per layer column, in EndToEnd.csv's order (µs, GB/s)."""
    @property
    def csv(self) -> str:
        """SimAI's EndToEnd.csv text."""
    @property
    def warnings(self) -> list[str]: ...
    @property
    def simulate_seconds(self) -> float: ...
    @property
    def events(self) -> int: ...
    @property
    def plan(self) -> list[tuple[str, int]]:
        """(name, value) for gpus, tp, ep, pp, dp, ga, vpp, pp_comm as the file describes them."""
    @property
    def links(self) -> list[tuple[int, int, float]] | None:
        """The fabric's directed links (source, destination, Gb/s); None without a fabric."""
    @property
    def link_bytes(self) -> list[float]:
        """Bytes each link carried, in `links` order."""
    @property
    def trace(self) -> str | None:
        """A Chrome trace (JSON text) of the run on a fabric; None without one."""

class TrainingInput:
    """One training job as the engine reads it (model, plan, accelerator(s), network), built once
    from the training input document; a bad field raises InputError naming its path
    (`plan.tp`). `platform` is the fabric of the document's "fabric" options."""

    def __init__(self, document: dict[str, Any], *, platform: Platform | None = None) -> None: ...

def run_training(input: TrainingInput, *, progress: Progress = None) -> dict[str, Any]:
    """One training iteration: the engine's report (time, throughput, MFU, breakdown, memory,
    stages, trace where asked)."""

def layer_seconds(input: TrainingInput) -> tuple[float, float]:
    """Forward and backward seconds of one dense layer for one micro-batch."""

def iteration_kernels(input: TrainingInput) -> list[tuple[str, str, str, float, int]]:
    """The distinct kernels of one iteration: class, shape, dtype, the model's ns, and how many
    of the iteration's op lists hold the kernel."""

def is_kernel_class(name: str) -> bool:
    """Whether `name` is a kernel class of a kernel table (gemm, flash_attention, norm_bwd, ...)."""

class PlanSearch:
    """The valid plans of a space for the model and cluster of `input`, each axis over the values
    given or every value the rules allow (None), global batch `gbs` exactly or, with `at_most`,
    the largest multiple of each plan's DP not above it; lower bounds, a branch and bound's
    order and simulations of any of them, sharing one memo of collective prices."""

    def __init__(
        self,
        input: TrainingInput,
        *,
        gbs: int,
        at_most: bool,
        tp: list[int] | None = None,
        pp: list[int] | None = None,
        vpp: list[int] | None = None,
        ep: list[int] | None = None,
        cp: list[int] | None = None,
        mbs: list[int] | None = None,
        sp: list[bool] | None = None,
        recompute: list[str] | None = None,
        optimizer: list[str] | None = None,
        grad_reduce: list[bool] | None = None,
        param_gather: list[bool] | None = None,
        tp_comm: list[bool] | None = None,
    ) -> None: ...
    def __len__(self) -> int: ...
    @property
    def visited(self) -> int:
        """Combinations of the axes' values tried, valid or not."""
    def column(self, name: str, indices: list[int] | None = None) -> list[Any]:
        """One plan column, of every plan or of `indices`: tp, pp, vpp, ep, cp, mbs, gbs, dp,
        micro_batches, sp, overlap_grad_reduce, overlap_param_gather, tp_comm_overlap,
        optimizer, recompute, memory_gb, params_gb, grads_and_optimizer_gb, activations_gb,
        bound_s (NaN where not screened)."""
    def screen(self, indices: list[int]) -> None:
        """Lower-bound the plans `indices` and order them, highest ceiling on tokens/s first."""
    def take(self, threshold: float, count: int, memory_gb: float) -> list[int]:
        """The next `count` plans of the order with a ceiling of at least `threshold` that fit in
        `memory_gb` per GPU."""
    def remaining(self, threshold: float) -> int:
        """Plans of the order not taken yet whose ceiling is at least `threshold`."""
    @property
    def taken(self) -> tuple[int, int]:
        """Plans taken so far, and of those the ones that did not fit."""
    def simulate(self, indices: list[int]) -> Simulated:
        """The plans simulated in parallel, each exactly as run_training alone."""

class Simulated:
    """Simulated plans in the order asked."""

    iteration_s: list[float]
    tokens_per_s: list[float]
    mfu: list[float]
    #: Breakdown parts (train's names); `breakdown_s[i][k]` is plan i's seconds in part k.
    parts: list[str]
    breakdown_s: list[list[float]]
    #: Why a plan failed, None where it ran.
    error: list[str | None]

def generate_workload(input: TrainingInput, *, aicb_compat: bool = False) -> str:
    """A training iteration as SimAI workload file text."""

def busbw_factor(collective: str, ranks: int) -> float:
    """nccl-tests' busbw / algbw for `collective` (its name, e.g. allreduce or all_reduce) on `ranks`."""

def in_network_busbw_factor(ranks: int) -> float:
    """nccl-tests' busbw / algbw for an all-reduce reduced in the network on `ranks` ranks."""

def rewrite_workload(path: str, text: str, *, lenient: bool = False) -> tuple[str, list[str]]:
    """A SimAI workload file written back in its header variant, and the warnings."""

def inspect_workload(path: str, text: str, *, lenient: bool = False) -> dict[str, Any]:
    """Header fields, row count, row names and warnings of a SimAI workload file."""

def flow_completion_times(
    topology: Platform | str,
    flows: Sequence[tuple[int, int, float, float]],
    routes: Sequence[Sequence[int]] | None = None,
    seed: int = 0,
    routing: str = "ecmp",
) -> list[float]:
    """Completion time (ns) of each flow (src node, dst node, bytes, start ns) on a SimAI topology;
    routing "ecmp" (one path per flow) or "spray" (split over every shortest path)."""

def collective_sweep(
    topology: Platform | str,
    collective: str,
    sizes: Sequence[int],
    algorithm: str = "auto",
    channels: int = 0,
    ranks: int | None = None,
    seed: int = 0,
    send_lat_us: float | None = None,
    nvls: bool = False,
    pxn: bool = False,
    nvlstree: bool = False,
    protocol: str = "auto",
    qps: int = 0,
    routing: str = "ecmp",
    p2p_pxn: bool = True,
    reduction_servers: str | None = None,
    reduce_gbps: float | None = None,
    chunk_bytes: float | None = None,
    nsplit: int = 0,
    nreq: int = 2,
    switch_reduce_gbps: float | None = None,
    backend: str = "flow",
) -> list[tuple[float, str, str]]:
    """(time ns, algorithm, protocol) of `collective` for each size, each on an idle network."""

def workload_from_json(path: str, text: str) -> Columns:
    """Workload IR JSON (checked) as columns."""

def workload_to_json(columns: Columns, path: str = "workload") -> str:
    """Columns (checked) as workload IR JSON."""

def workload_from_simai(
    path: str,
    text: str,
    *,
    gpus: int | None = None,
    gpus_per_server: int = 8,
    overlap: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0),
    lenient: bool = False,
) -> Columns:
    """The IR a SimAI workload file becomes, as columns."""

def workload_from_training(input: TrainingInput) -> Columns:
    """The IR of one Megatron-Core iteration, as columns."""

def simulate_workload(
    columns: Columns,
    *,
    server: ServerSpec,
    busbw: tuple[str, str] | None = None,
    compat: bool = False,
) -> dict[str, Any]:
    """Columns through the executor on the analytical model on `server`: end time and op
    start/end times."""

def roofline_ns(flops: float, flops_per_s: float | None, bytes: float, bytes_per_s: float | None) -> float:
    """A compute op's time by the compute model's roofline, ns (a rate of None bounds nothing)."""

def check_model(doc: dict[str, Any]) -> tuple[str, str] | None:
    """Check a model description as a run will: None, or (field, problem)."""

def catalog_accelerators() -> dict[str, dict[str, Any]]:
    """The shipped accelerator catalog: names to entries, in file order."""

def accelerator_entry(name: str, doc: dict[str, Any]) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
    """A user's accelerator entry as the catalog's schema reads it (peaks and NIC resolved), or
    (None, (field, problem))."""

def llama2_13b_graph(
    batch: int, layers: int, hidden: int, seq: int, heads: int, element_bytes: int, iterations: int, sync: str
) -> str:
    """The HCSim paper's LLaMA2-13B data-parallel workload graph as document text."""

def normalize_workload_graph(path: str, text: str) -> str:
    """Read a workload graph document (node-link JSON, HCSim's Table 3) and write it back as the
    engine writes it."""

def workload_graph_from_workload(path: str, columns: dict[str, Any], platform: Platform, dtype: str) -> str:
    """A workload's IR columns as a workload graph document on `platform`, compute in `dtype`."""

def run_workload_graph(
    path: str,
    text: str,
    platform: Platform,
    iterations: int | None = None,
    access: str = "auto",
    algorithm: str = "auto",
    trace: bool = False,
    progress: Progress = None,
    send_lat_us: float | None = None,
    concurrent: bool = False,
    backend: str = "flow",
) -> dict[str, Any]:
    """A workload graph document on `platform` with the flow model: iteration end times (ns),
    per-class breakdowns, placed bytes, per-link bytes and (with `trace`) a Chrome trace;
    `send_lat_us` prices collectives step by step at link rate (SimGrid's CM02)."""

# Goodput over a long run (crates/python/src/goodput.rs; the engine's goodput and
# catalog::failures).

class FailureCause:
    """One cause of interruptions of a failure profile."""

    name: str
    label: str
    category: str
    #: The part the rate scales with: gpu, server, nic or job.
    per: str
    #: swap, restart or planned.
    effect: str
    #: Interruptions per 10⁹ part-hours.
    fit: float
    count: float | None

class FailureProfile:
    """A published observation of a job's interruptions (the catalog's failures.yaml)."""

    name: str
    source: str
    gpus: int
    servers: int
    nics: int
    days: float
    causes: list[FailureCause]

def failure_profiles() -> list[FailureProfile]:
    """The shipped failure profiles, in file order."""

def failure_rates_per_hour(
    *, profile: str, gpus: int, gpus_per_server: int, nics_per_server: int, fits: list[float] | None = None
) -> list[float]:
    """Each cause's interruptions per hour for a job of that size (the profile's order); `fits`,
    one per cause, replaces the profile's rates (FIT)."""

def checkpoint_bytes(params: int) -> float:
    """Bytes of a checkpoint: bf16 weights and Adam's fp32 state, 14 B a parameter."""

def goodput_closed_form(
    *, interval_s: float, checkpoint_s: float, restart_s: float, mtbf_s: float
) -> tuple[float, float, float, float]:
    """(expected goodput at interval_s, Young's interval, Daly's interval, the exact optimum)."""

def best_interval(intervals_s: Sequence[float], goodput: Sequence[float]) -> float:
    """The parabola's vertex (in ln interval) through a sweep's best point and its neighbours."""

class GoodputTrials:
    """Every trial's outcome."""

    by_cause: list[int]
    unfinished: int
    def column(self, quantity: str) -> Any:
        """Every trial's wall_s, work_s, goodput, interruptions, lost_s, checkpoint_s, wait_s or
        restart_s, as a NumPy array of float64."""
    def spread(self, quantity: str) -> tuple[float, float, float, float, float]:
        """(mean, std, p5, p50, p95) of a quantity (as `column`)."""

class GoodputRun:
    """A run to simulate; causes as three lists in one order."""

    rate_per_s: float
    def __init__(
        self,
        *,
        names: Sequence[str],
        effects: Sequence[str],
        rates_per_s: Sequence[float],
        interval_s: float,
        checkpoint_s: float,
        restart_s: float,
        restore_s: float,
        spare_servers: int | None,
        repair_s: float,
        window_s: float,
        work_s: float,
        trials: int,
        seed: int,
    ) -> None: ...
    def simulate(self) -> GoodputTrials:
        """Every trial's outcome."""
    def timeline(self, trial: int) -> list[tuple[float, int, float, float]]:
        """Trial `trial`'s interruptions: (at_s, cause index, lost_s, work_s kept so far)."""
    def interval_sweep(self, intervals_s: Sequence[float]) -> list[tuple[float, float, float, float, float]]:
        """Goodput's (mean, std, p5, p50, p95) per checkpoint interval, the same failures in each."""
