//! Bindings of the workload IR: JSON text and columns (one NumPy array per op field, see the
//! engine's `workload::columns`) in and out, and a run of a workload on the analytical model.
//! Conversion only.

use clustersim_engine::catalog::Dtype;
use clustersim_engine::driver::{simulate, Backend};
use clustersim_engine::network::analytical::ratio::RatioTables;
use clustersim_engine::platform::Placement;
use clustersim_engine::simai::build::{BuildOptions, Overlap, SimaiWorkload};
use clustersim_engine::simai::file::WorkloadFile;
use clustersim_engine::simai::run::{cost_model, RunConfig};
use clustersim_engine::training::generate_input;
use clustersim_engine::workload::columns::{Columns, KINDS, PHASE_NAMES};
use clustersim_engine::workload::{Collective, Workload};
use numpy::{Element, IntoPyArray, PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::server::PyServerSpec;
use crate::training::PyTrainingInput;
use crate::{busbw_table, engine_err, EngineInputError};

fn pack<'py>(py: Python<'py>, w: &Workload) -> PyResult<Bound<'py, PyDict>> {
    let c = Columns::from(w);
    let d = PyDict::new(py);
    d.set_item("layout", c.layout)?;
    d.set_item("group_names", c.group_names)?;
    d.set_item("group_axes", c.group_axes)?;
    d.set_item("group_instances", c.group_instances)?;
    d.set_item("rows", c.rows)?;
    // Per rank, per class and per op: NumPy arrays of the engine's element types.
    d.set_item("rank_class", c.rank_class.into_pyarray(py))?;
    d.set_item("class_program", c.class_program.into_pyarray(py))?;
    d.set_item("program_start", c.program_start.into_pyarray(py))?;
    d.set_item("kind", c.kind.into_pyarray(py))?;
    d.set_item("ns", c.ns.into_pyarray(py))?;
    d.set_item("flops", c.flops.into_pyarray(py))?;
    d.set_item("mem_bytes", c.mem_bytes.into_pyarray(py))?;
    d.set_item("dtype", c.dtype.into_pyarray(py))?;
    d.set_item("collective", c.collective.into_pyarray(py))?;
    d.set_item("group", c.group.into_pyarray(py))?;
    d.set_item("offset", c.offset.into_pyarray(py))?;
    d.set_item("bytes", c.bytes.into_pyarray(py))?;
    d.set_item("copy", c.copy.into_pyarray(py))?;
    d.set_item("row", c.row.into_pyarray(py))?;
    d.set_item("phase", c.phase.into_pyarray(py))?;
    d.set_item("dep_start", c.dep_start.into_pyarray(py))?;
    d.set_item("deps", c.deps.into_pyarray(py))?;
    Ok(d)
}

fn missing(key: &str) -> PyErr {
    EngineInputError::new_err(format!("columns: missing '{key}'"))
}

fn bad(key: &str, e: impl std::fmt::Display) -> PyErr {
    EngineInputError::new_err(format!("columns: {key}: {e}"))
}

/// A column of any Python value `T` reads (lists and tuples).
fn get<'py, T>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T>
where
    T: for<'a> FromPyObject<'a, 'py>,
    for<'a> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
{
    let v = d.get_item(key)?.ok_or_else(|| missing(key))?;
    v.extract::<T>().map_err(|e| bad(key, Into::<PyErr>::into(e)))
}

/// A bulk column: a NumPy array of the engine's element type (copied in one go), or any
/// sequence of numbers.
fn array<'py, T>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Vec<T>>
where
    T: Element + Clone + for<'a> FromPyObject<'a, 'py>,
    for<'a> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
{
    let v = d.get_item(key)?.ok_or_else(|| missing(key))?;
    if let Ok(a) = v.cast::<PyArray1<T>>() {
        return Ok(a.readonly().as_array().to_vec());
    }
    v.extract::<Vec<T>>().map_err(|e| bad(key, e))
}

pub(crate) fn unpack(d: &Bound<'_, PyDict>, file: &str) -> PyResult<Workload> {
    let c = Columns {
        layout: get(d, "layout")?,
        group_names: get(d, "group_names")?,
        group_axes: get(d, "group_axes")?,
        group_instances: get(d, "group_instances")?,
        rows: get(d, "rows")?,
        rank_class: array(d, "rank_class")?,
        class_program: array(d, "class_program")?,
        program_start: array(d, "program_start")?,
        kind: array(d, "kind")?,
        ns: array(d, "ns")?,
        flops: array(d, "flops")?,
        mem_bytes: array(d, "mem_bytes")?,
        dtype: array(d, "dtype")?,
        collective: array(d, "collective")?,
        group: array(d, "group")?,
        offset: array(d, "offset")?,
        bytes: array(d, "bytes")?,
        copy: array(d, "copy")?,
        row: array(d, "row")?,
        phase: array(d, "phase")?,
        dep_start: array(d, "dep_start")?,
        deps: array(d, "deps")?,
    };
    c.to_workload(file).map_err(engine_err)
}

/// Read workload IR JSON (checked) as columns.
#[pyfunction]
fn workload_from_json<'py>(py: Python<'py>, path: &str, text: &str) -> PyResult<Bound<'py, PyDict>> {
    pack(py, &Workload::from_json(path, text).map_err(engine_err)?)
}

/// Columns (checked) as workload IR JSON; `path` names them in errors.
#[pyfunction]
#[pyo3(signature = (columns, path = "workload"))]
fn workload_to_json(columns: &Bound<'_, PyDict>, path: &str) -> PyResult<String> {
    Ok(unpack(columns, path)?.to_json())
}

/// The IR a SimAI workload file becomes (as `clustersim analytical` builds it in its default
/// mode), as columns.
#[pyfunction]
#[pyo3(signature = (path, text, *, gpus = None, gpus_per_server = 8, overlap = (0.0, 0.0, 0.0, 0.0), lenient = false))]
fn workload_from_simai<'py>(
    py: Python<'py>,
    path: &str,
    text: &str,
    gpus: Option<u32>,
    gpus_per_server: u32,
    overlap: (f64, f64, f64, f64),
    lenient: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let file = WorkloadFile::parse(path, text, lenient).map_err(engine_err)?;
    let (dp, tp, ep, pp) = overlap;
    let opts = BuildOptions { gpus, gpus_per_server, compat: false, overlap: Overlap { dp, tp, ep, pp } };
    pack(py, &SimaiWorkload::build(file, &opts).map_err(engine_err)?.workload)
}

/// The IR of one Megatron-Core iteration as `clustersim train` generates it, as columns.
#[pyfunction]
fn workload_from_training<'py>(py: Python<'py>, input: PyRef<'py, PyTrainingInput>) -> PyResult<Bound<'py, PyDict>> {
    let g = generate_input(&input.inner).map_err(engine_err)?;
    pack(py, &g.workload)
}

/// Run a workload given as columns through the executor on the analytical model on `server`;
/// returns the iteration time and each class's op start and end times (ns).
#[pyfunction]
#[pyo3(signature = (
    columns, *, server, busbw = None, compat = false
))]
fn simulate_workload<'py>(
    py: Python<'py>,
    columns: &Bound<'py, PyDict>,
    server: PyRef<'py, PyServerSpec>,
    busbw: Option<(String, String)>,
    compat: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let w = unpack(columns, "workload")?;
    let platform = server.inner.clone();
    let gpus_per_server = platform.gpus_per_server;
    platform.validate().map_err(engine_err)?;
    let busbw = busbw_table(busbw)?;
    let cfg = RunConfig {
        compat,
        gpus: None,
        platform,
        busbw,
        ratios: RatioTables::builtin(),
        overlap: Overlap { dp: 0.0, tp: 0.0, ep: 0.0, pp: 0.0 },
        run_name: String::new(),
        lenient: false,
        flow: None,
    };
    let exec = py
        .detach(|| {
            let cost = cost_model(&cfg, w.world_size());
            let backend = Backend::Analytical { cost, placement: Placement::servers(w.world_size(), gpus_per_server) };
            simulate(&w, backend, &mut |_| true).map(|s| s.execution)
        })
        .map_err(engine_err)?;
    let d = PyDict::new(py);
    d.set_item("end_ns", exec.end_ns)?;
    d.set_item("events", exec.events)?;
    d.set_item("start", exec.timelines.iter().map(|t| t.start.clone()).collect::<Vec<_>>())?;
    d.set_item("end", exec.timelines.iter().map(|t| t.end.clone()).collect::<Vec<_>>())?;
    Ok(d)
}

/// A compute op's time by the compute model's roofline, ns: `flops` at `flops_per_s`, `bytes`
/// at `bytes_per_s` (None bounds nothing).
#[pyfunction]
#[pyo3(signature = (flops, flops_per_s, bytes, bytes_per_s))]
fn roofline_ns(flops: f64, flops_per_s: Option<f64>, bytes: f64, bytes_per_s: Option<f64>) -> f64 {
    clustersim_engine::compute::roofline_ns(flops, flops_per_s, bytes, bytes_per_s.map(|b| b / 1e9))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("OP_KINDS", KINDS.to_vec())?;
    m.add("COLLECTIVES", Collective::ALL.iter().map(|c| c.name()).collect::<Vec<_>>())?;
    m.add("PHASES", PHASE_NAMES.to_vec())?;
    m.add("DTYPES", Dtype::ALL.iter().map(|d| d.name()).collect::<Vec<_>>())?;
    m.add_function(wrap_pyfunction!(workload_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(roofline_ns, m)?)?;
    m.add_function(wrap_pyfunction!(workload_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(workload_from_simai, m)?)?;
    m.add_function(wrap_pyfunction!(workload_from_training, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_workload, m)?)?;
    Ok(())
}
