//! Compute time of each block of a transformer layer on one GPU, from the roofline of its ops.
//!
//! Per micro-batch of b sequences of s tokens (s already divided by CP), on one TP rank:
//! GEMMs are [n × k]·[k × out] with n = b·s tokens and the output (or input) dimension split by
//! TP; element-wise ops (norms, activations, dropout, residual adds, softmax) are HBM-bound, on
//! n/t tokens with sequence parallelism. Backward GEMMs are two GEMMs each (data and weight
//! gradient); backward element-wise ops move about twice the bytes of forward.

use super::hardware::Accelerator;
use super::model::{Family, Model};
use super::plan::{Plan, Recompute};

/// ns of the pieces of one layer, forward and backward.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BlockTimes {
    pub attn_fwd: f64,
    pub attn_bwd_data: f64,
    pub attn_bwd_weight: f64,
    /// Attention core alone (recomputed with selective recompute).
    pub attn_core_fwd: f64,
    pub mlp_fwd: f64,
    pub mlp_bwd_data: f64,
    pub mlp_bwd_weight: f64,
}

pub struct Costs<'a> {
    pub acc: &'a Accelerator,
    pub model: &'a Model,
    pub plan: &'a Plan,
    pub flash_attention: bool,
}

impl Costs<'_> {
    fn tokens(&self) -> f64 {
        self.plan.mbs as f64 * (self.plan.seq / self.plan.cp as u64) as f64
    }

    /// HBM-bound element-wise op over `elems` 2-byte elements, read `reads` times, written once.
    fn elementwise(&self, elems: f64, reads: f64) -> f64 {
        self.acc.roofline_ns(elems * 4.0, elems * 2.0 * (reads + 1.0), false)
    }

    /// Tokens the element-wise ops of a layer see (n/t with sequence parallelism).
    fn ew_tokens(&self) -> f64 {
        if self.plan.sp {
            self.tokens() / self.plan.tp as f64
        } else {
            self.tokens()
        }
    }

    /// Forward and backward (data, weight) time of a GEMM n×k by k×out.
    fn gemm(&self, n: f64, k: f64, out: f64) -> (f64, f64, f64) {
        let a = self.acc;
        (a.gemm_ns(n, out, k), a.gemm_ns(n, k, out), a.gemm_ns(k, out, n))
    }

    pub fn attention_core(&self) -> (f64, f64) {
        let m = self.model;
        let t = self.plan.tp as f64;
        let (b, s_q) = (self.plan.mbs as f64, (self.plan.seq / self.plan.cp as u64) as f64);
        // Keys span the whole sequence (CP gathers them); heads split by TP.
        let s_k = self.plan.seq as f64;
        let heads = m.heads as f64 / t;
        let (dqk, dv) = match &m.mla {
            Some(x) => ((x.qk_nope + x.qk_rope) as f64, x.v_head as f64),
            None => (m.head_dim() as f64, m.head_dim() as f64),
        };
        let flops = 2.0 * b * heads * s_q * s_k * (dqk + dv);
        if self.flash_attention {
            // Fused kernel: causal masking skips half of the blocks; reads Q, K, V, writes O.
            let bytes = 2.0 * b * heads * (s_q * (dqk + dv) + s_k * (dqk + dv));
            let fwd = self.acc.roofline_ns(flops / 2.0, bytes, true);
            (fwd, 2.5 * fwd)
        } else {
            // Two batched GEMMs and softmax/mask/dropout passes over the b·heads·s·s scores.
            let scores = b * heads * s_q * s_k;
            let gemms = self.acc.roofline_ns(flops, 2.0 * scores + 2.0 * b * heads * (s_q + s_k) * (dqk + dv), true);
            let softmax = self.elementwise(scores, 1.0) + self.elementwise(scores, 1.0) * 0.75;
            (gemms + softmax, 2.0 * gemms + 2.0 * softmax)
        }
    }

    pub fn layer(&self, moe_layer: bool) -> BlockTimes {
        let m = self.model;
        let t = self.plan.tp as f64;
        let n = self.tokens();
        let h = m.hidden as f64;
        let ew = self.ew_tokens();
        let norm = self.elementwise(ew * h, 1.0);
        let residual = self.elementwise(ew * h, 2.0);
        // Attention projections.
        let (qkv, out) = match &m.mla {
            Some(x) => {
                let a = m.heads as f64 / t;
                let q = self.gemm(n, h, x.q_lora as f64);
                let q2 = self.gemm(n, x.q_lora as f64, a * (x.qk_nope + x.qk_rope) as f64);
                let kv = self.gemm(n, h, (x.kv_lora + x.qk_rope) as f64);
                let kv2 = self.gemm(n, x.kv_lora as f64, a * (x.qk_nope + x.v_head) as f64);
                let sum = (q.0 + q2.0 + kv.0 + kv2.0, q.1 + q2.1 + kv.1 + kv2.1, q.2 + q2.2 + kv.2 + kv2.2);
                (sum, self.gemm(n, a * x.v_head as f64, h))
            }
            None => {
                let dh = m.head_dim() as f64;
                let qkv_out = (m.heads + 2 * m.kv_heads) as f64 * dh / t;
                (self.gemm(n, h, qkv_out), self.gemm(n, m.heads as f64 * dh / t, h))
            }
        };
        let (core_f, core_b) = self.attention_core();
        let mut bt = BlockTimes {
            attn_core_fwd: core_f,
            attn_fwd: norm + qkv.0 + core_f + out.0 + residual,
            attn_bwd_data: 2.0 * norm + qkv.1 + core_b + out.1 + 2.0 * residual,
            attn_bwd_weight: qkv.2 + out.2,
            ..Default::default()
        };
        // MLP (dense, or the experts this rank hosts, with uniform routing).
        let gated = m.family == Family::Llama;
        let (ffn, tokens) = match (&m.moe, moe_layer) {
            (Some(moe), true) => {
                // Each token goes to k experts; EP spreads them, so a rank processes n·k tokens
                // through experts of width expert_ffn (plus the shared experts on all n tokens).
                (moe.expert_ffn as f64, n * moe.topk as f64)
            }
            _ => (m.ffn as f64, n),
        };
        let up_width = if gated { 2.0 * ffn / t } else { ffn / t };
        let fc1 = self.gemm(tokens, h, up_width);
        let fc2 = self.gemm(tokens, ffn / t, h);
        let act = self.elementwise(tokens * ffn / t, if gated { 2.0 } else { 1.0 });
        let mut mlp = (fc1.0 + fc2.0 + act, fc1.1 + fc2.1 + 2.0 * act, fc1.2 + fc2.2);
        if let (Some(moe), true) = (&m.moe, moe_layer) {
            let sf = moe.shared_ffn as f64 * moe.shared_experts as f64;
            if sf > 0.0 {
                let s1 = self.gemm(n, h, if gated { 2.0 * sf / t } else { sf / t });
                let s2 = self.gemm(n, sf / t, h);
                mlp = (mlp.0 + s1.0 + s2.0, mlp.1 + s1.1 + s2.1, mlp.2 + s1.2 + s2.2);
            }
            // Router: n × h by h × E, plus permutation of the dispatched tokens.
            let router = self.gemm(n, h, moe.experts as f64);
            let permute = self.elementwise(tokens * h, 1.0) * 2.0;
            mlp = (mlp.0 + router.0 + permute, mlp.1 + router.1 + permute, mlp.2 + router.2);
        }
        bt.mlp_fwd = norm + mlp.0 + residual;
        bt.mlp_bwd_data = 2.0 * norm + mlp.1 + 2.0 * residual;
        bt.mlp_bwd_weight = mlp.2;
        // Selective recompute runs the attention core again inside the backward (full recompute
        // replays the whole forward, collectives included: the generator issues it).
        if self.plan.recompute == Recompute::Selective {
            bt.attn_bwd_data += core_f;
        }
        bt
    }

    /// Embedding lookup (first stage) forward and backward.
    pub fn embedding(&self) -> (f64, f64) {
        let h = self.model.hidden as f64;
        let e = self.elementwise(self.ew_tokens() * h, 1.0);
        (e, 2.0 * e)
    }

    /// Final norm, LM head (vocabulary split by TP) and cross-entropy, forward and backward.
    pub fn head(&self) -> (f64, f64) {
        let m = self.model;
        let n = self.tokens();
        let h = m.hidden as f64;
        let v = m.vocab as f64 / self.plan.tp as f64;
        let (f, d, w) = self.gemm(n, h, v);
        let norm = self.elementwise(self.ew_tokens() * h, 1.0);
        // Logits in fp32: softmax, loss and its gradient over n × V/t.
        let ce = self.acc.roofline_ns(5.0 * n * v, 4.0 * n * v * 3.0, false);
        (norm + f + ce, 2.0 * norm + d + w + ce)
    }

    /// Mixed-precision Adam step over `params` parameters held by this GPU: read fp32 master
    /// weights, m, v and gradients, write master, m, v and the bf16 copy (34 B per parameter).
    pub fn optimizer(&self, params: f64) -> f64 {
        self.acc.roofline_ns(12.0 * params, 34.0 * params, false)
    }
}
