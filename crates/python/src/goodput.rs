//! Goodput over a long run as Python sees it: the failure catalog's profiles, and the engine's
//! Monte Carlo (`goodput`) behind a `GoodputRun` built from keyword arguments.

use clustersim_engine::catalog::failures::{Cause, Cluster, Effect, Profile};
use clustersim_engine::error::InputError;
use clustersim_engine::goodput::{self, closed_form, JobCause, Run, Spread, Trials};
use numpy::PyArray1;
use pyo3::prelude::*;

use crate::{engine_err, EngineInputError};

/// One cause of interruptions of a failure profile.
#[pyclass(name = "FailureCause", module = "clustersim._engine", frozen, get_all)]
pub struct PyFailureCause {
    name: String,
    label: String,
    category: String,
    /// The part the rate scales with: gpu, server, nic or job.
    per: String,
    /// swap, restart or planned.
    effect: String,
    /// Interruptions per 10⁹ part-hours.
    fit: f64,
    /// Interruptions counted in the observation.
    count: Option<f64>,
}

impl From<&Cause> for PyFailureCause {
    fn from(c: &Cause) -> Self {
        PyFailureCause {
            name: c.name.clone(),
            label: c.label.clone(),
            category: c.category.clone(),
            per: c.per.name().into(),
            effect: c.effect.name().into(),
            fit: c.fit,
            count: c.count,
        }
    }
}

/// A published observation of a job's interruptions.
#[pyclass(name = "FailureProfile", module = "clustersim._engine", frozen, get_all)]
pub struct PyFailureProfile {
    name: String,
    source: String,
    gpus: u64,
    servers: u64,
    nics: u64,
    days: f64,
    causes: Vec<Py<PyFailureCause>>,
}

/// The shipped failure profiles (the catalog's failures.yaml), in file order.
#[pyfunction]
pub fn failure_profiles(py: Python<'_>) -> PyResult<Vec<PyFailureProfile>> {
    Profile::shipped()
        .iter()
        .map(|p| {
            Ok(PyFailureProfile {
                name: p.name.clone(),
                source: p.source.clone(),
                gpus: p.observed.gpus,
                servers: p.observed.servers,
                nics: p.observed.nics,
                days: p.days,
                causes: p.causes.iter().map(|c| Py::new(py, PyFailureCause::from(c))).collect::<PyResult<_>>()?,
            })
        })
        .collect()
}

/// Each cause's interruptions per hour of profile `profile` for a job of `gpus` GPUs,
/// `gpus_per_server` to a server with `nics_per_server` NICs each (in the profile's order);
/// `fits`, one per cause in that order, replaces the profile's rates (FIT).
#[pyfunction]
#[pyo3(signature = (*, profile, gpus, gpus_per_server, nics_per_server, fits = None))]
pub fn failure_rates_per_hour(
    profile: &str,
    gpus: u64,
    gpus_per_server: u64,
    nics_per_server: u64,
    fits: Option<Vec<f64>>,
) -> PyResult<Vec<f64>> {
    let p = Profile::named(profile, "--failures").map_err(engine_err)?;
    let cluster = Cluster::new(gpus, gpus_per_server, nics_per_server);
    let Some(fits) = fits else { return Ok(p.job_rates(&cluster)) };
    if fits.len() != p.causes.len() {
        return Err(engine_err(InputError::internal(
            "goodput binding",
            format!("{} rates for the {} causes of {profile}", fits.len(), p.causes.len()),
        )));
    }
    let mut p = p.clone();
    for (c, fit) in p.causes.iter_mut().zip(fits) {
        c.fit = fit;
    }
    Ok(p.job_rates(&cluster))
}

/// Bytes of a checkpoint of `params` parameters (bf16 weights and Adam's fp32 state).
#[pyfunction]
pub fn checkpoint_bytes(params: u64) -> f64 {
    goodput::checkpoint_bytes(params)
}

/// Daly's closed forms for exponential failures of mean `mtbf_s`: (expected goodput at
/// `interval_s`, Young's interval, Daly's interval, the exact optimum interval).
#[pyfunction]
#[pyo3(signature = (*, interval_s, checkpoint_s, restart_s, mtbf_s))]
pub fn goodput_closed_form(interval_s: f64, checkpoint_s: f64, restart_s: f64, mtbf_s: f64) -> (f64, f64, f64, f64) {
    (
        closed_form::expected_goodput(interval_s, checkpoint_s, restart_s, mtbf_s),
        closed_form::young_interval(checkpoint_s, mtbf_s),
        closed_form::daly_interval(checkpoint_s, mtbf_s),
        closed_form::optimum_interval(checkpoint_s, mtbf_s),
    )
}

/// (mean, std, p5, p50, p95).
type SpreadTuple = (f64, f64, f64, f64, f64);

fn tuple(s: Spread) -> SpreadTuple {
    (s.mean, s.std, s.p5, s.p50, s.p95)
}

/// A run to simulate (`clustersim_engine::goodput::Run`): causes as three lists in one order.
#[pyclass(name = "GoodputRun", module = "clustersim._engine", frozen)]
pub struct PyGoodputRun {
    inner: Run,
}

#[pymethods]
impl PyGoodputRun {
    #[new]
    #[pyo3(signature = (*, names, effects, rates_per_s, interval_s, checkpoint_s, restart_s, restore_s,
        spare_servers, repair_s, window_s, work_s, trials, seed))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        names: Vec<String>,
        effects: Vec<String>,
        rates_per_s: Vec<f64>,
        interval_s: f64,
        checkpoint_s: f64,
        restart_s: f64,
        restore_s: f64,
        spare_servers: Option<u64>,
        repair_s: f64,
        window_s: f64,
        work_s: f64,
        trials: u32,
        seed: u64,
    ) -> PyResult<Self> {
        if names.len() != effects.len() || names.len() != rates_per_s.len() {
            return Err(engine_err(InputError::internal(
                "goodput binding",
                "names, effects and rates differ in length",
            )));
        }
        let mut causes = Vec::with_capacity(names.len());
        for ((name, effect), rate_per_s) in names.into_iter().zip(effects).zip(rates_per_s) {
            let effect = Effect::parse(&effect).ok_or_else(|| {
                engine_err(InputError::field(
                    "goodput",
                    &format!("effect of {name}"),
                    "must be swap, restart or planned",
                ))
            })?;
            causes.push(JobCause { name, effect, rate_per_s });
        }
        let inner = Run {
            causes,
            interval_s,
            checkpoint_s,
            restart_s,
            restore_s,
            spare_servers,
            repair_s,
            window_s,
            work_s,
            trials,
            seed,
        };
        inner.check().map_err(engine_err)?;
        Ok(PyGoodputRun { inner })
    }

    /// Every trial's outcome.
    fn simulate(&self, py: Python<'_>) -> PyResult<PyGoodputTrials> {
        let run = &self.inner;
        py.detach(|| goodput::simulate(run)).map(|inner| PyGoodputTrials { inner }).map_err(engine_err)
    }

    /// Trial `trial`'s interruptions: (at_s, cause index, lost_s, work_s kept so far) each.
    fn timeline(&self, trial: u64) -> PyResult<Vec<(f64, usize, f64, f64)>> {
        let events = goodput::timeline(&self.inner, trial).map_err(engine_err)?;
        Ok(events.into_iter().map(|e| (e.at_s, e.cause, e.lost_s, e.work_s)).collect())
    }

    /// Goodput's spread for each checkpoint interval (the same failures in each).
    fn interval_sweep(&self, py: Python<'_>, intervals_s: Vec<f64>) -> PyResult<Vec<SpreadTuple>> {
        let run = &self.inner;
        let spreads = py.detach(|| goodput::interval_sweep(run, &intervals_s)).map_err(engine_err)?;
        Ok(spreads.into_iter().map(tuple).collect())
    }

    /// Interruptions per second, all causes.
    #[getter]
    fn rate_per_s(&self) -> f64 {
        self.inner.rate_per_s()
    }
}

/// The interval of best goodput: the parabola's vertex (in ln interval) through the best point
/// of a sweep and its neighbours.
#[pyfunction]
pub fn best_interval(intervals_s: Vec<f64>, goodput: Vec<f64>) -> f64 {
    goodput::best_interval(&intervals_s, &goodput)
}

/// Every trial's outcome, one list per quantity.
#[pyclass(name = "GoodputTrials", module = "clustersim._engine", frozen)]
pub struct PyGoodputTrials {
    inner: Trials,
}

#[pymethods]
impl PyGoodputTrials {
    /// Interruptions per cause, all trials together.
    #[getter]
    fn by_cause(&self) -> Vec<u64> {
        self.inner.by_cause.clone()
    }
    /// Trials that did not finish their budget within 100 × the budget.
    #[getter]
    fn unfinished(&self) -> u32 {
        self.inner.unfinished
    }

    /// Every trial's value of a quantity, as a NumPy array: wall_s, work_s, goodput,
    /// interruptions, lost_s, checkpoint_s, wait_s or restart_s.
    fn column<'py>(&self, py: Python<'py>, quantity: &str) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(PyArray1::from_vec(py, self.values(quantity)?))
    }

    /// (mean, std, p5, p50, p95) of a quantity (as `column`).
    fn spread(&self, quantity: &str) -> PyResult<SpreadTuple> {
        Ok(tuple(Spread::of(&self.values(quantity)?)))
    }
}

impl PyGoodputTrials {
    fn values(&self, quantity: &str) -> PyResult<Vec<f64>> {
        let t = &self.inner;
        Ok(match quantity {
            "wall_s" => t.wall_s.clone(),
            "work_s" => t.work_s.clone(),
            "goodput" => t.goodput(),
            "interruptions" => t.interruptions.clone(),
            "lost_s" => t.lost_s.clone(),
            "checkpoint_s" => t.checkpoint_s.clone(),
            "wait_s" => t.wait_s.clone(),
            "restart_s" => t.restart_s.clone(),
            _ => return Err(EngineInputError::new_err(format!("goodput trials: no quantity '{quantity}'"))),
        })
    }
}
