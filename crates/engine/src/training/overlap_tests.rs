//! Each of Megatron-Core's overlaps against hand-computed times on small iterations: every
//! collective and transfer takes bytes / bandwidth (no latency), so where the schedule puts them
//! gives the times in closed form from the compute ops' durations.

use super::*;
use crate::error::InputError;
use crate::executor::{Execution, Executor};
use crate::exposure::exposure;
use crate::network::analytical::{Analytical, CollectiveCost, GroupShape};
use crate::platform::Placement;
use crate::training::fixtures;

/// Every communication at `bw` bytes per ns.
struct Linear(f64);
impl CollectiveCost for Linear {
    fn collective_ns(&self, _: Collective, _: &GroupShape, bytes: u64) -> std::result::Result<f64, InputError> {
        Ok(bytes as f64 / self.0)
    }
    fn transfer_ns(&self, _: bool, bytes: u64) -> std::result::Result<f64, InputError> {
        Ok(bytes as f64 / self.0)
    }
}

fn model() -> Model {
    Model { name: "small".into(), vocab: 64, seq_len: 1024, ..fixtures::model(8, 1024, 8, 4096) }
}

fn plan(gpus: u32, tp: u32, pp: u32, vpp: u32, m: u32, dp: DataParallel) -> Plan {
    let d = gpus / (tp * pp);
    Plan { vpp, gbs: m * d, seq: 1024, sp: tp > 1, dp, ..fixtures::plan(gpus, tp, pp) }
}

/// The data-parallel overlaps `p` can have, on (Megatron-LM's flags default off).
fn on(p: &Plan) -> Overlap {
    let param_gather = p.dp == DataParallel::DistributedOptimizer;
    Overlap { grad_reduce: Some(true), param_gather: Some(param_gather), ..Overlap::default() }
}

/// One layer's parameters: the bucket size that gives a bucket per layer.
fn layer_params() -> u64 {
    model().layer_params(0).0
}

fn run(p: &Plan, o: &Overlap, bw: f64) -> (Generated, Execution) {
    let g = generate_with(&model(), p, &Device::ideal(), true, o).unwrap();
    let exec = Executor::new(&g.workload)
        .unwrap()
        .run(&mut Analytical::new(Box::new(Linear(bw)), Placement::servers(p.gpus, 8)), &mut |_| true)
        .unwrap();
    (g, exec)
}

/// Ops of stage `s` on `row` that are collectives in `group`, in issue order.
fn colls(g: &Generated, s: usize, row: u32, group: GroupId) -> Vec<(u32, u64)> {
    let ops = &g.workload.programs[s].ops;
    (0..ops.len() as u32)
        .filter_map(|i| match ops[i as usize].kind {
            OpKind::Collective { group: gr, bytes, .. } if gr == group && ops[i as usize].row == row => {
                Some((i, bytes))
            }
            _ => None,
        })
        .collect()
}

fn duration(e: &Execution, s: usize, i: u32) -> f64 {
    e.timelines[s].end[i as usize] - e.timelines[s].start[i as usize]
}

/// The compute op of stage `s` on `row`, `layer` and `phase` in its last micro-batch's backward
/// (or first micro-batch's forward).
fn compute_op(g: &Generated, s: usize, forward: bool, layer: u32, row: u32, phase: Phase) -> u32 {
    let steps = &g.steps[s];
    let (_, range) = if forward {
        steps.iter().find(|(st, _)| st.forward && st.micro_batch == 0).unwrap()
    } else {
        steps.iter().rev().find(|(st, _)| !st.forward).unwrap()
    };
    let ops = &g.workload.programs[s].ops;
    range
        .clone()
        .find(|&i| {
            let op = &ops[i as usize];
            matches!(op.kind, OpKind::Compute { .. })
                && op.row == row
                && op.phase == phase
                && g.op_layer[s][i as usize] == layer
        })
        .unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-6
}

/// The bandwidth at which `bytes` take half of `ns`.
fn half_of(bytes: u64, ns: f64) -> f64 {
    bytes as f64 / (0.5 * ns)
}

#[test]
fn gradient_buckets_hide_under_the_backward_but_the_last() {
    // PP 1, DP 2, a bucket per layer (the first also holds the LM head and final norm, the last
    // is the embedding). Each bucket reduces in half a layer's backward, launched when its last
    // gradient is ready, only in the last micro-batch's backward: every bucket but the last
    // layer's and the embedding's ends under the backward, whatever the micro-batches.
    for m in [1, 4] {
        let p = plan(2, 1, 1, 1, m, DataParallel::Ddp);
        let o = Overlap { bucket_size: Some(layer_params()), ..on(&p) };
        let (g0, e0) = run(&p, &o, 1e9);
        let attn0 = compute_op(&g0, 0, false, 0, R_ATTN, Phase::WeightGrad);
        let mlp0 = compute_op(&g0, 0, false, 0, R_MLP, Phase::WeightGrad);
        let layer_bwd = e0.timelines[0].end[attn0 as usize] - e0.timelines[0].start[mlp0 as usize];
        let bw = half_of(4 * layer_params(), layer_bwd);
        let (g, e) = run(&p, &o, bw);
        let buckets = colls(&g, 0, R_GRAD, DP);
        assert_eq!(buckets.len(), 9, "{buckets:?}");
        assert_eq!(buckets[1].1, 4 * layer_params());
        assert_eq!(buckets[8].1, 4 * 64 * 1024);
        let tl = &e.timelines[0];
        let ex = exposure(&g.workload.programs[0], tl, e.end_ns);
        for &(i, _) in &buckets[..7] {
            assert_eq!(ex.exposed[i as usize], 0.0, "m={m}: bucket {i} is hidden");
        }
        // Closed form: layer 0's bucket starts when its attention's weight gradient is done
        // (A0); the embedding's after the embedding's backward (E) and after layer 0's; then
        // the optimizer step.
        let a0 = tl.end[compute_op(&g, 0, false, 0, R_ATTN, Phase::WeightGrad) as usize];
        let emb = compute_op(&g, 0, false, NO_LAYER, R_EMB, Phase::WeightGrad);
        let end_backward = tl.end[emb as usize];
        let (r0, re) = (buckets[7].1 as f64 / bw, buckets[8].1 as f64 / bw);
        assert!(close(tl.start[buckets[7].0 as usize], a0));
        let opt = colls_free_optimizer(&g, &e);
        let want = end_backward.max(a0 + r0) + re + opt;
        assert!(close(e.end_ns, want), "m={m}: {} vs {want}", e.end_ns);
        // Exposed: the last layer's bucket past the embedding's backward, and the embedding's.
        let exposed: f64 = buckets.iter().map(|&(i, _)| ex.exposed[i as usize]).sum();
        assert!(close(exposed, (a0 + r0 - end_backward).max(0.0) + re), "{exposed}");
    }
}

/// The optimizer step's duration on stage 0.
fn colls_free_optimizer(g: &Generated, e: &Execution) -> f64 {
    let ops = &g.workload.programs[0].ops;
    let i = (0..ops.len() as u32).rev().find(|&i| ops[i as usize].row == R_OPT).unwrap();
    duration(e, 0, i)
}

#[test]
fn without_the_gradient_overlap_one_bucket_runs_after_the_backward() {
    // --overlap-grad-reduce off: bucketing off, the whole buffer reduces once the backward is
    // done, fully exposed: iteration = backward end + 4·params/bw + optimizer.
    let p = plan(2, 1, 1, 1, 4, DataParallel::Ddp);
    let o = Overlap { grad_reduce: Some(false), ..Overlap::default() };
    let bw = 1e3;
    let (g, e) = run(&p, &o, bw);
    let buckets = colls(&g, 0, R_GRAD, DP);
    let params = 8 * layer_params() + 2 * 64 * 1024 + 1024;
    assert_eq!(buckets, vec![(buckets[0].0, 4 * params)]);
    let emb = compute_op(&g, 0, false, NO_LAYER, R_EMB, Phase::WeightGrad);
    let want = e.timelines[0].end[emb as usize] + (4 * params) as f64 / bw + colls_free_optimizer(&g, &e);
    assert!(close(e.end_ns, want), "{} vs {want}", e.end_ns);
}

#[test]
fn later_pipeline_stages_reduce_in_one_bucket_when_their_backward_ends() {
    // PP 2, one micro-batch: Megatron-Core buckets only the first stage; the last stage's
    // gradients (its 4 layers, final norm and LM head) reduce as one bucket when its last
    // weight gradient is done, under stage 0's backward.
    let p = plan(4, 1, 2, 1, 1, DataParallel::Ddp);
    let o = Overlap { bucket_size: Some(layer_params()), ..on(&p) };
    let bw = 1e3;
    let (g, e) = run(&p, &o, bw);
    let last = colls(&g, 1, R_GRAD, DP);
    assert_eq!(last.iter().map(|b| b.1).collect::<Vec<_>>(), vec![4 * (4 * layer_params() + 64 * 1024 + 1024)]);
    let a4 = compute_op(&g, 1, false, 4, R_ATTN, Phase::WeightGrad);
    assert!(close(e.timelines[1].start[last[0].0 as usize], e.timelines[1].end[a4 as usize]));
    // Stage 0: a bucket per layer (4) and the embedding's.
    assert_eq!(colls(&g, 0, R_GRAD, DP).len(), 5);
}

#[test]
fn parameter_gathers_hide_under_the_forward_but_the_first() {
    // Distributed optimizer, --overlap-param-gather: the gathers of the update run in the first
    // micro-batch's forward, bucket by bucket in forward order (embedding, layer 0, …), each
    // dispatched when the previous one is waited for. Layer k's gather (half a layer's forward)
    // runs under layer k − 1's forward; the embedding's and layer 0's are exposed, with one
    // micro-batch as with several (only the first forward gathers).
    for m in [1, 2] {
        let p = plan(2, 1, 1, 1, m, DataParallel::DistributedOptimizer);
        let o = Overlap { bucket_size: Some(layer_params()), ..on(&p) };
        let (g0, e0) = run(&p, &o, 1e9);
        let (a, mlp) =
            (compute_op(&g0, 0, true, 1, R_ATTN, Phase::Forward), compute_op(&g0, 0, true, 1, R_MLP, Phase::Forward));
        let layer_fwd = duration(&e0, 0, a) + duration(&e0, 0, mlp);
        let bw = half_of(2 * layer_params(), layer_fwd);
        let (g, e) = run(&p, &o, bw);
        let gathers = colls(&g, 0, R_GATHER, DP);
        assert_eq!(gathers.len(), 9);
        let first_backward = g.steps[0].iter().find(|(s, _)| !s.forward).unwrap().1.start;
        assert!(gathers.iter().all(|&(i, _)| i < first_backward), "all in the first forward, none after the step");
        let tl = &e.timelines[0];
        let ex = exposure(&g.workload.programs[0], tl, e.end_ns);
        for &(i, _) in &gathers[2..] {
            assert_eq!(ex.exposed[i as usize], 0.0, "m={m}: gather {i} hidden");
        }
        // Closed form: the embedding's gather (g_e) from the start, layer 0's (g_0) after it,
        // under the embedding's forward (f_e < g_0); layer 0's attention starts when layer 0's
        // gather is done: exposed g_e + g_0 − f_e.
        let (ge, g0) = (gathers[0].1 as f64 / bw, gathers[1].1 as f64 / bw);
        assert_eq!(gathers[1].1, 2 * layer_params());
        let attn0 = compute_op(&g, 0, true, 0, R_ATTN, Phase::Forward);
        assert!(close(tl.start[attn0 as usize], ge + g0), "{} vs {}", tl.start[attn0 as usize], ge + g0);
        let fe = duration(&e, 0, compute_op(&g, 0, true, NO_LAYER, R_EMB, Phase::Forward));
        assert!(fe < g0);
        let exposed: f64 = gathers.iter().map(|&(i, _)| ex.exposed[i as usize]).sum();
        assert!(close(exposed, ge + g0 - fe), "m={m}: {exposed} vs {}", ge + g0 - fe);
    }
}

/// Ops of stage 0, layer 0, `row` and `phase` in issue order (the first micro-batch's forward,
/// or with `forward` false the last micro-batch's backward): (computes, copies).
fn block_ops(g: &Generated, forward: bool, row: u32, phase: Phase) -> (Vec<u32>, Vec<u32>) {
    let steps = &g.steps[0];
    let (_, range) = if forward {
        steps.iter().find(|(st, _)| st.forward && st.micro_batch == 0).unwrap()
    } else {
        steps.iter().rev().find(|(st, _)| !st.forward).unwrap()
    };
    let ops = &g.workload.programs[0].ops;
    let mine: Vec<u32> = range
        .clone()
        .filter(|&i| ops[i as usize].row == row && ops[i as usize].phase == phase && g.op_layer[0][i as usize] == 0)
        .collect();
    let is_compute = |i: &&u32| matches!(ops[**i as usize].kind, OpKind::Compute { .. });
    let computes = mine.iter().filter(is_compute).copied().collect();
    let copies = mine.iter().filter(|i| !is_compute(i)).copied().collect();
    (computes, copies)
}

#[test]
fn tp_ring_exchange_pays_the_larger_of_gemm_piece_and_copy_per_step() {
    // --tp-comm-overlap, QKV forward at TP t (Transformer Engine's ring exchange): t GEMM pieces
    // of g, t − 1 copies of S/t to the next rank, c each; piece i waits for copy i − 1, copy i
    // for copy i − 1. The local piece needs no copy, so the gather and GEMM take
    // g + (t − 1)·max(g, c): the copies hidden while c ≤ g, exposed by (t − 1)(c − g) beyond.
    let act = 2 * 1024 * 1024u64; // S = 2·b·s·h
    for t in [2u32, 4] {
        let p = plan(t, t, 1, 1, 1, DataParallel::Ddp);
        let o = Overlap { tp_comm: Some(true), ..Overlap::default() };
        let (g0, e0) = run(&p, &o, 1e9);
        let (computes, _) = block_ops(&g0, true, R_ATTN, Phase::Forward);
        // t ring pieces, the rest of the block, 4 pipeline splits.
        assert_eq!(computes.len(), t as usize + 1 + 4);
        let g = duration(&e0, 0, computes[0]);
        for factor in [0.5, 1.0, 3.0] {
            let c = factor * g;
            let (gen, e) = run(&p, &o, (act / t as u64) as f64 / c);
            let (computes, copies) = block_ops(&gen, true, R_ATTN, Phase::Forward);
            let tl = &e.timelines[0];
            let begin = tl.start[computes[0] as usize];
            assert_eq!(tl.start[copies[0] as usize], begin, "the first copy starts with the first piece");
            let end = tl.end[computes[t as usize - 1] as usize];
            let want = g + (t - 1) as f64 * g.max(c);
            assert!(close(end - begin, want), "t={t}, c = {factor}·g: {} vs {want}", end - begin);
        }
    }
}

#[test]
fn tp_pipelined_scatter_exposes_the_last_split() {
    // The reduce-scatter after the output projection (TE's pipeline method): 4 GEMM splits of p
    // ns; split i's output (S/4) reduce-scattered by userbuffers as t − 1 copies of S/(4t), r in
    // all, after split i and split i − 1's: done at p + 4r when r ≥ p, 4p + r when r ≤ p.
    let act = 2 * 1024 * 1024u64;
    let t = 4u32;
    let p = plan(t, t, 1, 1, 1, DataParallel::Ddp);
    let o = Overlap { tp_comm: Some(true), ..Overlap::default() };
    let (g0, e0) = run(&p, &o, 1e9);
    let (computes, _) = block_ops(&g0, true, R_ATTN, Phase::Forward);
    let split = duration(&e0, 0, computes[t as usize + 1]);
    for factor in [0.5, 3.0] {
        let r = factor * split;
        let bw = ((t - 1) as u64 * act / 4 / t as u64) as f64 / r;
        let (gen, e) = run(&p, &o, bw);
        let (computes, copies) = block_ops(&gen, true, R_ATTN, Phase::Forward);
        let tl = &e.timelines[0];
        let begin = tl.start[computes[t as usize + 1] as usize];
        let end = tl.end[*copies.last().unwrap() as usize];
        let want = if r >= split { split + 4.0 * r } else { 4.0 * split + r };
        assert!(close(end - begin, want), "r = {factor}·p: {} vs {want}", end - begin);
        // The MLP starts when the last split's reduce-scatter is done.
        let (mlp, _) = block_ops(&gen, true, R_MLP, Phase::Forward);
        assert!(close(tl.start[mlp[0] as usize], end), "{} vs {end}", tl.start[mlp[0] as usize]);
    }
}

#[test]
fn tp_bulk_overlaps_hide_only_under_the_qkv_layer_s_own_gemms() {
    // Backward of the attention block under TE's bulk overlaps, issued inside the qkv layer's
    // backward (layernorm_linear.py): the re-gather of its input for the weight gradient,
    // (t − 1) copies of S/t, a in all, runs under the qkv data-gradient GEMM d only (not the
    // proj layer or core attention before it), and the weight-gradient GEMM w starts after both,
    // at d + max(0, a − d); the input gradient's reduce-scatter, as many bytes (a again), runs
    // under w only: exposed max(0, a − w) and max(0, a − d), in closed form.
    let act = 2 * 1024 * 1024u64;
    let t = 2u32;
    let p = plan(t, t, 1, 1, 1, DataParallel::Ddp);
    let o = Overlap { tp_comm: Some(true), ..Overlap::default() };
    let (g0, e0) = run(&p, &o, 1e9);
    let (data, _) = block_ops(&g0, false, R_ATTN, Phase::InputGrad);
    let (weight, _) = block_ops(&g0, false, R_ATTN, Phase::WeightGrad);
    let d = duration(&e0, 0, *data.last().unwrap());
    let w = duration(&e0, 0, *weight.last().unwrap());
    let x = tp_linears(&model(), &p, &Device::ideal()).attn;
    assert!(close(d, x.first_dgrad.ns) && close(w, x.first_wgrad.ns), "{d} {w} vs {x:?}");
    // The ring pieces, then the rest of the block's data gradient (core attention) before d.
    assert!(data.len() > t as usize + 1 && duration(&e0, 0, data[t as usize]) > 0.0);
    for factor in [0.5, 2.0, 4.0] {
        let a = factor * d;
        let (gen, e) = run(&p, &o, ((t - 1) as u64 * act / t as u64) as f64 / a);
        let (data, comm_ig) = block_ops(&gen, false, R_ATTN, Phase::InputGrad);
        let (weight, gather) = block_ops(&gen, false, R_ATTN, Phase::WeightGrad);
        // The reduce-scatter: the input-gradient copies after the ring exchange's t − 1 steps.
        let scatter = &comm_ig[2 * (t as usize - 1)..];
        assert_eq!((gather.len(), scatter.len()), (2 * (t as usize - 1), 2 * (t as usize - 1)));
        let tl = &e.timelines[0];
        let (d_op, w_op) = (*data.last().unwrap() as usize, *weight.last().unwrap() as usize);
        assert!(close(tl.start[gather[0] as usize], tl.start[d_op]), "the gather starts with the qkv dgrad GEMM");
        let wait = tl.start[w_op] - tl.start[d_op];
        assert!(close(wait, d.max(a)), "a = {factor}·d: {wait} vs {}", d.max(a));
        assert!(close(tl.start[scatter[0] as usize], tl.start[w_op]), "the scatter starts with the wgrad GEMM");
        let ex = exposure(&gen.workload.programs[0], tl, e.end_ns);
        let exposed = |ops: &[u32]| ops.iter().map(|&i| ex.exposed[i as usize]).sum::<f64>();
        assert!(close(exposed(&gather), (a - d).max(0.0)), "gather {} vs {}", exposed(&gather), (a - d).max(0.0));
        assert!(close(exposed(scatter), (a - w).max(0.0)), "scatter {} vs {}", exposed(scatter), (a - w).max(0.0));
    }
}

#[test]
fn p2p_overlap_hides_the_pipeline_transfers() {
    // Interleaved PP 4 × 2 chunks, 8 micro-batches; each transfer takes a quarter of a chunk's
    // forward. With overlap_p2p_comm a receive is posted a step ahead, so once the sender has
    // sent before the receiver's previous compute began, the compute that needs it starts the
    // moment the previous one ends; without it (receive posted after the previous compute, send
    // waited on) it starts a transfer time later at least.
    let p = plan(4, 1, 4, 2, 8, DataParallel::Ddp);
    let chunk_fwd = {
        let (g, e) = run(&p, &Overlap::default(), 1e9);
        let a = compute_op(&g, 0, true, 0, R_ATTN, Phase::Forward);
        duration(&e, 0, a) + duration(&e, 0, compute_op(&g, 0, true, 0, R_MLP, Phase::Forward))
    };
    let bytes = 2 * 1024 * 1024u64;
    let tau = 0.25 * chunk_fwd;
    let bw = bytes as f64 / tau;
    let gaps = |o: Overlap| -> Vec<f64> {
        let (g, e) = run(&p, &o, bw);
        let mut out = Vec::new();
        for s in 1..3usize {
            let ops = &g.workload.programs[s].ops;
            let tl = &e.timelines[s];
            let computes: Vec<u32> =
                (0..ops.len() as u32).filter(|&i| matches!(ops[i as usize].kind, OpKind::Compute { .. })).collect();
            for (r, op) in ops.iter().enumerate() {
                let OpKind::Recv { peer, .. } = op.kind else { continue };
                let Some(k) = computes.iter().position(|&c| c as usize > r) else { continue };
                if k == 0 {
                    continue;
                }
                let (prev, next) = (computes[k - 1], computes[k]);
                // The matching send of the neighbour, by order on this direction.
                let nth =
                    ops[..r].iter().filter(|o| matches!(o.kind, OpKind::Recv { peer: q, .. } if q == peer)).count();
                let ns = (s as i32 + peer.offset) as usize;
                let sops = &g.workload.programs[ns].ops;
                let send = sops
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| matches!(o.kind, OpKind::Send { peer: q, .. } if q.offset == -peer.offset))
                    .nth(nth)
                    .unwrap()
                    .0;
                if e.timelines[ns].issued[send] <= tl.start[prev as usize] {
                    out.push(tl.start[next as usize] - tl.end[prev as usize]);
                }
            }
        }
        out
    };
    let on = gaps(Overlap::default());
    assert!(on.len() >= 8, "{}", on.len());
    assert!(on.iter().all(|&g| g.abs() < 1e-6), "{on:?}");
    let off = gaps(Overlap { p2p: Some(false), ..Overlap::default() });
    assert!(off.len() >= 8 && off.iter().all(|&g| g >= tau * (1.0 - 1e-9)), "{off:?}");
}

#[test]
fn interleaved_chunks_reduce_together_aligned_across_stages() {
    // PP 2 × 2 chunks, 4 micro-batches, --overlap-grad-reduce (align_grad_reduce): a chunk's
    // gradients (one bucket: the model is small) reduce when stage s has run s backward steps
    // past the chunk's last micro-batch; the last chunk to finish (chunk 0) at the end of the
    // backward. Chunk 1's reduction, taking half a chunk's backward, ends under chunk 0's last
    // backward steps; chunk 0's is exposed whole.
    let p = plan(4, 1, 2, 2, 4, DataParallel::Ddp);
    let o = on(&p);
    let chunk_bwd = {
        let (g, e) = run(&p, &o, 1e9);
        let (_, r) = g.steps[0].iter().rev().find(|(s, _)| !s.forward).unwrap();
        let ops = &g.workload.programs[0].ops;
        r.clone().filter(|&i| matches!(ops[i as usize].kind, OpKind::Compute { .. })).map(|i| duration(&e, 0, i)).sum()
    };
    let bytes = 4 * 2 * layer_params();
    let bw = half_of(bytes, chunk_bwd);
    let (g, e) = run(&p, &o, bw);
    for s in 0..2usize {
        let steps = &g.steps[s];
        let bwd: Vec<_> = steps.iter().filter(|(st, _)| !st.forward).collect();
        let last_of_chunk1 = bwd.iter().position(|(st, _)| st.chunk == 1 && st.micro_batch == 3).unwrap();
        let reductions = colls(&g, s, R_GRAD, DP);
        assert_eq!(reductions.len(), 2, "stage {s}: one bucket per chunk");
        let (chunk1, chunk0) = (reductions[0], reductions[1]);
        // Chunk 1 (2 layers; the LM head and final norm on the last stage) starts at the end of
        // the backward step s steps past its last one.
        let head = if s == 1 { 64 * 1024 + 1024 } else { 0 };
        assert_eq!(chunk1.1, 4 * (2 * layer_params() + head));
        let (_, r) = bwd[last_of_chunk1 + s];
        assert!(r.contains(&chunk1.0), "stage {s}: issued in that step");
        let tl = &e.timelines[s];
        let ops = &g.workload.programs[s].ops;
        // When a step's compute ends.
        let step_end = |r: &std::ops::Range<u32>| {
            r.clone()
                .filter(|&i| matches!(ops[i as usize].kind, OpKind::Compute { .. }))
                .map(|i| tl.end[i as usize])
                .fold(0.0, f64::max)
        };
        assert!(close(tl.start[chunk1.0 as usize], step_end(r)), "stage {s}");
        let ex = exposure(&g.workload.programs[s], tl, e.end_ns);
        if s == 0 {
            // Done before the backward is: it delays nothing (the pipeline transfers' gaps
            // leave a little of it uncovered by compute).
            let backward_end = step_end(&bwd.last().unwrap().1);
            assert!(tl.end[chunk1.0 as usize] < backward_end);
            assert!(close(tl.start[chunk0.0 as usize], backward_end));
            // Chunk 0 (2 layers and the embedding) after the last backward step, exposed whole.
            assert_eq!(chunk0.1, 4 * (2 * layer_params() + 64 * 1024));
            assert!(close(ex.exposed[chunk0.0 as usize], chunk0.1 as f64 / bw), "{}", ex.exposed[chunk0.0 as usize]);
        }
    }
}

#[test]
fn before_2024_09_zero_grad_starts_every_stages_first_gather() {
    // PP 2, distributed optimizer, --overlap-param-gather: stage 1 is unbucketed, so its whole
    // shard is one gather before its first forward. Today's code dispatches it from the first
    // forward pre-hook, after the activation has arrived at R: layer 4 starts at R + g. Megatron-
    // Core before 2024-09 dispatched it from zero_grad() with the iteration: it runs during the
    // pipeline fill and layer 4 starts at max(R, g).
    let p = plan(4, 1, 2, 1, 2, DataParallel::DistributedOptimizer);
    let bw = 1e3;
    let (late_g, late_e) = run(&p, &on(&p), bw);
    let (early_g, early_e) = run(&p, &Overlap { gather_at_zero_grad: Some(true), ..on(&p) }, bw);
    let start_of = |g: &Generated, e: &Execution| {
        let (gather, bytes) = colls(g, 1, R_GATHER, DP)[0];
        assert_eq!(colls(g, 1, R_GATHER, DP).len(), 1);
        let layer4 = compute_op(g, 1, true, 4, R_ATTN, Phase::Forward);
        (e.timelines[1].start[gather as usize], bytes as f64 / bw, e.timelines[1].start[layer4 as usize])
    };
    let (recv_end, g, late_layer4) = start_of(&late_g, &late_e);
    // Here the gather is shorter than the fill (stage 0's first gathers are in it too), so
    // dispatched at zero_grad it is hidden whole, and dispatched at the hook it is exposed whole.
    assert!(recv_end > g && g > 0.0, "{recv_end} {g}");
    assert!(close(late_layer4, recv_end + g), "{late_layer4} vs {}", recv_end + g);
    let (early_start, g_early, early_layer4) = start_of(&early_g, &early_e);
    assert_eq!((early_start, g_early), (0.0, g));
    assert!(close(early_layer4, recv_end.max(g)), "{early_layer4} vs {}", recv_end.max(g));
    assert!(early_e.end_ns < late_e.end_ns);
    // Stage 0 gathers from the start either way (its embedding's pre-hook runs first).
    assert_eq!(colls(&late_g, 0, R_GATHER, DP).len(), colls(&early_g, 0, R_GATHER, DP).len());
}
