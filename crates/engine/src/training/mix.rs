//! Heterogeneous jobs: one training job on accelerators of several types (HCSim, Li et al. 2025,
//! §3.2: 128 H100 + 128 A100 in one data-parallel job).
//!
//! A mix lists types with their GPU counts (`--gpu h100:128,a100:128`), assigned
//! - by rank (default): the first count's type runs ranks 0 … n₁ − 1, the next the following
//!   ones, in Megatron's rank order (tp-cp-ep-dp-pp, so a pipeline stage is a block of
//!   consecutive ranks and a type boundary inside a stage mixes its data-parallel groups);
//! - by stage: whole pipeline stages, in pipeline order, each count a multiple of the GPUs of a
//!   stage (G / PP): no stage mixes types, so only the pipeline does.
//!
//! Each type's ranks run their own program, its compute timed by that type's kernel model
//! ([`super::kernels`]); ranks meet at every collective and pipeline transfer they share, so the
//! executor makes the slowest party set the pace of each one. A TP group must not straddle two
//! types (every count is a multiple of TP): its collectives run inside every layer, and
//! Megatron shards a layer evenly.
//!
//! On a fabric whose accelerators name their types, each rank's type must be its device's
//! ([`check_fabric`]). The plan must fit in every type's HBM (the memory per GPU is the same on every type). The
//! analytical network of a mixed job (set by the front end) runs at the slowest type's NVLink,
//! NVLS and NIC figures: a collective moves at its slowest member's pace.
//!
//! Utilisation per type: busy = Σ over its GPUs of compute time / (n · T); MFU = Σ over its GPUs
//! of their model FLOPs / (n · T · peak), a GPU's model FLOPs being its stage's FLOPs
//! ([`super::generate::stage_model_flops`]) over the G / PP GPUs of the stage.

use serde::{Deserialize, Serialize};

use super::plan::Plan;
use crate::compute::Device;
use crate::error::{InputError, Result};
use crate::layout::Axis;
use crate::platform::Platform;

/// One type of a mix and how many GPUs run it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MixPart {
    pub accelerator: Device,
    pub gpus: u32,
}

/// A heterogeneous job's types and how they are assigned.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Mix {
    pub parts: Vec<MixPart>,
    #[serde(default)]
    pub by: MixBy,
}

/// How a mix's types are assigned to ranks (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MixBy {
    #[default]
    Rank,
    Stage,
}

/// The devices of a job: its distinct accelerator types, GPUs of each, and each rank's type.
#[derive(Debug, Clone, PartialEq)]
pub struct Devices<'a> {
    pub types: Vec<&'a Device>,
    pub gpus: Vec<u32>,
    /// Index into `types` per rank.
    pub rank_type: Vec<u32>,
}

/// Per accelerator type of a mixed job: its GPUs' busy fraction and MFU (module doc).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TypeUse {
    pub accelerator: String,
    pub gpus: u32,
    pub busy: f64,
    pub mfu: f64,
}

fn bad(message: String) -> InputError {
    InputError::field("plan", "mix", message)
}

/// The devices of `plan` from `mix` (None: every GPU is `single`), checked: at least one
/// part, counts positive, summing to the plan's GPUs, multiples of TP (of the stage size by
/// stage); one description per type name.
pub fn devices<'a>(plan: &Plan, single: &'a Device, mix: Option<&'a Mix>) -> Result<Devices<'a>> {
    let Some(Mix { parts: mix, by }) = mix else {
        return Ok(Devices { types: vec![single], gpus: vec![plan.gpus], rank_type: vec![0; plan.gpus as usize] });
    };
    if mix.is_empty() {
        return Err(bad("names no accelerator type".into()));
    }
    let mut types: Vec<&Device> = Vec::new();
    let mut part_type = Vec::with_capacity(mix.len());
    for part in mix {
        part.accelerator.check()?;
        let name = &part.accelerator.name;
        if part.gpus == 0 {
            return Err(bad(format!("{name}:0: a count of 0 GPUs")));
        }
        match types.iter().position(|t| t.name.eq_ignore_ascii_case(name)) {
            Some(i) if *types[i] != part.accelerator => {
                return Err(bad(format!("two different accelerators are named '{name}'")));
            }
            Some(i) => part_type.push(i as u32),
            None => {
                types.push(&part.accelerator);
                part_type.push(types.len() as u32 - 1);
            }
        }
    }
    let total: u64 = mix.iter().map(|p| p.gpus as u64).sum();
    let listed = || mix.iter().map(|p| format!("{}:{}", p.accelerator.name, p.gpus)).collect::<Vec<_>>().join(",");
    if total != plan.gpus as u64 {
        return Err(bad(format!("{} is {total} GPUs but the plan has {}", listed(), plan.gpus)));
    }
    let (unit, what) = match *by {
        MixBy::Rank => (plan.tp, format!("a multiple of TP {} (a TP group runs on one type)", plan.tp)),
        MixBy::Stage => {
            let stage = plan.gpus / plan.pp.max(1);
            (stage, format!("a whole number of pipeline stages of {stage} GPUs (assigned by stage)"))
        }
    };
    if let Some(p) = mix.iter().find(|p| unit == 0 || !p.gpus.is_multiple_of(unit)) {
        return Err(bad(format!("{}:{} in {} is not {what}", p.accelerator.name, p.gpus, listed())));
    }
    let mut gpus = vec![0u32; types.len()];
    for (part, &t) in mix.iter().zip(&part_type) {
        gpus[t as usize] += part.gpus;
    }
    // The type of each slot in assignment order: by rank, slot = rank; by stage, slot = the
    // stage's index times its size plus the rank's place in the stage.
    let slots: Vec<u32> =
        mix.iter().zip(&part_type).flat_map(|(p, &t)| std::iter::repeat_n(t, p.gpus as usize)).collect();
    let rank_type = match *by {
        MixBy::Rank => slots,
        MixBy::Stage => {
            let layout = plan.layout();
            let stage_size = plan.gpus / plan.pp;
            let mut seen = vec![0u32; plan.pp as usize];
            (0..plan.gpus)
                .map(|r| {
                    let s = layout.coord(r, Axis::Pp);
                    let slot = s * stage_size + seen[s as usize];
                    seen[s as usize] += 1;
                    slots[slot as usize]
                })
                .collect()
        }
    };
    Ok(Devices { types, gpus, rank_type })
}

/// A mixed job on a fabric whose accelerators name their types (a typed platform, e.g.
/// `hcsim-cxl --mix`): each rank's type must be its device's. `source` names the fabric.
pub fn check_fabric(devices: &Devices, fabric: &Platform, source: &str) -> Result<()> {
    if fabric.attrs.is_empty() {
        return Ok(()); // a SimAI file names one type for all its GPUs, and none of them here
    }
    let ranks = (devices.rank_type.len() as u32).min(fabric.placement.ranks());
    for r in 0..ranks {
        let node = fabric.placement.device(r);
        let (on, given) = (fabric.accelerator_type(node), &devices.types[devices.rank_type[r as usize] as usize].name);
        if !on.eq_ignore_ascii_case(given) {
            return Err(InputError::field(
                source,
                "mix",
                format!("rank {r} runs on {} '{}' but the mix makes it {given}", on, fabric.node_name(node)),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Accelerator;
    use crate::training::fixtures;
    use crate::training::{run_training, TrainingInput, TrainingReport};

    /// `gpus` GPUs in TP `tp` and PP `pp`, the rest data-parallel.
    fn plan_of(gpus: u32, tp: u32, pp: u32) -> Plan {
        Plan { gbs: 64, ..fixtures::plan(gpus, tp, pp) }
    }

    fn acc(name: &str, tflops: f64) -> Device {
        Device::from(Accelerator { name: name.into(), matmul_tflops: tflops, ..Accelerator::ideal() })
    }

    fn part(a: &Device, gpus: u32) -> MixPart {
        MixPart { accelerator: a.clone(), gpus }
    }

    fn of(parts: &[MixPart], by: MixBy) -> Mix {
        Mix { parts: parts.to_vec(), by }
    }

    #[test]
    fn types_follow_rank_order_or_whole_stages() {
        let (h, a) = (acc("h100", 989.0), acc("a100", 312.0));
        let plan = plan_of(32, 8, 2); // 32 GPUs, TP 8, PP 2: stages of 16
        let mix = [part(&h, 8), part(&a, 16), part(&h, 8)];
        let by_rank = of(&mix, MixBy::Rank);
        let d = devices(&plan, &h, Some(&by_rank)).unwrap();
        assert_eq!(d.types.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["h100", "a100"]);
        assert_eq!(d.gpus, [16, 16]);
        let want: Vec<u32> = (0..32).map(|r| u32::from((8..24).contains(&r))).collect();
        assert_eq!(d.rank_type, want);
        let mix = [part(&a, 16), part(&h, 16)];
        let by_stage = of(&mix, MixBy::Stage);
        let d = devices(&plan, &h, Some(&by_stage)).unwrap();
        assert_eq!(d.rank_type, (0..32).map(|r| u32::from(r >= 16)).collect::<Vec<_>>());
        let single = devices(&plan, &h, None).unwrap();
        assert_eq!((single.types.len(), single.rank_type), (1, vec![0; 32]));
    }

    #[test]
    fn bad_mixes_are_one_line_errors() {
        let (h, a) = (acc("h100", 989.0), acc("a100", 312.0));
        let plan = plan_of(32, 8, 2);
        let e = |mix: &[MixPart], by| devices(&plan, &h, Some(&of(mix, by))).unwrap_err().to_string();
        assert_eq!(
            e(&[part(&h, 16), part(&a, 8)], MixBy::Rank),
            "plan: mix: h100:16,a100:8 is 24 GPUs but the plan has 32"
        );
        assert_eq!(
            e(&[part(&h, 12), part(&a, 20)], MixBy::Rank),
            "plan: mix: h100:12 in h100:12,a100:20 is not a multiple of TP 8 (a TP group runs on one type)"
        );
        assert_eq!(
            e(&[part(&h, 8), part(&a, 24)], MixBy::Stage),
            "plan: mix: h100:8 in h100:8,a100:24 is not a whole number of pipeline stages of 16 GPUs (assigned by stage)"
        );
        assert_eq!(e(&[part(&h, 0), part(&a, 32)], MixBy::Rank), "plan: mix: h100:0: a count of 0 GPUs");
        let other = acc("h100", 500.0);
        assert!(
            e(&[part(&h, 16), part(&other, 16)], MixBy::Rank).contains("two different accelerators are named 'h100'")
        );
        assert_eq!(e(&[], MixBy::Rank), "plan: mix: names no accelerator type");
    }

    /// A job of uniform layers on `gpus` GPUs in TP 8 and PP `pp`, on a network fast enough to
    /// leave compute setting the pace, with mix `mix` (None: every GPU an H100-like `h`).
    fn job(gpus: u32, pp: u32, mix: Option<Mix>, single: &Device) -> TrainingInput {
        let plan = Plan { gbs: 8 * gpus / (8 * pp), ..plan_of(gpus, 8, pp) };
        let model = fixtures::uniform(16, 4096, 32, 16384);
        TrainingInput { accelerator: single.clone(), allow_oom: true, mix, ..fixtures::input(model, plan) }
    }

    fn run(i: &TrainingInput) -> TrainingReport {
        run_training(i, &mut |_| true).unwrap()
    }

    fn gpus(h: &Device, a: &Device) -> (Device, Device) {
        (h.clone(), a.clone())
    }

    #[test]
    fn a_homogeneous_mix_is_the_plain_run_exactly() {
        let h = acc("h100", 989.0);
        let plain = run(&job(32, 2, None, &h));
        for parts in [vec![part(&h, 32)], vec![part(&h, 8), part(&h, 24)]] {
            for by in [MixBy::Rank, MixBy::Stage] {
                if by == MixBy::Stage && parts.len() > 1 {
                    continue; // 8 is not a whole stage of 16
                }
                let mut r = run(&job(32, 2, Some(of(&parts, by)), &h));
                assert_eq!(r.per_type.len(), 1);
                let t = r.per_type.remove(0);
                assert_eq!((t.accelerator.as_str(), t.gpus), ("h100", 32));
                assert_eq!(t.mfu, plain.mfu, "one type's MFU is the job's");
                for s in &mut r.stages {
                    assert_eq!(s.accelerator.take().as_deref(), Some("h100"));
                }
                assert_eq!(r.breakdown_accelerator.take().as_deref(), Some("h100"));
                assert_eq!(r, plain);
            }
        }
    }

    #[test]
    fn a_data_parallel_job_of_two_types_runs_at_the_slower_ones_pace() {
        // 16 GPUs: two TP groups of 8, data-parallel; the first an H100, the second an A100.
        let (h, a) =
            gpus(&acc("h100", 989.0), &Device::from(Accelerator { hbm_tbps: 1.0, ..acc("a100", 312.0).accelerator }));
        let fast = run(&job(16, 1, None, &h));
        let slow = run(&job(16, 1, None, &a));
        assert!(slow.iteration_s > 2.0 * fast.iteration_s, "{} vs {}", slow.iteration_s, fast.iteration_s);
        let mixed = run(&job(16, 1, Some(of(&[part(&h, 8), part(&a, 8)], MixBy::Rank)), &h));
        // The A100s are the last party to every gradient all-reduce, so their timeline is the
        // all-A100 run's: the iteration is its iteration.
        let off = (mixed.iteration_s - slow.iteration_s).abs() / slow.iteration_s;
        assert!(off <= 1e-9, "mixed {} s vs all-A100 {} s", mixed.iteration_s, slow.iteration_s);
        assert_eq!(mixed.stages.len(), 2, "one rank class per type");
        // Per type: each computes as it does alone, over the mixed iteration; MFU at its own peak.
        let compute = |r: &TrainingReport| r.stages[0].breakdown_s[0].1;
        let (th, ta) = (&mixed.per_type[0], &mixed.per_type[1]);
        assert_eq!((th.accelerator.as_str(), ta.accelerator.as_str()), ("h100", "a100"));
        assert!((th.busy - compute(&fast) / mixed.iteration_s).abs() < 1e-9, "{}", th.busy);
        assert!((ta.busy - compute(&slow) / mixed.iteration_s).abs() < 1e-9, "{}", ta.busy);
        assert!((ta.mfu - slow.mfu).abs() <= 1e-9 * slow.mfu);
        assert!((th.mfu - slow.mfu * 312.0 / 989.0).abs() <= 1e-9 * th.mfu);
        // The job's MFU: its FLOPs over the peak of all 16 GPUs, 8 of each.
        let want = slow.mfu * 16.0 * 312.0 / (8.0 * 989.0 + 8.0 * 312.0);
        assert!((mixed.mfu - want).abs() <= 1e-9 * want, "{} vs {want}", mixed.mfu);
        // What bounds it: the A100s' stage, busy the whole iteration; the H100s' idle time is not a
        // pipeline bubble (there is no pipeline) but waiting for the A100s.
        assert_eq!(mixed.breakdown_accelerator.as_deref(), Some("a100"));
        assert_eq!(mixed.breakdown_s, mixed.stages[1].breakdown_s);
        let part = |parts: &[(String, f64)], k: &str| parts.iter().find(|(p, _)| p == k).unwrap().1;
        let (ph, pa) = (&mixed.stages[0].breakdown_s, &mixed.stages[1].breakdown_s);
        assert_eq!(part(ph, "bubble"), part(pa, "bubble"), "one pipeline, one bubble");
        assert_eq!(part(pa, crate::training::WAITING_FOR_SLOWER_DEVICES), 0.0);
        let waiting = part(ph, crate::training::WAITING_FOR_SLOWER_DEVICES);
        let gap = mixed.stages[1].busy_s - mixed.stages[0].busy_s;
        assert!(gap > 0.3 * mixed.iteration_s && (waiting - gap).abs() <= 1e-9 * gap, "{waiting} vs {gap}");
    }

    #[test]
    fn stages_on_the_slower_type_are_the_critical_path() {
        let (h, a) =
            gpus(&acc("h100", 989.0), &Device::from(Accelerator { hbm_tbps: 1.0, ..acc("a100", 312.0).accelerator }));
        for (parts, slow_stage) in [([part(&a, 16), part(&h, 16)], 0), ([part(&h, 16), part(&a, 16)], 1)] {
            let r = run(&job(32, 2, Some(of(&parts, MixBy::Stage)), &h));
            assert_eq!(r.critical_stage, slow_stage);
            let s = r.stages.iter().find(|s| s.stage == slow_stage).unwrap();
            assert_eq!((s.accelerator.as_deref(), s.busy_s > 0.0), (Some("a100"), true));
            assert_eq!(r.critical_bound, "compute");
            // Slower than on H100s only, faster than on A100s only.
            let (all_h, all_a) = (run(&job(32, 2, None, &h)), run(&job(32, 2, None, &a)));
            assert!(all_h.iteration_s < r.iteration_s && r.iteration_s < all_a.iteration_s);
            let by_rank = run(&job(32, 2, Some(of(&parts, MixBy::Rank)), &h));
            assert_eq!(by_rank.iteration_s, r.iteration_s, "PP is the outermost axis: the same ranks");
        }
    }
}
