//! PXN (NCCL 2.12's "PCI × NVLink"): a send to another server leaves through the NIC on the
//! destination's rail. When the source GPU is on another rail, the data goes first over NVLink to
//! the source server's GPU with the destination's local index, which sends it over its own NIC.
//!
//! Applied to a base schedule (ring for all-reduce, all-gather, reduce-scatter, broadcast and
//! reduce; direct for all-to-all), every cross-server, cross-rail transfer src → dst becomes
//! src → proxy and proxy → dst with the same bytes; transfers between the same endpoints are
//! merged (their bytes add). The relay is one more pipeline stage: a repeated phase (the steps of
//! a ring) runs once more; a single-shot phase is cut into k = ⌈max bytes/chunk⌉ chunks and runs
//! k + 1 times. A proxy must be a member of the group; without one the transfer goes direct.

use std::collections::HashMap;

use super::choose::Options;
use super::direct::direct;
use super::registered;
use super::ring::{ring, ring_hops};
use super::{
    chunks, Call, CollectiveAlgorithm, Endpoint, Grain, GroupTopo, Phase, Request, Servers, Transfer, DIRECT_MAX_RANKS,
};
use crate::workload::Collective;

registered! {
    /// PXN (`AS_PXN_ENABLE`, groups spanning servers), Simple, priced as NCCL prices its ring.
    Pxn as PXN: "pxn"
}

impl CollectiveAlgorithm for Pxn {
    fn unsupported(&self, c: Collective, g: &GroupTopo, _s: &Servers) -> Option<String> {
        let n = g.size();
        (n > DIRECT_MAX_RANKS && c == Collective::AllToAll)
            .then(|| format!("{n} ranks needs n(n−1) transfers; PXN all-to-all is limited to {DIRECT_MAX_RANKS} ranks"))
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        let (c, g, s, bytes, grain) = (r.collective, r.group, r.servers, r.bytes, r.grain);
        let base =
            if c == Collective::AllToAll { direct(c, g.size(), bytes) } else { ring(c, s, bytes, r.channels, grain) };
        relay(base, g, s, grain)
    }

    fn offered(&self, c: Collective, g: &GroupTopo, s: &Servers, opts: &Options) -> bool {
        (opts.pxn_enable && s.members.len() > 1) || relays_point_to_point(c, g, s, opts)
    }

    /// The base schedule's hops, plus the NVLink relay hop when the group spans servers.
    fn hops(&self, call: &Call) -> (u32, u32) {
        let nodes = call.servers.members.len() as u32;
        let spans = (nodes > 1) as u32;
        if call.collective == Collective::AllToAll {
            return (1, spans);
        }
        let (intra, inter) = ring_hops(call.collective, call.group.size(), nodes);
        (intra + spans, inter)
    }

    fn ring_latency(&self) -> bool {
        true
    }
}

/// NCCL_P2P_PXN_LEVEL=2 relays every all-to-all between servers (NCCL builds it from sends and
/// receives), where PXN can run it and a server holds a second GPU to relay through: PXN then
/// runs it in place of direct, whatever the prediction.
pub(super) fn relays_point_to_point(c: Collective, g: &GroupTopo, s: &Servers, opts: &Options) -> bool {
    let relays = s.members.len() > 1 && s.members.iter().any(|m| m.len() > 1);
    opts.p2p_pxn && relays && c == Collective::AllToAll && Pxn.unsupported(c, g, s).is_none()
}

pub(super) fn relay(phases: Vec<Phase>, g: &GroupTopo, s: &Servers, grain: Grain) -> Vec<Phase> {
    let proxy: HashMap<(u32, u32), u32> = (0..g.size()).map(|r| ((s.of_rank[r as usize], g.rail(r)), r)).collect();
    phases
        .into_iter()
        .map(|phase| {
            let mut out: Vec<Transfer> = Vec::with_capacity(phase.transfers.len());
            let mut slot: HashMap<(Endpoint, Endpoint), usize> = HashMap::new();
            let mut add = |t: Transfer| match slot.get(&(t.src, t.dst)) {
                Some(&i) => out[i].bytes += t.bytes,
                None => {
                    slot.insert((t.src, t.dst), out.len());
                    out.push(t);
                }
            };
            let mut relayed = false;
            for t in phase.transfers {
                let hop = match (t.src, t.dst) {
                    (Endpoint::Rank(a), Endpoint::Rank(b)) if s.of_rank[a as usize] != s.of_rank[b as usize] => {
                        proxy.get(&(s.of_rank[a as usize], g.rail(b))).copied().filter(|&p| p != a)
                    }
                    _ => None,
                };
                match hop {
                    Some(p) => {
                        relayed = true;
                        add(Transfer { src: t.src, dst: Endpoint::Rank(p), bytes: t.bytes });
                        add(Transfer { src: Endpoint::Rank(p), dst: t.dst, bytes: t.bytes });
                    }
                    None => add(t),
                }
            }
            if !relayed {
                return Phase { transfers: out, repeat: phase.repeat };
            }
            if phase.repeat > 1 {
                return Phase { transfers: out, repeat: phase.repeat + 1 };
            }
            let k = chunks(out.iter().map(|t| t.bytes).fold(0.0, f64::max), grain);
            out.iter_mut().for_each(|t| t.bytes /= k as f64);
            Phase { transfers: out, repeat: k + 1 }
        })
        .collect()
}
