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

use super::{chunks, Endpoint, Grain, GroupTopo, Phase, Servers, Transfer};

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
