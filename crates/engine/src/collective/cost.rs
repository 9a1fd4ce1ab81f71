//! α–β price of a [`Schedule`]: the analytical side of each algorithm's one definition.
//!
//! Every rank has an NVLink port of B_nv and a NIC share of B_nic per direction; the NVSwitch of
//! a server (NVLS) has one NVLink port per group rank on it, m_s · B_nv. A transfer between
//! endpoints on the same server uses NVLink, across servers the NICs. A phase's transfers run
//! concurrently, so the phase lasts as long as its busiest port:
//!
//! ```text
//! T = base + Σ_phases repeat · ( α(phase) + max over endpoints e, port kinds k ∈ {nv, nic} of
//!                                 max(out_k(e), in_k(e)) / (eff · B_k(e)) )
//! α(phase) = H / steps                       (NCCL: its hops' latency H, their α included)
//!          = x + (α_net if any transfer crosses servers, else α_nv)   (AS_SEND_LAT x, bare 0)
//! ```
//!
//! out_k(e) / in_k(e): bytes leaving / entering e on ports of kind k in one repetition. A
//! platform node outside the group ([`Endpoint::Node`]: a reduction server, a reducing switch)
//! has a network port only, at the (out, in) rates its algorithm states, so its term is
//! max(out(e)/B_out(e), in(e)/B_in(e)). base, eff
//! and the step latency are the schedule's [`Timing`] (NCCL's base latency, protocol and
//! algorithm efficiency, [`super::nccl`]); steps = Σ repeat, so NCCL's steps sum to its
//! lat = base + H; a bare schedule ([`Timing::RAW`]) pays the physical α of its links every
//! step. The flow model waits the same α before each step's bytes move. GB/s are 10⁹ B/s, so
//! bytes / GB/s is ns. Example (one server per rank, B = B_nic, bare schedule): a ring all-reduce
//! is 2(n−1)(α + S/(n·B)); its 1/c-sized channels sum back to the same bytes.

use super::{err, Endpoint, GroupTopo, Schedule, Timing};
use crate::catalog::Arch;
use crate::error::InputError;

/// Link speeds and per-step latencies of the platform a schedule is priced on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Links {
    /// NVLink bandwidth per GPU and direction, GB/s.
    pub nvlink_gbps: f64,
    /// Network bandwidth per GPU and direction (its share of the server's NICs), GB/s.
    pub nic_gbps: f64,
    /// Physical latency of a path between GPUs of one server (NVLink), ns.
    pub alpha_nvlink_ns: f64,
    /// Physical latency of a path between GPUs of two servers (the network), ns.
    pub alpha_net_ns: f64,
    /// The GPUs' generation, for NCCL's per-generation limits; None: none apply.
    pub arch: Option<Arch>,
}

/// ns that `s` takes on group `g` over `links`: the equation of the module documentation.
pub fn schedule_ns(s: &Schedule, g: &GroupTopo, links: &Links) -> Result<f64, InputError> {
    timed_ns(s, &s.timing, g, links)
}

/// ns that the phases of `s` take when run with `timing` instead of its own.
pub fn timed_ns(s: &Schedule, timing: &Timing, g: &GroupTopo, links: &Links) -> Result<f64, InputError> {
    if !(timing.efficiency > 0.0 && timing.efficiency <= 1.0) {
        return Err(err("efficiency", format!("must be in (0, 1], got {}", timing.efficiency)));
    }
    for (name, v) in [("nvlink_gbps", links.nvlink_gbps), ("nic_gbps", links.nic_gbps)] {
        if !(v > 0.0 && v.is_finite()) {
            return Err(err(name, format!("bandwidth must be a positive number of GB/s, got {v}")));
        }
    }
    for (name, v) in [("alpha_nvlink_ns", links.alpha_nvlink_ns), ("alpha_net_ns", links.alpha_net_ns)] {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(err(name, format!("latency must be a non-negative number of ns, got {v}")));
        }
    }
    let servers = g.servers();
    let n = g.size() as usize;
    let nodes = servers.members.len();
    // Platform nodes outside the group (reduction servers, reducing switches): their ports
    // follow the switches, network only, at the rates the algorithm states.
    let mut extra: Vec<(u32, f64, f64)> = Vec::new();
    for t in s.phases.iter().flat_map(|p| &p.transfers) {
        for e in [t.src, t.dst] {
            if let Endpoint::Node(v) = e {
                if !extra.iter().any(|x| x.0 == v) {
                    let (out, inn) = s.algorithm.node_rates(v).ok_or_else(|| {
                        InputError::internal(
                            "collective schedule",
                            format!("{} states no rates of node {v}", s.algorithm.name()),
                        )
                    })?;
                    if !(out > 0.0 && inn > 0.0) {
                        return Err(err(
                            "node_rates",
                            format!("node {v} needs positive rates, got {out} and {inn} GB/s"),
                        ));
                    }
                    extra.push((v, out, inn));
                }
            }
        }
    }
    let ports = n + nodes + extra.len();
    // Port loads, indexed by rank, then switches after the ranks (switches have NVLink ports
    // only), then the extra nodes (network ports only).
    let mut out_nv = vec![0.0; n + nodes];
    let mut in_nv = vec![0.0; n + nodes];
    let mut out_net = vec![0.0; ports];
    let mut in_net = vec![0.0; ports];
    let locate = |e: Endpoint| -> Result<(usize, usize), InputError> {
        match e {
            Endpoint::Rank(r) if (r as usize) < n => Ok((r as usize, servers.of_rank[r as usize] as usize)),
            Endpoint::Switch { server } if (server as usize) < nodes => Ok((n + server as usize, server as usize)),
            // A node of its own, on no server of the group.
            Endpoint::Node(v) => {
                let i = extra.iter().position(|x| x.0 == v).unwrap_or(0);
                Ok((n + nodes + i, usize::MAX - i))
            }
            _ => Err(InputError::internal(
                "collective schedule",
                format!("{e:?} is not in this group of {n} ranks on {nodes} servers"),
            )),
        }
    };
    let steps = s.steps();
    let (step_ns, plus_path) = timing.step_ns(steps);
    // A schedule of no steps pays NCCL's hops with the call.
    let mut total = if steps == 0 { timing.latency_ns() } else { timing.call_latency_ns };
    for phase in &s.phases {
        let mut crosses = false;
        for t in &phase.transfers {
            let ((a, sa), (b, sb)) = (locate(t.src)?, locate(t.dst)?);
            if !(t.bytes >= 0.0 && t.bytes.is_finite()) {
                return Err(InputError::internal("collective schedule", format!("transfer of {} bytes", t.bytes)));
            }
            if sa == sb && a >= n + nodes {
                return Err(InputError::internal("collective schedule", format!("{:?} sends to itself", t.src)));
            } else if sa == sb {
                out_nv[a] += t.bytes;
                in_nv[b] += t.bytes;
            } else if (n..n + nodes).contains(&a) || (n..n + nodes).contains(&b) {
                return Err(InputError::internal(
                    "collective schedule",
                    format!("{:?} → {:?}: a switch reaches only its own server", t.src, t.dst),
                ));
            } else {
                crosses = true;
                out_net[a] += t.bytes;
                in_net[b] += t.bytes;
            }
        }
        let mut busiest: f64 = 0.0;
        for e in 0..n + nodes {
            let nv = if e < n { links.nvlink_gbps } else { servers.members[e - n].len() as f64 * links.nvlink_gbps };
            busiest = busiest.max(out_nv[e].max(in_nv[e]) / nv);
            if e < n {
                busiest = busiest.max(out_net[e].max(in_net[e]) / links.nic_gbps);
            }
        }
        for (i, &(_, out, inn)) in extra.iter().enumerate() {
            let e = n + nodes + i;
            busiest = busiest.max(out_net[e] / out).max(in_net[e] / inn);
        }
        let path = if crosses { links.alpha_net_ns } else { links.alpha_nvlink_ns };
        let alpha = step_ns + if plus_path { path } else { 0.0 };
        total += phase.repeat as f64 * (alpha + busiest / timing.efficiency);
        for v in [&mut out_nv, &mut in_nv, &mut out_net, &mut in_net] {
            v.iter_mut().for_each(|x| *x = 0.0);
        }
    }
    Ok(total)
}

/// The same equation for a direct all-to-all of S = `bytes` on `nodes` servers of `per_server`
/// ranks each, written out by symmetry (every rank carries the same load), for groups too large
/// to hold the schedule's n(n−1) transfers: α_net + max((n−g)/n · S / B_nic, (g−1)/n · S / B_nv),
/// α_nv and no network term inside one server.
pub fn direct_all_to_all_ns(nodes: u32, per_server: u32, bytes: u64, links: &Links) -> f64 {
    let (n, g, s) = ((nodes * per_server) as f64, per_server as f64, bytes as f64);
    if n <= 1.0 || bytes == 0 {
        return 0.0;
    }
    let nvlink = (g - 1.0) / n * s / links.nvlink_gbps;
    if nodes <= 1 {
        return links.alpha_nvlink_ns + nvlink;
    }
    links.alpha_net_ns + nvlink.max((n - g) / n * s / links.nic_gbps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{schedule, Algorithm, StepLatency, PIPELINE_CHUNK_BYTES};
    use crate::workload::Collective::{self, *};

    const LINKS: Links =
        Links { nvlink_gbps: 300.0, nic_gbps: 50.0, alpha_nvlink_ns: 700.0, alpha_net_ns: 3000.0, arch: None };

    fn price(c: Collective, a: Algorithm, ranks: &[u32], gps: u32, bytes: u64, channels: u32) -> f64 {
        let g = GroupTopo::on_servers(ranks, gps, true);
        schedule_ns(&schedule(c, a, &g, bytes, channels).unwrap(), &g, &LINKS).unwrap()
    }

    fn close(got: f64, want: f64) {
        assert!((got - want).abs() <= 1e-9 * want.abs(), "{got} vs {want}");
    }

    #[test]
    fn ring_all_reduce_is_two_n_minus_one_steps_of_s_over_n() {
        // 16 ranks, one per server: every step crosses the network. T = 2(n−1)(α + S/(n·B)).
        let ranks: Vec<u32> = (0..16).map(|i| i * 8).collect();
        let s = 1u64 << 30;
        for channels in [1, 4] {
            let want = 30.0 * (3000.0 + s as f64 / 16.0 / 50.0);
            close(price(AllReduce, Algorithm::RING, &ranks, 8, s, channels), want);
        }
        // 8 ranks in one server: NVLink. All-gather: (n−1)(α_nv + S/(n·B_nv)).
        let ranks: Vec<u32> = (0..8).collect();
        close(price(AllGather, Algorithm::RING, &ranks, 8, s, 2), 7.0 * (700.0 + s as f64 / 8.0 / 300.0));
    }

    #[test]
    fn nccl_hops_latency_is_a_share_per_step_summing_to_its_lat() {
        // 16 ranks, one per server, ring all-reduce over 4 channels: 30 steps, each waiting H/30
        // and no path α of its own (NCCL's hop latencies hold it), so T = base + H + 30·S/(n·B).
        let ranks: Vec<u32> = (0..16).map(|i| i * 8).collect();
        let g = GroupTopo::on_servers(&ranks, 8, true);
        let bytes = 1u64 << 30;
        let s = schedule(AllReduce, Algorithm::RING, &g, bytes, 4).unwrap();
        let t = Timing { call_latency_ns: 8400.0, step: StepLatency::Hops(45_000.0), ..Timing::RAW };
        assert_eq!(s.steps(), 30);
        assert_eq!(t.step_ns(30), (1500.0, false));
        close(timed_ns(&s, &t, &g, &LINKS).unwrap(), 8400.0 + 45_000.0 + 30.0 * bytes as f64 / 16.0 / 50.0);
        close(t.latency_ns(), 53_400.0);
    }

    #[test]
    fn ring_channels_spread_the_crossing_over_every_nic() {
        // 2 servers × 4 ranks, 4 channels: each rank leaves its server in one channel (S/(8·4) on
        // its NIC) and stays inside in three (3·S/32 on NVLink): step = α_net + max(S/32/B_nic, 3S/32/B_nv).
        let ranks: Vec<u32> = (0..8).collect();
        let s = 1u64 << 30;
        let step = 3000.0 + (s as f64 / 32.0 / 50.0).max(3.0 * s as f64 / 32.0 / 300.0);
        close(price(AllReduce, Algorithm::RING, &ranks, 4, s, 4), 14.0 * step);
    }

    #[test]
    fn tree_all_reduce_pipelines_k_chunks_through_twice_the_depth() {
        // One server of 4 ranks, 1 channel, S = 4 MiB: each tree (chain 3→2→1→0 and 0→1→2→3)
        // carries S/2 = 4 chunks of 512 KiB; depth D = 3, so k + 2D − 1 = 9 steps. A middle rank
        // sends up and down in both chains: 4 chunks per step, 2S/k, over NVLink.
        let ranks: Vec<u32> = (0..4).collect();
        let s = 4u64 << 20;
        let want = 9.0 * (700.0 + 4.0 * PIPELINE_CHUNK_BYTES / 300.0);
        close(price(AllReduce, Algorithm::TREE, &ranks, 8, s, 1), want);
        // 4 servers of 1 rank: trees over servers. Tree A: 0→1←2, 1→3; tree B (mirror): 3→2←1, 2→0.
        // Depth 2 in both; rank 1 is interior in A (parent 3, children 0, 2) and a leaf in B
        // (parent 2): it sends 1 + 2 + 1 chunks up/down, receives 2 + 1 + 1: 4 chunks on the NIC.
        let ranks: Vec<u32> = (0..4).map(|i| i * 8).collect();
        let want = (4.0 + 4.0 - 1.0) * (3000.0 + 4.0 * PIPELINE_CHUNK_BYTES / 50.0);
        close(price(AllReduce, Algorithm::TREE, &ranks, 8, s, 1), want);
    }

    #[test]
    fn halving_doubling_matches_rabenseifner() {
        // 8 ranks, one per server: 2·log2(8) steps, 2(n−1)/n·S bytes per rank in all.
        let ranks: Vec<u32> = (0..8).map(|i| i * 8).collect();
        let s = 1u64 << 30;
        let want = 6.0 * 3000.0 + 2.0 * 7.0 / 8.0 * s as f64 / 50.0;
        close(price(AllReduce, Algorithm::HALVING_DOUBLING, &ranks, 8, s, 1), want);
        close(price(ReduceScatter, Algorithm::HALVING_DOUBLING, &ranks, 8, s, 1), want / 2.0);
    }

    #[test]
    fn direct_all_to_all_is_bound_by_the_nic_share_that_leaves_the_server() {
        // 2 servers × 8: a rank sends 8·S/16 over its NIC and 7·S/16 over NVLink, at once.
        let ranks: Vec<u32> = (0..16).collect();
        let s = 1u64 << 30;
        let want = 3000.0 + (8.0 * s as f64 / 16.0 / 50.0).max(7.0 * s as f64 / 16.0 / 300.0);
        close(price(AllToAll, Algorithm::DIRECT, &ranks, 8, s, 1), want);
    }

    #[test]
    fn direct_all_to_all_by_symmetry_equals_the_schedule() {
        for (nodes, per_server) in [(1, 8), (4, 8), (16, 1), (3, 4)] {
            let ranks: Vec<u32> = (0..nodes * 8).filter(|r| r % 8 < per_server).collect();
            let s = 3u64 << 28;
            let got = price(AllToAll, Algorithm::DIRECT, &ranks, 8, s, 1);
            close(direct_all_to_all_ns(nodes, per_server, s, &LINKS), got);
        }
    }

    #[test]
    fn nvls_all_reduce_moves_s_each_way_once() {
        // 8 ranks, 2 channels, S = 1 GiB: k = 1024 chunks of 512 KiB per channel, k + 1 steps;
        // per step a GPU sends 2 chunks to the switch and receives 2 (one per channel); the
        // switch port total is 8× that over 8 ports. T = (k+1)(α_nv + 2·chunk/B_nv) ≈ S/B_nv.
        let ranks: Vec<u32> = (0..8).collect();
        let want = 1025.0 * (700.0 + 2.0 * PIPELINE_CHUNK_BYTES / 300.0);
        close(price(AllReduce, Algorithm::NVLS, &ranks, 8, 1 << 30, 2), want);
    }

    #[test]
    fn hierarchical_all_reduce_sends_one_mth_over_the_network() {
        // 4 servers × 8 ranks: 2·7 intra steps of S/8 on NVLink, 2·3 rail steps of S/32 on the NICs.
        let ranks: Vec<u32> = (0..32).collect();
        let s = 1u64 << 30;
        let want = 14.0 * (700.0 + s as f64 / 8.0 / 300.0) + 6.0 * (3000.0 + s as f64 / 32.0 / 50.0);
        close(price(AllReduce, Algorithm::HIERARCHICAL, &ranks, 8, s, 1), want);
    }

    #[test]
    fn nvls_tree_reduces_in_the_switch_and_sends_one_mth_across() {
        // 2 servers × 2 ranks, S = 4 MiB, 1 channel: k = 8 chunks of 512 KiB (u). Per step a GPU
        // sends u + u/2 to its switch and gets u/2 + u back (NVLink, 1.5u), and exchanges u/4 up
        // and u/4 down in each of the two server trees with its rail peer (NIC, u/2 each way).
        // Server trees of 2 have depth 1: k + 3 + 2 = 13 steps, each crossing servers.
        let ranks: Vec<u32> = (0..4).collect();
        let u = PIPELINE_CHUNK_BYTES;
        let want = 13.0 * (3000.0 + (1.5 * u / 300.0).max(0.5 * u / 50.0));
        close(price(AllReduce, Algorithm::NVLS_TREE, &ranks, 2, 4 << 20, 1), want);
    }

    #[test]
    fn pxn_all_to_all_leaves_each_server_on_the_destination_rail() {
        // 2 servers × 2 ranks, S = 4 MiB: rank 0 sends S/4 to each peer; the one for rank 3
        // (rail 1) goes via rank 1. Merged, every GPU sends S/2 over NVLink (own + relayed) and
        // S/2 over its NIC; the relay cuts it into k = 4 chunks: k + 1 steps of S/8 per port.
        let ranks: Vec<u32> = (0..4).collect();
        let s = 4u64 << 20;
        let want = 5.0 * (3000.0 + (s as f64 / 8.0 / 50.0).max(s as f64 / 8.0 / 300.0));
        close(price(AllToAll, Algorithm::PXN, &ranks, 2, s, 1), want);
        // A ring's rail-changing hop gains an NVLink relay stage: one more step than the plain
        // ring. Rings keep to one rail between consecutive servers, so take 3 servers of 2, whose
        // wrap from the last server to the first changes rail.
        let six: Vec<u32> = (0..6).collect();
        let g = GroupTopo::on_servers(&six, 2, false);
        let (ring, pxn) =
            (schedule(AllGather, Algorithm::RING, &g, s, 1), schedule(AllGather, Algorithm::PXN, &g, s, 1));
        assert_eq!(pxn.unwrap().phases[0].repeat, ring.unwrap().phases[0].repeat + 1);
    }

    #[test]
    fn bad_links_and_foreign_endpoints_are_input_errors() {
        let ranks: Vec<u32> = (0..4).collect();
        let g = GroupTopo::on_servers(&ranks, 8, false);
        let s = schedule(AllReduce, Algorithm::RING, &g, 1 << 20, 1).unwrap();
        assert!(schedule_ns(&s, &g, &Links { nic_gbps: 0.0, ..LINKS }).is_err());
        let two = &ranks[..2];
        let small = GroupTopo::on_servers(two, 8, false);
        let e = schedule_ns(&s, &small, &LINKS).unwrap_err();
        assert!(e.is_internal() && e.message.contains("not in this group"), "{e}");
    }
}
