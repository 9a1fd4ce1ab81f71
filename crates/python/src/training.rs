//! Bindings of training: the engine's typed input, built once from its document (the Python
//! objects of the training input's JSON form, read by serde with the path of a bad field), and
//! what is generated or simulated from it. Reports come back as the Python objects serde writes.

use clustersim_engine::compute::is_class;
use clustersim_engine::training::costs::iteration_kernels as engine_iteration_kernels;
use clustersim_engine::training::simai_rows::{simai_workload, Flavor};
use clustersim_engine::training::{
    layer_seconds as engine_layer_seconds, run_training as engine_training, TrainingInput,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::platform::PyPlatform;
use crate::{engine_err, report, EngineInputError, EngineInternalError};

/// A document's Python objects as the engine type `T`; a bad field is named by its path
/// (`plan.tp`, `model.layers`) after `what`.
pub(crate) fn read<T: DeserializeOwned>(what: &str, doc: &Bound<'_, PyAny>) -> PyResult<T> {
    let mut de = pythonize::Depythonizer::from_object(doc);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let at = e.path().to_string();
        let inner = e.into_inner();
        if at == "." {
            EngineInputError::new_err(format!("{what}: {inner}"))
        } else {
            EngineInputError::new_err(format!("{what}: {at}: {inner}"))
        }
    })
}

/// An engine value as the Python objects of its JSON form (dicts in field order, lists, numbers,
/// strings, None): what `json.loads` would give, without the text.
pub(crate) fn write<'py, T: Serialize>(py: Python<'py>, what: &str, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let objects = pythonize::pythonize(py, value).map_err(|e| EngineInternalError::new_err(format!("{what}: {e}")))?;
    tuples_as_lists(objects)
}

/// serde's tuples (pairs such as a breakdown's (part, seconds)) as the lists JSON has.
fn tuples_as_lists(v: Bound<'_, PyAny>) -> PyResult<Bound<'_, PyAny>> {
    if let Ok(t) = v.cast::<PyTuple>() {
        let items = t.iter().map(tuples_as_lists).collect::<PyResult<Vec<_>>>()?;
        return Ok(PyList::new(v.py(), items)?.into_any());
    }
    if let Ok(l) = v.cast::<PyList>() {
        for i in 0..l.len() {
            l.set_item(i, tuples_as_lists(l.get_item(i)?)?)?;
        }
    } else if let Ok(d) = v.cast::<PyDict>() {
        // Collected first: a dict's values are replaced, not while iterating it.
        for (k, x) in d.iter().collect::<Vec<_>>() {
            d.set_item(k, tuples_as_lists(x)?)?;
        }
    }
    Ok(v)
}

/// One training job as the engine reads it: model, plan, accelerator(s) and network. Built from
/// the training input document; `platform`, if given, is the fabric of its "fabric".
#[pyclass(name = "TrainingInput", module = "clustersim._engine", frozen)]
pub struct PyTrainingInput {
    pub(crate) inner: TrainingInput,
}

#[pymethods]
impl PyTrainingInput {
    #[new]
    #[pyo3(signature = (document, *, platform = None))]
    fn new(document: &Bound<'_, PyAny>, platform: Option<PyRef<'_, PyPlatform>>) -> PyResult<Self> {
        let mut inner: TrainingInput = read("training input", document)?;
        if let (Some(f), Some(p)) = (inner.fabric.as_mut(), platform) {
            f.platform = Some(p.inner.clone());
        }
        Ok(PyTrainingInput { inner })
    }
}

/// Generate and simulate one training iteration; the report as Python objects.
#[pyfunction]
#[pyo3(signature = (input, *, progress = None))]
pub fn run_training<'py>(
    py: Python<'py>,
    input: PyRef<'py, PyTrainingInput>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut failure = None;
    let result = engine_training(&input.inner, &mut |f| report(py, &progress, f, &mut failure));
    if let Some(e) = failure {
        return Err(e);
    }
    write(py, "training report", &result.map_err(engine_err)?)
}

/// Forward and backward seconds of one dense layer for one micro-batch.
#[pyfunction]
pub fn layer_seconds(input: PyRef<'_, PyTrainingInput>) -> PyResult<(f64, f64)> {
    engine_layer_seconds(&input.inner).map_err(engine_err)
}

/// One kernel of a kernel table: class, shape, dtype, the model's ns, how many op lists hold it.
type KernelRow = (String, String, String, f64, usize);

/// The distinct kernels of one iteration, the model's time without any table.
#[pyfunction]
pub fn iteration_kernels(input: PyRef<'_, PyTrainingInput>) -> PyResult<Vec<KernelRow>> {
    let input = &input.inner;
    let mut acc = input.accelerator.clone();
    acc.check().map_err(engine_err)?;
    acc.measured = Default::default();
    let kernels =
        engine_iteration_kernels(&input.model, &input.plan, &acc, input.flash_attention).map_err(engine_err)?;
    Ok(kernels
        .into_iter()
        .map(|(k, n)| {
            let (class, shape, dtype) = k.key();
            (class, shape, dtype.to_string(), k.model_ns(&acc), n)
        })
        .collect())
}

/// Whether `name` is a kernel class of a kernel table.
#[pyfunction]
pub fn is_kernel_class(name: &str) -> bool {
    is_class(name)
}

/// A training iteration as SimAI workload file text: Megatron's collectives, or AICB's rows with
/// `aicb_compat`.
#[pyfunction]
#[pyo3(signature = (input, *, aicb_compat = false))]
pub fn generate_workload(input: PyRef<'_, PyTrainingInput>, aicb_compat: bool) -> PyResult<String> {
    let i = &input.inner;
    let flavor = if aicb_compat { Flavor::Aicb } else { Flavor::Megatron };
    let f = simai_workload(&i.model, &i.plan, &i.accelerator, i.flash_attention, flavor).map_err(engine_err)?;
    Ok(f.to_text())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTrainingInput>()?;
    m.add_function(wrap_pyfunction!(run_training, m)?)?;
    m.add_function(wrap_pyfunction!(layer_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(iteration_kernels, m)?)?;
    m.add_function(wrap_pyfunction!(is_kernel_class, m)?)?;
    m.add_function(wrap_pyfunction!(generate_workload, m)?)?;
    Ok(())
}
