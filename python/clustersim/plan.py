"""Plan options, defined once: the model, the accelerator and the parallel plan of a Megatron-Core
training iteration, each option with its name, type, default, help, command-line flags and range.

Built from `OPTIONS`:
  - the parsers of `clustersim train`, `search`, `workload generate` and `kernels measure`
    (`clustersim.cli.common.add_options`);
  - the keyword arguments of `clustersim.train()` and `clustersim.search()` (`signature`), and so
    the option names a sweep spec's `fixed` and `grid` take (clustersim.explore.spec);
  - the plan the engine gets (`clustersim.training.resolve_plan`: each option's `engine` field);
  - search's space (`search == "axis"`) and the options it holds fixed (`search == "fixed"`).
`GOODPUT_OPTIONS` are `clustersim goodput`'s own (failures, checkpoints, restarts, spares), beside
the plan's: its parser, `clustersim.goodput()`'s keywords and a goodput sweep's option names.

It imports nothing from clustersim (the base layer) and nothing costly: the CLI reads it at every
command's start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import inspect

MAX_COUNT = 2**32 - 1
#: The engine's limits (crates/engine/src/training/plan.rs, model.rs; simai/build.rs MAX_GPUS).
MAX_GPUS = 1 << 24
MAX_WIDTH = 1 << 22
MAX_LAYERS = 1 << 12
_MAXIMUM = {
    "gpus": MAX_GPUS,
    "gbs": MAX_GPUS,
    "tp": MAX_GPUS,
    "pp": MAX_GPUS,
    "ep": MAX_GPUS,
    "cp": MAX_GPUS,
    "vpp": 1 << 12,
    "mbs": 1 << 16,
    "seq": MAX_WIDTH,
    "gpus_per_server": 1 << 16,
    "first_stage_layers": MAX_LAYERS,
    "last_stage_layers": MAX_LAYERS,
    "layers": MAX_LAYERS,
    "hidden": MAX_WIDTH,
    "heads": 1 << 14,
    "kv_heads": 1 << 14,
    "ffn": MAX_WIDTH,
    "vocab": MAX_WIDTH,
    "experts": 1 << 12,
    "topk": 1 << 12,
}


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of an option that must be given (`--gpus`, `--gbs`).
REQUIRED: Any = _Required()


class Option(NamedTuple):
    """One plan option. `name` is the API's keyword and a sweep's option name; `flags` the CLI's."""

    name: str
    #: int, float, str or bool. A bool defaulting to False is a switch (`--sp`); one defaulting to
    #: None is on/off/unset (`--overlap-grad-reduce`, `--no-overlap-grad-reduce`).
    type: type
    default: Any
    help: str | None
    flags: tuple[str, ...]
    #: The values it may take (the CLI checks them; the engine checks the rest).
    choices: tuple[Any, ...] | None = None
    #: A whole number from 1 to `maximum` (`whole`); False: any int (`--zero`, with choices).
    count: bool = True
    #: The largest value the engine simulates (its plan and model checks say the same number,
    #: tests/test_plan_schema.py holds them together): the CLI and sweeps refuse more, with it.
    maximum: int = MAX_COUNT
    metavar: str | None = None
    #: A file's path: the API also takes an os.PathLike.
    path: bool = False
    #: Options of one group exclude each other on the command line (--dist-opt, --zero).
    group: str | None = None
    #: The field of the engine's plan (`clustersim.training.input_document`'s keyword, dotted into
    #: a mapping: "overlap.grad_reduce") it becomes as it is; None: resolved with others
    #: (`clustersim.training.resolve_plan`: model, accelerator, optimizer, attention).
    engine: str | None = None
    #: How `search` takes it: "axis" (it tries every value, or those given), "fixed" (as `train`
    #: does), "" (not at all: search keeps train's default).
    search: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def annotation(self) -> str:
        """The API's type annotation."""
        kind = "str | os.PathLike[str]" if self.path else self.type.__name__
        return kind if self.default is not None else f"{kind} | None"


def _count(
    name: str, help: str | None, *, default: Any = None, flags: tuple[str, ...] = (), **kw: Any
) -> Option:
    kw.setdefault("maximum", _MAXIMUM.get(name, MAX_COUNT))
    return Option(name, int, default, help, flags or (f"--{name.replace('_', '-')}",), **kw)


def _option(name: str, type: type, default: Any, help: str | None, *flags: str, **kw: Any) -> Option:
    return Option(name, type, default, help, flags or (f"--{name.replace('_', '-')}",), **kw)


_PARALLEL = {"tp": "tensor", "pp": "pipeline", "ep": "expert", "cp": "context"}


def _parallel(name: str) -> Option:
    """A parallel size: one of search's axes."""
    help = (
        "virtual pipeline stages per GPU (interleaving)"
        if name == "vpp"
        else f"{_PARALLEL[name]}-parallel size (default 1)"
    )
    return _count(name, help, default=1, engine=name, search="axis")


_SHAPE = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "experts", "topk")
_ON_OFF = {
    "overlap_grad_reduce": (
        "overlap.grad_reduce",
        "gradient buckets reduced under the backward (default off, as in Megatron-LM)",
    ),
    "overlap_param_gather": (
        "overlap.param_gather",
        "parameter all-gathers under the next forward (needs --dist-opt, --overlap-grad-reduce; off)",
    ),
    "tp_comm_overlap": (
        "overlap.tp_comm",
        "TP communication as Transformer Engine's userbuffers copies under the GEMMs (needs --sp and"
        " each TP group inside one server; default off)",
    ),
    "overlap_p2p_comm": ("overlap.p2p", "pipeline receives posted a step ahead (default on with --vpp)"),
}

#: Every plan option, in the order of `clustersim train --help`.
OPTIONS: tuple[Option, ...] = (
    _option(
        "model",
        str,
        None,
        "catalog name, a YAML/JSON model file, or a HF config.json; without it the model is"
        " --layers --hidden --heads --ffn --vocab --seq (and --kv-heads, --family) alone, named custom",
        path=True,
        search="fixed",
    ),
    _count("gpus", "number of GPUs", default=REQUIRED, flags=("-g", "--gpus"), engine="gpus", search="fixed"),
    _option(
        "gpu",
        str,
        "h100",
        "accelerator name from the catalog (default h100), or a mix of types with their GPU counts"
        " summing to --gpus, e.g. h100:128,a100:128 (a heterogeneous job: reports utilisation per type)",
        search="fixed",
    ),
    _option(
        "mix_by",
        str,
        "rank",
        "assign a --gpu mix in rank order (default; a type boundary inside a pipeline stage mixes its"
        " data-parallel groups) or by whole pipeline stages",
        choices=("rank", "stage"),
    ),
    _option(
        "accelerators", str, None, "YAML file of extra accelerator descriptions", path=True, search="fixed"
    ),
    *(_parallel(name) for name in ("tp", "pp", "vpp", "ep", "cp")),
    _count("mbs", "micro-batch size in sequences (default 1)", default=1, engine="mbs", search="axis"),
    _count("gbs", "global batch size in sequences", default=REQUIRED, engine="gbs", search="fixed"),
    _count("seq", "sequence length (default: the model's)", engine="seq", search="fixed"),
    _option("sp", bool, False, "sequence parallelism", engine="sp", search="axis"),
    *(
        _count(
            f"{end}_stage_layers",
            f"layers of the {end} pipeline stage (uneven pipelines)",
            engine=f"{end}_stage_layers",
        )
        for end in ("first", "last")
    ),
    *(
        _option(
            f"account_for_{part}_in_pipeline_split",
            bool,
            False,
            f"count the {part} as a layer of the even split, as Megatron-Core does (its stage"
            " builds one layer fewer; Llama 3 405B: both, --pp 16 --vpp 8)",
            engine=f"account_for.{part}",
        )
        for part in ("embedding", "loss")
    ),
    _option("dist_opt", bool, False, "Megatron's distributed optimizer", group="optimizer"),
    _count("zero", "DeepSpeed ZeRO stage", choices=(1, 2, 3), count=False, group="optimizer"),
    _option(
        "recompute",
        str,
        "none",
        None,
        choices=("none", "selective", "full"),
        engine="recompute",
        search="axis",
    ),
    _option("no_flash_attn", bool, False, "unfused attention (s×s scores in HBM)", search="fixed"),
    *(
        _option(
            name, bool, None, help, engine=engine, search="fixed" if name == "overlap_p2p_comm" else "axis"
        )
        for name, (engine, help) in _ON_OFF.items()
    ),
    _count(
        "ddp_bucket_size",
        "parameters per gradient bucket (default max(40M, 1M×DP))",
        engine="overlap.bucket_size",
    ),
    _option(
        "kernels",
        str,
        None,
        "kernel table (CSV, `clustersim kernels measure`): measured times replace the compute model's",
        metavar="TABLE",
        path=True,
    ),
    _count(
        "gpus_per_server",
        "GPUs per server (default 8)",
        default=8,
        flags=("-g_p_s", "--gpus-per-server"),
        engine="gpus_per_server",
        search="fixed",
    ),
    _count(
        "nics_per_server",
        "NICs per server (default: one per GPU)",
        flags=("-n_p_s", "--nics-per-server"),
        engine="nics_per_server",
        search="fixed",
    ),
    _option(
        "nic_busbw",
        float,
        None,
        "bus bandwidth per NIC, GB/s (default: the accelerator's)",
        "-nic",
        "--nic-busbw",
        engine="nic_busbw",
        search="fixed",
    ),
    *(_count(name, f"override the model's {name.replace('_', ' ')}", search="fixed") for name in _SHAPE),
    _option(
        "slow_gpus",
        str,
        None,
        "slow GPUs (stragglers): RANK:FACTOR,… runs each rank's compute FACTOR times as long"
        " (1.05: a GPU 5 percent slower); random:SIGMA[@SEED] draws every GPU's factor as 1 + |N(0,"
        " SIGMA²)|, seeded; every collective a slow GPU joins waits for it",
        metavar="RANK:FACTOR,…",
        engine="slow_gpus",
    ),
    _option(
        "family",
        str,
        None,
        "block type: gpt (LayerNorm, GeLU, biases) or llama (RMSNorm, SwiGLU; default without --model)",
        choices=("gpt", "llama"),
    ),
    _option(
        "tie_embeddings",
        bool,
        None,
        "the output layer shares the word embedding's weights (default: the model's; gpt tied,"
        " llama untied; --no-tie-embeddings is Megatron's --untie-embeddings-and-output-weights)",
    ),
)

# Llama 3 (arXiv:2407.21783) §3.3.1: Tectonic, Meta's storage for the 405B run, "supports a
# sustainable throughput of 2 TB/s and a peak throughput of 7 TB/s".
LLAMA3_STORAGE_GBPS = 2000.0


def _goodput_option(name: str, type: type, default: Any, help: str, **kw: Any) -> Option:
    kw.setdefault("count", False)
    return Option(name, type, default, help, (f"--{name.replace('_', '-')}",), **kw)


#: Goodput's own options (beside the plan's): the CLI's flags, the API's keywords, a sweep's names.
GOODPUT_OPTIONS: tuple[Option, ...] = (
    _goodput_option(
        "failures", str, "llama3-405b", "failure profile of the engine's catalog (default llama3-405b)"
    ),
    _goodput_option(
        "rates",
        str,
        None,
        "override causes' rates, FIT (failures per 10^9 part-hours): NAME=FIT,… (e.g. faulty_gpu=3500)",
        metavar="NAME=FIT,…",
    ),
    _goodput_option("rate_scale", float, 1.0, "multiply every cause's rate (default 1)"),
    _goodput_option("days", float, None, "wall-clock window to simulate, days (default 54 without --tokens)"),
    _goodput_option("tokens", float, None, "token budget: simulate the days it takes (e.g. 15.6e12)"),
    _goodput_option(
        "checkpoint_interval_min",
        float,
        None,
        "training minutes between checkpoints (default: Daly's optimum for the total failure rate)",
    ),
    _goodput_option(
        "storage_write_gbps",
        float,
        LLAMA3_STORAGE_GBPS,
        "storage write bandwidth for checkpoints, GB/s (default 2000: Llama 3's Tectonic, sustained)",
    ),
    _goodput_option(
        "storage_read_gbps", float, None, "storage read bandwidth for restores, GB/s (default: the write's)"
    ),
    _goodput_option(
        "restart_min",
        float,
        10.0,
        "relaunch and re-initialisation after an interruption, minutes (default 10, an assumption)",
    ),
    _goodput_option("spare_servers", int, None, "spare servers (default: always one free)", metavar="N"),
    _goodput_option(
        "repair_hours",
        float,
        24.0,
        "a swapped server's time in repair, hours (default 24, an assumption; needs --spare-servers)",
    ),
    _goodput_option("trials", int, 1000, "Monte Carlo trials (default 1000)", metavar="N", count=True),
    _goodput_option("seed", int, 0, "seed of the trials (default 0)"),
)

BY_NAME = {o.name: o for o in OPTIONS}
#: The names of every plan option: `train`'s keyword arguments beside the fabric's.
PLAN_OPTIONS = tuple(BY_NAME)
#: The model's shape, as the options that override it name it.
SHAPE = _SHAPE


def values(given: dict[str, Any], options: Iterable[Option], function: str) -> dict[str, Any]:
    """Every option's value: those `given`, the defaults for the rest; an unknown or a missing
    required name is a TypeError, as Python raises for a function's own keywords."""
    options = list(options)
    names = {o.name for o in options}
    for name in given:
        if name not in names:
            raise TypeError(f"{function}() got an unexpected keyword argument '{name}'")
    missing = [o.name for o in options if o.required and o.name not in given]
    if missing:
        raise TypeError(f"{function}() missing required keyword-only argument: '{missing[0]}'")
    return {o.name: given.get(o.name, o.default) for o in options}


def signature(function: Callable[..., Any], parameters: Iterable[tuple[str, Any, str]]) -> inspect.Signature:
    """`function`'s signature with its **keywords replaced by keyword-only `parameters` (name,
    default or REQUIRED, annotation): what `help()`, IDEs and a sweep's spec see."""
    import inspect  # here: inspect costs every command ~10 ms of start-up, and the CLI reads this module

    own = inspect.signature(function)
    keywords = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if default is REQUIRED else default,
            annotation=annotation,
        )
        for name, default, annotation in parameters
    ]
    rest = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    # The plan's keywords first, before the function's own keyword-only ones.
    at = next((i for i, p in enumerate(rest) if p.kind is inspect.Parameter.KEYWORD_ONLY), len(rest))
    return own.replace(parameters=[*rest[:at], *keywords, *rest[at:]])
