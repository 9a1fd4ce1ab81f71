//! Splitting rank classes: some ranks get a class of their own (a slow GPU runs its own
//! program), and the classes around them split as far as the executor needs.
//!
//! The executor ([`crate::executor`]) reads a class's communicators off its lowest rank: the
//! classes that share each group instance with it, and the class of each peer it sends to. So
//! every rank of a class must see the same: for every group, the classes of its instance's
//! members (as a set: a collective meets them all), and the class of each peer its class's
//! programs send to or receive from. Taking one rank out of its class breaks that for
//! the ranks sharing a group with it (their TP group now waits for the slow rank; the others'
//! does not). Colour refinement restores it: a rank's new class is its class, for each group
//! the sorted classes of its instance, and the class of each peer; repeat until the number of
//! classes stops growing. The classes only split (never merge), so it ends within as many rounds
//! as there are ranks; on a regular layout it takes a few (one slow GPU of a TP × DP job: the
//! slow rank, the rest of its TP group, the rest of its DP group, everyone else).

use std::collections::HashMap;

use super::{OpKind, Peer, Workload};

impl Workload {
    /// Give each rank of `alone` a class of its own and split the others until every class is
    /// uniform (module doc). Classes are renumbered by their lowest rank; returns, per new class,
    /// the class it came from. The programs stay the old classes' (`class_program`).
    pub fn split_classes(&mut self, alone: &[u32]) -> Vec<u32> {
        let old = self.rank_class.clone();
        let first_new = old.iter().copied().max().map_or(0, |c| c + 1);
        let mut class = old.clone();
        for (k, &r) in alone.iter().enumerate() {
            class[r as usize] = first_new + k as u32;
        }
        let mut count = renumber(&mut class);
        let world = self.world_size();
        // The peers the programs send to or receive from, and their mirrors.
        let mut peers: Vec<Peer> = Vec::new();
        for op in self.programs.iter().flat_map(|p| &p.ops) {
            if let OpKind::Send { peer, .. } | OpKind::Recv { peer, .. } = op.kind {
                for p in [peer, Peer { offset: peer.offset.wrapping_neg(), ..peer }] {
                    if !peers.contains(&p) {
                        peers.push(p);
                    }
                }
            }
        }
        loop {
            let mut ids: HashMap<Vec<u32>, u32> = HashMap::new();
            let mut next = Vec::with_capacity(class.len());
            for r in 0..world {
                let mut key = vec![class[r as usize]];
                for g in 0..self.groups.len() as u16 {
                    let mut classes: Vec<u32> = self.group_members(g, r).iter().map(|&m| class[m as usize]).collect();
                    classes.sort_unstable();
                    key.push(classes.len() as u32);
                    key.extend(classes);
                }
                key.extend(peers.iter().map(|&p| class[self.peer_rank(r, p) as usize]));
                let n = ids.len() as u32;
                next.push(*ids.entry(key).or_insert(n));
            }
            let n = renumber(&mut next);
            class = next;
            if n == count {
                break;
            }
            count = n;
        }
        let mut parent = vec![0u32; count as usize];
        for (r, &c) in class.iter().enumerate() {
            parent[c as usize] = old[r];
        }
        self.class_program = parent.iter().map(|&p| self.class_program[p as usize]).collect();
        self.rank_class = class;
        parent
    }
}

/// Number classes by their lowest rank; returns how many there are.
fn renumber(class: &mut [u32]) -> u32 {
    let mut ids: HashMap<u32, u32> = HashMap::new();
    for c in class.iter_mut() {
        let n = ids.len() as u32;
        *c = *ids.entry(*c).or_insert(n);
    }
    ids.len() as u32
}

#[cfg(test)]
mod tests {
    use crate::layout::{Axis, Layout};
    use crate::workload::{Group, Membership, Program, Workload};

    #[test]
    fn one_rank_alone_in_a_tp_dp_job_splits_its_tp_and_dp_groups_off() {
        // TP 4 × DP 4: rank 6 (TP group 4..8, DP group 2, 6, 10, 14) alone.
        let layout = Layout::megatron(4, 1, 1, 4, 1);
        let groups = vec![
            Group { name: "TP".into(), members: Membership::Dims(layout.mask(&[Axis::Tp])) },
            Group { name: "DP".into(), members: Membership::Dims(layout.mask(&[Axis::DpEp])) },
        ];
        let mut w = Workload {
            layout,
            groups,
            programs: vec![Program { ops: Vec::new() }],
            class_program: vec![0],
            rank_class: vec![0; 16],
            rows: Vec::new(),
        };
        let parent = w.split_classes(&[6]);
        // Classes by lowest rank: everyone else 0, rank 6's DP peers 1 (rank 2), its TP peers
        // 2 (rank 4), rank 6 itself 3.
        let want = [0, 0, 1, 0, 2, 2, 3, 2, 0, 0, 1, 0, 0, 0, 1, 0];
        assert_eq!(w.rank_class, want);
        assert_eq!(parent, vec![0; 4]);
        assert_eq!(w.class_program, vec![0; 4]);
    }
}
