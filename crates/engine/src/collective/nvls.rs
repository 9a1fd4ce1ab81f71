//! NVLS (NVLink SHARP): the NVSwitch reduces what GPUs send it and multicasts what it sends.
//!
//! Inside one server of m group ranks, per rank (root = rank 0):
//!
//! ```text
//!                  GPU → switch        switch → GPU
//! all-reduce       S                   S            (reduce, then multicast of the result)
//! all-gather       S/m (own shard)     S·(m−1)/m    (the other shards, multicast)
//! reduce-scatter   S·(m−1)/m           S/m          (the reduced own shard)
//! broadcast        S (root only)       S (others)
//! reduce           S (others)          S (root only)
//! ```
//!
//! Reduction and multicast are pipelined (NCCL: "AllReduce pipelines two operations"): one phase
//! holding both directions, k = ⌈S/(c·chunk)⌉ chunks per channel, repeat k + 1. So an NVLS
//! all-reduce takes ≈ S/B where a ring takes 2(m−1)/m · S/B: the 2× of NVLink SHARP
//! (shared/reference/hardware.md §6).
//!
//! NVLS tree (all-reduce on several servers, m ranks each): in every server the GPUs send S to
//! the switch, which returns each GPU its reduced shard S/m; GPU i then runs a double binary tree
//! across servers with the GPUs i of the other servers (rail-wise, each tree half of the shard,
//! up and down), and sends the all-reduced shard back to the switch, which multicasts S to every
//! GPU. Pipelined as one phase of depth 4 + 2·D (D = server-tree depth): repeat k + 3 + 2·D.

use super::choose::Options;
use super::cost::Links;
use super::nccl::{log2_ceil, Latency, Protocol, NVLS_CHANNELS, NVLS_LATENCY_US, NVLS_TREE_LATENCY_US};
use super::registered;
use super::tree::double_btree_parent;
use super::{chunks, send, Call, CollectiveAlgorithm, Endpoint, Grain, GroupTopo, Phase, Request, Servers, Transfer};
use crate::catalog::Arch;
use crate::error::InputError;
use crate::workload::Collective;

registered! {
    /// NVLS inside one server (`AS_NVLS_ENABLE`).
    Nvls as NVLS: "nvls", Collective::RING_KINDS
}

registered! {
    /// NVLS inside servers with a tree across them (`AS_NVLSTREE_ENABLE`).
    NvlsTree as NVLS_TREE: "nvls_tree", [Collective::AllReduce]
}

/// Why neither NVLS algorithm can run `c` on `g`, or None.
fn switch_unsupported(c: Collective, g: &GroupTopo) -> Option<String> {
    if !g.nvls {
        Some("the servers have no NVLS-capable NVSwitch".into())
    } else if c == Collective::AllToAll {
        Some("the switch reduces and multicasts; it cannot route distinct data per rank".into())
    } else {
        None
    }
}

/// NCCL's NVLS efficiency: nvlsEfficiency of the GPUs' generation × (nCh − 1)/nCh.
fn nvls_efficiency(links: &Links) -> f64 {
    Arch::nvls_efficiency(links.arch) * (NVLS_CHANNELS - 1.0) / NVLS_CHANNELS
}

impl CollectiveAlgorithm for Nvls {
    fn unsupported(&self, c: Collective, g: &GroupTopo, s: &Servers) -> Option<String> {
        let nodes = s.members.len();
        switch_unsupported(c, g)
            .or_else(|| (nodes > 1).then(|| format!("NVLS works inside one server and the group spans {nodes}")))
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        nvls(r.collective, r.servers, r.bytes, r.channels, r.grain)
    }

    fn offered(&self, _c: Collective, _g: &GroupTopo, _s: &Servers, opts: &Options) -> bool {
        opts.nvls_enable
    }

    fn protocols(&self) -> Vec<(Protocol, Latency)> {
        vec![(Protocol::Simple, NVLS_LATENCY_US)]
    }

    fn efficiency(&self, _call: &Call, links: &Links) -> Result<f64, InputError> {
        Ok(nvls_efficiency(links))
    }

    fn hops(&self, _call: &Call) -> (u32, u32) {
        (1, 0)
    }
}

impl CollectiveAlgorithm for NvlsTree {
    fn unsupported(&self, c: Collective, g: &GroupTopo, s: &Servers) -> Option<String> {
        switch_unsupported(c, g).or_else(|| {
            (c != Collective::AllReduce || s.uniform().is_none())
                .then(|| "NVLS tree is all-reduce on servers holding equally many group ranks".into())
        })
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        nvls_tree(r.servers, r.bytes, r.channels, r.grain)
    }

    fn offered(&self, _c: Collective, _g: &GroupTopo, _s: &Servers, opts: &Options) -> bool {
        opts.nvlstree_enable
    }

    fn protocols(&self) -> Vec<(Protocol, Latency)> {
        vec![(Protocol::Simple, NVLS_TREE_LATENCY_US)]
    }

    fn efficiency(&self, _call: &Call, links: &Links) -> Result<f64, InputError> {
        Ok(nvls_efficiency(links))
    }

    fn hops(&self, call: &Call) -> (u32, u32) {
        (1, 2 * log2_ceil(call.servers.members.len() as u32))
    }
}

fn up(r: u32, server: u32, bytes: f64) -> Transfer {
    Transfer { src: Endpoint::Rank(r), dst: Endpoint::Switch { server }, bytes }
}

fn down(r: u32, server: u32, bytes: f64) -> Transfer {
    Transfer { src: Endpoint::Switch { server }, dst: Endpoint::Rank(r), bytes }
}

fn nvls(c: Collective, s: &Servers, bytes: f64, channels: u32, grain: Grain) -> Vec<Phase> {
    let m = s.of_rank.len() as f64;
    let per_channel = bytes / channels as f64;
    let k = chunks(per_channel, grain);
    let unit = per_channel / k as f64;
    // (GPU → switch, switch → GPU) bytes of rank r per chunk step.
    let share = |r: u32| -> (f64, f64) {
        match c {
            Collective::AllReduce => (unit, unit),
            Collective::AllGather => (unit / m, unit * (m - 1.0) / m),
            Collective::ReduceScatter => (unit * (m - 1.0) / m, unit / m),
            Collective::Broadcast if r == 0 => (unit, 0.0),
            Collective::Broadcast => (0.0, unit),
            Collective::Reduce if r == 0 => (0.0, unit),
            Collective::Reduce => (unit, 0.0),
            Collective::AllToAll => (0.0, 0.0), // refused before dispatch
        }
    };
    let mut transfers = Vec::new();
    for _ in 0..channels {
        for r in 0..s.of_rank.len() as u32 {
            let (to_switch, from_switch) = share(r);
            transfers.push(up(r, 0, to_switch));
            transfers.push(down(r, 0, from_switch));
        }
    }
    transfers.retain(|t| t.bytes > 0.0);
    vec![Phase { transfers, repeat: k + 1 }]
}

fn nvls_tree(s: &Servers, bytes: f64, channels: u32, grain: Grain) -> Vec<Phase> {
    let nodes = s.members.len() as u32;
    if nodes == 1 {
        return nvls(Collective::AllReduce, s, bytes, channels, grain);
    }
    let m = s.members[0].len() as f64;
    let per_channel = bytes / channels as f64;
    let k = chunks(per_channel, grain);
    let unit = per_channel / k as f64;
    let mut depth: u32 = 0;
    let mut transfers = Vec::new();
    for _ in 0..channels {
        for (server, members) in s.members.iter().enumerate() {
            for &r in members {
                // Reduce in the switch; shard back; all-reduced shard in for multicast; result out.
                transfers.push(up(r, server as u32, unit + unit / m));
                transfers.push(down(r, server as u32, unit / m + unit));
            }
        }
        for t in 0..2 {
            for p in 0..nodes {
                let (mut q, mut d) = (p, 0);
                while let Some(parent) = double_btree_parent(q, nodes, t) {
                    q = parent;
                    d += 1;
                }
                depth = depth.max(d);
                if let Some(parent) = double_btree_parent(p, nodes, t) {
                    let (child, up_server) = (&s.members[p as usize], &s.members[parent as usize]);
                    for (&a, &b) in child.iter().zip(up_server) {
                        transfers.push(send(a, b, unit / (2.0 * m)));
                        transfers.push(send(b, a, unit / (2.0 * m)));
                    }
                }
            }
        }
    }
    vec![Phase { transfers, repeat: k.saturating_add(depth.saturating_mul(2)).saturating_add(3) }]
}
