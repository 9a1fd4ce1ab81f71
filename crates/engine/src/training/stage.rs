//! One pipeline stage's program on one accelerator type ([`super::generate_mixed`] builds one per
//! rank class): the stage's schedule steps in order — the forward and backward of each
//! micro-batch through each model chunk, with their pipeline transfers, gradient reductions and
//! parameter gathers — then the tied embedding's reduction, the optimizer step and the updated
//! parameters' gather.

use std::ops::Range;

use super::{
    backward_layer, backward_linear, forward_layer, stage_params, tp_linears, virtual_step, Builder, Ctx, DpGroups,
    GradSync, ParamGather, Step, EMB, NO_LAYER, R_CE, R_EMB, R_GATHER, R_GRAD, R_HEAD, R_OPT, TP,
};
use crate::compute::{Device, Priced};
use crate::training::costs::{BlockTimes, Costs};
use crate::training::model::Model;
use crate::training::overlap::{buckets, Block, Bucket, Overlaps};
use crate::training::plan::{DataParallel, Plan, Recompute};
use crate::workload::{Collective, Phase, Program};

/// Each schedule step of a stage and the range of op ids it issued.
pub(super) type Spans = Vec<(Step, Range<u32>)>;

/// A stage's program as it is built, step by step.
pub(super) struct Stage<'a> {
    model: &'a Model,
    plan: &'a Plan,
    ov: &'a Overlaps,
    dp_groups: &'a DpGroups,
    stage: u32,
    /// Bytes of one pipeline transfer (an activation, or its TP shard with SP).
    p2p: u64,
    costs: Costs<'a>,
    cx: Ctx<'a>,
    dense: BlockTimes,
    moe_times: Option<BlockTimes>,
    /// (forward, backward) of the embedding and of the LM head.
    emb: (Priced, Priced),
    head: (Priced, Priced),
    bld: Builder,
    spans: Spans,
    /// Gradient buckets per chunk.
    chunk_buckets: Vec<Vec<Bucket>>,
    grads: GradSync,
    gather: Option<ParamGather>,
    /// Backward steps left per chunk: the last one is the micro-batch whose gradients reduce.
    bwd_left: Vec<u32>,
    fwd_k: u32,
    bwd_k: u32,
    /// Per direction, the gate at the end of its last step: with the P2P overlap the next
    /// receive of that direction is posted from there, a step ahead.
    after_last: [Vec<u32>; 2],
}

impl<'a> Stage<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        model: &'a Model,
        plan: &'a Plan,
        ov: &'a Overlaps,
        dp_groups: &'a DpGroups,
        acc: &'a Device,
        stage: u32,
        act: u64,
        p2p: u64,
        flash_attention: bool,
    ) -> Stage<'a> {
        let costs = Costs { acc, model, plan, flash_attention };
        let cx = Ctx { model, plan, act, tp_overlap: ov.tp_comm.then(|| tp_linears(model, plan, acc)) };
        let v = plan.vpp;
        // Gradient buckets per chunk: Megatron-Core buckets only the first stage's first chunk.
        let chunk_buckets: Vec<Vec<Bucket>> = (0..v)
            .map(|c| {
                let size = (ov.grad_reduce && stage == 0 && c == 0).then_some(ov.bucket_size);
                buckets(model, plan, stage, c, size)
            })
            .collect();
        let grads =
            GradSync { launched: chunk_buckets.iter().map(|b| vec![false; b.len()]).collect(), ops: Vec::new() };
        let gather = (plan.dp == DataParallel::DistributedOptimizer && ov.param_gather)
            .then(|| ParamGather::new(&chunk_buckets, v == 1));
        let mut s = Stage {
            model,
            plan,
            ov,
            dp_groups,
            stage,
            p2p,
            dense: costs.layer(false),
            moe_times: model.moe.as_ref().map(|_| costs.layer(true)),
            emb: costs.embedding(),
            head: costs.head(),
            costs,
            cx,
            bld: Builder::new(),
            spans: Vec::new(),
            chunk_buckets,
            grads,
            gather,
            bwd_left: vec![plan.micro_batches(); v as usize],
            fwd_k: 0,
            bwd_k: 0,
            after_last: [Vec::new(), Vec::new()],
        };
        if let (Some(g), true) = (s.gather.as_mut(), v > 1) {
            // Interleaved (align_param_gather): the first two chunks' gathers start the iteration.
            for c in 0..2 {
                g.dispatch_chunk(&mut s.bld, c, dp_groups);
            }
        }
        if let (Some(g), true) = (s.gather.as_mut(), v == 1 && ov.gather_at_zero_grad) {
            // Megatron-Core before 2024-09: zero_grad() dispatches the first bucket's gather.
            g.dispatch_first(&mut s.bld, dp_groups);
        }
        s
    }

    fn first(&self, c: u32) -> bool {
        self.stage == 0 && c == 0
    }

    fn last(&self, c: u32) -> bool {
        self.stage == self.plan.pp - 1 && c == self.plan.vpp - 1
    }

    /// One schedule step: its receive, its compute and communication, its send.
    pub(super) fn step(&mut self, st: Step) {
        let c = st.chunk;
        let begin = self.bld.prog.ops.len() as u32;
        let needs_recv = if st.forward { !self.first(c) } else { !self.last(c) };
        if needs_recv {
            let offset = if st.forward { -1 } else { 1 };
            let deps = if self.ov.p2p { self.after_last[st.forward as usize].clone() } else { self.bld.gate.clone() };
            self.bld.recv(offset, self.p2p, deps);
        }
        if st.forward {
            self.forward(st);
        } else {
            self.backward(c);
        }
        self.after_last[st.forward as usize] = self.bld.gate.clone();
        self.spans.push((st, begin..self.bld.prog.ops.len() as u32));
    }

    fn forward(&mut self, st: Step) {
        let (c, plan, model) = (st.chunk, self.plan, self.model);
        let (t, p, v) = (plan.tp, plan.pp, plan.vpp);
        let dp_groups = self.dp_groups;
        if let Some(g) = self.gather.as_mut() {
            // Interleaved: the gathers of the chunk after next, aligned across stages.
            let k = self.fwd_k + self.stage;
            if v > 1 && k.is_multiple_of(p) && k / p + 1 < v && k / p + 1 > 1 && k < p * v {
                g.dispatch_chunk(&mut self.bld, k / p + 1, dp_groups);
            }
        }
        self.fwd_k += 1;
        let (first, last) = (self.first(c), self.last(c));
        let gather = &mut self.gather;
        let mut pre = |bld: &mut Builder, block: Block| {
            if let (Some(g), 0) = (gather.as_mut(), st.micro_batch) {
                g.wait(bld, c, block, dp_groups);
            }
        };
        let bld = &mut self.bld;
        let act = self.cx.act;
        if first {
            pre(bld, Block::Embedding);
            bld.compute(self.emb.0, R_EMB, Phase::Forward);
            if t > 1 {
                let c = if plan.sp { Collective::ReduceScatter } else { Collective::AllReduce };
                bld.coll(c, TP, act, R_EMB, Phase::Forward, true);
            }
        }
        for l in plan.chunk_layers(model.layers, self.stage, c) {
            let bt = if model.is_moe_layer(l) { self.moe_times.unwrap_or(self.dense) } else { self.dense };
            bld.layer = l;
            forward_layer(bld, &self.cx, &bt, l, model.is_moe_layer(l), &mut pre);
            bld.layer = NO_LAYER;
        }
        if last {
            pre(bld, Block::Head);
            if t > 1 && plan.sp {
                bld.coll(Collective::AllGather, TP, act, R_HEAD, Phase::Forward, true);
            }
            bld.compute(self.head.0, R_HEAD, Phase::Forward);
            if t > 1 {
                // Cross-entropy over the vocabulary shards: max, sum of exponentials, target logit.
                let (b, s) = (plan.mbs as u64, plan.seq / plan.cp as u64);
                for _ in 0..3 {
                    bld.coll(Collective::AllReduce, TP, 4 * b * s, R_CE, Phase::Forward, true);
                }
            }
        } else {
            bld.send(1, self.p2p);
        }
    }

    fn backward(&mut self, c: u32) {
        let (plan, model) = (self.plan, self.model);
        let (t, p, v, m) = (plan.tp, plan.pp, plan.vpp, plan.micro_batches());
        let dp_groups = self.dp_groups;
        self.bwd_left[c as usize] -= 1;
        let (first, last) = (self.first(c), self.last(c));
        // Megatron-Core reduces gradients only in the last micro-batch's backward; without
        // interleaving each bucket as soon as its gradients are ready.
        let ready_now = self.ov.grad_reduce && v == 1 && self.bwd_left[c as usize] == 0;
        let (grads, chunk_buckets) = (&mut self.grads, &self.chunk_buckets);
        let mut ready = |bld: &mut Builder, block: Block, op: u32| {
            if ready_now {
                grads.launch_ready(bld, chunk_buckets, c, block, op, dp_groups);
            }
        };
        let bld = &mut self.bld;
        if last {
            // The LM head is a column-parallel linear: its input gradient is reduced (and
            // its input re-gathered with SP) like the first linear of a block.
            let head_b = self.head.1;
            let w = backward_linear(bld, &self.cx, head_b.share(2), head_b.share(2), R_HEAD, None);
            ready(bld, Block::Head, w);
        }
        for l in plan.chunk_layers(model.layers, self.stage, c).rev() {
            let bt = if model.is_moe_layer(l) { self.moe_times.unwrap_or(self.dense) } else { self.dense };
            bld.layer = l;
            if plan.recompute == Recompute::Full {
                forward_layer(bld, &self.cx, &bt, l, model.is_moe_layer(l), &mut |_, _| {});
            }
            let (mlp_w, attn_w) = backward_layer(bld, &self.cx, &bt, model.is_moe_layer(l));
            ready(bld, Block::Mlp(l), mlp_w);
            ready(bld, Block::Attn(l), attn_w);
            bld.layer = NO_LAYER;
        }
        if !first {
            bld.send(-1, self.p2p);
        } else {
            if t > 1 && plan.sp {
                // The backward of the forward reduce-scatter: gather the output gradient.
                bld.coll(Collective::AllGather, TP, self.cx.act, R_EMB, Phase::InputGrad, true);
            }
            let w = bld.compute(self.emb.1, R_EMB, Phase::WeightGrad);
            ready(bld, Block::Embedding, w);
        }
        // Interleaved (align_grad_reduce): a chunk's gradients reduce together, `stage`
        // backward steps after its last micro-batch's, aligned across stages.
        if self.ov.grad_reduce && v > 1 && self.bwd_k >= self.stage {
            let done = virtual_step(self.bwd_k - self.stage, p, v, false);
            if done.micro_batch == m - 1 {
                self.grads.launch_chunk(&mut self.bld, &self.chunk_buckets, done.chunk, dp_groups);
            }
        }
        self.bwd_k += 1;
    }

    /// After the last step: whatever has not started yet (all of it without the gradient
    /// overlap) starts now; finalize_model_grads waits for every reduction, then all-reduces a
    /// tied embedding's gradient between first and last stage, then the optimizer steps and the
    /// updated parameters are gathered (unless the next forward gathers them). The program, its
    /// steps' op ranges and each op's layer.
    pub(super) fn finish(mut self) -> (Program, Spans, Vec<u32>) {
        let (plan, model, stage) = (self.plan, self.model, self.stage);
        let (t, p) = (plan.tp, plan.pp);
        let bld = &mut self.bld;
        for c in 0..plan.vpp {
            self.grads.launch_chunk(bld, &self.chunk_buckets, c, self.dp_groups);
        }
        bld.gate.append(&mut self.grads.ops);
        if model.tied() && p > 1 && (stage == 0 || stage == p - 1) {
            bld.coll(
                Collective::AllReduce,
                EMB,
                4 * model.vocab * model.hidden / t as u64,
                R_GRAD,
                Phase::WeightGrad,
                true,
            );
        }
        // Optimizer step on this GPU's share.
        let (params, _) = stage_params(model, plan, stage);
        let shard = match plan.dp {
            DataParallel::Ddp => params as f64,
            _ => params as f64 / (plan.dp_size() * plan.cp) as f64,
        };
        bld.compute(self.costs.optimizer(shard), R_OPT, Phase::Other);
        let gathers_after =
            matches!(plan.dp, DataParallel::DistributedOptimizer | DataParallel::Zero1 | DataParallel::Zero2);
        if gathers_after && self.gather.is_none() {
            for bucket in self.chunk_buckets.iter().flatten() {
                if let Some(group) = self.dp_groups.of(bucket.buffer) {
                    bld.coll(Collective::AllGather, group, 2 * bucket.params, R_GATHER, Phase::Other, true);
                }
            }
        }
        (self.bld.prog, self.spans, self.bld.op_layer)
    }
}
