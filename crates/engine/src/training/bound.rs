//! A lower bound on a plan's simulated iteration time, worked out without simulating it: what a
//! plan search screens its candidates with ([`super::search`]; `clustersim search` simulates only
//! the plans whose bound can still beat its k-th best, so its top k is exactly exhaustive
//! simulation's).
//!
//! The simulation runs each pipeline stage's program ([`super::generate`]) on the executor: every
//! compute op waits for the previous one (the builder's gate), and a *blocking* collective sits
//! between two computes. The analytical network prices every collective alone ([`Analytical`]:
//! no sharing), so a chain of ops that must run one after another takes at least the sum of their
//! times. The bound is the longest of these chains, with the same kernel times ([`Costs`]), the
//! same byte counts ([`kv_bytes`], [`moe_bytes`], [`buckets`]) and the same collective prices
//! ([`AlphaBeta`] on [`GroupShape::of`] the generator's [`groups`]) as the simulation:
//!
//! ```text
//! T ≥ max over stages s of
//!       pre(s) + W(s) + tail(s)                    stage s's own end
//!       pre(s) + W(s) + post(s) + tail(0)          stage 0's end after the last backward drains
//! W(s)    = m · Σ_chunks (F(s, c) + B(s, c))        stage s's chain over its m micro-batches
//! pre(s)  = Σ_{j<s} F(j, 0) + P                    micro-batch 0 reaching stage s (the fill)
//! post(s) = Σ_{j<s} B(j, 0) + P                    the last micro-batch's backward back to stage 0
//! ```
//!
//! F and B are a chunk's forward and backward step per micro-batch: every compute op, every
//! blocking collective (TP, CP and EP collectives of the forward; the output-gradient gathers and
//! MoE all-to-alls of the backward; the LM head's and cross-entropy's), and for a linear's
//! backward max(data, re-gather) + max(weight, input-gradient reduction), since the reduction
//! runs beside the weight gradient on the TP stream and the next block waits for both. With full
//! recompute B holds the forward again. P is one pipeline transfer (the cheaper of NVLink and the
//! NIC). tail(s) is what follows the last backward on stage s: the gradient reductions still to
//! run, one after another on each data-parallel communicator (without `--overlap-grad-reduce`
//! all of them; with it, without interleaving, whatever of their sum outlasts the last backward
//! step, in which they all start; interleaved, the first chunk's, which start after it), the tied
//! embedding's all-reduce, the optimizer step, and the parameter gathers that follow it
//! (distributed optimizer and ZeRO-1/2 without `--overlap-param-gather`). pre and post are the
//! pipeline's minimum bubble (1F1B: (p − 1)(F + B); interleaved: a chunk's, so 1/v of that).
//! Anything the bound cannot see for sure counts as zero: parameter gathers under the forward,
//! userbuffers' copies under `--tp-comm-overlap`, P2P waits in the steady state, and all
//! communication on a flow-model fabric.
//! The result is lowered by a relative 1e-9 for floating-point summation order. A test holds it
//! at or under the simulated time on every plan of several whole spaces, and holds its compute
//! to the simulated programs' compute exactly.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use super::costs::{optimizer_params, BlockTimes, Costs};
use super::generate::{groups, kv_bytes, moe_bytes, DpGroups, CP, DP_EP, EMB, EP, TP};
use super::overlap::{buckets, Overlap};
use super::plan::{DataParallel, Plan, Recompute};
use super::{mix, network_cost, TrainingInput};
use crate::compute::Device;
use crate::error::Result;
use crate::network::analytical::alpha_beta::{AlphaBeta, PriceMemo};
use crate::network::analytical::{CollectiveCost, GroupShape};
use crate::platform::Placement;
use crate::workload::{Collective, GroupId, Workload};

/// Relative slack for summation order: the bound adds the same terms as the simulation, not in
/// the same order.
const SLACK: f64 = 1e-9;

/// The layout a plan's groups depend on: TP, PP, CP, EP.
type LayoutKey = (u32, u32, u32, u32);
/// What a layer's kernels depend on: device, TP, CP, micro-batch size, SP, recompute.
type BlockKey = (usize, u32, u32, u32, bool, u8);

/// What a stage's tail depends on: TP, PP, VPP, CP, EP, the optimizer's kind, the gradient and
/// parameter-gather overlaps, the bucket size.
type TailKey = (u32, u32, u32, u32, u32, u8, bool, bool, u64);

/// Per stage, per chunk: its dense and MoE layers.
type ChunkLayers = Rc<Vec<Vec<(u32, u32)>>>;

/// A stage's tail pieces: the gradient reductions (ns, the longer of the two data-parallel
/// communicators' sums) of all its buckets and of its first chunk's, the tied embedding's
/// all-reduce, the parameter gathers after the optimizer, and the parameters it steps.
#[derive(Clone, Copy)]
struct Tail {
    reduce: f64,
    reduce_first_chunk: f64,
    emb: f64,
    gathers: f64,
    params: f64,
}

/// Kernel times of one device for one (TP, CP, MBS, SP, recompute): a dense and a MoE layer, the
/// embedding's and the head's forward and backward.
#[derive(Clone, Copy)]
struct Blocks {
    dense: BlockTimes,
    moe: BlockTimes,
    emb: (f64, f64),
    head: (f64, f64),
}

/// Lower bounds of many plans of one model on one cluster ([`TrainingInput`] but the plan and its
/// overlaps), sharing kernel times and collective prices between plans.
pub struct Screen<'a> {
    base: &'a TrainingInput,
    /// None on a fabric: communication is then bounded by zero.
    cost: Option<AlphaBeta>,
    placement: Rc<Placement>,
    shapes: HashMap<LayoutKey, Vec<GroupShape>>,
    prices: HashMap<(LayoutKey, Collective, GroupId, u64), f64>,
    blocks: HashMap<BlockKey, Blocks>,
    /// Per stage: the reductions and the tied embedding's all-reduce before the optimizer, the
    /// gathers after it, and the parameters its optimizer steps.
    tails: HashMap<TailKey, Rc<Vec<Tail>>>,
    /// Per (PP, VPP): per stage and chunk, its dense and MoE layers.
    layers: HashMap<(u32, u32), ChunkLayers>,
}

/// Per-micro-batch chain of a stage: each chunk's forward and backward step, and the tail.
#[derive(Clone)]
struct Stage {
    fwd: Vec<f64>,
    bwd: Vec<f64>,
    tail: f64,
}

impl<'a> Screen<'a> {
    /// A screen for the plans of `base`'s model and cluster; `memo` shares collective prices
    /// with the simulations of the same search.
    pub fn new(base: &'a TrainingInput, memo: Option<&Arc<Mutex<PriceMemo>>>) -> Result<Screen<'a>> {
        Ok(Screen::priced(base, Screen::cost(base, memo)?))
    }

    /// The collective prices of `base`'s cluster (None on a fabric): the fallible part of a screen.
    fn cost(base: &TrainingInput, memo: Option<&Arc<Mutex<PriceMemo>>>) -> Result<Option<AlphaBeta>> {
        Ok(match base.fabric {
            Some(_) => None,
            None => Some(AlphaBeta { memo: memo.cloned(), ..network_cost(base)? }),
        })
    }

    fn priced(base: &'a TrainingInput, cost: Option<AlphaBeta>) -> Screen<'a> {
        Screen {
            base,
            cost,
            placement: Rc::new(base.plan.placement()),
            shapes: HashMap::new(),
            prices: HashMap::new(),
            blocks: HashMap::new(),
            tails: HashMap::new(),
            layers: HashMap::new(),
        }
    }

    /// ns of collective `c` of `bytes` on group `g` of `plan`'s layout, as the simulation prices it.
    fn price(&mut self, plan: &Plan, c: Collective, g: GroupId, bytes: u64) -> Result<f64> {
        let Some(cost) = &self.cost else { return Ok(0.0) };
        let layout = (plan.tp, plan.pp, plan.cp, plan.ep);
        if let Some(&t) = self.prices.get(&(layout, c, g, bytes)) {
            return Ok(t);
        }
        let placement = &self.placement;
        let shapes = self.shapes.entry(layout).or_insert_with(|| {
            let (layout, groups) = groups(plan);
            let w = Workload {
                layout,
                groups,
                programs: Vec::new(),
                class_program: Vec::new(),
                rank_class: vec![0; plan.gpus as usize],
                rows: Vec::new(),
            };
            (0..w.groups.len() as GroupId).map(|g| GroupShape::of(&w, g, placement)).collect()
        });
        let t = cost.collective_ns(c, &shapes[g as usize], bytes)?;
        self.prices.insert((layout, c, g, bytes), t);
        Ok(t)
    }

    fn blocks(&mut self, ty: usize, acc: &Device, plan: &Plan) -> Blocks {
        let key = (ty, plan.tp, plan.cp, plan.mbs, plan.sp, plan.recompute as u8);
        let base = self.base;
        *self.blocks.entry(key).or_insert_with(|| {
            let costs = Costs { acc, model: &base.model, plan, flash_attention: base.flash_attention };
            let dense = costs.layer(false);
            Blocks {
                dense,
                moe: base.model.moe.as_ref().map_or(dense, |_| costs.layer(true)),
                emb: {
                    let (f, b) = costs.embedding();
                    (f.ns, b.ns)
                },
                head: {
                    let (f, b) = costs.head();
                    (f.ns, b.ns)
                },
            }
        })
    }

    /// Per stage: the gradient reductions of all its buckets and of its first chunk's, one after
    /// another on each data-parallel communicator, bucketed as the generator buckets them; the
    /// tied embedding's all-reduce (`emb_ar` on the first and last stage); the parameter gathers
    /// after the optimizer (distributed optimizer and ZeRO-1/2 without the gather overlap); and
    /// the parameters the optimizer steps.
    fn tails(
        &mut self,
        plan: &Plan,
        grad_reduce: bool,
        param_gather: bool,
        bucket_size: u64,
        emb_ar: f64,
    ) -> Result<Rc<Vec<Tail>>> {
        let key = (plan.tp, plan.pp, plan.vpp, plan.cp, plan.ep, plan.dp as u8, grad_reduce, param_gather, bucket_size);
        if let Some(t) = self.tails.get(&key) {
            return Ok(t.clone());
        }
        let model = &self.base.model;
        let (p, v) = (plan.pp, plan.vpp);
        let dp_groups = DpGroups::new(plan);
        let (ar, rs, ag) = (Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather);
        let gathers_after = matches!(plan.dp, DataParallel::Zero1 | DataParallel::Zero2)
            || plan.dp == DataParallel::DistributedOptimizer && !param_gather;
        let mut tails = Vec::with_capacity(p as usize);
        for s in 0..p {
            // Per communicator (DP, DP_EP): all buckets, the first chunk's.
            let (mut red, mut first, mut gathers) = ([0.0; 2], [0.0; 2], 0.0);
            for c in 0..v {
                // Megatron-Core buckets only the first stage's first chunk (and only with the overlap).
                let size = (grad_reduce && s == 0 && c == 0).then_some(bucket_size);
                for bucket in buckets(model, plan, s, c, size) {
                    let Some(g) = dp_groups.of(bucket.buffer) else { continue };
                    let kind = if dp_groups.ddp { ar } else { rs };
                    let x = self.price(plan, kind, g, 4 * bucket.params)?;
                    let k = usize::from(g == DP_EP);
                    red[k] += x;
                    if c == 0 {
                        first[k] += x;
                    }
                    if gathers_after {
                        gathers += self.price(plan, ag, g, 2 * bucket.params)?;
                    }
                }
            }
            tails.push(Tail {
                reduce: red[0].max(red[1]),
                reduce_first_chunk: first[0].max(first[1]),
                emb: if s == 0 || s == p - 1 { emb_ar } else { 0.0 },
                gathers,
                params: optimizer_params(model, plan, s),
            });
        }
        let tails = Rc::new(tails);
        self.tails.insert(key, tails.clone());
        Ok(tails)
    }

    /// Per stage and chunk of `plan`, its dense and MoE layers.
    fn layers(&mut self, plan: &Plan) -> ChunkLayers {
        let model = &self.base.model;
        self.layers
            .entry((plan.pp, plan.vpp))
            .or_insert_with(|| {
                let count = |s, c| {
                    let moe = plan.chunk_layers(model.layers, s, c).filter(|&l| model.is_moe_layer(l)).count() as u32;
                    (plan.chunk_layers(model.layers, s, c).len() as u32 - moe, moe)
                };
                Rc::new((0..plan.pp).map(|s| (0..plan.vpp).map(|c| count(s, c)).collect()).collect())
            })
            .clone()
    }

    /// A lower bound on the iteration time (ns) that the simulation gives `plan` with `overlap`
    /// (module doc), for a valid plan ([`Plan::validate`]); errors are `train`'s for its overlaps.
    pub fn lower_bound_ns(&mut self, plan: &Plan, overlap: &Overlap) -> Result<f64> {
        let base = self.base;
        let model = &base.model;
        let ov = overlap.resolve(plan)?;
        let types: Vec<&Device> = match &base.mix {
            None => vec![&base.accelerator],
            Some(m) => mix::devices(plan, &base.accelerator, Some(m))?.types,
        };
        let (t, p, v, m) = (plan.tp, plan.pp, plan.vpp, plan.micro_batches());
        let (tp, sp) = (t > 1, plan.sp);
        let b = plan.mbs as u64;
        let act = 2 * b * (plan.seq / plan.cp as u64) * model.hidden;
        let tp_overlap = ov.tp_comm;
        // Collective prices of one micro-batch's layer (zero where the generator issues none).
        let mut pr = |c, g, bytes| self.price(plan, c, g, bytes);
        let (ag, rs, ar) = (Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce);
        let gather = if tp && sp { pr(ag, TP, act)? } else { 0.0 };
        let reduce = match (tp, sp) {
            (false, _) => 0.0,
            (true, true) => pr(rs, TP, act)?,
            (true, false) => pr(ar, TP, act)?,
        };
        let kv = if plan.cp > 1 { pr(ag, CP, kv_bytes(model, plan))? } else { 0.0 };
        let (a2a_bytes, etp, counts) = moe_bytes(model, plan);
        let a2a = if plan.ep > 1 { pr(Collective::AllToAll, EP, a2a_bytes)? } else { 0.0 };
        let counts = if tp || plan.ep > 1 { pr(ag, TP, counts)? } else { 0.0 };
        let (etp_ag, etp_rs) = if tp { (pr(ag, TP, etp)?, pr(rs, TP, etp)?) } else { (0.0, 0.0) };
        let ce = if tp { 3.0 * pr(ar, TP, 4 * b * (plan.seq / plan.cp as u64))? } else { 0.0 };
        let tied = model.tied() && p > 1;
        let emb_ar = if tied { pr(ar, EMB, 4 * model.vocab * model.hidden / t as u64)? } else { 0.0 };
        // Under --tp-comm-overlap the dense blocks' TP communication is userbuffers' copies, not
        // counted; the MoE dispatcher's collectives stay.
        let (gather_ub, reduce_ub) = if tp_overlap { (0.0, 0.0) } else { (gather, reduce) };
        // Backward of a linear: max(data, re-gather) + max(weight, input-gradient reduction).
        let linear_b = |d: f64, w: f64, regather: f64, red: f64| d.max(regather) + w.max(red);

        let tails = self.tails(plan, ov.grad_reduce, ov.param_gather, ov.bucket_size, emb_ar)?;
        let layers = self.layers(plan);

        let mut stages: Option<Vec<Stage>> = None;
        for (ty, acc) in types.iter().enumerate() {
            let bl = self.blocks(ty, acc, plan);
            let costs = Costs { acc, model, plan, flash_attention: base.flash_attention };
            let layer_f = |bt: &BlockTimes, moe: bool| {
                let attn = gather_ub + kv + bt.attn_fwd.ns + reduce_ub;
                let mlp = match moe {
                    true => counts + a2a + etp_ag + bt.mlp_fwd.ns + etp_rs + a2a,
                    false => gather_ub + bt.mlp_fwd.ns + reduce_ub,
                };
                attn + mlp
            };
            let layer_b = |bt: &BlockTimes, moe: bool| {
                let recompute = if plan.recompute == Recompute::Full { layer_f(bt, moe) } else { 0.0 };
                let mlp = match moe {
                    true => a2a + etp_ag + bt.mlp_bwd_data.ns + bt.mlp_bwd_weight.ns + etp_rs + a2a,
                    false => gather_ub + linear_b(bt.mlp_bwd_data.ns, bt.mlp_bwd_weight.ns, gather_ub, reduce_ub),
                };
                let attn = kv + gather_ub + linear_b(bt.attn_bwd_data.ns, bt.attn_bwd_weight.ns, gather_ub, reduce_ub);
                recompute + mlp + attn
            };
            let (dense_f, dense_b) = (layer_f(&bl.dense, false), layer_b(&bl.dense, false));
            let (moe_f, moe_b) = (layer_f(&bl.moe, true), layer_b(&bl.moe, true));
            let mut here = Vec::with_capacity(p as usize);
            for s in 0..p {
                let (mut fwd, mut bwd) = (Vec::with_capacity(v as usize), Vec::with_capacity(v as usize));
                for c in 0..v {
                    let (mut f, mut bw) = (0.0, 0.0);
                    if s == 0 && c == 0 {
                        f += bl.emb.0 + reduce;
                        bw += gather + bl.emb.1;
                    }
                    let (dense, moe) = layers[s as usize][c as usize];
                    f += dense as f64 * dense_f + moe as f64 * moe_f;
                    bw += dense as f64 * dense_b + moe as f64 * moe_b;
                    if s == p - 1 && c == v - 1 {
                        f += gather + bl.head.0 + ce;
                        bw += linear_b(bl.head.1 / 2.0, bl.head.1 / 2.0, gather, reduce);
                    }
                    fwd.push(f);
                    bwd.push(bw);
                }
                let tl = tails[s as usize];
                // The reductions the optimizer waits for. Without the overlap they all start after
                // the backward. With it (the last micro-batch's backward starts them): without
                // interleaving every bucket starts within the stage's last step (the backward of
                // chunk 0), so they end at least max(that step, their sum) after it starts; with
                // interleaving chunk 0's start after that step.
                let reduce = match (ov.grad_reduce, v) {
                    (false, _) => tl.reduce,
                    (true, 1) => (tl.reduce - bwd[0]).max(0.0),
                    (true, _) => tl.reduce_first_chunk,
                };
                let tail = reduce + tl.emb + costs.optimizer(tl.params).ns + tl.gathers;
                here.push(Stage { fwd, bwd, tail });
            }
            // Each piece at the fastest type's.
            stages = Some(match stages {
                None => here,
                Some(old) => old
                    .into_iter()
                    .zip(here)
                    .map(|(a, b)| Stage {
                        fwd: a.fwd.iter().zip(&b.fwd).map(|(x, y)| x.min(*y)).collect(),
                        bwd: a.bwd.iter().zip(&b.bwd).map(|(x, y)| x.min(*y)).collect(),
                        tail: a.tail.min(b.tail),
                    })
                    .collect(),
            });
        }
        let stages = stages.unwrap_or_default();
        let tail0 = stages.first().map_or(0.0, |s| s.tail);
        // A pipeline transfer between neighbouring stages (the activation or its gradient), at
        // the cheaper of the two paths it may take.
        let p2p_bytes = if sp { act / t as u64 } else { act };
        let hop = match (&self.cost, p > 1) {
            (Some(cost), true) => cost.transfer_ns(true, p2p_bytes)?.min(cost.transfer_ns(false, p2p_bytes)?),
            _ => 0.0,
        };
        let (mut pre, mut post, mut best) = (0.0, 0.0, 0.0f64);
        for st in &stages {
            let work = m as f64 * (st.fwd.iter().sum::<f64>() + st.bwd.iter().sum::<f64>());
            best = best.max(pre + work + st.tail).max(pre + work + post + tail0);
            pre += st.fwd[0] + hop;
            post += st.bwd[0] + hop;
        }
        Ok(best * (1.0 - SLACK))
    }
}

/// Lower bounds (ns) of `plans` (each a valid plan and its overlaps) on `base`'s model and
/// cluster, worked out in parallel on rayon's threads; 0 where a plan is refused as input (its
/// simulation then says why). An internal error is returned.
pub fn lower_bounds(
    base: &TrainingInput,
    plans: &[(&Plan, &Overlap)],
    memo: Option<&Arc<Mutex<PriceMemo>>>,
) -> Result<Vec<f64>> {
    use rayon::prelude::*;
    let cost = Screen::cost(base, memo)?;
    let chunks: Vec<Vec<f64>> = plans
        .par_chunks(4096)
        .map(|chunk| {
            let mut screen = Screen::priced(base, cost.clone());
            chunk
                .iter()
                .map(|(plan, ov)| match screen.lower_bound_ns(plan, ov) {
                    Err(e) if e.is_internal() => Err(e),
                    bound => Ok(bound.unwrap_or(0.0)),
                })
                .collect::<Result<Vec<f64>>>()
        })
        .collect::<Result<_>>()?;
    Ok(chunks.concat())
}

#[cfg(test)]
mod tests {
    use super::super::generate::generate_with;
    use super::super::model::Model;
    use super::super::search::{enumerate, Batch, Space};
    use super::super::{run_training, Network};
    use super::*;
    use crate::training::fixtures;
    use crate::workload::OpKind;

    fn base(model: Model, gpus: u32, gbs: u32) -> TrainingInput {
        let network = Network { nvlink_busbw: 300.0, nvls_busbw: None, nic_busbw: 40.0, nics_per_server: 8 };
        TrainingInput { network, ..fixtures::input(model, Plan { gbs, ..fixtures::plan(gpus, 1, 1) }) }
    }

    /// The bound of every plan of a space (overlaps included) against its simulation.
    fn check_space(input: &TrainingInput, space: &Space) -> usize {
        let plans =
            enumerate(&input.model, &input.plan, &Overlap::default(), Batch::Exact(input.plan.gbs), space).unwrap();
        let mut screen = Screen::new(input, None).unwrap();
        for c in &plans.candidates {
            let i = TrainingInput { plan: c.plan.clone(), overlap: c.overlap, allow_oom: true, ..input.clone() };
            let sim = run_training(&i, &mut |_| true).unwrap().iteration_s * 1e9;
            let bound = screen.lower_bound_ns(&c.plan, &c.overlap).unwrap();
            assert!(bound <= sim && bound > 0.0, "{:?} {:?}: bound {bound} > simulated {sim}", c.plan, c.overlap);
        }
        plans.candidates.len()
    }

    #[test]
    fn the_bound_never_exceeds_the_simulation_on_a_dense_space() {
        let model = Model { name: "small".into(), kv_heads: 4, seq_len: 1024, ..fixtures::model(4, 512, 8, 2048) };
        let n = check_space(&base(model, 16, 16), &Space::default());
        assert!(n > 1000, "{n}");
    }

    #[test]
    fn the_bound_never_exceeds_the_simulation_on_a_moe_space() {
        let mut model = fixtures::model(2, 256, 4, 1024);
        model.moe = Some(super::super::model::Moe {
            experts: 8,
            topk: 2,
            expert_ffn: 512,
            shared_experts: 0,
            shared_ffn: 0,
            dense_layers: 1,
        });
        let space = Space { recompute: Some(vec![Recompute::None, Recompute::Full]), ..Space::default() };
        let n = check_space(&base(model, 16, 16), &space);
        assert!(n > 200, "{n}");
    }

    #[test]
    fn it_counts_every_compute_op_of_the_program() {
        // With one stage the bound is at least the stage's compute chain: the sum of every compute
        // op the generator issues, with and without the TP overlap's split GEMMs.
        let model = Model { name: "small".into(), kv_heads: 4, seq_len: 1024, ..fixtures::model(4, 512, 8, 2048) };
        let input = base(model, 8, 8);
        let space = Space { pp: Some(vec![1]), ..Space::default() };
        let plans = enumerate(&input.model, &input.plan, &Overlap::default(), Batch::Exact(8), &space).unwrap();
        let mut screen = Screen::new(&input, None).unwrap();
        assert!(plans.candidates.iter().any(|c| c.overlap.tp_comm == Some(true)));
        for c in &plans.candidates {
            let g = generate_with(&input.model, &c.plan, &input.accelerator, true, &c.overlap).unwrap();
            let compute: f64 = g.workload.programs[0]
                .ops
                .iter()
                .map(|op| if let OpKind::Compute { ns, .. } = op.kind { ns } else { 0.0 })
                .sum();
            let bound = screen.lower_bound_ns(&c.plan, &c.overlap).unwrap();
            assert!(bound >= compute * (1.0 - 2e-9), "{:?}: {bound} < {compute}", c.plan);
        }
    }
}
