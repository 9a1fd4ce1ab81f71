//! Where a compute vertex's bytes live: memory capacity tracked per device, placement deciding
//! what spills (HCSim §3.1: "when an XPU's local memory is short ...").
//!
//! Vertices are placed once for the whole run, in dependency order, each copy in rank order, and
//! hold their bytes to the end (a training step's weights, gradients and optimizer states stay).
//! `auto` puts what fits into the XPU's HBM and the rest on its *home* memory: among the memory
//! nodes fewest hops away (routes pass through switches, NICs and forwarding CPUs), the one with
//! the fewest XPUs homed on it so far, then the lowest id, so each XPU of HCSim's Fig. 6b gets
//! its own CXL Type-3 expander and the four XPUs under one CPU of Fig. 6a share its DRAM. When
//! the home has no room left, the nearest memory node with room takes the remainder.

use std::collections::VecDeque;

use crate::platform::{MemoryKind, NodeKind, Platform};

/// Where a vertex's bytes are asked to live, resolved against the platform.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Want {
    Auto,
    Local,
    Node(u32),
}

/// A remote part's device: the XPU's home memory, or a named node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    Home,
    Node(u32),
}

/// One copy's placement: bytes in local HBM, bytes on `source` (a CXL device is read in place).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placed {
    pub local: f64,
    pub remote: f64,
    pub source: Source,
    /// The remote device is a CXL memory (coherent access possible).
    pub cxl: bool,
}

pub struct Memories<'p> {
    platform: &'p Platform,
    /// HBM bytes left per rank.
    hbm_left: Vec<f64>,
    /// Bytes left per node (memory nodes; 0 elsewhere).
    node_left: Vec<f64>,
    /// Home memory node per rank (u32::MAX: not chosen yet).
    pub home: Vec<u32>,
    homed: Vec<u32>,
    /// The largest capacity of any one device.
    pub largest: f64,
    /// Bytes placed in HBM, host DRAM and CXL memory.
    pub placed_bytes: [f64; 3],
}

impl<'p> Memories<'p> {
    pub fn new(platform: &'p Platform) -> Memories<'p> {
        let p = &platform.placement;
        let hbm = |r: u32| {
            let d = p.device(r) as usize;
            platform.attrs.get(d).and_then(|a| a.xpu.as_ref()).map_or(0.0, |x| x.memory_bytes)
        };
        let hbm_left: Vec<f64> = (0..p.ranks()).map(hbm).collect();
        let node_left: Vec<f64> = (0..platform.node_count() as usize)
            .map(|v| platform.attrs.get(v).and_then(|a| a.memory).map_or(0.0, |m| m.capacity_bytes))
            .collect();
        let largest = hbm_left.iter().chain(&node_left).copied().fold(0.0, f64::max);
        Memories {
            platform,
            hbm_left,
            node_left,
            home: vec![u32::MAX; p.ranks() as usize],
            homed: vec![0; platform.node_count() as usize],
            largest,
            placed_bytes: [0.0; 3],
        }
    }

    fn is_cxl(&self, node: u32) -> bool {
        self.platform.attrs.get(node as usize).and_then(|a| a.memory).is_some_and(|m| m.kind == MemoryKind::Cxl)
    }

    fn take(&mut self, node: u32, bytes: f64) {
        self.node_left[node as usize] -= bytes;
        self.placed_bytes[if self.is_cxl(node) { 2 } else { 1 }] += bytes;
    }

    /// Memory nodes reachable from `rank`'s XPU, nearest first (by hops, then id); only the
    /// nearest ring when `nearest_only`.
    fn reachable(&self, rank: u32, nearest_only: bool) -> Vec<u32> {
        let t = self.platform;
        let from = t.placement.device(rank);
        let mut hops = vec![u32::MAX; t.node_count() as usize];
        hops[from as usize] = 0;
        let mut queue = VecDeque::from([from]);
        let mut found: Vec<(u32, u32)> = Vec::new();
        while let Some(u) = queue.pop_front() {
            let h = hops[u as usize];
            if nearest_only && found.first().is_some_and(|f| f.0 < h) {
                break;
            }
            if t.kinds[u as usize] == NodeKind::Memory && u != from {
                found.push((h, u));
                continue;
            }
            if u != from && !t.is_transit(u) {
                continue;
            }
            for &l in t.out_links(u) {
                let v = t.links[l as usize].dst;
                if hops[v as usize] == u32::MAX {
                    hops[v as usize] = h + 1;
                    queue.push_back(v);
                }
            }
        }
        found.sort_unstable();
        found.into_iter().map(|f| f.1).collect()
    }

    /// `rank`'s home memory (module doc), chosen the first time it is asked for.
    fn home_of(&mut self, rank: u32) -> Option<u32> {
        if self.home[rank as usize] == u32::MAX {
            let near = self.reachable(rank, true);
            let &best = near.iter().min_by_key(|&&m| (self.homed[m as usize], m))?;
            self.homed[best as usize] += 1;
            self.home[rank as usize] = best;
        }
        Some(self.home[rank as usize])
    }

    /// Place `bytes` of one copy on `rank`; the error says what did not fit.
    pub fn place(&mut self, rank: u32, bytes: f64, want: Want) -> std::result::Result<Placed, String> {
        let r = rank as usize;
        let name = |m: u32| self.platform.node_name(m);
        match want {
            Want::Local => {
                if bytes > self.hbm_left[r] {
                    return Err(format!(
                        "{bytes:e} bytes do not fit in the HBM of XPU '{}' ({:e} bytes left)",
                        name(self.platform.placement.device(rank)),
                        self.hbm_left[r]
                    ));
                }
                self.hbm_left[r] -= bytes;
                self.placed_bytes[0] += bytes;
                Ok(Placed { local: bytes, remote: 0.0, source: Source::Home, cxl: false })
            }
            Want::Node(m) => {
                if bytes > self.node_left[m as usize] {
                    return Err(format!(
                        "{bytes:e} bytes do not fit on memory '{}' ({:e} bytes left)",
                        name(m),
                        self.node_left[m as usize]
                    ));
                }
                self.take(m, bytes);
                Ok(Placed { local: 0.0, remote: bytes, source: Source::Node(m), cxl: self.is_cxl(m) })
            }
            Want::Auto => {
                let local = bytes.min(self.hbm_left[r]);
                self.hbm_left[r] -= local;
                self.placed_bytes[0] += local;
                let remote = bytes - local;
                if remote <= 0.0 {
                    return Ok(Placed { local, remote: 0.0, source: Source::Home, cxl: false });
                }
                if let Some(h) = self.home_of(rank).filter(|&h| self.node_left[h as usize] >= remote) {
                    self.take(h, remote);
                    return Ok(Placed { local, remote, source: Source::Home, cxl: self.is_cxl(h) });
                }
                let spare = self.reachable(rank, false).into_iter().find(|&m| self.node_left[m as usize] >= remote);
                let Some(m) = spare else {
                    return Err(format!(
                        "the HBM of XPU '{}' holds {local:e} of the {bytes:e} bytes and no memory node within its reach has room for the other {remote:e}",
                        name(self.platform.placement.device(rank)),
                    ));
                };
                self.take(m, remote);
                Ok(Placed { local, remote, source: Source::Node(m), cxl: self.is_cxl(m) })
            }
        }
    }
}
