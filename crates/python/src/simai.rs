//! Binding of a SimAI workload run (`clustersim analytical`, `run`): arguments in, one typed
//! `AnalyticalRun` out, whose getters convert each part only when Python asks for it.

use clustersim_engine::network::analytical::ratio::{RatioTable, RatioTables};
use clustersim_engine::simai::build::Overlap;
use clustersim_engine::simai::report::{LAYER_COLUMNS, SUMMARY_COLUMNS};
use clustersim_engine::simai::run::{run_analytical as engine_run, RunConfig, SimaiRun};
use clustersim_engine::trace::chrome_trace;
use clustersim_engine::training::Fabric;
use pyo3::prelude::*;

use crate::{busbw_table, engine_err, platform, report, server, training};

/// One run of a SimAI workload file: its report (summary, per-row columns, SimAI's CSV), the plan
/// read from the file, warnings, and on a fabric the links and per-link bytes.
#[pyclass(name = "AnalyticalRun", module = "clustersim._engine", frozen)]
pub struct AnalyticalRun {
    run: SimaiRun,
    /// Directed links (source, destination, Gb/s) of the fabric, when the flow model ran.
    links: Option<Vec<(u32, u32, f64)>>,
}

#[pymethods]
impl AnalyticalRun {
    /// (column, µs) in EndToEnd.csv's summary order.
    #[getter]
    fn summary(&self) -> Vec<(&'static str, f64)> {
        SUMMARY_COLUMNS.iter().copied().zip(self.run.report.summary).collect()
    }

    /// The workload rows' names, one per layer row.
    #[getter]
    fn layer_names(&self) -> Vec<String> {
        self.run.report.layer_names.clone()
    }

    /// (column, values) per layer column, in EndToEnd.csv's order (µs, GB/s).
    #[getter]
    fn layers(&self) -> Vec<(&'static str, Vec<f64>)> {
        let rows = &self.run.report.layers;
        LAYER_COLUMNS.iter().enumerate().map(|(k, name)| (*name, rows.iter().map(|row| row[k]).collect())).collect()
    }

    /// SimAI's EndToEnd.csv text.
    #[getter]
    fn csv(&self) -> String {
        self.run.report.to_csv()
    }

    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.run.warnings.clone()
    }

    /// Seconds spent building, executing and accounting (not reading).
    #[getter]
    fn simulate_seconds(&self) -> f64 {
        self.run.simulate_seconds
    }

    #[getter]
    fn events(&self) -> u64 {
        self.run.execution.events
    }

    /// The plan the file describes: (name, value) for gpus, tp, ep, pp, dp, ga, vpp, pp_comm.
    #[getter]
    fn plan(&self) -> Vec<(&'static str, u64)> {
        let w = &self.run.workload;
        let h = &w.file.header;
        let counts = [w.workload.world_size(), w.tp, w.ep, w.pp, w.dp, h.ga, h.vpp].map(u64::from);
        let names = ["gpus", "tp", "ep", "pp", "dp", "ga", "vpp"];
        names.into_iter().zip(counts).chain([("pp_comm", h.pp_comm)]).collect()
    }

    /// The fabric's directed links (source, destination, Gb/s); None without a fabric.
    #[getter]
    fn links(&self) -> Option<Vec<(u32, u32, f64)>> {
        self.links.clone()
    }

    /// Bytes each link carried, in `links` order.
    #[getter]
    fn link_bytes(&self) -> Vec<f64> {
        self.run.link_bytes.clone()
    }

    /// The run as a Chrome trace (JSON text) on a fabric; None without one.
    #[getter]
    fn trace(&self) -> Option<String> {
        self.links.as_ref().map(|_| chrome_trace(&self.run.workload.workload, &self.run.execution))
    }
}

/// Run a SimAI workload through the executor with an analytical network model; with `fabric` (a
/// training input's "fabric"), the flow model on `platform`.
#[pyfunction]
#[pyo3(signature = (
    path, text, *, compat, gpus, server, busbw, ratios, dp_o, tp_o, ep_o, pp_o, run_name, lenient, progress,
    fabric = None, platform = None
))]
#[allow(clippy::too_many_arguments)]
pub fn run_analytical<'py>(
    py: Python<'py>,
    path: &str,
    text: &str,
    compat: bool,
    gpus: Option<u32>,
    server: PyRef<'py, server::PyServerSpec>,
    busbw: Option<(String, String)>,
    ratios: Option<[(String, String); 3]>,
    dp_o: f64,
    tp_o: f64,
    ep_o: f64,
    pp_o: f64,
    run_name: String,
    lenient: bool,
    progress: Option<Bound<'py, PyAny>>,
    fabric: Option<Bound<'py, PyAny>>,
    platform: Option<PyRef<'py, platform::PyPlatform>>,
) -> PyResult<AnalyticalRun> {
    let flow = match fabric {
        None => None,
        Some(doc) => {
            let mut f: Fabric = training::read("fabric", &doc)?;
            f.platform = platform.map(|p| p.inner.clone());
            Some(f.config().map_err(engine_err)?)
        }
    };
    let ratios = match ratios {
        None => RatioTables::builtin(),
        Some([(np, nt), (cp, ct), (ap, at)]) => RatioTables {
            nvlink: RatioTable::parse(&np, &nt).map_err(engine_err)?,
            nic: RatioTable::parse(&cp, &ct).map_err(engine_err)?,
            all_to_all: RatioTable::parse(&ap, &at).map_err(engine_err)?,
        },
    };
    let cfg = RunConfig {
        compat,
        gpus,
        platform: server.inner.clone(),
        busbw: busbw_table(busbw)?,
        ratios,
        overlap: Overlap { dp: dp_o, tp: tp_o, ep: ep_o, pp: pp_o },
        run_name,
        lenient,
        flow,
    };
    let mut failure = None;
    let run = engine_run(path, text, &cfg, &mut |f| report(py, &progress, f, &mut failure));
    if let Some(e) = failure {
        return Err(e);
    }
    let run = run.map_err(engine_err)?;
    let links = cfg.flow.map(|f| f.topology.links.iter().map(|l| (l.src, l.dst, l.bandwidth)).collect());
    Ok(AnalyticalRun { run, links })
}
