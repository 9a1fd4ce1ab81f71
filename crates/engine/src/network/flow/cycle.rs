//! Fast-forwarding a repeated batch *in company*: the runs of a ring that shares its links with
//! long flows of others (a workload graph's reads of remote memory).
//!
//! A parked batch (`mod.rs`) must have its links to itself. Here it need not: suppose a run of
//! batch b, from t₀ to t₁ = t₀ + d, saw no event but its own flows' starts and ends, and every
//! other active flow (its company C) was active throughout. Then the state at t₁ — b re-armed,
//! C active at the max-min rates of C alone — equals the state at t₀ except for C's remaining
//! bytes, and max-min rates do not depend on remaining bytes. So the next run replays this one
//! exactly, for as long as no flow of C ends: each run moves m_f = ∫_{t₀}^{t₁} r_f dt of each
//! f ∈ C. With rem_f left at t₁, f ends in run j_f = ⌊rem_f / m_f⌋ (from 0) at the offset τ_f
//! where ∫_0^{τ_f} r_f = rem_f − j_f·m_f. If no flow of C ends before the batch's K runs left
//! are done, all K replay with no event: at t₁ + K·d the state is that of t₁ with rem_f − K·m_f,
//! and the simulation goes on event by event. Else the replay is cut where the first flow of C
//! ends, t₁ + min_f (j_f·d + τ_f), and the state there is rebuilt as for a newcomer (below), the
//! flows of C that end then with nothing left: the runs before a company flow's end cost no
//! event either (a collective's steps that wait their latency before moving are two instants a
//! run, so every run not replayed costs two re-solves).
//!
//! The check is global (every active flow is in C or b), so no flow anywhere can move while the
//! system replays: a flow that starts meanwhile resumes it first, at its exact state — j runs
//! done, at offset τ into the next, with b's flows waiting, done or active, C's flows with
//! rem_f − j·m_f − ∫_0^τ r_f left, integrated from the rates recorded during the run — and the
//! re-solve then treats all of them as new.
//!
//! *Recall.* A run that repeated is kept under what it depends on: the batch's flows (links,
//! bytes, wait, ceiling) and its company's (links, ceiling; sorted, as flows that cannot be told
//! apart get the same max-min rate), not their remaining bytes. When a batch starts a run at the
//! instant last processed — its first run included — in a company met before, at the same
//! rates, the kept run replays at once, as if this run had been recorded: a workload graph's
//! all-reduces of one size meet the same reads layer after layer, and after a cut the company
//! left is often one seen before. One more condition keeps it exact as the simulation has it:
//! events within a relative window of the time are one instant (`mod.rs`), so a run is cut
//! into the same instants later only if its widest instant still fits the window at its start
//! and its narrowest gap between instants still exceeds it at its end. A run that would meet a
//! parked batch is run instead, and the company's batches are marked as met, as its flows
//! would have marked them.

use std::rc::Rc;

use super::{FlowSim, Kind, State, MAX_RECORD};

/// Rates this close at the start of two runs are the same allocation (rounding aside).
const SAME_RATE: f64 = 1e-12;

/// A run of batch `batch` that may turn out to repeat.
pub(super) struct Candidate {
    batch: u32,
    run_start: f64,
    /// The batch's flows, then every other active flow when the run started.
    flows: Vec<u32>,
    company: usize,
    /// (offset into the run, rate of each of `flows`) at its start and at every change.
    record: Vec<(f64, Box<[f64]>)>,
    /// No event but the batch's own so far.
    quiet: bool,
    /// What the run depends on ([`FlowSim::run_key`]).
    key: RunKey,
    /// Widest span of event times one instant of it took, narrowest gap to the event after one.
    spread: f64,
    gap: f64,
}

/// A run that repeated in company, kept for when the same batch starts a run in the same
/// company again (`key`): its duration, record (company columns in key order) and the offset
/// at which each flow of the batch finished.
pub(super) struct Memo {
    key: RunKey,
    d: f64,
    spread: f64,
    gap: f64,
    record: Rc<Record>,
    finish_off: Vec<f64>,
}

/// (Offset into the run, rate of each flow) at its start and at every change.
type Record = Vec<(f64, Box<[f64]>)>;

/// What a run depends on, as words ([`FlowSim::run_key`]): its batch's part (the same for every
/// run of the batch, so made once), that part's hash, and its company's.
#[derive(Clone, PartialEq)]
pub(super) struct RunKey {
    batch: Rc<[u64]>,
    batch_hash: u64,
    company: Vec<u64>,
}

impl RunKey {
    fn hash(&self) -> u64 {
        self.company.iter().fold(self.batch_hash, |h, &w| mix(h, w))
    }
}

/// Most rates the memos may hold together (8 bytes each); past it they are all dropped.
const MEMO_RATES: usize = 1 << 23;

/// A system replaying runs of one batch from `start` (see the module doc).
pub(super) struct Replay {
    batch: u32,
    start: f64,
    d: f64,
    /// Runs it covers; when `cut`, it ends during the last of them, where a company flow ends.
    runs: u32,
    pub(super) cut: bool,
    flows: Vec<u32>,
    company: usize,
    record: Rc<Record>,
    /// Per company flow: bytes left at `start`, bytes moved per run.
    rem: Vec<f64>,
    per_run: Vec<f64>,
    pub(super) ver: u32,
}

/// The offset into a run of duration `d` at which flow `k` of a record has moved `bytes`, if it
/// does within the run.
fn offset_of(record: &[(f64, Box<[f64]>)], k: usize, d: f64, bytes: f64) -> Option<f64> {
    let mut moved = 0.0;
    for (r, (off, rates)) in record.iter().enumerate() {
        let end = record.get(r + 1).map_or(d, |n| n.0);
        let step = rates[k] * (end - off);
        if rates[k] > 0.0 && moved + step >= bytes {
            return Some(off + ((bytes - moved) / rates[k]).max(0.0));
        }
        moved += step;
    }
    None
}

/// Rates of two records' rows equal up to rounding: the same allocation.
fn same_rates(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(&a, &b)| a == b || (a - b).abs() <= SAME_RATE * a.abs().max(b.abs()))
}

/// One word mixed into a hash (as [`crate::int_hash`] does).
fn mix(h: u64, w: u64) -> u64 {
    (h.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

/// Bytes flow `k` of a record moves in its first `tau` ns, and its rate at `tau`.
fn integrate(record: &[(f64, Box<[f64]>)], k: usize, tau: f64) -> (f64, f64) {
    let mut moved = 0.0;
    let mut rate = 0.0;
    for (r, (off, rates)) in record.iter().enumerate() {
        if *off > tau {
            break;
        }
        let end = record.get(r + 1).map_or(tau, |n| n.0).min(tau);
        moved += rates[k] * (end - off);
        rate = rates[k];
    }
    (moved, rate)
}

impl FlowSim {
    fn current_rates(&self, flows: &[u32]) -> Box<[f64]> {
        flows
            .iter()
            .map(|&g| if self.state[g as usize] == State::Active { self.rate[g as usize] } else { 0.0 })
            .collect()
    }

    /// A flow or batch event not of the candidate's batch: its run is not quiet.
    pub(super) fn note_event(&mut self, batch: u32) {
        if let Some(c) = &mut self.candidate {
            if c.batch != batch {
                c.quiet = false;
            }
        }
    }

    /// Batch `b` ends or parks alone: a run of it is no candidate (its id may come back).
    pub(super) fn forget_candidate(&mut self, batch: u32) {
        if self.candidate.as_ref().is_some_and(|c| c.batch == batch) {
            self.candidate = None;
        }
    }

    /// After the solve of each instant: extend the candidate's record; when its batch's run
    /// ended quietly with the same rates it started with, replay; else start a new candidate.
    pub(super) fn watch_cycle(&mut self, now: f64, spread: f64, gap: f64) {
        let ended = self.run_ended.take();
        if !self.fast_forward || self.replay.is_some() {
            self.candidate = None;
            return;
        }
        if let Some(c) = &mut self.candidate {
            c.spread = c.spread.max(spread);
            c.gap = c.gap.min(gap);
        }
        let Some(b) = ended else {
            let Some(mut c) = self.candidate.take().filter(|c| c.quiet) else { return };
            let rates = self.current_rates(&c.flows);
            if c.record.last().is_some_and(|r| r.1 != rates) {
                if c.record.len() >= MAX_RECORD {
                    return;
                }
                c.record.push((now - c.run_start, rates));
            }
            self.candidate = Some(c);
            return;
        };
        let bt = &self.batches[b as usize];
        if !bt.live || bt.park.is_some() || bt.run_start != now {
            self.candidate = None;
            return;
        }
        if let Some(c) = self.candidate.take() {
            if c.quiet && c.batch == b && now > c.run_start && self.try_replay(c, now) {
                return;
            }
        }
        self.watch_run(b, now);
    }

    /// Batch `b` was armed at `now` (its flows waiting, every other rate solved): its run is the
    /// candidate, unless it is its last or a quiet candidate is already under way.
    pub(super) fn watch_run(&mut self, b: u32, now: f64) {
        if !self.fast_forward || self.replay.is_some() || self.batches[b as usize].runs_left < 2 {
            return;
        }
        if self.candidate.as_ref().is_some_and(|c| c.quiet && c.batch != b) {
            return;
        }
        let mut flows = self.batches[b as usize].flows.clone();
        let company = flows.len();
        let mut others: Vec<u32> = (0..self.path.len() as u32)
            .filter(|&g| self.state[g as usize] == State::Active && self.batch_of[g as usize] != b)
            .collect();
        others.sort_by(|&x, &y| {
            let (x, y) = (x as usize, y as usize);
            self.path[x].cmp(&self.path[y]).then(self.ceil[x].total_cmp(&self.ceil[y]))
        });
        flows.extend(others);
        let key = self.run_key(b, &flows[company..]);
        let rates = self.current_rates(&flows);
        let record = vec![(0.0, rates)];
        let c = Candidate {
            batch: b,
            run_start: now,
            flows,
            company,
            record,
            quiet: true,
            key,
            spread: 0.0,
            gap: f64::INFINITY,
        };
        self.candidate = self.recall(c, now);
    }

    /// What a run of batch `b` in company `others` depends on, as words: each flow of the batch
    /// (links, bytes, wait, ceiling), then each company flow (links, ceiling) in the order given
    /// (sorted, so that flows that cannot be told apart are interchangeable). Remaining bytes
    /// are not in it: max-min rates do not depend on them.
    fn run_key(&mut self, b: u32, others: &[u32]) -> RunKey {
        let words = |sim: &FlowSim, g: u32, key: &mut Vec<u64>| {
            let i = g as usize;
            key.push(sim.path[i].len() as u64);
            key.extend(sim.path[i].iter().map(|&l| l as u64));
            key.push(sim.ceil[i].to_bits());
        };
        let (batch, batch_hash) = match &self.batches[b as usize].key {
            Some(k) => k.clone(),
            None => {
                let mut key = Vec::with_capacity(self.batches[b as usize].flows.len() * 6);
                for &g in &self.batches[b as usize].flows {
                    words(self, g, &mut key);
                    key.extend([self.bytes[g as usize].to_bits(), self.lat[g as usize].to_bits()]);
                }
                let hash = key.iter().fold(0, |h, &w| mix(h, w));
                let k: (Rc<[u64]>, u64) = (key.into(), hash);
                self.batches[b as usize].key = Some(k.clone());
                k
            }
        };
        let mut company = Vec::with_capacity(others.len() * 4);
        for &g in others {
            words(self, g, &mut company);
        }
        RunKey { batch, batch_hash, company }
    }

    /// A candidate whose run was seen to repeat before, in the same company at the same rates,
    /// replays now without being run; otherwise it is returned to be watched.
    fn recall(&mut self, c: Candidate, now: f64) -> Option<Candidate> {
        // A replay starts at the instant last processed, never ahead of it (a batch added for
        // later may be followed by one added for sooner).
        if !self.recall || now != self.time {
            return Some(c);
        }
        let hash = c.key.hash();
        let Some(m) = self.memo.get(&hash).filter(|m| m.key == c.key) else { return Some(c) };
        // Events are taken together within a window relative to the time (`mod.rs`): the run
        // is cut into the same instants now only if its widest instant still fits the window
        // at its start and its narrowest gap still exceeds it at its end.
        let w = self.coalesce;
        let same_instants = m.spread <= w * now && m.gap > w * (now + m.d);
        if !same_instants || !same_rates(&c.record[0].1, &m.record[0].1) {
            return Some(c);
        }
        // The run would meet a parked batch (and resume it) on its links: run it.
        let parked = c.flows[..c.company].iter().any(|&g| {
            self.path[g as usize]
                .iter()
                .any(|&l| self.link_batches[l as usize].iter().any(|&(bg, _)| self.batches[bg as usize].park.is_some()))
        });
        if parked {
            return Some(c);
        }
        // As the run's flows would have, they meet their company's batches: none runs clean.
        for &g in &c.flows[c.company..] {
            self.batches[self.batch_of[g as usize] as usize].clean = false;
        }
        let (d, record, finish_off) = (m.d, m.record.clone(), m.finish_off.clone());
        let b = c.batch as usize;
        let saved = std::mem::replace(&mut self.batches[b].finish_off, finish_off);
        let c = self.start_replay(c, record, d, now)?;
        self.batches[b].finish_off = saved;
        Some(Candidate { record: vec![(0.0, self.current_rates(&c.flows))], ..c })
    }

    /// Keep the run of candidate `c`, of duration `d`, for [`FlowSim::recall`].
    fn remember(&mut self, c: &Candidate, record: Rc<Record>, d: f64) {
        let size = record.len() * c.flows.len();
        self.memo_rates += size;
        if self.memo_rates > MEMO_RATES {
            self.memo.clear();
            self.memo_rates = size;
        }
        let finish_off = self.batches[c.batch as usize].finish_off.clone();
        let (spread, gap) = (c.spread, c.gap);
        let m = Memo { key: c.key.clone(), d, spread, gap, record, finish_off };
        self.memo.insert(c.key.hash(), m);
    }

    /// Replay the runs after the candidate's one, if its end state is its start state.
    fn try_replay(&mut self, mut c: Candidate, now: f64) -> bool {
        if !same_rates(&self.current_rates(&c.flows), &c.record[0].1) {
            return false;
        }
        let d = now - c.run_start;
        let record = Rc::new(std::mem::take(&mut c.record));
        if c.flows[c.company..].iter().all(|&g| self.state[g as usize] == State::Active) {
            self.remember(&c, record.clone(), d);
        }
        self.start_replay(c, record, d, now).is_none()
    }

    /// Replay runs of duration `d` of candidate `c`'s batch from `now`, a run's start, as
    /// `record` has them; the candidate back if there is nothing to replay.
    fn start_replay(&mut self, c: Candidate, record: Rc<Record>, d: f64, now: f64) -> Option<Candidate> {
        if c.flows[c.company..].iter().any(|&g| self.state[g as usize] != State::Active) {
            return Some(c);
        }
        let runs_left = self.batches[c.batch as usize].runs_left;
        // Offset of the replay's end: the batch's last run, or the first end of a company flow.
        let mut end = runs_left as f64 * d;
        let mut rem = Vec::with_capacity(c.flows.len() - c.company);
        let mut per_run = Vec::with_capacity(rem.capacity());
        for (k, &g) in c.flows.iter().enumerate().skip(c.company) {
            let i = g as usize;
            let left = (self.rem[i] - self.rate[i] * (now - self.upd[i])).max(0.0);
            let m = integrate(&record, k, d).0;
            let j = if m > 0.0 { (left / m).floor() } else { f64::INFINITY };
            if j < runs_left as f64 {
                // Rounding may leave it a hair short of the bytes in run j: it ends with it.
                end = end.min(j * d + offset_of(&record, k, d, left - j * m).unwrap_or(d));
            }
            rem.push(left);
            per_run.push(m);
        }
        if end <= 0.0 {
            return Some(c);
        }
        let cut = end < runs_left as f64 * d;
        let runs = if cut { ((end / d).floor() as u32 + 1).min(runs_left) } else { runs_left };
        // The batch's flows leave their links and wait for nothing, the company's finish
        // events are void: all are rebuilt when the replay ends or is interrupted.
        for &g in &c.flows[..c.company] {
            let i = g as usize;
            if self.state[i] == State::Active {
                self.detach(g, false);
                self.set_bneck(i, super::NO_LINK);
                self.active -= 1;
            }
            self.state[i] = State::Waiting;
            self.rate[i] = 0.0;
        }
        for &g in &c.flows {
            self.ver[g as usize] = self.ver[g as usize].wrapping_add(1);
        }
        for (k, &g) in c.flows[c.company..].iter().enumerate() {
            self.rem[g as usize] = rem[k];
            self.upd[g as usize] = now;
        }
        self.replay_ver = self.replay_ver.wrapping_add(1);
        let ver = self.replay_ver;
        self.replay = Some(Replay {
            batch: c.batch,
            start: now,
            d,
            runs,
            cut,
            flows: c.flows,
            company: c.company,
            record,
            rem,
            per_run,
            ver,
        });
        self.push(if cut { now + end } else { now + runs as f64 * d }, Kind::ReplayEnd, 0, ver);
        None
    }

    /// Fresh finish events for active flows `flows` at their current rates.
    fn schedule_finishes(&mut self, now: f64, flows: &[u32]) {
        let mut due = Vec::with_capacity(flows.len());
        for &g in flows {
            let i = g as usize;
            self.ver[i] = self.ver[i].wrapping_add(1);
            if self.rate[i] > 0.0 {
                due.push((now + self.rem[i] / self.rate[i], g, self.ver[i]));
            }
        }
        self.push_flows(Kind::Finish, &mut due);
    }

    /// The replay's runs are all done at `now`: the state of its start, K runs on.
    pub(super) fn end_replay(&mut self, now: f64, finished: &mut Vec<(u64, f64)>) {
        let p = self.replay.take().expect("a replay to end");

        let company = &p.flows[p.company..];
        for (k, &g) in company.iter().enumerate() {
            let i = g as usize;
            self.rem[i] = (p.rem[k] - p.runs as f64 * p.per_run[k]).max(0.0);
            self.upd[i] = now;
        }
        self.schedule_finishes(now, company);
        // Their rates are those of a run's start; if the batch is over, they are not: re-solve.
        self.fresh.extend_from_slice(company);
        for &f in &p.flows[..p.company] {
            self.carry(f, p.runs as f64);
        }
        let bt = &mut self.batches[p.batch as usize];
        bt.runs_left -= p.runs;
        if bt.runs_left == 0 {
            self.release(p.batch, now, finished);
        } else {
            self.arm(p.batch, now);
            self.run_ended = Some(p.batch);
        }
    }

    /// Something starts at `now` during a replay, or a company flow ends there (the replay's
    /// cut): rebuild the exact state (see the module doc) and hand every flow of it to the
    /// re-solve as new; a company flow with nothing left finishes at once.
    pub(super) fn interrupt_replay(&mut self, now: f64, finished: &mut Vec<(u64, f64)>) {
        let p = self.replay.take().expect("a replay to interrupt");
        let j = (((now - p.start) / p.d).floor().max(0.0) as u32).min(p.runs - 1);
        let start = p.start + j as f64 * p.d;
        let tau = now - start;
        for (k, &g) in p.flows.iter().enumerate().skip(p.company) {
            let i = g as usize;
            let (moved, rate) = integrate(&p.record, k, tau);
            let c = k - p.company;
            self.rem[i] = (p.rem[c] - j as f64 * p.per_run[c] - moved).max(0.0);
            self.upd[i] = now;
            self.rate[i] = rate;
            for &l in self.path[i].iter() {
                self.link_stat[l as usize].0 = false;
            }
            self.fresh.push(g);
        }
        let company: Vec<u32> = p.flows[p.company..].to_vec();
        self.schedule_finishes(now, &company);
        let b = p.batch as usize;
        let finish_off = self.batches[b].finish_off.clone();
        let bt = &mut self.batches[b];
        bt.runs_left -= j;
        bt.run_start = start;
        bt.clean = false;
        bt.record_ok = false;
        let mut pending = 0;
        let mut due = Vec::new();
        for (k, &f) in p.flows[..p.company].iter().enumerate() {
            let i = f as usize;
            self.carry(f, j as f64);
            self.ver[i] = self.ver[i].wrapping_add(1);
            self.upd[i] = now;
            self.rate[i] = 0.0;
            if tau >= finish_off[k] {
                self.state[i] = State::Done;
                self.rem[i] = 0.0;
                self.carry(f, 1.0);
                continue;
            }
            pending += 1;
            if tau < self.lat[i] {
                self.state[i] = State::Waiting;
                self.rem[i] = self.bytes[i];
                due.push((start + self.lat[i], f, self.ver[i]));
                continue;
            }
            self.rem[i] = (self.bytes[i] - integrate(&p.record, k, tau).0).max(0.0);
            self.state[i] = State::Active;
            self.attach(f);
        }
        self.push_flows(Kind::Activate, &mut due);
        self.batches[b].pending = pending;
        if pending == 0 {
            self.run_end(p.batch, now, finished);
        }
    }
}
