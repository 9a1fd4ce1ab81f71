//! Megatron-Core's communication overlaps: the options, their defaults for a plan, and the
//! gradient buckets the data-parallel overlaps work on (NVIDIA/Megatron-LM at d98e8a64,
//! `megatron/core/distributed/`, `megatron/training/training.py`, `pipeline_parallel/schedules.py`).
//!
//! - Gradient buckets: a model chunk's parameters are laid out in reverse registration order
//!   (the order backward produces their gradients) and cut into buckets: a bucket closes at the
//!   first parameter that brings it to `bucket_size` parameters or more (default
//!   max(40 M, 1 M × DP), `DistributedDataParallel.__init__`). Bucketing is off (one bucket per buffer)
//!   without `--overlap-grad-reduce`, on pipeline stages other than the first and for model
//!   chunks other than the first (`per_chunk_disable_bucketing`). Dense and expert parameters
//!   live in separate buffers (reduced in DP×CP and in expert DP). With the distributed
//!   optimizer a shared (tied) embedding gets a bucket of its own.
//! - Parameters here are the tensors of one block as a unit pair (the output projection and the
//!   rest of attention; FC2 and FC1 of the MLP; the experts' FC2 and FC1): the generator knows
//!   when a block's weight gradients are done, not each tensor's, so a block's tensors become
//!   ready together.

use serde::{Deserialize, Serialize};

use super::model::{Family, Model};
use super::plan::{DataParallel, Plan};
use crate::error::{InputError, Result};

/// The overlaps as options; `None` takes Megatron-Core's default for the plan ([`Overlap::resolve`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Overlap {
    /// `--overlap-grad-reduce`: each gradient bucket's all-reduce / reduce-scatter starts when
    /// its last gradient of the last micro-batch is ready. Default off, as Megatron-LM's flag.
    #[serde(default)]
    pub grad_reduce: Option<bool>,
    /// `--overlap-param-gather`: the distributed optimizer's parameter all-gathers run bucket by
    /// bucket under the next forward instead of after the optimizer step. Default off, as
    /// Megatron-LM's flag; needs the distributed optimizer and `grad_reduce`.
    #[serde(default)]
    pub param_gather: Option<bool>,
    /// `--tp-comm-overlap` (Transformer Engine userbuffers): TP all-gathers and reduce-scatters
    /// chunked and pipelined with the GEMMs that consume or produce them. Default off.
    #[serde(default)]
    pub tp_comm: Option<bool>,
    /// `overlap_p2p_comm` (`--no-overlap-p2p-communication` turns it off): pipeline receives
    /// posted one step ahead and sends not waited on. Default on with interleaving, which is the
    /// only schedule that has it.
    #[serde(default)]
    pub p2p: Option<bool>,
    /// `--ddp-bucket-size`, parameters per gradient bucket.
    #[serde(default)]
    pub bucket_size: Option<u64>,
    /// Megatron-Core before 655a663 (2024-09-07): `DistributedOptimizer.zero_grad()`, called at
    /// the start of every iteration, dispatches the first bucket's parameter all-gather
    /// (`_dispatch_gather_model_params(all_gather_handle_index=0)`, distrib_optimizer.py at
    /// f2e5db4, the code of the Megatron-LM README's H100 table), so every pipeline stage starts
    /// gathering at once, stages after the first during the pipeline fill. Since then nothing is
    /// dispatched before the first forward pre-hook. Default off (the current code); needs
    /// `param_gather`; without interleaving (interleaved, chunks 0–1 start the iteration either way).
    #[serde(default)]
    pub gather_at_zero_grad: Option<bool>,
}

/// The overlaps a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlaps {
    pub grad_reduce: bool,
    pub param_gather: bool,
    pub tp_comm: bool,
    pub p2p: bool,
    pub bucket_size: u64,
    pub gather_at_zero_grad: bool,
}

impl Overlap {
    /// Megatron-Core's defaults for `plan` where an option is not given; refuses what
    /// Megatron-LM's argument checks refuse.
    pub fn resolve(&self, plan: &Plan) -> Result<Overlaps> {
        let bad = |field: &str, msg: &str| Err(InputError::field("overlap", field, msg));
        let dist_opt = plan.dp == DataParallel::DistributedOptimizer;
        let grad_reduce = self.grad_reduce.unwrap_or(false);
        let param_gather = self.param_gather.unwrap_or(false);
        if param_gather && !dist_opt {
            return bad("param_gather", "overlapping the parameter all-gather needs the distributed optimizer");
        }
        if param_gather && !grad_reduce {
            return bad("param_gather", "Megatron overlaps the parameter all-gather only with --overlap-grad-reduce");
        }
        let tp_comm = self.tp_comm.unwrap_or(false);
        if tp_comm && !plan.sp {
            return bad("tp_comm", "TP communication overlap needs sequence parallelism (--sp), as in Megatron");
        }
        if tp_comm && plan.tp > plan.gpus_per_server {
            // TE v1.9's userbuffers map peers' memory over NVLink within one node
            // (examples/pytorch/comm_gemm_overlap/README.md: "Tensor-parallel GPUs must be on a
            // single node"); multi-node NVLink came in TE 2.2.
            return bad(
                "tp_comm",
                &format!(
                    "Transformer Engine's userbuffers need each TP group inside one server: TP {} spans servers of {} GPUs",
                    plan.tp, plan.gpus_per_server
                ),
            );
        }
        // Megatron switches the P2P overlap off without interleaving, and without it needs PP > 2.
        let p2p = plan.vpp > 1 && self.p2p.unwrap_or(true);
        if plan.vpp > 1 && !p2p && plan.pp <= 2 {
            return bad("p2p", "interleaving without P2P overlap needs PP > 2, as in Megatron");
        }
        // The data-parallel group without CP sizes the buckets (`dp_group` in `__init__`).
        let dp = plan.dp_size() as u64;
        let bucket_size = self.bucket_size.unwrap_or((1_000_000 * dp).max(40_000_000));
        if bucket_size == 0 {
            return bad("bucket_size", "must be at least 1 parameter");
        }
        let gather_at_zero_grad = self.gather_at_zero_grad.unwrap_or(false);
        if gather_at_zero_grad && !param_gather {
            return bad("gather_at_zero_grad", "dispatching the first gather at zero_grad needs param_gather");
        }
        Ok(Overlaps { grad_reduce, param_gather, tp_comm, p2p, bucket_size, gather_at_zero_grad })
    }
}

/// Where a gradient becomes ready (backward) and a parameter is first used (forward).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// Output layer and final norm.
    Head,
    Mlp(u32),
    Attn(u32),
    Embedding,
}

/// Gradient buffers: dense parameters reduce in DP×CP, routed experts in expert DP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffer {
    Dense,
    Expert,
}

/// One bucket of a model chunk: its parameters on this GPU and the blocks they belong to, in
/// backward order (the last one is where its last gradient becomes ready, and where the forward
/// first needs it).
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    pub buffer: Buffer,
    pub params: u64,
    pub blocks: Vec<Block>,
}

impl Bucket {
    /// The block whose weight gradients complete the bucket.
    pub fn ready(&self) -> Block {
        *self.blocks.last().expect("a bucket holds parameters")
    }
}

/// The buckets of model chunk `chunk` on pipeline stage `stage`, dense buffer first, each
/// buffer's in backward order. `bucket_size`: None for one bucket per buffer.
pub fn buckets(model: &Model, plan: &Plan, stage: u32, chunk: u32, bucket_size: Option<u64>) -> Vec<Bucket> {
    let t = plan.tp as u64;
    let (last_stage, first_stage) = (stage == plan.pp - 1 && chunk == plan.vpp - 1, stage == 0 && chunk == 0);
    let tied = model.tied();
    let dist_opt = plan.dp == DataParallel::DistributedOptimizer;
    // (block, buffer, parameters on this GPU, shared embedding) in backward order.
    let mut tensors: Vec<(Block, Buffer, u64, bool)> = Vec::new();
    let h = model.hidden;
    let gpt = model.family == Family::Gpt;
    if last_stage {
        // Final norm (LayerNorm: weight and bias), replicated over TP.
        tensors.push((Block::Head, Buffer::Dense, if gpt { 2 * h } else { h }, false));
        if !tied || plan.pp > 1 {
            tensors.push((Block::Head, Buffer::Dense, model.vocab * h / t, tied));
        }
    }
    for l in plan.chunk_layers(model.layers, stage, chunk).rev() {
        let (dense, expert) = split(model, l);
        tensors.push((Block::Mlp(l), Buffer::Dense, dense.mlp.0 / t, false));
        tensors.push((Block::Mlp(l), Buffer::Dense, dense.mlp.1 / t, false));
        if expert.0 + expert.1 > 0 {
            let et = t * plan.ep as u64;
            tensors.push((Block::Mlp(l), Buffer::Expert, expert.0 / et, false));
            tensors.push((Block::Mlp(l), Buffer::Expert, expert.1 / et, false));
        }
        tensors.push((Block::Attn(l), Buffer::Dense, dense.attn.0 / t, false));
        tensors.push((Block::Attn(l), Buffer::Dense, dense.attn.1 / t, false));
    }
    if first_stage {
        if gpt {
            // Learned position embeddings, replicated over TP.
            tensors.push((Block::Embedding, Buffer::Dense, model.seq_len * h, false));
        }
        tensors.push((Block::Embedding, Buffer::Dense, model.vocab * h / t, tied && plan.pp > 1));
    }
    let mut out = Vec::new();
    for buffer in [Buffer::Dense, Buffer::Expert] {
        let mut open: Option<Bucket> = None;
        for &(block, _, params, shared) in tensors.iter().filter(|x| x.1 == buffer && x.2 > 0) {
            // The distributed optimizer's layout gives a shared embedding a bucket of its own.
            let alone = shared && dist_opt;
            if alone {
                out.extend(open.take());
            }
            let b = open.get_or_insert_with(|| Bucket { buffer, params: 0, blocks: Vec::new() });
            b.params += params;
            if b.blocks.last() != Some(&block) {
                b.blocks.push(block);
            }
            if alone || bucket_size.is_some_and(|s| b.params >= s) {
                out.extend(open.take());
            }
        }
        out.extend(open);
    }
    out
}

/// One layer's parameters as (first, second) tensors in backward order: attention (output
/// projection, the rest with the norms and biases) and the dense MLP (FC2, FC1 and the rest:
/// norms, biases, router, shared experts); and the routed experts (FC2s, FC1s).
struct LayerTensors {
    attn: (u64, u64),
    mlp: (u64, u64),
}

fn split(model: &Model, l: u32) -> (LayerTensors, (u64, u64)) {
    let h = model.hidden;
    let (total, _) = model.layer_params(l);
    let gpt = model.family == Family::Gpt;
    let proj = match &model.mla {
        Some(x) => model.heads * x.v_head * h,
        None => model.heads * model.head_dim() * h,
    } + if gpt { h } else { 0 };
    let attn_norms = match (gpt, &model.mla) {
        // LayerNorm weight and bias, QKV biases.
        (true, _) => 2 * h + 3 * h,
        (false, Some(x)) => h + x.q_lora + x.kv_lora,
        (false, None) => h,
    };
    let attn = model.attention_matmul_params() + attn_norms + if gpt { h } else { 0 };
    let mats = if gpt { 2 } else { 3 };
    let routed = match &model.moe {
        Some(m) if model.is_moe_layer(l) => m.experts as u64 * mats * h * m.expert_ffn,
        _ => 0,
    };
    let mlp = total - attn - routed;
    // FC2 of the dense MLP (h × ffn); MoE layers keep router and shared experts in one piece.
    let fc2 = if routed == 0 { (h * model.ffn).min(mlp) } else { 0 };
    let expert_fc2 = routed / mats;
    (LayerTensors { attn: (proj, attn - proj), mlp: (fc2, mlp - fc2) }, (expert_fc2, routed - expert_fc2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::training::fixtures;

    fn llama() -> Model {
        Model { name: "l".into(), kv_heads: 8, vocab: 128256, ..fixtures::model(4, 4096, 32, 14336) }
    }

    fn plan(gpus: u32, pp: u32, dp: DataParallel) -> Plan {
        Plan { gbs: 64, seq: 4096, dp, ..fixtures::plan(gpus, 1, pp) }
    }

    #[test]
    fn tensors_add_up_to_the_layer() {
        let m = llama();
        let (d, e) = split(&m, 0);
        assert_eq!(d.attn.0 + d.attn.1 + d.mlp.0 + d.mlp.1 + e.0 + e.1, m.layer_params(0).0);
        // Llama 3 8B: out-proj 4096², QKV 4096·6144 + norm; FC2 4096·14336, FC1 2·4096·14336 + norm.
        assert_eq!(d.attn, (4096 * 4096, 4096 * 6144 + 4096));
        assert_eq!(d.mlp, (4096 * 14336, 2 * 4096 * 14336 + 4096));
    }

    #[test]
    fn buckets_close_at_the_parameter_that_reaches_the_size() {
        // PP 1, DP 8: bucket size max(40 M, 8 M) = 40 M. Backward order: final norm + LM head
        // (525 M) | FC2 58.7 M | FC1 117.4 M | out-proj 16.8 M + QKV 25.2 M (≥ 40 M) | ...
        let m = llama();
        let p = plan(8, 1, DataParallel::DistributedOptimizer);
        let o = Overlap::default().resolve(&p).unwrap();
        assert_eq!(o.bucket_size, 40_000_000);
        let b = buckets(&m, &p, 0, 0, Some(o.bucket_size));
        let sizes: Vec<u64> = b.iter().map(|b| b.params).collect();
        let (attn, fc2, fc1) = (4096 * 4096 + 4096 * 6144 + 4096, 4096 * 14336, 2 * 4096 * 14336 + 4096);
        let mut want = vec![4096 + 128256 * 4096];
        for _ in 0..4 {
            want.extend([fc2, fc1, attn]);
        }
        want.push(128256 * 4096);
        assert_eq!(sizes, want);
        assert_eq!(b[1].ready(), Block::Mlp(3));
        assert_eq!(b[3].ready(), Block::Attn(3));
        assert_eq!(b.last().unwrap().ready(), Block::Embedding);
        // Without bucketing: one bucket of everything, ready at the embedding.
        let one = buckets(&m, &p, 0, 0, None);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].params, want.iter().sum::<u64>());
        // Large DP raises the size: 64 GPUs → max(40 M, 64 M).
        assert_eq!(Overlap::default().resolve(&plan(64, 1, DataParallel::Ddp)).unwrap().bucket_size, 64_000_000);
    }

    #[test]
    fn defaults_follow_the_plan_and_megatron_refuses_the_rest() {
        let mut p = plan(8, 2, DataParallel::DistributedOptimizer);
        let o = Overlap::default().resolve(&p).unwrap();
        // Megatron-LM's flags: all off; the P2P overlap on, but only with interleaving.
        assert_eq!((o.grad_reduce, o.param_gather, o.tp_comm, o.p2p), (false, false, false, false));
        let e = Overlap { param_gather: Some(true), ..Overlap::default() }.resolve(&p).unwrap_err();
        assert!(e.to_string().contains("--overlap-grad-reduce"), "{e}");
        let both = Overlap { grad_reduce: Some(true), param_gather: Some(true), ..Overlap::default() };
        assert!(both.resolve(&p).unwrap().param_gather);
        p.vpp = 2;
        assert!(Overlap::default().resolve(&p).unwrap().p2p);
        let e = Overlap { p2p: Some(false), ..Overlap::default() }.resolve(&p).unwrap_err();
        assert!(e.to_string().contains("PP > 2"), "{e}");
        p.dp = DataParallel::Ddp;
        assert!(!Overlap::default().resolve(&p).unwrap().param_gather);
        let e = Overlap { param_gather: Some(true), ..Overlap::default() }.resolve(&p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "overlap: param_gather: overlapping the parameter all-gather needs the distributed optimizer"
        );
        let e = Overlap { tp_comm: Some(true), ..Overlap::default() }.resolve(&p).unwrap_err();
        assert!(e.to_string().contains("sequence parallelism"), "{e}");
        let mut across = p.clone();
        (across.sp, across.tp, across.gpus_per_server) = (true, 16, 8);
        let e = Overlap { tp_comm: Some(true), ..Overlap::default() }.resolve(&across).unwrap_err();
        assert_eq!(
            e.to_string(),
            "overlap: tp_comm: Transformer Engine's userbuffers need each TP group inside one server: TP 16 spans servers of 8 GPUs"
        );
        across.gpus_per_server = 16;
        assert!(Overlap { tp_comm: Some(true), ..Overlap::default() }.resolve(&across).unwrap().tp_comm);
        let e = Overlap { gather_at_zero_grad: Some(true), ..Overlap::default() }.resolve(&p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "overlap: gather_at_zero_grad: dispatching the first gather at zero_grad needs param_gather"
        );
    }
}
