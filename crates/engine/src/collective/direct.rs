//! Direct (all-pairs) algorithms: every rank sends to every other rank at once.
//!
//! ```text
//! all-to-all, all-gather, reduce-scatter   one phase, n(n−1) transfers of S/n
//! all-reduce                               reduce-scatter then all-gather (two such phases)
//! broadcast / reduce                       root → each rank / each rank → root, S each
//! ```
//!
//! n(n−1) transfer objects: fine up to a few thousand ranks (4.2 M at 2048, the limit).
//! NCCL's tuner runs all-to-all this way (its point-to-point sends, Simple) where PXN does not
//! relay it; the other collectives only when forced.

use super::choose::Options;
use super::pxn::relays_point_to_point;
use super::registered;
use super::{send, CollectiveAlgorithm, GroupTopo, Phase, Request, Servers, Transfer, DIRECT_MAX_RANKS};
use crate::workload::Collective;

registered! {
    Direct as DIRECT: "direct"
}

impl CollectiveAlgorithm for Direct {
    fn unsupported(&self, c: Collective, g: &GroupTopo, _s: &Servers) -> Option<String> {
        let n = g.size();
        (n > DIRECT_MAX_RANKS && !matches!(c, Collective::Broadcast | Collective::Reduce))
            .then(|| format!("{n} ranks needs n(n−1) transfers; direct is limited to {DIRECT_MAX_RANKS} ranks"))
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        direct(r.collective, r.group.size(), r.bytes)
    }

    /// All-to-all, unless PXN relays it (NCCL_P2P_PXN_LEVEL=2, [`relays_point_to_point`]).
    fn offered(&self, c: Collective, g: &GroupTopo, s: &Servers, opts: &Options) -> bool {
        c == Collective::AllToAll && !relays_point_to_point(c, g, s, opts)
    }
}

fn all_pairs(n: u32, bytes: f64) -> Phase {
    let mut transfers: Vec<Transfer> = Vec::with_capacity(n as usize * (n as usize - 1));
    for a in 0..n {
        transfers.extend((0..n).filter(|&b| b != a).map(|b| send(a, b, bytes)));
    }
    Phase { transfers, repeat: 1 }
}

pub(super) fn direct(c: Collective, n: u32, bytes: f64) -> Vec<Phase> {
    let shard = bytes / n as f64;
    match c {
        Collective::AllToAll | Collective::AllGather | Collective::ReduceScatter => vec![all_pairs(n, shard)],
        Collective::AllReduce => vec![all_pairs(n, shard), all_pairs(n, shard)],
        Collective::Broadcast => vec![Phase { transfers: (1..n).map(|b| send(0, b, bytes)).collect(), repeat: 1 }],
        Collective::Reduce => vec![Phase { transfers: (1..n).map(|a| send(a, 0, bytes)).collect(), repeat: 1 }],
    }
}
