//! Bindings of the catalog: the shipped accelerators and the checks of a user's model and
//! accelerator entries (Python objects in and out; the front end places a problem in its file).

use clustersim_engine::catalog::{Accelerator, Catalog};
use clustersim_engine::training::model::Model;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::training::{read, write};

/// What is wrong with an entry: (field, problem).
type Problem = (String, String);

/// A model description's problem, if any: None, or (field, problem).
#[pyfunction]
fn check_model(doc: &Bound<'_, PyAny>) -> PyResult<Option<Problem>> {
    let m: Model = read("model", doc)?;
    Ok(m.check().err().map(|e| (e.field.unwrap_or_default(), e.message)))
}

/// The shipped accelerator catalog: a mapping of names to entries, in file order.
#[pyfunction]
fn catalog_accelerators(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let entries = PyDict::new(py);
    for a in &Catalog::shipped().accelerators {
        entries.set_item(&a.name, write(py, "accelerator catalog", &a.to_value())?)?;
    }
    Ok(entries.into_any())
}

/// A user's accelerator `name` from its entry: (the entry as the catalog's schema reads it, with
/// peaks and NIC resolved, None) or (None, (field, problem)).
#[pyfunction]
fn accelerator_entry<'py>(
    py: Python<'py>,
    name: &str,
    doc: &Bound<'py, PyAny>,
) -> PyResult<(Option<Bound<'py, PyAny>>, Option<Problem>)> {
    let value: serde_json::Value = read("accelerator", doc)?;
    Ok(match Accelerator::from_value(name, &value, &Catalog::shipped().nics) {
        Ok(a) => (Some(write(py, "accelerator", &a.to_value())?), None),
        Err(problem) => (None, Some(problem)),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_model, m)?)?;
    m.add_function(wrap_pyfunction!(catalog_accelerators, m)?)?;
    m.add_function(wrap_pyfunction!(accelerator_entry, m)?)?;
    Ok(())
}
