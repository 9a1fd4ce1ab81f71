//! Re-solving the max-min rates after flows start or end, locally where the change stays local.
//!
//! An allocation is max-min fair iff every flow has a bottleneck: a saturated link of its path
//! (Σ_{g∋l} r_g = C_l) on which no flow gets more than it does (Bertsekas & Gallager, §6.5),
//! or its own rate ceiling, which it reaches (a private link it alone crosses).
//! When flows start or end, only flows near them can lose their bottleneck, so the re-solve
//! keeps every other rate fixed and repeats:
//!
//! 1. progressive filling for the free set F on the capacity the fixed flows leave,
//!    R_l = C_l − Σ_{g∋l, g∉F} r_g;
//! 2. the bottleneck test for every flow of F and every fixed flow whose bottleneck (the link
//!    it last passed the test on) changed flows or rates — a fixed flow keeps its rate, so a
//!    change elsewhere on its path cannot take that bottleneck away; a fixed flow that fails
//!    joins F, and so does every fixed flow that out-rates a flow of F that fails, on that
//!    flow's links.
//!
//! When no flow fails, every flow has a bottleneck (the untested ones kept theirs: nothing on
//! it changed), so the rates are the max-min allocation of the whole network. F starts
//! as the flows that just started. After [`MAX_ROUNDS`] rounds, with incremental solving off, or
//! when the flows that just started are half of those in flight (a large collective starting),
//! F is the whole connected component (flows linked by shared links) of the changes.

use std::cmp::Reverse;

use super::{FlowSim, Kind, State, NO_LINK};

/// Relative slack of the bottleneck test: saturated, and no flow larger.
const FAIR_EPS: f64 = 1e-9;
/// A re-solved rate this close to the old one keeps the old one and its finish event.
const RATE_EPS: f64 = 1e-12;
/// Rounds of local repair before re-solving the whole component.
const MAX_ROUNDS: u32 = 8;

impl FlowSim {
    /// New rates after the attaches and detaches since the last solve; finish events for the
    /// flows whose rate changed; rate records for the clean runs they belong to.
    pub(super) fn solve(&mut self, now: f64, finished: &mut Vec<(u64, f64)>) {
        if self.replay.is_some() && !(self.fresh.is_empty() && self.touched.is_empty() && self.to_resume.is_empty()) {
            self.interrupt_replay(now, finished);
        }
        while let Some(b) = self.to_resume.pop() {
            if self.batches[b as usize].park.is_some() {
                self.resume(b, now, finished);
            }
        }
        if self.touched.is_empty() && self.fresh.is_empty() {
            return;
        }
        self.solves += 1;
        let fe = self.next_epoch();
        let mut free = Vec::new();
        for k in 0..self.fresh.len() {
            let f = self.fresh[k] as usize;
            if self.state[f] == State::Active && self.flow_mark[f] != fe {
                self.flow_mark[f] = fe;
                free.push(f as u32);
            }
        }
        self.fresh.clear();
        let mut changed = std::mem::take(&mut self.touched);
        let mut moved = Vec::new();
        let mut round = 0;
        // When the new flows are half of all, repair rounds would re-solve most of it anyway.
        let whole = !self.incremental || 2 * free.len() >= self.active;
        loop {
            if whole || round == MAX_ROUNDS {
                free = self.component(&changed, &free, fe);
                self.fill(&free);
                self.apply(&free, now, &mut changed, &mut moved);
                break;
            }
            if !free.is_empty() {
                self.fill(&free);
                self.apply(&free, now, &mut changed, &mut moved);
            }
            if self.add_failing(&changed, &mut free, fe) == 0 {
                break;
            }
            changed.clear();
            round += 1;
        }
        changed.clear();
        self.touched = changed;
        self.reschedule(now, &moved);
        self.record(now, &moved);
    }

    /// Every active flow connected to the links `changed` or to the flows `free`, marked free.
    fn component(&mut self, changed: &[u32], free: &[u32], fe: u64) -> Vec<u32> {
        let ve = self.next_epoch();
        let mut stack = Vec::new();
        let seeds = changed.iter().chain(free.iter().flat_map(|&f| self.path[f as usize].iter()));
        for &l in seeds {
            if self.link_mark[l as usize] != ve {
                self.link_mark[l as usize] = ve;
                stack.push(l);
            }
        }
        let mut flows = Vec::new();
        while let Some(l) = stack.pop() {
            for p in 0..self.link_flows[l as usize].len() {
                let g = self.link_flows[l as usize][p] as usize;
                if self.state[g] != State::Active || self.seen_mark[g] == ve {
                    continue;
                }
                self.seen_mark[g] = ve;
                self.flow_mark[g] = fe;
                flows.push(g as u32);
                for &l2 in self.path[g].iter() {
                    if self.link_mark[l2 as usize] != ve {
                        self.link_mark[l2 as usize] = ve;
                        stack.push(l2);
                    }
                }
            }
        }
        flows
    }

    /// Progressive filling of the free flows into `next_rate`, on the capacity the
    /// other active flows leave. The free flows of each link are gathered once (so freezing a
    /// link reads only its free flows, not every flow on it), and links wait in a min-heap keyed
    /// by their fair share R_l / n_l. Freezing a flow at the smallest share s never lowers
    /// another link's share (R/n ≥ s gives (R − s)/(n − 1) ≥ R/n), so keys are lower bounds:
    /// an entry whose share has grown since it was pushed goes back with the new one when it
    /// comes to the top, and one still current is the smallest share of all.
    fn fill(&mut self, free: &[u32]) {
        let le = self.next_epoch();
        let mut links = std::mem::take(&mut self.fill_links);
        links.clear();
        for &f in free {
            for &l in self.path[f as usize].iter() {
                let l = l as usize;
                if self.link_mark[l] != le {
                    self.link_mark[l] = le;
                    self.link_ix[l] = links.len() as u32;
                    links.push(l as u32);
                    self.nun[l] = 0;
                }
                self.nun[l] += 1;
            }
        }
        // The free flows of each link, contiguous: link k's are at[start[k]..start[k + 1]].
        let mut start = std::mem::take(&mut self.fill_start);
        start.clear();
        start.push(0);
        for &l in &links {
            start.push(start.last().copied().unwrap_or(0) + self.nun[l as usize]);
        }
        let mut at = std::mem::take(&mut self.fill_at);
        at.clear();
        at.resize(start[links.len()] as usize, 0);
        let mut cursor = start.clone();
        for &f in free {
            for &l in self.path[f as usize].iter() {
                let k = self.link_ix[l as usize] as usize;
                at[cursor[k] as usize] = f;
                cursor[k] += 1;
            }
        }
        for (k, &l) in links.iter().enumerate() {
            let l = l as usize;
            let (load, _, _) = self.link_load(l);
            let moving: f64 = at[start[k] as usize..start[k + 1] as usize].iter().map(|&g| self.rate[g as usize]).sum();
            self.rcap[l] = (self.cap[l] - (load - moving)).max(0.0);
        }
        // Shares are finite and non-negative, so their bit patterns sort as the numbers do.
        let share = |rcap: f64, n: u32| (rcap / n as f64).to_bits();
        let mut heap = std::mem::take(&mut self.share_heap);
        heap.clear();
        heap.extend(links.iter().map(|&l| Reverse((share(self.rcap[l as usize], self.nun[l as usize]), l))));
        // Capped flows, lowest ceiling first: each is a private link of one flow.
        let mut capped = std::mem::take(&mut self.fill_capped);
        capped.clear();
        capped.extend(free.iter().filter(|&&f| self.ceil[f as usize].is_finite()).map(|&f| (self.ceil[f as usize], f)));
        capped.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut next_cap = 0;
        let xe = self.next_epoch();
        loop {
            // The smallest current link share (stale keys go back with their new share).
            let top = loop {
                let Some(&Reverse((bits, l))) = heap.peek() else { break None };
                let l = l as usize;
                if self.nun[l] == 0 {
                    heap.pop();
                    continue;
                }
                let now = share(self.rcap[l], self.nun[l]);
                if now == bits {
                    break Some((bits, l));
                }
                heap.pop();
                heap.push(Reverse((now, l as u32)));
            };
            // A ceiling no higher than every share freezes its flow first (shares only grow).
            if let Some(&(c, g)) = capped.get(next_cap) {
                if top.is_none_or(|(bits, _)| c <= f64::from_bits(bits)) {
                    next_cap += 1;
                    let g = g as usize;
                    if self.seen_mark[g] != xe {
                        self.seen_mark[g] = xe;
                        self.next_rate[g] = c;
                        self.set_bneck(g, NO_LINK);
                        for &l2 in self.path[g].iter() {
                            let l2 = l2 as usize;
                            self.rcap[l2] = (self.rcap[l2] - c).max(0.0);
                            self.nun[l2] -= 1;
                        }
                    }
                    continue;
                }
            }
            let Some((bits, l)) = top else { break };
            heap.pop();
            let s = f64::from_bits(bits);
            let k = self.link_ix[l] as usize;
            for p in start[k]..start[k + 1] {
                let g = at[p as usize] as usize;
                if self.seen_mark[g] == xe {
                    continue;
                }
                self.seen_mark[g] = xe;
                self.next_rate[g] = s;
                self.set_bneck(g, l as u32);
                for &l2 in self.path[g].iter() {
                    let l2 = l2 as usize;
                    self.rcap[l2] = (self.rcap[l2] - s).max(0.0);
                    self.nun[l2] -= 1;
                }
            }
        }
        self.share_heap = heap;
        self.fill_capped = capped;
        self.fill_links = links;
        self.fill_start = start;
        self.fill_at = at;
    }

    /// Load Σ r, largest rate and count of the active flows on link `l`, cached until a flow
    /// joins or leaves it or changes rate.
    fn link_load(&mut self, l: usize) -> (f64, f64, f64) {
        let st = &mut self.link_stat[l];
        if !st.0 {
            let (mut load, mut top, mut n) = (0.0_f64, 0.0_f64, 0.0_f64);
            for &g in &self.link_flows[l] {
                if self.state[g as usize] == State::Active {
                    load += self.rate[g as usize];
                    top = top.max(self.rate[g as usize]);
                    n += 1.0;
                }
            }
            *st = (true, load, top, n);
        }
        (st.1, st.2, st.3)
    }

    /// Take the filled rates of `free`: a flow whose rate moves has its bytes brought up to
    /// `now`, its links added to `changed` and itself to `moved`.
    fn apply(&mut self, free: &[u32], now: f64, changed: &mut Vec<u32>, moved: &mut Vec<u32>) {
        for &f in free {
            let i = f as usize;
            let (old, new) = (self.rate[i], self.next_rate[i]);
            if old == new || (old > 0.0 && (new - old).abs() <= RATE_EPS * old) {
                continue;
            }
            self.rem[i] = (self.rem[i] - old * (now - self.upd[i])).max(0.0);
            self.upd[i] = now;
            self.rate[i] = new;
            for &l in self.path[i].iter() {
                self.link_stat[l as usize].0 = false;
            }
            changed.extend_from_slice(&self.path[i]);
            moved.push(f);
        }
    }

    /// Test the flows of `free` and those on the links `changed`; add to `free` the fixed flows
    /// that must move (see the module comment). Returns how many were added.
    fn add_failing(&mut self, changed: &[u32], free: &mut Vec<u32>, fe: u64) -> usize {
        let re = self.next_epoch();
        let mut check = Vec::new();
        for &l in changed {
            let l = l as usize;
            // A fixed flow keeps its rate: only a change on the link it was last found
            // bottlenecked on can take its bottleneck away. No flow relies on this one.
            if self.link_mark[l] == re || self.bneck_count[l] == 0 {
                continue;
            }
            self.link_mark[l] = re;
            for &g in &self.link_flows[l] {
                let g = g as usize;
                if self.bneck[g] == l as u32 && self.state[g] == State::Active && self.seen_mark[g] != re {
                    self.seen_mark[g] = re;
                    check.push(g as u32);
                }
            }
        }
        let n0 = free.len();
        for &f in free.iter() {
            if self.seen_mark[f as usize] != re {
                self.seen_mark[f as usize] = re;
                check.push(f);
            }
        }
        for h in check {
            let h = h as usize;
            if self.has_bottleneck(h) {
                continue;
            }
            if self.flow_mark[h] != fe {
                self.flow_mark[h] = fe;
                free.push(h as u32);
                continue;
            }
            let bar = self.rate[h] * (1.0 + FAIR_EPS);
            for k in 0..self.path[h].len() {
                let l = self.path[h][k] as usize;
                // A link scanned with a bar no higher has already given up every such flow.
                if self.scan_bar[l].0 == re && self.scan_bar[l].1 <= bar {
                    continue;
                }
                self.scan_bar[l] = (re, bar);
                for p in 0..self.link_flows[l].len() {
                    let g = self.link_flows[l][p] as usize;
                    if self.state[g] == State::Active && self.flow_mark[g] != fe && self.rate[g] > bar {
                        self.flow_mark[g] = fe;
                        free.push(g as u32);
                    }
                }
            }
        }
        free.len() - n0
    }

    /// Does flow `h` have a bottleneck? Its ceiling, if it runs at it; else its last link is
    /// tried first and the one found is kept.
    fn has_bottleneck(&mut self, h: usize) -> bool {
        if self.rate[h] >= self.ceil[h] * (1.0 - FAIR_EPS) {
            return true;
        }
        let hint = self.bneck[h];
        if hint != NO_LINK && self.bottleneck_at(h, hint as usize) {
            return true;
        }
        for k in 0..self.path[h].len() {
            let l = self.path[h][k];
            if l != hint && self.bottleneck_at(h, l as usize) {
                self.set_bneck(h, l);
                return true;
            }
        }
        false
    }

    /// Is link `l` a bottleneck of flow `h`: saturated, and no flow on it larger?
    fn bottleneck_at(&mut self, h: usize, l: usize) -> bool {
        let (load, top, n) = self.link_load(l);
        // Saturated: what is left would not grow the largest flow by FAIR_EPS (beyond the
        // rounding of the sum). Slack relative to C instead would starve many small flows.
        let saturated = self.cap[l] - load <= FAIR_EPS * top + 4.0 * n * f64::EPSILON * self.cap[l];
        saturated && self.rate[h] >= top * (1.0 - FAIR_EPS)
    }

    /// A fresh finish event for every flow whose rate moved, one per distinct time.
    fn reschedule(&mut self, now: f64, moved: &[u32]) {
        let me = self.next_epoch();
        let mut due = Vec::with_capacity(moved.len());
        for &f in moved {
            let i = f as usize;
            if self.seen_mark[i] == me {
                continue;
            }
            self.seen_mark[i] = me;
            self.ver[i] = self.ver[i].wrapping_add(1);
            if self.rate[i] > 0.0 {
                due.push((now + self.rem[i] / self.rate[i], f, self.ver[i]));
            }
        }
        self.push_flows(Kind::Finish, &mut due);
    }

    /// Record the rates of the clean runs whose flows moved, for fast-forwarding.
    fn record(&mut self, now: f64, moved: &[u32]) {
        let be = self.next_epoch();
        for &f in moved {
            let b = self.batch_of[f as usize] as usize;
            if self.batch_mark[b] == be {
                continue;
            }
            self.batch_mark[b] = be;
            let bt = &self.batches[b];
            // The last run is never fast-forwarded: nothing to record.
            if !(self.fast_forward && bt.live && bt.clean && bt.record_ok && bt.park.is_none() && bt.runs_left > 1) {
                continue;
            }
            if bt.record.len() >= super::MAX_RECORD {
                self.batches[b].record_ok = false;
                continue;
            }
            let rates: Box<[f64]> = bt
                .flows
                .iter()
                .map(|&g| if self.state[g as usize] == State::Active { self.rate[g as usize] } else { 0.0 })
                .collect();
            let off = now - bt.run_start;
            self.batches[b].record.push((off, rates));
        }
    }
}
