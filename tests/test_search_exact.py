"""Branch and bound is exact: on five models, each with a space of over 2000 plans that fit, the
pruned search returns exhaustive simulation's top 10 in the same order (same plans, same numbers
bit for bit), and the lower bound of every plan is at or under its simulated iteration time.

The spaces are the models cut to a few layers and a short sequence, on 16 or 32 GPUs (two or four
servers, so every group kind spans NVLink and the NICs) with every axis open (CP at most 2 for
three of them), global batch 8, so that simulating all of them stays within CI's time.
benchmarks/bench_search_bound.py --check compares the two on Calculon's full-size study."""

from __future__ import annotations

import pytest
from clustersim.explore.search import PLAN_COLUMNS, search

# Dense GPT (tied embeddings, LayerNorm, GeLU) and Llama (GQA, SwiGLU, untied) on A100 and H100, a
# Llama on 32 GPUs, MoE (EP, the all-to-all dispatcher) and DeepSeek's MLA with dense and MoE layers.
SPACES = {
    "gpt-7b": dict(model="gpt-7b", layers=4, seq=1024, gpus=16, gpu="a100", cp=[1, 2]),
    "llama3-8b": dict(model="llama3-8b", layers=4, seq=1024, vocab=32000, gpus=16, gpu="h100", cp=[1, 2]),
    "llama-13b": dict(model="llama-13b", layers=4, seq=512, gpus=32, gpu="h100"),
    "mixtral-8x7b": dict(model="mixtral-8x7b", layers=2, seq=1024, gpus=16, gpu="h100"),
    "deepseek-v3": dict(model="deepseek-v3", layers=4, seq=512, gpus=16, gpu="h100", cp=[1, 2]),
}


def key(row: dict) -> tuple:
    return tuple(row[c] for c in PLAN_COLUMNS)


@pytest.mark.parametrize("name", list(SPACES))
def test_pruned_search_returns_exhaustive_top_10_and_the_bound_holds(name):
    options = SPACES[name] | dict(gbs=8, memory_gb=1e6)
    everything = search(**options, top=None)
    assert everything.candidates >= 2000 and everything.feasible == everything.candidates
    assert everything.simulated == everything.feasible and everything.pruned == 0
    # The bound never exceeds the simulated time, on any plan of the space.
    over = [r for r in everything.plans.rows() if not r["bound_s"] <= r["iteration_s"]]
    assert not over, over[:3]
    pruned = search(**options, top=10)
    assert pruned.complete and pruned.candidates == everything.candidates
    assert pruned.checked + pruned.pruned == pruned.candidates and pruned.simulated == pruned.checked
    assert pruned.simulated < everything.simulated / 10, "the bound prunes most plans"
    want = [(key(r), r["iteration_s"], r["tokens_per_s"]) for r in everything.top(10).rows()]
    got = [(key(r), r["iteration_s"], r["tokens_per_s"]) for r in pruned.top(10).rows()]
    assert got == want
