//! What NCCL's tuner sees of a fabric: each rank's port rates (NVLink, NIC) and GPU generation,
//! the physical path latencies it adds to its per-hop latencies ([`TunerLinks`]), and the
//! channel count when none is given ([`default_channels`]).
//!
//! These are the inputs of the collective cost formulas ([`super::cost::Links`]) read off a
//! [`Platform`]: the flow model's tuner prices each group with them, and so does the nccl-tests
//! front end. They belong with the collectives (below the network models), not with a model or a
//! front end.

use super::cost::Links;
use super::GroupTopo;
use crate::catalog::{Arch, Catalog};
use crate::error::{InputError, Result};
use crate::platform::routing::Router;
use crate::platform::{NodeKind, Platform};

/// A GPU's port rates (GB/s): NVLink = its links to NVSwitches summed, NIC = its links to
/// network switches or NICs summed; a missing kind is priced at the other's rate so the tuner
/// stays defined (a schedule never uses it: a server without NVSwitch routes through the network).
fn port_rates(topo: &Platform, rank: u32) -> Result<(f64, f64)> {
    let gpu = topo.placement.device(rank);
    let (mut nvlink, mut nic) = (0.0, 0.0);
    for &l in topo.out_links(gpu) {
        let link = &topo.links[l as usize];
        match topo.kinds[link.dst as usize] {
            NodeKind::NvSwitch => nvlink += link.bandwidth,
            NodeKind::Switch | NodeKind::Nic => nic += link.bandwidth,
            _ => {}
        }
    }
    if nic <= 0.0 && nvlink <= 0.0 {
        let name = topo.node_name(gpu);
        return Err(InputError::new("topology", format!("GPU {name} (rank {rank}) has no link to a switch")));
    }
    Ok((if nvlink > 0.0 { nvlink } else { nic }, if nic > 0.0 { nic } else { nvlink }))
}

/// Link rates the tuner prices each group with. Per rank: its port rates and generation; a group
/// gets its slowest member's rates and oldest generation (one communicator runs at the pace of
/// its slowest GPU). α are the physical path latencies NCCL adds to its per-hop latencies, from
/// rank 0: to a GPU of its domain through an NVSwitch, and to the next domain's GPU through the
/// network (0 if none).
#[derive(Debug, Clone, PartialEq)]
pub struct TunerLinks {
    pub alpha_nvlink_ns: f64,
    pub alpha_net_ns: f64,
    /// (NVLink GB/s, NIC GB/s, generation) per rate class; `class[r]` is rank r's.
    classes: Vec<(f64, f64, Option<Arch>)>,
    pub class: Vec<u32>,
}

impl TunerLinks {
    pub fn of(topo: &Platform) -> Result<TunerLinks> {
        let p = &topo.placement;
        if p.ranks() == 0 {
            return Err(InputError::new("topology", "the fabric has no GPUs"));
        }
        let mut classes: Vec<(f64, f64, Option<Arch>)> = Vec::new();
        let mut class = Vec::with_capacity(p.ranks() as usize);
        for r in 0..p.ranks() {
            let (nvlink, nic) = port_rates(topo, r)?;
            let rates = (nvlink, nic, Catalog::arch_of(topo.accelerator_type(p.device(r))));
            let i = classes.iter().position(|c| *c == rates).unwrap_or_else(|| {
                classes.push(rates);
                classes.len() - 1
            });
            class.push(i as u32);
        }
        let gpu0 = p.device(0);
        let out_latency = |kind: NodeKind| {
            topo.out_links(gpu0).iter().map(|&l| &topo.links[l as usize]).find(|l| topo.kinds[l.dst as usize] == kind)
        };
        // Up to the switch and down again, assuming symmetric links.
        let alpha_nvlink_ns = out_latency(NodeKind::NvSwitch).map_or(0.0, |l| 2.0 * l.latency_ns);
        let peer = (0..p.ranks()).find(|&r| !p.same_domain(0, r));
        // The path to the first rank outside rank 0's scale-up domain, over whatever joins them
        // (a NIC and switches, PCIe and Ethernet, a CXL fabric): each network hop waits for it.
        let alpha_net_ns = if let Some(peer) = peer {
            let mut path = Vec::new();
            Router::new(topo, 0).route(topo, gpu0, p.device(peer), 0, &mut path)?;
            path.iter().map(|&l| topo.links[l as usize].latency_ns).sum()
        } else {
            0.0
        };
        Ok(TunerLinks { alpha_nvlink_ns, alpha_net_ns, classes, class })
    }

    /// The rates of group `g`: its slowest member's.
    pub fn group(&self, g: &GroupTopo) -> Links {
        let mut members = g.ranks.iter().map(|&r| self.classes[self.class[r as usize] as usize]);
        let first = members.next().unwrap_or(self.classes[0]);
        let (nvlink_gbps, nic_gbps, arch) = members.fold(first, |(v, n, a), (v2, n2, a2)| {
            let oldest = match (a, a2) {
                (Some(x), Some(y)) => Some(x.min(y)),
                _ => a.or(a2),
            };
            (v.min(v2), n.min(n2), oldest)
        });
        Links { nvlink_gbps, nic_gbps, alpha_nvlink_ns: self.alpha_nvlink_ns, alpha_net_ns: self.alpha_net_ns, arch }
    }
}

/// Channels when none are given: the NICs of the first server (each GPU link to a network
/// switch is one NIC), so rings leave each server on every NIC; at least 2.
pub fn default_channels(topo: &Platform) -> u32 {
    let p = &topo.placement;
    let nics = (0..p.ranks())
        .filter(|&r| p.same_domain(0, r))
        .flat_map(|r| topo.out_links(p.device(r)).iter())
        .filter(|&&l| matches!(topo.kinds[topo.links[l as usize].dst as usize], NodeKind::Switch | NodeKind::Nic))
        .count() as u32;
    nics.max(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::file::tests::{parse, MIXED};

    #[test]
    fn the_tuner_prices_a_group_at_its_slowest_members_rates() {
        let p = parse(MIXED).unwrap();
        let t = TunerLinks::of(&p).unwrap();
        let rates = |ranks: &[u32]| {
            let l = t.group(&GroupTopo::new(ranks, &p.placement, false));
            (l.nvlink_gbps, l.nic_gbps, l.arch)
        };
        // Ranks 1, 3: H100 (450 GB/s NVLink, 50 GB/s NIC); 0, 2: A100 (300, 25).
        assert_eq!(rates(&[1, 3]), (450.0, 50.0, Some(Arch::Hopper)));
        assert_eq!(rates(&[0, 2]), (300.0, 25.0, Some(Arch::Ampere)));
        assert_eq!(rates(&[0, 1, 2, 3]), (300.0, 25.0, Some(Arch::Ampere)));
        assert_eq!(t.class, [0, 1, 0, 1]);
    }
}
