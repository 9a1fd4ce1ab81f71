"""Fuzzing of the Python readers: structure-aware mutations of valid files, and what each reader
must do with them (shared by tests/test_fuzz.py, a short hypothesis run, and
benchmarks/fuzz_campaign.py, the full campaign).

A mutation works on lines and tokens (runs of text between whitespace, `,` and `:`): a token is
replaced by an interesting value (integer-width limits, ±0, NaN, ±inf, huge floats, Unicode digits
and line breaks, YAML/JSON specials, the format's own words), deleted, duplicated or spliced from
elsewhere; a line dropped, duplicated or cut; the file truncated or emptied. A reader must accept
an input consistently or raise `InputError` with one line naming the file, the line and the field;
any other exception (a traceback for the user) or an engine panic is a failure.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import random
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from clustersim.errors import EnginePanic, InputError, InternalError

INTERESTING = [
    "0", "1", "-1", "2", "8", "-0", "+1", "007", "0x10", "1_000", "255", "65536", "2147483648",
    "4294967295", "4294967296", "18446744073709551616", "99999999999999999999999999999999999999",
    "1e308", "1e309", "-1e309", "1e400", "5e-324", "NaN", "nan", ".nan", ".inf", "-.inf", "inf", "-inf",
    "Infinity", "1.5", "-0.5", "0.0", "1e3", ".5", "5.", "null", "~", "true", "false", "yes", "x", "",
    "é", "٣", "²", "①", "１", "\u2028", "\u0085", "\x0b", "\x0c", "\x00", "\ufeff", '"', "'", "\\",
    "#", "{}", "[]", "[", "{", "&a", "*a", "!!python/object:os.system", "- 1", ": x",
]  # fmt: skip
CHARS = " \t\n\r,:.-+eE#09\"'\\{}[]é٣²\x00\x85\xa0\u2028\ufeff\U0001f600"


def _tokens(text: str) -> list[tuple[int, int]]:
    """Spans of the runs of text between whitespace, `,` and `:`."""
    return [m.span() for m in re.finditer(r"[^\s,:]+", text)]


# The regex scan is most of a mutation's time on a 10 kB GraphML file, so the seeds' tokens are
# kept and a splice's tokens are found from those of the text it changed (same lists as a scan).
_seed_tokens = functools.lru_cache(maxsize=64)(_tokens)


def _respliced(toks: list[tuple[int, int]], span: tuple[int, int], new: str) -> list[tuple[int, int]]:
    """Tokens after token `span` is replaced by `new`: the separators around it keep the tokens
    before it, `new`'s own and the ones after it (shifted) apart."""
    i = bisect.bisect_left(toks, span)
    a, shift = span[0], len(new) - (span[1] - span[0])
    return [
        *toks[:i],
        *((a + s, a + e) for s, e in _tokens(new)),
        *((s + shift, e + shift) for s, e in toks[i + 1 :]),
    ]


def _nudge(rnd: random.Random, tok: str) -> str:
    try:
        v = int(tok)
        return str(rnd.choice([v + 1, v - 1, v * 2, v * 1000, -v, v // 2]))
    except ValueError:
        pass
    try:
        f = float(tok)
        return repr(rnd.choice([f * 1e6, -f, f / 3, f + 0.5, f * 1e300]))
    except (ValueError, OverflowError):
        return rnd.choice([f"{tok}.0", f"{tok}e5", f"-{tok}"])


def mutate_once(
    rnd: random.Random, text: str, words: Sequence[str], known: dict[str, list[tuple[int, int]]] | None = None
) -> str:
    """One mutation of `text`; `words` adds the format's own words; `known` holds texts' tokens
    (the result's are added when it is a splice)."""
    op = rnd.randrange(20)
    # Tokens and lines are found only for the operations that use them (the draws are the same).
    toks = ((known or {}).get(text) or _tokens(text)) if op <= 10 else []
    lines = text.splitlines(keepends=True) if 11 <= op <= 14 else []

    def word() -> str:
        return rnd.choice(words) if words and rnd.random() < 0.5 else rnd.choice(INTERESTING)

    def splice(span: tuple[int, int], new: str) -> str:
        out = text[: span[0]] + new + text[span[1] :]
        if known is not None:
            known[out] = _respliced(toks, span, new)
        return out

    if op <= 4 and toks:
        return splice(rnd.choice(toks), word())
    if op == 5 and toks:
        return splice(rnd.choice(toks), "")
    if op == 6 and toks:
        a, b = rnd.choice(toks)
        return splice((a, b), f"{text[a:b]} {text[a:b]}")
    if op in (7, 8) and toks:
        src = rnd.choice(toks)
        return splice(rnd.choice(toks), text[src[0] : src[1]])
    if op in (9, 10) and toks:
        a, b = rnd.choice(toks)
        return splice((a, b), _nudge(rnd, text[a:b]))
    if op == 11 and lines:
        del lines[rnd.randrange(len(lines))]
        return "".join(lines)
    if op == 12 and lines:
        i = rnd.randrange(len(lines))
        lines.insert(i, lines[i] if lines[i].endswith("\n") else lines[i] + "\n")
        return "".join(lines)
    if op == 13 and len(lines) >= 2:
        i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if op == 14 and lines:
        i = rnd.randrange(len(lines))
        lines[i] = lines[i][: rnd.randrange(len(lines[i]) + 1)]
        return "".join(lines)
    if op == 15:
        at = rnd.randrange(len(text) + 1)
        return text[:at] + rnd.choice(["\n", " \t \n", word() + "\n", "# " + word() + "\n"]) + text[at:]
    if op == 16:
        return text[: rnd.randrange(len(text) + 1)]
    if op == 17 and text:
        at = rnd.randrange(len(text))
        return text[:at] + rnd.choice(CHARS) + text[at + rnd.randrange(2) :]
    if op == 18:
        return rnd.choice([text.replace("\n", "\r\n"), text.replace("\n", "\r"), "\ufeff" + text])
    return rnd.choice(["", "\n\n", word(), text * 2, text, text, text, text])


def mutate(rnd: random.Random, seeds: Sequence[str], words: Sequence[str] = ()) -> str:
    """A seed with zero to four mutations."""
    text = rnd.choice(seeds)
    known = {text: _seed_tokens(text)}
    for _ in range(rnd.randrange(5)):
        text = mutate_once(rnd, text, words, known)
    return text


class Failure(Exception):
    """A reader broke a property on an input."""


def refused(e: InputError, file: str, *, whole_file: Callable[[str], bool] = lambda m: False) -> None:
    """Check that `e` is one line naming `file`, a line and a field (`file:line: field: problem`),
    or, for an error about the whole file (`whole_file`), `file: field: problem`."""
    msg = str(e)
    if len(msg.splitlines()) != 1 or "\x0b" in msg or "\x0c" in msg:
        raise Failure(f"message not on one line: {msg!r}")
    if not msg.startswith(file + ":"):
        raise Failure(f"message does not name {file}: {msg!r}")
    rest = msg[len(file) + 1 :]
    if re.match(r"\d+: [^:]+: \S", rest):
        return
    if whole_file(msg) and re.match(r" [^:]+: \S", rest):
        return
    raise Failure(f"message names no line and field: {msg!r}")


def run_reader(read: Callable[[str], object], text: str) -> str:
    """'accepted' or 'refused'; Failure for anything else (a traceback, an engine fault)."""
    try:
        read(text)
    except InputError:
        return "refused"
    except Failure:
        raise
    except (InternalError, EnginePanic) as e:
        raise Failure(f"engine fault: {e}") from None
    except Exception as e:  # noqa: BLE001 - a traceback is exactly what fuzzing looks for
        raise Failure(f"{type(e).__name__}: {e}") from None
    return "accepted"


# --- SimAI topology files (read and written by the engine, through clustersim.topology) ---------

TOPOLOGIES = [
    "7 2 2 1 8 H100\n4 5 6 \n0 4 2880Gbps 0.000025ms 0\n0 6 400Gbps 0.0005ms 0\n"
    "1 4 2880Gbps 0.000025ms 0\n1 6 400Gbps 0.0005ms 0\n2 5 2880Gbps 0.000025ms 0\n"
    "2 6 400Gbps 0.0005ms 0\n3 5 2880Gbps 0.000025ms 0\n3 6 400Gbps 0.0005ms 0\n",
    "5 1 0 3 4 A100\n2\n3 4\n0 2 100Gbps 0.001ms 0\n1 3 200Gbps 0.001ms 0.001\n"
    "2 4 400Gbps 0.0005ms 0\n3 4 400Gbps 0.0005ms 0\n",
    "2 2 0 0 1 A100\n\n0 1 2400Gbps 0.000025ms 0\n",
]
TOPOLOGY_WORDS = ["400Gbps", "2880Gbps", "1Gbps", "0.0005ms", "0.000025ms", "1ms", "H100", "1e-9ms"]


def read_topology(text: str, file: str = "in.txt") -> None:
    from clustersim.topology import parse_simai

    try:
        topo = parse_simai(text, file)
    except InputError as e:
        refused(e, file, whole_file=lambda m: "disconnected" in m or "has no GPU" in m)
        raise
    written = topo.to_simai()
    again = parse_simai(written, file)
    if (
        again.kinds != topo.kinds
        or again.platform.links != topo.platform.links
        or again.platform.error_rates != topo.platform.error_rates
        or again.gpus_per_server != topo.gpus_per_server
    ):
        raise Failure(f"written back as {written!r}, read as another topology")


# --- model and accelerator files, Hugging Face configs -------------------------------------------

MODEL_YAML = [
    "family: llama\nlayers: 2\nhidden: 256\nheads: 4\nkv_heads: 2\nffn: 512\nvocab: 1000\nseq_len: 256\n",
    "tiny-moe:\n  {family: llama, layers: 2, hidden: 256, heads: 4, ffn: 512, vocab: 1000, seq_len: 256,\n"
    "   moe: {experts: 4, topk: 2, expert_ffn: 256, shared_experts: 1, shared_ffn: 256, dense_layers: 1}}\n",
    "family: gpt\nlayers: 4\nhidden: 256\nheads: 4\nffn: 1024\nvocab: 1000\nseq_len: 128\n"
    "mla: {q_lora: 64, kv_lora: 32, qk_nope: 32, qk_rope: 16, v_head: 32}\n",
]
MODEL_JSON = [
    '{"family": "llama", "layers": 2, "hidden": 256, "heads": 4, "kv_heads": 4, "ffn": 512,\n'
    ' "vocab": 1000, "seq_len": 256}\n',
    # Hugging Face config.json files (LLaMA, Mixtral, DeepSeek, GPT-2).
    '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,\n'
    ' "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,\n'
    ' "max_position_embeddings": 256}\n',
    '{"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,\n'
    ' "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,\n'
    ' "max_position_embeddings": 256, "num_local_experts": 4, "num_experts_per_tok": 2}\n',
    '{"model_type": "deepseek_v3", "num_hidden_layers": 3, "hidden_size": 256, "num_attention_heads": 4,\n'
    ' "num_key_value_heads": 4, "intermediate_size": 512, "vocab_size": 1000,\n'
    ' "max_position_embeddings": 256,\n'
    ' "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128, "n_shared_experts": 1,\n'
    ' "first_k_dense_replace": 1, "q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 32,\n'
    ' "qk_rope_head_dim": 16, "v_head_dim": 32}\n',
    '{"model_type": "gpt2", "n_layer": 2, "n_embd": 256, "n_head": 4, "vocab_size": 1000,\n'
    ' "hidden_size": 256,'
    ' "n_positions": 256}\n',
]
MODEL_WORDS = ["llama", "gpt", "moe", "mla", "experts", "topk", "hidden", "heads", "model_type", "gpt2"]
ACCELERATORS = [
    "my-gpu:\n  matmul_tflops: 100\n  vector_tflops: 10\n  hbm_gb: 40\n  hbm_tbps: 1.5\n"
    "  nvlink_busbw: 100\n  nic_busbw: 20\n"
    "  sms: 100\n  gemm_efficiency: 0.7\n  hbm_efficiency: 0.8\n  attention_efficiency: 0.5\n"
    "  kernel_overhead_ns: 3000\n",
    "_d: &d\n  sms: 100\n  gemm_tile: [128, 64]\n  gemm_efficiency: 0.7\n  hbm_efficiency: 0.5\n"
    "  attention_efficiency: 0.5\n"
    "my-gpu:\n  <<: *d\n  matmul_tflops: 100\n  vector_tflops: 10\n  hbm_gb: 40\n  hbm_tbps: 1.5\n"
    "  nvlink_busbw: 100\n  nvls_busbw: 150\n  nic_busbw: 20\n",
]
ACCELERATOR_WORDS = ["my-gpu", "matmul_tflops", "hbm_gb", "nvlink_busbw", "nic_busbw", "<<", "*d", "&d"]

# A plan every seed model runs under (2 layers, 4 heads, TP 2, PP 2).
PLAN = {"gpus": 4, "tp": 2, "pp": 2, "gbs": 4, "gpus_per_server": 2, "seq": 128, "sp": True}


class Scratch:
    """A temporary folder to write inputs to (readers of these formats take paths)."""

    def __init__(self) -> None:
        # Memory-backed where there is such a folder: a million small writes.
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self.dir = tempfile.TemporaryDirectory(prefix="clustersim-fuzz-", dir=shm)

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir.name, name)
        Path(path).write_text(text, encoding="utf-8", errors="surrogatepass")
        return path


def read_model(scratch: Scratch, text: str, suffix: str, *, run: bool = True) -> None:
    """A model file through the front end and the engine's checks; with `run`, one layer's times."""
    from clustersim.models import resolve
    from clustersim.training import layer_times

    path = scratch.write("model" + suffix, text)
    try:
        model = resolve(path)
        if run:
            layer_times(model, **PLAN)
    except InputError as e:
        refused(e, path, whole_file=lambda m: "missing" in m)
        raise


def read_accelerator(scratch: Scratch, text: str, *, run: bool = True) -> None:
    """An accelerator file (`--accelerators`) through the front end and the engine's checks; with
    `run`, one layer's times on it."""
    from clustersim.catalog import lookup
    from clustersim.training import layer_times

    path = scratch.write("acc.yaml", text)
    try:
        acc = lookup("accelerators", "my-gpu", extra=path)
        if run:
            layer_times(json.loads(MODEL_JSON[0]) | {"name": "m"}, accelerator=acc, **PLAN)
    except InputError as e:
        refused(e, path, whole_file=lambda m: "unknown name" in m or "missing" in m)
        raise


# --- measurements: nccl-tests logs and bwtest JSON (python/clustersim/measure/calibrate/) -----------------

NCCL_LOGS = [
    (Path(__file__).parent / "data" / "nccl-tests" / name).read_text(encoding="utf-8")
    for name in ("all_reduce_16x_a100_sharp.txt", "all_gather_2x1_b200.txt")
]
NCCL_WORDS = ["#", "Rank", "on", "size", "count", "time", "algbw", "busbw", "#wrong", "N/A", "-1", "float",
              "# Collective test starting: alltoall_perf", "sum", "none", "error", "in-place"]  # fmt: skip
BWTEST_JSON = [
    json.dumps(
        {"format": "clustersim-bwtest/1", "mode": m, "buffers": "host", "ranks": 4, "group_size": 2,
         "groups": 2, "count": c, "word_bytes": 32, "message_bytes": 32 * c, "iterations": 10, "hosts": h,
         "per_group": [], "aggregate": {"time_s": 1e-6 + 32 * c / 1e9, "latency_us": 1.0}},
        indent=1,
    )
    for m, c, h in (("mpi", 1, ["a", "a", "b", "b"]), ("simulate", 1024, None))
]  # fmt: skip
BWTEST_WORDS = ["format", "mode", "ranks", "group_size", "groups", "message_bytes", "aggregate", "time_s",
                "hosts", "mpi", "simulate", "clustersim-bwtest/1", "1e-300"]  # fmt: skip


_EMULATED = Path(__file__).parent / "data" / "emulated"
REPLAY_JSON = [(_EMULATED / "cal-replay.json").read_text(encoding="utf-8")]
REPLAY_WORDS = ["format", "ranks", "hosts", "ops", "collective", "bytes", "time_s", "allreduce", "alltoall",
                "broadcast", "compute_ns", "clustersim-replay/1", "1e-300", "cs-emu-h1"]  # fmt: skip
CALIBRATIONS = [
    (_EMULATED / "calibration.json").read_text(encoding="utf-8"),
    json.dumps(
        {"format": "clustersim-calibration/1",
         "classes": {"scale-up": {"bandwidth_efficiency": 0.9, "latency_factor": 1.0},
                     "scale-out": {"bandwidth_efficiency": 0.5, "latency_factor": 3}},
         "collectives": {"reducescatter": {"bandwidth_efficiency": 1, "call_latency_us": 0},
                         "broadcast": {"bandwidth_efficiency": 0.25, "call_latency_us": 12.5}}},
        indent=1,
    ),
]  # fmt: skip
CALIBRATION_WORDS = ["format", "classes", "collectives", "scale-up", "scale-out", "bandwidth_efficiency",
                     "latency_factor", "call_latency_us", "allgather", "clustersim-calibration/1", "1e-7",
                     "1000001"]  # fmt: skip


def read_nccl(text: str, file: str = "all_reduce_perf.txt") -> None:
    """A log parsed, turned into series and fitted: every row a positive time, every fit finite."""
    from clustersim.measure.calibrate.fit import fit
    from clustersim.measure.calibrate.nccl_log import parse_nccl_log
    from clustersim.measure.calibrate.series import nccl_series

    try:
        for s in nccl_series(parse_nccl_log(text, file)):
            ab = fit(s.x, s.times_s, s.source)
            if not (0 <= ab.alpha_s < float("inf") and 0 < ab.beta_s_per_byte < float("inf")):
                raise Failure(f"fit out of range: {ab}")
    except InputError as e:
        refused(e, file)
        raise


def read_bwtest(text: str, file: str = "bw.json") -> None:
    """A bwtest document read (field errors name the file and the field: JSON has no lines)."""
    from clustersim.measure.calibrate.series import parse_bwtest_json

    try:
        parse_bwtest_json(text, file)
    except InputError as e:
        refused(e, file, whole_file=lambda m: True)
        raise


def read_replay(text: str, file: str = "replay.json") -> None:
    """A replay document read, turned into series and fitted (errors name the file and the field)."""
    from clustersim.measure.calibrate.fit import fit
    from clustersim.measure.calibrate.series import parse_replay_json, replay_series

    try:
        for s in replay_series([(file, parse_replay_json(text, file))]):
            ab = fit(s.x, s.times_s, s.source)
            if not (0 <= ab.alpha_s < float("inf") and 0 < ab.beta_s_per_byte < float("inf")):
                raise Failure(f"fit out of range: {ab}")
    except InputError as e:
        refused(e, file, whole_file=lambda m: True)
        raise


def read_calibration(text: str, file: str = "calibration.json") -> None:
    """A calibration file read and applied to a collective's time (every error at file:line: field)."""
    from clustersim.calibration import collective_time, parse_calibration

    try:
        cal = parse_calibration(text, file)
        for op in cal.collectives:
            t = collective_time(cal, op, 1e-3)
            if not 0 <= t < float("inf"):
                raise Failure(f"{op}: calibrated time out of range: {t}")
    except InputError as e:
        refused(e, file)
        raise


# --- platform graph documents: YAML and GraphML (python/clustersim/platform.py; the engine reads
# the JSON form they become, and has its own campaign of it) -------------------------------------

PLATFORM_YAML = [
    """\
graph: {name: two servers}
nodes:
  - {id: x0, kind: xpu, type: h100}
  - {id: x1, kind: xpu, type: my-asic, fp16_flops: 4.0e+14, fp32_flops: 1e14, memory: 64GB}
  - {id: 7, kind: xpu, type: v100, memory_bandwidth: 900GB/s}
  - {id: sw, kind: xpu_switch, reduction: true}
  - {id: cpu, kind: cpu, forward: yes}
  - {id: dram, kind: memory, memory_kind: dram, memory: 1TiB, bandwidth: 2.0e+11, latency: 100ns}
  - {id: cxl, kind: memory, memory_kind: cxl, memory: inf}
  - {id: csw, kind: cxl_switch}
  - {id: tor, kind: switch, tier: tor}
links:
  - {source: x0, target: sw, bandwidth: 900GB/s, latency: 100ns}
  - {source: x1, target: sw, bandwidth: 9.0e+11, latency: 1.0e-07}
  - {source: 7, target: tor, bandwidth: 12.5GB/s, latency: 5us}
  - {source: sw, target: tor, bandwidth: 100GB/s, latency: 1us}
  - {source: x0, target: tor, bandwidth: 12.5GB/s, latency: 5us}
  - {source: x0, target: csw, bandwidth: 128GB/s, latency: 200ns}
  - {source: cxl, target: csw, bandwidth: 128GB/s, latency: 200ns, directed: true}
  - {source: csw, target: cxl, bandwidth: 64GB/s, latency: 200ns, directed: true}
  - {source: cpu, target: dram, bandwidth: 400Gbps, latency: 0}
  - {source: cpu, target: tor, bandwidth: 1.0e+10, latency: 1.0e-06}
ranks: [x1, x0, 7]
""",
    """\
nodes:
- id: a
  kind: gpu
  type: A100
- id: b
  kind: accelerator
  bf16_flops: 1.0e+15
  memory: 80000000000
- id: s
  kind: switch
edges:
- source: a
  target: s
  bandwidth: 25000000000.0
  latency: 5.0e-07
- source: b
  target: s
  bandwidth: 25000000000.0
  latency: 5.0e-07
""",
]
PLATFORM_WORDS = [
    "xpu", "xpu_switch", "switch", "cpu", "nic", "memory", "pcie_switch", "cxl_switch", "kind", "type",
    "h100", "fp16_flops", "fp32_flops", "memory_kind", "tier", "reduction", "forward", "source", "target",
    "bandwidth", "latency", "directed", "ranks", "inf", "1e40", "128GB/s", "200ns", "-1", "0", ".nan",
    "null", "[]", "{}",
]  # fmt: skip
PLATFORM_GRAPHML_WORDS = ["node", "edge", "data", "key", "double", "string", "boolean", "true", "inf", "gpu"]


@functools.cache
def platform_graphml_seeds() -> tuple[str, ...]:
    """A one-server HCSim Fig. 6b system of 4 XPUs as `clustersim platform --graphml` writes it."""
    from clustersim.platform import graphml_text, hcsim

    return (graphml_text(hcsim("hcsim-cxl", [("h100", 4)], xpus_per_server=4, dram_bytes=1e12)),)


def _written_back(platform: object) -> None:
    """An accepted platform, written as a graph document and read again, is the same platform."""
    from clustersim.platform import parse_graph

    text = platform.to_graph_json("fuzz")  # type: ignore[attr-defined]
    if parse_graph("written", text).to_graph_json("fuzz") != text:
        raise Failure("written back as a graph document, read as another platform")


def read_platform_yaml(text: str, file: str = "platform.yaml") -> None:
    from clustersim.platform import parse_yaml

    try:
        platform = parse_yaml(file, text)
    except InputError as e:
        # Errors about a node or link name it (and its line where the YAML has one).
        refused(e, file, whole_file=lambda m: True)
        raise
    _written_back(platform)


def read_platform_graphml(scratch: Scratch, text: str) -> None:
    from clustersim.platform import read_graphml

    path = scratch.write("platform.graphml", text)
    try:
        platform = read_graphml(path)
    except InputError as e:
        refused(e, path, whole_file=lambda m: True)
        raise
    _written_back(platform)


# --- workload graphs: GraphML (python/clustersim/workload_graph.py: NetworkX reads the file, the
# graph becomes the engine's node-link document; the engine's JSON reader has its own campaign) ----

GRAPH_JSON = [
    # Every attribute form (one XPU, a list, all of them; each memory and data type; a collective,
    # a p2p transfer; a not_first edge closing the loop) and a two-layer data-parallel step: the
    # seeds of the engine's campaign (crates/engine/tests/fuzz/workload_graph.rs).
    '{"directed": true, "graph": {"name": "hand", "iterations": 2}, "nodes": ['
    '{"id": "a", "kind": "compute", "xpu": "s0.x0", "flops": 1e12, "dtype": "fp16", "bytes": 4e9,'
    '"memory": "hbm"},'
    '{"id": 1, "kind": "compute", "xpu": ["s0.x0", "s0.x1"], "flops": 5e11, "bytes": 9e10, "memory": "auto"},'
    '{"id": "c", "kind": "compute", "xpu": "s0.x0,s0.x1", "flops": 0, "bytes": 1e9, "memory": "s0.cxlmem1"},'
    '{"id": "d", "kind": "compute", "xpu": "s0.x1", "flops": 1e9, "bytes": 1e9, "memory": "s0.dram0"},'
    '{"id": "ar", "kind": "communication", "pattern": "allreduce", "participants": "*", "bytes": 1048576},'
    '{"id": "t", "kind": "comm", "pattern": "p2p", "src": "s0.x0", "dst": "s0.x1", "bytes": 4096}],'
    '"links": [{"source": "a", "target": 1}, {"source": 1, "target": "c"}, {"source": "c", "target": "d"},'
    '{"source": "c", "target": "ar"}, {"source": "ar", "target": "t"},'
    '{"source": "t", "target": "a", "not_first": true}]}',
    '{"directed": true, "graph": {"name": "two layers", "iterations": 3}, "nodes": ['
    '{"id": "fp1", "kind": "compute", "xpu": "*", "flops": 2e12, "bytes": 4e10},'
    '{"id": "fp2", "kind": "compute", "xpu": "*", "flops": 2e12, "bytes": 4e10},'
    '{"id": "bp2", "kind": "compute", "xpu": "*", "flops": 4e12, "bytes": 6e10},'
    '{"id": "ar2", "kind": "communication", "pattern": "allreduce", "participants": "*", "bytes": 1e9},'
    '{"id": "bp1", "kind": "compute", "xpu": "*", "flops": 4e12, "bytes": 6e10},'
    '{"id": "ar1", "kind": "communication", "pattern": "reducescatter", "participants": "*", "bytes": 1e9}],'
    '"links": [{"source": "fp1", "target": "fp2"}, {"source": "fp2", "target": "bp2"},'
    '{"source": "bp2", "target": "ar2"}, {"source": "bp2", "target": "bp1"},'
    '{"source": "bp1", "target": "ar1"}, {"source": "ar1", "target": "fp1", "not_first": true},'
    '{"source": "ar2", "target": "fp2", "not_first": true}]}',
]
GRAPH_GRAPHML_WORDS = [
    "node", "edge", "data", "key", "double", "long", "string", "boolean", "True", "False", "compute",
    "communication", "xpu", "flops", "bytes", "memory", "dtype", "pattern", "participants", "src", "dst",
    "not_first", "iterations", "allreduce", "p2p", "hbm", "auto", "fp8", "*", "s0.x0", "s0.x3", "s0.cxlmem2",
]  # fmt: skip


@functools.cache
def graph_graphml_seeds() -> tuple[str, ...]:
    """The seeds as `clustersim graph --graphml` writes them (NetworkX's writer: numbers as long),
    and the first with its numbers as doubles and a boolean `start`, as a NetworkX user may write."""
    import networkx as nx
    from clustersim.workload_graph import graphml_text, normalize, to_networkx

    texts = [normalize(t) for t in GRAPH_JSON]
    typed = to_networkx(texts[0])
    for _, data in typed.nodes(data=True):
        data.update({k: float(v) for k, v in data.items() if k in ("flops", "bytes")})
        if isinstance(data.get("xpu"), list):
            data["xpu"] = ",".join(data["xpu"])
    typed.nodes["d"]["start"] = False
    return (*(graphml_text(t) for t in texts), "\n".join(nx.generate_graphml(typed)) + "\n")


def read_graph_graphml(scratch: Scratch, text: str) -> None:
    """A workload graph from GraphML: refused naming the file, the vertex or edge and the field, or
    accepted, and then the same graph when written back as JSON or as GraphML and read again."""
    from clustersim.workload_graph import graphml_text, normalize, read_graphml

    path = scratch.write("graph.graphml", text)
    try:
        doc = read_graphml(path)
    except InputError as e:
        refused(e, path, whole_file=lambda m: True)
        raise
    if normalize(doc, "written.json") != doc:
        raise Failure("written back as JSON, read as another graph")
    again = scratch.write("written.graphml", graphml_text(doc))
    if read_graphml(again) != doc:
        raise Failure("written back as GraphML, read as another graph")
