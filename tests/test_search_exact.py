"""Branch and bound is exact: on five models, each with a space of over 2000 plans that fit, the
pruned search returns exhaustive simulation's top 10 in the same order (same plans, same numbers
bit for bit), and the lower bound of every plan is at or under its simulated iteration time.

The spaces are the models cut to a few layers and a short sequence, on 16 GPUs (two servers, so
every group kind spans NVLink and the NICs) with every axis open, so that simulating all of them
stays within CI's time; benchmarks/bench_search_bound.py runs the same check on full-size models
(`--check`)."""

from __future__ import annotations

import pytest
from clustersim.explore.search import PLAN_COLUMNS, search

# (model and its cut, cluster): dense GPT (tied embeddings, LayerNorm, GeLU) and Llama (GQA,
# SwiGLU, untied) on H100 and A100, a Llama on 32 GPUs with PP across servers, MoE (EP, the
# all-to-all dispatcher) and DeepSeek's MLA with MoE.
SPACES = {
    "gpt-7b": (dict(model="gpt-7b", layers=4, seq=1024), dict(gpus=16, gpu="a100", gbs=32)),
    "llama3-8b": (dict(model="llama3-8b", layers=4, seq=1024, vocab=32000), dict(gpus=16, gpu="h100", gbs=32)),
    "llama-13b": (dict(model="llama-13b", layers=8, seq=512), dict(gpus=32, gpu="h100", gbs=32)),
    "mixtral-8x7b": (dict(model="mixtral-8x7b", layers=4, seq=1024), dict(gpus=16, gpu="h100", gbs=32)),
    "deepseek-v3": (dict(model="deepseek-v3", layers=4, seq=512), dict(gpus=16, gpu="h100", gbs=16)),
}


def key(row: dict) -> tuple:
    return tuple(row[c] for c in PLAN_COLUMNS)


@pytest.mark.parametrize("name", list(SPACES))
def test_pruned_search_returns_exhaustive_top_10_and_the_bound_holds(name):
    model, cluster = SPACES[name]
    options = model | cluster | dict(memory_gb=1e6)
    everything = search(**options, top=None)
    assert everything.feasible >= 2000, everything.feasible
    assert everything.simulated == everything.feasible and everything.pruned == 0
    # The bound never exceeds the simulated time, on any plan of the space.
    over = [r for r in everything.plans.rows() if not r["bound_s"] <= r["iteration_s"]]
    assert not over, over[:3]
    pruned = search(**options, top=10)
    assert pruned.complete and pruned.feasible == everything.feasible
    assert pruned.simulated + pruned.pruned == pruned.feasible
    assert pruned.simulated < everything.simulated, "the bound prunes something"
    want = [(key(r), r["iteration_s"], r["tokens_per_s"]) for r in everything.top(10).rows()]
    got = [(key(r), r["iteration_s"], r["tokens_per_s"]) for r in pruned.top(10).rows()]
    assert got == want
