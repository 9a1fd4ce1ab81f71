//! Bindings of the plan search: a space's valid plans, their lower bounds, and any of them
//! simulated (conversion only: plans and results cross as columns, the GIL released while the
//! engine works; the collective prices are kept across the calls of one search).

use std::sync::{Arc, Mutex};

use clustersim_engine::network::analytical::alpha_beta::PriceMemo;
use clustersim_engine::training::batch::run_plans_memo;
use clustersim_engine::training::bound::lower_bounds;
use clustersim_engine::training::memory::{memory, Memory};
use clustersim_engine::training::plan::{DataParallel, Recompute};
use clustersim_engine::training::search::{enumerate, Batch, Candidate, Space};
use clustersim_engine::training::TrainingInput;
use pyo3::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::training::PyTrainingInput;
use crate::{engine_err, EngineInputError, EngineInternalError};

/// An enum's name as its serde form ("selective", "zero2").
fn name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|x| x.as_str().map(String::from)).unwrap_or_default()
}

fn from_names<T: DeserializeOwned>(axis: &str, names: Option<Vec<String>>) -> PyResult<Option<Vec<T>>> {
    names
        .map(|v| {
            v.into_iter()
                .map(|s| {
                    serde_json::from_value(serde_json::Value::String(s))
                        .map_err(|e| EngineInputError::new_err(format!("search space: {axis}: {e}")))
                })
                .collect()
        })
        .transpose()
}

/// The valid plans of one model on one cluster (a space: per axis the values to try, None for
/// every value the rules allow), each plan's memory, and on request lower bounds of their
/// iteration times and their simulations, all sharing one memo of collective prices.
#[pyclass(name = "PlanSearch", module = "clustersim._engine", frozen)]
pub struct PlanSearch {
    base: TrainingInput,
    candidates: Vec<Candidate>,
    visited: u64,
    memo: Arc<Mutex<PriceMemo>>,
    state: Mutex<State>,
}

/// Where a branch and bound stands: the screened plans best ceiling first, and how far it got.
#[derive(Default)]
struct State {
    /// Candidate indices, highest ceiling on tokens/s first (ties in enumeration order).
    order: Vec<usize>,
    /// The ceilings (tokens / lower bound), aligned with `order`: descending.
    ceiling: Vec<f64>,
    /// Lower bound (s) per candidate; NaN where not screened.
    bound_s: Vec<f64>,
    /// The next position of `order` to take.
    cursor: usize,
    /// Memory per GPU of the plans checked.
    memory: std::collections::HashMap<usize, Memory>,
    /// Plans taken but left out for memory.
    not_fitting: usize,
}

#[pymethods]
impl PlanSearch {
    /// Enumerate the space for the model and cluster of `input`, the
    /// global batch `gbs` exactly or, with `at_most`, the largest multiple of each plan's DP not
    /// above it.
    #[new]
    #[pyo3(signature = (input, *, gbs, at_most, tp=None, pp=None, vpp=None, ep=None, cp=None, mbs=None,
        sp=None, recompute=None, optimizer=None, grad_reduce=None, param_gather=None, tp_comm=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        input: PyRef<'_, PyTrainingInput>,
        gbs: u32,
        at_most: bool,
        tp: Option<Vec<u32>>,
        pp: Option<Vec<u32>>,
        vpp: Option<Vec<u32>>,
        ep: Option<Vec<u32>>,
        cp: Option<Vec<u32>>,
        mbs: Option<Vec<u32>>,
        sp: Option<Vec<bool>>,
        recompute: Option<Vec<String>>,
        optimizer: Option<Vec<String>>,
        grad_reduce: Option<Vec<bool>>,
        param_gather: Option<Vec<bool>>,
        tp_comm: Option<Vec<bool>>,
    ) -> PyResult<PlanSearch> {
        let base = input.inner.clone();
        let space = Space {
            tp,
            pp,
            vpp,
            ep,
            cp,
            mbs,
            sp,
            recompute: from_names::<Recompute>("recompute", recompute)?,
            dp: from_names::<DataParallel>("optimizer", optimizer)?,
            grad_reduce,
            param_gather,
            tp_comm,
        };
        let batch = if at_most { Batch::AtMost(gbs) } else { Batch::Exact(gbs) };
        let found =
            py.detach(|| enumerate(&base.model, &base.plan, &base.overlap, batch, &space)).map_err(engine_err)?;
        let memo = Arc::new(Mutex::new(PriceMemo::default()));
        let state = Mutex::new(State { bound_s: vec![f64::NAN; found.candidates.len()], ..State::default() });
        Ok(PlanSearch { base, candidates: found.candidates, visited: found.visited, memo, state })
    }

    fn __len__(&self) -> usize {
        self.candidates.len()
    }

    /// Combinations of the axes' values tried, valid or not (what Calculon counts as candidates).
    #[getter]
    fn visited(&self) -> u64 {
        self.visited
    }

    /// One plan column, of every plan or of `indices`: tp, pp, vpp, ep, cp, mbs, gbs, dp,
    /// micro_batches (whole numbers), sp, overlap_grad_reduce, overlap_param_gather,
    /// tp_comm_overlap (bools), optimizer, recompute (names); memory_gb, params_gb,
    /// grads_and_optimizer_gb, activations_gb (floats, train's memory model); bound_s (the lower
    /// bound of a screened plan, NaN otherwise).
    #[pyo3(signature = (name, indices=None))]
    fn column<'py>(&self, py: Python<'py>, name: &str, indices: Option<Vec<usize>>) -> PyResult<Bound<'py, PyAny>> {
        let all: Vec<usize>;
        let indices = match indices {
            Some(v) => {
                self.check(&v)?;
                all = v;
                &all
            }
            None => {
                all = (0..self.candidates.len()).collect();
                &all
            }
        };
        let each =
            |f: &dyn Fn(&Candidate) -> u32| indices.iter().map(|&i| f(&self.candidates[i])).collect::<Vec<u32>>();
        let flag =
            |f: &dyn Fn(&Candidate) -> bool| indices.iter().map(|&i| f(&self.candidates[i])).collect::<Vec<bool>>();
        let text =
            |f: &dyn Fn(&Candidate) -> String| indices.iter().map(|&i| f(&self.candidates[i])).collect::<Vec<String>>();
        let on = |o: Option<bool>| o.unwrap_or(false);
        let memory_of = |f: fn(&Memory) -> f64| -> Vec<f64> {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            indices.iter().map(|&i| f(self.memory(&mut state, i))).collect()
        };
        let out = match name {
            "tp" => each(&|c| c.plan.tp).into_pyobject(py)?.into_any(),
            "pp" => each(&|c| c.plan.pp).into_pyobject(py)?.into_any(),
            "vpp" => each(&|c| c.plan.vpp).into_pyobject(py)?.into_any(),
            "ep" => each(&|c| c.plan.ep).into_pyobject(py)?.into_any(),
            "cp" => each(&|c| c.plan.cp).into_pyobject(py)?.into_any(),
            "mbs" => each(&|c| c.plan.mbs).into_pyobject(py)?.into_any(),
            "gbs" => each(&|c| c.plan.gbs).into_pyobject(py)?.into_any(),
            "dp" => each(&|c| c.plan.dp_size()).into_pyobject(py)?.into_any(),
            "micro_batches" => each(&|c| c.plan.micro_batches()).into_pyobject(py)?.into_any(),
            "sp" => flag(&|c| c.plan.sp).into_pyobject(py)?.into_any(),
            "overlap_grad_reduce" => flag(&|c| on(c.overlap.grad_reduce)).into_pyobject(py)?.into_any(),
            "overlap_param_gather" => flag(&|c| on(c.overlap.param_gather)).into_pyobject(py)?.into_any(),
            "tp_comm_overlap" => flag(&|c| on(c.overlap.tp_comm)).into_pyobject(py)?.into_any(),
            "optimizer" => text(&|c| self::name(&c.plan.dp)).into_pyobject(py)?.into_any(),
            "recompute" => text(&|c| self::name(&c.plan.recompute)).into_pyobject(py)?.into_any(),
            "memory_gb" => memory_of(|m| m.total_gb).into_pyobject(py)?.into_any(),
            "params_gb" => memory_of(|m| m.params_gb).into_pyobject(py)?.into_any(),
            "grads_and_optimizer_gb" => memory_of(|m| m.grads_and_optimizer_gb).into_pyobject(py)?.into_any(),
            "activations_gb" => memory_of(|m| m.activations_gb).into_pyobject(py)?.into_any(),
            "bound_s" => {
                let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                indices.iter().map(|&i| state.bound_s[i]).collect::<Vec<f64>>().into_pyobject(py)?.into_any()
            }
            _ => return Err(EngineInputError::new_err(format!("plan search: no column '{name}'"))),
        };
        Ok(out)
    }

    /// Screen the plans `indices`: a lower bound on each one's simulated iteration time
    /// (training::bound), and the order of a branch and bound, highest ceiling on tokens/s
    /// (tokens / bound) first. Starts the order afresh.
    fn screen(&self, py: Python<'_>, indices: Vec<usize>) -> PyResult<()> {
        self.check(&indices)?;
        let plans: Vec<_> = indices.iter().map(|&i| (&self.candidates[i].plan, &self.candidates[i].overlap)).collect();
        let ranked = py
            .detach(|| -> clustersim_engine::error::Result<Vec<(usize, f64, f64)>> {
                let bounds = lower_bounds(&self.base, &plans, Some(&self.memo))?;
                let mut ranked: Vec<(usize, f64, f64)> = indices
                    .iter()
                    .zip(bounds)
                    .map(|(&i, ns)| {
                        // As the report divides: tokens / seconds.
                        let seconds = ns / 1e9;
                        let tokens = self.candidates[i].plan.tokens();
                        (i, seconds, if seconds > 0.0 { tokens / seconds } else { f64::INFINITY })
                    })
                    .collect();
                ranked.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
                Ok(ranked)
            })
            .map_err(engine_err)?;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for &(i, s, _) in &ranked {
            state.bound_s[i] = s;
        }
        state.order = ranked.iter().map(|r| r.0).collect();
        state.ceiling = ranked.iter().map(|r| r.2).collect();
        state.cursor = 0;
        Ok(())
    }

    /// The next `count` plans of the order whose ceiling is at least `threshold` (tokens/s) and
    /// that fit in `memory_gb` per GPU (train's memory model); plans taken that do not fit are
    /// counted (`not_fitting`) and skipped. Empty when none is left above the threshold.
    fn take(&self, py: Python<'_>, threshold: f64, count: usize, memory_gb: f64) -> Vec<usize> {
        py.detach(|| {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let mut out = Vec::with_capacity(count);
            while out.len() < count && state.cursor < state.order.len() && state.ceiling[state.cursor] >= threshold {
                let i = state.order[state.cursor];
                state.cursor += 1;
                if self.memory(&mut state, i).total_gb <= memory_gb {
                    out.push(i);
                } else {
                    state.not_fitting += 1;
                }
            }
            out
        })
    }

    /// Plans of the order not taken yet whose ceiling is at least `threshold`.
    fn remaining(&self, threshold: f64) -> usize {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let rest = &state.ceiling[state.cursor..];
        rest.partition_point(|&c| c >= threshold)
    }

    /// Plans taken so far (memory checked), and of those the ones that did not fit.
    #[getter]
    fn taken(&self) -> (usize, usize) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (state.cursor, state.not_fitting)
    }

    /// Simulate the plans `indices` in parallel, each exactly as run_training alone.
    fn simulate(&self, py: Python<'_>, indices: Vec<usize>) -> PyResult<Simulated> {
        self.check(&indices)?;
        let plans: Vec<_> =
            indices.iter().map(|&i| (self.candidates[i].plan.clone(), self.candidates[i].overlap)).collect();
        let reports = py.detach(|| run_plans_memo(&self.base, &plans, &self.memo));
        let mut out = Simulated::default();
        for r in &reports {
            for (k, _) in r.iter().flat_map(|r| &r.breakdown_s) {
                if !out.parts.contains(k) {
                    out.parts.push(k.clone());
                }
            }
        }
        for r in reports {
            match r {
                Ok(r) => {
                    out.iteration_s.push(r.iteration_s);
                    out.tokens_per_s.push(r.tokens_per_s);
                    out.mfu.push(r.mfu);
                    let part = |k: &String| r.breakdown_s.iter().find(|(p, _)| p == k).map_or(0.0, |(_, v)| *v);
                    out.breakdown_s.push(out.parts.iter().map(part).collect());
                    out.error.push(None);
                }
                Err(e) if e.is_internal() => return Err(EngineInternalError::new_err(e.to_string())),
                Err(e) => {
                    out.iteration_s.push(f64::NAN);
                    out.tokens_per_s.push(f64::NAN);
                    out.mfu.push(f64::NAN);
                    out.breakdown_s.push(vec![0.0; out.parts.len()]);
                    out.error.push(Some(e.to_string()));
                }
            }
        }
        Ok(out)
    }
}

impl PlanSearch {
    /// Plan `i`'s memory per GPU, worked out once.
    fn memory<'s>(&self, state: &'s mut State, i: usize) -> &'s Memory {
        state
            .memory
            .entry(i)
            .or_insert_with(|| memory(&self.base.model, &self.candidates[i].plan, self.base.flash_attention))
    }

    fn check(&self, indices: &[usize]) -> PyResult<()> {
        match indices.iter().find(|&&i| i >= self.candidates.len()) {
            Some(i) => Err(EngineInputError::new_err(format!("plan search: no plan {i} of {}", self.candidates.len()))),
            None => Ok(()),
        }
    }
}

/// Simulated plans, in the order asked: iteration_s, tokens_per_s, mfu, per plan the seconds of
/// each breakdown part (`parts`, train's names), and why a plan failed (None when it ran).
#[pyclass(name = "Simulated", module = "clustersim._engine", frozen, get_all)]
#[derive(Default)]
pub struct Simulated {
    iteration_s: Vec<f64>,
    tokens_per_s: Vec<f64>,
    mfu: Vec<f64>,
    parts: Vec<String>,
    breakdown_s: Vec<Vec<f64>>,
    error: Vec<Option<String>>,
}
