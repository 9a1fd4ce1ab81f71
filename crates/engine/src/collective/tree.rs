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

use super::{chunks, send, Grain, Phase, Servers, Transfer};
use crate::workload::Collective;

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

pub(super) fn tree(c: Collective, s: &Servers, bytes: f64, channels: u32, grain: Grain) -> Vec<Phase> {
    if c != Collective::AllReduce {
        return Vec::new(); // refused before dispatch
    }
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
