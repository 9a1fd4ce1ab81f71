//! Slow GPUs (stragglers): ranks whose every compute op takes longer by a factor.
//!
//! `--slow-gpus RANK:FACTOR[,RANK:FACTOR…]` gives a GPU's time factor (1.05: 5 % slower; any
//! factor > 0, below 1 a faster GPU). `--slow-gpus random:SIGMA[@SEED]` draws one for every GPU:
//! 1 + |x|, x ~ N(0, SIGMA²) (a half-normal: no GPU beats its specification), rank r from its own
//! seeded stream ([`crate::random::Stream`]), so the same seed gives the same GPUs. Each slow rank runs its own copy of its class's program
//! with every compute op's time multiplied by its factor; it meets the other ranks at every
//! collective and pipeline transfer it shares, so the executor makes it set the pace of each
//! (its TP group at every layer, the whole job at the data-parallel reductions). Communication is
//! not slowed: a slow GPU's NCCL kernels are copies bound by the links.
//!
//! Closed form (what `tests` hold): on a plan whose communication does not overlap compute, a
//! synchronous iteration waits at every collective for its slowest member, so one GPU with factor
//! f in a TP × DP job stretches the iteration by (f − 1) · C, C being its compute time per
//! iteration — the same whether 8 or 1024 GPUs run, as the ring all-reduce that ends the
//! iteration waits for its last rank.

use super::generate::Generated;
use crate::error::{InputError, Result};
use crate::random::Stream;
use crate::workload::OpKind;

/// One slow rank and its time factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowGpu {
    pub rank: u32,
    pub factor: f64,
}

/// Parse `RANK:FACTOR,…` or `random:SIGMA[@SEED]` for a job of `gpus` ranks; `source` names
/// the input in errors.
pub fn parse_slow_gpus(source: &str, spec: &str, gpus: u32) -> Result<Vec<SlowGpu>> {
    if let Some(rest) = spec.trim().strip_prefix("random:") {
        let err = |m: String| InputError::field(source, "slow_gpus", m);
        let (sigma, seed) = rest.split_once('@').unwrap_or((rest, "0"));
        let sigma = match sigma.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s >= 0.0 => s,
            _ => return Err(err(format!("random:SIGMA needs a spread SIGMA >= 0, got {:?}", sigma.trim()))),
        };
        let seed: u64 =
            seed.trim().parse().map_err(|_| err(format!("seed {:?} is not a whole number", seed.trim())))?;
        return Ok((0..gpus)
            .map(|rank| SlowGpu { rank, factor: 1.0 + (sigma * Stream::new(seed, rank as u64).normal()).abs() })
            .collect());
    }
    let mut out: Vec<SlowGpu> = Vec::new();
    for (i, item) in spec.split(',').map(str::trim).enumerate() {
        let field = format!("slow_gpus item {} ({item})", i + 1);
        let err = |m: String| InputError::field(source, &field, m);
        let (rank, factor) = item.split_once(':').ok_or_else(|| err("expected RANK:FACTOR, e.g. 17:1.05".into()))?;
        let rank: u32 =
            rank.trim().parse().map_err(|_| err(format!("rank {:?} is not a whole number", rank.trim())))?;
        if rank >= gpus {
            return Err(err(format!("rank {rank} is outside the job's {gpus} GPUs")));
        }
        let factor = match factor.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f > 0.0 => f,
            _ => return Err(err(format!("factor {:?} must be a positive number (1.05: 5 % slower)", factor.trim()))),
        };
        if out.iter().any(|s| s.rank == rank) {
            return Err(err(format!("rank {rank} is given twice")));
        }
        out.push(SlowGpu { rank, factor });
    }
    Ok(out)
}

/// Give each slow rank its own rank class ([`crate::workload::Workload::split_classes`]), whose
/// program is its old one with every compute op's time multiplied by its factor; the classes
/// split around it keep their stage, type, steps and layers.
pub fn slow_down(generated: &mut Generated, slow: &[SlowGpu]) {
    if slow.is_empty() {
        return;
    }
    let w = &mut generated.workload;
    let ranks: Vec<u32> = slow.iter().map(|s| s.rank).collect();
    let parent = w.split_classes(&ranks);
    for s in slow {
        let class = w.rank_class[s.rank as usize] as usize;
        let mut program = w.programs[w.class_program[class] as usize].clone();
        for op in &mut program.ops {
            if let OpKind::Compute { ns, .. } = &mut op.kind {
                *ns *= s.factor;
            }
        }
        w.programs.push(program);
        w.class_program[class] = w.programs.len() as u32 - 1;
    }
    let g = &mut *generated;
    g.classes = parent.iter().map(|&p| g.classes[p as usize]).collect();
    g.steps = parent.iter().map(|&p| g.steps[p as usize].clone()).collect();
    g.op_layer = parent.iter().map(|&p| g.op_layer[p as usize].clone()).collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::training::{fixtures, run_training, TrainingInput};

    #[test]
    fn bad_slow_gpus_name_the_item() {
        for (spec, says) in [
            ("3", "RANK:FACTOR"),
            ("x:1.1", "not a whole number"),
            ("64:1.1", "outside the job's 64"),
            ("3:0", "positive"),
            ("3:1.1,3:1.2", "given twice"),
        ] {
            let e = parse_slow_gpus("--slow-gpus", spec, 64).unwrap_err();
            assert!(e.field.as_deref().is_some_and(|f| f.starts_with("slow_gpus item")), "{spec}: {e}");
            assert!(e.message.contains(says), "{spec}: {}", e.message);
        }
        assert_eq!(
            parse_slow_gpus("--slow-gpus", "3:1.05, 9:0.5", 64).unwrap(),
            vec![SlowGpu { rank: 3, factor: 1.05 }, SlowGpu { rank: 9, factor: 0.5 }]
        );
    }

    /// Compute time (ns) of one rank of `input`'s plan per iteration: its class's compute ops.
    fn compute_ns(input: &TrainingInput, rank: u32) -> f64 {
        let g = crate::training::generate_input(input).unwrap();
        let w = &g.workload;
        let program = &w.programs[w.class_program[w.rank_class[rank as usize] as usize] as usize];
        program.ops.iter().map(|op| if let OpKind::Compute { ns, .. } = op.kind { ns } else { 0.0 }).sum()
    }

    #[test]
    fn one_gpu_5_percent_slower_stretches_a_tp_dp_iteration_by_5_percent_of_its_compute() {
        // TP 8 × DP 128 = 1024 GPUs, one stage, no overlap of communication with compute: every
        // collective waits for its slowest member, so the iteration grows by 0.05 · C.
        let plan = crate::training::plan::Plan { gbs: 128, ..fixtures::plan(1024, 8, 1) };
        let mut input = fixtures::input(fixtures::model(4, 4096, 32, 11008), plan);
        let healthy = run_training(&input, &mut |_| true).unwrap().iteration_s;
        let c = compute_ns(&input, 517) / 1e9;
        input.slow_gpus = Some("517:1.05".into());
        let slow = run_training(&input, &mut |_| true).unwrap();
        let want = healthy + 0.05 * c;
        assert!(
            (slow.iteration_s - want).abs() <= 1e-9 * want,
            "{} vs {want} (healthy {healthy}, C {c})",
            slow.iteration_s
        );
        // Two slow GPUs: the slower sets the pace.
        input.slow_gpus = Some("517:1.05,3:1.02".into());
        let two = run_training(&input, &mut |_| true).unwrap().iteration_s;
        assert!((two - want).abs() <= 1e-9 * want, "{two} vs {want}");
    }

    #[test]
    fn a_slow_gpu_in_a_pipeline_runs_and_costs_at_most_its_own_extra_compute() {
        // TP 2 × PP 2 × DP 4 with interleaved sends between stages: the split classes keep every
        // send matched (no deadlock); the iteration grows, by no more than the slow rank's
        // extra compute (each op of it waits at most that long in all).
        let plan = crate::training::plan::Plan { gbs: 16, ..fixtures::plan(16, 2, 2) };
        let mut input = fixtures::input(fixtures::model(4, 4096, 32, 11008), plan);
        let healthy = run_training(&input, &mut |_| true).unwrap().iteration_s;
        let c = compute_ns(&input, 13) / 1e9;
        input.slow_gpus = Some("13:1.1".into());
        let slow = run_training(&input, &mut |_| true).unwrap().iteration_s;
        assert!(slow > healthy && slow <= healthy + 0.1 * c * (1.0 + 1e-9), "{slow} vs {healthy} + 0.1 · {c}");
    }

    #[test]
    fn drawn_slowdowns_are_seeded_and_the_slowest_gpu_sets_the_pace() {
        let a = parse_slow_gpus("--slow-gpus", "random:0.02@7", 64).unwrap();
        assert_eq!(a, parse_slow_gpus("--slow-gpus", "random:0.02@7", 64).unwrap());
        assert_ne!(a, parse_slow_gpus("--slow-gpus", "random:0.02@8", 64).unwrap());
        assert!(a.iter().all(|s| s.factor >= 1.0) && a.len() == 64);
        let e = parse_slow_gpus("--slow-gpus", "random:-1", 64).unwrap_err();
        assert!(e.message.contains("SIGMA >= 0"), "{e}");
        // TP 8 × DP 8, every GPU its own pace: each TP group runs at its slowest member's, the
        // DP all-reduce waits for the slowest group: T + (max f − 1) · C.
        let plan = crate::training::plan::Plan { gbs: 8, ..fixtures::plan(64, 8, 1) };
        let mut input = fixtures::input(fixtures::model(4, 4096, 32, 11008), plan);
        let healthy = run_training(&input, &mut |_| true).unwrap().iteration_s;
        let c = compute_ns(&input, 0) / 1e9;
        let worst = a.iter().map(|s| s.factor).fold(1.0, f64::max);
        input.slow_gpus = Some("random:0.02@7".into());
        let drawn = run_training(&input, &mut |_| true).unwrap().iteration_s;
        let want = healthy + (worst - 1.0) * c;
        assert!((drawn - want).abs() <= 1e-9 * want, "{drawn} vs {want}");
    }
}
