//! Memory per GPU: weights, gradients and optimizer state (megatron.md §3, bf16 parameters with
//! fp32 main gradients: 18 B/parameter replicated, 6 + 12/d with the distributed optimizer;
//! ZeRO-1/2/3 as in the ZeRO paper: 4 + 12/d, 2 + 14/d, 16/d), activations (Korthikanti et al.
//! §4, bytes per layer per micro-batch) and what a real process holds beside its tensors.
//!
//! Each stage's GPUs hold their own stage's tensors; the plan needs what its largest stage needs.
//!
//! Activations: the most layer micro-batches a stage holds at once in its schedule
//! ([`generate::schedule`]), each chunk micro-batch counting its chunk's layers (chunks differ
//! with `--account-for-*-in-pipeline-split`). With equal chunks that is the closed form: with
//! 1F1B stage s keeps min(p − s, m) micro-batches of its layers in flight; interleaved (v chunks)
//! min(2(p − s − 1) + (v − 1)p + 1, m·v) chunk micro-batches of L_s/v layers each (Megatron-Core's
//! warm-up count plus the one in the steady state), which for stage 0 is L_0·(p + (p − 1)/v).
//!
//! Headroom, each its own line of the report:
//! - CUDA context and loaded kernels, [`CUDA_CONTEXT_GB`] per process.
//! - NCCL's buffers: per communicator the GPU uses (TP, CP, DP, PP, EP, expert DP, and the
//!   embedding group of the first and last stage), [`NCCL_CHANNELS`] channels of one
//!   NCCL_BUFFSIZE (4 MiB, NCCL's default) buffer each ([`NCCL_COMMUNICATOR_BYTES`]).
//! - The caching allocator's fragmentation (reserved but unallocated), [`FRAGMENTATION`] of the
//!   tensors' bytes.

use serde::Serialize;

use super::generate::{self, stage_params};
use super::model::Model;
use super::plan::{DataParallel, Plan, Recompute};

/// A CUDA context with its kernels loaded, GB. PyTorch measured 0.29 GB with CUDA's lazy module
/// loading and 0.67 GB without (pytorch/pytorch#86509); a training process also loads cuBLAS,
/// cuDNN, NCCL and fused kernels, so the middle of that range.
pub const CUDA_CONTEXT_GB: f64 = 0.5;

/// Channels NCCL opens per communicator: NCCL_MAX_NCHANNELS's default (MAXCHANNELS, 32).
pub const NCCL_CHANNELS: f64 = 32.0;

/// NCCL_BUFFSIZE's default: the Simple protocol's buffer per channel, 4 MiB (NCCL's
/// environment-variable documentation).
pub const NCCL_BUFFSIZE: f64 = 4.0 * 1024.0 * 1024.0;

/// Bytes of NCCL buffers per communicator.
pub const NCCL_COMMUNICATOR_BYTES: f64 = NCCL_CHANNELS * NCCL_BUFFSIZE;

/// Fraction of tensor bytes the PyTorch caching allocator holds reserved but unallocated: it
/// rounds blocks up (to 512 B, and large ones within 2 MiB–20 MiB segments) and keeps freed
/// blocks cached, so reserved exceeds allocated. An assumption, not a measurement: 5 %, below
/// the extreme cases of the ZeRO paper (§6.3: OOM with over 30 % of memory free).
pub const FRAGMENTATION: f64 = 0.05;

/// Bytes per parameter of the weights as trained: bf16.
pub const WEIGHT_BYTES: f64 = 2.0;
/// Bytes per parameter of Adam's state in mixed precision: fp32 main weights, momentum and
/// variance (the gradients' 4 B are not state: the ZeRO paper's K = 12).
pub const OPTIMIZER_BYTES: f64 = 12.0;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Memory {
    pub params_gb: f64,
    pub grads_and_optimizer_gb: f64,
    pub activations_gb: f64,
    /// CUDA context and loaded kernels.
    pub cuda_context_gb: f64,
    /// NCCL's communication buffers, all communicators of the GPU.
    pub nccl_buffers_gb: f64,
    /// Allocator fragmentation: reserved but not allocated.
    pub fragmentation_gb: f64,
    pub total_gb: f64,
}

const GB: f64 = 1e9;

/// The memory the plan needs: its largest stage's ([`stage_memory`]).
pub fn memory(model: &Model, plan: &Plan, flash_attention: bool) -> Memory {
    largest((0..plan.pp).map(|s| stage_memory(model, plan, flash_attention, s)))
}

/// The largest of the stages' memories (the first of equals).
pub fn largest(stages: impl IntoIterator<Item = Memory>) -> Memory {
    stages.into_iter().reduce(|a, b| if b.total_gb > a.total_gb { b } else { a }).expect("a plan has a stage")
}

/// Memory per GPU of pipeline stage `stage`.
pub fn stage_memory(model: &Model, plan: &Plan, flash_attention: bool, stage: u32) -> Memory {
    let d = (plan.dp_size() * plan.cp) as f64;
    let (params, _) = stage_params(model, plan, stage);
    let n = params as f64;
    let (weights, state) = match plan.dp {
        DataParallel::Ddp => (WEIGHT_BYTES, 4.0 + OPTIMIZER_BYTES),
        DataParallel::DistributedOptimizer => (WEIGHT_BYTES, 4.0 + OPTIMIZER_BYTES / d),
        DataParallel::Zero1 => (WEIGHT_BYTES, 2.0 + OPTIMIZER_BYTES / d),
        DataParallel::Zero2 => (WEIGHT_BYTES, (2.0 + OPTIMIZER_BYTES) / d),
        DataParallel::Zero3 => (WEIGHT_BYTES / d, (2.0 + OPTIMIZER_BYTES) / d),
    };
    let activations =
        layer_activation_bytes(model, plan, flash_attention) * in_flight_layers(plan, model.layers, stage) as f64;
    let (pg, og, ag) = (n * weights / GB, n * state / GB, activations / GB);
    let nccl = communicators(model, plan) as f64 * NCCL_COMMUNICATOR_BYTES / GB;
    let fragmentation = FRAGMENTATION * (pg + og + ag);
    Memory {
        params_gb: pg,
        grads_and_optimizer_gb: og,
        activations_gb: ag,
        cuda_context_gb: CUDA_CONTEXT_GB,
        nccl_buffers_gb: nccl,
        fragmentation_gb: fragmentation,
        total_gb: pg + og + ag + CUDA_CONTEXT_GB + nccl + fragmentation,
    }
}

/// Activation bytes of one layer for one micro-batch (Korthikanti et al. Table 2, with GQA's
/// smaller K and V and flash attention's missing scores).
fn layer_activation_bytes(model: &Model, plan: &Plan, flash_attention: bool) -> f64 {
    let (s, b, h, a, t) =
        ((plan.seq / plan.cp as u64) as f64, plan.mbs as f64, model.hidden as f64, model.heads as f64, plan.tp as f64);
    let kv = model.kv_heads as f64 / model.heads as f64;
    // Flash attention keeps no s×s scores.
    let scores = if flash_attention { 0.0 } else { 5.0 * a * s / h };
    // K and V are 2 of the 11·s·b·h attention activation bytes; GQA shrinks them by g/a.
    let attn_kv = 2.0 * kv;
    let per_layer = match (plan.recompute, plan.sp) {
        (Recompute::Full, sp) => 2.0 * s * b * h / if sp { t } else { 1.0 },
        (Recompute::Selective, true) => (32.0 + attn_kv) * s * b * h / t,
        (Recompute::Selective, false) => s * b * h * (10.0 + (22.0 + attn_kv) / t),
        (Recompute::None, true) => s * b * h * (32.0 + attn_kv + scores) / t,
        (Recompute::None, false) => s * b * h * (10.0 + (22.0 + attn_kv + scores) / t),
    };
    // A MoE layer's MLP activations (19 of the 34·s·b·h, about half) grow with the k experts each
    // token visits and their width relative to the dense FFN.
    let moe_factor =
        model.moe.as_ref().map_or(1.0, |m| 1.0 + m.topk as f64 * m.expert_ffn as f64 / (2.0 * model.ffn.max(1) as f64));
    per_layer * moe_factor
}

/// The most layer micro-batches (a micro-batch's activations of one layer) stage `stage` holds
/// at once: forwards add their chunk's layers, backwards free them. Warm-up only adds and the
/// cool-down only frees, so the peak is at the end of the warm-up or just after a steady-state
/// forward; the steady state repeats every p·v steps (each round of p·v forwards or backwards
/// visits every chunk p times), so one period of it is enough.
pub fn in_flight_layers(plan: &Plan, layers: u32, stage: u32) -> u64 {
    let (p, v, m) = (plan.pp, plan.vpp, plan.micro_batches());
    let len: Vec<u64> = (0..v).map(|c| plan.chunk_layers(layers, stage, c).len() as u64).collect();
    let round: u64 = len.iter().sum::<u64>() * p as u64;
    // Layers of the first k forwards (backwards run the chunks in reverse).
    let done = |k: u32, forward: bool| -> u64 {
        let (full, part) = (k / (p * v), k % (p * v));
        let chunk = |c: u32| len[if forward { c } else { v - 1 - c } as usize];
        full as u64 * round + (0..v).map(|c| chunk(c) * (part.saturating_sub(c * p)).min(p) as u64).sum::<u64>()
    };
    let total = m * v;
    let warmup = generate::warmup(stage, p, m, v);
    let steady = (total - warmup).min(p * v);
    (0..steady).map(|i| done(warmup + i + 1, true) - done(i, false)).fold(done(warmup, true), u64::max)
}

/// NCCL communicators of the busiest GPU: one per parallel group of more than one rank it
/// communicates in, and the embedding group (first and last stage) with PP > 1.
pub fn communicators(model: &Model, plan: &Plan) -> u32 {
    let dp = plan.dp_size();
    let expert_dp = if model.moe.is_some() { dp / plan.ep.max(1) } else { 1 };
    let groups = [plan.tp, plan.cp, dp * plan.cp, plan.pp, plan.ep, expert_dp];
    groups.iter().filter(|&&n| n > 1).count() as u32 + u32::from(plan.pp > 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::training::fixtures;
    use crate::training::model::llama3_70b;
    use crate::training::plan::AccountFor;

    fn plan(gpus: u32, tp: u32, pp: u32, vpp: u32, gbs: u32) -> Plan {
        let dp = DataParallel::DistributedOptimizer;
        Plan { vpp, gbs, seq: 8192, sp: true, dp, ..fixtures::plan(gpus, tp, pp) }
    }

    #[test]
    fn equal_chunks_in_flight_match_the_closed_form() {
        // 32 layers, chunks of 2: 2(p − s − 1) + (v − 1)p + 1 chunk micro-batches interleaved,
        // L·(p + (p − 1)/v) micro-batch-layers for stage 0; 1F1B p − s micro-batches of L/p.
        let p = plan(128, 4, 4, 4, 128);
        assert_eq!(in_flight_layers(&p, 32, 0), (2 * 3 + 3 * 4 + 1) * 2);
        assert_eq!(in_flight_layers(&p, 32, 3), (3 * 4 + 1) * 2);
        let q = plan(128, 4, 4, 1, 128);
        assert_eq!((in_flight_layers(&q, 32, 0), in_flight_layers(&q, 32, 3)), (4 * 8, 8));
        // Fewer micro-batches than the warm-up: all of them.
        assert_eq!(in_flight_layers(&plan(128, 4, 4, 1, 16), 32, 0), 2 * 8);
        assert_eq!(in_flight_layers(&plan(128, 4, 4, 4, 32), 32, 0), 4 * 8);
    }

    #[test]
    fn unequal_chunks_count_their_own_layers() {
        // 2 layers + embedding + loss on PP 2 × VPP 2, m = 2: chunks of 1 split layer; stage 0's
        // chunk 0 is the embedding alone (0 layers), chunk 1 layer 3. Warm-up 2·1 + 1·2 = 4 = m·v:
        // all four chunk micro-batches, 2·0 + 2·1 = 2 layers. Stage 1: chunk 0 = layer 0,
        // chunk 1 = loss alone; warm-up 2 (chunk 0 twice), then F(chunk 1) B(chunk 1) ...: peak 2.
        let mut p = plan(16, 4, 2, 2, 4);
        p.account_for = AccountFor { embedding: true, loss: true };
        assert_eq!(p.micro_batches(), 2);
        let m = 2;
        let chunks = |s| (0..2).map(|c| p.chunk_layers(m, s, c)).collect::<Vec<_>>();
        assert_eq!((chunks(0), chunks(1)), (vec![0..0, 1..2], vec![0..1, 2..2]));
        assert_eq!((in_flight_layers(&p, m, 0), in_flight_layers(&p, m, 1)), (2, 2));
    }

    #[test]
    fn llama3_70b_tp4_pp4_vpp4_from_the_formulas() {
        // 1024 GPUs: DP 64, 16 micro-batches; stage 0, which holds the most activations, 20
        // layers and the embedding (the last stage: 20 layers, the output layer and the final
        // norm).
        let (m, p) = (llama3_70b(), plan(1024, 4, 4, 4, 1024));
        let mem = memory(&m, &p, true);
        assert_eq!(mem, stage_memory(&m, &p, true, 0));
        let n = (20 * m.layer_params(0).0 / 4 + 128256 * 8192 / 4) as f64;
        assert!((mem.params_gb - 2.0 * n / 1e9).abs() < 1e-9);
        assert!((mem.grads_and_optimizer_gb - (4.0 + 12.0 / 64.0) * n / 1e9).abs() < 1e-9);
        // SP, flash attention, GQA 8/64: (32 + 2/8)·s·b·h/t per layer; 20 layers × (4 + 3/4).
        let act = (32.0 + 0.25) * 8192.0 * 8192.0 / 4.0 * 20.0 * 4.75;
        assert!((mem.activations_gb - act / 1e9).abs() < 1e-9);
        // TP, DP, PP and the embedding group: four communicators of 32 × 4 MiB.
        assert_eq!(communicators(&m, &p), 4);
        assert!((mem.nccl_buffers_gb - 4.0 * 32.0 * 4194304.0 / 1e9).abs() < 1e-12);
        assert_eq!(mem.cuda_context_gb, 0.5);
        let tensors = mem.params_gb + mem.grads_and_optimizer_gb + mem.activations_gb;
        assert!((mem.fragmentation_gb - 0.05 * tensors).abs() < 1e-12);
        assert!((mem.total_gb - (tensors * 1.05 + 0.5 + mem.nccl_buffers_gb)).abs() < 1e-9);
        // The tensors alone nearly fill 80 GB; with the headroom a real run has, they do not fit.
        assert!(tensors < 80.0 && mem.total_gb > 80.0, "{tensors} {}", mem.total_gb);
    }

    #[test]
    fn uneven_stages_put_the_peak_where_layers_times_in_flight_is_largest() {
        // 80 layers as 8 + 32 + 32 + 8 over PP 4.
        let m = llama3_70b();
        let mut p = plan(128, 4, 4, 1, 256);
        (p.first_stage_layers, p.last_stage_layers) = (Some(8), Some(8));
        let per_layer = (32.0 + 0.25) * 8192.0 * 8192.0 / 4.0;
        // Stage 0: 8 × 4; stage 1: 32 × 3 — the middle stage holds the most.
        let mem = memory(&m, &p, true);
        assert!((mem.activations_gb - per_layer * 32.0 * 3.0 / 1e9).abs() < 1e-9);
    }
}
