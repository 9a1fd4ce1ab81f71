//! NCCL's double binary tree all-reduce (Sanders, Speck & Träff 2009), pipelined.
//!
//! Across servers: two binary trees over the servers, the second the first mirrored (even
//! server count) or shifted by one (odd), so a server interior in one tree is a leaf in the
//! other. Inside a server: a chain through its group ranks, toward the first rank for tree A and
//! toward the last for tree B (the tree enters each server through a different GPU and NIC);
//! channel j rotates each server's ranks by j. Each tree carries S/2 of each channel's S/c,
//! cut into k = ⌈S/(2c·chunk)⌉ chunks. All-reduce = reduce up + broadcast down, pipelined: in
//! the steady state every edge carries a chunk up and a chunk down each step, so
//!
//! ```text
//! one phase: every tree edge, both directions, S/(2·c·k) bytes;  repeat = k + 2·D − 1
//! ```
//!
//! with D the deepest rank's distance (edges) to its tree's root over both trees.

use super::choose::Options;
use super::cost::{timed_ns, Links};
use super::nccl::{log2_ceil, Latency, Protocol, TREE_EFFICIENCY, TREE_LATENCY_US};
use super::registered;
use super::{
    chunks, send, Call, CollectiveAlgorithm, Grain, GroupTopo, Phase, Request, Servers, StepLatency, Timing, Transfer,
};
use crate::catalog::Arch;
use crate::error::InputError;
use crate::workload::Collective;

registered! {
    /// NCCL's double binary tree: all-reduce, always considered by the tuner, all three protocols
    /// ([`TREE_LATENCY_US`]), NCCL's tree bandwidth cap ([`tree_efficiency`]).
    Tree as TREE: "tree", [Collective::AllReduce]
}

impl CollectiveAlgorithm for Tree {
    fn unsupported(&self, c: Collective, _g: &GroupTopo, _s: &Servers) -> Option<String> {
        (c != Collective::AllReduce).then(|| "the double binary tree is defined for all-reduce".into())
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        tree(r.servers, r.bytes, r.channels, r.grain)
    }

    fn offered(&self, _c: Collective, _g: &GroupTopo, _s: &Servers, _opts: &Options) -> bool {
        true
    }

    fn protocols(&self) -> Vec<(Protocol, Latency)> {
        Protocol::ALL.into_iter().zip(TREE_LATENCY_US).collect()
    }

    /// NCCL's cap on the bus bandwidth the schedule would reach at full link rate.
    fn efficiency(&self, call: &Call, links: &Links) -> Result<f64, InputError> {
        let full = Timing { step: StepLatency::Hops(0.0), ..Timing::RAW };
        let raw_ns = timed_ns(call.schedule, &full, call.group, links)?;
        let raw_busbw = call.bytes as f64 * call.collective.busbw_factor(call.group.size()) / raw_ns;
        Ok(tree_efficiency(raw_busbw, call.channels, call.servers.members.len() as u32, links.arch))
    }

    /// A chain through the m ranks of a server up and down, log2 N hops across servers each way.
    fn hops(&self, call: &Call) -> (u32, u32) {
        let m = call.servers.members.iter().map(|v| v.len() as u32).max().unwrap_or(1);
        (2 * (m - 1), 2 * log2_ceil(call.servers.members.len() as u32))
    }
}

/// The tree's efficiency: NCCL takes min(0.92 · busBw, nCh · perChMaxTreeBw), so a tree whose
/// schedule would reach `raw_busbw` (GB/s, at full link rate) over `channels` channels on
/// `nodes` servers of generation `arch` runs at this fraction of it.
pub fn tree_efficiency(raw_busbw: f64, channels: u32, nodes: u32, arch: Option<Arch>) -> f64 {
    let cap = arch.map_or(f64::INFINITY, |a| channels as f64 * a.tree_gbps_per_channel(nodes));
    if raw_busbw > 0.0 {
        TREE_EFFICIENCY.min(cap / raw_busbw)
    } else {
        TREE_EFFICIENCY
    }
}

/// Parent of in-order position `p` (0-based) in the binary tree over n positions whose
/// interior nodes are the odd positions: key i = p + 1 sits at height tz(i); its parent is
/// i ± 2^tz(i), whichever has height tz(i) + 1; keys beyond n are skipped upward. The root is
/// the largest power of two ≤ n.
pub(super) fn btree_parent(p: u32, n: u32) -> Option<u32> {
    let root = 1u64 << (63 - (n as u64).leading_zeros());
    let mut i = p as u64 + 1;
    loop {
        if i == root {
            return None;
        }
        let h = i.trailing_zeros();
        i = if (i >> (h + 1)) & 1 == 1 { i - (1 << h) } else { i + (1 << h) };
        if i <= n as u64 {
            return Some(i as u32 - 1);
        }
    }
}

/// Parent of server `p` in tree `t` (0 or 1) of the double binary tree over `n` servers.
pub(super) fn double_btree_parent(p: u32, n: u32, t: u32) -> Option<u32> {
    if t == 0 {
        return btree_parent(p, n);
    }
    // Tree B is tree A relabelled: server p plays tree A's position f(p).
    let mirror = n.is_multiple_of(2);
    let f = |p: u32| if mirror { n - 1 - p } else { (p + 1) % n };
    let f_inv = |q: u32| if mirror { n - 1 - q } else { (q + n - 1) % n };
    btree_parent(f(p), n).map(f_inv)
}

/// Child → parent edges of tree `t` in channel `ch`, and the tree's depth in edges.
fn tree_edges(s: &Servers, t: u32, ch: u32) -> (Vec<(u32, u32)>, u32) {
    let nodes = s.members.len() as u32;
    // Each server's ranks in chain order, head first.
    let chains: Vec<Vec<u32>> = s
        .members
        .iter()
        .map(|m| {
            let r = ch as usize % m.len();
            let mut c: Vec<u32> = m[r..].iter().chain(&m[..r]).copied().collect();
            if t == 1 {
                c.reverse();
            }
            c
        })
        .collect();
    let mut edges = Vec::new();
    let mut depth: u32 = 0;
    for p in 0..nodes {
        let chain = &chains[p as usize];
        let mut server_depth = 0;
        let mut q = p;
        while let Some(up) = double_btree_parent(q, nodes, t) {
            server_depth += 1;
            q = up;
        }
        depth = depth.max(server_depth + chain.len() as u32 - 1);
        for w in chain.windows(2) {
            edges.push((w[1], w[0]));
        }
        if let Some(up) = double_btree_parent(p, nodes, t) {
            edges.push((chain[0], chains[up as usize][0]));
        }
    }
    (edges, depth)
}

fn tree(s: &Servers, bytes: f64, channels: u32, grain: Grain) -> Vec<Phase> {
    let per_tree = bytes / (2.0 * channels as f64);
    let k = chunks(per_tree, grain);
    let chunk = per_tree / k as f64;
    let mut transfers: Vec<Transfer> = Vec::new();
    let mut depth: u32 = 0;
    for ch in 0..channels {
        for t in 0..2 {
            let (edges, d) = tree_edges(s, t, ch);
            depth = depth.max(d);
            for (child, parent) in edges {
                transfers.push(send(child, parent, chunk));
                transfers.push(send(parent, child, chunk));
            }
        }
    }
    vec![Phase { transfers, repeat: k.saturating_add(depth.saturating_mul(2)) - 1 }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_capped_per_channel_by_generation() {
        // 2×8 A100 over 8 channels: NCCL allows 8 × 23.6 GB/s, below 0.92 of a 240 GB/s tree.
        assert!((tree_efficiency(240.0, 8, 2, Some(Arch::Ampere)) - 8.0 * 23.6 / 240.0).abs() < 1e-12);
        // A slow tree is held to 0.92 only; an unknown generation has no cap.
        assert_eq!(tree_efficiency(50.0, 8, 2, Some(Arch::Ampere)), TREE_EFFICIENCY);
        assert_eq!(tree_efficiency(1e6, 1, 9, None), TREE_EFFICIENCY);
        assert_eq!(crate::catalog::Catalog::arch_of("h800"), Some(Arch::Hopper));
        assert_eq!(Arch::Hopper.tree_gbps_per_channel(16), 36.0);
    }

    #[test]
    fn the_two_trees_are_binary_trees_with_complementary_interiors() {
        for n in 1..=40u32 {
            for t in 0..2 {
                let parents: Vec<Option<u32>> = (0..n).map(|p| double_btree_parent(p, n, t)).collect();
                assert_eq!(parents.iter().filter(|p| p.is_none()).count(), 1, "n={n} t={t}: one root");
                for p in 0..n {
                    let kids = parents.iter().filter(|&&q| q == Some(p)).count();
                    assert!(kids <= 2, "n={n} t={t}: {p} has {kids} children");
                    // Every position reaches the root (no cycles).
                    let (mut q, mut hops) = (p, 0);
                    while let Some(up) = parents[q as usize] {
                        q = up;
                        hops += 1;
                        assert!(hops <= n);
                    }
                }
            }
            if n % 2 == 0 {
                // Even n: no server is interior in both trees.
                let interior = |t| (0..n).filter(move |&p| (0..n).any(|q| double_btree_parent(q, n, t) == Some(p)));
                let both = interior(0).filter(|p| interior(1).any(|q| q == *p)).count();
                assert_eq!(both, 0, "n={n}");
            }
        }
        // 7 positions: the perfect tree 3 ← (1, 5), 1 ← (0, 2), 5 ← (4, 6).
        let parents: Vec<Option<u32>> = (0..7).map(|p| btree_parent(p, 7)).collect();
        assert_eq!(parents, vec![Some(1), Some(3), Some(1), None, Some(5), Some(3), Some(5)]);
    }
}
