//! Memory per GPU: weights, gradients and optimizer state (megatron.md §3, bf16 parameters with
//! fp32 main gradients: 18 B/parameter replicated, 6 + 12/d with the distributed optimizer;
//! ZeRO-1/2/3 as in the ZeRO paper: 4 + 12/d, 2 + 14/d, 16/d) and activations (Korthikanti et al.
//! §4, bytes per layer per micro-batch), for the most loaded stage (the first: with 1F1B it
//! holds p micro-batches in flight; interleaving multiplies that by 1 + (p−1)/(p·v)).

use serde::Serialize;

use super::generate::stage_params;
use super::model::Model;
use super::plan::{DataParallel, Plan, Recompute};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Memory {
    pub params_gb: f64,
    pub grads_and_optimizer_gb: f64,
    pub activations_gb: f64,
    pub total_gb: f64,
}

pub fn memory(model: &Model, plan: &Plan, flash_attention: bool) -> Memory {
    let d = (plan.dp_size() * plan.cp) as f64;
    let (params, _) = (0..plan.pp).map(|s| stage_params(model, plan, s)).max().unwrap_or((0, 0));
    let n = params as f64;
    let (weights, state) = match plan.dp {
        DataParallel::Ddp => (2.0, 16.0),
        DataParallel::DistributedOptimizer => (2.0, 4.0 + 12.0 / d),
        DataParallel::Zero1 => (2.0, 2.0 + 12.0 / d),
        DataParallel::Zero2 => (2.0, 14.0 / d),
        DataParallel::Zero3 => (2.0 / d, 14.0 / d),
    };
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
    // The first stage holds the most micro-batches in flight.
    let layers_per_stage = (0..plan.vpp).map(|c| plan.chunk_layers(model.layers, 0, c).len()).sum::<usize>() as f64;
    let p = plan.pp as f64;
    let interleave = if plan.vpp > 1 { 1.0 + (p - 1.0) / (p * plan.vpp as f64) } else { 1.0 };
    let in_flight = p.min(plan.micro_batches() as f64) * interleave;
    let activations = per_layer * moe_factor * layers_per_stage * in_flight;
    let gb = 1e9;
    let (pg, og, ag) = (n * weights / gb, n * state / gb, activations / gb);
    Memory { params_gb: pg, grads_and_optimizer_gb: og, activations_gb: ag, total_gb: pg + og + ag }
}
