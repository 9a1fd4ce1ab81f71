//! A SimAI workload file as IR: every rank runs the file's rows (one rank class).
//!
//! Per row, as SimAI runs it: forward rows 0…N−1 (compute, then the fwd collective, blocking);
//! then backward rows N−1…0 (ig compute, ig collective, wg compute, wg collective
//! non-blocking). With `--compat simai` the ig collective blocks the wg compute, as in SimAI;
//! in the default mode it runs under the row's wg compute and the next row waits for both, as
//! Megatron overlaps the input-gradient reduction with the weight-gradient GEMM (so a row
//! derived from Megatron's schedule, training/rows_from_ops.rs, runs as `train` runs it).
//! Column and suffix pick the group: fwd/ig → TP, wg → DP; `_EP` → EP; `_DP_EP` → DP_EP.

use super::file::{CommType, Policy, Scope, WorkloadFile};
use crate::error::{InputError, Result};
use crate::layout::{divisors_text, Axis, Layout};
use crate::workload::{Group, GroupId, Membership, Op, OpKind, Phase, Program, Workload};

/// Group ids of the groups every SimAI workload defines, in this order.
pub const TP: GroupId = 0;
pub const DP: GroupId = 1;
pub const EP: GroupId = 2;
pub const DP_EP: GroupId = 3;
pub const PP: GroupId = 4;
/// SimAI's "no group" (ALLREDUCEALLTOALL rows in compat mode).
pub const NONE: GroupId = 5;

/// The largest world a SimAI workload may ask for (2²⁴ GPUs, far beyond any cluster built).
pub const MAX_GPUS: u32 = 1 << 24;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overlap {
    pub dp: f64,
    pub tp: f64,
    pub ep: f64,
    pub pp: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BuildOptions {
    /// World size (SimAI's `-g`); defaults to the header's all_gpus.
    pub gpus: Option<u32>,
    pub gpus_per_server: u32,
    /// Reproduce SimAI: fwd sizes below 4 KiB raised to 4 KiB, BROADCAST/REDUCE dropped,
    /// ALLREDUCEALLTOALL priced as an all-reduce in no group.
    pub compat: bool,
    /// Default mode only: a blocking collective with overlap o blocks for (1−o) of its bytes.
    pub overlap: Overlap,
}

/// The ops of one phase of one row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseOps {
    pub compute: u32,
    pub comms: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimaiWorkload {
    pub file: WorkloadFile,
    pub workload: Workload,
    pub tp: u32,
    pub ep: u32,
    pub pp: u32,
    pub dp: u32,
    /// [fwd, ig, wg] ops of each row (the program of class 0).
    pub row_ops: Vec<[PhaseOps; 3]>,
    pub warnings: Vec<String>,
}

impl SimaiWorkload {
    pub fn build(file: WorkloadFile, opt: &BuildOptions) -> Result<SimaiWorkload> {
        let h = &file.header;
        let path = file.path.clone();
        let micro = h.policy == Policy::Micro;
        let (t, e, p) = if micro { (1, 1, 1) } else { (h.tp, h.ep, h.pp) };
        let mut warnings = file.warnings.clone();
        let world = match (opt.gpus, h.all_gpus) {
            (Some(g), Some(a)) if g != a && !micro => {
                warnings.push(format!("-g {g} differs from the header's all_gpus: {a}; using -g {g} (as SimAI does)"));
                g
            }
            (Some(g), _) => g,
            (None, Some(a)) if !micro => a,
            _ => {
                return Err(InputError::field(
                    &path,
                    "gpus",
                    "the number of GPUs is unknown: give -g (this header has no all_gpus)",
                ))
            }
        };
        let gps = opt.gpus_per_server;
        let bad = |field: &str, msg: String| Err(InputError::field(&path, field, msg));
        if world == 0 {
            return bad("gpus", "the number of GPUs must be at least 1".into());
        }
        // The workload holds a class per rank: bound the world before allocating for it.
        if world > MAX_GPUS {
            return bad("gpus", format!("{world} GPUs are more than clustersim simulates (at most {MAX_GPUS})"));
        }
        if gps == 0 {
            return bad("gpus_per_server", "must be at least 1".into());
        }
        let mp = t as u64 * p as u64;
        // SimAI accepts any -g and computes DP = ⌊world/(TP·PP)⌋ and DP_EP = ⌊DP/EP⌋ (Layer.cc);
        // compat mode does the same, the default mode asks for a world the plan fills.
        let uneven = !(world as u64).is_multiple_of(mp);
        if uneven && !opt.compat {
            return bad(
                "gpus",
                format!("{world} GPUs are not divisible by TP×PP = {t}×{p} = {mp} (valid: multiples of {mp}; --compat simai computes with the quotient, as SimAI does)"),
            );
        }
        if !world.is_multiple_of(gps) && world > gps {
            return bad("gpus_per_server", format!("{world} GPUs do not fill whole servers of {gps} GPUs"));
        }
        if t > gps && !t.is_multiple_of(gps) || t < gps && !gps.is_multiple_of(t) {
            return bad(
                "model_parallel_NPU_group",
                format!("TP {t} must divide the {gps} GPUs per server or be a multiple of it, so no TP group straddles servers"),
            );
        }
        let dp = (world as u64 / mp) as u32;
        if !dp.is_multiple_of(e) && !opt.compat {
            return bad("ep", format!("EP {e} does not divide DP = {dp} (valid: {})", divisors_text(dp as u64)));
        }
        let dp_ep = dp / e;
        if dp_ep == 0 {
            return bad(
                "gpus",
                format!("{world} GPUs leave DP = ⌊{world}/{mp}⌋ = {dp}, less than EP {e}: SimAI's DP_EP group would be empty"),
            );
        }
        let layout = Layout::megatron(t, 1, e, dp_ep, p);
        let dims = |axes: &[Axis]| Membership::Dims(layout.mask(axes));
        // Groups as Megatron lays them out; when the world does not divide, SimAI's DP and DP_EP
        // sizes as instances of rank 0 (the one rank class stands for every rank).
        let (dp_group, dp_ep_group) = if uneven || !dp.is_multiple_of(e) {
            warnings.push(format!(
                "-g {world} with TP×PP = {mp} and EP {e}: computing with DP = ⌊{world}/{mp}⌋ = {dp} and DP_EP = ⌊{dp}/{e}⌋ = {dp_ep}, as SimAI does"
            ));
            (
                Membership::Explicit(vec![(0..dp).map(|k| k * t).collect()]),
                Membership::Explicit(vec![(0..dp_ep).map(|k| k * t * e).collect()]),
            )
        } else {
            (dims(&[Axis::Ep, Axis::DpEp]), dims(&[Axis::DpEp]))
        };
        let groups = vec![
            Group { name: "TP".into(), members: dims(&[Axis::Tp]) },
            Group { name: "DP".into(), members: dp_group },
            Group { name: "EP".into(), members: dims(&[Axis::Ep]) },
            Group { name: "DP_EP".into(), members: dp_ep_group },
            Group { name: "PP".into(), members: dims(&[Axis::Pp]) },
            Group { name: "NONE".into(), members: Membership::Dims(0) },
        ];

        let mut prog = Program::default();
        let mut row_ops = vec![<[PhaseOps; 3]>::default(); file.rows.len()];
        let mut rows = Vec::with_capacity(file.rows.len());
        for r in &file.rows {
            rows.push(r.name.clone());
        }
        // The ops everything after waits for (the last blocking steps).
        let mut gate: Vec<u32> = Vec::new();
        for (i, r) in file.rows.iter().enumerate() {
            let c = compute(&mut prog, r.fwd_ns, &gate, i, Phase::Forward);
            row_ops[i][0].compute = c;
            gate = vec![c];
            let mut bytes = r.fwd.bytes;
            if opt.compat && bytes > 0 && bytes < 4096 {
                bytes = 4096;
            }
            let (ops, block) =
                collective(&mut prog, &path, r.line, "fwd_comm", r.fwd.kind, bytes, TP, c, i, Phase::Forward, opt)?;
            row_ops[i][0].comms = ops;
            if let Some(b) = block {
                gate = vec![b];
            }
        }
        for (i, r) in file.rows.iter().enumerate().rev() {
            let c = compute(&mut prog, r.ig_ns, &gate, i, Phase::InputGrad);
            row_ops[i][1].compute = c;
            gate = vec![c];
            let (ops, block) = collective(
                &mut prog,
                &path,
                r.line,
                "ig_comm",
                r.ig.kind,
                r.ig.bytes,
                TP,
                c,
                i,
                Phase::InputGrad,
                opt,
            )?;
            row_ops[i][1].comms = ops;
            // Default mode: the ig collective runs under the wg compute; the next row waits for both.
            let ig_block = if opt.compat {
                if let Some(b) = block {
                    gate = vec![b];
                }
                None
            } else {
                block
            };
            let c = compute(&mut prog, r.wg_ns, &gate, i, Phase::WeightGrad);
            row_ops[i][2].compute = c;
            gate = std::iter::once(c).chain(ig_block).collect();
            // wg collectives never block: nothing waits for them but the end of the iteration.
            let (ops, _) = collective(
                &mut prog,
                &path,
                r.line,
                "wg_comm",
                r.wg.kind,
                r.wg.bytes,
                DP,
                c,
                i,
                Phase::WeightGrad,
                opt,
            )?;
            row_ops[i][2].comms = ops;
        }
        let workload = Workload {
            layout,
            groups,
            programs: vec![prog],
            class_program: vec![0],
            rank_class: vec![0; world as usize],
            rows,
        };
        Ok(SimaiWorkload { file, workload, tp: t, ep: e, pp: p, dp, row_ops, warnings })
    }
}

/// Append row `row`'s compute of `ns` in `phase` after the ops of `gate`. SimAI's files give
/// times only, so the op states no work.
fn compute(prog: &mut Program, ns: u64, gate: &[u32], row: usize, phase: Phase) -> u32 {
    prog.push(Op::new(OpKind::Compute { ns: ns as f64, work: None }, gate.to_vec(), row as u32, phase))
}

/// Append the collective of one row phase after compute op `after`. Returns its ops and the op
/// that later work must wait for (None if nothing blocks).
#[allow(clippy::too_many_arguments)]
fn collective(
    prog: &mut Program,
    path: &str,
    line: usize,
    field: &str,
    kind: CommType,
    bytes: u64,
    plain: u16,
    after: u32,
    row: usize,
    phase: Phase,
    opt: &BuildOptions,
) -> Result<(Vec<u32>, Option<u32>)> {
    let (c, group) = match kind {
        CommType::None => return Ok((vec![], None)),
        CommType::AllReduceAllToAll if opt.compat => (crate::workload::Collective::AllReduce, NONE),
        CommType::AllReduceAllToAll => {
            return Err(InputError::at(path, line, field, "ALLREDUCEALLTOALL is not a collective (SimAI reads it as an all-reduce in no group; use --compat simai to reproduce that)"))
        }
        CommType::Collective(c, scope) => {
            use crate::workload::Collective::{Broadcast, Reduce};
            if opt.compat && matches!(c, Broadcast | Reduce) {
                return Ok((vec![], None)); // SimAI does not know these names and issues nothing.
            }
            (c, match scope {
                Scope::Plain => plain,
                Scope::Ep => EP,
                Scope::DpEp => DP_EP,
            })
        }
    };
    let deps = vec![after];
    let op = |prog: &mut Program, bytes: u64| {
        prog.push(Op::new(OpKind::Collective { collective: c, group, bytes }, deps.clone(), row as u32, phase))
    };
    // wg collectives never block; blocking ones may hide a fraction o of their bytes in a second,
    // non-blocking chunk (each chunk pays its own latency, as chunked overlap does).
    let o = match (phase, opt.compat) {
        (Phase::WeightGrad, _) => 1.0,
        (_, true) => 0.0,
        _ if group == EP => opt.overlap.ep,
        _ => opt.overlap.tp,
    };
    let (ops, block) = if o >= 1.0 {
        (vec![op(prog, bytes)], None)
    } else if o == 0.0 || bytes < 2 {
        let id = op(prog, bytes);
        (vec![id], Some(id))
    } else {
        let blocking = ((1.0 - o) * bytes as f64).round().clamp(1.0, bytes as f64 - 1.0) as u64;
        let first = op(prog, blocking);
        (vec![first, op(prog, bytes - blocking)], Some(first))
    };
    Ok((ops, block))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_world_beyond_the_limit_is_refused_before_it_is_allocated() {
        // Found by fuzzing: all_gpus 2147483648 allocated 8 GB of rank classes (an abort).
        let text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 \
                    all_gpus: 2147483648 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0\n1\n\
                    x -1 1 ALLREDUCE 8 1 NONE 0 1 NONE 0 1\n";
        let file = WorkloadFile::parse("w.txt", text, false).unwrap();
        let opts = BuildOptions {
            gpus: None,
            gpus_per_server: 8,
            compat: false,
            overlap: Overlap { dp: 0.0, tp: 0.0, ep: 0.0, pp: 1.0 },
        };
        let e = SimaiWorkload::build(file, &opts).unwrap_err();
        assert_eq!(e.to_string(), "w.txt: gpus: 2147483648 GPUs are more than clustersim simulates (at most 16777216)");
    }
}
