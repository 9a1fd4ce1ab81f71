//! Running a workload graph: lowered ([`super::lower`]), then run by the one driver on the
//! platform's flow model. Reads of remote memory are flows from the memory device to the XPU
//! on the same fabric as the collectives, so they share links with them, each capped at its
//! device's read window over its round trip ([`crate::platform::window`]); everything else is
//! the flow model's own ([`FlowNetwork`]); on the packet backend the collectives move as packets
//! (remote memory is a flow-model device: the packet backend refuses it by name).

use super::lower::{lower, Lowered, Options, Role};
use super::memory::Source;
use super::WorkloadGraph;
use crate::driver::{self, Backend};
use crate::error::{InputError, Result};
use crate::executor::Execution;
use crate::exposure::exposure;
use crate::network::flow::network::{FlowNetwork, NodeFlows, Tuning};
use crate::network::packet::PacketConfig;
use crate::network::{Comm, NetworkModel};
use crate::platform::Platform;
use crate::workload::Workload;

/// The flow network, with the reads of a lowered graph routed to it as node-to-node flows.
struct GraphNetwork<'l> {
    net: FlowNetwork,
    lowered: &'l Lowered,
    /// Ranks of each class.
    class_ranks: Vec<Vec<u32>>,
    /// A memory node's own latency, ns, and read window, bytes (0 and ∞ for other nodes).
    device: Vec<(f64, f64)>,
}

impl NetworkModel for GraphNetwork<'_> {
    fn prepare(&mut self, w: &Workload) -> Result<()> {
        self.class_ranks = vec![Vec::new(); w.class_program.len()];
        for (r, &c) in w.rank_class.iter().enumerate() {
            self.class_ranks[c as usize].push(r as u32);
        }
        self.net.prepare(w)
    }

    fn start(&mut self, now_ns: f64, comm: &Comm, token: u64) -> Result<()> {
        let l = self.lowered;
        let &Comm::Collective { group, bytes, class, .. } = comm else { return self.net.start(now_ns, comm, token) };
        if group < l.first_read {
            return self.net.start(now_ns, comm, token);
        }
        let source = l.reads[(group - l.first_read) as usize];
        let (ranks, device) = (&self.class_ranks[class as usize], &self.device);
        let placement = &self.net.topology().placement;
        let pairs = || {
            // One instance per device latency and window (usually one), each rank's flow from
            // its device, capped by its window.
            let mut groups: NodeFlows = Vec::new();
            for &r in ranks {
                let m = match source {
                    Source::Home => l.home[r as usize],
                    Source::Node(m) => m,
                };
                let (lat, window) = device[m as usize];
                let flow = (m, placement.device(r), bytes as f64);
                match groups.iter_mut().find(|g| g.0 == lat && g.1 == window) {
                    Some(g) => g.2.push(flow),
                    None => groups.push((lat, window, vec![flow])),
                }
            }
            groups
        };
        let pairs = pairs();
        self.net.start_node_flows(now_ns, token, (u64::from(group) << 32 | u64::from(class), bytes), || pairs)
    }

    fn next_completion(&self) -> Option<f64> {
        self.net.next_completion()
    }

    fn complete_until(&mut self, now_ns: f64, done: &mut Vec<u64>) -> Result<()> {
        self.net.complete_until(now_ns, done)
    }
}

/// Where one rank class's time went over the whole run, ns: compute, exposed reads of remote
/// memory, exposed collectives and point-to-point transfers, idle with nothing in flight.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Breakdown {
    pub compute_ns: f64,
    pub read_ns: f64,
    pub collective_ns: f64,
    pub p2p_ns: f64,
    pub idle_ns: f64,
}

pub struct GraphRun {
    pub lowered: Lowered,
    pub execution: Execution,
    /// When each iteration's last op ended, ns.
    pub iteration_end_ns: Vec<f64>,
    /// Per class.
    pub breakdown: Vec<Breakdown>,
    pub link_bytes: Vec<f64>,
}

impl GraphRun {
    /// Time of iteration `k`: from the end of the one before (0 for the first) to its end.
    pub fn iteration_ns(&self, k: usize) -> f64 {
        self.iteration_end_ns[k] - if k == 0 { 0.0 } else { self.iteration_end_ns[k - 1] }
    }
}

/// Run `graph` (read from `file`) on `platform` with the flow model tuned by `tuning`, its
/// transfers moved as packets with `packets` when given ([`crate::driver::fabric_backend`]).
pub fn run_graph(
    file: &str,
    graph: &WorkloadGraph,
    platform: &Platform,
    options: &Options,
    tuning: &Tuning,
    packets: Option<PacketConfig>,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<GraphRun> {
    let lowered = lower(file, graph, platform, options)?;
    let device = (0..platform.node_count() as usize)
        .map(|v| {
            platform
                .attrs
                .get(v)
                .and_then(|a| a.memory)
                .map_or((0.0, f64::INFINITY), |m| (m.latency_ns, m.window_bytes))
        })
        .collect();
    let mut net = FlowNetwork::tuned(platform.clone(), tuning, |s| s)?;
    if let Some(config) = packets {
        if tuning.options.send_lat_us.is_some() {
            return Err(InputError::field(
                "command line",
                "collectives",
                "cm02 prices collectives as SimGrid's flow model does; the packet backend takes nccl",
            ));
        }
        net.use_packets(config)?;
    }
    let mut model = GraphNetwork { net, lowered: &lowered, class_ranks: Vec::new(), device };
    let w = &lowered.workload;
    let execution = driver::simulate(w, Backend::Model(&mut model), progress)?.execution;
    let link_bytes = model.net.carried_bytes().to_vec();
    let mut iteration_end_ns = vec![0.0f64; lowered.iterations as usize];
    let mut breakdown = Vec::with_capacity(w.programs.len());
    for (c, tl) in execution.timelines.iter().enumerate() {
        let p = w.class_program[c] as usize;
        for (i, &end) in tl.end.iter().enumerate() {
            let k = lowered.op_iteration[p][i] as usize;
            if !end.is_finite() {
                return Err(InputError::internal("graph run", format!("op {i} of class {c} never ended")));
            }
            iteration_end_ns[k] = iteration_end_ns[k].max(end);
        }
        let ex = exposure(&w.programs[p], tl, execution.end_ns);
        let mut b = Breakdown { compute_ns: ex.compute_ns, idle_ns: ex.idle_ns, ..Breakdown::default() };
        for (i, &x) in ex.exposed.iter().enumerate() {
            match lowered.op_role[p][i] {
                Role::Compute => {}
                Role::Read => b.read_ns += x,
                Role::Collective => b.collective_ns += x,
                Role::P2p => b.p2p_ns += x,
            }
        }
        breakdown.push(b);
    }
    // An iteration with no op of its own (none can: every iteration holds every vertex) ends
    // where the one before did.
    for k in 1..iteration_end_ns.len() {
        iteration_end_ns[k] = iteration_end_ns[k].max(iteration_end_ns[k - 1]);
    }
    Ok(GraphRun { lowered, execution, iteration_end_ns, breakdown, link_bytes })
}
