"""Model descriptions: a catalog name, a YAML/JSON file, or a Hugging Face `config.json`.

A model read from a file is checked where it is read: every field a run needs, counts as whole
numbers, then the engine's checks of their values; errors name the file, line and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clustersim import _engine
from clustersim.catalog import engine_check, fail, is_count, lookup, read_yaml
from clustersim.errors import InputError
from clustersim.files import read_text

# Hugging Face config.json keys → ours. Families whose configs describe LLaMA-style blocks.
HF_LLAMA_TYPES = {
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "deepseek_v2",
    "deepseek_v3",
    "gemma",
}
HF_KEYS = {
    "num_hidden_layers": "layers",
    "hidden_size": "hidden",
    "num_attention_heads": "heads",
    "num_key_value_heads": "kv_heads",
    "head_dim": "head_dim",
    "intermediate_size": "ffn",
    "vocab_size": "vocab",
}
# Architectures whose config class ties the output layer when config.json does not say
# (transformers' GPT2Config and GemmaConfig default tie_word_embeddings to true, the others to false).
HF_TIED_BY_DEFAULT = {"gpt2", "gemma"}
REQUIRED = ("family", "layers", "hidden", "heads", "ffn", "vocab", "seq_len")
COUNTS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "seq_len")
# A model given by command-line flags alone (no --model): the shape flags it needs.
FLAGS = {"layers": "--layers", "hidden": "--hidden", "heads": "--heads", "ffn": "--ffn", "vocab": "--vocab"}
MOE = {"experts": True, "topk": True, "expert_ffn": True, "shared_experts": False, "shared_ffn": False}
MOE_OPTIONAL = ("dense_layers",)
MLA = ("q_lora", "kv_lora", "qk_nope", "qk_rope", "v_head")


def from_hf_config(cfg: dict[str, Any], path: str, text: str = "") -> dict[str, Any]:
    kind = cfg.get("model_type")
    supported = HF_LLAMA_TYPES | {"gpt2", "gpt_neox"}
    if not isinstance(kind, str) or kind not in supported:
        what = "missing" if kind is None else f"{kind!r} is not a supported architecture"
        fail(path, text, "model_type", f"{what} (supported: {', '.join(sorted(supported))})")

    def count(key: str, default: Any = None) -> Any:
        v = cfg.get(key, default)
        if v is not None and not is_count(v):
            fail(path, text, key, f"must be a whole number, got {v!r}")
        return v

    m: dict[str, Any] = {ours: count(theirs) for theirs, ours in HF_KEYS.items() if theirs in cfg}
    if kind == "gpt2":
        m.update(layers=count("n_layer"), hidden=count("n_embd"), heads=count("n_head"))
        m["ffn"] = count("n_inner") or 4 * (m["hidden"] or 0)
    m["family"] = "llama" if kind in HF_LLAMA_TYPES else "gpt"
    tied = cfg.get("tie_word_embeddings", kind in HF_TIED_BY_DEFAULT)
    m["tie_embeddings"] = flag(tied, path, text, "tie_word_embeddings")
    positions = count("max_position_embeddings")
    m["seq_len"] = min(4096 if positions is None else positions, 8192)
    # Routed experts: Mixtral's num_local_experts, DeepSeek's n_routed_experts, Qwen-MoE's num_experts.
    experts = count("num_local_experts") or count("n_routed_experts") or count("num_experts")
    if experts:
        shared = count("n_shared_experts") or 0
        shared_ffn = count("moe_intermediate_size", 0) if shared else 0
        # Qwen-MoE: one shared expert of its own width (shared_expert_intermediate_size).
        if count("shared_expert_intermediate_size"):
            shared, shared_ffn = 1, cfg["shared_expert_intermediate_size"]
        m["moe"] = {
            "experts": experts,
            "topk": count("num_experts_per_tok", 2),
            "expert_ffn": count("moe_intermediate_size", m.get("ffn")),
            "shared_experts": shared,
            "shared_ffn": shared_ffn,
            "dense_layers": count("first_k_dense_replace", 0),
        }
        # Qwen-MoE's dense layers: every decoder_sparse_step-th layer is MoE, and mlp_only_layers
        # are dense; clustersim models the dense layers as the first ones only.
        if count("decoder_sparse_step", 1) != 1:
            fail(path, text, "decoder_sparse_step", "only 1 (every layer MoE) is supported")
        dense = cfg.get("mlp_only_layers") or []
        if dense != list(range(len(dense))):
            fail(path, text, "mlp_only_layers", f"only the first layers can be dense, got {dense!r}")
        m["moe"]["dense_layers"] = max(m["moe"]["dense_layers"], len(dense))
    if count("kv_lora_rank"):
        m["mla"] = {
            "q_lora": count("q_lora_rank") or 0,
            "kv_lora": cfg["kv_lora_rank"],
            "qk_nope": count("qk_nope_head_dim"),
            "qk_rope": count("qk_rope_head_dim"),
            "v_head": count("v_head_dim"),
        }
    return m


def flag(v: object, path: str, text: str, key: str) -> bool:
    """A yes/no field of a model file."""
    if not isinstance(v, bool):
        fail(path, text, key, f"must be true or false, got {v!r}")
    return v


def check_model(model: dict[str, Any], path: str, text: str) -> None:
    """A model from a file: the fields a run needs, counts whole, values as the engine wants them."""
    for key in REQUIRED:
        if model.get(key) is None:
            raise InputError(f"{path}: {key}: missing (a model needs {', '.join(REQUIRED)})")
    if model["family"] not in ("gpt", "llama"):
        fail(path, text, "family", f"must be gpt or llama, got {model['family']!r}")
    for key in COUNTS:
        if key in model and not is_count(model[key]):
            fail(path, text, key, f"must be a whole number, got {model[key]!r}")
    if "tie_embeddings" in model:
        flag(model["tie_embeddings"], path, text, "tie_embeddings")
    for block, keys in (("moe", (*MOE, *MOE_OPTIONAL)), ("mla", MLA)):
        if model.get(block) is None:
            continue
        if not isinstance(model[block], dict):
            fail(path, text, block, f"must be a mapping of {', '.join(keys)}, got {model[block]!r}")
        unknown = [str(k) for k in model[block] if k not in keys]
        if unknown:
            fail(path, text, block, f"unknown field {unknown[0]!r} (valid: {', '.join(keys)})")
        for key in keys:
            required = MOE.get(key, False) if block == "moe" else True
            if key not in model[block] and not required:
                continue
            v = model[block].get(key)
            if not is_count(v):
                fail(path, text, f"{block}.{key}", f"must be a whole number, got {v!r}")
    optional = ("kv_heads", "head_dim", "moe", "mla", "tie_embeddings")
    doc = {k: model[k] for k in (*REQUIRED, *optional) if model.get(k) is not None}
    engine_check({"name": str(model.get("name", "model")), "kv_heads": model["heads"]} | doc, path, text)


def from_flags(shape: dict[str, Any], family: str | None, seq: int | None) -> dict[str, Any]:
    """A model given by command-line flags alone (no --model), named "custom"."""
    missing = [flag for key, flag in FLAGS.items() if shape.get(key) is None]
    if seq is None:
        missing.append("--seq")
    if missing:
        raise InputError(
            f"command line: {missing[0]}: missing (a model without --model needs {', '.join(FLAGS.values())}"
            " and --seq; --kv-heads, --family, --experts and --topk are optional)"
        )
    model = {k: v for k, v in shape.items() if v is not None}
    model.update(name="custom", family=family or "llama", seq_len=seq)
    model.setdefault("kv_heads", model["heads"])
    problem = _engine.check_model(model)
    if problem is not None:
        field, message = problem
        flag = "--seq" if field == "seq_len" else "--" + field.removeprefix("moe.").replace("_", "-")
        raise InputError(f"command line: {flag}: {message}")
    return model


def resolve(spec: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """A model from a catalog name or a file, with `overrides` (None values ignored) applied."""
    path = Path(spec)
    text = None
    if path.suffix in (".json", ".yaml", ".yml") or path.is_file():
        if path.suffix == ".json":
            text = read_text(spec, "model")
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as e:
                raise InputError(f"{spec}:{e.lineno}: JSON: not valid JSON: {e.msg}") from None
            except RecursionError:
                raise InputError(f"{spec}:1: JSON: nested too deeply") from None
            if not isinstance(doc, dict):
                raise InputError(f"{spec}:1: (top level): expected an object of model fields")
        else:
            doc, text = read_yaml(path)
            if len(doc) == 1 and isinstance(next(iter(doc.values())), dict):
                doc = next(iter(doc.values()))
        model = from_hf_config(doc, spec, text) if "hidden_size" in doc else dict(doc)
        # A Hugging Face checkpoint's config.json is named by its folder (the model's name).
        hf_folder = path.name == "config.json" and path.resolve().parent.name
        model.setdefault("name", hf_folder or path.stem)
    else:
        model = lookup("models", spec)
    model.update({k: v for k, v in (overrides or {}).items() if v is not None})
    if text is not None:
        check_model(model, spec, text)
    missing = [k for k in REQUIRED if model.get(k) is None]
    if missing:
        raise InputError(f"{spec}: {missing[0]}: missing (a model needs {', '.join(REQUIRED)})")
    model.setdefault("kv_heads", model["heads"])
    return model
