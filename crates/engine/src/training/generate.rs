//! Megatron-Core training iteration as IR: one rank class per pipeline stage, each running its
//! 1F1B (or interleaved 1F1B) schedule with the communication Megatron issues
//! (shared/reference/megatron.md §4–§8):
//!
//! - TP, per layer and micro-batch: without SP an all-reduce of T = 2·b·s·h bytes after the
//!   attention and the MLP, forward and backward; with SP all-gather before and reduce-scatter
//!   after each block forward, and in backward an all-gather of the output gradient, a
//!   reduce-scatter of the input gradient and an all-gather re-gathering the input for the
//!   weight gradient. Backward TP collectives overlap the weight-gradient GEMMs. The embedding
//!   reduce-scatters (all-reduces without SP) its output, so with SP its backward gathers the
//!   gradient; the LM head is a column-parallel linear (gather before, reduce-scatter and
//!   re-gather in backward with SP; all-reduce of its input gradient without), followed by 3
//!   all-reduces of 4·b·s bytes for the vocabulary-parallel cross-entropy.
//! - PP: the activation (forward) and its gradient (backward), 2·b·s·h/(t if SP) bytes per
//!   micro-batch and stage boundary, as send/recv pairs; sends never block compute.
//! - CP: keys and values of the layer, all-gathered in CP forward; gathered again and their
//!   gradients reduce-scattered backward.
//! - EP (MoE layers, all-to-all dispatcher, which works on the sequence-sharded tokens, so no
//!   TP gather around it; MoE with TP needs SP, as in Megatron-Core): the token counts per
//!   expert gathered (2·e·E·t bytes in TP, as AICB writes it), dispatch and combine all-to-alls
//!   of 2·n_tok·k·h bytes (n_tok = b·s/(t·cp)), with all-gather / reduce-scatter of the received
//!   tokens in expert-TP when t > 1; mirrored in backward.
//! - DP: each layer's gradients reduce (all-reduce with DDP, reduce-scatter with the distributed
//!   optimizer or ZeRO) as soon as the last micro-batch's backward of that layer is done
//!   (`--overlap-grad-reduce`, one bucket per layer); then the optimizer step; then the
//!   all-gather of updated parameters (distributed optimizer, ZeRO-1/2; dense parameters in DP,
//!   experts' in DP_EP). ZeRO-3's per-layer parameter gathers are not issued yet.
//! - Tied embeddings with PP > 1: the embedding gradient all-reduced between first and last stage.
//! - Full recompute replays each layer's forward, collectives included, before its backward.

use super::costs::{BlockTimes, Costs};
use super::hardware::Accelerator;
use super::model::{Family, Model};
use super::plan::{DataParallel, Plan, Recompute};
use crate::error::Result;
use crate::layout::{Axis, Layout};
use crate::workload::{Collective, Group, GroupId, Membership, Op, OpKind, Peer, Phase, Program, Workload};

pub const TP: GroupId = 0;
pub const CP: GroupId = 1;
pub const EP: GroupId = 2;
pub const DP: GroupId = 3;
pub const DP_EP: GroupId = 4;
pub const PP: GroupId = 5;
pub const EMB: GroupId = 6;

/// Row labels the ops report under.
pub const ROWS: [&str; 10] = [
    "embedding",
    "attention",
    "mlp",
    "moe",
    "lm_head",
    "pipeline",
    "gradient_reduce",
    "optimizer",
    "param_gather",
    "cross_entropy",
];
pub(super) const R_EMB: u32 = 0;
pub(super) const R_ATTN: u32 = 1;
pub(super) const R_MLP: u32 = 2;
pub(super) const R_MOE: u32 = 3;
pub(super) const R_HEAD: u32 = 4;
pub(super) const R_PIPE: u32 = 5;
pub(super) const R_GRAD: u32 = 6;
pub(super) const R_OPT: u32 = 7;
pub(super) const R_GATHER: u32 = 8;
pub(super) const R_CE: u32 = 9;
/// `Generated::op_layer` of ops outside the transformer layers.
pub const NO_LAYER: u32 = u32::MAX;

/// One step of a stage's schedule: forward or backward of a micro-batch through a model chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub forward: bool,
    pub micro_batch: u32,
    pub chunk: u32,
}

/// Megatron's (interleaved) 1F1B order for `stage` of `p`, with `m` micro-batches and `v` chunks.
pub fn schedule(stage: u32, p: u32, m: u32, v: u32) -> Vec<Step> {
    let total = m * v;
    // Virtual micro-batch k → (micro-batch, chunk): groups of p micro-batches go through each
    // chunk in turn (forward chunks ascending, backward descending).
    let fwd = |k: u32| Step { forward: true, micro_batch: (k / (p * v)) * p + k % p, chunk: (k / p) % v };
    let bwd = |k: u32| Step { forward: false, micro_batch: (k / (p * v)) * p + k % p, chunk: v - 1 - (k / p) % v };
    let warmup = if v == 1 { (p - 1 - stage).min(m) } else { ((p - stage - 1) * 2 + (v - 1) * p).min(total) };
    let mut steps = Vec::with_capacity(2 * total as usize);
    steps.extend((0..warmup).map(fwd));
    for i in 0..total - warmup {
        steps.push(fwd(warmup + i));
        steps.push(bwd(i));
    }
    steps.extend((total - warmup..total).map(bwd));
    steps
}

struct Builder {
    prog: Program,
    /// Ops the next compute waits for.
    gate: Vec<u32>,
    /// The transformer layer the ops now issued belong to ([`NO_LAYER`] outside layers).
    layer: u32,
    /// The layer of each op.
    op_layer: Vec<u32>,
}

impl Builder {
    fn new() -> Builder {
        Builder { prog: Program::default(), gate: Vec::new(), layer: NO_LAYER, op_layer: Vec::new() }
    }

    fn push(&mut self, kind: OpKind, deps: Vec<u32>, row: u32, phase: Phase) -> u32 {
        self.op_layer.push(self.layer);
        self.prog.push(Op::new(kind, deps, row, phase))
    }

    /// Compute after the gate; it becomes the gate.
    fn compute(&mut self, ns: f64, row: u32, phase: Phase) -> u32 {
        let deps = std::mem::take(&mut self.gate);
        let id = self.push(OpKind::Compute { ns }, deps, row, phase);
        self.gate = vec![id];
        id
    }

    /// Receive from the pipeline neighbour `offset` stages away, posted when the stage gets here;
    /// the next compute waits for it.
    fn recv(&mut self, offset: i32, bytes: u64) {
        let deps = self.gate.clone();
        let r = self.push(OpKind::Recv { peer: Peer { group: PP, offset }, bytes }, deps, R_PIPE, Phase::Other);
        self.gate.push(r);
    }

    /// Send to the pipeline neighbour `offset` stages away; nothing waits for it.
    fn send(&mut self, offset: i32, bytes: u64) {
        let deps = self.gate.clone();
        self.push(OpKind::Send { peer: Peer { group: PP, offset }, bytes }, deps, R_PIPE, Phase::Other);
    }

    /// A collective after the gate. Blocking ones become the gate.
    fn coll(&mut self, c: Collective, group: GroupId, bytes: u64, row: u32, phase: Phase, blocking: bool) -> u32 {
        let deps = self.gate.clone();
        let id = self.push(OpKind::Collective { collective: c, group, bytes }, deps, row, phase);
        if blocking {
            self.gate = vec![id];
        }
        id
    }
}

/// Everything the report needs besides the execution.
pub struct Generated {
    pub workload: Workload,
    /// Model FLOPs of one iteration (Megatron's MFU convention), all GPUs together.
    pub model_flops: f64,
    /// Per stage: each schedule step and the range of op ids it issued (the ops after the last
    /// step are the gradient reductions of the embedding, the optimizer step and the gather).
    pub steps: Vec<Vec<(Step, std::ops::Range<u32>)>>,
    /// Per stage: the transformer layer of each op ([`NO_LAYER`] outside the layers).
    pub op_layer: Vec<Vec<u32>>,
    /// (pipeline stage, accelerator type) of each rank class: one class per stage, or with a
    /// mix of types one per (stage, type) present ([`super::mix`]).
    pub classes: Vec<(u32, u32)>,
}

pub fn generate(model: &Model, plan: &Plan, acc: &Accelerator, flash_attention: bool) -> Result<Generated> {
    generate_mixed(model, plan, &[acc], &[], flash_attention)
}

/// [`generate`] on accelerators of several types: rank r runs on `types[rank_type[r]]` (type 0
/// where `rank_type` is empty). Ranks of one stage and type form a rank class; classes are
/// numbered stage by stage, types in order within a stage.
pub fn generate_mixed(
    model: &Model,
    plan: &Plan,
    types: &[&Accelerator],
    rank_type: &[u32],
    flash_attention: bool,
) -> Result<Generated> {
    plan.validate(model)?;
    for acc in types {
        acc.check()?;
    }
    let (t, p, v, cp, e) = (plan.tp, plan.pp, plan.vpp, plan.cp, plan.ep);
    let dp = plan.dp_size();
    let m = plan.micro_batches();
    let layout = plan.layout();
    let dims = |axes: &[Axis]| Membership::Dims(layout.mask(axes));
    let world = plan.gpus;
    // Embedding group: each first-stage rank with its last-stage peer (tied embeddings).
    let stride = world / p;
    let emb = Membership::Explicit((0..stride).map(|r| vec![r, r + (p - 1) * stride]).collect());
    let groups = vec![
        Group { name: "TP".into(), members: dims(&[Axis::Tp]) },
        Group { name: "CP".into(), members: dims(&[Axis::Cp]) },
        Group { name: "EP".into(), members: dims(&[Axis::Ep]) },
        Group { name: "DP".into(), members: dims(&[Axis::Cp, Axis::Ep, Axis::DpEp]) },
        Group { name: "DP_EP".into(), members: dims(&[Axis::Cp, Axis::DpEp]) },
        Group { name: "PP".into(), members: dims(&[Axis::Pp]) },
        Group { name: "EMB".into(), members: emb },
    ];
    let type_of = |r: u32| rank_type.get(r as usize).copied().unwrap_or(0);
    let mut present = vec![false; (p as usize) * types.len()];
    for r in 0..world {
        present[layout.coord(r, Axis::Pp) as usize * types.len() + type_of(r) as usize] = true;
    }
    let classes: Vec<(u32, u32)> = (0..p)
        .flat_map(|s| (0..types.len() as u32).map(move |ty| (s, ty)))
        .filter(|&(s, ty)| present[s as usize * types.len() + ty as usize])
        .collect();
    let b = plan.mbs as u64;
    let s = plan.seq / cp as u64;
    let h = model.hidden;
    let act = 2 * b * s * h; // T: one bf16 activation of the micro-batch
    let p2p = if plan.sp { act / t as u64 } else { act };
    let tied = model.family == Family::Gpt && p > 1;

    let mut programs = Vec::with_capacity(classes.len());
    let mut all_steps = Vec::with_capacity(classes.len());
    let mut op_layer = Vec::with_capacity(classes.len());
    for &(stage, ty) in &classes {
        let costs = Costs { acc: types[ty as usize], model, plan, flash_attention };
        let dense = costs.layer(false);
        let moe_times = model.moe.as_ref().map(|_| costs.layer(true));
        let (emb_f, emb_b) = costs.embedding();
        let (head_f, head_b) = costs.head();
        let mut bld = Builder::new();
        let mut spans = Vec::new();
        let chunk_layers = |c: u32| plan.chunk_layers(model.layers, stage, c);
        let first = |c: u32| stage == 0 && c == 0;
        let last = |c: u32| stage == p - 1 && c == v - 1;
        let steps = schedule(stage, p, m, v);
        // Backward steps left per chunk: the last one of a chunk triggers its gradient reduction.
        let mut bwd_left = vec![m; v as usize];
        let mut grad_reduces: Vec<u32> = Vec::new();
        for st in steps {
            let c = st.chunk;
            let begin = bld.prog.ops.len() as u32;
            if st.forward {
                if !first(c) {
                    bld.recv(-1, p2p);
                } else {
                    bld.compute(emb_f, R_EMB, Phase::Forward);
                    if t > 1 {
                        let c = if plan.sp { Collective::ReduceScatter } else { Collective::AllReduce };
                        bld.coll(c, TP, act, R_EMB, Phase::Forward, true);
                    }
                }
                for l in chunk_layers(c) {
                    let bt = if model.is_moe_layer(l) { moe_times.unwrap_or(dense) } else { dense };
                    bld.layer = l;
                    forward_layer(&mut bld, model, plan, &bt, model.is_moe_layer(l), act);
                    bld.layer = NO_LAYER;
                }
                if last(c) {
                    if t > 1 && plan.sp {
                        bld.coll(Collective::AllGather, TP, act, R_HEAD, Phase::Forward, true);
                    }
                    bld.compute(head_f, R_HEAD, Phase::Forward);
                    if t > 1 {
                        // Cross-entropy over the vocabulary shards: max, sum of exponentials, target logit.
                        for _ in 0..3 {
                            bld.coll(Collective::AllReduce, TP, 4 * b * s, R_CE, Phase::Forward, true);
                        }
                    }
                } else {
                    bld.send(1, p2p);
                }
            } else {
                if !last(c) {
                    bld.recv(1, p2p);
                } else {
                    // The LM head is a column-parallel linear: its input gradient is reduced (and
                    // its input re-gathered with SP) like the first linear of a block.
                    backward_linear(&mut bld, plan, head_b / 2.0, head_b / 2.0, act, R_HEAD, false);
                }
                bwd_left[c as usize] -= 1;
                let last_mb = bwd_left[c as usize] == 0;
                for l in chunk_layers(c).rev() {
                    let moe = model.is_moe_layer(l);
                    let bt = if moe { moe_times.unwrap_or(dense) } else { dense };
                    bld.layer = l;
                    if plan.recompute == Recompute::Full {
                        forward_layer(&mut bld, model, plan, &bt, moe, act);
                    }
                    backward_layer(&mut bld, model, plan, &bt, moe, act);
                    if last_mb {
                        grad_reduces.extend(reduce_layer_grads(&mut bld, model, plan, l));
                    }
                    bld.layer = NO_LAYER;
                }
                if !first(c) {
                    bld.send(-1, p2p);
                } else {
                    if t > 1 && plan.sp {
                        // The backward of the forward reduce-scatter: gather the output gradient.
                        bld.coll(Collective::AllGather, TP, act, R_EMB, Phase::InputGrad, true);
                    }
                    bld.compute(emb_b, R_EMB, Phase::WeightGrad);
                }
            }
            spans.push((st, begin..bld.prog.ops.len() as u32));
        }
        // Embedding gradients: tied embeddings meet between first and last stage, then reduce in DP.
        let has_emb = stage == 0 || stage == p - 1;
        if has_emb {
            let emb_params = model.vocab * h / t as u64;
            if tied {
                grad_reduces.push(bld.coll(
                    Collective::AllReduce,
                    EMB,
                    4 * emb_params,
                    R_GRAD,
                    Phase::WeightGrad,
                    false,
                ));
            }
            if dp > 1 || cp > 1 {
                let c = if plan.dp == DataParallel::Ddp { Collective::AllReduce } else { Collective::ReduceScatter };
                grad_reduces.push(bld.coll(c, DP, 4 * emb_params, R_GRAD, Phase::WeightGrad, false));
            }
        }
        // Optimizer step on this GPU's share, after every gradient reduction.
        let (params, _) = stage_params(model, plan, stage);
        let shard = match plan.dp {
            DataParallel::Ddp => params as f64,
            _ => params as f64 / (dp * cp) as f64,
        };
        bld.gate.extend(grad_reduces);
        bld.compute(costs.optimizer(shard), R_OPT, Phase::Other);
        if plan.dp != DataParallel::Ddp && plan.dp != DataParallel::Zero3 {
            // Updated parameters: dense ones from all of DP, experts' from their expert-DP group.
            let expert = stage_params(model, plan, stage).1;
            if dp * cp > 1 {
                bld.coll(Collective::AllGather, DP, 2 * (params - expert), R_GATHER, Phase::Other, true);
            }
            if expert > 0 && dp * cp / e > 1 {
                bld.coll(Collective::AllGather, DP_EP, 2 * expert, R_GATHER, Phase::Other, true);
            }
        }
        programs.push(bld.prog);
        all_steps.push(spans);
        op_layer.push(bld.op_layer);
    }
    let rank_class = (0..world)
        .map(|r| {
            let key = (layout.coord(r, Axis::Pp), type_of(r));
            classes.iter().position(|&c| c == key).unwrap_or(0) as u32
        })
        .collect();
    let model_flops = model_flops(model, plan);
    let workload = Workload {
        layout,
        groups,
        programs,
        class_program: (0..classes.len() as u32).collect(),
        rank_class,
        rows: ROWS.iter().map(|s| s.to_string()).collect(),
    };
    Ok(Generated { workload, model_flops, steps: all_steps, op_layer, classes })
}

/// One dense layer's forward then backward (with its recompute) for one micro-batch on one TP
/// group, as IR: for per-layer timings. Returns the workload and the index of the last forward op.
pub fn single_layer(model: &Model, plan: &Plan, acc: &Accelerator, flash_attention: bool) -> (Workload, u32) {
    let t = plan.tp;
    let layout = Layout::megatron(t, 1, 1, 1, 1);
    let groups = vec![Group { name: "TP".into(), members: Membership::Dims(layout.mask(&[Axis::Tp])) }];
    let costs = Costs { acc, model, plan, flash_attention };
    let bt = costs.layer(false);
    let act = 2 * plan.mbs as u64 * plan.seq * model.hidden;
    let mut bld = Builder::new();
    forward_layer(&mut bld, model, plan, &bt, false, act);
    let fwd_end = bld.prog.ops.len() as u32 - 1;
    if plan.recompute == Recompute::Full {
        forward_layer(&mut bld, model, plan, &bt, false, act);
    }
    backward_layer(&mut bld, model, plan, &bt, false, act);
    let rows = ROWS.iter().map(|s| s.to_string()).collect();
    let w = Workload {
        layout,
        groups,
        programs: vec![bld.prog],
        class_program: vec![0],
        rank_class: vec![0; t as usize],
        rows,
    };
    (w, fwd_end)
}

/// Parameters this GPU holds for `stage` (dense and expert), divided by TP (and EP for experts).
pub fn stage_params(model: &Model, plan: &Plan, stage: u32) -> (u64, u64) {
    let mut dense = 0u64;
    let mut expert = 0u64;
    for c in 0..plan.vpp {
        for l in plan.chunk_layers(model.layers, stage, c) {
            let (d, x) = layer_param_split(model, l);
            dense += d / plan.tp as u64;
            expert += x / (plan.tp * plan.ep) as u64;
        }
    }
    if stage == 0 || stage == plan.pp - 1 {
        dense += model.vocab * model.hidden / plan.tp as u64;
    }
    (dense + expert, expert)
}

/// (dense, routed-expert) parameters of layer `l`.
fn layer_param_split(model: &Model, l: u32) -> (u64, u64) {
    let (total, _) = model.layer_params(l);
    match &model.moe {
        Some(moe) if model.is_moe_layer(l) => {
            let k = if model.family == Family::Gpt { 2 } else { 3 };
            let routed = moe.experts as u64 * k * model.hidden * moe.expert_ffn;
            (total - routed, routed)
        }
        _ => (total, 0),
    }
}

/// Megatron's model FLOPs of one iteration: 3 × forward, forward = 2 × active matmul parameters
/// per token + 4·s·(a·d_head) per layer for attention scores and context + the LM head.
pub fn model_flops(model: &Model, plan: &Plan) -> f64 {
    let tokens = plan.gbs as f64 * plan.seq as f64;
    let mut per_token = 2.0 * model.hidden as f64 * model.vocab as f64;
    for l in 0..model.layers {
        per_token += layer_flops_per_token(model, plan, l);
    }
    3.0 * per_token * tokens
}

/// The part of [`model_flops`] pipeline stage `stage` computes: its layers, and the LM head on
/// the last stage (the embedding lookup has no matmul FLOPs).
pub fn stage_model_flops(model: &Model, plan: &Plan, stage: u32) -> f64 {
    let tokens = plan.gbs as f64 * plan.seq as f64;
    let mut per_token = if stage + 1 == plan.pp { 2.0 * model.hidden as f64 * model.vocab as f64 } else { 0.0 };
    for c in 0..plan.vpp {
        for l in plan.chunk_layers(model.layers, stage, c) {
            per_token += layer_flops_per_token(model, plan, l);
        }
    }
    3.0 * per_token * tokens
}

/// Forward model FLOPs per token of layer `l`: its active matmul parameters twice, and the
/// attention scores and context.
fn layer_flops_per_token(model: &Model, plan: &Plan, l: u32) -> f64 {
    let attn_width = match &model.mla {
        Some(x) => model.heads as f64 * ((x.qk_nope + x.qk_rope + x.v_head) as f64 / 2.0),
        None => (model.heads * model.head_dim()) as f64,
    };
    let (_, active) = model.layer_params(l);
    2.0 * active as f64 + 4.0 * plan.seq as f64 * attn_width
}

fn forward_layer(bld: &mut Builder, model: &Model, plan: &Plan, bt: &BlockTimes, moe: bool, act: u64) {
    let t = plan.tp;
    let tp = t > 1;
    let sp = plan.sp;
    // Attention block.
    if tp && sp {
        bld.coll(Collective::AllGather, TP, act, R_ATTN, Phase::Forward, true);
    }
    if plan.cp > 1 {
        bld.coll(Collective::AllGather, CP, kv_bytes(model, plan), R_ATTN, Phase::Forward, true);
    }
    bld.compute(bt.attn_fwd, R_ATTN, Phase::Forward);
    if tp {
        let c = if sp { Collective::ReduceScatter } else { Collective::AllReduce };
        bld.coll(c, TP, act, R_ATTN, Phase::Forward, true);
    }
    if moe {
        // The all-to-all dispatcher works on the sequence-sharded tokens: no gather around it.
        let (a2a, etp, counts) = moe_bytes(model, plan);
        if tp || plan.ep > 1 {
            bld.coll(Collective::AllGather, TP, counts, R_MOE, Phase::Forward, true);
        }
        if plan.ep > 1 {
            bld.coll(Collective::AllToAll, EP, a2a, R_MOE, Phase::Forward, true);
        }
        if tp {
            bld.coll(Collective::AllGather, TP, etp, R_MOE, Phase::Forward, true);
        }
        bld.compute(bt.mlp_fwd, R_MOE, Phase::Forward);
        if tp {
            bld.coll(Collective::ReduceScatter, TP, etp, R_MOE, Phase::Forward, true);
        }
        if plan.ep > 1 {
            bld.coll(Collective::AllToAll, EP, a2a, R_MOE, Phase::Forward, true);
        }
        return;
    }
    // MLP block.
    if tp && sp {
        bld.coll(Collective::AllGather, TP, act, R_MLP, Phase::Forward, true);
    }
    bld.compute(bt.mlp_fwd, R_MLP, Phase::Forward);
    if tp {
        let c = if sp { Collective::ReduceScatter } else { Collective::AllReduce };
        bld.coll(c, TP, act, R_MLP, Phase::Forward, true);
    }
}

/// Backward of one block (from its row-parallel output back to its column-parallel input):
/// data-gradient compute, its TP collective overlapping the weight-gradient compute; the next
/// block waits for both. `gather_output_grad`: with SP, the block ends in a reduce-scatter whose
/// backward gathers the output gradient first.
fn backward_linear(
    bld: &mut Builder,
    plan: &Plan,
    data_ns: f64,
    weight_ns: f64,
    act: u64,
    row: u32,
    gather_output_grad: bool,
) {
    let tp = plan.tp > 1;
    if tp && plan.sp && gather_output_grad {
        // Output gradient of the row-parallel linear, gathered before the data gradient.
        bld.coll(Collective::AllGather, TP, act, row, Phase::InputGrad, true);
    }
    // With SP the sequence-sharded input is re-gathered for the weight gradient; Megatron issues
    // it before the data-gradient GEMM, so it runs under that GEMM.
    let regather = (tp && plan.sp).then(|| bld.coll(Collective::AllGather, TP, act, row, Phase::WeightGrad, false));
    let d = bld.compute(data_ns, row, Phase::InputGrad);
    let mut next = Vec::new();
    if tp {
        // The input gradient's reduction overlaps the weight-gradient GEMM.
        let c = if plan.sp { Collective::ReduceScatter } else { Collective::AllReduce };
        next.push(bld.coll(c, TP, act, row, Phase::InputGrad, false));
    }
    bld.gate = std::iter::once(d).chain(regather).collect();
    next.push(bld.compute(weight_ns, row, Phase::WeightGrad));
    bld.gate = next;
}

fn backward_layer(bld: &mut Builder, model: &Model, plan: &Plan, bt: &BlockTimes, moe: bool, act: u64) {
    if moe {
        // The dispatcher's collectives mirrored: combine, expert-TP scatter, experts, gather, dispatch.
        let (a2a, etp, _) = moe_bytes(model, plan);
        if plan.ep > 1 {
            bld.coll(Collective::AllToAll, EP, a2a, R_MOE, Phase::InputGrad, true);
        }
        if plan.tp > 1 {
            bld.coll(Collective::AllGather, TP, etp, R_MOE, Phase::InputGrad, true);
        }
        bld.compute(bt.mlp_bwd_data, R_MOE, Phase::InputGrad);
        bld.compute(bt.mlp_bwd_weight, R_MOE, Phase::WeightGrad);
        if plan.tp > 1 {
            bld.coll(Collective::ReduceScatter, TP, etp, R_MOE, Phase::InputGrad, true);
        }
        if plan.ep > 1 {
            bld.coll(Collective::AllToAll, EP, a2a, R_MOE, Phase::InputGrad, true);
        }
    } else {
        backward_linear(bld, plan, bt.mlp_bwd_data, bt.mlp_bwd_weight, act, R_MLP, true);
    }
    if plan.cp > 1 {
        let kv = kv_bytes(model, plan);
        bld.coll(Collective::AllGather, CP, kv, R_ATTN, Phase::InputGrad, true);
        backward_linear(bld, plan, bt.attn_bwd_data, bt.attn_bwd_weight, act, R_ATTN, true);
        bld.coll(Collective::ReduceScatter, CP, kv, R_ATTN, Phase::InputGrad, false);
    } else {
        backward_linear(bld, plan, bt.attn_bwd_data, bt.attn_bwd_weight, act, R_ATTN, true);
    }
}

/// Issue the gradient reduction of layer `l` (non-blocking). Returns the ops issued.
fn reduce_layer_grads(bld: &mut Builder, model: &Model, plan: &Plan, l: u32) -> Vec<u32> {
    let (dense, expert) = layer_param_split(model, l);
    let c = if plan.dp == DataParallel::Ddp { Collective::AllReduce } else { Collective::ReduceScatter };
    let mut ops = Vec::new();
    if plan.dp_size() * plan.cp > 1 {
        ops.push(bld.coll(c, DP, 4 * dense / plan.tp as u64, R_GRAD, Phase::WeightGrad, false));
    }
    if expert > 0 && plan.dp_size() * plan.cp / plan.ep > 1 {
        ops.push(bld.coll(c, DP_EP, 4 * expert / (plan.tp * plan.ep) as u64, R_GRAD, Phase::WeightGrad, false));
    }
    ops
}

/// Bytes of the keys and values all-gathered in CP for one layer (bf16, TP-sharded heads).
fn kv_bytes(model: &Model, plan: &Plan) -> u64 {
    let kv_width = match &model.mla {
        Some(x) => x.kv_lora + x.qk_rope,
        None => 2 * model.kv_heads * model.head_dim() / plan.tp as u64,
    };
    2 * plan.mbs as u64 * plan.seq * kv_width
}

/// (dispatch/combine all-to-all bytes, expert-TP gather bytes, token-count gather bytes) of one
/// MoE layer. The token counts per expert are gathered across TP×EP; a SimAI file can only say
/// TP, so (as AICB) they are 2·e·E·t bytes gathered in TP.
fn moe_bytes(model: &Model, plan: &Plan) -> (u64, u64, u64) {
    let (k, experts) = model.moe.as_ref().map_or((1, 1), |m| (m.topk as u64, m.experts as u64));
    let tokens = plan.mbs as u64 * plan.seq / (plan.tp * plan.cp) as u64;
    let a2a = 2 * tokens * k * model.hidden;
    (a2a, a2a * plan.tp as u64, 2 * plan.ep as u64 * experts * plan.tp as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_f_one_b_order() {
        // Stage 0 of 4 with 6 micro-batches: 3 warm-up forwards, then alternate, then drain.
        let s: Vec<(bool, u32)> = schedule(0, 4, 6, 1).iter().map(|x| (x.forward, x.micro_batch)).collect();
        let want = [
            (true, 0),
            (true, 1),
            (true, 2),
            (true, 3),
            (false, 0),
            (true, 4),
            (false, 1),
            (true, 5),
            (false, 2),
            (false, 3),
            (false, 4),
            (false, 5),
        ];
        assert_eq!(s, want);
        // The last stage alternates from the start.
        assert_eq!(schedule(3, 4, 2, 1).iter().map(|x| x.forward).collect::<Vec<_>>(), vec![true, false, true, false]);
    }

    #[test]
    fn interleaved_order_covers_every_chunk_once() {
        let s = schedule(1, 2, 4, 2);
        assert_eq!(s.len(), 16);
        for fwd in [true, false] {
            let mut seen: Vec<(u32, u32)> =
                s.iter().filter(|x| x.forward == fwd).map(|x| (x.micro_batch, x.chunk)).collect();
            seen.sort();
            assert_eq!(seen, (0..4).flat_map(|m| (0..2).map(move |c| (m, c))).collect::<Vec<_>>());
        }
    }
}

#[cfg(test)]
mod sizes {
    use super::*;
    use crate::training::model::Moe;
    use std::collections::BTreeSet;

    fn gpu() -> Accelerator {
        Accelerator::ideal()
    }

    fn plan(tp: u32, pp: u32, ep: u32, cp: u32, sp: bool, dp: DataParallel) -> Plan {
        Plan {
            gpus: 64,
            gpus_per_server: 8,
            tp,
            pp,
            vpp: 1,
            ep,
            cp,
            mbs: 2,
            gbs: 64 * 2 / (tp * pp * cp),
            seq: 4096,
            sp,
            dp,
            recompute: Recompute::None,
            first_stage_layers: None,
            last_stage_layers: None,
        }
    }

    fn model(moe: bool) -> Model {
        Model {
            name: "m".into(),
            family: Family::Llama,
            layers: 8,
            hidden: 4096,
            heads: 32,
            kv_heads: 8,
            head_dim: None,
            ffn: 14336,
            vocab: 32000,
            seq_len: 4096,
            moe: moe.then_some(Moe {
                experts: 8,
                topk: 2,
                expert_ffn: 14336,
                shared_experts: 0,
                shared_ffn: 0,
                dense_layers: 0,
            }),
            mla: None,
        }
    }

    /// Distinct (collective, group, bytes) and point-to-point sizes of stage 0's program.
    fn sizes(m: &Model, p: &Plan) -> (BTreeSet<(String, GroupId, u64)>, BTreeSet<u64>) {
        let g = generate(m, p, &gpu(), true).unwrap();
        let mut coll = BTreeSet::new();
        let mut p2p = BTreeSet::new();
        for op in &g.workload.programs[0].ops {
            match op.kind {
                OpKind::Collective { collective, group, bytes } => {
                    coll.insert((collective.name().to_string(), group, bytes));
                }
                OpKind::Send { bytes, .. } | OpKind::Recv { bytes, .. } => {
                    p2p.insert(bytes);
                }
                OpKind::Compute { .. } => {}
            }
        }
        (coll, p2p)
    }

    const B: u64 = 2;
    const S: u64 = 4096;
    const H: u64 = 4096;
    const T: u64 = 2 * B * S * H; // one bf16 activation of the micro-batch (megatron.md §0)

    #[test]
    fn tensor_parallel_without_sp_all_reduces_t() {
        let (coll, _) = sizes(&model(false), &plan(8, 1, 1, 1, false, DataParallel::Ddp));
        assert!(coll.contains(&("allreduce".into(), TP, T)));
        assert!(!coll.iter().any(|(c, g, _)| *g == TP && c != "allreduce"));
    }

    #[test]
    fn sequence_parallel_gathers_and_scatters_t() {
        let (coll, _) = sizes(&model(false), &plan(8, 1, 1, 1, true, DataParallel::Ddp));
        assert!(coll.contains(&("allgather".into(), TP, T)));
        assert!(coll.contains(&("reducescatter".into(), TP, T)));
    }

    #[test]
    fn pipeline_sends_the_activation_divided_by_tp_with_sp() {
        let (_, p2p) = sizes(&model(false), &plan(4, 2, 1, 1, true, DataParallel::Ddp));
        assert_eq!(p2p, BTreeSet::from([T / 4]));
        let (_, p2p) = sizes(&model(false), &plan(4, 2, 1, 1, false, DataParallel::Ddp));
        assert_eq!(p2p, BTreeSet::from([T]));
    }

    #[test]
    fn data_parallel_reduces_fp32_gradients_per_layer() {
        let m = model(false);
        let p = plan(8, 1, 1, 1, false, DataParallel::DistributedOptimizer);
        let (coll, _) = sizes(&m, &p);
        let layer = m.layer_params(0).0;
        // Reduce-scatter of 4-byte gradients of the layer's TP shard; all-gather of 2-byte params.
        assert!(coll.contains(&("reducescatter".into(), DP, 4 * layer / 8)));
        assert!(coll.iter().any(|(c, g, _)| c == "allgather" && *g == DP));
        let (coll, _) = sizes(&m, &plan(8, 1, 1, 1, false, DataParallel::Ddp));
        assert!(coll.contains(&("allreduce".into(), DP, 4 * layer / 8)));
    }

    #[test]
    fn expert_dispatch_moves_k_copies_of_each_token() {
        // n_tok = b·s/(t·cp) tokens per rank, each to k experts, h bf16 values: 2·n_tok·k·h.
        let (coll, _) = sizes(&model(true), &plan(2, 1, 4, 1, true, DataParallel::Ddp));
        let n_tok = B * S / 2;
        assert!(coll.contains(&("alltoall".into(), EP, 2 * n_tok * 2 * H)));
        // Expert-TP gathers the received tokens: t times the dispatch.
        assert!(coll.contains(&("allgather".into(), TP, 2 * n_tok * 2 * H * 2)));
    }

    #[test]
    fn context_parallel_gathers_keys_and_values() {
        // K and V of the whole sequence, TP-sharded KV heads, bf16: 2·b·s·(2·g·d_h/t)·... per rank.
        let (coll, _) = sizes(&model(false), &plan(2, 1, 1, 2, true, DataParallel::Ddp));
        let kv = 2 * B * S * (2 * 8 * 128 / 2);
        assert!(coll.contains(&("allgather".into(), CP, kv)));
    }
}
