//! Recursive halving-doubling (Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005).
//!
//! On p = 2^m ranks, reduce-scatter by recursive halving: step j = 0..m−1 every rank exchanges
//! S/2^(j+1) with the rank p/2^(j+1) away (XOR); all-gather by recursive doubling: step j every
//! rank exchanges S·2^j/p with the rank 2^j away. All-reduce is the two in sequence:
//!
//! ```text
//! T_allreduce = 2·m·α + 2·(p−1)/p · S/B,   T_reduce_scatter = T_all_gather = m·α + (p−1)/p · S/B
//! ```
//!
//! Other n (all-reduce only): the r = n − p ranks beyond the largest power of two p first send
//! their S to rank i = 0..r−1 (one extra phase), the p ranks run the algorithm, and the results
//! go back (one more phase). All-gather and reduce-scatter on other n are refused: their output
//! layout does not survive the fold. Each step is its own phase (partners change), so the
//! schedule holds O(n log n) transfers. NCCL has no such algorithm: it runs only when forced.

use super::registered;
use super::{send, CollectiveAlgorithm, GroupTopo, Phase, Request, Servers};
use crate::workload::Collective;

registered! {
    HalvingDoubling as HALVING_DOUBLING: "halving_doubling", [Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter]
}

impl CollectiveAlgorithm for HalvingDoubling {
    fn unsupported(&self, c: Collective, g: &GroupTopo, _s: &Servers) -> Option<String> {
        use Collective::*;
        let n = g.size();
        if !matches!(c, AllReduce | AllGather | ReduceScatter) {
            Some("recursive halving-doubling is defined for all-reduce, all-gather and reduce-scatter".into())
        } else if c != AllReduce && !n.is_power_of_two() {
            Some(format!("{n} ranks is not a power of two"))
        } else {
            None
        }
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        halving_doubling(r.collective, r.group.size(), r.bytes)
    }
}

fn exchange(p: u32, distance: u32, bytes: f64) -> Phase {
    Phase { transfers: (0..p).map(|a| send(a, a ^ distance, bytes)).collect(), repeat: 1 }
}

fn reduce_scatter(p: u32, bytes: f64) -> impl Iterator<Item = Phase> {
    let m = p.trailing_zeros();
    (0..m).map(move |j| exchange(p, p >> (j + 1), bytes / (1u64 << (j + 1)) as f64))
}

fn all_gather(p: u32, bytes: f64) -> impl Iterator<Item = Phase> {
    let m = p.trailing_zeros();
    (0..m).map(move |j| exchange(p, 1 << j, bytes * (1u64 << j) as f64 / p as f64))
}

fn halving_doubling(c: Collective, n: u32, bytes: f64) -> Vec<Phase> {
    let p = 1u32 << (31 - n.leading_zeros());
    let extra = n - p;
    match c {
        Collective::AllReduce => {
            let fold = |up: bool| Phase {
                transfers: (0..extra).map(|i| if up { send(p + i, i, bytes) } else { send(i, p + i, bytes) }).collect(),
                repeat: 1,
            };
            let mut phases = vec![fold(true)];
            phases.extend(reduce_scatter(p, bytes));
            phases.extend(all_gather(p, bytes));
            phases.push(fold(false));
            phases
        }
        Collective::ReduceScatter => reduce_scatter(n, bytes).collect(),
        Collective::AllGather => all_gather(n, bytes).collect(),
        // Refused before dispatch.
        Collective::AllToAll | Collective::Broadcast | Collective::Reduce => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_ranks_fold_two_onto_a_power_of_two() {
        let phases = halving_doubling(Collective::AllReduce, 6, 64.0);
        assert_eq!(phases.len(), 1 + 2 + 2 + 1);
        assert_eq!(phases[0].transfers, vec![send(4, 0, 64.0), send(5, 1, 64.0)]);
        assert_eq!(phases[1].transfers, vec![send(0, 2, 32.0), send(1, 3, 32.0), send(2, 0, 32.0), send(3, 1, 32.0)]);
        assert_eq!(phases[2].transfers[0], send(0, 1, 16.0));
        assert_eq!(phases[3].transfers[0], send(0, 1, 16.0));
        assert_eq!(phases[4].transfers[0], send(0, 2, 32.0));
        assert_eq!(phases[5].transfers, vec![send(0, 4, 64.0), send(1, 5, 64.0)]);
    }
}
