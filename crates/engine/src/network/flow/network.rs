//! [`FlowNetwork`]: the flow model behind the executor's [`NetworkModel`] interface.
//!
//! A collective issued by a rank class covers every instance of its group among that class's
//! ranks; each instance runs its own schedule (phases of transfers from a collective algorithm)
//! and all instances share the network. A transfer from rank `src` to `dst` stands for every
//! rank r of `src`'s class sending to r + (dst − src). Rank r is GPU node r of the topology.
//! Transfers between GPUs of one server go through the server's NVSwitches, split evenly over
//! them as NVLink traffic spreads over all switch planes; a `Switch` endpoint is split the same
//! way. A `Node` endpoint is that platform node (a reduction server's CPU, a switch that
//! reduces), reached as the fabric routes to it.
//!
//! A collective runs with its schedule's timing ([`crate::collective::nccl`]): its wire carries
//! bytes / efficiency (the protocol's flags, the algorithm's efficiency); NCCL's base latency is
//! waited once before the first step, and each step (every repetition of every phase) then
//! waits its share of the hops' latency, H / steps, before its bytes move (NCCL's per-hop
//! latencies already hold the fabric's path latency, so its transfers pay none of their own):
//! T = base + Σ_steps (H / steps + the step's transfer time), the α–β price of
//! [`crate::collective::cost`]. With SimAI's AS_SEND_LAT every step instead waits the send
//! latency plus its path latency, and a ring's steps follow the data rank by rank as SimAI's do
//! (each rank's next send waits for what it receives, not for the whole step: [`Chain`]).
//!
//! Each communication is routed once, the first time it is issued: a communicator keeps its
//! connections, so the same collective on the same group takes the same ECMP paths every time
//! (a collision of two flows persists, as it does on a real fabric without adaptive routing).
//!
//! Faults ([`crate::platform::fault`], [`FlowNetwork::set_faults`]) are events at their times: a
//! degraded link gets its lower capacity; a link that goes down leaves the routing (the platform
//! routes around it), and every flow crossing it — in flight, waiting, or routed before and
//! launched later — takes the fabric's route without it, hashed from its old path (`reroute`);
//! a communication left with no path stops the run with an error naming its group and ranks.

use std::collections::HashMap;
use std::rc::Rc;

use super::{FlowSim, Wait};
use crate::collective::choose::{self, Options};
use crate::collective::nccl::{nic_gbps, nvlink_gbps, p2p_latency_ns};
use crate::collective::tuner_links::{default_channels, TunerLinks};
use crate::collective::{group_channels, Algorithm, Endpoint, GroupTopo, Schedule};
use crate::error::{InputError, Result};
use crate::network::packet::{PacketConfig, PacketSim};
use crate::network::Transfers;
use crate::network::{Comm, NetworkModel};
use crate::platform::fault::Fault;
use crate::platform::routing::{link_between, Router, Routes};
use crate::platform::window::read_ceiling;
use crate::platform::{NodeKind, Placement, Platform, Routing};
use crate::workload::{Collective, GroupId, OpKind, Peer, Workload};

/// Turns one collective on one group instance into a schedule (an algorithm choice, fixed or
/// automatic, wrapped around the collective-algorithm module).
pub type Scheduler = Box<dyn FnMut(Collective, &GroupTopo, u64) -> Result<Schedule>>;

/// A scheduler that always runs `algorithm` over `channels` channels.
pub fn fixed_algorithm(algorithm: Algorithm, channels: u32) -> Scheduler {
    Box::new(move |c, g, bytes| crate::collective::schedule(c, algorithm, g, bytes, channels))
}

/// A scheduler that picks each collective's algorithm as NCCL's tuner would
/// ([`choose::choose`] on the group's `links` with `options`; `options.algorithm` forces one)
/// and runs it over `channels` channels (0: [`group_channels`] of at most `nics`).
pub fn auto_algorithm(links: Rc<TunerLinks>, options: Options, channels: u32, nics: u32) -> Scheduler {
    Box::new(move |c, g, bytes| {
        let channels = if channels == 0 { group_channels(g, nics) } else { channels };
        Ok(choose::choose(c, g, bytes, channels, &links.group(g), &options)?.schedule)
    })
}

/// How a flow network runs collectives: NCCL's tuner choice (or a forced algorithm) with SimAI's
/// AS_* switches, over `channels` channels (0: per group, one ring per group rank of a server as
/// SimAI builds them, at most one per NIC of a server), `qps` queue pairs per connection
/// (NCCL_IB_QPS_PER_CONNECTION; 0 means NCCL's default, 1), ECMP `seed`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tuning {
    pub options: Options,
    pub channels: u32,
    pub qps: u32,
    pub seed: u64,
}

impl FlowNetwork {
    /// A flow network on `topo` tuned by `t`; `wrap` may observe the scheduler's choices.
    pub fn tuned(mut topo: Platform, t: &Tuning, wrap: impl FnOnce(Scheduler) -> Scheduler) -> Result<FlowNetwork> {
        if t.options.send_lat_us.is_none() {
            cap_nvlink(&mut topo);
            cap_nic(&mut topo);
        }
        let links = Rc::new(TunerLinks::of(&topo)?);
        let scheduler = wrap(auto_algorithm(links.clone(), t.options.clone(), t.channels, default_channels(&topo)));
        // NVLS schedules need in-switch reduction: offered wherever a domain's switch reduces.
        let nvls = (0..topo.placement.domains()).any(|d| topo.reduces_in_switch(d));
        let mut net = FlowNetwork::new(topo, scheduler, t.seed, nvls);
        net.qps = t.qps.max(1);
        net.forced = t.options.clone();
        net.rate_class = links.class.clone();
        // A positive AS_SEND_LAT is SimAI's run; 0 is also how the cm02 collectives of workload
        // graphs ask for steps that pay only their path, all at once.
        net.simai_steps = t.options.send_lat_us.is_some_and(|x| x > 0.0);
        // Point-to-point sends wait NCCL's p2p latency, or AS_SEND_LAT and their path latency.
        net.p2p_wait = match t.options.send_lat_us {
            Some(us) => [Wait::Path { extra_ns: us * 1e3 }; 2],
            None => {
                let alpha = (links.alpha_nvlink_ns, links.alpha_net_ns);
                [Wait::Fixed(p2p_latency_ns(false, alpha)), Wait::Fixed(p2p_latency_ns(true, alpha))]
            }
        };
        Ok(net)
    }
}

/// NVLink at the payload rate NCCL achieves on the fabric's GPU type ([`nvlink_gbps`]): a GPU
/// whose links to its NVSwitches sum to more have them scaled down, both directions, to that sum
/// (a SimAI fabric's 360 GB/s H100 NVLink stays; an A100 described at its 300 GB/s line rate
/// carries 240).
fn cap_nvlink(topo: &mut Platform) {
    for rank in 0..topo.placement.ranks() {
        let gpu = topo.placement.device(rank);
        let Some(cap) = nvlink_gbps(topo.accelerator_type(gpu)) else { continue };
        let t = &*topo;
        let is_nvlink = |l: u32| {
            let link = &t.links[l as usize];
            t.kinds[link.src as usize] == NodeKind::NvSwitch || t.kinds[link.dst as usize] == NodeKind::NvSwitch
        };
        let ids: Vec<u32> = t.out_links(gpu).iter().chain(t.in_links(gpu)).copied().filter(|&l| is_nvlink(l)).collect();
        let up: f64 =
            ids.iter().filter(|&&l| topo.links[l as usize].src == gpu).map(|&l| topo.links[l as usize].bandwidth).sum();
        if up > cap {
            for l in ids {
                topo.links[l as usize].bandwidth *= cap / up;
            }
        }
    }
}

/// NICs of an RDMA fabric at the payload rate NCCL achieves through them ([`nic_gbps`]): a link
/// between a GPU or NIC and a switch declared with `transport=` carries its line rate less the
/// framing (the platform file's rule); its line rate is that over the transport's efficiency,
/// and where NCCL reaches less through a NIC of that line rate, the link is scaled down to it.
/// Links of fabrics without a declared transport (SimAI's files and templates, whose rates are
/// taken as given) are left alone.
fn cap_nic(topo: &mut Platform) {
    let host = |kind: NodeKind| matches!(kind, NodeKind::Gpu | NodeKind::Nic);
    for i in 0..topo.links.len() {
        let link = topo.links[i];
        let (src, dst) = (link.src as usize, link.dst as usize);
        let switch = match (host(topo.kinds[src]), host(topo.kinds[dst])) {
            (true, false) => dst,
            (false, true) => src,
            _ => continue,
        };
        let Some(transport) = topo.attrs.get(switch).and_then(|a| a.transport) else { continue };
        let line_gbps = link.bandwidth / transport.efficiency() * 8.0;
        if let Some(cap) = nic_gbps(line_gbps).filter(|&cap| cap < link.bandwidth) {
            topo.links[i].bandwidth = cap;
        }
    }
}

/// A schedule's cache key: collective, bytes, [`schedule_shape`], and the member ranks where the
/// schedule depends on them ([`crate::collective::CollectiveAlgorithm::per_group`]).
type ScheduleKey = (Collective, u64, Vec<(u32, u32, u32)>, Option<Vec<u32>>);

/// What a group's schedule depends on besides the collective and its size: for each member in
/// group order, its scale-up domain (numbered by first appearance), its rail there (which PXN
/// relays through) and its rate class (which the tuner prices with). Groups of one shape share
/// a schedule.
fn schedule_shape(ranks: &[u32], placement: &Placement, rate_class: &[u32]) -> Vec<(u32, u32, u32)> {
    let mut seen: Vec<u32> = Vec::new();
    ranks
        .iter()
        .map(|&r| {
            let server = placement.domain(r);
            let index = seen.iter().position(|&s| s == server).unwrap_or_else(|| {
                seen.push(server);
                seen.len() - 1
            });
            (index as u32, placement.rail(r), rate_class.get(r as usize).copied().unwrap_or(0))
        })
        .collect()
}

/// Flows between platform nodes in groups, each group's flows waiting the same extra latency
/// and reading with the same window: (extra ns, window bytes, [(source node, destination node,
/// bytes)]). A flow of window W over a path of latency α is capped at W / (2α + extra)
/// ([`crate::platform::window`]); an infinite window caps nothing.
pub type NodeFlows = Vec<(f64, f64, Vec<(u32, u32, f64)>)>;

/// One phase ready to start: flows as (links, bytes), how many runs, what each flow waits, each
/// flow's rate ceiling (none when empty), and its [`Chain`] when its runs chain per transfer.
type ReadyPhase = (Vec<(Rc<[u32]>, f64)>, u32, Wait, Rc<[f64]>, Option<Rc<Chain>>);

/// A phase whose runs follow the data rank by rank instead of all at once (SimAI's rings, with
/// `AS_SEND_LAT`): in every run each rank sends to its successor what it received in the run
/// before, so run k + 1 of a transfer starts (after its wait) as soon as run k of the transfer
/// into its source has arrived, not when every transfer of run k has. A rank that receives on
/// several channels pairs its m-th incoming transfer (in the phase's order, which lists the
/// channels' rings one after the other) with its m-th outgoing one.
struct Chain {
    /// The phase's flows of transfer j: `flows[j]..flows[j + 1]`.
    flows: Vec<u32>,
    /// The transfer that transfer j feeds.
    feeds: Vec<u32>,
}

impl Chain {
    /// The chain of a phase whose every rank receives as many transfers as it sends (a ring
    /// successor phase), None otherwise; `flows[j]` as in [`Chain::flows`].
    fn of(transfers: &[crate::collective::Transfer], flows: Vec<u32>) -> Option<Chain> {
        let mut out: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut inc: HashMap<u32, Vec<u32>> = HashMap::new();
        for (j, t) in transfers.iter().enumerate() {
            let (Endpoint::Rank(a), Endpoint::Rank(b)) = (t.src, t.dst) else { return None };
            out.entry(a).or_default().push(j as u32);
            inc.entry(b).or_default().push(j as u32);
        }
        let mut feeds = vec![u32::MAX; transfers.len()];
        for (rank, sent) in &out {
            let got = inc.get(rank)?;
            if got.len() != sent.len() {
                return None;
            }
            for (&i, &o) in got.iter().zip(sent) {
                feeds[i as usize] = o;
            }
        }
        if feeds.contains(&u32::MAX) {
            return None;
        }
        Some(Chain { flows, feeds })
    }
}

/// A chained phase of one instance in progress ([`Chain`]).
struct ChainRun {
    token: u64,
    /// The communication and the instance of its group, for messages.
    origin: (RouteKey, u32),
    phases: Rc<[ReadyPhase]>,
    /// The phase after this one.
    next: usize,
    chain: Rc<Chain>,
    /// Runs started and arrived, per transfer.
    started: Vec<u32>,
    arrived: Vec<u32>,
    /// Transfer runs not yet arrived.
    left: u64,
}

/// Batch tags of a chained phase's transfer runs: this bit, the chain run's slot << 32, the
/// transfer.
const CHAIN_TAG: u64 = 1 << 63;

/// What a communication routes to: the phases of each group instance (or of all pairs of a
/// transfer).
type Routed = Rc<Vec<Rc<[ReadyPhase]>>>;

/// A communication whose routes are kept: a collective (group, class, collective, bytes) or a
/// transfer (src, dst, bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum RouteKey {
    Collective(GroupId, u32, Collective, u64),
    Transfer(u32, u32, u64),
    /// (group, class, offset, bytes, copy) of a [`Comm::Shift`].
    Shift(GroupId, u32, i32, u64, bool),
    /// Flows between platform nodes ([`FlowNetwork::start_node_flows`]): the caller's key, bytes.
    Nodes(u64, u64),
}

/// One group instance (or all pairs of a transfer) working through its phases.
struct InstanceRun {
    token: u64,
    /// The communication and the instance of its group, for messages.
    origin: (RouteKey, u32),
    phases: Rc<[ReadyPhase]>,
    /// The next phase to start.
    next: usize,
}

pub struct FlowNetwork {
    topo: Platform,
    router: Router,
    user_routes: Routes,
    /// What moves the phases' transfers: max-min fair flows, or packets.
    sim: Box<dyn Transfers>,
    scheduler: Scheduler,
    nvls: bool,
    /// Queue pairs per connection, each its own ECMP hash.
    qps: u32,
    rank_class: Vec<u32>,
    /// Each rank's class of port rates and generation ([`TunerLinks`]): the tuner's choice
    /// depends on it, so schedules are shared only within one (empty: one class).
    rate_class: Vec<u32>,
    /// Instances of each (group, class): member ranks in group order.
    instances: HashMap<(GroupId, u32), Rc<Vec<Vec<u32>>>>,
    /// Schedules by (collective, bytes, [`schedule_shape`] of the members).
    schedules: HashMap<ScheduleKey, Rc<Schedule>>,
    /// The tuner's options: where they force an algorithm whose schedule depends on the group's
    /// own GPUs ([`crate::collective::CollectiveAlgorithm::per_group`]), schedules are kept per
    /// group, not per shape.
    forced: Options,
    /// Routes by communication: a communicator keeps its connections, and so their ECMP paths,
    /// from one call to the next (as NCCL does).
    routes: HashMap<RouteKey, Routed>,
    runs: Vec<Option<InstanceRun>>,
    free_runs: Vec<u32>,
    chains: Vec<Option<ChainRun>>,
    free_chains: Vec<u32>,
    /// Instances still running per communication token.
    pending: HashMap<u64, u32>,
    next_flow: u64,
    finished: Vec<(u64, f64)>,
    /// Tokens finished at `clock` but not yet handed out.
    ready: Vec<u64>,
    clock: f64,
    /// What a point-to-point transfer waits before it moves: across servers, inside one.
    p2p_wait: [Wait; 2],
    seed: u64,
    /// Faults of the run in time order, the next to apply, each link's bandwidth before any,
    /// the links down, and the faults that took links down so far (for messages).
    faults: Vec<Fault>,
    next_fault: usize,
    base_cap: Vec<f64>,
    down: Vec<bool>,
    down_what: Vec<String>,
    /// Group names by id (TP, DP, ...), for messages.
    group_names: Vec<String>,
    /// SimAI's timing (`AS_SEND_LAT` > 0): ring steps follow the data rank by rank ([`Chain`]), and
    /// on the packet backend a transfer is done when its sender has the last ACK, as SimAI's next
    /// step waits for.
    simai_steps: bool,
}

impl FlowNetwork {
    /// `seed` drives ECMP; `nvls` tells schedules that NVSwitches reduce in-switch.
    pub fn new(topo: Platform, scheduler: Scheduler, seed: u64, nvls: bool) -> FlowNetwork {
        let router = Router::new(&topo, seed);
        let sim: Box<dyn Transfers> = Box::new(FlowSim::new(&topo));
        FlowNetwork {
            topo,
            router,
            user_routes: Routes::default(),
            sim,
            scheduler,
            nvls,
            qps: 1,
            rank_class: Vec::new(),
            rate_class: Vec::new(),
            instances: HashMap::new(),
            schedules: HashMap::new(),
            forced: Options::default(),
            routes: HashMap::new(),
            runs: Vec::new(),
            free_runs: Vec::new(),
            chains: Vec::new(),
            free_chains: Vec::new(),
            pending: HashMap::new(),
            next_flow: 0,
            finished: Vec::new(),
            ready: Vec::new(),
            clock: 0.0,
            p2p_wait: [Wait::Path { extra_ns: 0.0 }; 2],
            seed,
            faults: Vec::new(),
            next_fault: 0,
            base_cap: Vec::new(),
            down: Vec::new(),
            down_what: Vec::new(),
            group_names: Vec::new(),
            simai_steps: false,
        }
    }

    /// Move the transfers as packets ([`crate::network::packet`]) with `config` instead of as
    /// max-min fair flows; call before the first communication starts.
    pub fn use_packets(&mut self, config: PacketConfig) -> Result<()> {
        let mut sim = PacketSim::new(&self.topo, config)?;
        // SimAI's steps wait for the sender's queue pair to finish (its last ACK).
        sim.set_complete_on_ack(self.simai_steps);
        self.sim = Box::new(sim);
        Ok(())
    }

    /// Send every flow between the end nodes of a user route along it.
    pub fn set_routes(&mut self, routes: Routes) {
        self.user_routes = routes;
    }

    /// Apply `faults` ([`crate::platform::fault`]) during the run; call after
    /// [`FlowNetwork::use_packets`], before the first communication starts.
    pub fn set_faults(&mut self, faults: Vec<Fault>) -> Result<()> {
        if faults.is_empty() {
            return Ok(());
        }
        if self.simai_steps {
            // Chained ring steps route each transfer as it starts; moving them off a dead link
            // is not written yet.
            return Err(crate::error::InputError::field(
                "command line",
                "fault",
                "faults are not taken with SimAI's step timing (AS_SEND_LAT > 0) yet",
            ));
        }
        self.sim.take_faults()?;
        self.base_cap = self.topo.links.iter().map(|l| l.bandwidth).collect();
        self.down = vec![false; self.topo.links.len()];
        self.faults = faults;
        Ok(())
    }

    /// Apply every fault due at or before `until`, each at its own time.
    fn faults_until(&mut self, until: f64) -> Result<()> {
        while let Some(f) = self.faults.get(self.next_fault).filter(|f| f.at_ns <= until).cloned() {
            self.next_fault += 1;
            self.apply_fault(&f)?;
        }
        Ok(())
    }

    fn apply_fault(&mut self, f: &Fault) -> Result<()> {
        let at = f.at_ns.max(self.clock);
        if !f.is_down() {
            let capacity: Vec<(u32, f64)> = f
                .links
                .iter()
                .filter(|&&l| !self.down[l as usize])
                .map(|&l| (l, self.base_cap[l as usize] * f.factor))
                .collect();
            return self.sim.fault(at, &capacity, &[], &mut |_, p| Ok(p.into()));
        }
        let newly: Vec<u32> = f.links.iter().copied().filter(|&l| !self.down[l as usize]).collect();
        for &l in &newly {
            self.down[l as usize] = true;
        }
        self.down_what.push(format!("{} went down at {}", f.what, time_text(f.at_ns)));
        self.topo.route_around(&self.down);
        self.router = Router::new(&self.topo, self.seed);
        let (topo, router, runs) = (&self.topo, &mut self.router, &self.runs);
        let (instances, names, down_what) = (&self.instances, &self.group_names, &self.down_what);
        let mut reroute = |tag: u64, old: &[u32]| {
            let origin = runs[tag as usize].as_ref().map(|r| r.origin);
            reroute(
                topo,
                router,
                old,
                || origin.map_or("a transfer".into(), |o| describe(instances, names, o)),
                down_what,
            )
        };
        self.sim.fault(at, &[], &newly, &mut reroute)
    }

    pub fn topology(&self) -> &Platform {
        &self.topo
    }

    /// Bytes carried so far by each directed link (index = topology link id); divide by the
    /// link bandwidth and the run time for utilisation.
    pub fn carried_bytes(&self) -> &[f64] {
        self.sim.carried_bytes()
    }

    /// Queue pairs finished so far, on the packet backend (SimAI's FCT lines); empty on flows.
    pub fn flow_records(&self) -> &[crate::network::packet::FlowRecord] {
        self.sim.flow_records()
    }

    /// Max-min re-solves so far.
    pub fn solves(&self) -> u64 {
        self.sim.solves()
    }

    /// Flows of one transfer (a connection) between two nodes, appended to `out`: over the
    /// NVSwitches inside a server, else as the fabric routes it: per-flow ECMP hashes each of
    /// the connection's `qps` queue pairs on its own and splits the bytes evenly over them;
    /// spraying splits the bytes over every equal-cost path (QPs then change nothing).
    fn flows_between(&mut self, a: u32, b: u32, bytes: f64, out: &mut Vec<(Rc<[u32]>, f64)>) -> Result<()> {
        if let Some(links) = self.user_routes.get(a, b) {
            out.push((links.into(), bytes));
            return Ok(());
        }
        let t = &self.topo;
        if let Some(domain) = t.domain_of(a).filter(|&d| a != b && t.domain_of(b) == Some(d)) {
            let via: Vec<Vec<u32>> = t
                .nvswitches(domain)
                .iter()
                .filter_map(|&s| Some(vec![link_between(t, a, s)?, link_between(t, s, b)?]))
                .collect();
            if !via.is_empty() {
                let share = bytes / via.len() as f64;
                out.extend(via.into_iter().map(|p| (p.into(), share)));
                return Ok(());
            }
        }
        match self.topo.routing {
            Routing::Spray => {
                let mut paths = Vec::new();
                self.router.spray(&self.topo, a, b, &mut paths)?;
                out.extend(paths.into_iter().map(|(p, share)| (p.into(), bytes * share)));
            }
            Routing::Ecmp => {
                let share = bytes / self.qps as f64;
                for _ in 0..self.qps {
                    let mut path = Vec::new();
                    self.router.route(&self.topo, a, b, self.next_flow, &mut path)?;
                    self.next_flow += 1;
                    out.push((path.into(), share));
                }
            }
        }
        Ok(())
    }

    fn endpoint_nodes(&self, e: Endpoint, ranks: &[u32], servers: &[u32]) -> Result<Vec<u32>> {
        match e {
            Endpoint::Rank(i) => ranks.get(i as usize).map(|&r| vec![self.topo.placement.device(r)]).ok_or_else(|| {
                InputError::internal(
                    "collective schedule",
                    format!("rank index {i} outside a group of {}", ranks.len()),
                )
            }),
            Endpoint::Switch { server } => {
                let s = *servers.get(server as usize).ok_or_else(|| {
                    InputError::internal(
                        "collective schedule",
                        format!("server index {server} outside a group on {} servers", servers.len()),
                    )
                })?;
                let nvs = self.topo.nvswitches(s);
                if nvs.is_empty() {
                    return Err(InputError::new(
                        "topology",
                        format!("the schedule reduces in the NVSwitch of server {s}, which has none"),
                    ));
                }
                Ok(nvs.to_vec())
            }
            Endpoint::Node(v) if v < self.topo.node_count() && self.topo.rank_on(v).is_none() => Ok(vec![v]),
            Endpoint::Node(v) => Err(InputError::internal(
                "collective schedule",
                format!("node {v} is not a platform node outside the ranks ({} nodes)", self.topo.node_count()),
            )),
        }
    }

    /// Route every phase of `schedule` on `ranks`, with its timing applied.
    fn route_schedule(&mut self, schedule: &Schedule, ranks: &[u32]) -> Result<Rc<[ReadyPhase]>> {
        let timing = &schedule.timing;
        let wait = match timing.step_ns(schedule.steps()) {
            (x, true) => Wait::Path { extra_ns: x },
            (x, false) => Wait::Fixed(x),
        };
        let wire = 1.0 / timing.efficiency;
        let mut servers: Vec<u32> = Vec::new();
        for &r in ranks {
            let domain = self.topo.placement.domain(r);
            if !servers.contains(&domain) {
                servers.push(domain);
            }
        }
        let mut phases = Vec::with_capacity(schedule.phases.len() + 1);
        if timing.call_latency_ns > 0.0 && !schedule.phases.is_empty() {
            // The call's base latency: one flow on no link that starts after it and ends at once.
            phases.push((vec![(Rc::from([]), 0.0)], 1, Wait::Fixed(timing.call_latency_ns), Rc::from([]), None));
        }
        for ph in &schedule.phases {
            if ph.repeat == 0 || ph.transfers.is_empty() {
                continue;
            }
            let mut flows = Vec::new();
            let mut starts = Vec::with_capacity(ph.transfers.len() + 1);
            for tr in &ph.transfers {
                starts.push(flows.len() as u32);
                let srcs = self.endpoint_nodes(tr.src, ranks, &servers)?;
                let dsts = self.endpoint_nodes(tr.dst, ranks, &servers)?;
                let share = tr.bytes * wire / (srcs.len() * dsts.len()) as f64;
                for &a in &srcs {
                    for &b in &dsts {
                        self.flows_between(a, b, share, &mut flows)?;
                    }
                }
            }
            starts.push(flows.len() as u32);
            // SimAI's steps (a send latency per step) follow the data around each ring.
            let chained = self.simai_steps && ph.repeat > 1;
            let chain = if chained { Chain::of(&ph.transfers, starts).map(Rc::new) } else { None };
            phases.push((flows, ph.repeat, wait, Rc::from([]), chain));
        }
        Ok(phases.into())
    }

    fn schedule_for(&mut self, c: Collective, ranks: &[u32], bytes: u64) -> Result<Rc<Schedule>> {
        let g = GroupTopo::new(ranks, &self.topo.placement, self.nvls);
        let own = self.forced.forced(c, &g).is_some_and(|a| a.per_group()).then(|| ranks.to_vec());
        let key = (c, bytes, schedule_shape(ranks, &self.topo.placement, &self.rate_class), own);
        if let Some(s) = self.schedules.get(&key) {
            return Ok(s.clone());
        }
        let s = Rc::new((self.scheduler)(c, &g, bytes)?);
        self.schedules.insert(key, s.clone());
        Ok(s)
    }

    /// Launch every instance of a routed communication, `token` done when all are (at once when
    /// there are none).
    fn launch_all(&mut self, now_ns: f64, token: u64, key: RouteKey, routed: &[Rc<[ReadyPhase]>]) -> Result<()> {
        if routed.is_empty() {
            self.ready.push(token);
            return Ok(());
        }
        self.pending.insert(token, routed.len() as u32);
        for (i, phases) in routed.iter().enumerate() {
            self.launch(now_ns, token, (key, i as u32), phases.clone(), 0)?;
        }
        Ok(())
    }

    /// Start the next phase of instance run `id` (a fresh one when None), or finish it.
    fn launch(
        &mut self,
        now: f64,
        token: u64,
        origin: (RouteKey, u32),
        phases: Rc<[ReadyPhase]>,
        next: usize,
    ) -> Result<()> {
        let Some((flows, repeat, wait, ceil, chain)) = phases.get(next) else {
            self.instance_done(token);
            return Ok(());
        };
        if let Some(chain) = chain {
            let id = match self.free_chains.pop() {
                Some(i) => i,
                None => {
                    self.chains.push(None);
                    (self.chains.len() - 1) as u32
                }
            };
            let transfers = chain.feeds.len();
            let (chain, wait) = (chain.clone(), *wait);
            self.chains[id as usize] = Some(ChainRun {
                token,
                origin,
                phases: phases.clone(),
                next: next + 1,
                chain: chain.clone(),
                started: vec![1; transfers],
                arrived: vec![0; transfers],
                left: transfers as u64 * u64::from(*repeat),
            });
            for j in 0..transfers as u32 {
                self.launch_transfer(now, id, j, &phases[next].0, &chain, wait);
            }
            return Ok(());
        }
        let id = match self.free_runs.pop() {
            Some(i) => i,
            None => {
                self.runs.push(None);
                (self.runs.len() - 1) as u32
            }
        };
        let ceiling = |i: usize| ceil.get(i).copied().unwrap_or(f64::INFINITY);
        let mut batch: Vec<(Rc<[u32]>, f64, f64)> =
            flows.iter().enumerate().map(|(i, (p, b))| (p.clone(), *b, ceiling(i))).collect();
        if !self.down_what.is_empty() {
            // Routed before a link went down (a communicator's kept connections, a user route):
            // what crosses a dead link moves, as in-flight flows did.
            let (topo, router, down) = (&self.topo, &mut self.router, &self.down);
            for (path, _, _) in batch.iter_mut().filter(|(p, _, _)| p.iter().any(|&l| down[l as usize])) {
                let what = || describe(&self.instances, &self.group_names, origin);
                *path = reroute(topo, router, path, what, &self.down_what)?;
            }
        }
        self.sim.add_batch(now, batch, *repeat, id as u64, *wait);
        self.runs[id as usize] = Some(InstanceRun { token, origin, phases: phases.clone(), next: next + 1 });
        Ok(())
    }

    /// One run of transfer `j` of chained phase run `id`.
    fn launch_transfer(&mut self, now: f64, id: u32, j: u32, flows: &[(Rc<[u32]>, f64)], chain: &Chain, wait: Wait) {
        let (a, b) = (chain.flows[j as usize] as usize, chain.flows[j as usize + 1] as usize);
        let batch = flows[a..b].iter().map(|(p, bytes)| (p.clone(), *bytes, f64::INFINITY)).collect();
        self.sim.add_batch(now, batch, 1, CHAIN_TAG | (u64::from(id) << 32) | u64::from(j), wait);
    }

    /// A run of transfer `j` of chained phase run `id` has arrived at `t`: the transfer it feeds
    /// may start its next run; the phase is done when every run of every transfer has arrived.
    fn transfer_arrived(&mut self, t: f64, id: u32, j: u32) -> Result<()> {
        let c = self.chains[id as usize].as_mut().expect("running chain");
        c.arrived[j as usize] += 1;
        c.left -= 1;
        if c.left == 0 {
            let c = self.chains[id as usize].take().expect("running chain");
            self.free_chains.push(id);
            return self.launch(t, c.token, c.origin, c.phases, c.next);
        }
        let d = c.chain.feeds[j as usize] as usize;
        let repeat = c.phases[c.next - 1].1;
        if c.started[d] < repeat && c.arrived[j as usize] >= c.started[d] {
            c.started[d] += 1;
            let (phases, chain, next) = (c.phases.clone(), c.chain.clone(), c.next - 1);
            let wait = phases[next].2;
            self.launch_transfer(t, id, d as u32, &phases[next].0, &chain, wait);
        }
        Ok(())
    }

    /// The routed phases of a communication, routed the first time.
    fn routed(&mut self, key: RouteKey, comm: &Comm) -> Result<Routed> {
        if let Some(r) = self.routes.get(&key) {
            return Ok(r.clone());
        }
        let routed: Vec<Rc<[ReadyPhase]>> = match *comm {
            Comm::Collective { collective, group, bytes, class } => {
                let inst = self.instances.get(&(group, class)).cloned().ok_or_else(|| {
                    InputError::internal(
                        "flow model",
                        format!("collective on group {group} of class {class} was not prepared"),
                    )
                })?;
                let mut all = Vec::with_capacity(inst.len());
                for ranks in inst.iter() {
                    let s = self.schedule_for(collective, ranks, bytes)?;
                    all.push(self.route_schedule(&s, ranks)?);
                }
                all
            }
            Comm::Transfer { src, dst, bytes } => {
                let world = self.rank_class.len() as i64;
                let class = *self.rank_class.get(src as usize).ok_or_else(|| {
                    InputError::internal("flow model", format!("transfer from rank {src} outside the world of {world}"))
                })?;
                let shift = dst as i64 - src as i64;
                let mut flows = Vec::new();
                for r in 0..world {
                    if self.rank_class[r as usize] != class {
                        continue;
                    }
                    let d = r + shift;
                    if !(0..world).contains(&d) {
                        return Err(InputError::new(
                            "workload",
                            format!("transfer {src} -> {dst} maps rank {r} to {d}, outside the world of {world}"),
                        ));
                    }
                    let p = &self.topo.placement;
                    self.flows_between(p.device(r as u32), p.device(d as u32), bytes as f64, &mut flows)?;
                }
                let wait = self.p2p_wait[usize::from(self.topo.placement.same_domain(src, dst))];
                vec![Rc::from([(flows, 1, wait, Rc::from([]), None)])]
            }
            Comm::Shift { group, offset, class, bytes, copy, .. } => {
                // Every rank of the class to its peer in its group instance: a copy waits only
                // its path latency (no NCCL call), NCCL sends their p2p latency.
                let inst = self.instances.get(&(group, class)).cloned().ok_or_else(|| {
                    InputError::internal(
                        "flow model",
                        format!("shift on group {group} of class {class} was not prepared"),
                    )
                })?;
                let mut flows = Vec::new();
                // The ranks run in lock step: one pair across scale-up domains sets the latency.
                let mut inside = true;
                for ranks in inst.iter() {
                    let n = ranks.len() as i64;
                    for (i, &r) in ranks.iter().enumerate() {
                        if self.rank_class[r as usize] == class {
                            let d = ranks[(i as i64 + offset as i64).rem_euclid(n) as usize];
                            let p = &self.topo.placement;
                            inside &= p.same_domain(r, d);
                            self.flows_between(p.device(r), p.device(d), bytes as f64, &mut flows)?;
                        }
                    }
                }
                let wait = match copy {
                    true => Wait::Path { extra_ns: 0.0 },
                    false => self.p2p_wait[usize::from(inside)],
                };
                vec![Rc::from([(flows, 1, wait, Rc::from([]), None)])]
            }
        };
        let routed = Rc::new(routed);
        self.routes.insert(key, routed.clone());
        Ok(routed)
    }

    /// Start a communication of flows between any platform nodes (a workload graph's reads of
    /// remote memory): each group of (source node, destination node, bytes) waits its path
    /// latency plus its `extra_ns` and then moves as the fabric routes it; the communication
    /// ends when every flow has. Routed the first time `key` (the caller's name for it) comes
    /// with these bytes; `groups` is only called then.
    pub fn start_node_flows(
        &mut self,
        now_ns: f64,
        token: u64,
        key: (u64, u64),
        groups: impl FnOnce() -> NodeFlows,
    ) -> Result<()> {
        self.clock = now_ns;
        let key = RouteKey::Nodes(key.0, key.1);
        let routed = match self.routes.get(&key) {
            Some(r) => r.clone(),
            None => {
                let mut all: Vec<Rc<[ReadyPhase]>> = Vec::new();
                for (extra_ns, window, pairs) in groups() {
                    let mut flows = Vec::with_capacity(pairs.len());
                    let mut ceil = Vec::new();
                    for (a, b, bytes) in pairs {
                        let first = flows.len();
                        self.flows_between(a, b, bytes, &mut flows)?;
                        if window.is_finite() {
                            // Split over paths, the window splits with the bytes.
                            for (path, part) in &flows[first..] {
                                let lat: f64 = path.iter().map(|&l| self.topo.links[l as usize].latency_ns).sum();
                                let w = if bytes > 0.0 { window * part / bytes } else { window };
                                ceil.push(read_ceiling(w, lat, extra_ns));
                            }
                        }
                    }
                    all.push(Rc::from([(flows, 1, Wait::Path { extra_ns }, Rc::from(ceil), None)]));
                }
                let r = Rc::new(all);
                self.routes.insert(key, r.clone());
                r
            }
        };
        self.faults_until(now_ns)?;
        self.launch_all(now_ns, token, key, &routed)
    }

    fn instance_done(&mut self, token: u64) {
        let left = self.pending.get_mut(&token).expect("pending communication");
        *left -= 1;
        if *left == 0 {
            self.pending.remove(&token);
            self.ready.push(token);
        }
    }
}

impl NetworkModel for FlowNetwork {
    fn prepare(&mut self, w: &Workload) -> Result<()> {
        if w.world_size() > self.topo.placement.ranks() {
            return Err(InputError::new(
                "topology",
                format!(
                    "the workload has {} ranks but the topology only {} GPUs",
                    w.world_size(),
                    self.topo.placement.ranks()
                ),
            ));
        }
        self.rank_class = w.rank_class.clone();
        self.group_names = w.groups.iter().map(|g| g.name.clone()).collect();
        let mut needed: Vec<(GroupId, u32)> = Vec::new();
        let reps = w.class_representatives();
        let mut sends: std::collections::HashSet<(usize, Peer)> = Default::default();
        // A send to a peer of the same class: a shift along the group's instances.
        let shifts_within = |class: usize, peer: Peer| {
            if reps[class] == u32::MAX {
                return false;
            }
            w.rank_class[w.peer_rank(reps[class], peer) as usize] == class as u32
        };
        for (class, &prog) in w.class_program.iter().enumerate() {
            for op in &w.programs[prog as usize].ops {
                match op.kind {
                    OpKind::Collective { group, .. } => needed.push((group, class as u32)),
                    OpKind::Send { peer, .. } => {
                        sends.insert((class, peer));
                    }
                    _ => {}
                }
            }
        }
        needed.extend(sends.into_iter().filter(|&(c, p)| shifts_within(c, p)).map(|(c, p)| (p.group, c as u32)));
        needed.sort_unstable();
        needed.dedup();
        for (group, class) in needed {
            let mut covered = vec![false; w.rank_class.len()];
            let mut inst = Vec::new();
            for r in 0..w.world_size() {
                if w.rank_class[r as usize] != class || covered[r as usize] {
                    continue;
                }
                let members = w.group_members(group, r);
                for &m in &members {
                    covered[m as usize] = true;
                }
                inst.push(members);
            }
            self.instances.insert((group, class), Rc::new(inst));
        }
        Ok(())
    }

    fn start(&mut self, now_ns: f64, comm: &Comm, token: u64) -> Result<()> {
        self.clock = now_ns;
        let key = match *comm {
            Comm::Collective { collective, group, bytes, class } => {
                RouteKey::Collective(group, class, collective, bytes)
            }
            Comm::Transfer { src, dst, bytes } => RouteKey::Transfer(src, dst, bytes),
            Comm::Shift { group, offset, class, bytes, copy, .. } => RouteKey::Shift(group, class, offset, bytes, copy),
        };
        self.faults_until(now_ns)?;
        let routed = match self.routed(key, comm) {
            Err(e) if !self.down_what.is_empty() => {
                let what = describe(&self.instances, &self.group_names, (key, 0));
                return Err(no_path(what, e.message, &self.down_what));
            }
            r => r?,
        };
        self.launch_all(now_ns, token, key, &routed)
    }

    /// The next internal event (a flow or phase boundary), which may precede the next
    /// completion; the executor then calls [`NetworkModel::complete_until`] and gets nothing.
    fn next_completion(&self) -> Option<f64> {
        if self.ready.is_empty() {
            // A fault due before the next event is an event (nothing in flight: it waits for
            // the next start).
            let next = self.sim.next_time()?;
            Some(match self.faults.get(self.next_fault) {
                Some(f) if f.at_ns < next => f.at_ns.max(self.clock),
                _ => next,
            })
        } else {
            // Finished at the last processed instant, not yet collected.
            Some(self.clock)
        }
    }

    fn complete_until(&mut self, now_ns: f64, done: &mut Vec<u64>) -> Result<()> {
        done.append(&mut self.ready);
        while let Some(next) = self.sim.next_time().filter(|&t| t <= now_ns) {
            if let Some(f) = self.faults.get(self.next_fault).filter(|f| f.at_ns <= next).cloned() {
                self.next_fault += 1;
                self.apply_fault(&f)?;
                self.clock = self.clock.max(f.at_ns);
                continue;
            }
            let mut finished = std::mem::take(&mut self.finished);
            let Some(t) = self.sim.step(&mut finished) else { break };
            self.clock = t;
            for (tag, _) in finished.drain(..) {
                if tag & CHAIN_TAG != 0 {
                    self.transfer_arrived(t, ((tag & !CHAIN_TAG) >> 32) as u32, tag as u32)?;
                    continue;
                }
                let run = self.runs[tag as usize].take().expect("running instance");
                self.free_runs.push(tag as u32);
                self.launch(t, run.token, run.origin, run.phases, run.next)?;
            }
            self.finished = finished;
            done.append(&mut self.ready);
        }
        // A fault due by now with nothing in flight before it.
        if self.sim.next_time().is_none_or(|t| t > now_ns) {
            self.faults_until(now_ns)?;
        }
        Ok(())
    }
}

/// A time for messages: in the largest unit that keeps it at least 1.
fn time_text(ns: f64) -> String {
    match ns {
        t if t >= 1e9 => format!("{} s", t / 1e9),
        t if t >= 1e6 => format!("{} ms", t / 1e6),
        t if t >= 1e3 => format!("{} us", t / 1e3),
        t => format!("{t} ns"),
    }
}

/// A communication for messages: its group by name and ranks, or its ends.
fn describe(
    instances: &HashMap<(GroupId, u32), Rc<Vec<Vec<u32>>>>,
    names: &[String],
    origin: (RouteKey, u32),
) -> String {
    let ranks = |group: GroupId, class: u32| {
        let members =
            instances.get(&(group, class)).and_then(|i| i.get(origin.1 as usize).cloned()).unwrap_or_default();
        let shown: Vec<String> = members.iter().take(8).map(u32::to_string).collect();
        let more = if members.len() > 8 { format!(", ... {} in all", members.len()) } else { String::new() };
        format!("ranks {}{more}", shown.join(", "))
    };
    let name = |group: GroupId| names.get(group as usize).cloned().unwrap_or_else(|| format!("group {group}"));
    match origin.0 {
        RouteKey::Collective(group, class, c, _) => {
            format!("{} group {} ({}; {c:?})", name(group), origin.1, ranks(group, class))
        }
        RouteKey::Shift(group, class, offset, _, _) => {
            format!("{} sends by {offset} in group {} ({})", name(group), origin.1, ranks(group, class))
        }
        RouteKey::Transfer(src, dst, _) => format!("the transfer from rank {src} to rank {dst}"),
        RouteKey::Nodes(key, _) => format!("node flows {key}"),
    }
}

/// The error of a communication left with no path after links went down: `why` says between
/// which nodes.
fn no_path(what: String, why: String, down: &[String]) -> InputError {
    InputError::new("--fault", format!("{what}: {why} after {}", down.join(", ")))
}

/// The path of a flow whose `old` path crosses a dead link: the fabric's route between the same
/// ends without the dead links (`topo` routes around them), its ECMP hash taken from the old
/// path, so the same connection moves the same way each time.
fn reroute(
    topo: &Platform,
    router: &mut Router,
    old: &[u32],
    what: impl FnOnce() -> String,
    down: &[String],
) -> Result<Rc<[u32]>> {
    let (Some(&first), Some(&last)) = (old.first(), old.last()) else { return Ok(old.into()) };
    let (src, dst) = (topo.links[first as usize].src, topo.links[last as usize].dst);
    let hash = old.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &l| (h ^ u64::from(l)).wrapping_mul(0x100_0000_01b3));
    let mut path = Vec::new();
    match router.route(topo, src, dst, hash, &mut path) {
        Ok(()) => Ok(path.into()),
        Err(_) => Err(no_path(
            what(),
            format!("no path from node {} to node {}", topo.node_name(src), topo.node_name(dst)),
            down,
        )),
    }
}

#[cfg(test)]
#[path = "ecmp_tests.rs"]
mod ecmp_tests;

#[cfg(test)]
mod shape_tests {
    use super::schedule_shape;
    use crate::platform::Placement;

    #[test]
    fn groups_share_a_schedule_only_on_the_same_servers_and_rails() {
        let p = &Placement::servers(32, 8);
        // Same servers in the same order, same rails: one schedule.
        assert_eq!(schedule_shape(&[0, 8], p, &[]), schedule_shape(&[16, 24], p, &[]));
        // Same servers, other rails: PXN relays through other GPUs, so another schedule.
        assert_ne!(schedule_shape(&[0, 9], p, &[]), schedule_shape(&[1, 8], p, &[]));
        assert_eq!(schedule_shape(&[9, 1, 8], p, &[]), vec![(0, 1, 0), (1, 1, 0), (0, 0, 0)]);
        // Same shape on GPUs of another generation: the tuner may choose otherwise.
        let class: Vec<u32> = (0..32).map(|r| u32::from(r >= 16)).collect();
        assert_ne!(schedule_shape(&[0, 8], p, &class), schedule_shape(&[16, 24], p, &class));
    }
}
