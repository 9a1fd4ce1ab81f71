//! Training workloads from a model and a parallel plan: generate the iteration as IR, run it
//! through the executor, and report time, throughput, MFU, where the time goes, and memory.

pub mod batch;
pub mod bound;
pub mod costs;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod generate;
pub mod memory;
pub mod mix;
pub mod model;
pub mod overlap;
pub mod plan;
pub mod rows_from_ops;
pub mod search;
pub mod simai_rows;
pub mod slow;

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

use crate::catalog::simai::{GpuType, NicType};
use crate::network::analytical::alpha_beta::{AlphaBeta, Bandwidths, PriceMemo};
use crate::network::analytical::server_spec::ServerSpec;

use crate::collective::choose::protocol_option;
use crate::collective::choose::Options;
use crate::collective::on_platform::{self, PlatformOptions};
use crate::compute::Device;
use crate::driver::{simulate, Backend, FlowConfig};
use crate::error::{InputError, Result};
use crate::executor::Execution;
use crate::exposure::{exposure, Exposure};
use crate::network::flow::network::Tuning;
use crate::platform::routing::Routes;
use crate::platform::{Platform, Routing};
use crate::workload::{OpKind, Workload};
use memory::{stage_memory, Memory};
use model::Model;
use plan::Plan;

/// The network the analytical model prices communication on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Network {
    /// NVLink (scale-up) bus bandwidth per GPU, GB/s.
    pub nvlink_busbw: f32,
    /// Present when the servers' switches reduce in-network (NVLS): NCCL's tuner may then pick
    /// NVLS, whose bandwidth follows from NVLink × NCCL's NVLS efficiency (collective::nccl).
    #[serde(default)]
    pub nvls_busbw: Option<f32>,
    /// Achievable bus bandwidth per NIC, GB/s.
    pub nic_busbw: f32,
    pub nics_per_server: u32,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TrainingInput {
    pub model: Model,
    pub plan: Plan,
    pub accelerator: Device,
    pub network: Network,
    #[serde(default)]
    pub flash_attention: bool,
    /// Megatron-Core's communication overlaps (absent: its defaults for the plan).
    #[serde(default)]
    pub overlap: overlap::Overlap,
    #[serde(default)]
    pub allow_oom: bool,
    /// Also return the Chrome/Perfetto trace of the simulated iteration.
    #[serde(default)]
    pub trace: bool,
    /// Run communication on this fabric (SimAI topology file text) with the flow model instead
    /// of the analytical one.
    #[serde(default)]
    pub fabric: Option<Fabric>,
    /// A heterogeneous job's accelerator types ([`mix`]); None: every GPU is `accelerator`.
    #[serde(default)]
    pub mix: Option<mix::Mix>,
    /// Slow GPUs, `RANK:FACTOR,…` ([`slow`]): each rank's compute ops take FACTOR times as long.
    #[serde(default)]
    pub slow_gpus: Option<String>,
}

/// A fabric for the flow backend and how collectives run on it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Fabric {
    /// Where the topology came from (for messages).
    pub path: String,
    /// A SimAI topology file's or a platform file's text (unused when `platform` is given).
    #[serde(default)]
    pub topology: String,
    /// The platform itself, when the caller holds one (the Python bindings pass it as it is).
    #[serde(skip)]
    pub platform: Option<Platform>,
    /// The catalog's accelerator names, which a platform file's GPUs may name.
    #[serde(default)]
    pub accelerators: Vec<String>,
    /// "auto" (NCCL's tuner), "auto+extra" (with the algorithms beyond NCCL's) or an algorithm name.
    pub algorithm: String,
    /// 0: one per group rank of a server, at most one per NIC ([`crate::collective::group_channels`]).
    pub channels: u32,
    #[serde(default)]
    pub seed: u64,
    /// Queue pairs per connection (NCCL_IB_QPS_PER_CONNECTION; 0 = 1).
    #[serde(default)]
    pub qps: u32,
    /// "ecmp" (per-flow hashing, the default) or "spray" (per-packet spraying).
    #[serde(default)]
    pub routing: Option<String>,
    /// SimAI's AS_SEND_LAT, AS_NVLS_ENABLE, AS_PXN_ENABLE, AS_NVLSTREE_ENABLE.
    #[serde(default)]
    pub send_lat_us: Option<f64>,
    #[serde(default)]
    pub nvls: bool,
    #[serde(default)]
    pub pxn: bool,
    #[serde(default)]
    pub nvlstree: bool,
    /// NCCL_PROTO: "auto" (absent) or a protocol name.
    #[serde(default)]
    pub protocol: Option<String>,
    /// NCCL_P2P_PXN_LEVEL = 2 (NCCL's default): all-to-all between servers goes through PXN.
    #[serde(default = "nccl_p2p_pxn")]
    pub p2p_pxn: bool,
    /// A routes file's text and where it came from ([`Routes::parse`]).
    #[serde(default)]
    pub routes: Option<String>,
    #[serde(default)]
    pub routes_path: Option<String>,
    /// "flow" (absent) or "packet": what moves the transfers ([`crate::driver::fabric_backend`]).
    #[serde(default)]
    pub backend: Option<String>,
    /// Faults during the run, in [`crate::platform::fault`]'s syntax (`link:a-b@1ms:0.5,...`).
    #[serde(default)]
    pub faults: Option<String>,
    /// Reduction servers and reducing switches: the all-reduces across servers run on them,
    /// every other collective as `algorithm` says ([`on_platform::algorithm_options`]).
    #[serde(flatten)]
    pub on_platform: PlatformOptions,
}

fn nccl_p2p_pxn() -> bool {
    Options::default().p2p_pxn
}

impl Fabric {
    /// How collectives run on `topology`, which the reduction options may scale (a reduction
    /// server's or a switch's throughput caps the links into it).
    pub fn tuning(&self, topology: &mut Platform) -> Result<Tuning> {
        let mut options = Options {
            send_lat_us: self.send_lat_us,
            nvls_enable: self.nvls,
            pxn_enable: self.pxn,
            nvlstree_enable: self.nvlstree,
            protocol: protocol_option(self.protocol.as_deref().unwrap_or("auto"))?,
            p2p_pxn: self.p2p_pxn,
            ..Options::default()
        };
        on_platform::algorithm_options(topology, &self.algorithm, &self.on_platform, &mut options)?;
        Ok(Tuning { options, channels: self.channels, qps: self.qps, seed: self.seed })
    }

    /// The topology, tuning and routes, parsed and checked.
    pub fn config(&self) -> Result<FlowConfig> {
        let mut topology = match &self.platform {
            Some(p) => p.clone(),
            None => Platform::parse_text(&self.path, &self.topology)?,
        };
        if let Some(r) = &self.routing {
            topology.routing = Routing::parse(r)?;
        }
        let routes = match &self.routes {
            None => Routes::default(),
            Some(text) => Routes::parse(self.routes_path.as_deref().unwrap_or("routes"), text, &topology)?,
        };
        let tuning = self.tuning(&mut topology)?;
        crate::collective::coherent_ring::check_platform(&tuning.options, &topology, &self.path)?;
        let packet = crate::driver::fabric_backend(self.backend.as_deref().unwrap_or("flow"))?;
        let faults = match &self.faults {
            Some(spec) if !spec.trim().is_empty() => crate::platform::fault::parse_faults("--fault", spec, &topology)?,
            _ => Vec::new(),
        };
        Ok(FlowConfig { topology, tuning, routes, packet, faults })
    }
}

/// Where one pipeline stage's time goes, seconds: compute, exposed communication per group and
/// bubble (idle with nothing in flight, up to the end of the iteration), summing to the iteration.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StageTime {
    pub stage: u32,
    /// The accelerator type of these ranks in a mixed job (a stage of two types is two entries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accelerator: Option<String>,
    /// When the stage's last op ends.
    pub end_s: f64,
    /// Compute plus exposed communication: the time the stage is not waiting.
    pub busy_s: f64,
    pub breakdown_s: Vec<(String, f64)>,
    /// Transformer layers of the stage, all chunks ([`Plan::chunk_layers`]).
    pub layers: u32,
    /// Memory per GPU of the stage ([`memory::stage_memory`]).
    pub memory_gb: f64,
}

/// Time per row label (layer name) of the critical stage, summed over its ops.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LayerTime {
    pub name: String,
    pub compute_s: f64,
    pub exposed_comm_s: f64,
    /// All communication time, overlapped or not.
    pub comm_s: f64,
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
    /// Where the time of the critical stage goes, in seconds; sums to iteration_s. Its idle
    /// time is "bubble" (waiting on the pipeline) and, in a job of several accelerator types,
    /// "waiting for slower devices" (what the faster types of a stage wait for the slowest).
    pub breakdown_s: Vec<(String, f64)>,
    /// The pipeline stage `breakdown_s` and `layers` describe: the critical stage (not the one
    /// that finishes last: under 1F1B that is stage 0, which runs the last backward, mostly
    /// waiting).
    pub breakdown_stage: u32,
    /// In a job of several types, the type of the critical stage's ranks that `breakdown_s`
    /// describes (the busiest of that stage).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown_accelerator: Option<String>,
    /// Every stage's breakdown; each sums to iteration_s.
    pub stages: Vec<StageTime>,
    /// The stage busy longest (computing or in exposed communication): it bounds the pipeline.
    pub critical_stage: u32,
    /// The largest part of the critical stage's busy time ("compute", "exposed EP comm", …).
    pub critical_bound: String,
    pub memory: Memory,
    pub memory_fits: bool,
    pub events: u64,
    pub ops: usize,
    pub layers: Vec<LayerTime>,
    /// Distinct kernels timed from the measured kernel table and by the model (with a table).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernels: Option<crate::compute::KernelUse>,
    /// Per accelerator type of a mixed job: GPUs, busy fraction and MFU ([`mix`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_type: Vec<mix::TypeUse>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

pub fn run_training(input: &TrainingInput, progress: &mut dyn FnMut(f64) -> bool) -> Result<TrainingReport> {
    run_training_memo(input, progress, None)
}

/// [`run_training`], its collective prices kept in and taken from `memo` (the same numbers).
pub fn run_training_memo(
    input: &TrainingInput,
    progress: &mut dyn FnMut(f64) -> bool,
    memo: Option<&Arc<Mutex<PriceMemo>>>,
) -> Result<TrainingReport> {
    let (model, plan, acc) = (&input.model, &input.plan, &input.accelerator);
    plan.validate(model)?;
    let devices = mix::devices(plan, acc, input.mix.as_ref())?;
    let stage_mem: Vec<Memory> = (0..plan.pp).map(|s| stage_memory(model, plan, input.flash_attention, s)).collect();
    let mem = memory::largest(stage_mem.iter().cloned());
    // The type with the least HBM that cannot hold the plan, if any.
    let short = devices.types.iter().filter(|t| mem.total_gb > t.hbm_gb).min_by(|a, b| a.hbm_gb.total_cmp(&b.hbm_gb));
    let fits = short.is_none();
    if let Some(acc) = short.filter(|_| !input.allow_oom) {
        return Err(InputError::field(
            "plan",
            "memory",
            format!(
                "needs {:.1} GB per GPU ({:.1} weights, {:.1} gradients and optimizer, {:.1} activations, {:.1} CUDA context, NCCL buffers and fragmentation) but {} has {} GB; use more TP/PP, the distributed optimizer, recompute, or --allow-oom",
                mem.total_gb, mem.params_gb, mem.grads_and_optimizer_gb, mem.activations_gb,
                mem.cuda_context_gb + mem.nccl_buffers_gb + mem.fragmentation_gb, acc.name, acc.hbm_gb
            ),
        ));
    }
    let generated = generate_input(input)?;
    let kernel_use = match acc.measured.is_empty() {
        true => None,
        false => {
            let kernels = costs::iteration_kernels(model, plan, acc, input.flash_attention)?;
            Some(crate::compute::KernelUse::of(&kernels, &acc.measured))
        }
    };
    let w = &generated.workload;
    let config = match &input.fabric {
        None => None,
        Some(f) => {
            let cfg = f.config()?;
            let topo = &cfg.topology;
            let want = plan.placement();
            let ranks = want.ranks().min(topo.placement.ranks());
            if (0..ranks).any(|r| topo.placement.domain(r) != want.domain(r)) {
                return Err(InputError::field(
                    &f.path,
                    "gpus_per_server",
                    format!(
                        "the fabric has {} GPUs per server but the plan {}",
                        topo.placement.largest_domain(),
                        plan.gpus_per_server
                    ),
                ));
            }
            if input.mix.is_some() {
                mix::check_fabric(&devices, topo, &f.path)?;
            }
            Some(cfg)
        }
    };
    let backend = match &config {
        None => {
            let cost = AlphaBeta { memo: memo.cloned(), ..network_cost(input)? };
            Backend::Analytical { cost: Box::new(cost), placement: plan.placement() }
        }
        Some(cfg) => Backend::Flow(cfg),
    };
    let exec = simulate(w, backend, progress)?.execution;
    let iteration_ns = exec.end_ns;
    // Each stage's parts once; the critical stage's also give `breakdown`'s.
    let mut per_stage: Vec<(Vec<(String, f64)>, Exposure)> =
        (0..exec.timelines.len()).map(|c| stage_parts(w, &exec, c)).collect();
    let classes = &generated.classes;
    if devices.types.len() > 1 {
        split_waiting(&mut per_stage, classes);
    }
    let per_type = match input.mix {
        None => Vec::new(),
        Some(_) => type_use(w, &generated, &devices, &per_stage, model, plan, iteration_ns),
    };
    // The busiest rank class (computing or in exposed communication; the lowest stage of those
    // that tie) bounds the iteration: the headline breakdown and the per-layer times are its.
    let busy_of = |c: usize| per_stage[c].0.iter().filter(|(k, _)| !is_idle(k)).map(|(_, v)| v).sum::<f64>();
    let critical = (0..per_stage.len())
        .max_by(|&a, &b| busy_of(a).total_cmp(&busy_of(b)).then(classes[b].0.cmp(&classes[a].0)))
        .unwrap_or(0);
    let layers = layer_times(w, &exec, critical, &per_stage[critical].1);
    let parts = per_stage[critical].0.clone();
    let stages: Vec<StageTime> = per_stage
        .into_iter()
        .enumerate()
        .map(|(c, (parts, _))| {
            let busy = parts.iter().filter(|(k, _)| !is_idle(k)).map(|(_, v)| v).sum::<f64>();
            let end = exec.timelines[c].end.iter().copied().fold(0.0, f64::max);
            let breakdown_s = parts.into_iter().map(|(k, v)| (k, v / 1e9)).collect();
            let (stage, ty) = classes[c];
            let accelerator = input.mix.as_ref().map(|_| devices.types[ty as usize].name.clone());
            StageTime {
                stage,
                accelerator,
                end_s: end / 1e9,
                busy_s: busy / 1e9,
                breakdown_s,
                layers: plan.stage_layers(model.layers, stage),
                memory_gb: stage_mem[stage as usize].total_gb,
            }
        })
        .collect();
    let critical_bound = stages.get(critical).map_or(String::new(), |s| {
        let bound = s.breakdown_s.iter().filter(|(k, _)| !is_idle(k)).max_by(|a, b| a.1.total_cmp(&b.1));
        bound.map_or(String::new(), |b| b.0.clone())
    });
    let (params, active) = model.params();
    let seconds = iteration_ns / 1e9;
    Ok(TrainingReport {
        iteration_s: seconds,
        tokens_per_s: plan.tokens() / seconds,
        // Of the peak of every GPU, each at its own type's.
        mfu: generated.model_flops
            / devices
                .types
                .iter()
                .zip(&devices.gpus)
                .map(|(t, &n)| seconds * n as f64 * t.matmul_tflops * 1e12)
                .sum::<f64>(),
        params,
        active_params: active,
        micro_batches: plan.micro_batches(),
        dp: plan.dp_size(),
        breakdown_s: parts.into_iter().map(|(k, v)| (k, v / 1e9)).collect(),
        breakdown_stage: classes[critical].0,
        breakdown_accelerator: input.mix.as_ref().map(|_| devices.types[classes[critical].1 as usize].name.clone()),
        stages,
        critical_stage: classes[critical].0,
        critical_bound,
        memory: mem,
        memory_fits: fits,
        events: exec.events,
        ops: w.programs.iter().map(|p| p.ops.len()).sum(),
        layers,
        kernels: kernel_use,
        per_type,
        trace: input.trace.then(|| crate::trace::chrome_trace(w, &exec)),
    })
}

/// The iteration of `input` as IR, on its accelerator or its mix of types ([`mix`]).
pub fn generate_input(input: &TrainingInput) -> Result<generate::Generated> {
    let devices = mix::devices(&input.plan, &input.accelerator, input.mix.as_ref())?;
    let (model, plan) = (&input.model, &input.plan);
    let mut generated = generate::generate_mixed(
        model,
        plan,
        &devices.types,
        &devices.rank_type,
        input.flash_attention,
        &input.overlap,
    )?;
    if let Some(spec) = input.slow_gpus.as_deref().filter(|s| !s.trim().is_empty()) {
        slow::slow_down(&mut generated, &slow::parse_slow_gpus("--slow-gpus", spec, plan.gpus)?);
    }
    Ok(generated)
}

/// Busy fraction and MFU of each accelerator type of a mixed job ([`mix`]): rank class c's
/// compute time and model FLOPs count once per rank of the class.
fn type_use(
    w: &Workload,
    generated: &generate::Generated,
    devices: &mix::Devices,
    per_stage: &[(Vec<(String, f64)>, Exposure)],
    model: &Model,
    plan: &Plan,
    iteration_ns: f64,
) -> Vec<mix::TypeUse> {
    let mut ranks = vec![0u32; generated.classes.len()];
    for &c in &w.rank_class {
        ranks[c as usize] += 1;
    }
    let per_gpu_flops: Vec<f64> =
        (0..plan.pp).map(|s| generate::stage_model_flops(model, plan, s) / (plan.gpus / plan.pp) as f64).collect();
    let seconds = iteration_ns / 1e9;
    devices
        .types
        .iter()
        .enumerate()
        .map(|(ty, acc)| {
            let (mut compute_ns, mut flops) = (0.0, 0.0);
            for (c, &(stage, _)) in generated.classes.iter().enumerate().filter(|(_, cl)| cl.1 == ty as u32) {
                compute_ns += ranks[c] as f64 * per_stage[c].1.compute_ns;
                flops += ranks[c] as f64 * per_gpu_flops[stage as usize];
            }
            let n = devices.gpus[ty] as f64;
            mix::TypeUse {
                accelerator: acc.name.clone(),
                gpus: devices.gpus[ty],
                busy: compute_ns / (n * iteration_ns),
                mfu: flops / (seconds * n * acc.matmul_tflops * 1e12),
            }
        })
        .collect()
}

/// Forward and backward time (s) of one dense layer for one micro-batch, TP communication
/// included, as the generator issues it (Korthikanti et al.'s Table 4 quantity).
pub fn layer_seconds(input: &TrainingInput) -> Result<(f64, f64)> {
    let (model, plan) = (&input.model, &input.plan);
    model.check()?;
    input.accelerator.check()?;
    for (field, v, max) in
        [("tp", plan.tp as u64, 1 << 16), ("mbs", plan.mbs as u64, 1 << 16), ("seq", plan.seq, 1 << 22)]
    {
        if !(1..=max).contains(&v) {
            return Err(InputError::field("plan", field, format!("must be from 1 to {max}, got {v}")));
        }
    }
    let (w, fwd_end) = generate::single_layer(model, plan, &input.accelerator, input.flash_attention);
    let backend = Backend::Analytical { cost: Box::new(network_cost(input)?), placement: plan.placement() };
    let exec = simulate(&w, backend, &mut |_| true)?.execution;
    let fwd = exec.timelines[0].end[fwd_end as usize];
    Ok((fwd / 1e9, (exec.end_ns - fwd) / 1e9))
}

/// The analytical network of a training run: NCCL's α–β on the run's NVLink and NICs.
pub(crate) fn network_cost(input: &TrainingInput) -> Result<AlphaBeta> {
    let net = &input.network;
    let platform = ServerSpec {
        gpus_per_server: input.plan.gpus_per_server,
        nics_per_server: net.nics_per_server,
        // SimAI's GPU type only supplies defaults (and Hopper's NCCL tree limits, as before the
        // catalog); both bandwidths are given explicitly.
        gpu: GpuType::parse("H100")?,
        nic: NicType::parse("cx7")?,
        nvlink_busbw: Some(net.nvlink_busbw),
        nic_busbw: Some(net.nic_busbw),
    };
    platform.validate()?;
    let nvls = net.nvls_busbw.is_some();
    let options = Options { nvls_enable: nvls, ..Options::default() };
    Ok(AlphaBeta { platform, bandwidths: Bandwidths::Builtin(None), nvls, options, memo: None })
}

/// Where the time of the stage that finishes last goes (its timeline spans the iteration), ns
/// ([`stage_parts`]); the same stage's time per row label; and which stage (rank class) it is.
pub fn breakdown(w: &Workload, exec: &Execution) -> (Vec<(String, f64)>, Vec<LayerTime>, usize) {
    let last = last_stage(exec);
    let (parts, ex) = stage_parts(w, exec, last);
    (parts, layer_times(w, exec, last, &ex), last)
}

/// The rank class that finishes last (the lowest of those that tie).
fn last_stage(exec: &Execution) -> usize {
    let end = |c: usize| exec.timelines[c].end.iter().copied().fold(0.0, f64::max);
    (0..exec.timelines.len()).max_by(|&a, &b| end(a).total_cmp(&end(b)).then(b.cmp(&a))).unwrap_or(0)
}

/// Rank class `class`'s time per row label, given its exposure `ex`.
fn layer_times(w: &Workload, exec: &Execution, class: usize, ex: &Exposure) -> Vec<LayerTime> {
    let prog = &w.programs[w.class_program[class] as usize];
    let tl = &exec.timelines[class];
    let mut layers: Vec<LayerTime> = w
        .rows
        .iter()
        .map(|n| LayerTime { name: n.clone(), compute_s: 0.0, exposed_comm_s: 0.0, comm_s: 0.0 })
        .collect();
    // A send and a recv inside the class are one shift (one copy): its time counts once, at the send.
    let rep = w.class_representatives()[class];
    let shift_recv = |op: &OpKind| match *op {
        OpKind::Recv { peer, .. } => w.rank_class[w.peer_rank(rep, peer) as usize] == class as u32,
        _ => false,
    };
    for (i, op) in prog.ops.iter().enumerate() {
        let Some(l) = layers.get_mut(op.row as usize) else { continue };
        let d = (tl.end[i] - tl.start[i]).max(0.0) / 1e9;
        if matches!(op.kind, OpKind::Compute { .. }) {
            l.compute_s += d;
        } else {
            if !shift_recv(&op.kind) {
                l.comm_s += d;
            }
            l.exposed_comm_s += ex.exposed[i] / 1e9;
        }
    }
    layers.retain(|l| l.compute_s + l.comm_s > 0.0);
    layers
}

/// The part of a stage's time in which its ranks wait idle: on the pipeline ("bubble") or, in
/// a job of several types, for slower devices.
pub const WAITING_FOR_SLOWER_DEVICES: &str = "waiting for slower devices";

fn is_idle(part: &str) -> bool {
    part == "bubble" || part == WAITING_FOR_SLOWER_DEVICES
}

/// In a job of several accelerator types: of each rank class's idle time, what the least idle
/// class of the same pipeline stage also waits is the pipeline's bubble; the rest is the class
/// waiting for slower devices (the faster type's ranks waiting at a collective for the slower
/// ones). The part follows "bubble" in every class's list (zero where a class waits for none).
fn split_waiting(per_stage: &mut [(Vec<(String, f64)>, Exposure)], classes: &[(u32, u32)]) {
    let bubble = |parts: &[(String, f64)]| parts.iter().find(|(k, _)| k == "bubble").map_or(0.0, |p| p.1);
    let least: Vec<f64> = (0..per_stage.len())
        .map(|c| {
            (0..per_stage.len())
                .filter(|&d| classes[d].0 == classes[c].0)
                .map(|d| bubble(&per_stage[d].0))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    for (c, (parts, _)) in per_stage.iter_mut().enumerate() {
        let at = parts.iter().position(|(k, _)| k == "bubble").unwrap_or(parts.len());
        let idle = parts.get(at).map_or(0.0, |p| p.1);
        let pipeline = least[c].min(idle);
        if let Some(p) = parts.get_mut(at) {
            p.1 = pipeline;
        }
        parts.insert((at + 1).min(parts.len()), (WAITING_FOR_SLOWER_DEVICES.into(), idle - pipeline));
    }
}

/// Where rank class `class`'s time goes up to the end of the iteration, ns: compute, exposed
/// communication per group, and the bubble (idle with nothing in flight); and its exposure.
fn stage_parts(w: &Workload, exec: &Execution, class: usize) -> (Vec<(String, f64)>, Exposure) {
    let prog = &w.programs[w.class_program[class] as usize];
    let ex = exposure(prog, &exec.timelines[class], exec.end_ns);
    let mut parts: Vec<(String, f64)> = vec![("compute".into(), ex.compute_ns)];
    for (g, group) in w.groups.iter().enumerate() {
        let in_group = |op: &OpKind| match *op {
            OpKind::Collective { group, .. } => group as usize == g,
            OpKind::Send { peer, .. } | OpKind::Recv { peer, .. } => peer.group as usize == g,
            OpKind::Compute { .. } => false,
        };
        let exposed =
            prog.ops.iter().zip(&ex.exposed).filter(|(op, _)| in_group(&op.kind)).fold(0.0, |a, (_, e)| a + e);
        parts.push((format!("exposed {} comm", group.name), exposed));
    }
    parts.push(("bubble".into(), ex.idle_ns));
    (parts, ex)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Executor;
    use crate::network::analytical::{Analytical, CollectiveCost, GroupShape};
    use crate::platform::Placement;
    use crate::training::fixtures;
    use crate::workload::Collective;
    use generate::Step;

    fn input(pp: u32, vpp: u32, gbs: u32) -> TrainingInput {
        // Uniform stages: many identical layers, a negligible vocabulary, fast links.
        fixtures::input(fixtures::uniform(32, 8192, 64, 32768), Plan { vpp, gbs, ..fixtures::plan(8 * pp, 8, pp) })
    }

    /// Communication that takes no time, so only the schedule shapes the timeline.
    struct Free;
    impl CollectiveCost for Free {
        fn collective_ns(&self, _: Collective, _: &GroupShape, _: u64) -> std::result::Result<f64, InputError> {
            Ok(0.0)
        }
        fn transfer_ns(&self, _: bool, _: u64) -> std::result::Result<f64, InputError> {
            Ok(0.0)
        }
    }

    fn bubble_fraction(pp: u32, vpp: u32, m: u32) -> f64 {
        let i = input(pp, vpp, m);
        let g = generate::generate(&i.model, &i.plan, &i.accelerator, true).unwrap();
        let exec = Executor::new(&g.workload)
            .unwrap()
            .run(&mut Analytical::new(Box::new(Free), Placement::servers(g.workload.world_size(), 8)), &mut |_| true)
            .unwrap();
        let (parts, _, _) = breakdown(&g.workload, &exec);
        let total: f64 = parts.iter().map(|(_, v)| v).sum();
        assert!((total - exec.end_ns).abs() < 1e-9 * exec.end_ns, "breakdown sums to the iteration");
        let bubble = parts.iter().find(|(k, _)| k == "bubble").unwrap().1;
        // The ideal time: stage 0's forward and backward compute, without the optimizer step.
        let prog = &g.workload.programs[0];
        let tl = &exec.timelines[0];
        let optimizer = generate::ROWS.iter().position(|r| *r == "optimizer").unwrap() as u32;
        let ideal: f64 = (0..prog.ops.len())
            .filter(|&i| matches!(prog.ops[i].kind, OpKind::Compute { .. }) && prog.ops[i].row != optimizer)
            .map(|i| tl.end[i] - tl.start[i])
            .sum();
        bubble / ideal
    }

    #[test]
    fn a_shift_counts_once_in_its_rows_communication() {
        // Two TP ranks in one class copy 1000 B to each other (a copy send and recv, one shift): at
        // 1 B/ns (copy: no call latency) 1 µs, all of it exposed, counted once in the row.
        use crate::layout::{Axis, Layout};
        use crate::workload::{Group, Membership, Op, Peer, Phase, Program};
        struct PerByte;
        impl CollectiveCost for PerByte {
            fn collective_ns(&self, _: Collective, _: &GroupShape, _: u64) -> std::result::Result<f64, InputError> {
                Ok(0.0)
            }
            fn transfer_ns(&self, _: bool, bytes: u64) -> std::result::Result<f64, InputError> {
                Ok(20.0 + bytes as f64)
            }
        }
        let layout = Layout::megatron(2, 1, 1, 1, 1);
        let peer = |offset| Peer { group: 0, offset };
        let ops = vec![
            Op::new(OpKind::Send { peer: peer(1), bytes: 1000, copy: true }, vec![], 0, Phase::Forward),
            Op::new(OpKind::Recv { peer: peer(-1), bytes: 1000, copy: true }, vec![], 0, Phase::Forward),
        ];
        let w = Workload {
            groups: vec![Group { name: "TP".into(), members: Membership::Dims(layout.mask(&[Axis::Tp])) }],
            layout,
            programs: vec![Program { ops }],
            class_program: vec![0],
            rank_class: vec![0, 0],
            rows: vec!["attention".into()],
        };
        let exec = Executor::new(&w)
            .unwrap()
            .run(&mut Analytical::new(Box::new(PerByte), Placement::servers(2, 8)), &mut |_| true)
            .unwrap();
        assert_eq!(exec.end_ns, 1000.0);
        let (_, layers, _) = breakdown(&w, &exec);
        assert_eq!(layers.len(), 1);
        assert!((layers[0].comm_s - 1e-6).abs() < 1e-15, "{}", layers[0].comm_s);
        assert!((layers[0].exposed_comm_s - 1e-6).abs() < 1e-15, "{}", layers[0].exposed_comm_s);
    }

    #[test]
    fn a_real_network_adds_exposed_communication() {
        let r = run_training(&input(4, 1, 8), &mut |_| true).unwrap();
        let total: f64 = r.breakdown_s.iter().map(|(_, v)| v).sum();
        assert!((total - r.iteration_s).abs() < 1e-9 * r.iteration_s);
        let tp = r.breakdown_s.iter().find(|(k, _)| k == "exposed TP comm").unwrap().1;
        assert!(tp > 0.0);
    }

    #[test]
    fn every_stage_is_reported_and_the_busiest_is_named() {
        // 32 layers on 4 stages as 2 + 14 + 14 + 2: the middle stages bound the pipeline, by
        // their compute, whichever stage finishes last.
        let mut i = input(4, 1, 8);
        (i.plan.first_stage_layers, i.plan.last_stage_layers) = (Some(2), Some(2));
        let r = run_training(&i, &mut |_| true).unwrap();
        assert_eq!(r.stages.len(), 4);
        let last = r.stages.iter().max_by(|a, b| a.end_s.total_cmp(&b.end_s)).unwrap();
        assert_eq!(last.end_s, r.iteration_s);
        // The headline is the busiest stage's, not the last to finish's.
        assert_eq!(r.breakdown_stage, r.critical_stage);
        let busiest = r.stages.iter().map(|s| s.busy_s).fold(0.0, f64::max);
        assert_eq!(r.stages[r.critical_stage as usize].busy_s, busiest);
        for s in &r.stages {
            let total: f64 = s.breakdown_s.iter().map(|(_, v)| v).sum();
            assert!((total - r.iteration_s).abs() < 1e-9 * r.iteration_s, "stage {}: {total}", s.stage);
            assert!(s.end_s <= r.iteration_s * (1.0 + 1e-12));
        }
        assert_eq!(r.stages[r.breakdown_stage as usize].breakdown_s, r.breakdown_s);
        assert!([1, 2].contains(&r.critical_stage), "{}", r.critical_stage);
        assert_eq!(r.critical_bound, "compute");
        let busy = |k: usize| r.stages[k].busy_s;
        // 14 layers against 2 (plus the embedding / LM head): several times busier.
        assert!(busy(1) > 4.0 * busy(0) && busy(2) > 4.0 * busy(3), "{:?}", (0..4).map(busy).collect::<Vec<_>>());
    }

    #[test]
    fn simulated_bubble_matches_the_1f1b_formula() {
        for (p, m) in [(4, 8), (4, 16), (2, 8)] {
            let (got, want) = (bubble_fraction(p, 1, m), (p - 1) as f64 / m as f64);
            assert!((got - want).abs() < 0.01 * want, "p={p} m={m}: {got} vs {want}");
        }
    }

    #[test]
    fn interleaving_divides_the_bubble_by_v() {
        // Within 2%: the LM head makes the last chunk slightly longer than the others.
        let (got, want) = (bubble_fraction(4, 2, 8), 3.0 / (2.0 * 8.0));
        assert!((got - want).abs() < 0.02 * want, "{got} vs {want}");
    }

    #[test]
    fn uneven_flags_that_describe_the_even_split_change_nothing() {
        // 32 layers on PP 4 × VPP 2 as 8 + 8 + 8 + 8, given or not: the same iteration, exactly.
        let even = run_training(&input(4, 2, 8), &mut |_| true).unwrap();
        for (first, last) in [(Some(8), Some(8)), (Some(8), None), (None, Some(8))] {
            let mut i = input(4, 2, 8);
            (i.plan.first_stage_layers, i.plan.last_stage_layers) = (first, last);
            let r = run_training(&i, &mut |_| true).unwrap();
            assert_eq!((r.iteration_s, &r.stages, &r.memory), (even.iteration_s, &even.stages, &even.memory));
        }
    }

    #[test]
    fn unequal_chunks_follow_the_interleaved_schedule_by_hand() {
        // 2 layers + embedding + loss on PP 2 × VPP 2, 2 micro-batches, free communication:
        // stage 0's chunks are [embedding] and [layer 1], stage 1's [layer 0] and [head, loss].
        let mut i = input(2, 2, 2);
        i.model.layers = 2;
        i.plan.account_for = plan::AccountFor { embedding: true, loss: true };
        let g = generate::generate(&i.model, &i.plan, &i.accelerator, true).unwrap();
        let w = &g.workload;
        let exec = Executor::new(w)
            .unwrap()
            .run(&mut Analytical::new(Box::new(Free), Placement::servers(w.world_size(), 8)), &mut |_| true)
            .unwrap();
        // Compute time of a step, and of what follows the last step (the optimizer).
        let compute = |s: usize, ops: std::ops::Range<u32>| -> f64 {
            let (prog, tl) = (&w.programs[s], &exec.timelines[s]);
            ops.filter(|&k| matches!(prog.ops[k as usize].kind, OpKind::Compute { .. }))
                .map(|k| tl.end[k as usize] - tl.start[k as usize])
                .sum()
        };
        let step = |s: usize, forward: bool, micro_batch: u32, chunk: u32| {
            let (_, ops) = g.steps[s].iter().find(|(st, _)| *st == Step { forward, micro_batch, chunk }).unwrap();
            compute(s, ops.clone())
        };
        let tail = |s: usize| compute(s, g.steps[s].last().unwrap().1.end..w.programs[s].ops.len() as u32);
        let (e, eb) = (step(0, true, 0, 0), step(0, false, 0, 0));
        let (a, b) = (step(1, true, 0, 0), step(1, false, 0, 0));
        let (h, hb) = (step(1, true, 0, 1), step(1, false, 0, 1));
        // Each micro-batch the same; layer 1 on stage 0 costs what layer 0 costs on stage 1.
        let close = |x: f64, y: f64| (x - y).abs() < 1e-9 * y;
        for mb in 0..2 {
            assert!(close(step(0, true, mb, 1), a) && close(step(0, false, mb, 1), b));
            assert!(close(step(0, true, mb, 0), e) && close(step(1, false, mb, 1), hb));
        }
        assert!(e < a && h < a && eb < b, "{:?}", (e, a, h, eb, b));
        // Stage 0 runs F(0,0) F(1,0) F(0,1) F(1,1) B(0,1) B(1,1) B(0,0) B(1,0) (warm-up 4 = m·v);
        // stage 1 F(0,0) F(1,0) F(0,1) B(0,1) F(1,1) B(1,1) B(0,0) B(1,0). A step starts when its
        // stage is free and its input has arrived (from the other stage; stage 0's chunk 1 from
        // stage 1's chunk 0, stage 1's backward of chunk 0 from stage 0's of chunk 1).
        let f0_00 = e;
        let f0_10 = f0_00 + e;
        let f1_00 = f0_00 + a;
        let f1_10 = f1_00.max(f0_10) + a;
        let f0_01 = f0_10.max(f1_00) + a;
        let f0_11 = f0_01.max(f1_10) + a;
        let f1_01 = f1_10.max(f0_01) + h;
        let b1_01 = f1_01 + hb;
        let f1_11 = b1_01.max(f0_11) + h;
        let b1_11 = f1_11 + hb;
        let b0_01 = f0_11.max(b1_01) + b;
        let b0_11 = b0_01.max(b1_11) + b;
        let b1_00 = b1_11.max(b0_01) + b;
        let b1_10 = b1_00.max(b0_11) + b;
        let b0_00 = b0_11.max(b1_00) + eb;
        let b0_10 = b0_00.max(b1_10) + eb;
        let want = (b0_10 + tail(0)).max(b1_10 + tail(1));
        assert!(close(exec.end_ns, want), "{} vs {want}", exec.end_ns);
    }
}
