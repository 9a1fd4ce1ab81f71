//! The kernels of each block of a transformer layer on one GPU, and their compute time
//! ([`super::kernels`] prices each).
//!
//! Per micro-batch of b sequences of s tokens (s already divided by CP), on one TP rank:
//! GEMMs are [n × k]·[k × out] with n = b·s tokens and the output (or input) dimension split by
//! TP; backward, each is a data-gradient GEMM [n × out]·[out × k] and a weight-gradient GEMM
//! [k × n]·[n × out]. Element-wise ops (norms, activations, dropout, residual adds, softmax) run
//! on n/t tokens with sequence parallelism; their backward kernels move about twice the bytes.
//! These lists are the one op list of an iteration: the generator times them, and
//! `clustersim kernels measure` lists and times the same kernels on a real device.

use super::generate::stage_params;
use super::model::{Family, Model};
use super::plan::{DataParallel, Plan, Recompute};
use crate::catalog::Dtype;
use crate::compute::{distinct, Device, Kernel, Pointwise, Priced};
use crate::error::Result;
use crate::workload::Work;

/// The pieces of one layer, forward and backward, priced: time and work of each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockTimes {
    pub attn_fwd: Priced,
    pub attn_bwd_data: Priced,
    pub attn_bwd_weight: Priced,
    /// Attention core alone (recomputed with selective recompute).
    pub attn_core_fwd: Priced,
    pub mlp_fwd: Priced,
    pub mlp_bwd_data: Priced,
    pub mlp_bwd_weight: Priced,
}

/// The kernels of the pieces of one layer, as [`BlockTimes`] times them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockKernels {
    pub attn_fwd: Vec<Kernel>,
    pub attn_bwd_data: Vec<Kernel>,
    pub attn_bwd_weight: Vec<Kernel>,
    pub attn_core_fwd: Vec<Kernel>,
    pub mlp_fwd: Vec<Kernel>,
    pub mlp_bwd_data: Vec<Kernel>,
    pub mlp_bwd_weight: Vec<Kernel>,
}

impl BlockKernels {
    /// Every kernel of the layer's forward and backward, once each time it runs.
    pub fn all(&self) -> impl Iterator<Item = &Kernel> {
        [
            &self.attn_fwd,
            &self.attn_bwd_data,
            &self.attn_bwd_weight,
            &self.mlp_fwd,
            &self.mlp_bwd_data,
            &self.mlp_bwd_weight,
        ]
        .into_iter()
        .flatten()
    }
}

/// Forward, data-gradient and weight-gradient kernels of a piece of a layer.
#[derive(Default)]
struct Pass {
    fwd: Vec<Kernel>,
    data: Vec<Kernel>,
    weight: Vec<Kernel>,
}

pub struct Costs<'a> {
    pub acc: &'a Device,
    pub model: &'a Model,
    pub plan: &'a Plan,
    pub flash_attention: bool,
}

impl Costs<'_> {
    fn tokens(&self) -> u64 {
        self.plan.mbs as u64 * (self.plan.seq / self.plan.cp as u64)
    }

    /// Tokens the element-wise ops of a layer see (n/t with sequence parallelism).
    fn ew_tokens(&self) -> u64 {
        if self.plan.sp {
            self.tokens() / self.plan.tp as u64
        } else {
            self.tokens()
        }
    }

    /// The kernels' total time on the device and their total work.
    fn priced(&self, kernels: &[Kernel]) -> Priced {
        let ns = kernels.iter().map(|k| k.ns(self.acc)).sum();
        let work = kernels.iter().map(Kernel::work).fold(Work::none(Dtype::Bf16), |a, b| a + b);
        Priced { ns, work }
    }

    /// A GEMM n×k by k×out: forward, data gradient, weight gradient, added to `pass`.
    fn linear(pass: &mut Pass, n: u64, k: u64, out: u64) {
        pass.fwd.push(Kernel::Gemm { m: n, n: out, k, batch: 1 });
        pass.data.push(Kernel::Gemm { m: n, n: k, k: out, batch: 1 });
        pass.weight.push(Kernel::Gemm { m: k, n: out, k: n, batch: 1 });
    }

    fn pointwise(pass: &mut Pass, op: Pointwise, rows: u64, cols: u64) {
        pass.fwd.push(Kernel::Elementwise { op, backward: false, rows, cols });
        pass.data.push(Kernel::Elementwise { op, backward: true, rows, cols });
    }

    /// The attention core (scores, softmax, context) forward and backward kernels.
    pub fn attention_core_kernels(&self) -> (Vec<Kernel>, Vec<Kernel>) {
        let m = self.model;
        let t = self.plan.tp as u64;
        let (b, s_q) = (self.plan.mbs as u64, self.plan.seq / self.plan.cp as u64);
        // Keys span the whole sequence (CP gathers them); heads split by TP.
        let s_k = self.plan.seq;
        let bh = b * m.heads / t;
        let (dqk, dv) = match &m.mla {
            Some(x) => (x.qk_nope + x.qk_rope, x.v_head),
            None => (m.head_dim(), m.head_dim()),
        };
        if self.flash_attention {
            let k = |backward| Kernel::FlashAttention { backward, batch_heads: bh, s_q, s_k, d_qk: dqk, d_v: dv };
            return (vec![k(false)], vec![k(true)]);
        }
        // Unfused: scores Q·Kᵀ and context P·V as batched GEMMs, softmax (with mask and dropout)
        // over the b·heads·s_q·s_k scores; backward, two GEMMs per forward GEMM.
        let gemm = |m, n, k| Kernel::Gemm { m, n, k, batch: bh };
        let softmax = |backward| Kernel::Elementwise { op: Pointwise::Softmax, backward, rows: bh * s_q, cols: s_k };
        let fwd = vec![gemm(s_q, s_k, dqk), softmax(false), gemm(s_q, dv, s_k)];
        let bwd = vec![
            gemm(s_q, s_k, dv), // dP = dO·Vᵀ
            gemm(s_k, dv, s_q), // dV = Pᵀ·dO
            softmax(true),
            gemm(s_q, dqk, s_k), // dQ = dS·K
            gemm(s_k, dqk, s_q), // dK = dSᵀ·Q
        ];
        (fwd, bwd)
    }

    /// Forward and backward time of the attention core.
    pub fn attention_core(&self) -> (f64, f64) {
        let (f, b) = self.attention_core_kernels();
        (self.priced(&f).ns, self.priced(&b).ns)
    }

    /// The kernels of one layer (dense, or MoE when `moe_layer`).
    pub fn layer_kernels(&self, moe_layer: bool) -> BlockKernels {
        let m = self.model;
        let t = self.plan.tp as u64;
        let n = self.tokens();
        let h = m.hidden;
        let ew = self.ew_tokens();
        let gated = m.family == Family::Llama;
        // Attention: norm, projections, core, output projection, dropout + residual.
        let mut attn = Pass::default();
        Self::pointwise(&mut attn, Pointwise::Norm, ew, h);
        match &m.mla {
            Some(x) => {
                let a = m.heads / t;
                Self::linear(&mut attn, n, h, x.q_lora);
                Self::linear(&mut attn, n, x.q_lora, a * (x.qk_nope + x.qk_rope));
                Self::linear(&mut attn, n, h, x.kv_lora + x.qk_rope);
                Self::linear(&mut attn, n, x.kv_lora, a * (x.qk_nope + x.v_head));
            }
            None => Self::linear(&mut attn, n, h, (m.heads + 2 * m.kv_heads) * m.head_dim() / t),
        }
        let (core_f, mut core_b) = self.attention_core_kernels();
        attn.fwd.extend(&core_f);
        // Selective recompute runs the attention core again inside the backward (full
        // recompute replays the whole forward, collectives included: the generator issues it).
        if self.plan.recompute == Recompute::Selective {
            core_b.extend(&core_f);
        }
        attn.data.extend(core_b);
        let out_in = match &m.mla {
            Some(x) => m.heads / t * x.v_head,
            None => m.heads * m.head_dim() / t,
        };
        Self::linear(&mut attn, n, out_in, h);
        Self::pointwise(&mut attn, Pointwise::Residual, ew, h);

        // MLP (dense, or the experts this rank hosts, with uniform routing).
        let mut mlp = Pass::default();
        Self::pointwise(&mut mlp, Pointwise::Norm, ew, h);
        let (ffn, tokens) = match (&m.moe, moe_layer) {
            // Each token goes to k experts; EP spreads them, so a rank processes n·k tokens
            // through experts of width expert_ffn (plus the shared experts on all n tokens).
            (Some(moe), true) => (moe.expert_ffn, n * moe.topk as u64),
            _ => (m.ffn, n),
        };
        let up = |width: u64| if gated { 2 * width / t } else { width / t };
        let act = if gated { Pointwise::Swiglu } else { Pointwise::Gelu };
        if let (Some(moe), true) = (&m.moe, moe_layer) {
            // Router: n × h by h × E, then the permutation of the dispatched tokens.
            Self::linear(&mut mlp, n, h, moe.experts as u64);
            Self::pointwise(&mut mlp, Pointwise::Permute, tokens, h);
        }
        Self::linear(&mut mlp, tokens, h, up(ffn));
        Self::pointwise(&mut mlp, act, tokens, ffn / t);
        Self::linear(&mut mlp, tokens, ffn / t, h);
        if let (Some(moe), true) = (&m.moe, moe_layer) {
            let sf = moe.shared_ffn * moe.shared_experts as u64;
            if sf > 0 {
                Self::linear(&mut mlp, n, h, up(sf));
                Self::pointwise(&mut mlp, act, n, sf / t);
                Self::linear(&mut mlp, n, sf / t, h);
            }
            Self::pointwise(&mut mlp, Pointwise::Permute, tokens, h);
        }
        Self::pointwise(&mut mlp, Pointwise::Residual, ew, h);
        BlockKernels {
            attn_fwd: attn.fwd,
            attn_bwd_data: attn.data,
            attn_bwd_weight: attn.weight,
            attn_core_fwd: core_f,
            mlp_fwd: mlp.fwd,
            mlp_bwd_data: mlp.data,
            mlp_bwd_weight: mlp.weight,
        }
    }

    pub fn layer(&self, moe_layer: bool) -> BlockTimes {
        let k = self.layer_kernels(moe_layer);
        BlockTimes {
            attn_fwd: self.priced(&k.attn_fwd),
            attn_bwd_data: self.priced(&k.attn_bwd_data),
            attn_bwd_weight: self.priced(&k.attn_bwd_weight),
            attn_core_fwd: self.priced(&k.attn_core_fwd),
            mlp_fwd: self.priced(&k.mlp_fwd),
            mlp_bwd_data: self.priced(&k.mlp_bwd_data),
            mlp_bwd_weight: self.priced(&k.mlp_bwd_weight),
        }
    }

    /// Embedding lookup (first stage) forward and backward kernels.
    pub fn embedding_kernels(&self) -> (Vec<Kernel>, Vec<Kernel>) {
        let mut p = Pass::default();
        Self::pointwise(&mut p, Pointwise::Embedding, self.ew_tokens(), self.model.hidden);
        (p.fwd, p.data)
    }

    pub fn embedding(&self) -> (Priced, Priced) {
        let (f, b) = self.embedding_kernels();
        (self.priced(&f), self.priced(&b))
    }

    /// Final norm, LM head (vocabulary split by TP) and cross-entropy, forward and backward
    /// kernels.
    pub fn head_kernels(&self) -> (Vec<Kernel>, Vec<Kernel>) {
        let m = self.model;
        let n = self.tokens();
        let v = m.vocab / self.plan.tp as u64;
        let mut p = Pass::default();
        Self::pointwise(&mut p, Pointwise::Norm, self.ew_tokens(), m.hidden);
        Self::linear(&mut p, n, m.hidden, v);
        // Logits in fp32: softmax, loss and its gradient over n × V/t.
        Self::pointwise(&mut p, Pointwise::CrossEntropy, n, v);
        p.data.extend(p.weight);
        (p.fwd, p.data)
    }

    pub fn head(&self) -> (Priced, Priced) {
        let (f, b) = self.head_kernels();
        (self.priced(&f), self.priced(&b))
    }

    /// Mixed-precision Adam step over `params` parameters held by this GPU.
    pub fn optimizer(&self, params: f64) -> Priced {
        Kernel::Optimizer { params: params.round() as u64 }.priced(self.acc)
    }
}

/// Parameters whose optimizer step `stage`'s GPUs run: all they hold with DDP, their 1/(DP·CP)
/// share with the distributed optimizer or ZeRO (as the generator issues the step).
pub fn optimizer_params(model: &Model, plan: &Plan, stage: u32) -> f64 {
    let (params, _) = stage_params(model, plan, stage);
    match plan.dp {
        DataParallel::Ddp => params as f64,
        _ => params as f64 / (plan.dp_size() * plan.cp) as f64,
    }
}

/// The distinct kernels of one iteration (every stage's), each with how many of the lists
/// (layer blocks, embedding, head, optimizer steps) hold it: what `kernels measure` times.
pub fn iteration_kernels(
    model: &Model,
    plan: &Plan,
    acc: &Device,
    flash_attention: bool,
) -> Result<Vec<(Kernel, usize)>> {
    plan.validate(model)?;
    let c = Costs { acc, model, plan, flash_attention };
    let mut all = Vec::new();
    let (f, b) = c.embedding_kernels();
    all.extend(f.into_iter().chain(b));
    for moe in [false, true] {
        if (0..model.layers).any(|l| model.is_moe_layer(l) == moe) {
            all.extend(c.layer_kernels(moe).all());
        }
    }
    let (f, b) = c.head_kernels();
    all.extend(f.into_iter().chain(b));
    for stage in 0..plan.pp {
        all.push(Kernel::Optimizer { params: optimizer_params(model, plan, stage).round() as u64 });
    }
    Ok(distinct(&all))
}

#[cfg(test)]
mod tests {
    use super::super::model::Family;
    use super::*;
    use crate::catalog::Accelerator;
    use crate::training::fixtures;

    fn gpt(hidden: u64, heads: u64) -> Model {
        let m = fixtures::model(2, hidden, heads, 4 * hidden);
        Model { name: "gpt".into(), family: Family::Gpt, vocab: 51200, seq_len: 2048, ..m }
    }

    fn plan(tp: u32, sp: bool, recompute: Recompute) -> Plan {
        Plan { sp, recompute, ..fixtures::plan(tp, tp, 1) }
    }

    #[test]
    fn a_gpt_layer_has_megatrons_gemms_and_each_backward_has_two() {
        let (m, p) = (gpt(6144, 48), plan(8, true, Recompute::None));
        let acc = Device::ideal();
        let k = Costs { acc: &acc, model: &m, plan: &p, flash_attention: true }.layer_kernels(false);
        let gemms = |v: &[Kernel]| v.iter().filter(|k| matches!(k, Kernel::Gemm { .. })).copied().collect::<Vec<_>>();
        // QKV (2048 × 6144 by 6144 × 3·6144/8), output (768 → 6144), fc1 (→ 3072), fc2 (3072 → 6144).
        let g = |m, n, k| Kernel::Gemm { m, n, k, batch: 1 };
        assert_eq!(gemms(&k.attn_fwd), vec![g(2048, 2304, 6144), g(2048, 6144, 768)]);
        assert_eq!(gemms(&k.mlp_fwd), vec![g(2048, 3072, 6144), g(2048, 6144, 3072)]);
        assert_eq!(gemms(&k.attn_bwd_weight), vec![g(6144, 2304, 2048), g(768, 6144, 2048)]);
        assert_eq!(gemms(&k.mlp_bwd_data), vec![g(2048, 6144, 3072), g(2048, 3072, 6144)]);
        // Norms and residuals on the sequence-parallel shard: 2048/8 tokens × 6144.
        assert!(k.mlp_fwd.contains(&Kernel::Elementwise {
            op: Pointwise::Norm,
            backward: false,
            rows: 256,
            cols: 6144
        }));
        assert_eq!(k.attn_core_fwd.len(), 1);
    }

    #[test]
    fn block_times_are_the_sums_of_their_kernels() {
        let (m, p) = (gpt(4096, 32), plan(2, false, Recompute::Selective));
        let acc = Device::from(Accelerator {
            sms: 108,
            gemm_tile: [128, 128],
            kernel_overhead_ns: 2000.0,
            ..Accelerator::ideal()
        });
        let c = Costs { acc: &acc, model: &m, plan: &p, flash_attention: false };
        let (k, t) = (c.layer_kernels(false), c.layer(false));
        let sum = |v: &[Kernel]| v.iter().map(|k| k.model_ns(&acc)).sum::<f64>();
        assert_eq!(t.mlp_fwd.ns, sum(&k.mlp_fwd));
        assert_eq!(t.attn_bwd_data.ns, sum(&k.attn_bwd_data));
        // The work is the kernels' too: the MLP's two GEMMs, 2·n·h·4h/t FLOPs each (n = b·s).
        let n = (p.mbs as u64 * p.seq) as f64;
        assert_eq!(t.mlp_fwd.work.flops, 2.0 * 2.0 * n * 4096.0 * 4.0 * 4096.0 / 2.0);
        assert_eq!(t.mlp_fwd.work.dtype, crate::catalog::Dtype::Bf16);
        // Selective recompute: the backward holds the core's forward kernels once more.
        let (core_f, core_b) = c.attention_core_kernels();
        assert_eq!(core_f.len(), 3);
        for kernel in core_f.iter().chain(&core_b) {
            assert!(k.attn_bwd_data.contains(kernel));
        }
        // Norm, QKV data gradient, core (backward and recomputed), output data gradient, residual.
        assert_eq!(k.attn_bwd_data.len(), 1 + 1 + core_b.len() + core_f.len() + 1 + 1);
    }
}
