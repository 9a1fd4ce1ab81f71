//! Transformer model descriptions: shapes, parameter counts and FLOPs.
//!
//! Parameter counts follow shared/reference/megatron.md §1: GPT (Megatron: learned positions,
//! tied embeddings, biases, GeLU MLP) and LLaMA-style models (RMSNorm, no biases, SwiGLU, GQA,
//! untied output), with optional mixture-of-experts MLPs and DeepSeek's multi-head latent
//! attention (MLA). Either family may say otherwise about its output layer (`tie_embeddings`):
//! Megatron's `--untie-embeddings-and-output-weights`, Hugging Face's `tie_word_embeddings`.

use serde::Deserialize;

use crate::error::{InputError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Megatron GPT: LayerNorm with biases, GeLU MLP, learned positions, tied embeddings.
    Gpt,
    /// LLaMA and descendants: RMSNorm, no biases, SwiGLU MLP, rotary positions, untied output.
    Llama,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Moe {
    pub experts: u32,
    pub topk: u32,
    /// FFN width of one routed expert.
    pub expert_ffn: u64,
    #[serde(default)]
    pub shared_experts: u32,
    #[serde(default)]
    pub shared_ffn: u64,
    /// The first `dense_layers` layers use the dense FFN instead of experts.
    #[serde(default)]
    pub dense_layers: u32,
}

/// DeepSeek's multi-head latent attention: queries and keys/values through low-rank latents.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Mla {
    pub q_lora: u64,
    pub kv_lora: u64,
    pub qk_nope: u64,
    pub qk_rope: u64,
    pub v_head: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Model {
    pub name: String,
    pub family: Family,
    pub layers: u32,
    pub hidden: u64,
    pub heads: u64,
    /// Key/value heads (GQA); equal to `heads` for multi-head attention.
    pub kv_heads: u64,
    /// Width of one attention head (Megatron's `--kv-channels`, Hugging Face's `head_dim`);
    /// absent: hidden / heads, which must then divide evenly (Megatron asserts it).
    #[serde(default)]
    pub head_dim: Option<u64>,
    pub ffn: u64,
    pub vocab: u64,
    pub seq_len: u64,
    #[serde(default)]
    pub moe: Option<Moe>,
    #[serde(default)]
    pub mla: Option<Mla>,
    /// Whether the output layer shares the word embedding's weights; absent: the family's way
    /// (GPT tied, as Megatron by default; LLaMA untied).
    #[serde(default)]
    pub tie_embeddings: Option<bool>,
}

/// Bounds on a model's sizes: far above any model built, low enough that parameter and FLOP
/// counts cannot overflow.
const MAX_WIDTH: u64 = 1 << 22;
const MAX_HEADS: u64 = 1 << 14;
const MAX_LAYERS: u32 = 1 << 12;
const MAX_EXPERTS: u32 = 1 << 12;
/// 10¹⁵ parameters: a thousand times the largest models.
const MAX_PARAMS: f64 = 1e15;

impl Model {
    /// Check the sizes a model file gave: every count at least 1 (a latent rank may be 0) and
    /// within bounds, GQA groups whole, top-k within the experts. Errors name `model`.
    pub fn check(&self) -> Result<()> {
        let bad = |field: &str, msg: String| Err(InputError::field("model", field, msg));
        let within = |field: &str, v: u64, min: u64, max: u64| {
            if (min..=max).contains(&v) {
                Ok(())
            } else {
                bad(field, format!("must be from {min} to {max}, got {v}"))
            }
        };
        within("layers", self.layers as u64, 1, MAX_LAYERS as u64)?;
        within("hidden", self.hidden, 1, MAX_WIDTH)?;
        within("heads", self.heads, 1, MAX_HEADS.min(self.hidden))?;
        within("kv_heads", self.kv_heads, 1, self.heads)?;
        within("ffn", self.ffn, 1, MAX_WIDTH)?;
        within("vocab", self.vocab, 1, MAX_WIDTH)?;
        within("seq_len", self.seq_len, 1, MAX_WIDTH)?;
        match self.head_dim {
            Some(d) => within("head_dim", d, 1, MAX_WIDTH)?,
            None if self.mla.is_none() && !self.hidden.is_multiple_of(self.heads) => {
                return bad(
                    "hidden",
                    format!(
                        "{} is not divisible by the {} heads (Megatron asserts hidden % heads = 0 unless the head width is given: head_dim, its --kv-channels)",
                        self.hidden, self.heads
                    ),
                );
            }
            None => {}
        }
        if self.mla.is_none() && !self.heads.is_multiple_of(self.kv_heads) {
            return bad("kv_heads", format!("{} KV heads must divide the {} heads", self.kv_heads, self.heads));
        }
        if let Some(m) = &self.moe {
            within("moe.experts", m.experts as u64, 1, MAX_EXPERTS as u64)?;
            within("moe.topk", m.topk as u64, 1, m.experts as u64)?;
            within("moe.expert_ffn", m.expert_ffn, 1, MAX_WIDTH)?;
            within("moe.shared_experts", m.shared_experts as u64, 0, MAX_EXPERTS as u64)?;
            within("moe.shared_ffn", m.shared_ffn, 0, MAX_WIDTH)?;
            within("moe.dense_layers", m.dense_layers as u64, 0, self.layers as u64)?;
        }
        if let Some(m) = &self.mla {
            within("mla.q_lora", m.q_lora, 0, MAX_WIDTH)?;
            within("mla.kv_lora", m.kv_lora, 1, MAX_WIDTH)?;
            within("mla.qk_nope", m.qk_nope, 1, MAX_WIDTH)?;
            within("mla.qk_rope", m.qk_rope, 0, MAX_WIDTH)?;
            within("mla.v_head", m.v_head, 1, MAX_WIDTH)?;
        }
        // The counts in floating point first: the integer ones must not overflow.
        let h = self.hidden as f64;
        let widest = [self.ffn, self.moe.as_ref().map_or(0, |m| m.expert_ffn * m.experts as u64)];
        let rough = self.layers as f64 * h * (4.0 * h + 3.0 * widest.iter().max().copied().unwrap_or(0) as f64)
            + 2.0 * (self.vocab + self.seq_len) as f64 * h;
        if rough > MAX_PARAMS {
            return bad(
                "layers",
                format!("about {rough:.1e} parameters, more than clustersim models ({MAX_PARAMS:e})"),
            );
        }
        Ok(())
    }

    /// Does the output layer share the word embedding (one V × h matrix, not two)?
    pub fn tied(&self) -> bool {
        self.tie_embeddings.unwrap_or(self.family == Family::Gpt)
    }

    pub fn head_dim(&self) -> u64 {
        self.head_dim.unwrap_or(self.hidden / self.heads)
    }

    /// Matmul parameters of one layer's attention (no norms, no biases).
    pub fn attention_matmul_params(&self) -> u64 {
        let h = self.hidden;
        if let Some(m) = &self.mla {
            let a = self.heads;
            h * m.q_lora
                + m.q_lora * a * (m.qk_nope + m.qk_rope)
                + h * (m.kv_lora + m.qk_rope)
                + m.kv_lora * a * (m.qk_nope + m.v_head)
                + a * m.v_head * h
        } else {
            let dh = self.head_dim();
            2 * h * self.heads * dh + 2 * h * self.kv_heads * dh
        }
    }

    fn mlp_matmuls(&self) -> u64 {
        match self.family {
            Family::Gpt => 2,
            Family::Llama => 3,
        }
    }

    /// Is layer `i` (0-based) a mixture-of-experts layer?
    pub fn is_moe_layer(&self, i: u32) -> bool {
        self.moe.as_ref().is_some_and(|m| i >= m.dense_layers)
    }

    /// Parameters of layer `i`: total, and those active for one token.
    pub fn layer_params(&self, i: u32) -> (u64, u64) {
        let h = self.hidden;
        let k = self.mlp_matmuls();
        let (norms, biases) = match self.family {
            // Two LayerNorms (weight + bias) and the biases of QKV, out-proj, FC1, FC2.
            Family::Gpt => (4 * h, 3 * h + h + self.ffn + h),
            Family::Llama => (2 * h, 0),
        };
        let mla_norms = self.mla.as_ref().map_or(0, |m| m.q_lora + m.kv_lora);
        let base = self.attention_matmul_params() + norms + biases + mla_norms;
        match &self.moe {
            Some(m) if self.is_moe_layer(i) => {
                let expert = k * h * m.expert_ffn;
                let shared = m.shared_experts as u64 * k * h * m.shared_ffn;
                let router = h * m.experts as u64;
                (base + m.experts as u64 * expert + shared + router, base + m.topk as u64 * expert + shared + router)
            }
            _ => {
                let mlp = k * h * self.ffn;
                (base + mlp, base + mlp)
            }
        }
    }

    /// Embedding, output head and final norm parameters.
    pub fn embedding_params(&self) -> u64 {
        let h = self.hidden;
        let words = if self.tied() { 1 } else { 2 } * self.vocab * h;
        match self.family {
            // Learned position embeddings and a final LayerNorm (weight and bias).
            Family::Gpt => words + self.seq_len * h + 2 * h,
            Family::Llama => words + h,
        }
    }

    /// Total and per-token-active parameters.
    pub fn params(&self) -> (u64, u64) {
        let (mut total, mut active) = (self.embedding_params(), self.embedding_params());
        for i in 0..self.layers {
            let (t, a) = self.layer_params(i);
            total += t;
            active += a;
        }
        (total, active)
    }
}

/// Llama 3 70B as its config gives it: the fixture of several modules' tests.
#[cfg(test)]
pub(crate) fn llama3_70b() -> Model {
    Model {
        name: "llama3-70b".into(),
        family: Family::Llama,
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        head_dim: None,
        ffn: 28672,
        vocab: 128256,
        seq_len: 8192,
        moe: None,
        mla: None,
        tie_embeddings: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama(name: &str, layers: u32, hidden: u64, heads: u64, kv: u64, ffn: u64, vocab: u64) -> Model {
        Model {
            name: name.into(),
            family: Family::Llama,
            layers,
            hidden,
            heads,
            kv_heads: kv,
            head_dim: None,
            ffn,
            vocab,
            seq_len: 8192,
            moe: None,
            mla: None,
            tie_embeddings: None,
        }
    }

    #[test]
    fn llama_parameter_counts_match_megatron_md() {
        // shared/reference/megatron.md §1 checks.
        assert_eq!(llama("l3-8b", 32, 4096, 32, 8, 14336, 128256).params().0, 8_030_261_248);
        assert_eq!(llama("l3-70b", 80, 8192, 64, 8, 28672, 128256).params().0, 70_553_706_496);
        assert_eq!(llama("l3-405b", 126, 16384, 128, 8, 53248, 128256).params().0, 405_853_388_800);
        assert_eq!(llama("llama-7b", 32, 4096, 32, 32, 11008, 32000).params().0, 6_738_415_616);
        assert_eq!(llama("llama-65b", 80, 8192, 64, 64, 22016, 32000).params().0, 65_285_660_672);
    }

    #[test]
    fn tied_and_untied_output_layers_count_as_published() {
        // Llama 3.2 1B and 3B tie their output layer (config.json: tie_word_embeddings true);
        // Hugging Face gives 1,235,814,400 and 3,212,749,824 parameters.
        let l32 = |layers, hidden, heads| Model {
            tie_embeddings: Some(true),
            ..llama("l3.2", layers, hidden, heads, 8, 8192, 128256)
        };
        assert_eq!(l32(16, 2048, 32).params().0, 1_235_814_400);
        assert_eq!(l32(28, 3072, 24).params().0, 3_212_749_824);
        // Megatron-LM README's 1.7B GPT (untied, --untie-embeddings-and-output-weights): the
        // tied count plus a second V·h matrix.
        let gpt = |tie| Model {
            name: "gpt-1.7b".into(),
            family: Family::Gpt,
            layers: 24,
            hidden: 2048,
            heads: 16,
            kv_heads: 16,
            head_dim: None,
            ffn: 8192,
            vocab: 131072,
            seq_len: 4096,
            moe: None,
            mla: None,
            tie_embeddings: tie,
        };
        let (l, h, v, s) = (24u64, 2048u64, 131072u64, 4096u64);
        assert_eq!(gpt(None).params().0, 12 * l * h * h + 13 * l * h + (v + s) * h + 2 * h);
        assert_eq!(gpt(Some(false)).params().0, gpt(None).params().0 + v * h);
        assert!(gpt(None).tied() && !gpt(Some(false)).tied());
    }

    #[test]
    fn mixtral_total_and_active() {
        let mut m = llama("mixtral", 32, 4096, 32, 8, 14336, 32000);
        m.moe = Some(Moe { experts: 8, topk: 2, expert_ffn: 14336, shared_experts: 0, shared_ffn: 0, dense_layers: 0 });
        let (total, active) = m.params();
        assert_eq!(total, 46_702_792_704);
        assert!((active as f64 / 12.88e9 - 1.0).abs() < 0.01, "{active}");
    }

    #[test]
    fn gpt_matches_the_closed_form() {
        // P = 12·L·h²·(1 + 13/(12h) + (V + s)/(12·L·h)), plus the final LayerNorm (2h).
        let m = Model {
            name: "gpt-1t".into(),
            family: Family::Gpt,
            layers: 128,
            hidden: 25600,
            heads: 160,
            kv_heads: 160,
            head_dim: None,
            ffn: 4 * 25600,
            vocab: 51200,
            seq_len: 2048,
            moe: None,
            mla: None,
            tie_embeddings: None,
        };
        let (l, h, v, s) = (128u64, 25600u64, 51200u64, 2048u64);
        assert_eq!(m.params().0, 12 * l * h * h + 13 * l * h + (v + s) * h + 2 * h);
    }

    #[test]
    fn check_refuses_sizes_a_run_cannot_use() {
        // Found by fuzzing: heads 0 divided by zero (a panic) in the layer costs.
        let mut m = llama("m", 2, 256, 4, 2, 512, 1000);
        assert_eq!(m.check(), Ok(()));
        m.heads = 0;
        assert_eq!(m.check().unwrap_err().to_string(), "model: heads: must be from 1 to 256, got 0");
        m.heads = 4;
        m.kv_heads = 3;
        assert_eq!(m.check().unwrap_err().to_string(), "model: kv_heads: 3 KV heads must divide the 4 heads");
        m.kv_heads = 4;
        m.moe = Some(Moe { experts: 4, topk: 5, expert_ffn: 64, shared_experts: 0, shared_ffn: 0, dense_layers: 0 });
        assert_eq!(m.check().unwrap_err().to_string(), "model: moe.topk: must be from 1 to 4, got 5");
        m.moe = None;
        m.layers = 4096;
        m.hidden = 1 << 22;
        m.heads = 4;
        let e = m.check().unwrap_err().to_string();
        assert!(
            e.starts_with("model: layers: about ") && e.ends_with("parameters, more than clustersim models (1e15)"),
            "{e}"
        );
    }

    #[test]
    fn hidden_must_split_into_heads_unless_their_width_is_given() {
        // Megatron: `if kv_channels is None: assert hidden_size % num_attention_heads == 0`.
        let mut m = llama("m", 32, 4100, 32, 8, 14336, 128256);
        assert_eq!(
            m.check().unwrap_err().to_string(),
            "model: hidden: 4100 is not divisible by the 32 heads (Megatron asserts hidden % heads = 0 unless the head width is given: head_dim, its --kv-channels)"
        );
        // GPT-3 13B as published: d_model 5140, 40 heads of 128.
        m = llama("gpt-13b", 40, 5140, 40, 40, 20560, 50257);
        m.head_dim = Some(128);
        assert_eq!(m.check(), Ok(()));
        assert_eq!(m.attention_matmul_params(), 4 * 5140 * 40 * 128);
    }
}
