//! Python bindings of clustersim's engine: argument conversion and result packing only.

mod catalog;
mod flow;
mod goodput;
mod graph;
mod platform;
mod search;
mod server;
mod simai;
mod templates;
mod training;
mod workload;

use clustersim_engine::network::analytical::busbw_file::BusbwTable;
use clustersim_engine::simai::file::WorkloadFile;
use clustersim_engine::simai::report::{Report, LAYER_COLUMNS, SUMMARY_COLUMNS};
use clustersim_engine::Error;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

create_exception!(_engine, EngineInputError, PyException, "Bad input: the message names the file, line and field.");
create_exception!(_engine, EngineInternalError, PyException, "A broken invariant of the engine: a bug in clustersim.");

/// An engine error as the Python exception of its kind.
fn engine_err(e: Error) -> PyErr {
    if e.is_internal() {
        EngineInternalError::new_err(e.to_string())
    } else {
        EngineInputError::new_err(e.to_string())
    }
}

/// A busbw table given as (path, text).
fn busbw_table(busbw: Option<(String, String)>) -> PyResult<Option<BusbwTable>> {
    busbw.map(|(p, t)| BusbwTable::parse(&p, &t)).transpose().map_err(engine_err)
}

/// Pass progress to the Python callback; stop the run (false) on Ctrl-C or a callback error,
/// keeping the error to raise once the engine has returned.
fn report(py: Python<'_>, progress: &Option<Bound<'_, PyAny>>, fraction: f64, failure: &mut Option<PyErr>) -> bool {
    let result = py.check_signals().and_then(|_| match progress {
        Some(cb) => cb.call1((fraction,)).map(|_| ()),
        None => Ok(()),
    });
    match result {
        Ok(()) => true,
        Err(e) => {
            *failure = Some(e);
            false
        }
    }
}

/// Read a SimAI workload file and write it back (checks it, normalises spacing).
#[pyfunction]
#[pyo3(signature = (path, text, *, lenient = false))]
fn rewrite_workload(path: &str, text: &str, lenient: bool) -> PyResult<(String, Vec<String>)> {
    let f = WorkloadFile::parse(path, text, lenient).map_err(engine_err)?;
    Ok((f.to_text(), f.warnings))
}

/// Header fields and row count of a SimAI workload file.
#[pyfunction]
#[pyo3(signature = (path, text, *, lenient = false))]
fn inspect_workload<'py>(py: Python<'py>, path: &str, text: &str, lenient: bool) -> PyResult<Bound<'py, PyDict>> {
    let f = WorkloadFile::parse(path, text, lenient).map_err(engine_err)?;
    let h = &f.header;
    let d = PyDict::new(py);
    d.set_item("policy", format!("{:?}", h.policy))?;
    d.set_item("variant", format!("{:?}", h.variant))?;
    for (k, v) in [("tp", h.tp), ("ep", h.ep), ("pp", h.pp), ("vpp", h.vpp), ("ga", h.ga)] {
        d.set_item(k, v)?;
    }
    d.set_item("all_gpus", h.all_gpus)?;
    d.set_item("pp_comm", h.pp_comm)?;
    d.set_item("rows", f.rows.len())?;
    d.set_item("row_names", f.rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>())?;
    d.set_item("warnings", f.warnings)?;
    Ok(d)
}

/// SimAI's EndToEnd CSV (the engine's one writer) of a report given by its numbers: `summary`
/// in SUMMARY_COLUMNS order, one row of LAYER_COLUMNS values per layer name (µs, GB/s).
#[pyfunction]
fn end_to_end_csv(
    run_name: String,
    summary: [f64; SUMMARY_COLUMNS.len()],
    layer_names: Vec<String>,
    layers: Vec<[f64; LAYER_COLUMNS.len()]>,
) -> PyResult<String> {
    if layer_names.len() != layers.len() {
        return Err(EngineInternalError::new_err(format!(
            "end_to_end_csv: {} layer names for {} rows",
            layer_names.len(),
            layers.len()
        )));
    }
    Ok(Report { run_name, compat: false, summary, layer_names, layers }.to_csv())
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InputError", m.py().get_type::<EngineInputError>())?;
    m.add("InternalError", m.py().get_type::<EngineInternalError>())?;
    m.add("PanicException", m.py().get_type::<pyo3::panic::PanicException>())?;
    m.add_function(wrap_pyfunction!(simai::run_analytical, m)?)?;
    m.add_class::<simai::AnalyticalRun>()?;
    m.add_function(wrap_pyfunction!(end_to_end_csv, m)?)?;
    m.add_class::<server::PyServerSpec>()?;
    m.add_class::<platform::PyPlatform>()?;
    m.add_class::<templates::PyTemplateParams>()?;
    for f in [
        wrap_pyfunction!(templates::fat_tree, m)?,
        wrap_pyfunction!(templates::template_parameters, m)?,
        wrap_pyfunction!(templates::simai_templates, m)?,
        wrap_pyfunction!(templates::read_rate, m)?,
        wrap_pyfunction!(templates::read_delay, m)?,
        wrap_pyfunction!(platform::parse_rate, m)?,
        wrap_pyfunction!(platform::parse_time, m)?,
        wrap_pyfunction!(platform::format_rate, m)?,
        wrap_pyfunction!(platform::format_time, m)?,
    ] {
        m.add_function(f)?;
    }
    m.add_function(wrap_pyfunction!(flow::flow_completion_times, m)?)?;
    m.add_function(wrap_pyfunction!(flow::collective_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(flow::busbw_factor, m)?)?;
    m.add_function(wrap_pyfunction!(flow::in_network_busbw_factor, m)?)?;
    m.add_function(wrap_pyfunction!(rewrite_workload, m)?)?;
    m.add_function(wrap_pyfunction!(inspect_workload, m)?)?;
    m.add_class::<search::PlanSearch>()?;
    m.add_class::<search::Simulated>()?;
    m.add_function(wrap_pyfunction!(graph::normalize_workload_graph, m)?)?;
    m.add_function(wrap_pyfunction!(graph::llama2_13b_graph, m)?)?;
    m.add_function(wrap_pyfunction!(graph::run_workload_graph, m)?)?;
    m.add_function(wrap_pyfunction!(graph::workload_graph_from_workload, m)?)?;
    m.add_function(wrap_pyfunction!(goodput::failure_profiles, m)?)?;
    m.add_function(wrap_pyfunction!(goodput::failure_rates_per_hour, m)?)?;
    m.add_function(wrap_pyfunction!(goodput::checkpoint_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(goodput::goodput_closed_form, m)?)?;
    m.add_function(wrap_pyfunction!(goodput::best_interval, m)?)?;
    m.add_class::<goodput::PyFailureCause>()?;
    m.add_class::<goodput::PyFailureProfile>()?;
    m.add_class::<goodput::PyGoodputRun>()?;
    m.add_class::<goodput::PyGoodputTrials>()?;
    catalog::register(m)?;
    training::register(m)?;
    workload::register(m)?;
    Ok(())
}
