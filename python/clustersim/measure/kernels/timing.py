"""Time kernels of a kernel table on a device: PyTorch on a CUDA GPU, or a NumPy stand-in on
the CPU. The stand-in runs the same shapes in float32 with NumPy's operations (matmul, exp,
sums): it exercises the plumbing end to end and says nothing about any GPU.

Each kernel is run once to warm up, then `repeats` times; the median is its time. On CUDA the
time is between CUDA events around the kernel; backward kernels time the autograd backward of
the op alone (its forward done before the timer starts)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from clustersim.errors import InputError

STAND_IN = "cpu (NumPy stand-in: plumbing only, not a GPU measurement)"
# The stand-in's largest kernel, in float32 elements of its operands (2 GiB): larger ones keep
# only the model's time (a real model's Adam or logits would not fit a laptop's memory).
STAND_IN_ELEMENTS = 1 << 29


def dims(shape: str) -> list[int]:
    return [int(d) for d in shape.split("x")]


def device_name(device: str) -> str:
    """What the table's `device` column says."""
    if device == "cpu":
        return "cpu-numpy"
    import torch

    return str(torch.cuda.get_device_name())


def check_device(device: str) -> None:
    if device == "cuda":
        try:
            import torch
        except ImportError:
            raise InputError("--device cuda: PyTorch is not installed (use --device cpu)") from None
        if not torch.cuda.is_available():
            raise InputError("--device cuda: no CUDA device visible to PyTorch (use --device cpu)")
    elif device != "cpu":
        raise InputError(f"--device: expected cpu or cuda, got {device!r}")


def default_device() -> str:
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def time_kernel(kernel: str, shape: str, device: str, repeats: int) -> float:
    """Seconds one run of `kernel` of `shape` takes on `device` (median of `repeats`)."""
    run = (torch_kernel if device == "cuda" else numpy_kernel)(kernel, dims(shape))
    run()
    if device == "cuda":
        import torch

        times = []
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return statistics.median(times)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def stand_in_elements(kernel: str, shape: str) -> int:
    """Float32 elements the NumPy stand-in holds for `kernel` of `shape`."""
    d = dims(shape)
    if kernel == "gemm":
        b, m, n, k = d if len(d) == 4 else [1, *d]
        return b * (m * k + k * n + m * n)
    if kernel.startswith("flash_attention"):
        bh, sq, sk, dqk, dv = d
        return bh * (sq * dqk + sk * dqk + sk * dv + 2 * sq * sk)
    if kernel == "adam":
        return 4 * d[0]
    return 3 * d[0] * d[1]


def numpy_kernel(kernel: str, d: list[int]) -> Callable[[], Any]:
    """A NumPy stand-in for `kernel` on shape `d`, float32."""
    import numpy as np

    rng = np.random.default_rng(0)
    base = kernel.removesuffix("_bwd")
    passes = 2 if kernel.endswith("_bwd") else 1

    def rand(*shape: int) -> Any:
        return rng.standard_normal(shape, dtype=np.float32)

    if kernel == "gemm":
        b, m, n, k = d if len(d) == 4 else [1, *d]
        a, w = rand(b, m, k), rand(b, k, n)
        return lambda: np.matmul(a, w)
    if base == "flash_attention":
        bh, sq, sk, dqk, dv = d
        q, k_, v = rand(bh, sq, dqk), rand(bh, sk, dqk), rand(bh, sk, dv)

        def attention() -> Any:
            for _ in range(passes):
                s = np.matmul(q, k_.transpose(0, 2, 1))
                p = np.exp(s - s.max(axis=-1, keepdims=True))
                out = np.matmul(p / p.sum(axis=-1, keepdims=True), v)
            return out

        return attention
    if kernel == "adam":
        (n,) = d
        p, g, m1, m2 = rand(n), rand(n), np.zeros(n, np.float32), np.zeros(n, np.float32)

        def adam() -> None:
            m1[:] = 0.9 * m1 + 0.1 * g
            m2[:] = 0.999 * m2 + 0.001 * g * g
            p[:] -= 1e-4 * m1 / (np.sqrt(m2) + 1e-8)

        return adam
    rows, cols = d
    x, y = rand(rows, cols), rand(rows, cols)
    ops: dict[str, Callable[[], Any]] = {
        "norm": lambda: (x - x.mean(axis=-1, keepdims=True)) / (x.std(axis=-1, keepdims=True) + 1e-5),
        "dropout_add": lambda: x * (y > 0) + y,
        "gelu": lambda: 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3))),
        "swiglu": lambda: x / (1 + np.exp(-x)) * y,
        "softmax": lambda: np.exp(x - x.max(axis=-1, keepdims=True)) * (y > 0),
        "cross_entropy": lambda: np.log(np.exp(x - x.max(axis=-1, keepdims=True)).sum(axis=-1)),
        "embedding": lambda: x[rng.integers(0, rows, rows)],
        "moe_permute": lambda: x[np.argsort(y[:, 0])],
    }
    op = ops[base]

    def elementwise() -> Any:
        for _ in range(passes):
            out = op()
        return out

    return elementwise


def torch_kernel(kernel: str, d: list[int]) -> Callable[[], Any]:
    """`kernel` on shape `d` with PyTorch on the current CUDA device (bf16; fp32 where the table
    says so)."""
    import torch
    import torch.nn.functional as F

    dev, bf16 = "cuda", torch.bfloat16
    base = kernel.removesuffix("_bwd")
    backward = kernel.endswith("_bwd")

    def rand(*shape: int, dtype: Any = bf16, grad: bool = False) -> Any:
        return torch.randn(shape, device=dev, dtype=dtype, requires_grad=grad)

    if kernel == "gemm":
        b, m, n, k = d if len(d) == 4 else [1, *d]
        a, w = rand(b, m, k), rand(b, k, n)
        return lambda: torch.bmm(a, w)
    if kernel == "adam":
        (n,) = d
        p = torch.nn.Parameter(rand(n, dtype=torch.float32))
        p.grad = rand(n, dtype=torch.float32)
        opt = torch.optim.Adam([p], lr=1e-4, fused=True)
        return opt.step
    if base == "flash_attention":
        bh, sq, sk, dqk, dv = d
        q, k_, v = (
            rand(1, bh, sq, dqk, grad=backward),
            rand(1, bh, sk, dqk, grad=backward),
            rand(1, bh, sk, dv),
        )

        def fwd() -> Any:
            return F.scaled_dot_product_attention(q, k_, v, is_causal=True)

        return grad_of(fwd, [q, k_]) if backward else fwd
    rows, cols = d
    x = rand(rows, cols, grad=backward, dtype=torch.float32 if base == "cross_entropy" else bf16)
    y = rand(rows, cols)
    w = torch.ones(cols, device=dev, dtype=bf16)
    target = torch.randint(0, cols, (rows,), device=dev)
    index = torch.randperm(rows, device=dev)
    ops: dict[str, Callable[[], Any]] = {
        "norm": lambda: F.layer_norm(x, (cols,), w),
        "dropout_add": lambda: F.dropout(x, 0.1) + y,
        "gelu": lambda: F.gelu(x),
        "swiglu": lambda: F.silu(x) * y,
        "softmax": lambda: F.dropout(torch.softmax(x, dim=-1), 0.1),
        "cross_entropy": lambda: F.cross_entropy(x, target),
        "embedding": lambda: F.embedding(index, x) if not backward else x[index],
        "moe_permute": lambda: x.index_select(0, index),
    }
    op = ops[base]
    return grad_of(op, [x]) if backward else op


def grad_of(fwd: Callable[[], Any], inputs: list[Any]) -> Callable[[], Any]:
    """The backward of `fwd` alone: its forward is run once here, each call runs the backward."""
    import torch

    out = fwd()
    dout = torch.ones_like(out)
    return lambda: torch.autograd.grad(out, inputs, dout, retain_graph=True)
