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
//! - DP (Megatron-Core's overlaps, [`super::overlap`]): gradients reduce (all-reduce with DDP,
//!   reduce-scatter with the distributed optimizer or ZeRO; dense parameters in DP, experts' in
//!   DP_EP) in buckets, only in the last micro-batch's backward: with `--overlap-grad-reduce`
//!   (default) each bucket starts when the weight gradient completing it is done (interleaved:
//!   a chunk's buckets together, `stage` backward steps after its last micro-batch, as
//!   `align_grad_reduce` aligns them); without it all after the backward. Then the optimizer
//!   step, then the all-gather of the updated parameters bucket by bucket (distributed
//!   optimizer, ZeRO-1/2), or with `--overlap-param-gather` (default with the distributed
//!   optimizer) under the next iteration's first forward, each block waiting for its buckets
//!   (the iteration simulated is a steady-state one). ZeRO-3's per-layer gathers are not issued.
//! - TP communication overlap (`--tp-comm-overlap`, off by default): Transformer Engine's
//!   userbuffers ([`userbuffers`]): the SP all-gathers before a block's first GEMM and before its
//!   last GEMM's data gradient as ring exchanges of copies with the GEMM pieces, the
//!   reduce-scatter after its last GEMM pipelined with the GEMM's splits, and the backward's
//!   re-gather and input-gradient reduce-scatter as bulk overlaps, all NVLink copies without NCCL.
//! - P2P overlap (interleaved schedules, `overlap_p2p_comm`, default on): each receive is posted
//!   when the previous step of its direction ends, a step ahead; without it (and without
//!   interleaving) when the stage reaches the step.
//! - Tied embeddings with PP > 1: the embedding gradient all-reduced between first and last
//!   stage after the DP reductions (`finalize_model_grads`).
//! - Full recompute replays each layer's forward, collectives included, before its backward.

use super::costs::{BlockTimes, Costs};
use super::model::Model;
use super::overlap::{buckets, Block, Bucket, Buffer, Overlap};
use super::plan::{DataParallel, Plan, Recompute};
use crate::compute::{Device, Priced};
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
    let fwd = |k: u32| virtual_step(k, p, v, true);
    let bwd = |k: u32| virtual_step(k, p, v, false);
    let warmup = warmup(stage, p, m, v);
    let mut steps = Vec::with_capacity(2 * total as usize);
    steps.extend((0..warmup).map(fwd));
    for i in 0..total - warmup {
        steps.push(fwd(warmup + i));
        steps.push(bwd(i));
    }
    steps.extend((total - warmup..total).map(bwd));
    steps
}

/// Forward steps `stage` runs before its first backward (Megatron-Core's warm-up).
pub fn warmup(stage: u32, p: u32, m: u32, v: u32) -> u32 {
    if v == 1 {
        (p - 1 - stage).min(m)
    } else {
        ((p - stage - 1) * 2 + (v - 1) * p).min(m * v)
    }
}

/// Virtual micro-batch `k` → (micro-batch, chunk): groups of p micro-batches go through each
/// chunk in turn (forward chunks ascending, backward descending).
fn virtual_step(k: u32, p: u32, v: u32, forward: bool) -> Step {
    let chunk = (k / p) % v;
    Step { forward, micro_batch: (k / (p * v)) * p + k % p, chunk: if forward { chunk } else { v - 1 - chunk } }
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
    fn compute(&mut self, priced: Priced, row: u32, phase: Phase) -> u32 {
        let deps = std::mem::take(&mut self.gate);
        let id = self.push(OpKind::Compute { ns: priced.ns, work: Some(priced.work) }, deps, row, phase);
        self.gate = vec![id];
        id
    }

    /// Receive from the pipeline neighbour `offset` stages away, posted after `deps`; the next
    /// compute waits for it.
    fn recv(&mut self, offset: i32, bytes: u64, deps: Vec<u32>) {
        let r = self.push(
            OpKind::Recv { peer: Peer { group: PP, offset }, bytes, copy: false },
            deps,
            R_PIPE,
            Phase::Other,
        );
        self.gate.push(r);
    }

    /// Send to the pipeline neighbour `offset` stages away, after the gate; nothing waits for it.
    fn send(&mut self, offset: i32, bytes: u64) {
        let deps = self.gate.clone();
        self.push(OpKind::Send { peer: Peer { group: PP, offset }, bytes, copy: false }, deps, R_PIPE, Phase::Other);
    }

    /// A collective after the gate. Blocking ones become the gate.
    fn coll(&mut self, c: Collective, group: GroupId, bytes: u64, row: u32, phase: Phase, blocking: bool) -> u32 {
        let id = self.coll_after(c, group, bytes, row, phase, self.gate.clone());
        if blocking {
            self.gate = vec![id];
        }
        id
    }

    /// A collective after `deps`; nothing waits for it.
    fn coll_after(&mut self, c: Collective, group: GroupId, bytes: u64, row: u32, phase: Phase, deps: Vec<u32>) -> u32 {
        self.push(OpKind::Collective { collective: c, group, bytes }, deps, row, phase)
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

pub fn generate(model: &Model, plan: &Plan, acc: &Device, flash_attention: bool) -> Result<Generated> {
    generate_with(model, plan, acc, flash_attention, &Overlap::default())
}

/// [`generate`] with the overlaps `overlap` asks for (Megatron-Core's defaults where it says nothing).
pub fn generate_with(
    model: &Model,
    plan: &Plan,
    acc: &Device,
    flash_attention: bool,
    overlap: &Overlap,
) -> Result<Generated> {
    generate_mixed(model, plan, &[acc], &[], flash_attention, overlap)
}

/// [`generate_with`] on accelerators of several types: rank r runs on `types[rank_type[r]]`
/// (type 0 where `rank_type` is empty). Ranks of one stage and type form a rank class; classes
/// are numbered stage by stage, types in order within a stage.
pub fn generate_mixed(
    model: &Model,
    plan: &Plan,
    types: &[&Device],
    rank_type: &[u32],
    flash_attention: bool,
    overlap: &Overlap,
) -> Result<Generated> {
    plan.validate(model)?;
    for acc in types {
        acc.check()?;
    }
    let ov = overlap.resolve(plan)?;
    let (t, p, v, cp) = (plan.tp, plan.pp, plan.vpp, plan.cp);
    let m = plan.micro_batches();
    let (layout, groups) = groups(plan);
    let world = plan.gpus;
    let type_of = |r: u32| rank_type.get(r as usize).copied().unwrap_or(0);
    let mut present = vec![false; (p as usize) * types.len()];
    for r in 0..world {
        present[layout.coord(r, Axis::Pp) as usize * types.len() + type_of(r) as usize] = true;
    }
    let classes: Vec<(u32, u32)> = (0..p)
        .flat_map(|s| (0..types.len() as u32).map(move |ty| (s, ty)))
        .filter(|&(s, ty)| present[s as usize * types.len() + ty as usize])
        .collect();
    // T: one bf16 activation of the micro-batch.
    let act = 2 * plan.mbs as u64 * (plan.seq / cp as u64) * model.hidden;
    let p2p = if plan.sp { act / t as u64 } else { act };
    let dp_groups = DpGroups::new(plan);

    let mut programs = Vec::with_capacity(classes.len());
    let mut all_steps = Vec::with_capacity(classes.len());
    let mut op_layer = Vec::with_capacity(classes.len());
    for &(stage, ty) in &classes {
        let acc = types[ty as usize];
        let mut built = Stage::new(model, plan, &ov, &dp_groups, acc, stage, act, p2p, flash_attention);
        for st in schedule(stage, p, m, v) {
            built.step(st);
        }
        let (program, spans, layers) = built.finish();
        programs.push(program);
        all_steps.push(spans);
        op_layer.push(layers);
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

/// The plan's rank layout and its communicator groups, numbered as [`TP`] … [`EMB`] say.
pub fn groups(plan: &Plan) -> (Layout, Vec<Group>) {
    let layout = plan.layout();
    let dims = |axes: &[Axis]| Membership::Dims(layout.mask(axes));
    let p = plan.pp;
    // Embedding group: each first-stage rank with its last-stage peer (tied embeddings); with one
    // stage each rank is both, a group of its own.
    let stride = plan.gpus / p;
    let emb = Membership::Explicit(
        (0..stride).map(|r| if p > 1 { vec![r, r + (p - 1) * stride] } else { vec![r] }).collect(),
    );
    let groups = vec![
        Group { name: "TP".into(), members: dims(&[Axis::Tp]) },
        Group { name: "CP".into(), members: dims(&[Axis::Cp]) },
        Group { name: "EP".into(), members: dims(&[Axis::Ep]) },
        Group { name: "DP".into(), members: dims(&[Axis::Cp, Axis::Ep, Axis::DpEp]) },
        Group { name: "DP_EP".into(), members: dims(&[Axis::Cp, Axis::DpEp]) },
        Group { name: "PP".into(), members: dims(&[Axis::Pp]) },
        Group { name: "EMB".into(), members: emb },
    ];
    (layout, groups)
}

/// One dense layer's forward then backward (with its recompute) for one micro-batch on one TP
/// group, as IR: for per-layer timings. Returns the workload and the index of the last forward op.
pub fn single_layer(model: &Model, plan: &Plan, acc: &Device, flash_attention: bool) -> (Workload, u32) {
    let t = plan.tp;
    let layout = Layout::megatron(t, 1, 1, 1, 1);
    let groups = vec![Group { name: "TP".into(), members: Membership::Dims(layout.mask(&[Axis::Tp])) }];
    let costs = Costs { acc, model, plan, flash_attention };
    let bt = costs.layer(false);
    let act = 2 * plan.mbs as u64 * plan.seq * model.hidden;
    // Korthikanti et al. measured without TP communication overlap.
    let cx = Ctx { model, plan, act, tp_overlap: None };
    let mut bld = Builder::new();
    forward_layer(&mut bld, &cx, &bt, 0, false, &mut |_, _| {});
    let fwd_end = bld.prog.ops.len() as u32 - 1;
    if plan.recompute == Recompute::Full {
        forward_layer(&mut bld, &cx, &bt, 0, false, &mut |_, _| {});
    }
    backward_layer(&mut bld, &cx, &bt, false);
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

/// Parameters this GPU holds for `stage` (all, and routed experts'), divided by TP (and EP for
/// experts): its gradient buffers, every chunk's (one definition of what a stage holds).
pub fn stage_params(model: &Model, plan: &Plan, stage: u32) -> (u64, u64) {
    (0..plan.vpp).flat_map(|c| buckets(model, plan, stage, c, None)).fold((0, 0), |(all, expert), b| {
        (all + b.params, expert + if b.buffer == Buffer::Expert { b.params } else { 0 })
    })
}

/// Megatron's model FLOPs of one iteration: 3 × forward, forward = 2 × active matmul parameters
/// per token + 4·s·(a·d_head) per layer for attention scores and context + the LM head.
pub fn model_flops(model: &Model, plan: &Plan) -> f64 {
    let tokens = plan.tokens();
    let mut per_token = 2.0 * model.hidden as f64 * model.vocab as f64;
    for l in 0..model.layers {
        per_token += layer_flops_per_token(model, plan, l);
    }
    3.0 * per_token * tokens
}

/// The part of [`model_flops`] pipeline stage `stage` computes: its layers, and the LM head on
/// the last stage (the embedding lookup has no matmul FLOPs).
pub fn stage_model_flops(model: &Model, plan: &Plan, stage: u32) -> f64 {
    let tokens = plan.tokens();
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

/// The forward of layer `l` (`moe`: its MLP is experts). `pre` runs at the start of each block,
/// where Megatron's forward pre-hooks wait for the block's parameters.
fn forward_layer(
    bld: &mut Builder,
    cx: &Ctx,
    bt: &BlockTimes,
    l: u32,
    moe: bool,
    pre: &mut dyn FnMut(&mut Builder, Block),
) {
    let (model, plan, act) = (cx.model, cx.plan, cx.act);
    let tp = plan.tp > 1;
    let sp = plan.sp;
    // Attention block.
    pre(bld, Block::Attn(l));
    if let Some(x) = cx.tp_overlap {
        let (qkv, out) = within(x.attn.first_fwd, x.attn.last_fwd, bt.attn_fwd);
        ring_exchange(bld, act, qkv, R_ATTN, Phase::Forward);
        if plan.cp > 1 {
            bld.coll(Collective::AllGather, CP, kv_bytes(model, plan), R_ATTN, Phase::Forward, true);
        }
        bld.compute(bt.attn_fwd - qkv.whole - out.whole, R_ATTN, Phase::Forward);
        pipelined_scatter(bld, out, act, plan.tp, R_ATTN, Phase::Forward);
    } else {
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
    }
    pre(bld, Block::Mlp(l));
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
    if let Some(x) = cx.tp_overlap {
        let (fc1, fc2) = within(x.mlp.first_fwd, x.mlp.last_fwd, bt.mlp_fwd);
        ring_exchange(bld, act, fc1, R_MLP, Phase::Forward);
        bld.compute(bt.mlp_fwd - fc1.whole - fc2.whole, R_MLP, Phase::Forward);
        pipelined_scatter(bld, fc2, act, plan.tp, R_MLP, Phase::Forward);
        return;
    }
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
/// block waits for both. `output_grad`: with SP, the block ends in a reduce-scatter whose
/// backward first gathers the output gradient; the value is the block's GEMMs under
/// `--tp-comm-overlap` (None without it): the gather is then pipelined with the last GEMM's data
/// gradient, and the re-gather and the input gradient's reduce-scatter are userbuffers' bulk
/// overlaps inside the first GEMM's layer (see [`userbuffers`]). Returns the weight-gradient op.
fn backward_linear(
    bld: &mut Builder,
    cx: &Ctx,
    data: Priced,
    weight: Priced,
    row: u32,
    output_grad: Option<Option<Linears>>,
) -> u32 {
    let (plan, act) = (cx.plan, cx.act);
    let tp = plan.tp > 1;
    // Transformer Engine's layers (the LM head is Megatron's own linear, on NCCL).
    if let (true, true, Some(Some(lin))) = (tp, plan.sp, output_grad) {
        return backward_linear_ub(bld, cx, data, weight, row, lin);
    }
    if let (true, true, Some(None)) = (tp, plan.sp, output_grad) {
        // Output gradient of the row-parallel linear, gathered before the data gradient.
        bld.coll(Collective::AllGather, TP, act, row, Phase::InputGrad, true);
    }
    // With SP the sequence-sharded input is re-gathered for the weight gradient; Megatron issues
    // it before the data-gradient GEMM, so it runs under that GEMM.
    let regather: Vec<u32> = match tp && plan.sp {
        false => Vec::new(),
        true => vec![bld.coll(Collective::AllGather, TP, act, row, Phase::WeightGrad, false)],
    };
    let d = bld.compute(data, row, Phase::InputGrad);
    let mut next = Vec::new();
    if tp {
        // The input gradient's reduction overlaps the weight-gradient GEMM.
        let c = if plan.sp { Collective::ReduceScatter } else { Collective::AllReduce };
        next.push(bld.coll(c, TP, act, row, Phase::InputGrad, false));
    }
    bld.gate = std::iter::once(d).chain(regather).collect();
    let w = bld.compute(weight, row, Phase::WeightGrad);
    next.push(w);
    bld.gate = next;
    w
}

/// [`backward_linear`] under `--tp-comm-overlap`, in Transformer Engine's order: the last
/// layer's data gradient pipelined with the output gradient's ring exchange, then its weight
/// gradient and the rest of the block's data gradient (core attention, the activation); then
/// the first layer: its input re-gathered (bulk) under its data-gradient GEMM, whose call waits
/// for the gather, and that gradient reduce-scattered (bulk) under its weight-gradient GEMM,
/// which the next block waits for with the scatter.
fn backward_linear_ub(bld: &mut Builder, cx: &Ctx, data: Priced, weight: Priced, row: u32, lin: Linears) -> u32 {
    let (act, t) = (cx.act, cx.plan.tp);
    let whole = lin.last_dgrad.whole.ns;
    let last = lin.last_dgrad.scaled(whole.min(data.ns) / whole.max(f64::MIN_POSITIVE));
    ring_exchange(bld, act, last, row, Phase::InputGrad);
    let first_dgrad = lin.first_dgrad.in_time(lin.first_dgrad.ns.min(data.ns - last.whole.ns));
    let first_wgrad = lin.first_wgrad.in_time(lin.first_wgrad.ns.min(weight.ns));
    bld.compute(weight - first_wgrad, row, Phase::WeightGrad);
    bld.compute(data - last.whole - first_dgrad, row, Phase::InputGrad);
    let regather = sm_collective(bld, act, t, bld.gate.clone(), row, Phase::WeightGrad);
    let d = bld.compute(first_dgrad, row, Phase::InputGrad);
    bld.gate = std::iter::once(d).chain(regather).collect();
    let mut next = sm_collective(bld, act, t, bld.gate.clone(), row, Phase::InputGrad);
    let w = bld.compute(first_wgrad, row, Phase::WeightGrad);
    next.push(w);
    bld.gate = next;
    w
}

/// Backward of a layer; returns the weight-gradient ops of its MLP and its attention.
fn backward_layer(bld: &mut Builder, cx: &Ctx, bt: &BlockTimes, moe: bool) -> (u32, u32) {
    let (model, plan) = (cx.model, cx.plan);
    let gemm = |pick: fn(&TpLinears) -> Linears| Some(cx.tp_overlap.as_ref().map(pick));
    let mlp_w = if moe {
        // The dispatcher's collectives mirrored: combine, expert-TP scatter, experts, gather, dispatch.
        let (a2a, etp, _) = moe_bytes(model, plan);
        if plan.ep > 1 {
            bld.coll(Collective::AllToAll, EP, a2a, R_MOE, Phase::InputGrad, true);
        }
        if plan.tp > 1 {
            bld.coll(Collective::AllGather, TP, etp, R_MOE, Phase::InputGrad, true);
        }
        bld.compute(bt.mlp_bwd_data, R_MOE, Phase::InputGrad);
        let w = bld.compute(bt.mlp_bwd_weight, R_MOE, Phase::WeightGrad);
        if plan.tp > 1 {
            bld.coll(Collective::ReduceScatter, TP, etp, R_MOE, Phase::InputGrad, true);
        }
        if plan.ep > 1 {
            bld.coll(Collective::AllToAll, EP, a2a, R_MOE, Phase::InputGrad, true);
        }
        w
    } else {
        backward_linear(bld, cx, bt.mlp_bwd_data, bt.mlp_bwd_weight, R_MLP, gemm(|x| x.mlp))
    };
    let attn_grad = gemm(|x| x.attn);
    let attn_w = if plan.cp > 1 {
        let kv = kv_bytes(model, plan);
        bld.coll(Collective::AllGather, CP, kv, R_ATTN, Phase::InputGrad, true);
        let w = backward_linear(bld, cx, bt.attn_bwd_data, bt.attn_bwd_weight, R_ATTN, attn_grad);
        bld.coll(Collective::ReduceScatter, CP, kv, R_ATTN, Phase::InputGrad, false);
        w
    } else {
        backward_linear(bld, cx, bt.attn_bwd_data, bt.attn_bwd_weight, R_ATTN, attn_grad)
    };
    (mlp_w, attn_w)
}

/// What the per-layer emitters need besides the builder.
struct Ctx<'a> {
    model: &'a Model,
    plan: &'a Plan,
    /// T: one bf16 activation of the micro-batch.
    act: u64,
    /// With `--tp-comm-overlap`: the GEMMs userbuffers overlap the TP communication with.
    tp_overlap: Option<TpLinears>,
}

/// Data-parallel groups that have more than one member, and whether gradients all-reduce (DDP)
/// or reduce-scatter.
pub(super) struct DpGroups {
    dense: bool,
    expert: bool,
    pub(super) ddp: bool,
}

impl DpGroups {
    pub(super) fn new(plan: &Plan) -> DpGroups {
        let dp_cp = plan.dp_size() * plan.cp;
        DpGroups { dense: dp_cp > 1, expert: dp_cp / plan.ep > 1, ddp: plan.dp == DataParallel::Ddp }
    }

    /// The group a buffer's gradients reduce (and its parameters gather) in, if it has more
    /// than one member.
    pub(super) fn of(&self, buffer: Buffer) -> Option<GroupId> {
        match buffer {
            Buffer::Dense => self.dense.then_some(DP),
            Buffer::Expert => self.expert.then_some(DP_EP),
        }
    }
}

/// The gradient reductions of one stage: which buckets have started, and their ops.
struct GradSync {
    launched: Vec<Vec<bool>>,
    ops: Vec<u32>,
}

impl GradSync {
    fn launch(&mut self, bld: &mut Builder, bucket: &Bucket, deps: Vec<u32>, groups: &DpGroups) {
        if let Some(group) = groups.of(bucket.buffer) {
            let c = if groups.ddp { Collective::AllReduce } else { Collective::ReduceScatter };
            // fp32 gradients (Megatron reduces bf16 runs' gradients in fp32).
            self.ops.push(bld.coll_after(c, group, 4 * bucket.params, R_GRAD, Phase::WeightGrad, deps));
        }
    }

    /// Start the buckets of `chunk` whose last gradient `block`'s weight-gradient op `op` produces.
    fn launch_ready(
        &mut self,
        bld: &mut Builder,
        all: &[Vec<Bucket>],
        chunk: u32,
        block: Block,
        op: u32,
        groups: &DpGroups,
    ) {
        for (i, bucket) in all[chunk as usize].iter().enumerate() {
            if !self.launched[chunk as usize][i] && bucket.ready() == block {
                self.launched[chunk as usize][i] = true;
                self.launch(bld, bucket, vec![op], groups);
            }
        }
    }

    /// Start every bucket of `chunk` not started yet, after the gate.
    fn launch_chunk(&mut self, bld: &mut Builder, all: &[Vec<Bucket>], chunk: u32, groups: &DpGroups) {
        for (i, bucket) in all[chunk as usize].iter().enumerate() {
            if !self.launched[chunk as usize][i] {
                self.launched[chunk as usize][i] = true;
                let deps = bld.gate.clone();
                self.launch(bld, bucket, deps, groups);
            }
        }
    }
}

/// `--overlap-param-gather`: the parameter all-gathers of the previous step's update, run under
/// the first micro-batch's forward. A block's forward pre-hook waits for the buckets holding its
/// parameters, dispatching any not dispatched yet; without interleaving it then dispatches the
/// next bucket in forward order (`finish_param_sync`), so bucket k + 1's gather runs under the
/// compute of bucket k's blocks and only the first is exposed. With interleaving the schedule
/// dispatches whole chunks ahead (`align_param_gather`) and the hooks only wait.
struct ParamGather {
    /// Per chunk, per buffer: the buckets in forward order (buffer, bucket index in `buckets`).
    chains: Vec<Vec<Vec<usize>>>,
    buckets: Vec<Vec<Bucket>>,
    /// Dispatched buckets, with their op (none in a group of one).
    op: Vec<Vec<Option<Option<u32>>>>,
    waited: Vec<Vec<bool>>,
    chain: bool,
}

impl ParamGather {
    fn new(buckets: &[Vec<Bucket>], chain: bool) -> ParamGather {
        let chains = buckets
            .iter()
            .map(|bs| {
                [Buffer::Dense, Buffer::Expert]
                    .iter()
                    .map(|&buf| (0..bs.len()).rev().filter(|&i| bs[i].buffer == buf).collect())
                    .collect()
            })
            .collect();
        ParamGather {
            chains,
            buckets: buckets.to_vec(),
            op: buckets.iter().map(|b| vec![None; b.len()]).collect(),
            waited: buckets.iter().map(|b| vec![false; b.len()]).collect(),
            chain,
        }
    }

    fn dispatch(&mut self, bld: &mut Builder, c: usize, i: usize, groups: &DpGroups) {
        if self.op[c][i].is_none() {
            let bucket = &self.buckets[c][i];
            // bf16 parameters; a group of one gathers nothing.
            let deps = bld.gate.clone();
            let id = groups.of(bucket.buffer).map(|group| {
                bld.coll_after(Collective::AllGather, group, 2 * bucket.params, R_GATHER, Phase::Forward, deps)
            });
            self.op[c][i] = Some(id);
        }
    }

    /// Dispatch each buffer's first bucket in forward order of the first chunk (`zero_grad`).
    fn dispatch_first(&mut self, bld: &mut Builder, groups: &DpGroups) {
        for chain in self.chains[0].clone() {
            if let Some(&i) = chain.first() {
                self.dispatch(bld, 0, i, groups);
            }
        }
    }

    /// Dispatch every bucket of `chunk` (in bucket order, as `start_param_sync` does).
    fn dispatch_chunk(&mut self, bld: &mut Builder, chunk: u32, groups: &DpGroups) {
        for i in 0..self.buckets[chunk as usize].len() {
            self.dispatch(bld, chunk as usize, i, groups);
        }
    }

    /// The forward pre-hook of `block` of `chunk` in the first micro-batch.
    fn wait(&mut self, bld: &mut Builder, chunk: u32, block: Block, groups: &DpGroups) {
        let c = chunk as usize;
        for chain in self.chains[c].clone() {
            for (pos, &i) in chain.iter().enumerate() {
                if self.waited[c][i] || !self.buckets[c][i].blocks.contains(&block) {
                    continue;
                }
                self.dispatch(bld, c, i, groups);
                self.waited[c][i] = true;
                if let Some(Some(id)) = self.op[c][i] {
                    bld.gate.push(id);
                }
                if self.chain {
                    if let Some(&next) = chain.get(pos + 1) {
                        self.dispatch(bld, c, next, groups);
                    }
                }
            }
        }
    }
}

/// Bytes of the keys and values all-gathered in CP for one layer (bf16, TP-sharded heads).
pub(super) fn kv_bytes(model: &Model, plan: &Plan) -> u64 {
    let kv_width = match &model.mla {
        Some(x) => x.kv_lora + x.qk_rope,
        None => 2 * model.kv_heads * model.head_dim() / plan.tp as u64,
    };
    2 * plan.mbs as u64 * plan.seq * kv_width
}

/// (dispatch/combine all-to-all bytes, expert-TP gather bytes, token-count gather bytes) of one
/// MoE layer. The token counts per expert are gathered across TP×EP; a SimAI file can only say
/// TP, so (as AICB) they are 2·e·E·t bytes gathered in TP.
pub(super) fn moe_bytes(model: &Model, plan: &Plan) -> (u64, u64, u64) {
    let (k, experts) = model.moe.as_ref().map_or((1, 1), |m| (m.topk as u64, m.experts as u64));
    let tokens = plan.mbs as u64 * plan.seq / (plan.tp * plan.cp) as u64;
    let a2a = 2 * tokens * k * model.hidden;
    (a2a, a2a * plan.tp as u64, 2 * plan.ep as u64 * experts * plan.tp as u64)
}

#[path = "stage.rs"]
mod stage;
use stage::Stage;

#[path = "userbuffers.rs"]
mod userbuffers;
use userbuffers::{pipelined_scatter, ring_exchange, sm_collective, tp_linears, within, Linears, TpLinears};

#[cfg(test)]
#[path = "overlap_tests.rs"]
mod overlap_tests;

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
    use crate::training::fixtures;
    use crate::training::model::Moe;
    use std::collections::BTreeSet;

    fn gpu() -> Device {
        Device::ideal()
    }

    fn plan(tp: u32, pp: u32, ep: u32, cp: u32, sp: bool, dp: DataParallel) -> Plan {
        let gbs = 64 * 2 / (tp * pp * cp);
        Plan { ep, cp, mbs: 2, gbs, seq: 4096, sp, dp, ..fixtures::plan(64, tp, pp) }
    }

    fn model(moe: bool) -> Model {
        let experts = Moe { experts: 8, topk: 2, expert_ffn: 14336, shared_experts: 0, shared_ffn: 0, dense_layers: 0 };
        Model { kv_heads: 8, moe: moe.then_some(experts), ..fixtures::model(8, 4096, 32, 14336) }
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
    fn compute_ops_carry_the_layers_flops_by_hand() {
        // One LLaMA layer (h = 4096, 32 heads of 128, 8 KV heads, FFN 14336) on TP 2, flash
        // attention, no recompute; micro-batch of 2 × 4096 tokens.
        let (m, p) = (model(false), plan(2, 1, 1, 1, true, DataParallel::Ddp));
        let (w, _) = single_layer(&m, &p, &gpu(), true);
        let (n, h, f, t) = ((B * S) as f64, H as f64, 14336.0, 2.0);
        let qkv = h * (32.0 + 2.0 * 8.0) * 128.0;
        let linear = 2.0 * n * (qkv + h * h + h * 2.0 * f + f * h) / t;
        // Causal flash attention: b·(a/t)·s²·(d_qk + d_v) forward, 2.5× that backward.
        let attention = B as f64 * 16.0 * (S * S) as f64 * 256.0;
        let mut flops = 0.0;
        for op in &w.programs[0].ops {
            if let OpKind::Compute { work, .. } = op.kind {
                let work = work.expect("the generator knows every compute op's work");
                assert_eq!(work.dtype, crate::catalog::Dtype::Bf16);
                flops += work.flops;
            }
        }
        let want = 3.0 * linear + 3.5 * attention;
        assert!((flops - want).abs() < 1e-9 * want, "{flops} vs {want}");
    }

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
    fn data_parallel_reduces_fp32_gradients_and_gathers_bf16_parameters_once() {
        // Every parameter of the GPU's TP shard once: 4-byte gradients reduce-scattered (all-
        // reduced with DDP), 2-byte parameters all-gathered, in buckets of at least 40 M
        // parameters but the last.
        let m = model(false);
        let total = |p: &Plan, c: &str| -> Vec<u64> {
            let g = generate(&m, p, &gpu(), true).unwrap();
            g.workload.programs[0]
                .ops
                .iter()
                .filter_map(|op| match op.kind {
                    OpKind::Collective { collective, group: DP, bytes } if collective.name() == c => Some(bytes),
                    _ => None,
                })
                .collect()
        };
        let p = plan(8, 1, 1, 1, false, DataParallel::DistributedOptimizer);
        // 8 layers, input embedding and LM head split over TP 8, the final norm replicated.
        let params = 8 * m.layer_params(0).0 / 8 + 2 * 32000 * 4096 / 8 + 4096;
        let rs = total(&p, "reducescatter");
        assert_eq!(rs.iter().sum::<u64>(), 4 * params);
        assert!(rs[..rs.len() - 1].iter().all(|&b| b >= 4 * 40_000_000), "{rs:?}");
        assert_eq!(total(&p, "allgather").iter().sum::<u64>(), 2 * params);
        let ar = total(&plan(8, 1, 1, 1, false, DataParallel::Ddp), "allreduce");
        assert_eq!(ar.iter().sum::<u64>(), 4 * params);
    }

    #[test]
    fn an_untied_output_layer_is_reduced_with_its_stage_and_a_tied_one_between_the_end_stages() {
        // Tied (Megatron GPT's default) on PP 2: the last stage holds a copy of the word
        // embedding, so the two stages together hold V·h more than the model, and finalize_model_grads
        // all-reduces its 4-byte gradient over the embedding group. Untied (Llama, or
        // --untie-embeddings-and-output-weights): each stage holds its own matrix, no EMB call.
        let (v, t) = (32000u64, 2u64);
        for (tie, copies, emb_calls) in [(Some(true), 1, 1), (None, 0, 0), (Some(false), 0, 0)] {
            let m = Model { tie_embeddings: tie, ..model(false) };
            let p = plan(t as u32, 2, 1, 1, false, DataParallel::DistributedOptimizer);
            let held: u64 = (0..2).map(|s| stage_params(&m, &p, s).0).sum();
            let norms = H; // the final norm, replicated over TP (a layer's counts with its shard)
            assert_eq!(held, (m.params().0 - norms) / t + norms + copies * v * H / t, "{tie:?}");
            let (coll, _) = sizes(&m, &p);
            let emb: Vec<_> = coll.iter().filter(|(_, g, _)| *g == EMB).collect();
            assert_eq!(emb.len(), emb_calls, "{tie:?}: {emb:?}");
            if emb_calls > 0 {
                assert_eq!(emb[0], &("allreduce".to_string(), EMB, 4 * v * H / t));
            }
        }
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
