"""Model descriptions: a catalog name, a YAML/JSON file, or a Hugging Face `config.json`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clustersim.catalog import load_yaml, lookup
from clustersim.errors import InputError

# Hugging Face config.json keys → ours. Families whose configs describe LLaMA-style blocks.
HF_LLAMA_TYPES = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "deepseek_v2", "deepseek_v3", "gemma"}
HF_KEYS = {
    "num_hidden_layers": "layers",
    "hidden_size": "hidden",
    "num_attention_heads": "heads",
    "num_key_value_heads": "kv_heads",
    "intermediate_size": "ffn",
    "vocab_size": "vocab",
}
REQUIRED = ("family", "layers", "hidden", "heads", "ffn", "vocab", "seq_len")


def from_hf_config(cfg: dict[str, Any], path: str) -> dict[str, Any]:
    kind = cfg.get("model_type", "")
    if kind not in HF_LLAMA_TYPES and kind not in ("gpt2", "gpt_neox"):
        raise InputError(f"{path}: model_type: '{kind}' is not a supported architecture")
    m: dict[str, Any] = {ours: cfg[theirs] for theirs, ours in HF_KEYS.items() if theirs in cfg}
    if kind == "gpt2":
        m.update(layers=cfg.get("n_layer"), hidden=cfg.get("n_embd"), heads=cfg.get("n_head"))
        m["ffn"] = cfg.get("n_inner") or 4 * m["hidden"]
    m["family"] = "llama" if kind in HF_LLAMA_TYPES else "gpt"
    m["seq_len"] = min(cfg.get("max_position_embeddings", 4096), 8192)
    experts = cfg.get("num_local_experts") or cfg.get("n_routed_experts")
    if experts:
        m["moe"] = {
            "experts": experts,
            "topk": cfg.get("num_experts_per_tok", 2),
            "expert_ffn": cfg.get("moe_intermediate_size", m.get("ffn")),
            "shared_experts": cfg.get("n_shared_experts") or 0,
            "shared_ffn": cfg.get("moe_intermediate_size", 0) if cfg.get("n_shared_experts") else 0,
            "dense_layers": cfg.get("first_k_dense_replace", 0),
        }
    if cfg.get("kv_lora_rank"):
        m["mla"] = {
            "q_lora": cfg.get("q_lora_rank") or 0,
            "kv_lora": cfg["kv_lora_rank"],
            "qk_nope": cfg["qk_nope_head_dim"],
            "qk_rope": cfg["qk_rope_head_dim"],
            "v_head": cfg["v_head_dim"],
        }
    return m


def resolve(spec: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """A model from a catalog name or a file, with `overrides` (None values ignored) applied."""
    path = Path(spec)
    if path.suffix in (".json", ".yaml", ".yml") or path.is_file():
        if path.suffix == ".json":
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except OSError as e:
                raise InputError(f"{spec}: cannot read the model: {e.strerror}") from None
            except json.JSONDecodeError as e:
                raise InputError(f"{spec}:{e.lineno}: not valid JSON: {e.msg}") from None
        else:
            doc = load_yaml(path)
            if len(doc) == 1 and isinstance(next(iter(doc.values())), dict):
                doc = next(iter(doc.values()))
        model = from_hf_config(doc, spec) if "hidden_size" in doc else dict(doc)
        model.setdefault("name", path.stem)
    else:
        model = lookup("models", spec)
    model.update({k: v for k, v in (overrides or {}).items() if v is not None})
    missing = [k for k in REQUIRED if model.get(k) is None]
    if missing:
        raise InputError(f"{spec}: model is missing {', '.join(missing)}")
    model.setdefault("kv_heads", model["heads"])
    return model
