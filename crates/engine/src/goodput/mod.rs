//! Goodput of a long synchronous training run: failures interrupt it, work since the last
//! checkpoint is lost, the job restarts. A seeded Monte Carlo over the run ([`simulate`]) and the
//! closed forms it must agree with ([`closed_form`]).
//!
//! The model (times in seconds of wall clock):
//! - The job trains in cycles of `interval_s` of training followed by a blocking checkpoint write
//!   of `checkpoint_s` ([`checkpoint_bytes`] over the storage bandwidth). The last cycle of a
//!   token budget is as long as what is left of it and is saved too.
//! - Interruptions arrive as a Poisson process on the wall clock (parts fail whether or not the
//!   job is running), cause `i` at `rates_per_s[i]`; an interruption's cause is drawn in
//!   proportion to its rate. A `swap` cause takes a server out for `repair_s` and a spare server
//!   replaces it; with none free the job waits for the first server back from repair. A
//!   `restart` cause restarts on the same servers. Either loses the training since the last
//!   completed checkpoint, then costs `restart_s` (relaunch, NCCL initialisation) and `restore_s`
//!   (reading the checkpoint) before training resumes. A `planned` stop saves a checkpoint first
//!   (`checkpoint_s`) and loses nothing. An interruption during a restart begins it again.
//! - Effective training time (goodput) is the training kept (not lost) over the wall clock, as
//!   the Llama 3 paper's "effective training time"; checkpoint writes, lost work, waiting for a
//!   spare, restarts and restores are what it loses.
//!
//! Each trial draws from its own SplitMix64 stream, seeded by (seed, trial): the same inputs give
//! the same numbers bit for bit, and the failure times of a trial do not depend on the
//! checkpoint interval (common random numbers across an interval sweep).

pub mod closed_form;

use crate::catalog::failures::Effect;
use crate::error::{InputError, Result};
use crate::random::Stream;
use crate::training::memory::{OPTIMIZER_BYTES, WEIGHT_BYTES};

/// Bytes of a checkpoint of `params` parameters: the bf16 weights and Adam's fp32 state (main
/// weights, momentum, variance) — what Megatron-Core saves, the gradients excepted.
pub fn checkpoint_bytes(params: u64) -> f64 {
    params as f64 * (WEIGHT_BYTES + OPTIMIZER_BYTES)
}

/// One cause of interruptions of the job: its name (for errors), effect and rate.
#[derive(Debug, Clone, PartialEq)]
pub struct JobCause {
    pub name: String,
    pub effect: Effect,
    /// Interruptions per second of wall clock, for this job.
    pub rate_per_s: f64,
}

/// A run to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub causes: Vec<JobCause>,
    /// Training time between checkpoints.
    pub interval_s: f64,
    /// A checkpoint's blocking write.
    pub checkpoint_s: f64,
    /// Relaunch and re-initialisation after an interruption.
    pub restart_s: f64,
    /// Reading the checkpoint back.
    pub restore_s: f64,
    /// Spare servers; None: always one free.
    pub spare_servers: Option<u64>,
    /// How long a server is away for repair after a `swap` cause.
    pub repair_s: f64,
    /// Wall time watched: the run stops there (infinite: at the end of `work_s`).
    pub window_s: f64,
    /// Training time to do (a token budget over the tokens per second; infinite: the window).
    pub work_s: f64,
    pub trials: u32,
    pub seed: u64,
}

/// The most wall time a run to a budget may take, in multiples of the budget: past it the run
/// is reported as not finishing (goodput under 1 %).
pub const MAX_STRETCH: f64 = 100.0;

impl Run {
    /// Every field checked; the error names the field.
    pub fn check(&self) -> Result<()> {
        let at = |field: &str, m: String| Err(InputError::field("goodput", field, m));
        for c in &self.causes {
            if !(c.rate_per_s >= 0.0 && c.rate_per_s.is_finite()) {
                return at(&format!("rate of {}", c.name), format!("must be a number ≥ 0, got {}", c.rate_per_s));
            }
        }
        if !(self.interval_s > 0.0 && self.interval_s.is_finite()) {
            return at("checkpoint_interval_s", format!("must be > 0, got {}", self.interval_s));
        }
        for (field, v) in [
            ("checkpoint_s", self.checkpoint_s),
            ("restart_s", self.restart_s),
            ("restore_s", self.restore_s),
            ("repair_s", self.repair_s),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return at(field, format!("must be a number ≥ 0, got {v}"));
            }
        }
        if self.window_s.is_nan() || self.window_s <= 0.0 {
            return at("days", format!("must be > 0, got {} s", self.window_s));
        }
        if self.work_s.is_nan() || self.work_s <= 0.0 {
            return at("tokens", format!("must give > 0 s of training, got {} s", self.work_s));
        }
        if self.window_s.is_infinite() && self.work_s.is_infinite() {
            return at("days", "give a window (days) or a token budget (tokens)".into());
        }
        if self.trials == 0 {
            return at("trials", "must be ≥ 1".into());
        }
        Ok(())
    }

    /// Interruptions per second, all causes.
    pub fn rate_per_s(&self) -> f64 {
        self.causes.iter().map(|c| c.rate_per_s).sum()
    }
}

/// One interruption of a trial's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When it happened.
    pub at_s: f64,
    /// Index into [`Run::causes`].
    pub cause: usize,
    /// Training lost (since the last checkpoint), with the unfinished write.
    pub lost_s: f64,
    /// Training kept so far.
    pub work_s: f64,
}

/// Mean, standard deviation and percentiles of a quantity over the trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub std: f64,
    pub p5: f64,
    pub p50: f64,
    pub p95: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0).max(1.0);
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        // Nearest rank.
        let q = |p: f64| sorted[((p * n).ceil() as usize).clamp(1, sorted.len()) - 1];
        Spread { mean, std: var.sqrt(), p5: q(0.05), p50: q(0.5), p95: q(0.95) }
    }

    /// The standard error of the mean.
    pub fn sem(&self, trials: usize) -> f64 {
        self.std / (trials as f64).sqrt()
    }
}

/// Every trial's outcome.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trials {
    /// Wall time: to the end of the budget, or the window.
    pub wall_s: Vec<f64>,
    /// Training kept.
    pub work_s: Vec<f64>,
    pub interruptions: Vec<f64>,
    /// Training lost to interruptions.
    pub lost_s: Vec<f64>,
    /// Checkpoint writes (the planned stops' included).
    pub checkpoint_s: Vec<f64>,
    /// Waiting for a spare server.
    pub wait_s: Vec<f64>,
    /// Restarts and restores (and the window's end, if it falls in one).
    pub restart_s: Vec<f64>,
    /// Interruptions per cause, all trials together.
    pub by_cause: Vec<u64>,
    /// Trials that did not finish their budget within [`MAX_STRETCH`] × the budget.
    pub unfinished: u32,
}

impl Trials {
    /// Effective training time of each trial: training kept over wall time.
    pub fn goodput(&self) -> Vec<f64> {
        self.work_s.iter().zip(&self.wall_s).map(|(w, t)| w / t).collect()
    }
}

/// Simulate every trial of `run`.
pub fn simulate(run: &Run) -> Result<Trials> {
    run.check()?;
    let n = run.trials as usize;
    let mut out = Trials { by_cause: vec![0; run.causes.len()], ..Trials::default() };
    for v in [
        &mut out.wall_s,
        &mut out.work_s,
        &mut out.interruptions,
        &mut out.lost_s,
        &mut out.checkpoint_s,
        &mut out.wait_s,
        &mut out.restart_s,
    ] {
        v.reserve(n);
    }
    let cumulative = cumulative(run);
    for trial in 0..n {
        let t = trial_outcome(run, &cumulative, trial as u64, &mut out.by_cause, None);
        out.wall_s.push(t.wall);
        out.work_s.push(t.work);
        out.interruptions.push(t.interruptions as f64);
        out.lost_s.push(t.lost);
        out.checkpoint_s.push(t.checkpoint);
        out.wait_s.push(t.wait);
        out.restart_s.push(t.wall - t.work - t.lost - t.checkpoint - t.wait);
        out.unfinished += t.unfinished as u32;
    }
    Ok(out)
}

/// Trial `trial`'s interruptions, in order.
pub fn timeline(run: &Run, trial: u64) -> Result<Vec<Event>> {
    run.check()?;
    let mut events = Vec::new();
    let mut by_cause = vec![0; run.causes.len()];
    trial_outcome(run, &cumulative(run), trial, &mut by_cause, Some(&mut events));
    Ok(events)
}

fn cumulative(run: &Run) -> Vec<f64> {
    run.causes
        .iter()
        .scan(0.0, |sum, c| {
            *sum += c.rate_per_s;
            Some(*sum)
        })
        .collect()
}

#[derive(Default)]
struct Outcome {
    wall: f64,
    work: f64,
    interruptions: u64,
    lost: f64,
    checkpoint: f64,
    wait: f64,
    unfinished: bool,
}

fn trial_outcome(
    run: &Run,
    cumulative: &[f64],
    trial: u64,
    by_cause: &mut [u64],
    mut events: Option<&mut Vec<Event>>,
) -> Outcome {
    let rate = cumulative.last().copied().unwrap_or(0.0);
    let (tau, delta) = (run.interval_s, run.checkpoint_s);
    let cycle = tau + delta;
    let resume = run.restart_s + run.restore_s;
    let limit = run.window_s.min(run.work_s * MAX_STRETCH);
    let mut rng = Stream::new(run.seed, trial);
    let mut o = Outcome::default();
    let mut next_failure = rng.exp(rate);
    // When training resumes; when the servers the job needs are all there.
    let (mut ready, mut servers_at) = (0.0_f64, 0.0_f64);
    let mut free_spares = run.spare_servers.unwrap_or(0);
    // Servers in repair: when each comes back.
    let mut in_repair: Vec<f64> = Vec::new();
    loop {
        if next_failure < ready && next_failure < limit {
            // During a restart or a wait: begin the restart again once the servers are back.
        } else {
            if ready >= limit {
                o.wall = limit;
                break;
            }
            let left = run.work_s - o.work;
            // Cycles left (the last one may be short); the budget is a multiple of τ up to rounding.
            let cycles = if left.is_finite() { (left / tau - 1e-9).ceil().max(1.0) } else { f64::INFINITY };
            let finish = ready + left + delta * cycles;
            let stop = next_failure.min(limit);
            if finish <= stop {
                o.wall = finish;
                o.work = run.work_s;
                o.checkpoint += delta * cycles;
                break;
            }
            let x = stop - ready;
            let k = (x / cycle).floor();
            let open = x - k * cycle;
            o.work += k * tau;
            o.checkpoint += k * delta;
            if next_failure >= limit {
                // The window closes while training: what was trained is kept.
                o.work += open.min(tau);
                o.checkpoint += (open - tau).max(0.0);
                o.wall = limit;
                o.unfinished = run.work_s.is_finite();
                break;
            }
        }
        // An interruption at `next_failure`.
        let now = next_failure;
        let u = rng.unit() * rate;
        let cause = cumulative.partition_point(|&c| c < u).min(cumulative.len() - 1);
        by_cause[cause] += 1;
        o.interruptions += 1;
        let running = now >= ready;
        let mut lost = 0.0;
        if running {
            let open = (now - ready) % cycle;
            match run.causes[cause].effect {
                Effect::Planned => {
                    // Save, then stop: the open training is kept, its write paid.
                    o.work += open.min(tau);
                    o.checkpoint += (open - tau).max(0.0) + delta;
                }
                _ => lost = open,
            }
        }
        o.lost += lost;
        if let Some(ev) = events.as_deref_mut() {
            ev.push(Event { at_s: now, cause, lost_s: lost, work_s: o.work });
        }
        let save = if running && run.causes[cause].effect == Effect::Planned { delta } else { 0.0 };
        if run.causes[cause].effect == Effect::Swap && run.spare_servers.is_some() {
            // Servers back from repair become spares again.
            in_repair.retain(|&back| {
                if back <= now {
                    free_spares += 1;
                }
                back > now
            });
            in_repair.push(now + run.repair_s);
            let replaced_at = if free_spares > 0 {
                free_spares -= 1;
                now
            } else {
                // The first server back replaces the failed one.
                let (i, &back) = in_repair.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)).expect("one in repair");
                in_repair.swap_remove(i);
                back
            };
            let was = servers_at.max(now);
            servers_at = servers_at.max(replaced_at);
            o.wait += servers_at - was;
        }
        let begin = servers_at.max(now + save);
        ready = begin + resume;
        next_failure = now + rng.exp(rate);
    }
    // Waiting past the window's end is no wait of this window.
    if o.wall < servers_at {
        o.wait -= servers_at - o.wall;
        o.wait = o.wait.max(0.0);
    }
    o
}

/// Goodput over the trials for each checkpoint interval of `intervals_s` (the same failures in
/// each: common random numbers).
pub fn interval_sweep(run: &Run, intervals_s: &[f64]) -> Result<Vec<Spread>> {
    intervals_s
        .iter()
        .map(|&interval_s| Ok(Spread::of(&simulate(&Run { interval_s, ..run.clone() })?.goodput())))
        .collect()
}

/// The interval of best simulated goodput: the vertex of the parabola in ln(interval) through
/// the best point of `intervals_s` (ascending) and its two neighbours; the best point itself at
/// either end of the grid.
pub fn best_interval(intervals_s: &[f64], goodput: &[f64]) -> f64 {
    let best = (0..goodput.len()).max_by(|&a, &b| goodput[a].total_cmp(&goodput[b])).unwrap_or(0);
    if best == 0 || best + 1 >= goodput.len() {
        return intervals_s[best];
    }
    let x: Vec<f64> = intervals_s[best - 1..=best + 1].iter().map(|t| t.ln()).collect();
    let y = &goodput[best - 1..=best + 1];
    // Vertex of the parabola through three points.
    let d1 = (y[1] - y[0]) / (x[1] - x[0]);
    let d2 = (y[2] - y[1]) / (x[2] - x[1]);
    let a = (d2 - d1) / (x[2] - x[0]);
    if a >= 0.0 {
        return intervals_s[best];
    }
    let vertex = (x[0] + x[1]) / 2.0 - d1 / (2.0 * a);
    vertex.clamp(x[0], x[2]).exp()
}

#[cfg(test)]
mod tests;
