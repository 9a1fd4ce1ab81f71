//! The space of parallel plans for one model on one cluster, enumerated in a fixed order, and
//! the overlaps each can take.
//!
//! Candidates: TP, PP and CP over the divisors of the GPUs (TP·PP·CP | GPUs, DP = the rest), EP
//! over the divisors of DP (MoE models only), VPP over the divisors of layers / PP (PP > 1), the
//! micro-batch size over the divisors of the local batch GBS / DP, SP on and off (TP > 1),
//! recompute none / selective / full, and DDP, Megatron's distributed optimizer and ZeRO-1/2/3
//! (only DDP when DP·CP = 1: nothing to shard). A candidate is a valid plan when
//! [`Plan::validate`] accepts it — `train`'s rules, one definition. Whether it fits in memory is
//! `train`'s [`super::memory::memory`], which a search works out only for the plans it reaches.
//!
//! The global batch is either exact, or at most N: each plan then takes the largest multiple of
//! its DP not above N, as Calculon's `llm-optimal-execution` does (calculon-ai/calculon,
//! `calculon/llm/optimal_execution.py`, `get_batch_size`), so that GPU counts with awkward factors
//! still have plans.

use serde::Deserialize;

use super::model::Model;
use super::overlap::Overlap;
use super::plan::{DataParallel, Plan, Recompute};
use crate::error::{InputError, Result};
use crate::layout::divisors;

/// The global batch size (sequences) of the plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Batch {
    Exact(u32),
    /// The largest multiple of each plan's DP that is at most this.
    AtMost(u32),
}

/// Which values each axis may take; `None` = every value the rules allow.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Space {
    pub tp: Option<Vec<u32>>,
    pub pp: Option<Vec<u32>>,
    pub vpp: Option<Vec<u32>>,
    pub ep: Option<Vec<u32>>,
    pub cp: Option<Vec<u32>>,
    pub mbs: Option<Vec<u32>>,
    pub sp: Option<Vec<bool>>,
    pub recompute: Option<Vec<Recompute>>,
    pub dp: Option<Vec<DataParallel>>,
    /// `--overlap-grad-reduce` (tried on only where DP·CP > 1: there is nothing to reduce else).
    pub grad_reduce: Option<Vec<bool>>,
    /// `--overlap-param-gather` (on only with the distributed optimizer and the gradient overlap).
    pub param_gather: Option<Vec<bool>>,
    /// `--tp-comm-overlap` (on only with SP and each TP group inside one server).
    pub tp_comm: Option<Vec<bool>>,
}

/// The valid plans of a space, and how many combinations of the axes' values were tried to find
/// them, valid or not (what Calculon counts as its candidates).
#[derive(Debug, Clone, PartialEq)]
pub struct Enumeration {
    pub candidates: Vec<Candidate>,
    pub visited: u64,
}

/// A valid plan with its overlaps (its memory per GPU is [`super::memory::memory`]'s, worked out where needed:
/// a search checks it only for the plans it reaches).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub plan: Plan,
    pub overlap: Overlap,
}

const RECOMPUTE: [Recompute; 3] = [Recompute::None, Recompute::Selective, Recompute::Full];
const SHARDING: [DataParallel; 5] = [
    DataParallel::Ddp,
    DataParallel::DistributedOptimizer,
    DataParallel::Zero1,
    DataParallel::Zero2,
    DataParallel::Zero3,
];

/// Every valid plan of `space` for `model` on the cluster of `cluster` (its gpus,
/// gpus_per_server and seq; the other fields are ignored), in a fixed order (TP, PP, CP, EP, VPP,
/// MBS, SP, recompute, data-parallel kind, then the overlaps grad_reduce, param_gather, tp_comm;
/// each ascending, off before on), and the number of
/// combinations tried. The overlaps not searched (P2P, bucket size) are `overlap`'s.
pub fn enumerate(model: &Model, cluster: &Plan, overlap: &Overlap, batch: Batch, space: &Space) -> Result<Enumeration> {
    // The cluster and model checked by train's rules on the plainest plan: their errors as train
    // reports them, not as "no valid plan".
    let gbs = match batch {
        Batch::Exact(n) | Batch::AtMost(n) => n,
    };
    if gbs == 0 {
        return Err(InputError::field("plan", "gbs", "must be at least 1"));
    }
    let plainest = Plan { tp: 1, pp: 1, vpp: 1, ep: 1, cp: 1, mbs: 1, gbs: cluster.gpus.max(1), ..cluster.clone() };
    plainest.validate(model)?;
    let keep = |all: Vec<u64>, only: &Option<Vec<u32>>| -> Vec<u32> {
        all.into_iter().map(|v| v as u32).filter(|v| only.as_ref().is_none_or(|o| o.contains(v))).collect()
    };
    let gpus = cluster.gpus;
    let mut out = Vec::new();
    let mut visited = 0;
    for tp in keep(divisors(gpus as u64), &space.tp) {
        for pp in keep(divisors((gpus / tp) as u64), &space.pp) {
            for cp in keep(divisors((gpus / (tp * pp)) as u64), &space.cp) {
                let dp = gpus / (tp * pp * cp);
                let gbs = match batch {
                    Batch::Exact(n) => n,
                    Batch::AtMost(n) => n / dp * dp,
                };
                if gbs == 0 || !gbs.is_multiple_of(dp) {
                    continue;
                }
                let experts = if model.moe.is_some() { divisors(dp as u64) } else { vec![1] };
                let chunks = if pp > 1 && model.layers.is_multiple_of(pp) {
                    divisors((model.layers / pp) as u64)
                } else {
                    vec![1]
                };
                for ep in keep(experts, &space.ep) {
                    for vpp in keep(chunks.clone(), &space.vpp) {
                        for mbs in keep(divisors((gbs / dp) as u64), &space.mbs) {
                            for sp in [false, true].into_iter().filter(|&s| (!s || tp > 1) && allowed(&space.sp, s)) {
                                for recompute in RECOMPUTE.into_iter().filter(|&r| allowed(&space.recompute, r)) {
                                    let kinds = if dp * cp > 1 { &SHARDING[..] } else { &SHARDING[..1] };
                                    for &kind in kinds.iter().filter(|&&k| allowed(&space.dp, k)) {
                                        let plan = Plan {
                                            tp,
                                            pp,
                                            vpp,
                                            ep,
                                            cp,
                                            mbs,
                                            gbs,
                                            sp,
                                            dp: kind,
                                            recompute,
                                            first_stage_layers: None,
                                            last_stage_layers: None,
                                            account_for: Default::default(),
                                            ..cluster.clone()
                                        };
                                        let overlaps = overlaps(&plan, overlap, space);
                                        visited += overlaps.len() as u64;
                                        if overlaps.is_empty() || !plan.is_valid(model) {
                                            continue;
                                        }
                                        for ov in overlaps.into_iter().filter(|o| o.resolve(&plan).is_ok()) {
                                            out.push(Candidate { plan: plan.clone(), overlap: ov });
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(Enumeration { candidates: out, visited })
}

/// The overlap combinations to try for `plan`: `base` with each allowed value of the searched
/// overlaps, those that cannot change anything left out (a gradient overlap without data
/// parallelism, a parameter-gather overlap without the distributed optimizer and the gradient
/// overlap, a TP overlap without SP or with TP across servers). Validity is [`Overlap::resolve`]'s.
fn overlaps(plan: &Plan, base: &Overlap, space: &Space) -> Vec<Overlap> {
    let dp_cp = plan.dp_size() * plan.cp > 1;
    let mut out = Vec::new();
    for grad in [false, true].into_iter().filter(|&g| (!g || dp_cp) && allowed(&space.grad_reduce, g)) {
        let gather_ok = grad && plan.dp == DataParallel::DistributedOptimizer;
        for gather in [false, true].into_iter().filter(|&g| (!g || gather_ok) && allowed(&space.param_gather, g)) {
            let tp_ok = plan.sp && plan.tp > 1 && plan.tp <= plan.gpus_per_server;
            for tp in [false, true].into_iter().filter(|&t| (!t || tp_ok) && allowed(&space.tp_comm, t)) {
                out.push(Overlap { grad_reduce: Some(grad), param_gather: Some(gather), tp_comm: Some(tp), ..*base });
            }
        }
    }
    out
}

fn allowed<T: PartialEq>(only: &Option<Vec<T>>, v: T) -> bool {
    only.as_ref().is_none_or(|o| o.contains(&v))
}

#[cfg(test)]
mod tests {
    use super::super::model::Family;
    use super::*;
    use crate::training::fixtures;

    fn model(layers: u32, heads: u64) -> Model {
        let m = fixtures::model(layers, 64 * heads, heads, 256 * heads);
        Model { name: "small".into(), family: Family::Gpt, vocab: 1024, seq_len: 1024, ..m }
    }

    fn cluster(gpus: u32) -> Plan {
        Plan { seq: 1024, ..fixtures::plan(gpus, 1, 1) }
    }

    #[test]
    fn counts_a_hand_checked_space() {
        // 4 GPUs, 2 layers, 2 heads, GBS 4, CP fixed at 1, no recompute, DDP only:
        // TP 1: PP 1 (DP 4, MBS 1) · PP 2 (DP 2, MBS 1, 2; VPP 1 only: 4 micro-batches / 2 OK
        //   but 2 layers / PP 2 = 1 chunk) → 1 + 2 = 3 plans;
        // TP 2 (heads 2): SP off/on × [PP 1 (DP 2, MBS 1, 2) · PP 2 (DP 1, MBS 1, 2, 4)] = 2·5 = 10;
        // TP 4: heads 2 not divisible → none. Total 13.
        let space = Space {
            cp: Some(vec![1]),
            recompute: Some(vec![Recompute::None]),
            dp: Some(vec![DataParallel::Ddp]),
            ..no_overlaps()
        };
        let all = enumerate(&model(2, 2), &cluster(4), &Overlap::default(), Batch::Exact(4), &space).unwrap();
        assert_eq!(all.candidates.len(), 13);
        // Tried, valid or not (MBS over the divisors of GBS / DP; SP off and on for TP > 1): TP 1
        // with PP 1, 2, 4 (DP 4, 2, 1): 1 + 2 + 3 MBS; TP 2 with PP 1, 2: 2 · (2 + 3); TP 4, PP 1:
        // 2 · 3 (TP 4 and PP 4 fail: 2 heads, 2 layers).
        assert_eq!(all.visited, 1 + 2 + 3 + 2 * (2 + 3) + 2 * 3);
        // Every axis opened: ×3 recompute, and ×5 data-parallel kinds where DP·CP > 1. CP 1:
        // TP 1 PP 1 (1 plan), TP 1 PP 2 (2), TP 2 PP 1 (4): 7·15; TP 2 PP 2 (DP 1: 6): 6·3.
        // CP 2 (seq 1024 splits into 4 chunks): TP 1 PP 1 (DP 2, MBS 1, 2): 2, TP 1 PP 2 (DP 1,
        // MBS 1, 2, 4): 3, TP 2 PP 1 (SP off/on × MBS 1, 2, 4): 6; CP 4: TP 1 PP 1, MBS 1, 2, 4: 3;
        // all with DP·CP > 1: 14·15.
        let everything =
            enumerate(&model(2, 2), &cluster(4), &Overlap::default(), Batch::Exact(4), &no_overlaps()).unwrap();
        let (with_cp1, with_cp) = (7 * 15 + 6 * 3, 14 * 15);
        assert_eq!(everything.candidates.len(), with_cp1 + with_cp);
        // The 13 plans with their overlaps opened (DDP: no parameter-gather overlap): the gradient
        // overlap off and on where DP > 1, the TP overlap off and on with SP. TP 1: PP 1 (DP 4)
        // 1·2, PP 2 (DP 2) 2·2; TP 2 without SP: PP 1 (DP 2) 2·2, PP 2 (DP 1) 3·1; with SP: 2·2·2
        // and 3·1·2. Total 27.
        let opened = Space { grad_reduce: None, param_gather: None, tp_comm: None, ..space };
        let all = enumerate(&model(2, 2), &cluster(4), &Overlap::default(), Batch::Exact(4), &opened).unwrap();
        assert_eq!(all.candidates.len(), 2 + 4 + 4 + 3 + 8 + 6);
        assert!(all.candidates.iter().all(|c| c.overlap.resolve(&c.plan).is_ok()));
        // The distributed optimizer adds the parameter-gather overlap where the gradient one is on.
        let dist = Space { dp: Some(vec![DataParallel::DistributedOptimizer]), tp: Some(vec![1]), ..opened };
        let all = enumerate(&model(2, 2), &cluster(4), &Overlap::default(), Batch::Exact(4), &dist).unwrap();
        // TP 1: PP 1 (DP 4): off; on without and with the gather: 3; PP 2 (DP 2), 2 MBS: 6.
        assert_eq!(all.candidates.len(), 3 + 6);
    }

    fn no_overlaps() -> Space {
        Space {
            grad_reduce: Some(vec![false]),
            param_gather: Some(vec![false]),
            tp_comm: Some(vec![false]),
            ..Space::default()
        }
    }

    #[test]
    fn at_most_takes_the_largest_multiple_of_dp() {
        let space = Space { tp: Some(vec![1]), pp: Some(vec![1]), cp: Some(vec![1]), ..Space::default() };
        let all = enumerate(&model(2, 2), &cluster(24), &Overlap::default(), Batch::AtMost(50), &space).unwrap();
        assert!(!all.candidates.is_empty());
        assert!(all.candidates.iter().all(|c| c.plan.gbs == 48), "DP 24: 48 is the largest multiple ≤ 50");
    }

    #[test]
    fn a_bad_cluster_is_trains_error() {
        let e = enumerate(&model(2, 2), &cluster(12), &Overlap::default(), Batch::Exact(12), &Space::default())
            .unwrap_err();
        assert!(e.to_string().contains("whole servers"), "{e}");
    }
}
