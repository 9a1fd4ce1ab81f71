//! Ring algorithms (Patarasuk & Yuan 2009; NCCL's rings), over `channels` parallel rings.
//!
//! Every channel's ring visits the servers in order and, inside a server, its group ranks in
//! group order rotated, so channel j leaves each server from a different GPU (and so a different
//! NIC), as NCCL's rings do. Server s of channel j is rotated by j − s: the ring then enters
//! server s + 1 at the local index it left server s from, i.e. on the same rail, and a
//! rail-optimised fabric carries the hop inside one rail switch instead of through the spine
//! (only the wrap from the last server to the first changes rail, unless the server count is a
//! multiple of the rotation period). With c channels each carries S/c:
//!
//! ```text
//! all-reduce      2(n−1) steps, every rank sends S/(n·c) per channel to its successor
//! all-gather,     n−1 steps of S/(n·c) (S is the gathered output / the whole input)
//! reduce-scatter
//! broadcast       chain from the root along the ring, k = ⌈S/(c·chunk)⌉ chunks of S/(c·k),
//!                 k + n − 2 pipelined steps; reduce is the same chain reversed toward the root
//! ```

use super::choose::Options;
use super::nccl::{Latency, Protocol, RING_LATENCY_US};
use super::registered;
use super::{chunks, send, Call, CollectiveAlgorithm, Grain, GroupTopo, Phase, Request, Servers, Transfer};
use crate::workload::Collective;

registered! {
    /// NCCL's ring: every collective but all-to-all, always considered by the tuner, all three
    /// protocols ([`RING_LATENCY_US`]), NCCL's ring latency rules.
    Ring as RING: "ring", Collective::RING_KINDS
}

impl CollectiveAlgorithm for Ring {
    fn unsupported(&self, c: Collective, _g: &GroupTopo, _s: &Servers) -> Option<String> {
        (c == Collective::AllToAll).then(|| "a ring cannot deliver distinct data to every rank".into())
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        ring(r.collective, r.servers, r.bytes, r.channels, r.grain)
    }

    fn offered(&self, _c: Collective, _g: &GroupTopo, _s: &Servers, _opts: &Options) -> bool {
        true
    }

    fn protocols(&self) -> Vec<(Protocol, Latency)> {
        Protocol::ALL.into_iter().zip(RING_LATENCY_US).collect()
    }

    fn hops(&self, call: &Call) -> (u32, u32) {
        ring_hops(call.collective, call.group.size(), call.servers.members.len() as u32)
    }

    fn ring_latency(&self) -> bool {
        true
    }
}

/// (intra, inter) latency hops of a ring over n ranks on `nodes` servers (NCCL's count): 2(n−1)
/// steps for all-reduce, n − 1 otherwise (a chain for broadcast and reduce), 2(N−1) or N − 1 of
/// them across servers.
pub fn ring_hops(c: Collective, n: u32, nodes: u32) -> (u32, u32) {
    let (steps, inter) = if c == Collective::AllReduce { (2 * (n - 1), 2 * (nodes - 1)) } else { (n - 1, nodes - 1) };
    (steps - inter, inter)
}

/// The order of ranks around channel `ch`'s ring.
pub(super) fn ring_order(s: &Servers, ch: u32) -> Vec<u32> {
    s.members
        .iter()
        .enumerate()
        .flat_map(|(server, m)| {
            let len = m.len();
            let r = (ch as usize % len + len - server % len) % len;
            m[r..].iter().chain(&m[..r]).copied()
        })
        .collect()
}

/// Successor hops of each channel's ring, `bytes` each.
fn successor_hops(s: &Servers, channels: u32, bytes: f64) -> Vec<Transfer> {
    let mut hops = Vec::with_capacity(s.of_rank.len() * channels as usize);
    for ch in 0..channels {
        let order = ring_order(s, ch);
        for (i, &a) in order.iter().enumerate() {
            hops.push(send(a, order[(i + 1) % order.len()], bytes));
        }
    }
    hops
}

/// The chain from the root (rank 0) along each channel's ring; reversed toward the root if `up`.
fn chain_hops(s: &Servers, channels: u32, bytes: f64, up: bool) -> Vec<Transfer> {
    let mut hops = Vec::new();
    for ch in 0..channels {
        let order = ring_order(s, ch);
        let root = order.iter().position(|&r| r == 0).unwrap_or(0);
        for i in 0..order.len() - 1 {
            let (a, b) = (order[(root + i) % order.len()], order[(root + i + 1) % order.len()]);
            hops.push(if up { send(b, a, bytes) } else { send(a, b, bytes) });
        }
    }
    hops
}

pub(super) fn ring(c: Collective, s: &Servers, bytes: f64, channels: u32, grain: Grain) -> Vec<Phase> {
    let n = s.of_rank.len() as u32;
    let per_step = bytes / (n as f64 * channels as f64);
    match c {
        Collective::AllReduce => vec![Phase { transfers: successor_hops(s, channels, per_step), repeat: 2 * (n - 1) }],
        Collective::AllGather | Collective::ReduceScatter => {
            vec![Phase { transfers: successor_hops(s, channels, per_step), repeat: n - 1 }]
        }
        Collective::Broadcast | Collective::Reduce => {
            let per_channel = bytes / channels as f64;
            let k = chunks(per_channel, grain);
            let hops = chain_hops(s, channels, per_channel / k as f64, c == Collective::Reduce);
            vec![Phase { transfers: hops, repeat: k + n - 2 }]
        }
        // Refused before dispatch (no distinct data per destination on a ring).
        Collective::AllToAll => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Algorithm;
    use crate::collective::{schedule, Endpoint};

    #[test]
    fn channels_leave_each_server_from_a_different_gpu() {
        let ranks: Vec<u32> = (0..8).collect();
        let g = GroupTopo::on_servers(&ranks, 4, false);
        let s = g.servers();
        // Server 1 is entered on the rail (local index) server 0 was left from.
        assert_eq!(ring_order(s, 0), vec![0, 1, 2, 3, 7, 4, 5, 6]);
        assert_eq!(ring_order(s, 1), vec![1, 2, 3, 0, 4, 5, 6, 7]);
        assert_eq!(ring_order(s, 2), vec![2, 3, 0, 1, 5, 6, 7, 4]);
        let sch = schedule(Collective::AllGather, Algorithm::RING, &g, 8000, 4).unwrap();
        let p = &sch.phases[0];
        assert_eq!((p.repeat, p.transfers.len()), (7, 32));
        assert!(p.transfers.iter().all(|t| t.bytes == 8000.0 / 32.0));
        // Cross-server hops: one per channel per server, each from a distinct GPU.
        let mut leavers: Vec<u32> = p
            .transfers
            .iter()
            .filter(|t| matches!((t.src, t.dst), (Endpoint::Rank(a), Endpoint::Rank(b)) if s.of_rank[a as usize] != s.of_rank[b as usize]))
            .map(|t| match t.src {
                Endpoint::Rank(a) => a,
                _ => u32::MAX,
            })
            .collect();
        leavers.sort_unstable();
        assert_eq!(leavers, (0..8).collect::<Vec<u32>>());
    }

    #[test]
    fn broadcast_is_a_pipelined_chain_from_the_root() {
        let ranks: Vec<u32> = (0..4).collect();
        let g = GroupTopo::on_servers(&ranks, 8, false);
        // 2 MiB in one channel: 4 chunks of 512 KiB through 3 hops: 4 + 3 − 1 steps.
        let sch = schedule(Collective::Broadcast, Algorithm::RING, &g, 2 << 20, 1).unwrap();
        let p = &sch.phases[0];
        assert_eq!(p.repeat, 6);
        assert_eq!(p.transfers, vec![send(0, 1, 524288.0), send(1, 2, 524288.0), send(2, 3, 524288.0)]);
        let sch = schedule(Collective::Reduce, Algorithm::RING, &g, 2 << 20, 1).unwrap();
        assert_eq!(sch.phases[0].transfers[0], send(1, 0, 524288.0));
    }
}
