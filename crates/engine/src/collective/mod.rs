//! Collective algorithms, each defined once as a schedule of point-to-point transfers.
//!
//! A collective on a group becomes a [`Schedule`]: phases of concurrent transfers between ranks
//! (and, for NVLS, the NVSwitch of a server). The flow model plays the transfers on links; the
//! analytical side prices the same schedule with α–β ([`cost`]). One definition per algorithm:
//! everything an algorithm is — its name, which (collective, group) it can run and why not, its
//! schedule, NCCL's timing of it (protocols and their latencies, efficiency, latency hops) and
//! whether NCCL's tuner considers it — is one implementation of [`CollectiveAlgorithm`] in its
//! own file (ring.rs, tree.rs, halving_doubling.rs, direct.rs, nvls.rs for NVLS and NVLS tree,
//! hierarchical.rs, pxn.rs, coherent_ring.rs; reduction_server.rs and collnet.rs, built from a platform whose
//! nodes they use, on_platform.rs). The tuner ([`choose`]), the α–β price, the analytical model and the
//! flow model only call the trait, through the Copy handle [`Algorithm`].
//!
//! Adding an algorithm:
//! 1. a file `my_algo.rs` here that declares it,
//!    `registered! { /// doc \n MyAlgo as MY_ALGO: "my_algo", [Collective::AllReduce] }` (its
//!    unit struct, its handle `Algorithm::MY_ALGO`, its name and collectives), and implements
//!    [`CollectiveAlgorithm`] for it: `unsupported` (None where it runs) and `phases` are
//!    required; `offered` (default: only when forced), `protocols` (default: Simple with NCCL's
//!    point-to-point latency), `hops` (default: one per dependent step of the schedule),
//!    `efficiency` (default 1) and `ring_latency` (default false) say how NCCL times it;
//! 2. `mod my_algo;` below, and `Algorithm::MY_ALGO` in the registry [`Algorithm::ALL`] so
//!    NCCL_ALGO / `--algo` parse its name, the tuner may offer it and error messages list it.
//!
//! An algorithm can also be read at run time from an MSCCL program (`--algo msccl:FILE.xml`,
//! [`msccl`]): it implements the same trait and is never registered.
//!
//! Nothing else changes: both backends run and price any schedule the same way. An algorithm
//! need not even be registered to run when forced (`Options::algorithm`): the test
//! `an_algorithm_defined_in_one_place_runs_on_both_backends` (network/agreement.rs)
//! defines a star all-gather in the test itself and checks that the two backends agree on it.
//!
//! Sizes follow nccl-tests (shared/reference/hardware.md §3): `bytes` is S, the per-rank buffer
//! for all-reduce, all-to-all, broadcast and reduce, the gathered output for all-gather and the
//! whole input for reduce-scatter. Broadcast and reduce use group rank 0 as the root.
//!
//! Pipelined algorithms (tree, NVLS, PXN relays, chain broadcast) are written as their steady
//! state: one phase holding every transfer of one pipeline step, each carrying one chunk, run
//! `k + depth − 1` times for k chunks through a pipeline `depth` transfers deep. The fill and
//! drain steps therefore carry chunks on hops that would really be idle; the overcount is
//! (depth − 1)/k of the bytes and vanishes for large messages. Chunks are [`PIPELINE_CHUNK_BYTES`].
//!
//! Schedules stay compact: a ring is one phase with `repeat` = its step count, so its size is
//! O(n · channels) whatever the message size; direct all-pairs is n(n−1) transfers in one phase
//! (two for all-reduce), fine up to [`DIRECT_MAX_RANKS`] ranks and refused above, as is PXN
//! all-to-all; [`cost::direct_all_to_all_ns`] prices larger all-to-alls by symmetry instead.

mod algorithm;
mod all_pairs;
pub mod choose;
pub mod coherent_ring;
pub mod collnet;
pub mod cost;
mod direct;
mod halving_doubling;
mod hier_all_pairs;
mod hierarchical;
pub mod msccl;
pub mod nccl;
mod nvls;
pub mod on_platform;
mod pxn;
pub mod reduction_server;
mod ring;
mod tree;
pub mod tuner_links;

use crate::error::InputError;
use crate::platform::Placement;
use crate::workload::Collective;
use algorithm::registered;
pub use algorithm::{Algorithm, Call, CollectiveAlgorithm, Identity, Request};
pub use nccl::{Protocol, StepLatency, Timing};
pub use ring::ring_hops;

/// Where a transfer starts or ends: a rank of the group (index into GroupTopo::ranks), the
/// NVSwitch (in-switch reduction / multicast unit) of one server of the group (server index = position
/// among the group's distinct servers, in order of first appearance in `ranks`), or a platform
/// node that runs no rank (by node id: a reduction server's CPU, a switch that reduces), whose
/// port rates the schedule's algorithm states ([`CollectiveAlgorithm::node_rates`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Rank(u32),
    Switch { server: u32 },
    Node(u32),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    pub src: Endpoint,
    pub dst: Endpoint,
    pub bytes: f64,
}

/// Transfers that run concurrently; the next phase starts when all of them have finished.
/// `repeat`: the phase runs this many times back to back with the same transfers (the 2(n−1) steps of a ring).
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub transfers: Vec<Transfer>,
    pub repeat: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub algorithm: Algorithm,
    pub phases: Vec<Phase>,
    /// Protocol, efficiency and latency ([`nccl`]); [`Timing::RAW`] until the tuner sets them.
    pub timing: Timing,
}

impl Schedule {
    /// Bytes put on the wire in total (every repetition counted).
    pub fn total_bytes(&self) -> f64 {
        self.phases.iter().map(|p| p.repeat as f64 * p.transfers.iter().map(|t| t.bytes).sum::<f64>()).sum()
    }

    /// Its steps: every repetition of every phase.
    pub fn steps(&self) -> u32 {
        self.phases.iter().map(|p| p.repeat).sum()
    }

    /// Transfer objects held (not multiplied by `repeat`): the memory a schedule costs.
    pub fn transfer_count(&self) -> usize {
        self.phases.iter().map(|p| p.transfers.len()).sum()
    }
}

/// The group as the algorithms see it: the global ranks of its members in group order, placed
/// on the platform's scale-up domains ("servers" below) and rails.
pub struct GroupTopo<'a> {
    pub ranks: &'a [u32],
    pub placement: &'a Placement,
    pub nvls: bool,
    /// [`GroupTopo::servers`], worked out once: the tuner asks for it per algorithm and protocol.
    servers: std::cell::OnceCell<Servers>,
}

/// The servers of a group: which server (index by first appearance) each rank is on, and the
/// group ranks of each server in group order.
#[derive(Debug, Clone, PartialEq)]
pub struct Servers {
    pub of_rank: Vec<u32>,
    pub members: Vec<Vec<u32>>,
}

impl Servers {
    /// Ranks per server when every server holds the same number of group ranks.
    pub fn uniform(&self) -> Option<u32> {
        let m = self.members.first()?.len();
        self.members.iter().all(|s| s.len() == m).then_some(m as u32)
    }
}

impl<'a> GroupTopo<'a> {
    pub fn size(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// Rail of a group rank (the NIC it uses).
    pub fn rail(&self, rank: u32) -> u32 {
        self.placement.rail(self.ranks[rank as usize])
    }

    pub fn new(ranks: &'a [u32], placement: &'a Placement, nvls: bool) -> GroupTopo<'a> {
        GroupTopo { ranks, placement, nvls, servers: std::cell::OnceCell::new() }
    }

    /// Which server each rank is on and the ranks of each server.
    pub fn servers(&self) -> &Servers {
        self.servers.get_or_init(|| self.find_servers())
    }

    fn find_servers(&self) -> Servers {
        let mut ids: Vec<u32> = Vec::new();
        let mut of_rank = Vec::with_capacity(self.ranks.len());
        let mut members: Vec<Vec<u32>> = Vec::new();
        // Groups list a server's GPUs contiguously in practice; the map only serves the other case.
        let mut index = std::collections::HashMap::new();
        for (r, &gpu) in self.ranks.iter().enumerate() {
            let server = self.placement.domain(gpu);
            let s = *index.entry(server).or_insert_with(|| {
                ids.push(server);
                members.push(Vec::new());
                ids.len() as u32 - 1
            });
            of_rank.push(s);
            members[s as usize].push(r as u32);
        }
        Servers { of_rank, members }
    }

    /// A group on servers of `per_server` consecutive ranks (tests; the placement is leaked).
    #[cfg(test)]
    pub(crate) fn on_servers(ranks: &'a [u32], per_server: u32, nvls: bool) -> GroupTopo<'a> {
        let n = ranks.iter().max().map_or(0, |&r| r + 1);
        GroupTopo::new(ranks, Box::leak(Box::new(Placement::servers(n, per_server))), nvls)
    }

    fn validate(&self) -> Result<(), InputError> {
        if self.ranks.is_empty() {
            return Err(err("ranks", "a group needs at least one rank".into()));
        }
        if self.ranks.len() > u32::MAX as usize / 2 {
            return Err(err("ranks", format!("{} ranks is more than a group can hold", self.ranks.len())));
        }
        let mut sorted = self.ranks.to_vec();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(err("ranks", format!("GPU {} appears twice in the group", w[0])));
        }
        if let Some(&r) = sorted.last().filter(|&&r| r >= self.placement.ranks()) {
            return Err(err("ranks", format!("rank {r} is not on the platform (ranks 0..{})", self.placement.ranks())));
        }
        Ok(())
    }
}

/// Channels of a collective on `g` when none are forced: SimAI's MockNccl builds one ring per
/// group rank of a server (`gen_local_ring`), so a data-parallel group with one rank per server
/// gets one ring and each NIC one connection, and a whole-server group one ring per GPU; at most
/// `nics` (one per NIC of a server, the fabric's default).
pub fn group_channels(g: &GroupTopo, nics: u32) -> u32 {
    let per_server = g.servers().members.iter().map(Vec::len).max().unwrap_or(1) as u32;
    per_server.clamp(1, nics.max(1))
}

/// Bytes per chunk of a pipelined schedule: NCCL's Simple-protocol step (4 MiB buffer / 8 steps).
pub const PIPELINE_CHUNK_BYTES: f64 = 512.0 * 1024.0;

/// Largest group for direct all-pairs: n(n−1) ≈ 4.2 M transfers (about 100 MB) at 2048 ranks.
pub const DIRECT_MAX_RANKS: u32 = 2048;

/// How finely a pipelined schedule cuts its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grain {
    /// NCCL's Simple protocol: steps of [`PIPELINE_CHUNK_BYTES`].
    Steps,
    /// LL and LL128 forward each line as it arrives: at least [`LINE_PIPELINE_CHUNKS`] chunks, so
    /// filling and draining the pipeline (a steady-state phase run k + depth − 1 times) adds
    /// (depth − 1)/k of the message, not a whole chunk per hop; the hops' latency is NCCL's.
    Lines,
}

/// Fewest chunks of a line-grained pipeline.
pub const LINE_PIPELINE_CHUNKS: f64 = 64.0;

/// Chunks a pipeline cuts `bytes` (per channel and pipeline) into.
pub(crate) fn chunks(bytes: f64, grain: Grain) -> u32 {
    let k = (bytes / PIPELINE_CHUNK_BYTES).ceil();
    let k = if grain == Grain::Lines { k.max(LINE_PIPELINE_CHUNKS) } else { k };
    k.clamp(1.0, u32::MAX as f64 / 4.0) as u32
}

pub(crate) fn err(field: &str, message: String) -> InputError {
    InputError::field("collective", field, message)
}

fn send(src: u32, dst: u32, bytes: f64) -> Transfer {
    Transfer { src: Endpoint::Rank(src), dst: Endpoint::Rank(dst), bytes }
}

/// Algorithms that can run `c` on this group, in [`Algorithm::ALL`] order.
pub fn valid_algorithms(c: Collective, g: &GroupTopo) -> Vec<Algorithm> {
    let s = g.servers();
    Algorithm::ALL.iter().copied().filter(|a| a.unsupported(c, g, s).is_none()).collect()
}

/// The schedule of collective `c` of S = `bytes` on group `g` with algorithm `algo`, its rings
/// and trees split over `channels` parallel channels. A group of one rank, or no bytes, is an
/// empty schedule. An algorithm that cannot run `c` on `g` is an error listing those that can.
pub fn schedule(
    c: Collective,
    algo: Algorithm,
    g: &GroupTopo,
    bytes: u64,
    channels: u32,
) -> Result<Schedule, crate::error::InputError> {
    schedule_grained(c, algo, g, bytes, channels, Grain::Steps)
}

/// [`schedule`] with pipelines cut at `grain`.
pub fn schedule_grained(
    c: Collective,
    algo: Algorithm,
    g: &GroupTopo,
    bytes: u64,
    channels: u32,
    grain: Grain,
) -> Result<Schedule, crate::error::InputError> {
    g.validate()?;
    if channels == 0 {
        return Err(err("channels", "at least one channel is needed".into()));
    }
    let s = g.servers();
    if let Some(why) = algo.unsupported(c, g, s) {
        let valid: Vec<&str> = valid_algorithms(c, g).iter().map(|a| a.name()).collect();
        return Err(err(
            "algorithm",
            format!(
                "{} cannot run {} on {} ranks over {} servers: {why} (valid here: {})",
                algo.name(),
                c.name(),
                g.size(),
                s.members.len(),
                valid.join(", ")
            ),
        ));
    }
    if g.size() <= 1 || bytes == 0 {
        return Ok(Schedule { algorithm: algo, phases: Vec::new(), timing: Timing::RAW });
    }
    let mut phases =
        algo.phases(&Request { collective: c, group: g, servers: s, bytes: bytes as f64, channels, grain });
    phases.retain(|p| p.repeat > 0 && !p.transfers.is_empty());
    Ok(Schedule { algorithm: algo, phases, timing: Timing::RAW })
}

/// A point-to-point send of `bytes` from group rank `src` to `dst`. With `pxn`, a send to
/// another server that leaves from a GPU on a different rail goes first over NVLink to the
/// source server's GPU on the destination's rail, then over that GPU's NIC (the proxy must be a
/// member of `g`; pass a group holding the source server's GPUs, else the send goes direct).
pub fn send_recv(g: &GroupTopo, src: u32, dst: u32, bytes: u64, pxn: bool) -> Result<Schedule, InputError> {
    g.validate()?;
    for (field, r) in [("src", src), ("dst", dst)] {
        if r >= g.size() {
            return Err(err(field, format!("rank {r} is not in the group of {} ranks", g.size())));
        }
    }
    let algorithm = if pxn { Algorithm::PXN } else { Algorithm::DIRECT };
    if src == dst || bytes == 0 {
        return Ok(Schedule { algorithm, phases: Vec::new(), timing: Timing::RAW });
    }
    let phase = Phase { transfers: vec![send(src, dst, bytes as f64)], repeat: 1 };
    let phases = if pxn { pxn::relay(vec![phase], g, g.servers(), Grain::Steps) } else { vec![phase] };
    Ok(Schedule { algorithm, phases, timing: Timing::RAW })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Collective::*;

    fn topo(ranks: &[u32], gps: u32, nvls: bool) -> GroupTopo<'_> {
        GroupTopo::on_servers(ranks, gps, nvls)
    }

    #[test]
    fn servers_are_numbered_by_first_appearance() {
        let ranks = [9, 1, 8, 0];
        let g = topo(&ranks, 8, false);
        let s = g.servers();
        assert_eq!(s.of_rank, vec![0, 1, 0, 1]);
        assert_eq!(s.members, vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(s.uniform(), Some(2));
    }

    #[test]
    fn every_algorithm_moves_what_its_collective_needs() {
        // Lower bounds on bytes on the wire (nccl-tests busbw × n): any correct schedule moves at least this.
        // Two servers of 8 and one server of 8 (where NVLS runs).
        for n in [16u32, 8] {
            let ranks: Vec<u32> = (0..n).collect();
            check_volumes(&topo(&ranks, 8, true));
        }
    }

    fn check_volumes(g: &GroupTopo) {
        let (s, n) = (1u64 << 30, g.size() as f64);
        for c in Collective::ALL {
            for a in valid_algorithms(c, g) {
                let sch = schedule(c, a, g, s, 2).unwrap();
                let need = s as f64 * c.busbw_factor(g.size()) * n;
                // Reduce and broadcast must move S into (out of) each non-root rank: (n−1)·S.
                let need = if matches!(c, Broadcast | Reduce) { need * (n - 1.0) / n } else { need };
                // The coherent ring leaves the reduced shards where they are (read in place): half.
                let need = if a == Algorithm::COHERENT_RING { need / 2.0 } else { need };
                assert!(sch.total_bytes() >= need * (1.0 - 1e-12), "{a:?} {c:?}: {} < {need}", sch.total_bytes());
                // One-shot all-reduce sends all of S to every peer: n/2 times the need, by design.
                let most = if a == Algorithm::ONE_SHOT { n / 2.0 } else { 3.0 };
                assert!(sch.total_bytes() <= need * most, "{a:?} {c:?}: {} moves far too much", sch.total_bytes());
            }
        }
    }

    #[test]
    fn impossible_combinations_list_the_valid_algorithms() {
        let ranks: Vec<u32> = (0..16).collect();
        let e = schedule(AllReduce, Algorithm::NVLS, &topo(&ranks, 8, true), 1 << 20, 1).unwrap_err();
        assert!(e.message.contains("inside one server") && e.message.contains("valid here: ring, tree"), "{e}");
        let e = schedule(AllToAll, Algorithm::HALVING_DOUBLING, &topo(&ranks, 8, false), 1 << 20, 1).unwrap_err();
        assert!(e.message.contains("valid here: direct, pxn"), "{e}");
        let e = schedule(AllGather, Algorithm::HALVING_DOUBLING, &topo(&ranks[..6], 8, false), 64, 1).unwrap_err();
        assert!(e.message.contains("not a power of two"), "{e}");
        assert!(schedule(AllReduce, Algorithm::RING, &topo(&[1, 1], 8, false), 64, 1).is_err());
        assert!(schedule(AllGather, Algorithm::HALVING_DOUBLING, &topo(&[], 8, false), 64, 1).is_err());
        let eight = Placement::servers(8, 8);
        let off = GroupTopo::new(&ranks, &eight, false);
        assert!(schedule(AllReduce, Algorithm::RING, &off, 64, 1).unwrap_err().message.contains("rank 15 is not on"));
        assert!(schedule(AllReduce, Algorithm::RING, &topo(&ranks, 8, false), 64, 0).is_err());
        assert_eq!(Algorithm::parse("NVLS-tree").unwrap(), Algorithm::NVLS_TREE);
        assert!(Algorithm::parse("bruck").unwrap_err().message.contains("halving_doubling"));
    }

    #[test]
    fn the_kinds_an_algorithm_states_are_those_it_runs() {
        // `collectives` is what `unsupported` says on every group: a kind outside it refused on
        // all of them, a kind inside it run on at least one (one server, two, ranks spread).
        let ranks: Vec<u32> = (0..16).collect();
        let spread = [0, 8, 16, 24];
        let groups = [topo(&ranks[..8], 8, true), topo(&ranks, 8, true), topo(&spread, 8, false)];
        for &a in Algorithm::ALL {
            for c in Collective::ALL {
                let runs = groups.iter().any(|g| a.unsupported(c, g, g.servers()).is_none());
                assert_eq!(runs, a.collectives().contains(&c), "{a:?} {c:?}");
            }
        }
    }

    #[test]
    fn registered_names_are_distinct_and_parse_back() {
        // Handles compare by name, and parse accepts a name without its underscores.
        let mut keys: Vec<String> = Algorithm::ALL.iter().map(|a| a.name().replace('_', "")).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), Algorithm::ALL.len());
        for &a in Algorithm::ALL {
            assert_eq!(Algorithm::parse(&a.name().to_ascii_uppercase().replace('_', "-")).unwrap(), a);
        }
    }

    #[test]
    fn a_large_ring_is_linear_in_ranks() {
        let ranks: Vec<u32> = (0..16384).collect();
        let sch = schedule(AllReduce, Algorithm::RING, &topo(&ranks, 8, false), 1 << 30, 1).unwrap();
        assert_eq!(sch.transfer_count(), 16384);
        assert_eq!(sch.phases[0].repeat, 2 * 16383);
        let sch = schedule(AllReduce, Algorithm::TREE, &topo(&ranks, 8, false), 1 << 30, 2).unwrap();
        assert!(sch.transfer_count() <= 8 * 16384, "{}", sch.transfer_count());
        let sch = schedule(AllReduce, Algorithm::HIERARCHICAL, &topo(&ranks, 8, false), 1 << 30, 2).unwrap();
        assert!(sch.transfer_count() <= 6 * 16384, "{}", sch.transfer_count());
    }

    #[test]
    fn send_recv_relays_through_the_destination_rail_with_pxn() {
        // GPU 1 (server 0, rail 1) sends to GPU 10 (server 1, rail 2); GPU 2 is server 0's rail-2 GPU.
        let ranks = [1, 2, 10];
        let g = topo(&ranks, 8, false);
        let direct = send_recv(&g, 0, 2, 1000, false).unwrap();
        assert_eq!(direct.phases, vec![Phase { transfers: vec![send(0, 2, 1000.0)], repeat: 1 }]);
        let relayed = send_recv(&g, 0, 2, 1000, true).unwrap();
        // Store and forward: one chunk, two pipeline steps.
        assert_eq!(relayed.phases, vec![Phase { transfers: vec![send(0, 1, 1000.0), send(1, 2, 1000.0)], repeat: 2 }]);
        assert!(send_recv(&g, 0, 3, 1, false).is_err());
    }

    #[test]
    fn nothing_to_do_is_an_empty_schedule() {
        let sch = schedule(AllReduce, Algorithm::RING, &topo(&[3], 8, false), 1 << 20, 4).unwrap();
        assert!(sch.phases.is_empty());
        let sch = schedule(AllGather, Algorithm::DIRECT, &topo(&[0, 1], 8, false), 0, 1).unwrap();
        assert!(sch.phases.is_empty());
    }
}
