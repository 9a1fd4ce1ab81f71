//! Training workloads from a model and a parallel plan: generate the iteration as IR, run it
//! through the executor, and report time, throughput, MFU, where the time goes, and memory.

pub mod costs;
pub mod generate;
pub mod hardware;
pub mod memory;
pub mod model;
pub mod plan;

use serde::{Deserialize, Serialize};

use crate::analytical::alpha_beta::{AlphaBeta, Bandwidths};
use crate::analytical::platform::{GpuType, NicType, Platform};
use crate::analytical::ratio::RatioTables;
use crate::analytical::Analytical;
use crate::error::{InputError, Result};
use crate::executor::Executor;
use crate::exposure::exposure;
use crate::workload::OpKind;
use hardware::Accelerator;
use memory::{memory, Memory};
use model::Model;
use plan::Plan;

/// The network the analytical model prices communication on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Network {
    /// NVLink (scale-up) bus bandwidth per GPU, GB/s.
    pub nvlink_gbps: f32,
    /// NVLS all-reduce bus bandwidth inside a server, GB/s, if the switch reduces in-network.
    #[serde(default)]
    pub nvls_gbps: Option<f32>,
    /// Achievable bus bandwidth per NIC, GB/s.
    pub nic_gbps: f32,
    pub nics_per_server: u32,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TrainingInput {
    pub model: Model,
    pub plan: Plan,
    pub accelerator: Accelerator,
    pub network: Network,
    #[serde(default)]
    pub flash_attention: bool,
    #[serde(default)]
    pub allow_oom: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TrainingReport {
    pub iteration_s: f64,
    pub tokens_per_s: f64,
    pub mfu: f64,
    pub params: u64,
    pub active_params: u64,
    pub micro_batches: u32,
    pub dp: u32,
    /// Where the time of the stage that finishes last goes, in seconds; sums to iteration_s.
    pub breakdown_s: Vec<(String, f64)>,
    pub memory: Memory,
    pub memory_fits: bool,
    pub events: u64,
    pub ops: usize,
}

pub fn run_training(input: &TrainingInput, progress: &mut dyn FnMut(f64)) -> Result<TrainingReport> {
    let (model, plan, acc) = (&input.model, &input.plan, &input.accelerator);
    plan.validate(model)?;
    let mem = memory(model, plan, input.flash_attention);
    let fits = mem.total_gb <= acc.hbm_gb;
    if !fits && !input.allow_oom {
        return Err(InputError::field(
            "plan",
            "memory",
            format!(
                "needs {:.1} GB per GPU ({:.1} weights, {:.1} gradients and optimizer, {:.1} activations) but {} has {} GB; use more TP/PP, the distributed optimizer, recompute, or --allow-oom",
                mem.total_gb, mem.params_gb, mem.grads_and_optimizer_gb, mem.activations_gb, acc.name, acc.hbm_gb
            ),
        ));
    }
    let generated = generate::generate(model, plan, acc, input.flash_attention)?;
    let w = &generated.workload;
    let net = &input.network;
    let platform = Platform {
        gpus_per_server: plan.gpus_per_server,
        nics_per_server: net.nics_per_server,
        // SimAI's GPU type only supplies defaults; both bandwidths are given explicitly.
        gpu: GpuType::H100,
        nic: NicType::Cx7,
        nvlink_gbps: Some(net.nvlink_gbps),
        nic_gbps: Some(net.nic_gbps),
    };
    platform.validate()?;
    let cost = AlphaBeta { platform, bandwidths: Bandwidths::Builtin(RatioTables::builtin()), nvls_gbps: net.nvls_gbps };
    let mut network = Analytical::new(Box::new(cost), plan.gpus_per_server);
    let exec = Executor::new(w)?.run(&mut network, progress)?;
    let iteration_ns = exec.end_ns;
    // Break down the stage that finishes last (its timeline spans the whole iteration).
    let last = (0..exec.timelines.len())
        .max_by(|&a, &b| {
            let end = |c: usize| exec.timelines[c].end.iter().copied().fold(0.0, f64::max);
            end(a).total_cmp(&end(b)).then(b.cmp(&a))
        })
        .unwrap_or(0);
    let prog = &w.programs[w.class_program[last] as usize];
    let ex = exposure(prog, &exec.timelines[last], iteration_ns);
    let mut parts: Vec<(String, f64)> = vec![("compute".into(), ex.compute_ns)];
    for (g, group) in w.groups.iter().enumerate() {
        let exposed: f64 = prog
            .ops
            .iter()
            .enumerate()
            .filter(|(_, op)| match op.kind {
                OpKind::Collective { group, .. } => group as usize == g,
                OpKind::Send { peer, .. } | OpKind::Recv { peer, .. } => peer.group as usize == g,
                OpKind::Compute { .. } => false,
            })
            .fold(0.0, |acc, (i, _)| acc + ex.exposed[i]);
        parts.push((format!("exposed {} comm", group.name), exposed));
    }
    parts.push(("bubble".into(), ex.idle_ns));
    let (params, active) = model.params();
    let tokens = plan.gbs as f64 * plan.seq as f64;
    let seconds = iteration_ns / 1e9;
    Ok(TrainingReport {
        iteration_s: seconds,
        tokens_per_s: tokens / seconds,
        mfu: generated.model_flops / (seconds * plan.gpus as f64 * acc.matmul_tflops * 1e12),
        params,
        active_params: active,
        micro_batches: plan.micro_batches(),
        dp: plan.dp_size(),
        breakdown_s: parts.into_iter().map(|(k, v)| (k, v / 1e9)).collect(),
        memory: mem,
        memory_fits: fits,
        events: exec.events,
        ops: w.programs.iter().map(|p| p.ops.len()).sum(),
    })
}
