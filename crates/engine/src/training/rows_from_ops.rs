//! Megatron's SimAI rows derived from the generator's ops: the first pipeline stage's program
//! ([`generate`]) read back as SimAI rows, so the collectives are defined once.
//!
//! A row runs, in the default mode of `clustersim analytical` (simai/build.rs): forward, its
//! compute then its fwd collective (blocking); backward, its ig compute, then its ig collective
//! under its wg compute, the next row waiting for both; its wg collective never blocks. The
//! derivation reproduces the stage's dependencies under those rules, per module (embedding, a
//! layer's attention, its MLP or MoE block, the LM head, the cross-entropy):
//!
//! - forward: each collective closes a row holding the compute issued since the previous one;
//!   a compute left at the module's end joins its last row (a serial chain, so the same time);
//! - backward, filling the module's rows in execution order (last row first): a collective takes
//!   the next row whose ig slot is free; a compute joins the current row before its collective,
//!   or under it (wg) if it does not wait for it, or before it if it waits and the row holds
//!   nothing else (again a serial chain); the SP re-gather, which runs under the data-gradient
//!   GEMM, gets a row of its own; rows are added where the module's forward rows run out
//!   (full recompute);
//! - each gradient bucket's reduction (issued in the last micro-batch's backward when the
//!   weight gradient that completes it is done) is a wg collective of the last rows to run of
//!   that weight gradient's module, in the file's first micro-batch (SimAI runs the backward of
//!   the file's micro-batches last to first); reductions started after the backward (all of
//!   them without `--overlap-grad-reduce`, Megatron-LM's default) get rows of their own, as the
//!   parameter all-gathers after the optimizer step do.
//!
//! A SimAI file cannot carry: the other stages (the pipeline is a closed form in the report),
//! point-to-point transfers (`pp_comm` in the header), the tied-embedding all-reduce between the
//! first and last stage (no group for it), context parallelism, the optimizer step waiting for
//! the gradient reductions (wg collectives block nothing), and the parameter all-gathers under
//! the next forward (the file gathers after the optimizer step: [`FILE_OVERLAP`]).

use std::collections::HashMap;

use super::generate::{
    generate_with, Generated, DP, DP_EP, EP, NO_LAYER, R_ATTN, R_CE, R_EMB, R_GATHER, R_GRAD, R_HEAD, R_MOE, R_OPT, TP,
};
use super::model::Model;
use super::overlap::Overlap;
use super::plan::Plan;
use super::simai_rows::stage_header;
use crate::compute::Device;
use crate::error::Result;
use crate::simai::file::{Comm, CommType, Row, Scope, WorkloadFile};
use crate::workload::{Collective, GroupId, Op, OpKind, Phase, Program};

const NONE: Comm = Comm { kind: CommType::None, bytes: 0 };

/// A row being derived. Compute in ns.
#[derive(Debug, Clone)]
struct Draft {
    name: String,
    fwd_ns: f64,
    fwd: Comm,
    ig_ns: f64,
    /// Weight-gradient compute before the row's ig collective (or in a row without one).
    wg_serial_ns: f64,
    ig: Option<(u32, Comm)>,
    /// Ops of this row that wait for its ig collective (and the collective itself).
    after_ig: Vec<u32>,
    wg_ns: f64,
    wg: Comm,
    touched: bool,
}

impl Draft {
    fn new(name: &str) -> Draft {
        Draft {
            name: name.to_string(),
            fwd_ns: 0.0,
            fwd: NONE,
            ig_ns: 0.0,
            wg_serial_ns: 0.0,
            ig: None,
            after_ig: Vec::new(),
            wg_ns: 0.0,
            wg: NONE,
            touched: false,
        }
    }

    fn row(&self) -> Row {
        let t = |x: f64| x.round() as u64;
        // Weight-gradient compute before the ig collective runs in the ig slot; without a
        // collective ig then wg is a serial chain either way.
        let (ig_ns, wg_ns) = match self.ig {
            Some(_) => (self.ig_ns + self.wg_serial_ns, self.wg_ns),
            None => (self.ig_ns, self.wg_serial_ns + self.wg_ns),
        };
        Row {
            name: self.name.clone(),
            depen: -1,
            fwd_ns: t(self.fwd_ns),
            fwd: self.fwd,
            ig_ns: t(ig_ns),
            ig: self.ig.map_or(NONE, |(_, c)| c),
            wg_ns: t(wg_ns),
            wg: self.wg,
            wg_update_ns: 100,
            line: 0,
        }
    }
}

/// The row's collective of op `op`, or None where a SimAI file has no group for it.
fn comm(op: &Op) -> Option<Comm> {
    let OpKind::Collective { collective, group, bytes } = op.kind else { return None };
    let scope = match group {
        TP | DP => Scope::Plain,
        EP => Scope::Ep,
        DP_EP => Scope::DpEp,
        _ => return None,
    };
    Some(Comm { kind: CommType::Collective(collective, scope), bytes })
}

fn group(op: &Op) -> Option<GroupId> {
    match op.kind {
        OpKind::Collective { group, .. } => Some(group),
        _ => None,
    }
}

/// One module's rows: in file order after the forward pass, in execution order while its
/// backward is placed.
struct Module {
    key: (u32, u32),
    rows: Vec<Draft>,
}

fn row_name(plan: &Plan, label: u32, c: &Comm, i: usize) -> String {
    let block = |b: &str| {
        let column = matches!(c.kind, CommType::Collective(crate::workload::Collective::AllGather, _));
        let kind = if !(plan.sp && plan.tp > 1) {
            "layer"
        } else if column {
            "column"
        } else {
            "row"
        };
        format!("{b}_{kind}")
    };
    match label {
        R_EMB => "embedding_layer".into(),
        R_MOE => "mlp_moelayer".into(),
        R_HEAD => "final_column".into(),
        R_CE => format!("cross_entropy{}", i + 1),
        l if l == R_ATTN => block("attention"),
        _ => block("mlp"),
    }
}

/// The forward rows of one micro-batch's forward ops, module by module.
fn forward_modules(plan: &Plan, prog: &Program, layer: &[u32], ops: &[u32]) -> Vec<Module> {
    let mut mods: Vec<Module> = Vec::new();
    let mut pending = 0.0;
    let close = |mods: &mut Vec<Module>, pending: &mut f64| {
        if let Some(m) = mods.last_mut() {
            if *pending > 0.0 || m.rows.is_empty() {
                if m.rows.is_empty() {
                    m.rows.push(Draft::new(&row_name(plan, m.key.1, &NONE, 0)));
                }
                m.rows.last_mut().expect("a row").fwd_ns += *pending;
            }
        }
        *pending = 0.0;
    };
    for &id in ops {
        let op = &prog.ops[id as usize];
        // Gradient reductions are read below; with one micro-batch they sit in this backward too.
        if matches!(op.kind, OpKind::Send { .. } | OpKind::Recv { .. }) || op.row == R_GRAD {
            continue;
        }
        let key = (layer[id as usize], op.row);
        if mods.last().is_none_or(|m| m.key != key) {
            close(&mut mods, &mut pending);
            mods.push(Module { key, rows: Vec::new() });
        }
        let m = mods.last_mut().expect("a module");
        match op.kind {
            OpKind::Compute { ns, .. } => pending += ns,
            _ => {
                let c = comm(op).expect("layer collectives are in TP or EP");
                let mut d = Draft::new(&row_name(plan, key.1, &c, m.rows.len()));
                d.fwd_ns = std::mem::take(&mut pending);
                d.fwd = c;
                m.rows.push(d);
            }
        }
    }
    close(&mut mods, &mut pending);
    mods
}

/// Place one module's backward ops on its rows (`m.rows` in execution order).
fn place_backward(prog: &Program, m: &mut Module, ops: &[u32]) {
    let rows = &mut m.rows;
    let mut c = 0usize;
    // The row after the current one in execution order, appended when the forward rows run out.
    fn advance(rows: &mut Vec<Draft>, c: &mut usize) {
        if *c + 1 == rows.len() {
            let name = rows[*c].name.clone();
            rows.push(Draft::new(&name));
        }
        *c += 1;
    }
    for &id in ops {
        let op = &prog.ops[id as usize];
        match op.kind {
            OpKind::Compute { ns, .. } => {
                let r = &rows[c];
                let waits = op.deps.iter().any(|d| r.after_ig.contains(d));
                if r.ig.is_some() && !waits {
                    rows[c].wg_ns += ns;
                    rows[c].touched = true;
                    continue;
                }
                if r.ig.is_some() && (r.ig_ns > 0.0 || r.wg_ns > 0.0 || r.wg_serial_ns > 0.0) {
                    advance(rows, &mut c);
                }
                let r = &mut rows[c];
                if r.ig.is_some() {
                    r.after_ig.push(id);
                }
                match op.phase {
                    Phase::WeightGrad if r.ig.is_none() => r.wg_serial_ns += ns,
                    _ => r.ig_ns += ns,
                }
                r.touched = true;
            }
            _ => {
                let cm = comm(op).expect("layer collectives are in TP or EP");
                if op.phase == Phase::WeightGrad && group(op) == Some(TP) {
                    // The SP re-gather: a row of its own, before the current one's if that is untouched.
                    if rows[c].touched {
                        let name = rows.get(c + 1).unwrap_or(&rows[c]).name.clone();
                        rows.insert(c + 1, Draft::new(&name));
                        c += 1;
                    } else {
                        let name = rows[c].name.clone();
                        rows.insert(c, Draft::new(&name));
                    }
                } else if rows[c].ig.is_some() || rows[c].wg_ns > 0.0 {
                    advance(rows, &mut c);
                }
                let r = &mut rows[c];
                r.ig = Some((id, cm));
                r.after_ig.push(id);
                r.touched = true;
            }
        }
    }
}

/// The overlaps a SimAI file can carry: Megatron-Core's defaults, but the parameter all-gathers
/// after the optimizer step.
pub const FILE_OVERLAP: Overlap = Overlap {
    grad_reduce: None,
    param_gather: Some(false),
    tp_comm: None,
    p2p: None,
    bucket_size: None,
    gather_at_zero_grad: None,
};

/// The rows of `plan`'s first pipeline stage, derived from the generator's program (`plan` without CP).
pub fn megatron_workload(model: &Model, plan: &Plan, acc: &Device, flash: bool) -> Result<WorkloadFile> {
    let Generated { workload, steps, op_layer, .. } = generate_with(model, plan, acc, flash, &FILE_OVERLAP)?;
    let (prog, steps, layer) = (&workload.programs[0], &steps[0], &op_layer[0]);
    let m = plan.micro_batches();
    let ops_of = |forward: bool, mb: u32| -> Vec<u32> {
        let mut chunks: Vec<_> = steps.iter().filter(|(s, _)| s.forward == forward && s.micro_batch == mb).collect();
        chunks.sort_by_key(|(s, _)| if forward { s.chunk } else { u32::MAX - s.chunk });
        chunks.into_iter().flat_map(|(_, r)| r.clone()).collect()
    };
    // One micro-batch's rows (every micro-batch issues the same), from micro-batch 0.
    let mut mods = forward_modules(plan, prog, layer, &ops_of(true, 0));
    let index: HashMap<(u32, u32), usize> = mods.iter().enumerate().map(|(i, m)| (m.key, i)).collect();
    let mut by_module: Vec<Vec<u32>> = vec![Vec::new(); mods.len()];
    for id in ops_of(false, 0) {
        let op = &prog.ops[id as usize];
        // Gradient reductions are read below; with one micro-batch they sit in this backward too.
        if matches!(op.kind, OpKind::Send { .. } | OpKind::Recv { .. }) || op.row == R_GRAD {
            continue;
        }
        let key = (layer[id as usize], op.row);
        let i = *index.get(&key).expect("every backward module ran forward");
        by_module[i].push(id);
    }
    for (md, ops) in mods.iter_mut().zip(&by_module) {
        md.rows.reverse();
        place_backward(prog, md, ops);
        md.rows.reverse();
    }
    let end = steps.last().map_or(0, |(_, r)| r.end);
    // The gradient reductions in DP (the tied-embedding all-reduce has no SimAI group) started
    // in the last micro-batch's backward, per module of the weight gradient each waits for, in
    // issue order; those started after the backward get rows of their own.
    let mut reduce: HashMap<(u32, u32), Vec<Comm>> = HashMap::new();
    for id in ops_of(false, m - 1) {
        let op = &prog.ops[id as usize];
        if op.row == R_GRAD && matches!(group(op), Some(DP | DP_EP)) {
            let key = op.deps.first().map(|&d| (layer[d as usize], prog.ops[d as usize].row));
            let key = key.filter(|k| index.contains_key(k)).unwrap_or((NO_LAYER, R_EMB));
            reduce.entry(key).or_default().extend(comm(op));
        }
    }
    let tail: Vec<&Op> = prog.ops[end as usize..].iter().collect();
    let mut first: Vec<Draft> = mods.iter().flat_map(|md| md.rows.clone()).collect();
    // Each module's reductions on its last rows to run (its first rows in the file), in issue order.
    let mut start = 0;
    for md in &mods {
        if let Some(cs) = reduce.remove(&md.key) {
            // One wg collective per row; more buckets than rows merge into a row holding the same
            // collective (their bytes add up).
            let rows = &mut first[start..start + md.rows.len()];
            for (k, c) in cs.iter().rev().enumerate() {
                let slot = (k..rows.len())
                    .chain(0..rows.len())
                    .find(|&i| rows[i].wg == NONE || rows[i].wg.kind == c.kind)
                    .unwrap_or(rows.len() - 1);
                let bytes = if rows[slot].wg.kind == c.kind { rows[slot].wg.bytes } else { 0 };
                rows[slot].wg = Comm { kind: c.kind, bytes: bytes + c.bytes };
            }
        }
        start += md.rows.len();
    }
    let mut rows = Vec::new();
    // Rows of their own, gathers before reductions: SimAI runs them last, in reverse.
    for gathers in [true, false] {
        for op in &tail {
            let Some(c @ Comm { kind: CommType::Collective(coll, _), .. }) = comm(op) else { continue };
            if (op.row == R_GATHER) == gathers && matches!(op.row, R_GATHER | R_GRAD) {
                let buffer = if group(op) == Some(DP_EP) { "expert" } else { "dense" };
                let what = match coll {
                    Collective::AllGather => "params_all_gather",
                    Collective::ReduceScatter => "grads_reduce_scatter",
                    _ => "grads_all_reduce",
                };
                let mut d = Draft::new(&format!("{buffer}_{what}"));
                d.wg = c;
                rows.push(d.row());
            }
        }
    }
    let optimizer: f64 = tail
        .iter()
        .filter(|op| op.row == R_OPT)
        .map(|op| if let OpKind::Compute { ns, .. } = op.kind { ns } else { 0.0 })
        .sum();
    let mut d = Draft::new("optimizer_step");
    d.ig_ns = optimizer;
    rows.push(d.row());
    rows.extend(first.iter().map(Draft::row));
    let per_mb: Vec<Row> = mods.iter().flat_map(|md| md.rows.iter().map(Draft::row)).collect();
    for _ in 1..m {
        rows.extend(per_mb.iter().cloned());
    }
    let pp_comm = prog
        .ops
        .iter()
        .find_map(|op| match op.kind {
            OpKind::Send { bytes, .. } | OpKind::Recv { bytes, .. } => Some(bytes),
            _ => None,
        })
        .unwrap_or(0);
    let header = stage_header(plan, plan.vpp, m, pp_comm, false);
    Ok(WorkloadFile { path: String::new(), header, rows, warnings: Vec::new() })
}

#[cfg(test)]
mod tests {
    //! The same iteration reached two ways: `train` (the generator's program, stage 0) and
    //! `workload generate` then `analytical` in the default mode (the derived rows run by
    //! simai/build.rs), on the same α–β network. Compute and exposed communication per group agree.
    use super::*;
    use crate::catalog::Accelerator;
    use crate::executor::Executor;
    use crate::exposure::exposure;
    use crate::network::analytical::Analytical;
    use crate::platform::Placement;
    use crate::simai::build::{BuildOptions, Overlap, SimaiWorkload};
    use crate::training::fixtures;
    use crate::training::model::llama3_70b;
    use crate::training::model::Moe;
    use crate::training::plan::{DataParallel, Recompute};
    use crate::training::{network_cost, Network, TrainingInput};

    fn mixtral() -> Model {
        let moe = Moe { experts: 8, topk: 2, expert_ffn: 14336, shared_experts: 0, shared_ffn: 0, dense_layers: 0 };
        Model {
            name: "mixtral".into(),
            layers: 32,
            hidden: 4096,
            heads: 32,
            ffn: 14336,
            vocab: 32000,
            moe: Some(moe),
            ..llama3_70b()
        }
    }

    fn plan(gpus: u32, tp: u32, pp: u32, ep: u32, gbs: u32, sp: bool, dp: DataParallel) -> Plan {
        Plan { ep, gbs, seq: 8192, sp, dp, ..fixtures::plan(gpus, tp, pp) }
    }

    fn h100() -> Device {
        Device::from(Accelerator {
            name: "h100".into(),
            matmul_tflops: 989.0,
            vector_tflops: 67.0,
            hbm_tbps: 3.35,
            ..Accelerator::ideal()
        })
    }

    /// (compute, exposed TP, EP, DP + DP_EP) in ns of stage 0, the two ways.
    fn both_ways(model: Model, plan: Plan) -> ([f64; 4], [f64; 4]) {
        let input = TrainingInput {
            accelerator: h100(),
            network: Network { nvlink_busbw: 370.8, nvls_busbw: Some(475.0), nic_busbw: 48.5, nics_per_server: 8 },
            allow_oom: true,
            ..fixtures::input(model, plan)
        };
        let (m, p, acc) = (&input.model, &input.plan, &input.accelerator);
        let sum = |prog: &Program, ex: &crate::exposure::Exposure, groups: &[GroupId]| -> f64 {
            prog.ops
                .iter()
                .zip(&ex.exposed)
                .filter(|(op, _)| group(op).is_some_and(|g| groups.contains(&g)))
                .map(|(_, e)| e)
                .sum()
        };
        // train: the generator's program on the analytical network, stage 0.
        let g = generate_with(m, p, acc, true, &FILE_OVERLAP).unwrap();
        let cost = || Box::new(network_cost(&input).unwrap());
        let exec = Executor::new(&g.workload)
            .unwrap()
            .run(&mut Analytical::new(cost(), Placement::servers(g.workload.world_size(), 8)), &mut |_| true)
            .unwrap();
        let prog = &g.workload.programs[0];
        let ex = exposure(prog, &exec.timelines[0], exec.timelines[0].end.iter().copied().fold(0.0, f64::max));
        let train = [ex.compute_ns, sum(prog, &ex, &[TP]), sum(prog, &ex, &[EP]), sum(prog, &ex, &[DP, DP_EP])];
        // workload generate → analytical: the derived file, written and read back.
        let text = megatron_workload(m, p, acc, true).unwrap().to_text();
        let file = WorkloadFile::parse("w.txt", &text, false).unwrap();
        let opt = BuildOptions {
            gpus: Some(p.gpus),
            gpus_per_server: 8,
            compat: false,
            overlap: Overlap { dp: 0.0, tp: 0.0, ep: 0.0, pp: 0.0 },
        };
        let sw = SimaiWorkload::build(file, &opt).unwrap();
        let exec = Executor::new(&sw.workload)
            .unwrap()
            .run(&mut Analytical::new(cost(), Placement::servers(g.workload.world_size(), 8)), &mut |_| true)
            .unwrap();
        let prog = &sw.workload.programs[0];
        let ex = exposure(prog, &exec.timelines[0], exec.end_ns);
        use crate::simai::build as b;
        let file =
            [ex.compute_ns, sum(prog, &ex, &[b::TP]), sum(prog, &ex, &[b::EP]), sum(prog, &ex, &[b::DP, b::DP_EP])];
        (train, file)
    }

    /// Compute and exposed TP and EP within `rel`; exposed DP within the optimizer step, which a
    /// SimAI file cannot make wait for the gradient reductions (it overlaps them there).
    fn assert_agree(model: Model, plan: Plan, rel: f64) {
        let costs = Costs { acc: &h100(), model: &model, plan: &plan, flash_attention: true };
        let (params, _) = stage_params(&model, &plan, 0);
        let shard = if plan.dp == DataParallel::Ddp { 1.0 } else { plan.dp_size() as f64 };
        let optimizer = costs.optimizer(params as f64 / shard).ns;
        let (train, file) = both_ways(model, plan);
        for (k, what) in ["compute", "exposed TP", "exposed EP"].iter().enumerate() {
            let tol = rel * train[k].max(file[k]) + 1e3;
            assert!((train[k] - file[k]).abs() <= tol, "{what}: train {} ns, file {} ns", train[k], file[k]);
        }
        let tol = rel * train[3].max(file[3]) + optimizer + 1e3;
        assert!((train[3] - file[3]).abs() <= tol, "exposed DP: train {} ns, file {} ns", train[3], file[3]);
    }

    use super::super::costs::Costs;
    use super::super::generate::stage_params;

    #[test]
    fn llama3_70b_tp8_pp4_sp_distributed_optimizer() {
        assert_agree(llama3_70b(), plan(1024, 8, 4, 1, 128, true, DataParallel::DistributedOptimizer), 0.005);
    }

    #[test]
    fn llama3_70b_tp8_without_sp_ddp() {
        assert_agree(llama3_70b(), plan(64, 8, 1, 1, 16, false, DataParallel::Ddp), 0.005);
    }

    #[test]
    fn mixtral_expert_parallel() {
        // Within 2 %: the expert and dense gradient reductions run under the last micro-batch's
        // TP and EP collectives at slightly different instants, and exposed time is shared
        // among the collectives in flight.
        assert_agree(mixtral(), plan(64, 2, 1, 8, 64, true, DataParallel::Ddp), 0.02);
    }

    #[test]
    fn full_recompute() {
        let mut p = plan(64, 8, 2, 1, 16, true, DataParallel::Ddp);
        p.recompute = Recompute::Full;
        assert_agree(llama3_70b(), p, 0.005);
    }

    #[test]
    fn the_file_holds_today_s_collectives_per_kind() {
        // The derived rows of Llama 3 70B TP8 PP4 SP: per micro-batch, embedding RS/AG and per
        // layer 2 × (AG, RS) forward and 2 × (RS, AG, re-gather AG) backward, all of T bytes.
        let p = plan(1024, 8, 4, 1, 64, true, DataParallel::DistributedOptimizer);
        let f = megatron_workload(&llama3_70b(), &p, &h100(), true).unwrap();
        let t = 2 * 8192 * 8192;
        let count = |pick: fn(&Row) -> Comm, c: crate::workload::Collective| {
            f.rows.iter().filter(|r| pick(r) == Comm { kind: CommType::Collective(c, Scope::Plain), bytes: t }).count()
        };
        use crate::workload::Collective::{AllGather, ReduceScatter};
        let (layers, m) = (20, 2);
        assert_eq!(count(|r| r.fwd, AllGather), m * 2 * layers);
        assert_eq!(count(|r| r.fwd, ReduceScatter), m * (2 * layers + 1));
        assert_eq!(count(|r| r.ig, ReduceScatter), m * 2 * layers);
        assert_eq!(count(|r| r.ig, AllGather), m * (4 * layers + 1));
    }
}
