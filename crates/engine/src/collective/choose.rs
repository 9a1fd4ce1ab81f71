//! Which algorithm (and protocol) runs a collective: the shape of NCCL's tuning model.
//!
//! For every candidate algorithm a and protocol p (shared/reference/hardware.md §4, NCCL 2.30
//! `src/graph/tuning.cc`):
//!
//! ```text
//! t(a, p) = lat(a, p) + β(a) / eff(p)
//! lat(a, p) = base(a, p) + hops_intra(a) · hw_nvlink(a, p) + hops_inter(a) · hw_net(a, p)   [µs]
//! ```
//!
//! β(a) is the bandwidth part of the algorithm's own schedule, priced by [`super::cost::schedule_ns`]
//! with zero α: one definition per algorithm. eff(p) = 0.5 (LL: half of each line is flags),
//! 0.92 (LL128: 120 data bytes per 128) or 1 (Simple). Hop counts, with n ranks, N servers and
//! m ranks on the fullest server: ring 2(n−1) steps for all-reduce (n−1 otherwise) of which
//! 2(N−1) (N−1) cross servers; tree 2(m−1) intra and 2⌈log2 N⌉ inter; NVLS one intra hop;
//! NVLS tree one intra and 2⌈log2 N⌉ inter; PXN the ring's (direct's) plus one intra relay;
//! halving-doubling, direct and hierarchical one hop per dependent step of their schedule.
//! The smallest t wins.
//!
//! The options mirror SimAI's environment variables (shared/reference/formats.md §7):
//! `AS_SEND_LAT` (µs every transfer step waits before it starts, replacing NCCL's latency table:
//! lat = (hops_intra + hops_inter) · send_lat), `AS_NVLS_ENABLE`, `AS_PXN_ENABLE` and
//! `AS_NVLSTREE_ENABLE` (each default off, as in SimAI). Candidates are NCCL's own: ring, tree,
//! direct (all-to-all), NVLS and NVLS tree when enabled (and the group allows), PXN when enabled
//! and the group spans servers. Halving-doubling and hierarchical run only when forced.

use super::cost::{schedule_ns, Links};
use super::{schedule, valid_algorithms, Algorithm, GroupTopo, Schedule};
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

    /// Fraction of the link rate that carries data.
    pub fn efficiency(self) -> f64 {
        match self {
            Protocol::LL => 0.5,
            Protocol::LL128 => 0.92,
            Protocol::Simple => 1.0,
        }
    }
}

/// NCCL 2.30's latencies (µs) for Ring, indexed by [`Protocol`]: (base, NVLink hop, network hop).
pub const RING_LATENCY_US: [(f64, f64, f64); 3] = [(6.6, 0.6, 2.7), (14.0, 1.9, 4.0), (8.4, 3.4, 14.0)];
/// The same for Tree.
pub const TREE_LATENCY_US: [(f64, f64, f64); 3] = [(6.8, 0.6, 5.0), (14.0, 1.25, 8.5), (8.4, 4.0, 14.0)];
/// NVLS and NVLS tree run Simple only: no base, 25 µs per NVLink hop, 18 (NVLS) / 20.9 (NVLS tree) per network hop.
pub const NVLS_LATENCY_US: (f64, f64, f64) = (0.0, 25.0, 18.0);
pub const NVLS_TREE_LATENCY_US: (f64, f64, f64) = (0.0, 25.0, 20.9);

/// How to choose; `Default` is SimAI's defaults (NCCL latencies, NVLS / PXN / NVLS tree off).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// `AS_SEND_LAT`, µs per transfer step; None: NCCL's latency table.
    pub send_lat_us: Option<f64>,
    /// `AS_NVLS_ENABLE`.
    pub nvls_enable: bool,
    /// `AS_PXN_ENABLE`.
    pub pxn_enable: bool,
    /// `AS_NVLSTREE_ENABLE`.
    pub nvlstree_enable: bool,
    /// Run this algorithm whatever the prediction (it must be able to run the collective).
    pub algorithm: Option<Algorithm>,
}

/// The chosen algorithm and protocol, the predicted time, and the schedule to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    pub predicted_ns: f64,
    pub schedule: Schedule,
}

/// (intra-server, inter-server) latency hops of `algo`, from its shape or its schedule.
fn hops(c: Collective, algo: Algorithm, g: &GroupTopo, s: &Schedule) -> (u32, u32) {
    let servers = g.servers();
    let (n, nodes) = (g.size(), servers.members.len() as u32);
    let m = servers.members.iter().map(|v| v.len() as u32).max().unwrap_or(1);
    let log2_nodes = 32 - (nodes - 1).leading_zeros();
    let ring = || {
        let (steps, inter) =
            if c == Collective::AllReduce { (2 * (n - 1), 2 * (nodes - 1)) } else { (n - 1, nodes - 1) };
        (steps - inter, inter)
    };
    match algo {
        Algorithm::Ring => ring(),
        Algorithm::Tree => (2 * (m - 1), 2 * log2_nodes),
        Algorithm::Nvls => (1, 0),
        Algorithm::NvlsTree => (1, 2 * log2_nodes),
        Algorithm::Pxn if c == Collective::AllToAll => (1, (nodes > 1) as u32),
        Algorithm::Pxn => {
            let (intra, inter) = ring();
            (intra + (nodes > 1) as u32, inter)
        }
        Algorithm::HalvingDoubling | Algorithm::Direct | Algorithm::Hierarchical => {
            let crosses = |p: &super::Phase| {
                p.transfers.iter().any(|t| match (t.src, t.dst) {
                    (super::Endpoint::Rank(a), super::Endpoint::Rank(b)) => {
                        servers.of_rank[a as usize] != servers.of_rank[b as usize]
                    }
                    _ => false,
                })
            };
            s.phases.iter().fold((0, 0), |(i, e), p| if crosses(p) { (i, e + p.repeat) } else { (i + p.repeat, e) })
        }
    }
}

/// Predicted ns of `algo` with each protocol it runs, from its schedule `s`.
fn predict(
    c: Collective,
    algo: Algorithm,
    g: &GroupTopo,
    s: &Schedule,
    links: &Links,
    opts: &Options,
) -> Result<Vec<(Protocol, f64)>, InputError> {
    let bandwidth_only = Links { alpha_nvlink_ns: 0.0, alpha_net_ns: 0.0, ..*links };
    let beta = schedule_ns(s, g, &bandwidth_only)?;
    let (intra, inter) = hops(c, algo, g, s);
    let (intra, inter) = (intra as f64, inter as f64);
    let table: Vec<(Protocol, (f64, f64, f64))> = match algo {
        Algorithm::Ring => Protocol::ALL.into_iter().zip(RING_LATENCY_US).collect(),
        Algorithm::Tree => Protocol::ALL.into_iter().zip(TREE_LATENCY_US).collect(),
        Algorithm::Nvls => vec![(Protocol::Simple, NVLS_LATENCY_US)],
        Algorithm::NvlsTree => vec![(Protocol::Simple, NVLS_TREE_LATENCY_US)],
        _ => vec![(Protocol::Simple, RING_LATENCY_US[2])],
    };
    Ok(table
        .into_iter()
        .map(|(p, (base, nv, net))| {
            let lat_us = match opts.send_lat_us {
                Some(x) => (intra + inter) * x,
                None => base + intra * nv + inter * net,
            };
            (p, lat_us * 1e3 + beta / p.efficiency())
        })
        .collect())
}

/// Choose how to run collective `c` of S = `bytes` on `g` with `channels` channels, on links of
/// the given bandwidths (their α are not used: latency comes from NCCL's table or AS_SEND_LAT).
pub fn choose(
    c: Collective,
    g: &GroupTopo,
    bytes: u64,
    channels: u32,
    links: &Links,
    opts: &Options,
) -> Result<Choice, InputError> {
    if let Some(x) = opts.send_lat_us {
        if !(x >= 0.0 && x.is_finite()) {
            return Err(super::err("send_lat_us", format!("AS_SEND_LAT must be a non-negative number of µs, got {x}")));
        }
    }
    let candidates: Vec<Algorithm> = match opts.algorithm {
        Some(a) => vec![a],
        None => {
            let spans = g.servers().members.len() > 1;
            valid_algorithms(c, g)
                .into_iter()
                .filter(|&a| match a {
                    Algorithm::Ring | Algorithm::Tree => true,
                    Algorithm::Direct => c == Collective::AllToAll,
                    Algorithm::Nvls => opts.nvls_enable,
                    Algorithm::NvlsTree => opts.nvlstree_enable,
                    Algorithm::Pxn => opts.pxn_enable && spans,
                    Algorithm::HalvingDoubling | Algorithm::Hierarchical => false,
                })
                .collect()
        }
    };
    let mut best: Option<Choice> = None;
    for algo in candidates {
        let s = schedule(c, algo, g, bytes, channels)?;
        for (protocol, t) in predict(c, algo, g, &s, links, opts)? {
            if best.as_ref().is_none_or(|b| t < b.predicted_ns) {
                best = Some(Choice { algorithm: algo, protocol, predicted_ns: t, schedule: s.clone() });
            }
        }
    }
    best.ok_or_else(|| {
        let valid: Vec<&str> = valid_algorithms(c, g).iter().map(|a| a.name()).collect();
        super::err(
            "algorithm",
            format!(
                "no enabled algorithm runs {} on {} ranks (valid here: {}; force one or enable NVLS / PXN)",
                c.name(),
                g.size(),
                valid.join(", ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Collective::*;

    /// H100-like: NVLink 370.8 GB/s, one 400 Gb/s NIC per GPU at 48.5 GB/s.
    const LINKS: Links = Links { nvlink_gbps: 370.8, nic_gbps: 48.5, alpha_nvlink_ns: 0.0, alpha_net_ns: 0.0 };

    fn pick(c: Collective, ranks: &[u32], bytes: u64, opts: &Options) -> Choice {
        let g = GroupTopo { ranks, gpus_per_server: 8, nvls: true };
        choose(c, &g, bytes, 8, &LINKS, opts).unwrap()
    }

    #[test]
    fn nvls_wins_large_all_reduce_in_an_nvswitch_server_only_when_enabled() {
        let server: Vec<u32> = (0..8).collect();
        let on = Options { nvls_enable: true, ..Options::default() };
        let big = pick(AllReduce, &server, 1 << 30, &on);
        assert_eq!((big.algorithm, big.protocol), (Algorithm::Nvls, Protocol::Simple));
        let off = pick(AllReduce, &server, 1 << 30, &Options::default());
        assert!(matches!(off.algorithm, Algorithm::Ring | Algorithm::Tree), "{:?}", off.algorithm);
        // NVLS (≈ S/B) is faster than the ring (≈ 1.75 S/B) by more than its latency.
        assert!(big.predicted_ns < off.predicted_ns / 1.5);
        // 4 KiB: LL ring, 6.6 + 14 × 0.6 = 15 µs, beats NVLS's 25 µs.
        let small = pick(AllReduce, &server, 4096, &on);
        assert_eq!((small.algorithm, small.protocol), (Algorithm::Ring, Protocol::LL));
        let want = 15.0e3 + 2.0 * 7.0 / 8.0 * 4096.0 / 370.8 / 0.5;
        assert!((small.predicted_ns - want).abs() < 1e-9 * want, "{} vs {want}", small.predicted_ns);
    }

    #[test]
    fn nvls_tree_and_pxn_only_when_enabled() {
        let two: Vec<u32> = (0..16).collect();
        let all = Options { nvls_enable: true, nvlstree_enable: true, pxn_enable: true, ..Options::default() };
        assert_eq!(pick(AllReduce, &two, 1 << 30, &all).algorithm, Algorithm::NvlsTree);
        let no_tree = Options { nvlstree_enable: false, ..all.clone() };
        let got = pick(AllReduce, &two, 1 << 30, &no_tree).algorithm;
        assert!(matches!(got, Algorithm::Ring | Algorithm::Tree | Algorithm::Pxn), "{got:?}");
        for bytes in [1 << 10, 1 << 20, 1 << 30] {
            for c in [AllReduce, AllGather, AllToAll] {
                let got = pick(c, &two, bytes, &Options::default()).algorithm;
                assert!(matches!(got, Algorithm::Ring | Algorithm::Tree | Algorithm::Direct), "{c:?} {bytes}: {got:?}");
            }
        }
    }

    #[test]
    fn forced_algorithms_run_or_say_why_not() {
        let two: Vec<u32> = (0..16).collect();
        let forced = Options { algorithm: Some(Algorithm::Hierarchical), ..Options::default() };
        assert_eq!(pick(AllReduce, &two, 1 << 20, &forced).algorithm, Algorithm::Hierarchical);
        let g = GroupTopo { ranks: &two, gpus_per_server: 8, nvls: true };
        let nvls = Options { algorithm: Some(Algorithm::Nvls), ..Options::default() };
        let e = choose(AllReduce, &g, 1 << 20, 8, &LINKS, &nvls).unwrap_err();
        assert!(e.message.contains("inside one server"), "{e}");
    }

    #[test]
    fn send_lat_replaces_the_latency_table_per_step() {
        // 8-rank ring all-reduce: 14 sequential steps × 10 µs, then the Simple-protocol bandwidth term.
        let server: Vec<u32> = (0..8).collect();
        let opts = Options { send_lat_us: Some(10.0), algorithm: Some(Algorithm::Ring), ..Options::default() };
        let got = pick(AllReduce, &server, 1 << 30, &opts);
        let want = 14.0 * 10.0e3 + 2.0 * 7.0 / 8.0 * (1u64 << 30) as f64 / 370.8;
        assert!((got.predicted_ns - want).abs() < 1e-9 * want, "{} vs {want}", got.predicted_ns);
        let g = GroupTopo { ranks: &server, gpus_per_server: 8, nvls: false };
        let bad = Options { send_lat_us: Some(-1.0), ..Options::default() };
        assert!(choose(AllReduce, &g, 1, 1, &LINKS, &bad).is_err());
    }
}
