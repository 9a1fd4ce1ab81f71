//! Hierarchical all-pairs (MSCCL++'s multi-node algorithms): all-pairs inside every server over
//! NVLink, and across servers only between GPUs of the same local rank (same rail), each of
//! them once. N servers of m group ranks, n = N·m; rank j of a server talks across servers only
//! to rank j of the others (shared/seeds/001; microsoft/mscclpp python/mscclpp/default_algos
//! `allreduce_multi_nodes`, `allgather_multi_nodes` and mscclpp-test's `allgather2`, at 1f5f065).
//!
//! ```text
//! all-reduce      1. intra all-pairs reduce-scatter: S/m to each of m−1 local peers
//!                 2. rail exchange: the server-reduced shard S/m to each of N−1 rail peers,
//!                    each reduces the N copies itself (one-shot across servers)
//!                 3. intra all-pairs all-gather: the reduced S/m to each of m−1 local peers
//!                 T = lat + 2·(m−1)·S/(m·B_nv) + (N−1)·S/(m·B_nic)
//! all-gather      1. own shard S/n to each of m−1 local peers (NVLink) and, at the same time,
//!                    to each of N−1 rail peers (NIC)
//!                 2. the N−1 shards from the rail to each of m−1 local peers
//!                 T = lat + max((m−1)·S/(n·B_nv), (N−1)·S/(n·B_nic)) + (N−1)(m−1)·S/(n·B_nv)
//! reduce-scatter  the all-gather mirrored: 1. to each local peer the N−1 shards of its rail
//!                 peers; 2. the server-reduced shard to each rail peer and the own server's
//!                 shard to each local peer
//! ```
//!
//! Every shard crosses the network once per destination server: (N−1)/n · S per NIC for the
//! all-gather where flat all-pairs puts (n−m)/n · S on it. The rail exchange of the all-reduce is
//! one-shot, as MSCCL++'s (built for small messages, where one step beats two): its
//! (N−1)·S/m per NIC grows with N. Timing is MSCCL++'s ([`super::all_pairs::MSCCLPP_LATENCY_US`]);
//! the tuner weighs it under `--algo auto+extra` only.

use super::all_pairs::{exchange, too_many, MSCCLPP_LATENCY_US};
use super::choose::Options;
use super::hierarchical::{along_rails, RAIL_KINDS};
use super::nccl::{Latency, Protocol};
use super::{registered, Identity};
use super::{CollectiveAlgorithm, GroupTopo, Phase, Request, Servers, Transfer};
use crate::workload::Collective;

registered! {
    HierAllPairs as HIER_ALL_PAIRS: "hier_all_pairs", RAIL_KINDS
}

impl CollectiveAlgorithm for HierAllPairs {
    fn unsupported(&self, c: Collective, g: &GroupTopo, s: &Servers) -> Option<String> {
        along_rails(self.name(), c, s).or_else(|| too_many(g.size()))
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        let (c, s, bytes) = (r.collective, r.servers, r.bytes);
        let (nodes, n) = (s.members.len() as f64, r.group.size() as f64);
        let m = n / nodes;
        let phase = |parts: Vec<Vec<Transfer>>| Phase { transfers: parts.concat(), repeat: 1 };
        let shard = bytes / n;
        // The other servers' shards, passed on inside each server (none on one server).
        let remote = || if nodes > 1.0 { intra(s, (nodes - 1.0) * shard) } else { Vec::new() };
        match c {
            Collective::AllReduce => vec![
                phase(vec![intra(s, bytes / m)]),
                phase(vec![rails(s, bytes / m)]),
                phase(vec![intra(s, bytes / m)]),
            ],
            Collective::AllGather => vec![phase(vec![intra(s, shard), rails(s, shard)]), phase(vec![remote()])],
            Collective::ReduceScatter => {
                vec![phase(vec![remote()]), phase(vec![intra(s, shard), rails(s, shard)])]
            }
            // Refused before dispatch.
            Collective::AllToAll | Collective::Broadcast | Collective::Reduce => Vec::new(),
        }
    }

    fn offered(&self, _c: Collective, _g: &GroupTopo, s: &Servers, opts: &Options) -> bool {
        opts.extra && s.members.len() > 1
    }

    fn protocols(&self) -> Vec<(Protocol, Latency)> {
        MSCCLPP_LATENCY_US.to_vec()
    }
}

/// All-pairs inside every server, `bytes` per transfer.
fn intra(s: &Servers, bytes: f64) -> Vec<Transfer> {
    s.members.iter().flat_map(|m| exchange(m, bytes)).collect()
}

/// All-pairs along every rail (the j-th group rank of each server), `bytes` per transfer.
fn rails(s: &Servers, bytes: f64) -> Vec<Transfer> {
    let per_server = s.members[0].len();
    (0..per_server)
        .flat_map(|j| {
            let rail: Vec<u32> = s.members.iter().map(|m| m[j]).collect();
            exchange(&rail, bytes)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::cost::{schedule_ns, Links};
    use crate::collective::schedule;
    use crate::collective::Algorithm;
    use Collective::*;

    const LINKS: Links =
        Links { nvlink_gbps: 300.0, nic_gbps: 50.0, alpha_nvlink_ns: 700.0, alpha_net_ns: 3000.0, arch: None };

    fn price(c: Collective, ranks: &[u32], gps: u32, bytes: u64) -> f64 {
        let g = GroupTopo::on_servers(ranks, gps, false);
        schedule_ns(&schedule(c, Algorithm::HIER_ALL_PAIRS, &g, bytes, 8).unwrap(), &g, &LINKS).unwrap()
    }

    fn close(got: f64, want: f64) {
        assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    }

    #[test]
    fn closed_forms_on_servers_of_nvswitches_and_a_non_blocking_network() {
        // N = 4 servers of m = 8 (n = 32), bare schedule: each step its path latency.
        let ranks: Vec<u32> = (0..32).collect();
        let s = (1u64 << 30) as f64;
        let (nv, nic) = (LINKS.nvlink_gbps, LINKS.nic_gbps);
        // All-reduce: 7 × S/8 on NVLink, then 3 × S/8 on the NIC, then 7 × S/8 on NVLink.
        let intra = 700.0 + 7.0 * s / 8.0 / nv;
        close(price(AllReduce, &ranks, 8, 1 << 30), 2.0 * intra + 3000.0 + 3.0 * s / 8.0 / nic);
        // All-gather: own shard to 7 local and 3 rail peers at once, then the 3 rail shards to 7 local peers.
        let first = 3000.0 + (7.0 * s / 32.0 / nv).max(3.0 * s / 32.0 / nic);
        let fan_out = 700.0 + 21.0 * s / 32.0 / nv;
        close(price(AllGather, &ranks, 8, 1 << 30), first + fan_out);
        // Reduce-scatter: the same two steps, in the other order.
        close(price(ReduceScatter, &ranks, 8, 1 << 30), first + fan_out);
    }

    #[test]
    fn every_shard_crosses_to_each_other_server_once() {
        // 3 servers of 4: the all-gather's network bytes are (N−1)·S/n per rank, n·(N−1)·S/n in all.
        let ranks: Vec<u32> = (0..12).collect();
        let g = GroupTopo::on_servers(&ranks, 4, false);
        let sch = schedule(AllGather, Algorithm::HIER_ALL_PAIRS, &g, 1200, 1).unwrap();
        let s = g.servers();
        let crossing: f64 = sch
            .phases
            .iter()
            .flat_map(|p| &p.transfers)
            .filter(|t| match (t.src, t.dst) {
                (crate::collective::Endpoint::Rank(a), crate::collective::Endpoint::Rank(b)) => {
                    s.of_rank[a as usize] != s.of_rank[b as usize]
                }
                _ => false,
            })
            .map(|t| t.bytes)
            .sum();
        close(crossing, 12.0 * 2.0 * 100.0);
        // Every rank ends with every other rank's shard: 11 × 100 bytes in, per rank.
        let mut into = [0.0; 12];
        for t in sch.phases.iter().flat_map(|p| &p.transfers) {
            if let crate::collective::Endpoint::Rank(b) = t.dst {
                into[b as usize] += t.bytes;
            }
        }
        assert!(into.iter().all(|&b| (b - 1100.0).abs() < 1e-9), "{into:?}");
    }

    #[test]
    fn uneven_servers_are_refused() {
        let ranks = [0, 1, 2, 8];
        let g = GroupTopo::on_servers(&ranks, 8, false);
        let e = schedule(AllReduce, Algorithm::HIER_ALL_PAIRS, &g, 64, 1).unwrap_err();
        assert!(e.message.contains("rails do not line up"), "{e}");
        let e = schedule(AllToAll, Algorithm::HIER_ALL_PAIRS, &GroupTopo::on_servers(&ranks[..2], 8, false), 64, 1);
        assert!(e.unwrap_err().message.contains("defined for all-reduce"));
    }
}
