//! Fabric templates as Python sees them: parameters in, the engine's platform out. The rules
//! (defaults per template, numbering, wiring, names, warnings) are the engine's
//! `platform::templates`.

use clustersim_engine::platform::templates::fat_tree as fat_trees;
use clustersim_engine::platform::templates::params::{self, label, not_whole};
use clustersim_engine::platform::templates::{simai, Fabric, ParamKind, TemplateParams, Value, PARAMS};
use clustersim_engine::Error;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};

use crate::engine_err;
use crate::platform::PyPlatform;

/// A built template: (platform, name, warnings).
type Built = (PyPlatform, String, Vec<String>);

fn built(f: Fabric) -> Built {
    (PyPlatform { inner: f.platform }, f.name, f.warnings)
}

/// A Python whole number, or its repr for the message.
fn whole(value: &Bound<'_, PyAny>) -> Result<i64, String> {
    let repr = || value.repr().map_or_else(|_| "?".to_string(), |r| r.to_string());
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(repr());
    }
    value.extract::<i64>().map_err(|_| repr())
}

/// Parameters by name (None: not given) as the engine's values: whole numbers for the
/// whole-number parameters, text (`str` of the value) for the others.
fn overrides(params: Option<&Bound<'_, PyDict>>, source: &str) -> PyResult<Vec<(String, Value)>> {
    let mut out = Vec::new();
    for (key, value) in params.into_iter().flat_map(|d| d.iter()) {
        if value.is_none() {
            continue;
        }
        let name: String = key.extract()?;
        let kind = PARAMS.iter().find(|p| p.name == name).map(|p| p.kind);
        let v = if kind.and_then(ParamKind::least).is_some() {
            let kind = kind.unwrap_or(ParamKind::Count);
            Value::Int(
                whole(&value).map_err(|got| engine_err(Error::field(source, &label(&name), not_whole(kind, &got))))?,
            )
        } else if let Ok(s) = value.cast::<PyString>() {
            Value::Text(s.to_string())
        } else {
            Value::Text(value.str()?.to_string())
        };
        out.push((name, v));
    }
    Ok(out)
}

/// gen_Topo_Template.py's parameters, resolved for a template (None: the custom fabric) with
/// the --ro/--dt/--dp flags and parameters by name; each parameter is an attribute.
#[pyclass(name = "TemplateParams", module = "clustersim._engine", frozen)]
pub struct PyTemplateParams {
    inner: TemplateParams,
}

#[pymethods]
impl PyTemplateParams {
    #[new]
    #[pyo3(signature = (topology = None, params = None, *, ro = false, dt = false, dp = false))]
    fn new(
        topology: Option<&str>,
        params: Option<&Bound<'_, PyDict>>,
        ro: bool,
        dt: bool,
        dp: bool,
    ) -> PyResult<PyTemplateParams> {
        let o = overrides(params, "template")?;
        TemplateParams::resolve(topology, ro, dt, dp, &o).map(|inner| PyTemplateParams { inner }).map_err(engine_err)
    }

    #[getter]
    fn topology(&self) -> Option<&'static str> {
        self.inner.topology.map(|t| t.name())
    }

    #[getter]
    fn rail_optimized(&self) -> bool {
        self.inner.rail_optimized
    }

    #[getter]
    fn dual_tor(&self) -> bool {
        self.inner.dual_tor
    }

    #[getter]
    fn dual_plane(&self) -> bool {
        self.inner.dual_plane
    }

    /// A parameter's value by name (`p.gpu`, `p.bandwidth`, ...).
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.inner.get(name) {
            Some(Value::Int(v)) => Ok(v.into_pyobject(py)?.into_any()),
            Some(Value::Text(t)) => Ok(t.into_pyobject(py)?.into_any()),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "'TemplateParams' object has no attribute '{name}'"
            ))),
        }
    }

    /// Every parameter by name.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for p in PARAMS {
            d.set_item(p.name, self.__getattr__(py, p.name)?)?;
        }
        Ok(d)
    }

    /// The file name gen_Topo_Template.py gives these parameters (one pod).
    fn file_name(&self) -> String {
        self.inner.file_name()
    }

    /// The fabric, with `pods` pods joined by a core tier when more than one.
    #[pyo3(signature = (pods = None))]
    fn build(&self, py: Python<'_>, pods: Option<&Bound<'_, PyAny>>) -> PyResult<Built> {
        let pods = match pods {
            None => 1,
            Some(v) => whole(v)
                .map_err(|got| engine_err(Error::field("template", "pods", not_whole(ParamKind::Count, &got))))?,
        };
        py.detach(|| simai::build(&self.inner, pods)).map(built).map_err(engine_err)
    }

    fn __repr__(&self) -> String {
        let p = &self.inner;
        let topology = p.topology.map_or("None".to_string(), |t| format!("'{}'", t.name()));
        let values: Vec<String> = PARAMS
            .iter()
            .map(|q| match p.get(q.name) {
                Some(Value::Int(v)) => format!("{}={v}", q.name),
                Some(Value::Text(t)) => format!("{}='{t}'", q.name),
                None => String::new(),
            })
            .collect();
        format!(
            "TemplateParams(topology={topology}, rail_optimized={}, dual_tor={}, dual_plane={}, {})",
            p.rail_optimized,
            p.dual_tor,
            p.dual_plane,
            values.join(", ")
        )
    }
}

/// A k-ary fat-tree with SimAI's link parameters by name (those of `fat_tree::PARAMS`).
#[pyfunction]
#[pyo3(signature = (k, params = None))]
pub fn fat_tree(py: Python<'_>, k: &Bound<'_, PyAny>, params: Option<&Bound<'_, PyDict>>) -> PyResult<Built> {
    let k = whole(k).map_err(|got| engine_err(fat_trees::not_a_port_count(&got)))?;
    let o = overrides(params, "fat-tree")?;
    if let Some((name, _)) = o.iter().find(|(n, _)| !fat_trees::PARAMS.contains(&n.as_str())) {
        return Err(engine_err(Error::field(
            "fat-tree",
            name,
            format!("not a parameter of a fat-tree (valid: {})", fat_trees::PARAMS.join(", ")),
        )));
    }
    let p = TemplateParams::resolve(None, false, false, false, &o).map_err(engine_err)?;
    py.detach(|| fat_trees::build(k, &p)).map(built).map_err(engine_err)
}

/// gen_Topo_Template.py's parameters: (name, short flag, kind, one line of help with the
/// defaults), in the script's order; kinds: count (≥ 1), whole (≥ 0), rate, delay,
/// probability, text.
#[pyfunction]
pub fn template_parameters() -> Vec<(&'static str, &'static str, &'static str, String)> {
    PARAMS.iter().map(|p| (p.name, p.flag, p.kind.name(), p.help())).collect()
}

/// The names of gen_Topo_Template.py's templates.
#[pyfunction]
pub fn simai_templates() -> Vec<&'static str> {
    clustersim_engine::platform::templates::SimaiTemplate::ALL.iter().map(|t| t.name()).collect()
}

/// An ns-3 DataRate string in GB/s (bytes/ns); ValueError with the engine's reason if it is not
/// one.
#[pyfunction]
pub fn read_rate(text: &str) -> PyResult<f64> {
    params::read_rate(text).map_err(pyo3::exceptions::PyValueError::new_err)
}

/// An ns-3 Time string in ns; ValueError with the engine's reason if it is not one.
#[pyfunction]
pub fn read_delay(text: &str) -> PyResult<f64> {
    params::read_delay(text).map_err(pyo3::exceptions::PyValueError::new_err)
}
