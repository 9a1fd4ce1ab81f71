"""A short fuzzing run of every Python reader (tests/fuzzing.py says what is generated and
checked): hypothesis drives the mutations, so a failure is shrunk to a small input.
`CLUSTERSIM_FUZZ_CASES_PY` sets the inputs per reader (default 150); the full campaign is
`benchmarks/fuzz_campaign.py`. Below, the inputs fuzzing found, kept as regression tests."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from clustersim.errors import InputError
from clustersim.models import REQUIRED
from fuzzing import (
    ACCELERATOR_WORDS,
    ACCELERATORS,
    GRAPH_GRAPHML_WORDS,
    MODEL_JSON,
    MODEL_WORDS,
    MODEL_YAML,
    PLATFORM_GRAPHML_WORDS,
    PLATFORM_WORDS,
    PLATFORM_YAML,
    TOPOLOGIES,
    TOPOLOGY_WORDS,
    Scratch,
    graph_graphml_seeds,
    mutate,
    platform_graphml_seeds,
    read_accelerator,
    read_graph_graphml,
    read_model,
    read_platform_graphml,
    read_platform_yaml,
    read_topology,
    run_reader,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CASES = int(os.environ.get("CLUSTERSIM_FUZZ_CASES_PY", "150"))
FUZZ = settings(
    max_examples=CASES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def scratch() -> Scratch:
    return Scratch()


@FUZZ
@given(st.randoms(use_true_random=False))
def test_topology_files(rnd: random.Random) -> None:
    run_reader(read_topology, mutate(rnd, TOPOLOGIES, TOPOLOGY_WORDS))


@FUZZ
@given(rnd=st.randoms(use_true_random=False))
def test_model_files(scratch: Scratch, rnd: random.Random) -> None:
    if rnd.random() < 0.5:
        run_reader(lambda t: read_model(scratch, t, ".yaml"), mutate(rnd, MODEL_YAML, MODEL_WORDS))
    else:
        run_reader(lambda t: read_model(scratch, t, ".json"), mutate(rnd, MODEL_JSON, MODEL_WORDS))


@FUZZ
@given(rnd=st.randoms(use_true_random=False))
def test_accelerator_files(scratch: Scratch, rnd: random.Random) -> None:
    run_reader(lambda t: read_accelerator(scratch, t), mutate(rnd, ACCELERATORS, ACCELERATOR_WORDS))


@FUZZ
@given(rnd=st.randoms(use_true_random=False))
def test_platform_yaml_files(rnd: random.Random) -> None:
    run_reader(read_platform_yaml, mutate(rnd, PLATFORM_YAML, PLATFORM_WORDS))


@FUZZ
@given(rnd=st.randoms(use_true_random=False))
def test_platform_graphml_files(scratch: Scratch, rnd: random.Random) -> None:
    seeds = platform_graphml_seeds()
    run_reader(lambda t: read_platform_graphml(scratch, t), mutate(rnd, seeds, PLATFORM_GRAPHML_WORDS))


@FUZZ
@given(rnd=st.randoms(use_true_random=False))
def test_workload_graph_graphml_files(scratch: Scratch, rnd: random.Random) -> None:
    seeds = graph_graphml_seeds()
    run_reader(lambda t: read_graph_graphml(scratch, t), mutate(rnd, seeds, GRAPH_GRAPHML_WORDS))


def test_platform_seeds_are_accepted(scratch: Scratch) -> None:
    for text in PLATFORM_YAML:
        assert run_reader(read_platform_yaml, text) == "accepted"
    for text in platform_graphml_seeds():
        assert run_reader(lambda t: read_platform_graphml(scratch, t), text) == "accepted"
    for text in graph_graphml_seeds():
        assert run_reader(lambda t: read_graph_graphml(scratch, t), text) == "accepted"


def test_the_campaign_runs_a_fixed_slice_and_resumes(tmp_path: Path) -> None:
    # The graph front ends' campaign as the full run does it (chunks, seed 0, a log to resume
    # from): 200 inputs each, then 100 more, of which only the new chunk runs.
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "fuzz_campaign.py"
    readers = ["--reader", "platform-yaml", "--reader", "platform-graphml", "--reader", "graph-graphml"]
    command = [sys.executable, str(script), *readers, "--chunk", "100", "--log", str(tmp_path)]
    first = subprocess.run([*command, "--cases", "200"], capture_output=True, text=True)
    assert first.returncode == 0, first.stdout + first.stderr
    again = subprocess.run([*command, "--cases", "300"], capture_output=True, text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count("inputs 200-300:") == 3 and "inputs 0-100:" not in again.stdout
    for name in ("platform-yaml", "platform-graphml", "graph-graphml"):
        assert f"fuzz {name} (seed 0): 300 inputs" in again.stdout
        assert len((tmp_path / f"{name}.jsonl").read_text().splitlines()) == 3


def test_seeds_are_accepted(scratch: Scratch) -> None:
    # A campaign whose seeds are refused tests only the first checks.
    for text in TOPOLOGIES:
        assert run_reader(read_topology, text) == "accepted"
    for text in MODEL_YAML:
        assert run_reader(lambda t: read_model(scratch, t, ".yaml"), text) == "accepted"
    for text in MODEL_JSON:
        assert run_reader(lambda t: read_model(scratch, t, ".json"), text) == "accepted"
    for text in ACCELERATORS:
        assert run_reader(lambda t: read_accelerator(scratch, t), text) == "accepted"


def refusal(read, text: str) -> str:
    with pytest.raises(InputError) as e:
        read(text)
    return str(e.value)


def test_found_topology_inputs() -> None:
    # A Unicode digit passed str.isdigit() and then int() raised ValueError (a traceback); the
    # engine parses SimAI files now.
    text = "5 ① 0 3 4 A100\n2\n3 4\n0 2 100Gbps 0.001ms 0\n"
    assert refusal(read_topology, text) == "in.txt:1: gpus_per_server: '①' is not a whole number"
    # A header of no GPUs was refused without a line or field.
    assert refusal(read_topology, "0 2 0 0 0 A100\n\n") == "in.txt:1: nodes: no GPU: all 0 nodes are switches"
    # 4294967296 nodes were allocated (MemoryError) before a link was read.
    text = "4294967296 1 0 3 4 A100\n2\n3 4\n0 2 100Gbps 0.001ms 0\n"
    assert refusal(read_topology, text) == "in.txt:1: nodes: '4294967296' is not a whole number"


def test_found_model_inputs() -> None:
    def error(text: str, suffix: str = ".yaml") -> str:
        with pytest.raises(InputError) as e:
            read_model(Scratch(), text, suffix)
        return "m" + suffix + str(e.value).split("model" + suffix, 1)[1]

    base = MODEL_YAML[0]
    # Each of these was a traceback (TypeError, KeyError) or a message of the engine's internal JSON.
    assert error("-0.5") == "m.yaml:1: (top level): expected a mapping of names to entries"
    assert error("-0.5", ".json") == "m.json:1: (top level): expected an object of model fields"
    assert (
        error(base.replace("family: llama", "family: mla"))
        == "m.yaml:1: family: must be gpt or llama, got 'mla'"
    )
    assert error(base.replace("heads: 4", "heads: 0")) == "m.yaml:4: heads: must be from 1 to 256, got 0"
    assert error(base.replace("ffn: 512", "ffn: x")) == "m.yaml:6: ffn: must be a whole number, got 'x'"
    assert error(base.replace("vocab: 1000", "vocab: \x0b")).startswith("m.yaml:7: YAML: not valid YAML: ")
    gpt2 = MODEL_JSON[4].replace('"n_embd": 256, ', "")
    assert error(gpt2, ".json") == "m.json: hidden: missing (a model needs " + ", ".join(REQUIRED) + ")"
    hf = MODEL_JSON[2].replace('"num_local_experts": 4', '"num_local_experts": "num_attention_heads"')
    assert (
        error(hf, ".json") == "m.json:3: num_local_experts: must be a whole number, got 'num_attention_heads'"
    )
    hf = MODEL_JSON[1].replace('"model_type": "llama"', '"model_type": 18446744073709551616')
    assert error(hf, ".json").startswith(
        "m.json:1: model_type: 18446744073709551616 is not a supported architecture (supported: deepseek_v2,"
    )
    # Found by the full campaign: a null max_position_embeddings (TypeError), and an unknown
    # field of .inf in moe (the engine's internal JSON in the message).
    hf = MODEL_JSON[2].replace('"max_position_embeddings": 256', '"max_position_embeddings": null')
    assert run_reader(lambda t: read_model(Scratch(), t, ".json"), hf) == "accepted"
    moe = MODEL_YAML[1].replace("shared_experts: 1", "shared_ex:perts: .inf")
    assert error(moe).startswith("m.yaml:3: moe: unknown field 'shared_ex:perts' (valid: experts, topk, ")
    moe = MODEL_YAML[1].replace("shared_experts: 1", "shared_experts: ")
    assert error(moe) == "m.yaml:3: moe.shared_experts: must be a whole number, got None"


def test_found_accelerator_inputs() -> None:
    def error(text: str) -> str:
        with pytest.raises(InputError) as e:
            read_accelerator(Scratch(), text)
        return str(e.value).split("acc.yaml", 1)[1]

    base = ACCELERATORS[0]
    # Tracebacks (KeyError, TypeError, ValueError) and messages of the engine's internal JSON.
    assert (
        error(base.replace("  nvlink_busbw: 100\n", ""))
        == ":1: nvlink_busbw: missing in accelerator 'my-gpu'"
    )
    assert (
        error(base.replace("hbm_tbps: 1.5", "hbm_tbps: "))
        == ":5: hbm_tbps: must be a finite number, got None"
    )
    assert (
        error(base.replace("hbm_tbps: 1.5", "hbm_tbps: 0")) == ":5: hbm_tbps: must be from 1e-6 to 1e9, got 0"
    )
    assert error("my-gpu:\n  matmul_tflop\n") == ":1: my-gpu: expected a mapping of fields"
    assert error(base.replace("my-gpu", "&a")).startswith(": my-gpu: unknown name (valid: ")
    efficiency = base.replace("gemm_efficiency: 0.7", "gemm_efficiency: 2")
    assert error(efficiency) == ":9: gemm_efficiency: must be from 1e-6 to 1, got 2"
    # Found by fuzzing once the engine read the entry: JSON has no NaN, and an anchor may hold itself.
    nan = base.replace("nvlink_busbw: 100", "nvlink_busbw: .nan")
    assert error(nan) == ":6: nvlink_busbw: must be a finite number, got 'nan'"
    selfish = "_d: &d\n  sms: 100\n  hbm_efficiency: *d\nmy-gpu:\n  <<: *d\n  matmul_tflops: 100\n"
    assert error(selfish) == ":4: my-gpu: fields must be numbers, strings, lists or mappings"


@FUZZ
@given(st.randoms(use_true_random=False))
def test_nccl_tests_logs(rnd: random.Random) -> None:
    from fuzzing import NCCL_LOGS, NCCL_WORDS, read_nccl

    run_reader(read_nccl, mutate(rnd, NCCL_LOGS, NCCL_WORDS))


@FUZZ
@given(st.randoms(use_true_random=False))
def test_bwtest_json(rnd: random.Random) -> None:
    from fuzzing import BWTEST_JSON, BWTEST_WORDS, read_bwtest

    run_reader(read_bwtest, mutate(rnd, BWTEST_JSON, BWTEST_WORDS))


@FUZZ
@given(st.randoms(use_true_random=False))
def test_replay_json(rnd: random.Random) -> None:
    from fuzzing import REPLAY_JSON, REPLAY_WORDS, read_replay

    run_reader(read_replay, mutate(rnd, REPLAY_JSON, REPLAY_WORDS))


@FUZZ
@given(st.randoms(use_true_random=False))
def test_calibration_files(rnd: random.Random) -> None:
    from fuzzing import CALIBRATION_WORDS, CALIBRATIONS, read_calibration

    run_reader(read_calibration, mutate(rnd, CALIBRATIONS, CALIBRATION_WORDS))


def test_found_workload_graph_graphml_inputs(scratch: Scratch) -> None:
    # A key named "\nnot_first" (XML reads the line break as a space) put " not_first" in the
    # field of the engine's message (`edge 5 (t -> a):  not_first: ...`): such names now go into
    # the message only, as the platform reader does.
    text = graph_graphml_seeds()[0].replace('attr.name="not_first"', 'attr.name="\nnot_first"')
    assert run_reader(lambda t: read_graph_graphml(scratch, t), text) == "refused"
    with pytest.raises(InputError) as e:
        read_graph_graphml(scratch, text)
    assert str(e.value).endswith(
        ': edge 5 (t -> a): unknown attribute " not_first" (valid: source, target, not_first)'
    )
