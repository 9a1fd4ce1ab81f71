//! Many plans of one model on one cluster, simulated in parallel on rayon's threads: each plan
//! exactly as [`run_training`] runs it alone (same input but the plan), so a search and `train`
//! give the same numbers bit for bit. The plans share one [`PriceMemo`], whichever thread runs
//! them: plans that place their groups alike price each collective once.

use rayon::prelude::*;
use std::sync::{Arc, Mutex};

use super::overlap::Overlap;
use super::plan::Plan;
use super::{run_training_memo, TrainingInput, TrainingReport};
use crate::error::Result;
use crate::network::analytical::alpha_beta::PriceMemo;

/// `base` with each of `plans` (a plan and its overlaps) in turn, in the order given. Memory is
/// not checked here (the search has already chosen what fits), and no trace is kept.
pub fn run_plans(base: &TrainingInput, plans: &[(Plan, Overlap)]) -> Vec<Result<TrainingReport>> {
    run_plans_memo(base, plans, &Arc::new(Mutex::new(PriceMemo::default())))
}

/// [`run_plans`] with the collective prices kept in `memo` (a search's, across its batches).
pub fn run_plans_memo(
    base: &TrainingInput,
    plans: &[(Plan, Overlap)],
    memo: &Arc<Mutex<PriceMemo>>,
) -> Vec<Result<TrainingReport>> {
    plans
        .par_iter()
        .map(|(plan, overlap)| {
            let input =
                TrainingInput { plan: plan.clone(), overlap: *overlap, allow_oom: true, trace: false, ..base.clone() };
            run_training_memo(&input, &mut |_| true, Some(memo))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::model::Model;
    use super::super::plan::Recompute;
    use super::super::search::{enumerate, Batch, Space};
    use super::super::{run_training, Network};
    use super::*;
    use crate::training::fixtures;

    #[test]
    fn each_plan_gives_what_it_gives_alone() {
        let model = Model { name: "small".into(), kv_heads: 4, seq_len: 2048, ..fixtures::model(4, 1024, 16, 4096) };
        let cluster = Plan { gbs: 16, ..fixtures::plan(16, 1, 1) };
        let network = Network { nvlink_busbw: 300.0, nvls_busbw: None, nic_busbw: 40.0, nics_per_server: 8 };
        let base = TrainingInput { network, ..fixtures::input(model.clone(), cluster.clone()) };
        let space = Space { recompute: Some(vec![Recompute::Selective]), ..Space::default() };
        let plans: Vec<(Plan, Overlap)> = enumerate(&model, &cluster, &Overlap::default(), Batch::Exact(32), &space)
            .unwrap()
            .candidates
            .into_iter()
            .map(|c| (c.plan, c.overlap))
            .collect();
        assert!(plans.len() > 20);
        let batch = run_plans(&base, &plans);
        assert!(
            plans.iter().any(|(_, o)| o.tp_comm == Some(true))
                && plans.iter().any(|(_, o)| o.grad_reduce == Some(true))
        );
        for ((plan, overlap), got) in plans.iter().zip(batch) {
            let input = TrainingInput { plan: plan.clone(), overlap: *overlap, allow_oom: true, ..base.clone() };
            let alone = run_training(&input, &mut |_| true);
            assert_eq!(got.unwrap(), alone.unwrap(), "{plan:?}");
        }
    }
}
