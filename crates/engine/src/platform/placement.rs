//! Where each rank runs: its device, its scale-up domain and its rail.
//!
//! A scale-up domain is a set of accelerators sharing one switch fabric (an NVLink domain: the
//! GPUs of a DGX server, or of an NVL72 rack); NCCL keeps traffic inside a domain on it. A rank's
//! rail is its position in its domain, which is also the NIC (rail) its traffic leaves on in a
//! rail-optimised fabric. These are data, stated once by the platform's reader; nothing else
//! derives them from rank arithmetic.

use crate::error::{InputError, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Device node of each rank.
    device: Vec<u32>,
    /// Scale-up domain of each rank, numbered 0.. in order of first appearance.
    domain: Vec<u32>,
    /// Position of each rank among its domain's ranks, in rank order.
    rail: Vec<u32>,
    domains: u32,
}

impl Placement {
    /// `ranks` ranks on servers of `per_server` consecutive ranks, rank r on device node r (the
    /// SimAI convention: GPUs are nodes 0..G, a server holds `gpus_per_server` of them).
    pub fn servers(ranks: u32, per_server: u32) -> Placement {
        let per_server = per_server.max(1);
        Placement {
            device: (0..ranks).collect(),
            domain: (0..ranks).map(|r| r / per_server).collect(),
            rail: (0..ranks).map(|r| r % per_server).collect(),
            domains: ranks.div_ceil(per_server),
        }
    }

    /// Ranks on `device` nodes, rank r in scale-up domain `domain[r]` (any ids; renumbered by
    /// first appearance). `source` names the input in errors.
    pub fn new(source: &str, device: Vec<u32>, domain: &[u32]) -> Result<Placement> {
        if device.len() != domain.len() {
            return Err(InputError::field(
                source,
                "ranks",
                format!("{} devices but {} domain ids", device.len(), domain.len()),
            ));
        }
        let mut seen = std::collections::HashMap::new();
        for (r, &d) in device.iter().enumerate() {
            if let Some(first) = seen.insert(d, r) {
                return Err(InputError::field(
                    source,
                    &format!("rank {r}"),
                    format!("device {d} already runs rank {first}; one rank per device"),
                ));
            }
        }
        let mut ids = std::collections::HashMap::new();
        let mut count: Vec<u32> = Vec::new();
        let (mut dom, mut rail) = (Vec::with_capacity(domain.len()), Vec::with_capacity(domain.len()));
        for &d in domain {
            let next = ids.len() as u32;
            let i = *ids.entry(d).or_insert(next);
            if i as usize == count.len() {
                count.push(0);
            }
            dom.push(i);
            rail.push(count[i as usize]);
            count[i as usize] += 1;
        }
        Ok(Placement { device, domain: dom, rail, domains: count.len() as u32 })
    }

    pub fn ranks(&self) -> u32 {
        self.device.len() as u32
    }

    pub fn domains(&self) -> u32 {
        self.domains
    }

    pub fn device(&self, rank: u32) -> u32 {
        self.device[rank as usize]
    }

    pub fn domain(&self, rank: u32) -> u32 {
        self.domain[rank as usize]
    }

    pub fn rail(&self, rank: u32) -> u32 {
        self.rail[rank as usize]
    }

    /// Whether two ranks share a scale-up domain.
    pub fn same_domain(&self, a: u32, b: u32) -> bool {
        self.domain[a as usize] == self.domain[b as usize]
    }

    /// The rank on each of `nodes` nodes, u32::MAX where none.
    pub fn rank_on(&self, nodes: usize) -> Vec<u32> {
        let mut on = vec![u32::MAX; nodes];
        for (r, &d) in self.device.iter().enumerate() {
            if let Some(slot) = on.get_mut(d as usize) {
                *slot = r as u32;
            }
        }
        on
    }

    /// Ranks of the largest domain.
    pub fn largest_domain(&self) -> u32 {
        self.rail.iter().max().map_or(0, |r| r + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_hold_consecutive_ranks() {
        let p = Placement::servers(10, 4);
        assert_eq!((p.domains(), p.domain(9), p.rail(9), p.device(9)), (3, 2, 1, 9));
        assert!(p.same_domain(4, 7) && !p.same_domain(3, 4));
        assert_eq!(p.largest_domain(), 4);
    }

    #[test]
    fn domains_are_data() {
        // Two domains of unequal size, interleaved ranks.
        let p = Placement::new("p", vec![10, 11, 12, 13, 14], &[7, 3, 7, 7, 3]).unwrap();
        assert_eq!((0..5).map(|r| p.domain(r)).collect::<Vec<_>>(), [0, 1, 0, 0, 1]);
        assert_eq!((0..5).map(|r| p.rail(r)).collect::<Vec<_>>(), [0, 0, 1, 2, 1]);
        assert_eq!((p.domains(), p.largest_domain(), p.device(4)), (2, 3, 14));
        let e = Placement::new("p", vec![1, 2, 1], &[0, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("rank 2") && e.message.contains("already runs rank 0"), "{e}");
    }
}
