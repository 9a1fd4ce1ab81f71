"""Kernel tables (SimAI/AICB's AIOB job): the distinct kernels of one training iteration, timed on a
device (`clustersim kernels measure`), and read back by `train --kernels TABLE`, where measured
times replace the per-kernel compute model's (crates/engine/src/compute/kernel.rs).

The kernels come from the engine: the same op lists the simulator times (`iteration_kernels`)."""

from __future__ import annotations

from typing import Any, NamedTuple

from clustersim import _engine
from clustersim.api import TRAIN_OPTIONS
from clustersim.measure.kernels import timing
from clustersim.plan import values
from clustersim.training import engine_input, one_type, resolve_plan


class KernelRow(NamedTuple):
    """One distinct kernel of an iteration: class (gemm, flash_attention, norm_bwd, adam, …),
    shape (dimensions joined by x: gemm [B x]M x N x K, flash attention BH x Sq x Sk x Dqk x Dv,
    element-wise ROWS x COLS, adam PARAMS), dtype, the model's time (s) on the plan's accelerator,
    and how many of the iteration's op lists (layer blocks, embedding, head, optimizer) hold it."""

    kernel: str
    shape: str
    dtype: str
    model_s: float
    uses: int


def iteration_kernels(model: str | dict[str, Any], **plan: Any) -> list[KernelRow]:
    """The distinct kernels of one iteration of `model` with `plan` (`clustersim.training.train`'s
    keyword arguments)."""
    one_type(plan, "a kernel list")
    rows = _engine.iteration_kernels(engine_input(model, **plan))
    return [KernelRow(c, s, d, ns / 1e9, n) for c, s, d, ns, n in rows]


def plan_kernels(model: str | dict[str, Any] | None, **options: Any) -> list[KernelRow]:
    """The distinct kernels of one iteration of `model` under the plan `options` (those of
    `clustersim.plan`, as `clustersim.train` takes them; its defaults for those not given)."""
    resolved = resolve_plan(model, values(options, TRAIN_OPTIONS, "plan_kernels"))
    return iteration_kernels(resolved.model, **resolved.plan)


def measure(
    model: str | dict[str, Any] | None,
    *,
    device: str | None = None,
    repeats: int = 5,
    progress: Any = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """Every distinct kernel of one iteration of `model` under the plan `options`
    (`clustersim.api.train`'s keyword arguments), timed on `device` ("cuda": PyTorch on the GPU;
    "cpu": the NumPy stand-in; None: cuda when PyTorch sees one): rows of a kernel table with
    the measured and the model's time in µs (measured None for a kernel too large for the
    stand-in). `progress(done, total)` is called after each."""
    device = device or timing.default_device()
    timing.check_device(device)
    kernels = plan_kernels(model, **options)
    name = timing.device_name(device)
    rows = []
    for i, k in enumerate(kernels):
        too_big = device == "cpu" and timing.stand_in_elements(k.kernel, k.shape) > timing.STAND_IN_ELEMENTS
        seconds = None if too_big else timing.time_kernel(k.kernel, k.shape, device, repeats)
        rows.append(
            {
                "kernel": k.kernel,
                "shape": k.shape,
                "dtype": k.dtype,
                "device": name,
                "measured_us": None if seconds is None else seconds * 1e6,
                "model_us": k.model_s * 1e6,
            }
        )
        if progress is not None:
            progress(i + 1, len(kernels))
    return rows
