//! Bindings of the plan search: the valid plans of a space, and many plans simulated at once
//! (conversion only: plans and results cross as columns, the GIL released while rayon runs).

use clustersim_engine::training::batch::run_plans;
use clustersim_engine::training::plan::Plan;
use clustersim_engine::training::search::{enumerate, Batch, Enumeration, Space};
use clustersim_engine::training::TrainingInput;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{engine_err, EngineInputError, EngineInternalError};

fn input(doc: &str) -> PyResult<TrainingInput> {
    serde_json::from_str(doc).map_err(|e| EngineInputError::new_err(format!("training input: {e}")))
}

/// An enum's name as its serde form ("selective", "zero2").
fn name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|x| x.as_str().map(String::from)).unwrap_or_default()
}

fn from_name<T: DeserializeOwned>(column: &str, s: &str) -> PyResult<T> {
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|e| EngineInputError::new_err(format!("plans: {column}: {e}")))
}

/// Every valid plan of `space` (JSON: per axis a list of values or null for all) for the model
/// and cluster of `input` (run_training's document), global batch `gbs` exactly or, with
/// `at_most`, the largest multiple of DP not above it; as columns, with memory per GPU and
/// whether it fits in `memory_gb`; and `visited`, the combinations tried, valid or not.
#[pyfunction]
#[pyo3(signature = (input, space, *, gbs, at_most, memory_gb))]
pub fn enumerate_plans<'py>(
    py: Python<'py>,
    input: &str,
    space: &str,
    gbs: u32,
    at_most: bool,
    memory_gb: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let base = self::input(input)?;
    let space: Space =
        serde_json::from_str(space).map_err(|e| EngineInputError::new_err(format!("search space: {e}")))?;
    let batch = if at_most { Batch::AtMost(gbs) } else { Batch::Exact(gbs) };
    let found: Enumeration = py
        .detach(|| enumerate(&base.model, &base.plan, batch, &space, base.flash_attention, memory_gb))
        .map_err(engine_err)?;
    let (found, visited) = (found.candidates, found.visited);
    let out = PyDict::new(py);
    out.set_item("visited", visited)?;
    let plans: Vec<&Plan> = found.iter().map(|c| &c.plan).collect();
    plan_columns(&out, &plans)?;
    out.set_item("dp", plans.iter().map(|p| p.dp_size()).collect::<Vec<_>>())?;
    out.set_item("micro_batches", plans.iter().map(|p| p.micro_batches()).collect::<Vec<_>>())?;
    out.set_item("memory_gb", found.iter().map(|c| c.memory.total_gb).collect::<Vec<_>>())?;
    out.set_item("params_gb", found.iter().map(|c| c.memory.params_gb).collect::<Vec<_>>())?;
    let state: Vec<f64> = found.iter().map(|c| c.memory.grads_and_optimizer_gb).collect();
    out.set_item("grads_and_optimizer_gb", state)?;
    out.set_item("activations_gb", found.iter().map(|c| c.memory.activations_gb).collect::<Vec<_>>())?;
    out.set_item("fits", found.iter().map(|c| c.fits).collect::<Vec<_>>())?;
    Ok(out)
}

/// The plan columns `simulate_plans` takes.
fn plan_columns(out: &Bound<'_, PyDict>, plans: &[&Plan]) -> PyResult<()> {
    type Field = fn(&Plan) -> u32;
    let fields: [(&str, Field); 7] = [
        ("tp", |p| p.tp),
        ("pp", |p| p.pp),
        ("vpp", |p| p.vpp),
        ("ep", |p| p.ep),
        ("cp", |p| p.cp),
        ("mbs", |p| p.mbs),
        ("gbs", |p| p.gbs),
    ];
    for (k, f) in fields {
        out.set_item(k, plans.iter().map(|p| f(p)).collect::<Vec<u32>>())?;
    }
    out.set_item("sp", plans.iter().map(|p| p.sp).collect::<Vec<_>>())?;
    out.set_item("optimizer", plans.iter().map(|p| name(&p.dp)).collect::<Vec<_>>())?;
    out.set_item("recompute", plans.iter().map(|p| name(&p.recompute)).collect::<Vec<_>>())?;
    Ok(())
}

/// Simulate plans given as columns (tp, pp, vpp, ep, cp, mbs, gbs, sp, optimizer, recompute) on
/// the model and cluster of `input`, in parallel with the GIL released; each exactly as
/// `run_training` alone. Returns columns: iteration_s, tokens_per_s, mfu, one per breakdown part
/// (seconds), and error (None, or why that plan failed).
#[pyfunction]
pub fn simulate_plans<'py>(py: Python<'py>, input: &str, plans: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let base = self::input(input)?;
    let column = |k: &str| -> PyResult<Bound<'py, PyAny>> {
        plans.get_item(k)?.ok_or_else(|| EngineInputError::new_err(format!("plans: {k}: missing column")))
    };
    let sizes: Vec<Vec<u32>> = ["tp", "pp", "vpp", "ep", "cp", "mbs", "gbs"]
        .iter()
        .map(|k| column(k)?.extract::<Vec<u32>>())
        .collect::<PyResult<_>>()?;
    let sp: Vec<bool> = column("sp")?.extract()?;
    let optimizer: Vec<String> = column("optimizer")?.extract()?;
    let recompute: Vec<String> = column("recompute")?.extract()?;
    let n = sp.len();
    if sizes.iter().any(|c| c.len() != n) || optimizer.len() != n || recompute.len() != n {
        return Err(EngineInputError::new_err("plans: columns differ in length"));
    }
    let mut list = Vec::with_capacity(n);
    for i in 0..n {
        list.push(Plan {
            tp: sizes[0][i],
            pp: sizes[1][i],
            vpp: sizes[2][i],
            ep: sizes[3][i],
            cp: sizes[4][i],
            mbs: sizes[5][i],
            gbs: sizes[6][i],
            sp: sp[i],
            dp: from_name("optimizer", &optimizer[i])?,
            recompute: from_name("recompute", &recompute[i])?,
            first_stage_layers: None,
            last_stage_layers: None,
            account_for: Default::default(),
            ..base.plan.clone()
        });
    }
    let reports = py.detach(|| run_plans(&base, &list));
    let mut parts: Vec<String> = Vec::new();
    for r in reports.iter().flatten() {
        for (k, _) in &r.breakdown_s {
            if !parts.contains(k) {
                parts.push(k.clone());
            }
        }
    }
    let out = PyDict::new(py);
    let value = |f: &dyn Fn(&clustersim_engine::training::TrainingReport) -> f64| -> Vec<f64> {
        reports.iter().map(|r| r.as_ref().map_or(f64::NAN, f)).collect()
    };
    out.set_item("iteration_s", value(&|r| r.iteration_s))?;
    out.set_item("tokens_per_s", value(&|r| r.tokens_per_s))?;
    out.set_item("mfu", value(&|r| r.mfu))?;
    let breakdown = PyDict::new(py);
    for k in &parts {
        let seconds = value(&|r| r.breakdown_s.iter().find(|(p, _)| p == k).map_or(0.0, |(_, v)| *v));
        breakdown.set_item(k, seconds)?;
    }
    out.set_item("breakdown_s", breakdown)?;
    let mut errors = Vec::with_capacity(n);
    for r in &reports {
        errors.push(match r {
            Ok(_) => None,
            Err(e) if e.is_internal() => return Err(EngineInternalError::new_err(e.to_string())),
            Err(e) => Some(e.to_string()),
        });
    }
    out.set_item("error", errors)?;
    Ok(out)
}
