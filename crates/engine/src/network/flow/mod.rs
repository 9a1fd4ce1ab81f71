//! The flow-level network model: links shared max-min fairly among the flows in flight.
//!
//! A flow f of S_f bytes on path P_f (directed links) issued at t_f first waits its path latency
//! α_f = Σ_{l∈P_f} lat_l — SimGrid-style, the latency is paid before the flow starts and loads
//! no link — then transfers at a rate r_f(t), finishing at T_f with ∫_{t_f+α_f}^{T_f} r_f dt = S_f.
//! A flow on no link (src = dst) finishes as soon as it starts; one of no bytes, after its wait
//! (α + 0·β, as [`crate::collective::cost`] prices a transfer of no bytes).
//!
//! Rates are the max-min fair allocation over the links, each of capacity C_l (bytes/ns):
//! Σ_{f∋l} r_f ≤ C_l, and no r_f can grow without shrinking some r_g ≤ r_f. Progressive filling
//! (water-filling) computes it: with R_l the capacity left on l and n_l its flows not yet fixed,
//! the bottleneck share s = min_l R_l / n_l goes to every unfixed flow crossing a link whose share
//! is s; those flows are fixed, R_l −= s and n_l −= 1 on each of their links; repeat until every
//! flow is fixed. Rates are constant between events, so T_f = t + remaining_f / r_f.
//!
//! A flow may also have a rate *ceiling* c_f (∞ by default): a requester that keeps at most W
//! bytes in flight over a round trip of RTT reads at most W / RTT (Little's law), whatever the
//! links leave it. The ceiling acts as a private link of capacity c_f that only f crosses, so
//! the allocation stays max-min fair with it: progressive filling freezes f at c_f as soon as c_f
//! is the smallest share left, and a flow has a bottleneck when it runs at its ceiling. A capped
//! flow thus leaves the rest of its links to the others.
//!
//! Rates change only when the set of active flows changes, and only for the flows near the ones
//! that started or ended: the solver (`solve.rs`) re-solves locally and proves the result max-min fair for the
//! whole network. Flows whose rate holds keep their scheduled completions.
//!
//! Flows come in *batches* that run `repeat` times back to back (one phase of a collective
//! schedule, such as the 2(n−1) identical steps of a ring). A run is *clean* when every re-solve
//! that touched its flows held no other flow and no instant was cut out at another batch's event
//! ahead of its own (see *Instants*: that may move its events by up to the window; an instant
//! whose time its first event is due at is the one it would have alone); the next run, started
//! fresh under the same conditions, then takes exactly as long. So after a clean run of duration d the batch is
//! *parked*: its remaining k runs end at t + k·d with no events in between, and its flows stay
//! on their links so that any newcomer finds them. A newcomer sharing a link with a parked batch
//! at time t resumes it from its exact state: j = ⌊(t − t_park)/d⌋ runs are done, and at offset
//! τ = t − t_park − j·d into the current run each flow is waiting (τ < α_f), done (τ ≥ its
//! finish offset) or active with S_f − ∫_0^τ r_f bytes left, integrated from the rates recorded
//! during the clean run.
//!
//! *Instants.* Events due within a relative ε = 1e-9 of the earliest pending one (t ≤ t₀(1+ε))
//! are processed together at t₀, with one re-solve. In exact arithmetic, flows of equal size
//! that start together and share a rate end at one instant; in floating point rem/r scatters
//! their ends over a few ulps, and each distinct time would re-solve the whole all-to-all (at
//! 256 ranks of Spectrum-X: 127 re-solves of ~65 000 flows instead of 6). Processing an event
//! δ ≤ ε·t₀ early sends its last r·δ bytes δ early (a finish) or starts a flow δ early (an
//! activation). When the later events keep their order, each time moves by at most the sum of
//! the shifts before it, k·ε·T after k instants of a run of span T (1e-6 after a million); an
//! order the shift flips has its two events within ε·t₀ of each other, which rounding could
//! flip as well. `set_coalesce(false)` processes every distinct time alone (the reference);
//! `tests::coalesced_instants_match_the_per_event_solve` holds the two to 1e-6 (0.1 % is asked).
//!
//! *Large flow counts.* A direct all-to-all puts n(n−1) flows on the fabric at once, about a
//! thousand per link at 1024 ranks. So no step costs a pass over a link's flows unless it must:
//! a flow leaves its links in O(1) (it knows its slot in each link's list, and each entry its hop
//! in the flow's path); each link keeps a tally of the batches on it (a newcomer learns which
//! batches it meets without reading their flows) and its load statistics until its flows or
//! their rates change; the local re-solve tests only flows whose own bottleneck link changed;
//! progressive filling reads only the free flows of a link (see `solve.rs`); and flow events due
//! at one exact time are one heap entry (a batch whose flows start together, the flows a re-solve
//! gives the same end), so a million starts or ends cost one heap operation per distinct time.
//! These keep the answer exact: the same rates, found with less work.
//! `reference_tests` holds it against a plain per-flow max-min solve written from the definition.
//!
//! *Why not merge flows.* Flows that max-min fairness cannot tell apart (same links, same start,
//! same bytes) could run as one flow counted m times on each link, exactly. An all-to-all has
//! none: a flow's path starts on its source's link and ends on its destination's, so equal paths
//! mean the same pair, and each pair is one flow (one queue pair, ECMP) — 1 047 552 classes for
//! 1 047 552 flows at 1024 ranks; the same holds for the instances of a collective (disjoint
//! ranks) and the rank-shifted copies of a transfer. The time goes instead to the per-flow
//! bookkeeping above and, when ECMP collisions spread the ends, to the genuine max-min cascade
//! of each end, which only a cheaper re-solve shortens.

mod cycle;
pub mod fault;
pub mod network;
mod solve;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;

use crate::due::Due;
use crate::error::{InputError, Result};
use crate::platform::routing::{links_of_path, Router};
use crate::platform::{Platform, Routing};

/// Most rate changes recorded per run; a run with more is not fast-forwarded.
const MAX_RECORD: usize = 64;
/// Events due within this fraction of the current time of the earliest are processed with it.
const COALESCE: f64 = 1e-9;
/// No bottleneck link known yet.
const NO_LINK: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    /// Paying its latency.
    Waiting,
    Active,
    Done,
    /// Its batch is fast-forwarding; kept on its links so newcomers find it.
    Parked,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Activate,
    Finish,
    BatchEnd,
    /// Flow events due at one time, `groups[id]`: one heap entry for the flows of a batch that
    /// start together, or that a re-solve gives the same end.
    Group,
    /// The replay of a batch in company is over (`cycle.rs`).
    ReplayEnd,
}

/// What happens to flow or batch `id`; stale when `ver` no longer matches its version.
#[derive(Clone, Copy)]
struct Event {
    kind: Kind,
    id: u32,
    ver: u32,
}

struct Batch {
    flows: Vec<u32>,
    tag: u64,
    runs_left: u32,
    run_start: f64,
    pending: u32,
    clean: bool,
    /// (offset into the run, rate of each flow of the batch) after every re-solve touching it.
    record: Vec<(f64, Box<[f64]>)>,
    record_ok: bool,
    /// Offset into the run at which each flow finished.
    finish_off: Vec<f64>,
    /// Parked: (park time, run duration, runs left).
    park: Option<(f64, f64, u32)>,
    ver: u32,
    live: bool,
    /// Its part of a run's key, made once, and that part's hash (`cycle.rs`).
    key: Option<(Rc<[u64]>, u64)>,
}

/// What a flow waits before it starts moving bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Wait {
    /// Its path latency and `extra_ns` more (SimAI's AS_SEND_LAT).
    Path { extra_ns: f64 },
    /// Exactly this long (its latency is accounted elsewhere, e.g. a collective step's share of
    /// NCCL's hop latencies, which hold the path latency).
    Fixed(f64),
}

/// Max-min fair flow simulation over a topology's directed links.
pub struct FlowSim {
    cap: Vec<f64>,
    link_lat: Vec<f64>,
    link_flows: Vec<Vec<u32>>,
    /// Beside each entry of `link_flows`: which hop of that flow's path the link is.
    link_hop: Vec<Vec<u32>>,
    /// Per link: the batches of its flows, with how many flows each.
    link_batches: Vec<Vec<(u32, u32)>>,
    carried: Vec<f64>,
    // Per flow, struct of arrays, indexed by flow slot.
    path: Vec<Rc<[u32]>>,
    /// Where the flow sits in `link_flows` of each link of its path, while on them.
    slot: Vec<Vec<u32>>,
    lat: Vec<f64>,
    /// Rate ceiling, bytes/ns (∞: none).
    ceil: Vec<f64>,
    bytes: Vec<f64>,
    rem: Vec<f64>,
    rate: Vec<f64>,
    upd: Vec<f64>,
    state: Vec<State>,
    ver: Vec<u32>,
    batch_of: Vec<u32>,
    /// Index of the flow within its batch.
    pos: Vec<u32>,
    free_flows: Vec<u32>,
    batches: Vec<Batch>,
    free_batches: Vec<u32>,
    heap: BinaryHeap<Due<Event>>,
    seq: u64,
    /// Per group event: its kind (Activate or Finish) and (flow, version) of each member.
    groups: Vec<(Kind, Vec<(u32, u32)>)>,
    free_groups: Vec<u32>,
    /// Per flow: the link it was last found bottlenecked on (a hint), its rate from the last fill.
    bneck: Vec<u32>,
    /// Per link: how many flows have it as their `bneck`.
    bneck_count: Vec<u32>,
    next_rate: Vec<f64>,
    // Marks stamped with an epoch (never reused, so never cleared), sized once.
    link_mark: Vec<u64>,
    flow_mark: Vec<u64>,
    seen_mark: Vec<u64>,
    batch_mark: Vec<u64>,
    epoch: u64,
    /// Per link, kept until its flows or their rates change: (valid, Σ r, largest r, count).
    link_stat: Vec<(bool, f64, f64, f64)>,
    /// Per link, for one bottleneck test: (epoch, lowest bar it was scanned with).
    scan_bar: Vec<(u64, f64)>,
    /// Links whose flows changed, flows attached, parked batches met, since the last solve.
    touched: Vec<u32>,
    fresh: Vec<u32>,
    to_resume: Vec<u32>,
    rcap: Vec<f64>,
    nun: Vec<u32>,
    share_heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// Scratch of one fill: its links, where each sits among them, and their free flows.
    fill_links: Vec<u32>,
    link_ix: Vec<u32>,
    fill_start: Vec<u32>,
    fill_at: Vec<u32>,
    /// Scratch of one fill: its capped flows, (ceiling, flow), lowest first.
    fill_capped: Vec<(f64, u32)>,
    solves: u64,
    /// Flows on their links and transferring.
    active: usize,
    fast_forward: bool,
    incremental: bool,
    /// Relative window of one processed instant (see the module doc); 0 = every distinct time alone.
    coalesce: f64,
    /// A run that may repeat in company, the replay of one that did, its version (`cycle.rs`).
    candidate: Option<cycle::Candidate>,
    replay: Option<cycle::Replay>,
    replay_ver: u32,
    /// The batch whose run ended and was re-armed at the instant being processed.
    run_ended: Option<u32>,
    /// The instants processed so far; the one being processed, while `step` runs.
    instants: u64,
    /// Per batch: the last instant that held an event of it (`instants` then).
    batch_instant: Vec<u64>,
    /// Runs that repeated in company, by the hash of their key, and the rates they hold (`cycle.rs`).
    memo: std::collections::HashMap<u64, cycle::Memo>,
    memo_rates: usize,
    recall: bool,
    /// The instant last processed.
    time: f64,
}

impl FlowSim {
    pub fn new(topo: &Platform) -> FlowSim {
        let n = topo.links.len();
        FlowSim {
            cap: topo.links.iter().map(|l| l.bandwidth).collect(),
            link_lat: topo.links.iter().map(|l| l.latency_ns).collect(),
            link_flows: vec![Vec::new(); n],
            link_hop: vec![Vec::new(); n],
            link_batches: vec![Vec::new(); n],
            carried: vec![0.0; n],
            path: Vec::new(),
            slot: Vec::new(),
            lat: Vec::new(),
            ceil: Vec::new(),
            bytes: Vec::new(),
            rem: Vec::new(),
            rate: Vec::new(),
            upd: Vec::new(),
            state: Vec::new(),
            ver: Vec::new(),
            batch_of: Vec::new(),
            pos: Vec::new(),
            free_flows: Vec::new(),
            batches: Vec::new(),
            free_batches: Vec::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            groups: Vec::new(),
            free_groups: Vec::new(),
            bneck: Vec::new(),
            bneck_count: vec![0; n],
            next_rate: Vec::new(),
            link_mark: vec![0; n],
            flow_mark: Vec::new(),
            seen_mark: Vec::new(),
            batch_mark: Vec::new(),
            epoch: 0,
            link_stat: vec![(false, 0.0, 0.0, 0.0); n],
            scan_bar: vec![(0, 0.0); n],
            touched: Vec::new(),
            fresh: Vec::new(),
            to_resume: Vec::new(),
            rcap: vec![0.0; n],
            nun: vec![0; n],
            share_heap: BinaryHeap::new(),
            fill_links: Vec::new(),
            link_ix: vec![0; n],
            fill_start: Vec::new(),
            fill_at: Vec::new(),
            fill_capped: Vec::new(),
            solves: 0,
            active: 0,
            fast_forward: true,
            incremental: true,
            coalesce: COALESCE,
            candidate: None,
            replay: None,
            replay_ver: 0,
            run_ended: None,
            instants: 0,
            batch_instant: Vec::new(),
            memo: std::collections::HashMap::new(),
            memo_rates: 0,
            recall: true,
            time: 0.0,
        }
    }

    /// Bytes carried so far by each directed link (index = topology link id).
    pub fn carried_bytes(&self) -> &[f64] {
        &self.carried
    }

    /// Max-min re-solves done so far (to check that repeats are fast-forwarded).
    pub fn solves(&self) -> u64 {
        self.solves
    }

    /// Turn fast-forwarding of clean repeated runs on (default) or off (to check it).
    pub fn set_fast_forward(&mut self, on: bool) {
        self.fast_forward = on;
    }

    /// Replay a run seen to repeat in the same company before without running it (default), or
    /// run it again (to check it).
    pub fn set_recall(&mut self, on: bool) {
        self.recall = on;
    }

    /// Re-solve rates locally (default) or whole components every time (to check it).
    pub fn set_incremental(&mut self, on: bool) {
        self.incremental = on;
    }

    /// Process events due within a relative 1e-9 of each other as one instant (default) or each
    /// distinct time alone (the per-event reference, to check it).
    pub fn set_coalesce(&mut self, on: bool) {
        self.coalesce = if on { COALESCE } else { 0.0 };
    }

    fn push(&mut self, time: f64, kind: Kind, id: u32, ver: u32) {
        self.seq += 1;
        self.heap.push(Due { time, seq: self.seq, item: Event { kind, id, ver } });
        // Every rate change leaves the flow's old finish event behind: drop the stale ones
        // once they outnumber what can be live (one event per flow and per batch).
        if self.heap.len() > 2 * (self.path.len() + self.batches.len()) + 4096 {
            self.drop_stale_events();
        }
    }

    fn drop_stale_events(&mut self) {
        let mut heap = std::mem::take(&mut self.heap).into_vec();
        heap.retain(|e| {
            let e = e.item;
            match e.kind {
                Kind::Activate | Kind::Finish => self.ver[e.id as usize] == e.ver,
                Kind::BatchEnd => self.batches[e.id as usize].live && self.batches[e.id as usize].ver == e.ver,
                Kind::Group => true,
                Kind::ReplayEnd => self.replay.as_ref().is_some_and(|r| r.ver == e.ver),
            }
        });
        self.heap = heap.into();
    }

    /// Events of `kind` for flows, given as (time, flow, version): one heap entry per distinct
    /// time, in the order given among equal times. Empties `due`.
    fn push_flows(&mut self, kind: Kind, due: &mut Vec<(f64, u32, u32)>) {
        due.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut rest = &due[..];
        while let Some(&(t, f, v)) = rest.first() {
            let n = rest.iter().take_while(|e| e.0 == t).count();
            if n == 1 {
                self.push(t, kind, f, v);
            } else {
                let g = match self.free_groups.pop() {
                    Some(g) => g,
                    None => {
                        self.groups.push((kind, Vec::new()));
                        (self.groups.len() - 1) as u32
                    }
                };
                let (k, members) = &mut self.groups[g as usize];
                *k = kind;
                members.clear();
                members.extend(rest[..n].iter().map(|e| (e.1, e.2)));
                self.push(t, Kind::Group, g, 0);
            }
            rest = &rest[n..];
        }
        due.clear();
    }

    fn new_flow(&mut self, path: Rc<[u32]>, bytes: f64, ceil: f64, batch: u32, wait: Wait) -> u32 {
        let lat = match wait {
            Wait::Path { extra_ns } => extra_ns + path.iter().map(|&l| self.link_lat[l as usize]).sum::<f64>(),
            Wait::Fixed(ns) => ns,
        };
        let f = match self.free_flows.pop() {
            Some(f) => f,
            None => {
                self.path.push(Rc::new([]));
                self.slot.push(Vec::new());
                self.lat.push(0.0);
                self.ceil.push(f64::INFINITY);
                self.bytes.push(0.0);
                self.rem.push(0.0);
                self.rate.push(0.0);
                self.upd.push(0.0);
                self.state.push(State::Free);
                self.ver.push(0);
                self.batch_of.push(0);
                self.pos.push(0);
                self.flow_mark.push(0);
                self.seen_mark.push(0);
                self.bneck.push(NO_LINK);
                self.next_rate.push(0.0);
                (self.path.len() - 1) as u32
            }
        };
        let i = f as usize;
        self.path[i] = path;
        self.lat[i] = lat;
        self.ceil[i] = ceil;
        self.bytes[i] = bytes;
        self.batch_of[i] = batch;
        self.set_bneck(i, NO_LINK);
        f
    }

    /// Start a batch at `now`: flows given as (links, bytes), run `repeat` ≥ 1 times back to
    /// back. Its `tag` comes back from [`FlowSim::step`] when the last run ends. Every flow of
    /// every run first waits its path latency.
    pub fn add_batch<P: Into<Rc<[u32]>>>(
        &mut self,
        now: f64,
        flows: impl IntoIterator<Item = (P, f64)>,
        repeat: u32,
        tag: u64,
    ) -> u32 {
        self.add_batch_waiting(now, flows, repeat, tag, Wait::Path { extra_ns: 0.0 })
    }

    /// [`FlowSim::add_batch`] with every flow of every run first waiting `wait`.
    pub fn add_batch_waiting<P: Into<Rc<[u32]>>>(
        &mut self,
        now: f64,
        flows: impl IntoIterator<Item = (P, f64)>,
        repeat: u32,
        tag: u64,
        wait: Wait,
    ) -> u32 {
        self.add_batch_capped(now, flows.into_iter().map(|(p, b)| (p, b, f64::INFINITY)), repeat, tag, wait)
    }

    /// [`FlowSim::add_batch_waiting`] with flows given as (links, bytes, rate ceiling in
    /// bytes/ns; positive, ∞ for none).
    pub fn add_batch_capped<P: Into<Rc<[u32]>>>(
        &mut self,
        now: f64,
        flows: impl IntoIterator<Item = (P, f64, f64)>,
        repeat: u32,
        tag: u64,
        wait: Wait,
    ) -> u32 {
        let b = match self.free_batches.pop() {
            Some(b) => {
                self.batch_instant[b as usize] = 0;
                b
            }
            None => {
                self.batches.push(Batch {
                    flows: Vec::new(),
                    tag: 0,
                    runs_left: 0,
                    run_start: 0.0,
                    pending: 0,
                    clean: true,
                    record: Vec::new(),
                    record_ok: true,
                    finish_off: Vec::new(),
                    park: None,
                    ver: 0,
                    live: false,
                    key: None,
                });
                self.batch_mark.push(0);
                self.batch_instant.push(0);
                (self.batches.len() - 1) as u32
            }
        };
        let ids: Vec<u32> = flows
            .into_iter()
            .map(|(p, bytes, ceil)| {
                debug_assert!(ceil > 0.0, "a rate ceiling must be positive");
                self.new_flow(p.into(), bytes.max(0.0), ceil, b, wait)
            })
            .collect();
        for (k, &f) in ids.iter().enumerate() {
            self.pos[f as usize] = k as u32;
        }
        let bt = &mut self.batches[b as usize];
        bt.finish_off = vec![0.0; ids.len()];
        bt.flows = ids;
        bt.tag = tag;
        bt.runs_left = repeat.max(1);
        bt.park = None;
        bt.live = true;
        bt.key = None;
        self.arm(b, now);
        // Its first run may repeat in company as well as the later ones (`cycle.rs`), if it
        // starts now: nothing can change before it does.
        if now >= self.time && self.next_time().is_none_or(|t| t >= now) {
            self.watch_run(b, now);
        }
        self.prune();
        b
    }

    /// Start a fresh run of batch `b` at `now`.
    fn arm(&mut self, b: u32, now: f64) {
        let bt = &mut self.batches[b as usize];
        bt.run_start = now;
        bt.clean = true;
        bt.record.clear();
        bt.record_ok = true;
        bt.pending = bt.flows.len() as u32;
        let flows = std::mem::take(&mut bt.flows);
        let mut due = Vec::with_capacity(flows.len());
        for &f in &flows {
            let i = f as usize;
            self.rem[i] = self.bytes[i];
            self.rate[i] = 0.0;
            self.state[i] = State::Waiting;
            self.ver[i] = self.ver[i].wrapping_add(1);
            due.push((now + self.lat[i], f, self.ver[i]));
        }
        self.push_flows(Kind::Activate, &mut due);
        self.batches[b as usize].flows = flows;
    }

    /// Time of the next internal event (a flow starting or ending), if any.
    pub fn next_time(&self) -> Option<f64> {
        self.heap.peek().map(|e| e.time)
    }

    /// Put active flow `f` on its links. Batches it meets there are no longer clean; parked
    /// ones are resumed before the next solve.
    fn attach(&mut self, f: u32) {
        let b = self.batch_of[f as usize];
        for k in 0..self.path[f as usize].len() {
            let l = self.path[f as usize][k] as usize;
            for p in 0..self.link_batches[l].len() {
                let bg = self.link_batches[l][p].0;
                if self.batches[bg as usize].park.is_some() {
                    self.to_resume.push(bg);
                } else if bg != b {
                    self.batches[bg as usize].clean = false;
                    self.batches[b as usize].clean = false;
                }
            }
            self.touched.push(l as u32);
        }
        self.link_on(f);
        self.active += 1;
        self.fresh.push(f);
    }

    fn detach(&mut self, f: u32, touch: bool) {
        self.link_off(f);
        if touch {
            self.touched.extend_from_slice(&self.path[f as usize]);
        }
    }

    /// Put flow `f` on the flow lists of its links (O(1) per link).
    fn link_on(&mut self, f: u32) {
        let i = f as usize;
        let b = self.batch_of[i];
        let mut slot = std::mem::take(&mut self.slot[i]);
        slot.clear();
        for (k, &l) in self.path[i].iter().enumerate() {
            let l = l as usize;
            slot.push(self.link_flows[l].len() as u32);
            self.link_flows[l].push(f);
            self.link_hop[l].push(k as u32);
            self.link_stat[l].0 = false;
            let tally = &mut self.link_batches[l];
            match tally.iter_mut().find(|e| e.0 == b) {
                Some(e) => e.1 += 1,
                None => tally.push((b, 1)),
            }
        }
        self.slot[i] = slot;
    }

    /// Take flow `f` off the flow lists of its links (O(1) per link: the last flow of a list
    /// moves into its place).
    fn link_off(&mut self, f: u32) {
        let i = f as usize;
        let b = self.batch_of[i];
        for k in 0..self.path[i].len() {
            let l = self.path[i][k] as usize;
            let p = self.slot[i][k] as usize;
            debug_assert_eq!(self.link_flows[l][p], f);
            self.link_flows[l].swap_remove(p);
            self.link_hop[l].swap_remove(p);
            if let Some(&g) = self.link_flows[l].get(p) {
                self.slot[g as usize][self.link_hop[l][p] as usize] = p as u32;
            }
            self.link_stat[l].0 = false;
            let tally = &mut self.link_batches[l];
            let e = tally.iter().position(|e| e.0 == b).expect("a batch on the link it uses");
            tally[e].1 -= 1;
            if tally[e].1 == 0 {
                tally.swap_remove(e);
            }
        }
    }

    fn carry(&mut self, f: u32, times: f64) {
        let i = f as usize;
        for &l in self.path[i].iter() {
            self.carried[l as usize] += self.bytes[i] * times;
        }
    }

    /// Active flow `f` has moved its last byte at `now`: off its links, then done.
    fn finish_flow(&mut self, f: u32, now: f64, finished: &mut Vec<(u64, f64)>) {
        self.detach(f, true);
        self.set_bneck(f as usize, NO_LINK);
        self.active -= 1;
        self.done(f, now, finished);
    }

    /// Flow `f` is done at `now`; its batch's run ends with its last flow.
    fn done(&mut self, f: u32, now: f64, finished: &mut Vec<(u64, f64)>) {
        let i = f as usize;
        self.state[i] = State::Done;
        self.rate[i] = 0.0;
        self.rem[i] = 0.0;
        self.carry(f, 1.0);
        let b = self.batch_of[i] as usize;
        let pos = self.pos[i] as usize;
        self.batches[b].finish_off[pos] = now - self.batches[b].run_start;
        self.batches[b].pending -= 1;
        if self.batches[b].pending == 0 {
            self.run_end(b as u32, now, finished);
        }
    }

    fn release(&mut self, b: u32, now: f64, finished: &mut Vec<(u64, f64)>) {
        self.forget_candidate(b);
        let bt = &mut self.batches[b as usize];
        bt.live = false;
        bt.ver = bt.ver.wrapping_add(1);
        finished.push((bt.tag, now));
        let flows = std::mem::take(&mut bt.flows);
        bt.record.clear();
        for &f in &flows {
            self.state[f as usize] = State::Free;
            self.path[f as usize] = Rc::new([]);
            self.ver[f as usize] = self.ver[f as usize].wrapping_add(1);
        }
        self.free_flows.extend(flows);
        self.free_batches.push(b);
    }

    fn run_end(&mut self, b: u32, now: f64, finished: &mut Vec<(u64, f64)>) {
        let bt = &mut self.batches[b as usize];
        bt.runs_left -= 1;
        if bt.runs_left == 0 {
            self.release(b, now, finished);
            return;
        }
        let d = now - bt.run_start;
        let runs = bt.runs_left;
        // Park only if the next runs would see exactly what this one saw: nobody else on its links.
        let parkable = self.fast_forward
            && bt.clean
            && bt.record_ok
            && d > 0.0
            && bt.flows.iter().all(|&f| self.path[f as usize].iter().all(|&l| self.link_flows[l as usize].is_empty()));
        if !parkable {
            self.arm(b, now);
            self.run_ended = Some(b);
            return;
        }
        self.forget_candidate(b);
        let bt = &mut self.batches[b as usize];
        bt.park = Some((now, d, runs));
        bt.ver = bt.ver.wrapping_add(1);
        let v = bt.ver;
        let flows = std::mem::take(&mut bt.flows);
        for &f in &flows {
            self.state[f as usize] = State::Parked;
            self.link_on(f);
        }
        self.batches[b as usize].flows = flows;
        self.push(now + runs as f64 * d, Kind::BatchEnd, b, v);
    }

    /// A newcomer meets parked batch `b` at `now`: rebuild the state of its current run.
    fn resume(&mut self, b: u32, now: f64, finished: &mut Vec<(u64, f64)>) {
        let (t0, d, runs) = self.batches[b as usize].park.take().expect("resume of a parked batch");
        self.note_event(b);
        let j = (((now - t0) / d).floor().max(0.0) as u32).min(runs - 1);
        let start = t0 + j as f64 * d;
        let tau = now - start;
        let flows = std::mem::take(&mut self.batches[b as usize].flows);
        let bt = &mut self.batches[b as usize];
        bt.ver = bt.ver.wrapping_add(1);
        bt.runs_left = runs - j;
        bt.run_start = start;
        bt.clean = false;
        bt.record_ok = false;
        let record = std::mem::take(&mut bt.record);
        let finish_off = bt.finish_off.clone();
        let mut pending = 0;
        for (k, &f) in flows.iter().enumerate() {
            let i = f as usize;
            self.detach(f, false);
            self.carry(f, j as f64);
            self.ver[i] = self.ver[i].wrapping_add(1);
            self.upd[i] = now;
            if tau >= finish_off[k] {
                self.state[i] = State::Done;
                self.carry(f, 1.0);
                continue;
            }
            pending += 1;
            if tau < self.lat[i] {
                self.state[i] = State::Waiting;
                self.rem[i] = self.bytes[i];
                self.rate[i] = 0.0;
                let v = self.ver[i];
                self.push(start + self.lat[i], Kind::Activate, f, v);
                continue;
            }
            // Bytes moved so far: the recorded rates, piecewise constant between records.
            let mut moved = 0.0;
            for (r, (off, rates)) in record.iter().enumerate() {
                let end = record.get(r + 1).map_or(tau, |n| n.0).min(tau);
                if end > *off {
                    moved += rates[k] * (end - off);
                }
            }
            self.rem[i] = (self.bytes[i] - moved).max(0.0);
            self.rate[i] = 0.0;
            self.state[i] = State::Active;
            self.attach(f);
        }
        let bt = &mut self.batches[b as usize];
        bt.flows = flows;
        bt.pending = pending;
        if pending == 0 {
            self.run_end(b, now, finished);
        }
    }

    /// Process every event at the earliest pending time; append the tags of batches that ended
    /// then (with that time). Returns the time processed, or None when nothing is pending.
    pub fn step(&mut self, finished: &mut Vec<(u64, f64)>) -> Option<f64> {
        self.prune();
        let now = self.heap.peek()?.time;
        self.time = now;
        let horizon = now + self.coalesce * now;
        let mut last = now;
        self.instants += 1;
        while self.heap.peek().is_some_and(|e| e.time <= horizon) {
            let e = self.heap.pop().expect("peeked");
            last = e.time;
            let at = e.time;
            let e = e.item;
            match e.kind {
                Kind::Activate | Kind::Finish => self.flow_event(e.kind, e.id, e.ver, at, now, finished),
                Kind::Group => {
                    let kind = self.groups[e.id as usize].0;
                    let members = std::mem::take(&mut self.groups[e.id as usize].1);
                    for &(f, v) in &members {
                        self.flow_event(kind, f, v, at, now, finished);
                    }
                    self.groups[e.id as usize].1 = members;
                    self.free_groups.push(e.id);
                }
                Kind::ReplayEnd => match self.replay.as_ref().filter(|r| r.ver == e.ver) {
                    Some(r) if r.cut => self.interrupt_replay(now, finished),
                    Some(_) => self.end_replay(now, finished),
                    None => {}
                },
                Kind::BatchEnd => {
                    let b = e.id as usize;
                    if !self.batches[b].live || self.batches[b].ver != e.ver {
                        continue;
                    }
                    self.event_of(e.id, at, now);
                    let (_, _, runs) = self.batches[b].park.take().expect("parked batch");
                    let flows = std::mem::take(&mut self.batches[b].flows);
                    for &f in &flows {
                        self.detach(f, false);
                        self.carry(f, runs as f64);
                    }
                    self.batches[b].flows = flows;
                    self.release(e.id, now, finished);
                }
            }
        }
        self.solve(now, finished);
        // How this instant was cut out: the events it took, and the next one it left.
        let next = self.heap.peek().map_or(f64::INFINITY, |e| e.time);
        self.watch_cycle(now, last - now, next - now);
        self.prune();
        Some(now)
    }

    /// Does event `e` do nothing now: a flow's start or end from before it was re-armed or its
    /// rate changed, a batch's end from before it was resumed, a replay's from before it was
    /// cut?
    fn is_stale(&self, e: &Event) -> bool {
        let flow = |f: u32, ver: u32, kind: Kind| {
            let want = if kind == Kind::Activate { State::Waiting } else { State::Active };
            self.ver[f as usize] != ver || self.state[f as usize] != want
        };
        match e.kind {
            Kind::Activate | Kind::Finish => flow(e.id, e.ver, e.kind),
            Kind::Group => {
                let (kind, members) = &self.groups[e.id as usize];
                members.iter().all(|&(f, v)| flow(f, v, *kind))
            }
            Kind::BatchEnd => !self.batches[e.id as usize].live || self.batches[e.id as usize].ver != e.ver,
            Kind::ReplayEnd => self.replay.as_ref().is_none_or(|r| r.ver != e.ver),
        }
    }

    /// Drop the stale events at the top of the heap. They are no events: one left there would
    /// set the time of the next instant and take the events within the window after it along,
    /// moving them by up to the window, as it happens to be left by the rates' history.
    fn prune(&mut self) {
        while let Some(e) = self.heap.peek().map(|e| e.item).filter(|e| self.is_stale(e)) {
            self.heap.pop();
            if e.kind == Kind::Group {
                self.free_groups.push(e.id);
            }
        }
    }

    /// Flow `f` starts or ends at `now` (its event's own time `at`, within the instant's
    /// window), if `ver` is still its version.
    fn flow_event(&mut self, kind: Kind, f: u32, ver: u32, at: f64, now: f64, finished: &mut Vec<(u64, f64)>) {
        let i = f as usize;
        if self.ver[i] != ver {
            return;
        }
        if kind == Kind::Activate && self.state[i] == State::Waiting {
            self.event_of(self.batch_of[i], at, now);
            self.upd[i] = now;
            self.rate[i] = 0.0;
            if self.path[i].is_empty() || self.rem[i] <= 0.0 {
                // Nothing to move (no link, or no bytes): done once its wait is over, never on
                // a link — α + 0·β, as the α–β price has it.
                self.done(f, now, finished);
            } else {
                self.state[i] = State::Active;
                self.attach(f);
            }
        } else if kind == Kind::Finish && self.state[i] == State::Active {
            self.event_of(self.batch_of[i], at, now);
            self.finish_flow(f, now, finished);
        }
    }

    /// An event of batch `b`, due at `at`, takes place at the instant being processed, `now`.
    /// The instant is processed at its earliest event: when that is another batch's (b's own
    /// first event in it is due later), b's events are moved by up to the window, as its run
    /// alone would not have them, and this run is not parked on. A batch whose first event is
    /// due at the instant's very time is not moved, whoever shares the instant: alone it would
    /// have had the same instant (events due later in it are then moved as they would be alone).
    fn event_of(&mut self, b: u32, at: f64, now: f64) {
        self.note_event(b);
        let seen = &mut self.batch_instant[b as usize];
        if *seen != self.instants {
            *seen = self.instants;
            if at > now {
                self.batches[b as usize].clean = false;
            }
        }
    }

    /// Record link `l` (or NO_LINK) as flow `g`'s bottleneck, keeping the per-link counts.
    fn set_bneck(&mut self, g: usize, l: u32) {
        let old = self.bneck[g];
        if old != NO_LINK {
            self.bneck_count[old as usize] -= 1;
        }
        if l != NO_LINK {
            self.bneck_count[l as usize] += 1;
        }
        self.bneck[g] = l;
    }

    fn next_epoch(&mut self) -> u64 {
        self.epoch += 1;
        self.epoch
    }
}

/// One flow for [`completion_times`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    pub bytes: f64,
    pub start_ns: f64,
}

/// Completion time (ns) of each flow, routed by shortest path with ECMP seeded by `seed` (flow
/// id = index), or along `routes[i]` (node paths) where given. With `topo.routing` spraying, a
/// flow without a given route is split over every shortest path ([`Router::spray`]; inside a
/// scale-up domain, evenly over its NVSwitches) and completes when its last part does.
pub fn completion_times(
    topo: &Platform,
    flows: &[FlowSpec],
    routes: Option<&[Vec<u32>]>,
    seed: u64,
) -> Result<Vec<f64>> {
    if let Some(r) = routes {
        if r.len() != flows.len() {
            return Err(InputError::field(
                "routes",
                "routes",
                format!("{} routes for {} flows; give one per flow (an empty one to route it)", r.len(), flows.len()),
            ));
        }
    }
    let mut router = Router::new(topo, seed);
    let mut sim = FlowSim::new(topo);
    for (i, f) in flows.iter().enumerate() {
        let field = format!("flow {i}");
        if !(f.bytes.is_finite() && f.bytes >= 0.0) {
            return Err(InputError::field(
                "flows",
                &field,
                format!("bytes {} must be finite and non-negative", f.bytes),
            ));
        }
        if !(f.start_ns.is_finite() && f.start_ns >= 0.0) {
            return Err(InputError::field("flows", &field, format!("start {} ns must be finite and >= 0", f.start_ns)));
        }
        let mut path = Vec::new();
        let mut parts = Vec::new();
        let given = routes.map(|r| &r[i]).filter(|r| !r.is_empty());
        let res = match given {
            Some(nodes) => links_of_path(topo, nodes, f.src, f.dst, &mut path),
            None if topo.routing == Routing::Spray => router.spray(topo, f.src, f.dst, &mut parts),
            None => router.route(topo, f.src, f.dst, i as u64, &mut path),
        };
        res.map_err(|mut e| {
            e.message = format!("{field}: {}", e.message);
            e
        })?;
        if parts.is_empty() {
            parts.push((path, 1.0));
        }
        sim.add_batch(f.start_ns, parts.into_iter().map(|(p, share)| (p, f.bytes * share)), 1, i as u64);
    }
    let mut out = vec![f64::NAN; flows.len()];
    let mut finished = Vec::new();
    while sim.step(&mut finished).is_some() {
        for (tag, t) in finished.drain(..) {
            out[tag as usize] = t;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod fault_tests;
#[cfg(test)]
mod reference_tests;
#[cfg(test)]
mod tests;
