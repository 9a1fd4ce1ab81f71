//! One SimAI-Analytical-style run: read the workload, build the IR, execute it against an
//! analytical network model, and account the time.

use std::time::Instant;

use super::build::{BuildOptions, Overlap, SimaiWorkload};
use super::file::WorkloadFile;
use super::report::{Report, ReportOptions};
use crate::driver::{simulate, Backend, FlowConfig, Simulation};
use crate::error::{InputError, Result};
use crate::executor::Execution;
use crate::layout::Axis;
use crate::network::analytical::alpha_beta::{AlphaBeta, Bandwidths};
use crate::network::analytical::busbw_file::BusbwTable;
use crate::network::analytical::ratio::RatioTables;
use crate::network::analytical::server_spec::ServerSpec;
use crate::network::analytical::simai::{SimaiBuiltin, SimaiBusbwFile};
use crate::network::analytical::CollectiveCost;
use crate::platform::Placement;

#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Reproduce SimAI-Analytical's numbers, quirks included.
    pub compat: bool,
    pub gpus: Option<u32>,
    pub platform: ServerSpec,
    pub busbw: Option<BusbwTable>,
    pub ratios: RatioTables,
    pub overlap: Overlap,
    pub run_name: String,
    /// Accept a row count on line 2 that disagrees with the rows present (with a warning).
    pub lenient: bool,
    /// Simulate communication on this fabric with the flow model instead of in closed form.
    pub flow: Option<FlowConfig>,
}

pub struct SimaiRun {
    pub workload: SimaiWorkload,
    pub execution: Execution,
    pub report: Report,
    pub warnings: Vec<String>,
    /// Wall time of building, executing and accounting (not reading), in seconds.
    pub simulate_seconds: f64,
    /// Bytes carried by each directed link of the topology (flow backend only).
    pub link_bytes: Vec<f64>,
}

/// The closed-form cost model a run's configuration asks for.
pub fn cost_model(cfg: &RunConfig, world: u32) -> Box<dyn CollectiveCost> {
    match (&cfg.busbw, cfg.compat) {
        (Some(t), true) => {
            Box::new(SimaiBusbwFile { gpus_per_server: cfg.platform.gpus_per_server, world, table: t.clone() })
        }
        (None, true) => Box::new(SimaiBuiltin { platform: cfg.platform.clone(), ratios: cfg.ratios.clone() }),
        (Some(t), false) => Box::new(AlphaBeta::nccl(cfg.platform.clone(), Bandwidths::File(t.clone()))),
        (None, false) => Box::new(AlphaBeta::nccl(cfg.platform.clone(), Bandwidths::Builtin(Some(cfg.ratios.clone())))),
    }
}

pub fn run_analytical(
    path: &str,
    text: &str,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<SimaiRun> {
    cfg.platform.validate()?;
    let o = cfg.overlap;
    for (name, v) in [("dp_o", o.dp), ("tp_o", o.tp), ("ep_o", o.ep), ("pp_o", o.pp)] {
        if !(0.0..=1.0).contains(&v) {
            return Err(InputError::field(
                "command line",
                name,
                format!("overlap ratio must be between 0 and 1, got {v}"),
            ));
        }
    }
    let file = WorkloadFile::parse(path, text, cfg.lenient)?;
    let started = Instant::now();
    let opts = BuildOptions {
        gpus: cfg.gpus,
        gpus_per_server: cfg.platform.gpus_per_server,
        compat: cfg.compat,
        overlap: cfg.overlap,
    };
    let sw = SimaiWorkload::build(file, &opts)?;
    let mut warnings = sw.warnings.clone();
    let w = &sw.workload;
    let h = &sw.file.header;
    // SimAI 1.6/1.7 divides pp_comm by the PP overlap ratio; with a busbw file (d44c48b) by the
    // file's PP.busbw.
    let pp_busbw = match (&cfg.busbw, cfg.compat && h.pp_comm > 0) {
        (Some(t), true) => Some(t.get("PP", "busbw").map_err(|mut e| {
            e.message = format!("{} (needed by the pipeline transfers of pp_comm)", e.message);
            e
        })? as f64),
        _ => None,
    };
    if cfg.compat && pp_busbw.is_none() && o.pp == 0.0 && h.pp_comm > 0 {
        return Err(InputError::field(
            "command line",
            "pp_o",
            "SimAI divides pp_comm by the PP overlap ratio, so -pp_o 0 has no value in --compat simai (the default mode prices PP transfers properly)",
        ));
    }
    if !cfg.compat && o.dp > 0.0 {
        warnings.push("-dp_o is ignored without --compat simai: weight-gradient collectives already overlap compute in the simulated schedule".into());
    }
    let cost = cost_model(cfg, w.world_size());
    let placement = Placement::servers(w.world_size(), cfg.platform.gpus_per_server);
    let pp_transfer_ns = if !cfg.compat && sw.pp > 1 {
        let next = w.layout.group_of(0, w.layout.mask(&[Axis::Pp]))[1];
        cost.transfer_ns(placement.same_domain(0, next), h.pp_comm).map_err(|mut e| {
            e.message = format!("{} (needed by the pipeline transfers of pp_comm)", e.message);
            e
        })?
    } else {
        0.0
    };
    let backend = match &cfg.flow {
        None => Backend::Analytical { cost, placement },
        Some(_) if cfg.compat => {
            return Err(InputError::field(
                "command line",
                "backend",
                "--compat simai is SimAI's analytical model; the flow backend runs in the default mode",
            ))
        }
        Some(f) => Backend::Flow(f),
    };
    let Simulation { execution, link_bytes } = simulate(w, backend, progress)?;
    let ropt = ReportOptions {
        run_name: cfg.run_name.clone(),
        compat: cfg.compat,
        dp_o: o.dp,
        tp_o: o.tp,
        ep_o: o.ep,
        pp_o: o.pp,
        pp_busbw,
        pp_transfer_ns,
    };
    let report = Report::build(&sw, &execution, &ropt);
    if let Some(k) = report.summary.iter().position(|v| !v.is_finite()) {
        return Err(InputError::new(
            path,
            format!(
                "the result is not a number ({} = {}); check the bandwidth and overlap inputs",
                super::report::SUMMARY_COLUMNS[k],
                report.summary[k]
            ),
        ));
    }
    let simulate_seconds = started.elapsed().as_secs_f64();
    Ok(SimaiRun { workload: sw, execution, report, warnings, simulate_seconds, link_bytes })
}
