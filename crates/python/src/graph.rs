//! Bindings of workload graphs (HCSim's Table 3): check a graph document, run it on a platform
//! (conversion only; the engine's `workload_graph` does the work).

use clustersim_engine::collective::on_platform::{self, PlatformOptions};
use clustersim_engine::collective::{choose, coherent_ring};
use clustersim_engine::driver::fabric_backend;
use clustersim_engine::network::flow::network::Tuning;
use clustersim_engine::platform::xpu::Dtype;
use clustersim_engine::trace::chrome_trace;
use clustersim_engine::workload_graph::export::from_workload;
use clustersim_engine::workload_graph::llama2::{Llama2, Sync};
use clustersim_engine::workload_graph::lower::{Access, Options};
use clustersim_engine::workload_graph::run::run_graph;
use clustersim_engine::workload_graph::WorkloadGraph;
use clustersim_engine::Error;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::platform::PyPlatform;
use crate::{engine_err, report};

/// Read a workload graph document (`path` names it in errors) and write it back in the form
/// the engine writes (a check, and a normaliser for graphs built elsewhere).
#[pyfunction]
pub fn normalize_workload_graph(py: Python<'_>, path: &str, text: &str) -> PyResult<String> {
    py.detach(|| WorkloadGraph::parse_json(path, text).map(|g| g.to_json())).map_err(engine_err)
}

/// The HCSim paper's LLaMA2-13B data-parallel graph (the engine's `workload_graph::llama2`) as
/// graph document text.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn llama2_13b_graph(
    batch: u64,
    layers: u64,
    hidden: u64,
    seq: u64,
    heads: u64,
    element_bytes: u64,
    iterations: u64,
    sync: &str,
) -> PyResult<String> {
    let sync = Sync::parse(sync).map_err(engine_err)?;
    let graph = Llama2 { batch, layers, hidden, seq, heads, element_bytes, iterations, sync };
    graph.document().map(|d| d.to_string()).map_err(engine_err)
}

/// A workload (IR columns; `path` names it in errors) as a workload graph document on `platform`,
/// compute in `dtype`.
#[pyfunction]
pub fn workload_graph_from_workload(
    py: Python<'_>,
    path: &str,
    columns: &Bound<'_, PyDict>,
    platform: PyRef<'_, PyPlatform>,
    dtype: &str,
) -> PyResult<String> {
    let w = crate::workload::unpack(columns, path)?;
    let dtype = Dtype::parse(dtype).ok_or_else(|| {
        engine_err(Error::field("command line", "--dtype", {
            let names: Vec<&str> = Dtype::ALL.iter().map(|d| d.name()).collect();
            format!("'{dtype}' is not one of {}", names.join(", "))
        }))
    })?;
    let platform = &platform.inner;
    py.detach(|| from_workload(path, &w, platform, dtype).map(|g| g.to_json())).map_err(engine_err)
}

/// Run a workload graph document on `platform`: `iterations` overrides the graph's count,
/// `access` is auto (coherent on CXL memory, copy on DRAM), copy or coherent; `algorithm` is
/// the collectives' (auto: NCCL's tuner, or a name as `clustersim collective --algo`). Returns the
/// iteration end times (ns), the run's end, per-class breakdowns, placed bytes and, when asked,
/// a Chrome trace. `send_lat_us`, when given, prices collectives as SimGrid's CM02 model (HCSim's)
/// does: each step's transfers pay their path latency plus this, at link rate (SimAI's AS_SEND_LAT);
/// `concurrent` starts each communication vertex once its dependencies are met (HCSim's engine);
/// `backend` is `--backend`'s (flow, or packet with its settings: [`fabric_backend`]).
#[pyfunction]
#[pyo3(signature = (path, text, platform, iterations = None, access = "auto", algorithm = "auto", trace = false, progress = None, send_lat_us = None, concurrent = false, backend = "flow"))]
#[allow(clippy::too_many_arguments)]
pub fn run_workload_graph<'py>(
    py: Python<'py>,
    path: &str,
    text: &str,
    platform: PyRef<'_, PyPlatform>,
    iterations: Option<u32>,
    access: &str,
    algorithm: &str,
    trace: bool,
    progress: Option<Bound<'py, PyAny>>,
    send_lat_us: Option<f64>,
    concurrent: bool,
    backend: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let packets = fabric_backend(backend).map_err(engine_err)?;
    let access = Access::parse(access).ok_or_else(|| {
        engine_err(Error::field("command line", "access", format!("'{access}' is not auto, copy or coherent")))
    })?;
    let graph = py.detach(|| WorkloadGraph::parse_json(path, text)).map_err(engine_err)?;
    let options = Options { iterations, access, concurrent };
    // The algorithm as every command reads it (NCCL's, CollNet on the platform's switches, ...).
    let mut topo = platform.inner.clone();
    let mut choose = choose::Options { send_lat_us, ..choose::Options::default() };
    on_platform::algorithm_options(&mut topo, algorithm, &PlatformOptions::default(), &mut choose)
        .map_err(engine_err)?;
    coherent_ring::check_platform(&choose, &topo, "graph run").map_err(engine_err)?;
    // CM02 runs a collective as HCSim's SimGrid does: one ring, not NCCL's channels.
    let channels = if send_lat_us.is_some() { 1 } else { 0 };
    let tuning = Tuning { options: choose, channels, ..Default::default() };
    let mut failure = None;
    let started = std::time::Instant::now();
    let run =
        run_graph(path, &graph, &topo, &options, &tuning, packets, &mut |f| report(py, &progress, f, &mut failure));
    let seconds = started.elapsed().as_secs_f64();
    if let Some(e) = failure {
        return Err(e);
    }
    let run = run.map_err(engine_err)?;
    let w = &run.lowered.workload;
    let out = PyDict::new(py);
    out.set_item("name", &graph.name)?;
    out.set_item("vertices", graph.vertices.len())?;
    out.set_item("edges", graph.edges.len())?;
    out.set_item("iterations", run.lowered.iterations)?;
    out.set_item("iteration_end_ns", &run.iteration_end_ns)?;
    out.set_item("end_ns", run.execution.end_ns)?;
    out.set_item("events", run.execution.events)?;
    out.set_item("ops", w.programs.iter().map(|p| p.ops.len()).sum::<usize>())?;
    out.set_item("simulate_seconds", seconds)?;
    let placed = &run.lowered.placed_bytes;
    out.set_item("placed_bytes", vec![("hbm", placed[0]), ("dram", placed[1]), ("cxl", placed[2])])?;
    out.set_item("spilled_copies", run.lowered.spilled)?;
    let reps = w.class_representatives();
    let mut sizes = vec![0u32; reps.len()];
    for &c in &w.rank_class {
        sizes[c as usize] += 1;
    }
    let classes = PyList::empty(py);
    for (c, b) in run.breakdown.iter().enumerate() {
        let d = PyDict::new(py);
        d.set_item("first_rank", reps[c])?;
        d.set_item("ranks", sizes[c])?;
        d.set_item("compute_ns", b.compute_ns)?;
        d.set_item("read_ns", b.read_ns)?;
        d.set_item("collective_ns", b.collective_ns)?;
        d.set_item("p2p_ns", b.p2p_ns)?;
        d.set_item("idle_ns", b.idle_ns)?;
        classes.append(d)?;
    }
    out.set_item("classes", classes)?;
    out.set_item("link_bytes", &run.link_bytes)?;
    if trace {
        out.set_item("trace", chrome_trace(w, &run.execution))?;
    }
    Ok(out)
}
