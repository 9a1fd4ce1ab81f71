"""Plan options are defined once (clustersim.plan.OPTIONS): train's and search's parsers, the
API's keywords, a sweep's option names, search's axes and the engine's plan all come from it."""

from __future__ import annotations

import argparse
import inspect

import clustersim
import pytest
from clustersim.cli import build_parser
from clustersim.explore.search import AXES, OPTIMIZERS, RECOMPUTE
from clustersim.explore.spec import command_options
from clustersim.plan import OPTIONS, REQUIRED
from clustersim.training import resolve_plan


def subparser(*path: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions}


@pytest.mark.parametrize("path", [("train",), ("workload", "generate"), ("kernels", "measure")])
def test_every_option_is_a_flag_with_its_default_and_help(path):
    got = actions(subparser(*path))
    for o in OPTIONS:
        a = got[o.name]
        assert tuple(a.option_strings[: len(o.flags)]) == o.flags
        assert a.help == o.help and a.required == o.required
        assert a.default == (None if o.required else o.default)
        assert a.choices == (list(o.choices) if o.choices else None)


def test_search_takes_the_fixed_options_and_tries_the_axes():
    got = actions(subparser("search"))
    fixed = {o.name for o in OPTIONS if o.search == "fixed"}
    plan = {o.name for o in OPTIONS}
    assert {d for d in got if d in plan} == fixed
    axes = [o for o in OPTIONS if o.search == "axis"]
    assert AXES == tuple(o.name for o in axes if o.type is int) == ("tp", "pp", "vpp", "ep", "cp", "mbs")
    assert RECOMPUTE == ("none", "selective", "full")
    assert OPTIMIZERS == ("ddp", "distributed_optimizer", "zero1", "zero2", "zero3")
    assert set(inspect.signature(clustersim.search).parameters) >= {o.name for o in axes} | fixed - {"gbs"}


def test_the_api_and_a_sweep_take_every_option_with_its_default():
    params = inspect.signature(clustersim.train).parameters
    sweep = command_options("train")
    for o in OPTIONS:
        default = inspect.Parameter.empty if o.default is REQUIRED else o.default
        assert params[o.name].default == default, o.name
        assert sweep[o.name] == default, o.name


def test_unknown_and_missing_keywords_are_type_errors_as_for_any_function():
    with pytest.raises(TypeError, match=r"train\(\) got an unexpected keyword argument 'tpp'"):
        clustersim.train("llama3-8b", gpus=8, gbs=8, tpp=2)
    with pytest.raises(TypeError, match=r"train\(\) missing required keyword-only argument: 'gbs'"):
        clustersim.train("llama3-8b", gpus=8)


def test_engine_fields_reach_the_plan_as_given():
    options = {o.name: o.default for o in OPTIONS if o.name != "model"} | {"gpus": 16, "gbs": 32}
    options |= {"tp": 2, "vpp": 2, "overlap_grad_reduce": True, "ddp_bucket_size": 7, "nic_busbw": 40.0}
    options |= {"account_for_loss_in_pipeline_split": True, "zero": 2, "no_flash_attn": True}
    model, accelerator, plan, label = resolve_plan("llama3-8b", options)
    assert (plan["tp"], plan["vpp"], plan["gpus"], plan["gbs"], plan["nic_busbw"]) == (2, 2, 16, 32, 40.0)
    assert plan["overlap"] == {
        "grad_reduce": True,
        "param_gather": None,
        "tp_comm": None,
        "p2p": None,
        "bucket_size": 7,
    }
    assert plan["account_for"] == {"embedding": False, "loss": True}
    assert (plan["dp"], plan["flash_attention"], plan["accelerator"]) == ("zero2", False, accelerator)
    assert (model["name"], label) == ("llama3-8b", "h100")
