//! NCCL's timing of a collective, in one table: protocols, latencies and efficiencies. Each
//! algorithm's file picks its rows ([`super::CollectiveAlgorithm::protocols`]) and says its hops
//! and efficiency; this module holds the constants and the composition.
//!
//! Source: NVIDIA/nccl `src/graph/tuning.cc` and `src/graph/topo.h` at 5067397 (NCCL 2.30),
//! summarised in shared/reference/hardware.md §4. A collective run with algorithm a and
//! protocol p takes
//!
//! ```text
//! T(a, p) = lat(a, p) + Σ_phases repeat · busiest port load / (eff(a, p) · B)
//! lat(a, p) = base(a, p) + h_intra · intraLat + h_inter · interLat                   [µs]
//! intraLat = hw_nvlink(a, p) + α_nv,  interLat = hw_net(a, p) + α_net · (2 if Simple else 1)
//! eff(a, p) = protocol efficiency (LL 0.5, LL128 0.92, Simple 1) × algorithm efficiency
//! ```
//!
//! The second term is the algorithm's own schedule (its phases of transfers), so the flow model
//! and the analytical model charge the same bytes. The first is paid where the algorithm pays it:
//! base(a, p) once per call, before the first step; the hops' latency, h_intra · intraLat +
//! h_inter · interLat, over the schedule's steps (every repetition of every phase), evenly: a
//! ring's 2(n − 1) steps each wait for the previous step's chunk, so each pays its share before
//! its bytes move. The total is NCCL's lat(a, p) either way; where it is paid matters when other
//! traffic shares the links. h_intra / h_inter are the latency hops of the algorithm
//! ([`super::CollectiveAlgorithm::hops`]): NCCL's counts for ring, tree, NVLS and NVLS tree, one
//! hop per dependent step of the schedule for the others ([`schedule_hops`]). α_nv and α_net are the fabric's physical path latencies (NCCL adds the network's own
//! latency to interLat, twice for Simple because of its flush). NCCL's refinements kept: a
//! multi-node ring's intra hop costs at least the network post overhead (1 µs, ×3 Simple), and a
//! multi-node Ring/Simple all-reduce's latency is ×1.4 (SM80 and later), for the algorithms NCCL
//! prices as a ring ([`super::CollectiveAlgorithm::ring_latency`]: ring and PXN). Algorithm efficiencies:
//! tree 0.92 (tuning.cc caps tree all-reduce at 0.92 of the bus bandwidth); NVLS
//! nvlsEfficiency (0.85 Hopper, 0.74 Blackwell) × (nCh − 1)/nCh with NCCL's 16 NVLS channels, Hopper's
//! scaled to what an 8×H100 board measures ([`nvls_achieved_hopper`]).
//!
//! Why the hops' latency, not each step's own path latency: intraLat and interLat already hold
//! the fabric's physical path latency (α_nv, α_net), once per hop NCCL counts. A ring's steps run
//! as phases that end together, so a step whose transfers cross servers on any of its channels
//! would pay α_net on each of the 2(n − 1) steps, where the ring's chain of dependent chunks
//! crosses servers only about 2(N − 1) times (N servers); a pipelined tree would pay it per chunk.
//!
//! SimAI's `AS_SEND_LAT` replaces this latency model: every transfer step waits the given µs on
//! top of its path latency, with payload at link rate (Simple, efficiency 1), as SimAI's
//! network backends charge it.

use super::{Algorithm, Endpoint, Schedule, Servers};
use crate::catalog::{Arch, Catalog};
use crate::error::InputError;
use crate::workload::Collective;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    LL,
    LL128,
    Simple,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::LL, Protocol::LL128, Protocol::Simple];

    /// Fraction of the link rate that carries data: LL lines are half flags, LL128 carries 120
    /// data bytes per 128-byte line.
    pub fn efficiency(self) -> f64 {
        match self {
            Protocol::LL => 0.5,
            Protocol::LL128 => 0.92,
            Protocol::Simple => 1.0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::LL => "LL",
            Protocol::LL128 => "LL128",
            Protocol::Simple => "Simple",
        }
    }

    /// NCCL_PROTO's spelling (case-insensitive).
    pub fn parse(name: &str) -> Result<Protocol, InputError> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| super::err("protocol", format!("unknown protocol '{name}' (valid: LL, LL128, Simple)")))
    }
}

/// (base, NVLink hop, network hop) latency of one protocol, µs.
pub type Latency = (f64, f64, f64);

/// A [`Latency`] per protocol in [`Protocol::ALL`] order.
pub type LatencyTable = [Latency; 3];

/// Ring (tuning.cc `baseLat` and `hwLat`).
pub const RING_LATENCY_US: LatencyTable = [(6.6, 0.6, 2.7), (14.0, 1.9, 4.0), (8.4, 3.4, 14.0)];
/// Point-to-point work (and algorithms NCCL does not model) runs Simple with the ring's costs.
pub const P2P_LATENCY_US: Latency = RING_LATENCY_US[2];
/// Tree.
pub const TREE_LATENCY_US: LatencyTable = [(6.8, 0.6, 5.0), (14.0, 1.25, 8.5), (8.4, 4.0, 14.0)];
/// NVLS and NVLS tree run Simple only, with no base latency.
pub const NVLS_LATENCY_US: Latency = (0.0, 25.0, 18.0);
pub const NVLS_TREE_LATENCY_US: Latency = (0.0, 25.0, 20.9);
/// A multi-node ring's intra-server hop costs at least the network post overhead (Intel hosts).
pub const NET_POST_OVERHEAD_US: f64 = 1.0;
/// Multi-node Ring/Simple all-reduce latency factor on SM80 and later.
pub const RING_SIMPLE_ALLREDUCE_FACTOR: f64 = 1.4;
/// Tree all-reduce reaches at most this fraction of the bus bandwidth.
pub const TREE_EFFICIENCY: f64 = 0.92;
/// NVLS efficiency on Hopper (`nvlsEfficiency` in tuning.cc; [`Arch::nvls_efficiency`] per
/// generation) and NCCL's default NVLS channel count.
pub const NVLS_EFFICIENCY: f64 = 0.85;
pub const NVLS_CHANNELS: f64 = 16.0;
/// What an 8-GPU H100 NVSwitch board achieves of NCCL's NVLS prediction: the catalog's H100
/// `nvls_busbw` (475 GB/s, SimAI's calbusbw.cc; a maintainer quotes ≈ 480 at ≥ 1 GB,
/// NVIDIA/nccl-tests#212) over the busbw NCCL's constants give that board, 2(n − 1)/n ×
/// nvlink_busbw × 0.85 × 15/16 = 1.75 × 370.8 × 0.797 = 517.0 GB/s (n = 8): 0.919. Neither
/// source is in the corpus of tests/data/nccl-tests, which checks the figure independently.
/// 1 where the catalog has no H100 NVLS figure.
pub fn nvls_achieved_hopper() -> f64 {
    let Some(h100) = Catalog::shipped().accelerator("h100") else { return 1.0 };
    let predicted = 2.0 * 7.0 / 8.0 * h100.nvlink_busbw * NVLS_EFFICIENCY * (NVLS_CHANNELS - 1.0) / NVLS_CHANNELS;
    h100.nvls_busbw.map_or(1.0, |measured| measured / predicted)
}

/// NCCL's per-generation limits.
impl Arch {
    /// Most tree all-reduce bus bandwidth per channel NCCL expects (GB/s) on one node, two, and
    /// more (`perChMaxTreeBws` in tuning.cc): a tree's pipelining falls short of its links.
    pub fn tree_gbps_per_channel(self, nodes: u32) -> f64 {
        let [one, two, more] = match self {
            Arch::Volta => [26.5, 18.5, 10.0],
            Arch::Ampere => [24.0, 23.6, 17.8],
            Arch::Hopper => [38.7, 41.4, 36.0],
            Arch::Blackwell => [2.0 * 38.7, 2.0 * 41.4, 2.0 * 36.0],
        };
        match nodes {
            0 | 1 => one,
            2 => two,
            _ => more,
        }
    }
}

impl Arch {
    /// NCCL's NVLS efficiency (`nvlsEfficiency`, tuning.cc): 0.85 on Hopper, 0.74 on Blackwell;
    /// older generations have no NVLS, and a reducing switch of theirs (or of an unknown GPU) is
    /// priced as Hopper's. Hopper's is scaled by what an H100 board achieves
    /// ([`nvls_achieved_hopper`]); Blackwell's stays NCCL's (no public measurement to check it).
    pub fn nvls_efficiency(arch: Option<Arch>) -> f64 {
        match arch {
            Some(Arch::Blackwell) => 0.74,
            Some(Arch::Hopper) => NVLS_EFFICIENCY * nvls_achieved_hopper(),
            _ => NVLS_EFFICIENCY,
        }
    }
}

/// NVLink payload rate per GPU that NCCL plans with (GB/s): the catalog's `nvlink_busbw`, its
/// per-link speed (`topo.h`: 20 GB/s on SM70/SM80, 20.6 on SM90, 40.1 on SM100) × the GPU's
/// NVLinks, below the line rate (25 or 50 GB/s per link): 8×A100 reach ≈ 230 GB/s busbw, not 300.
/// None for GPU types NCCL has no figure for (no generation in the catalog).
pub fn nvlink_gbps(gpu_type: &str) -> Option<f64> {
    let acc = Catalog::shipped().accelerator(gpu_type)?;
    acc.arch.map(|_| acc.nvlink_busbw)
}

/// Payload rate NCCL achieves through `line_gbps` Gbit/s of NIC line rate (GB/s): the catalog's
/// `busbw` of a NIC of that rate ([`Catalog::nic_busbw_at`]; ConnectX-7 at 400 Gb/s 48.5 GB/s,
/// ConnectX-6 at 200 Gb/s 23.5), below the line rate less the RDMA framing (49.7 and 24.8 on
/// InfiniBand): what NCCL's maintainers quote per NIC, 46-48 and 48-49 GB/s at NDR
/// (NVIDIA/nccl-tests#290, 2025-03-03, and #267, 2025-01-23), 24 GB/s per 200 Gb/s NIC and 12 per
/// 100 Gb/s (NVIDIA/nccl-tests#119, 2022-11-17). None for a rate no catalog NIC fits.
pub fn nic_gbps(line_gbps: f64) -> Option<f64> {
    Catalog::shipped().nic_busbw_at(line_gbps)
}

/// How a schedule's time is charged beyond the bytes it moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub protocol: Protocol,
    /// Fraction of the link rate carrying payload: the wire carries bytes / efficiency.
    pub efficiency: f64,
    /// Paid once per call before its first step (NCCL's base latency), ns.
    pub call_latency_ns: f64,
    /// What each step (each repetition of each phase) waits before its bytes move.
    pub step: StepLatency,
}

/// The latency a schedule's steps pay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepLatency {
    /// NCCL's: the latency of the call's hops (ns in all, their physical path latency included),
    /// an equal share on each step.
    Hops(f64),
    /// SimAI's AS_SEND_LAT (and a bare schedule with 0): each step waits this many ns plus the
    /// path latency of its transfers.
    Path(f64),
}

impl Timing {
    /// A bare schedule: payload at link rate, each step paying its path latency.
    pub const RAW: Timing =
        Timing { protocol: Protocol::Simple, efficiency: 1.0, call_latency_ns: 0.0, step: StepLatency::Path(0.0) };

    /// The latency NCCL's formula charges the call, ns: its base and its hops (0 hops for
    /// [`StepLatency::Path`], whose latency depends on the paths).
    pub fn latency_ns(&self) -> f64 {
        match self.step {
            StepLatency::Hops(h) => self.call_latency_ns + h,
            StepLatency::Path(_) => self.call_latency_ns,
        }
    }

    /// What one of `steps` steps waits on top of its path latency, and whether it also waits
    /// that path latency. A schedule of no steps pays its hops with the call.
    pub fn step_ns(&self, steps: u32) -> (f64, bool) {
        match self.step {
            StepLatency::Hops(h) => (if steps > 0 { h / steps as f64 } else { 0.0 }, false),
            StepLatency::Path(x) => (x, true),
        }
    }
}

/// (intra-server, inter-server) latency hops of a schedule on `servers`, for algorithms NCCL
/// does not model: one hop per dependent step, across servers if any of its transfers is.
pub fn schedule_hops(servers: &Servers, s: &Schedule) -> (u32, u32) {
    let crosses = |p: &super::Phase| {
        p.transfers.iter().any(|t| match (t.src, t.dst) {
            (Endpoint::Rank(a), Endpoint::Rank(b)) => servers.of_rank[a as usize] != servers.of_rank[b as usize],
            (Endpoint::Node(_), _) | (_, Endpoint::Node(_)) => true,
            _ => false,
        })
    };
    s.phases.iter().fold((0, 0), |(i, e), p| if crosses(p) { (i, e + p.repeat) } else { (i + p.repeat, e) })
}

/// ⌈log2 N⌉ for N ≥ 1 servers: the depth of NCCL's tree latency model.
pub fn log2_ceil(nodes: u32) -> u32 {
    32 - (nodes - 1).leading_zeros()
}

/// NCCL's latency of one call, ns: its base, paid once, and its hops', paid over its steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallLatency {
    pub base_ns: f64,
    pub hops_ns: f64,
}

/// NCCL's latency (ns) of `algo` with protocol `p` and latency constants `lat`, over `hops` on
/// `nodes` servers, with physical path latencies α_nv / α_net (ns).
pub fn call_latency(
    c: Collective,
    algo: Algorithm,
    p: Protocol,
    (base, hw_nv, hw_net): (f64, f64, f64),
    (intra, inter): (u32, u32),
    nodes: u32,
    (alpha_nv_ns, alpha_net_ns): (f64, f64),
) -> CallLatency {
    let simple = p == Protocol::Simple;
    let ring_like = algo.ring_latency();
    let mut intra_us = hw_nv + alpha_nv_ns / 1e3;
    if ring_like && nodes > 1 {
        intra_us = intra_us.max(NET_POST_OVERHEAD_US * if simple { 3.0 } else { 1.0 });
    }
    let inter_us = hw_net + alpha_net_ns / 1e3 * if simple { 2.0 } else { 1.0 };
    let hops_us = intra as f64 * intra_us + inter as f64 * inter_us;
    let factor =
        if ring_like && simple && nodes > 1 && c == Collective::AllReduce { RING_SIMPLE_ALLREDUCE_FACTOR } else { 1.0 };
    CallLatency { base_ns: base * factor * 1e3, hops_ns: hops_us * factor * 1e3 }
}

/// NCCL's whole latency lat(a, p) of a call, ns: [`call_latency`]'s base and hops.
pub fn call_latency_ns(
    c: Collective,
    algo: Algorithm,
    p: Protocol,
    lat: (f64, f64, f64),
    hops: (u32, u32),
    nodes: u32,
    alpha: (f64, f64),
) -> f64 {
    let l = call_latency(c, algo, p, lat, hops, nodes, alpha);
    l.base_ns + l.hops_ns
}

/// NCCL's latency of a point-to-point send (ns): Simple's base and one hop, NVLink inside a
/// server, the network across servers, plus the physical path latency α of that hop.
pub fn p2p_latency_ns(same_server: bool, (alpha_nv_ns, alpha_net_ns): (f64, f64)) -> f64 {
    let (base, hw_nv, hw_net) = P2P_LATENCY_US;
    if same_server {
        (base + hw_nv) * 1e3 + alpha_nv_ns
    } else {
        (base + hw_net) * 1e3 + alpha_net_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_latency_is_nccls_composition() {
        // 8 ranks in one server, LL all-reduce: 6.6 + 14 × 0.6 µs.
        let t = call_latency_ns(
            Collective::AllReduce,
            Algorithm::RING,
            Protocol::LL,
            RING_LATENCY_US[0],
            (14, 0),
            1,
            (0.0, 0.0),
        );
        assert!((t - 15.0e3).abs() < 1e-6, "{t}");
        // 2 servers × 8, Simple all-reduce: 28 intra hops (3.4 µs, above the 3 µs Simple post
        // floor), 2 inter with a 1 µs network path that the flush doubles; × 1.4.
        let t = call_latency_ns(
            Collective::AllReduce,
            Algorithm::RING,
            Protocol::Simple,
            RING_LATENCY_US[2],
            (28, 2),
            2,
            (0.0, 1000.0),
        );
        let want = (8.4 + 28.0 * 3.4 + 2.0 * (14.0 + 2.0)) * 1.4 * 1e3;
        assert!((t - want).abs() < 1e-6 * want, "{t} vs {want}");
        // LL on 2 servers: the intra hop is floored at the 1 µs post overhead.
        let t = call_latency_ns(
            Collective::AllGather,
            Algorithm::RING,
            Protocol::LL,
            RING_LATENCY_US[0],
            (14, 1),
            2,
            (0.0, 0.0),
        );
        assert!((t - (6.6 + 14.0 * 1.0 + 2.7) * 1e3).abs() < 1e-6, "{t}");
    }

    #[test]
    fn nvls_efficiency_is_nccls_per_generation_and_hopper_achieves_the_catalogs_busbw() {
        // NCCL's nvlsEfficiency: 0.74 Blackwell; Hopper's 0.85 scaled so that an 8×H100 NVLS
        // all-reduce's asymptotic busbw, 1.75 × 370.8 GB/s × efficiency × 15/16, is the
        // catalog's 475 GB/s (by hand: 475 / (1.75 × 370.8 × 15/16) = 475 / 608.34 = 0.78081).
        assert_eq!(Arch::nvls_efficiency(Some(Arch::Blackwell)), 0.74);
        assert_eq!(Arch::nvls_efficiency(None), 0.85);
        let hopper = Arch::nvls_efficiency(Some(Arch::Hopper));
        assert!((hopper - 475.0 / (1.75 * 370.8 * 15.0 / 16.0)).abs() < 1e-12, "{hopper}");
        assert!((hopper - 0.78081).abs() < 1e-5, "{hopper}");
    }

    #[test]
    fn protocols_parse_as_nccl_spells_them() {
        assert_eq!(Protocol::parse("ll128").unwrap(), Protocol::LL128);
        assert_eq!(Protocol::parse("Simple").unwrap(), Protocol::Simple);
        assert!(Protocol::parse("fast").unwrap_err().message.contains("LL, LL128, Simple"));
    }
}
