//! In-network reduction (SHARP, run by NCCL as CollNet): the fabric's switches reduce an
//! all-reduce on an aggregation tree and send the result back (shared/reference/hardware.md §6).
//!
//! Tree: each GPU that talks to the network hangs off its leaf (the switch its NIC link reaches).
//! All leaves one switch: that switch is the tree. Several leaves: a root adjacent to all of them
//! (a spine) reduces the leaves' partial sums; rail r's tree takes the r-th such spine (mod their
//! count: SHARPv3's several aggregation trees). Deeper trees are not built here.
//!
//! Per chunk of u bytes (k = ⌈S/512 KiB⌉ chunks, one pipelined phase run k + depth − 1 times):
//!
//! ```text
//! collnet_direct (m ranks per server)   collnet_chain (chain c_0 … c_{m−1} per server, head c_0)
//! rank → rank: u/m each pair (reduce-scatter, then all-gather, over NVLink; none when m = 1)
//!                                       c_{i+1} → c_i: u (partial sums up the chain)
//! rank → leaf:  u/m (its shard, own NIC) c_0 → leaf: u
//! leaf → root:  u/m per rail tree        leaf → root: u
//! root → rank:  u/m (through its leaf)   root → c_0: u;  c_i → c_{i+1}: u (result down the chain)
//! ```
//!
//! A switch's reduction throughput R (GB/s of input it reduces) caps what its children (the
//! GPUs of a leaf, the leaves of a root) deliver into it: both backends see in = min(Σ child
//! links, R) ([`CollNet::on_platform`] scales the child links in the flow model). With GPUs at
//! B and R ≥ its children's links, an all-reduce on one switch takes T = (k+1)(α + u/B) ≈ S/B:
//! algbw → B, as a reduction server's. NCCL's CollNet latencies (base 0; NVLink 3.7 / 2.8 µs,
//! network 31 / 30 µs for direct / chain, Simple only; hardware.md §4) price it when tuned.
//! The down path is one copy per rank through the leaf (SHARP multicasts once per leaf); on a
//! non-blocking tree no link carries more than its GPUs' NIC share, so the time is the same.
//! A bare schedule's step latency differs between the backends: the α–β price charges a
//! GPU-to-GPU network path per step, the flow model each flow's GPU-to-switch path (one hop
//! less); the bandwidth terms agree (tests on links without latency). Scaling a reducing
//! switch's child links to R also slows other traffic on them in the same run.

use std::collections::HashMap;

use super::nccl::Latency;
use super::{
    chunks, send, Algorithm, Call, CollectiveAlgorithm, Endpoint, GroupTopo, Phase, Request, Servers, Transfer,
};
use crate::collective::Identity;
use crate::error::{InputError, Result};
use crate::platform::{NodeKind, Platform};
use crate::workload::Collective;

/// Which of NCCL's CollNet algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Direct,
    Chain,
}

/// CollNet on a platform's switches.
#[derive(Debug, Clone, PartialEq)]
pub struct CollNet {
    pub variant: Variant,
    /// Leaf switch of each GPU node.
    leaf: HashMap<u32, u32>,
    /// Switches adjacent to each leaf switch, in node order (root candidates).
    up: HashMap<u32, Vec<u32>>,
    /// (out, in) GB/s of each switch as a reducer.
    rates: HashMap<u32, (f64, f64)>,
}

fn bad(field: &str, message: String) -> InputError {
    InputError::field("collnet", field, message)
}

/// The switch `gpu`'s NIC link reaches: a switch it links to, or one its NIC node links to.
fn leaf_of(topo: &Platform, gpu: u32) -> Option<u32> {
    let next = |v: u32| topo.out_links(v).iter().map(move |&l| topo.links[l as usize].dst);
    let kind = |v: u32| topo.kinds[v as usize];
    next(gpu).find(|&v| kind(v) == NodeKind::Switch).or_else(|| {
        next(gpu).filter(|&v| kind(v) == NodeKind::Nic).find_map(|nic| next(nic).find(|&v| kind(v) == NodeKind::Switch))
    })
}

impl CollNet {
    /// CollNet on `topo`, each reducing switch reducing `reduce_gbps` (None: as fast as its
    /// links deliver); scales the links into the switches that reduce so the flow model sees R.
    pub fn on_platform(topo: &mut Platform, variant: Variant, reduce_gbps: Option<f64>) -> Result<CollNet> {
        if let Some(r) = reduce_gbps.filter(|r| !(*r > 0.0 && r.is_finite())) {
            return Err(bad("switch_reduce_gbps", format!("must be a positive number of GB/s, got {r}")));
        }
        let mut leaf = HashMap::new();
        for r in 0..topo.placement.ranks() {
            let gpu = topo.placement.device(r);
            if let Some(s) = leaf_of(topo, gpu) {
                leaf.insert(gpu, s);
            }
        }
        let is_switch = |v: u32| topo.kinds[v as usize] == NodeKind::Switch;
        let mut up: HashMap<u32, Vec<u32>> = HashMap::new();
        for &s in leaf.values() {
            if up.contains_key(&s) {
                continue;
            }
            let mut above: Vec<u32> =
                topo.out_links(s).iter().map(|&l| topo.links[l as usize].dst).filter(|&v| is_switch(v)).collect();
            above.sort_unstable();
            above.dedup();
            up.insert(s, above);
        }
        // A switch's children: the GPUs of a leaf, else the switches below a root.
        let mut rates = HashMap::new();
        for s in (0..topo.node_count()).filter(|&v| is_switch(v)) {
            let from_gpus = leaf.values().any(|&l| l == s);
            let gpu_side = |v: u32| {
                topo.kinds[v as usize] == NodeKind::Gpu
                    || (topo.kinds[v as usize] == NodeKind::Nic
                        && topo
                            .in_links(v)
                            .iter()
                            .any(|&l| topo.kinds[topo.links[l as usize].src as usize] == NodeKind::Gpu))
            };
            let child = |l: u32| {
                let src = topo.links[l as usize].src;
                if from_gpus {
                    gpu_side(src)
                } else {
                    topo.kinds[src as usize] == NodeKind::Switch
                }
            };
            let ids: Vec<u32> = topo.in_links(s).iter().copied().filter(|&l| child(l)).collect();
            let mut inn: f64 = ids.iter().map(|&l| topo.links[l as usize].bandwidth).sum();
            if let Some(r) = reduce_gbps.filter(|&r| r < inn) {
                for &l in &ids {
                    topo.links[l as usize].bandwidth *= r / inn;
                }
                inn = r;
            }
            let out: f64 = topo.out_links(s).iter().map(|&l| topo.links[l as usize].bandwidth).sum();
            if inn > 0.0 && out > 0.0 {
                rates.insert(s, (out, inn));
            }
        }
        Ok(CollNet { variant, leaf, up, rates })
    }

    /// A handle that runs this configuration: one per distinct configuration (its variant,
    /// trees and switch rates), kept for the life of the process ([`Algorithm::built`]).
    pub fn algorithm(self) -> Algorithm {
        fn sorted<V: Clone>(m: &HashMap<u32, V>) -> Vec<(u32, V)> {
            let mut v: Vec<(u32, V)> = m.iter().map(|(&k, v)| (k, v.clone())).collect();
            v.sort_unstable_by_key(|e| e.0);
            v
        }
        let (leaf, up, rates) = (sorted(&self.leaf), sorted(&self.up), sorted(&self.rates));
        let key = format!("collnet {:?} {leaf:?} {up:?} {rates:?}", self.variant);
        Algorithm::built(key, || Ok::<_, InputError>(Box::new(self))).expect("built infallibly")
    }

    /// Group ranks that talk to the network with their rail: every rank (direct), each
    /// server's first (chain).
    fn talkers(&self, s: &Servers) -> Vec<(u32, u32)> {
        match self.variant {
            Variant::Direct => {
                s.members.iter().flat_map(|m| m.iter().enumerate().map(|(i, &r)| (r, i as u32))).collect()
            }
            Variant::Chain => s.members.iter().map(|m| (m[0], 0)).collect(),
        }
    }

    /// Leaf of each talker, and the root of each rail's tree; or why there is no tree.
    fn tree(&self, g: &GroupTopo, s: &Servers) -> std::result::Result<(Vec<u32>, Vec<u32>), String> {
        let talkers = self.talkers(s);
        let mut leaves = Vec::with_capacity(talkers.len());
        for &(r, _) in &talkers {
            let gpu = g.placement.device(g.ranks[r as usize]);
            leaves.push(*self.leaf.get(&gpu).ok_or_else(|| format!("GPU node {gpu} reaches no network switch"))?);
        }
        let rails = talkers.iter().map(|t| t.1 + 1).max().unwrap_or(1);
        let mut roots = Vec::with_capacity(rails as usize);
        for rail in 0..rails {
            let mine: Vec<u32> = talkers.iter().zip(&leaves).filter(|(t, _)| t.1 == rail).map(|(_, &l)| l).collect();
            let first = mine[0];
            if mine.iter().all(|&l| l == first) {
                roots.push(first);
                continue;
            }
            let common: Vec<u32> = self.up[&first]
                .iter()
                .copied()
                .filter(|sp| mine.iter().all(|l| self.up.get(l).is_some_and(|u| u.contains(sp))))
                .collect();
            if common.is_empty() {
                return Err("the leaf switches have no common parent (aggregation trees of two tiers only)".into());
            }
            roots.push(common[rail as usize % common.len()]);
        }
        Ok((leaves, roots))
    }
}

impl Identity for CollNet {
    fn name(&self) -> &'static str {
        match self.variant {
            Variant::Direct => "collnet_direct",
            Variant::Chain => "collnet_chain",
        }
    }

    fn collectives(&self) -> &[Collective] {
        &[Collective::AllReduce]
    }
}

impl CollectiveAlgorithm for CollNet {
    fn unsupported(&self, c: Collective, g: &GroupTopo, s: &Servers) -> Option<String> {
        if c != Collective::AllReduce {
            return Some("in-network reduction runs all-reduce only".into());
        }
        if self.variant == Variant::Direct && s.uniform().is_none() {
            return Some("collnet_direct needs servers holding equally many group ranks".into());
        }
        self.tree(g, s).err()
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        let (g, s, bytes, grain) = (r.group, r.servers, r.bytes, r.grain);
        let Ok((leaves, roots)) = self.tree(g, s) else { return Vec::new() };
        let k = chunks(bytes, grain);
        let u = bytes / k as f64;
        let talkers = self.talkers(s);
        let m = s.members[0].len() as f64;
        let share = if self.variant == Variant::Direct { u / m } else { u };
        let mut t = Vec::new();
        let mut depth = 2;
        match self.variant {
            Variant::Direct if m > 1.0 => {
                depth += 2;
                for members in &s.members {
                    for &a in members {
                        t.extend(members.iter().filter(|&&b| b != a).map(|&b| send(a, b, 2.0 * u / m)));
                    }
                }
            }
            Variant::Chain => {
                depth += 2 * (m as u32 - 1);
                for members in &s.members {
                    for w in members.windows(2) {
                        t.push(send(w[1], w[0], u));
                        t.push(send(w[0], w[1], u));
                    }
                }
            }
            Variant::Direct => {}
        }
        let node = Endpoint::Node;
        // One partial sum per (leaf, rail tree) goes up when the leaf is not the root.
        let mut partial: Vec<(u32, u32)> = Vec::new();
        for (&(r, rail), &leaf) in talkers.iter().zip(&leaves) {
            let root = roots[rail as usize];
            t.push(Transfer { src: Endpoint::Rank(r), dst: node(leaf), bytes: share });
            t.push(Transfer { src: node(root), dst: Endpoint::Rank(r), bytes: share });
            if leaf != root && !partial.contains(&(leaf, rail)) {
                partial.push((leaf, rail));
                t.push(Transfer { src: node(leaf), dst: node(root), bytes: share });
            }
        }
        if !partial.is_empty() {
            depth += 1;
        }
        vec![Phase { transfers: t, repeat: k + depth - 1 }]
    }

    fn offered(&self, _c: Collective, _g: &GroupTopo, _s: &Servers, _o: &super::choose::Options) -> bool {
        false
    }

    fn protocols(&self) -> Vec<(super::Protocol, Latency)> {
        let lat = match self.variant {
            Variant::Direct => (0.0, 3.7, 31.0),
            Variant::Chain => (0.0, 2.8, 30.0),
        };
        vec![(super::Protocol::Simple, lat)]
    }

    fn hops(&self, call: &Call) -> (u32, u32) {
        let m = call.servers.members.iter().map(Vec::len).max().unwrap_or(1) as u32;
        match self.variant {
            Variant::Direct => (if m > 1 { 2 } else { 0 }, 2),
            Variant::Chain => (2 * (m - 1), 2),
        }
    }

    fn node_rates(&self, node: u32) -> Option<(f64, f64)> {
        self.rates.get(&node).copied()
    }

    fn per_group(&self) -> bool {
        true
    }
}

/// nccl-tests' bus bandwidth factor for an all-reduce reduced in the network on n ranks,
/// (n − 1)/(n + 1) (nccl-tests doc/PERFORMANCE.md, summary; hardware.md §3).
pub fn in_network_busbw_factor(n: u32) -> f64 {
    (n as f64 - 1.0) / (n as f64 + 1.0)
}

#[cfg(test)]
#[path = "collnet_tests.rs"]
mod tests;
