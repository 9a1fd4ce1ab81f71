//! Hierarchical (two-level) collectives: rings inside servers, rail-wise rings across them.
//!
//! With N servers of m group ranks each, rank j of every server is on rail j (the j-th group
//! rank of its server, which is the GPU local index j when the group holds the same GPUs of
//! every server). Each level is a ring (as in [`super::ring`]), all servers or rails at once:
//!
//! ```text
//! all-reduce      intra reduce-scatter: m−1 steps of S/(m·c)
//!                 rail all-reduce of the S/m shard: 2(N−1) steps of S/(n·c)
//!                 intra all-gather: m−1 steps of S/(m·c)
//! all-gather      rail all-gather: N−1 steps of S/(n·c); intra all-gather: m−1 steps of S/(m·c)
//! reduce-scatter  intra reduce-scatter: m−1 steps of S/(m·c); rail: N−1 steps of S/(n·c)
//! ```
//!
//! so T_allreduce = 2(m−1)(α_nv + S/(m·B_nv)) + 2(N−1)(α_net + S/(n·B_nic)): only 1/m of the
//! data crosses the network, on every NIC at once. NCCL has no such algorithm: it runs only
//! when forced.

use super::{registered, Identity};
use super::{send, CollectiveAlgorithm, GroupTopo, Phase, Request, Servers, Transfer};
use crate::workload::Collective;

registered! {
    Hierarchical as HIERARCHICAL: "hierarchical", RAIL_KINDS
}

impl CollectiveAlgorithm for Hierarchical {
    fn unsupported(&self, c: Collective, _g: &GroupTopo, s: &Servers) -> Option<String> {
        along_rails(self.name(), c, s)
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        hierarchical(r.collective, r.servers, r.bytes, r.channels)
    }
}

/// The kinds of collective an algorithm working rail by rail across servers runs.
pub(super) const RAIL_KINDS: [Collective; 3] =
    [Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter];

/// Why `name`, working rail by rail across servers ([`RAIL_KINDS`]), cannot run `c` on servers
/// `s`, or None.
pub(super) fn along_rails(name: &str, c: Collective, s: &Servers) -> Option<String> {
    if !RAIL_KINDS.contains(&c) {
        Some(format!("{name} is defined for all-reduce, all-gather and reduce-scatter"))
    } else if s.uniform().is_none() {
        Some("servers hold different numbers of group ranks, so rails do not line up".into())
    } else {
        None
    }
}

/// Ring hops inside every server, `bytes` each, for each channel.
fn intra(s: &Servers, channels: u32, bytes: f64) -> Vec<Transfer> {
    let mut hops = Vec::new();
    for _ in 0..channels {
        for m in &s.members {
            hops.extend(m.iter().enumerate().map(|(i, &a)| send(a, m[(i + 1) % m.len()], bytes)));
        }
    }
    hops.retain(|t| t.src != t.dst);
    hops
}

/// Ring hops along every rail across the servers, `bytes` each, for each channel.
fn rails(s: &Servers, channels: u32, bytes: f64) -> Vec<Transfer> {
    let nodes = s.members.len();
    let mut hops = Vec::new();
    for _ in 0..channels {
        for (p, m) in s.members.iter().enumerate() {
            let next = &s.members[(p + 1) % nodes];
            hops.extend(m.iter().zip(next).map(|(&a, &b)| send(a, b, bytes)));
        }
    }
    hops.retain(|t| t.src != t.dst);
    hops
}

fn hierarchical(c: Collective, s: &Servers, bytes: f64, channels: u32) -> Vec<Phase> {
    let nodes = s.members.len() as u32;
    let m = s.members[0].len() as u32;
    let (n, ch) = ((nodes * m) as f64, channels as f64);
    let intra_phase = |repeat| Phase { transfers: intra(s, channels, bytes / (m as f64 * ch)), repeat };
    let rail_phase = |repeat| Phase { transfers: rails(s, channels, bytes / (n * ch)), repeat };
    match c {
        Collective::AllReduce => vec![intra_phase(m - 1), rail_phase(2 * (nodes - 1)), intra_phase(m - 1)],
        Collective::AllGather => vec![rail_phase(nodes - 1), intra_phase(m - 1)],
        Collective::ReduceScatter => vec![intra_phase(m - 1), rail_phase(nodes - 1)],
        // Refused before dispatch.
        Collective::AllToAll | Collective::Broadcast | Collective::Reduce => Vec::new(),
    }
}
