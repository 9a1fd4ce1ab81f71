//! The workload IR: ranks, communicator groups and per-rank operations with dependencies.
//!
//! Ranks that behave alike share one [`Program`]: a *rank class* is a set of ranks that run the
//! same program in lock step (all ranks of a SimAI file; one pipeline stage of a Megatron plan).
//! Memory is therefore O(ranks) for the class map plus O(ops) per distinct program, never
//! O(ranks × ops). Groups are described by the parallel [`Layout`] (which coordinates vary inside
//! a group), so no per-group member list is stored either.
//!
//! [`check`] holds the invariants every workload keeps; [`json`] is its versioned JSON form
//! (docs/workload-ir.md); [`columns`] its bulk form for Python; [`sweep`] builds the one-collective
//! workload nccl-tests runs.

pub mod check;
pub mod columns;
pub mod json;
mod split;
pub mod sweep;
mod work;

pub use work::Work;

use serde::{Deserialize, Serialize};

use crate::layout::Layout;

/// Collective operations, with sizes in the nccl-tests convention (the whole buffer S).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    Broadcast,
    Reduce,
}

impl Collective {
    pub const ALL: [Collective; 6] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::AllToAll,
        Collective::Broadcast,
        Collective::Reduce,
    ];

    /// Every kind a ring or a switch's multicast runs: all but all-to-all.
    pub const RING_KINDS: [Collective; 5] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
        Collective::Reduce,
    ];

    /// nccl-tests bus-bandwidth factor: busbw = algbw × factor (doc/PERFORMANCE.md).
    pub fn busbw_factor(self, n: u32) -> f64 {
        let n = n as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll => (n - 1.0) / n,
            Collective::Broadcast | Collective::Reduce => 1.0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "allreduce",
            Collective::AllGather => "allgather",
            Collective::ReduceScatter => "reducescatter",
            Collective::AllToAll => "alltoall",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
        }
    }
}

/// Index of a group in [`Workload::groups`].
pub type GroupId = u16;

/// A communicator kind. Every rank belongs to exactly one instance of each group.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Field name: TP, DP, PP, EP, DP_EP, or a user's name for a custom group.
    pub name: String,
    pub members: Membership,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Membership {
    /// Ranks that share every layout coordinate except those in this bit mask of layout dimensions.
    Dims(u32),
    /// Explicit instances (custom groups); a rank in no instance is a group of its own.
    Explicit(Vec<Vec<u32>>),
}

/// Training phase an operation belongs to (for reports: SimAI's fwd / ig / wg columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    #[serde(rename = "fwd")]
    Forward,
    #[serde(rename = "ig")]
    InputGrad,
    #[serde(rename = "wg")]
    WeightGrad,
    /// Anything else (optimizer, pipeline transfers).
    #[default]
    Other,
}

/// The peer of a point-to-point operation: the rank `offset` positions away in this rank's
/// instance of `group` (cyclically), e.g. the next pipeline stage is `{ group: PP, offset: 1 }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer {
    pub group: GroupId,
    pub offset: i32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum OpKind {
    /// Compute that takes a known time (measured, or from the compute model), in ns, and, where
    /// the front end knows it, what it does (FLOPs, bytes, data type), for another device or
    /// backend to price it again.
    Compute {
        ns: f64,
        work: Option<Work>,
    },
    Collective {
        collective: Collective,
        group: GroupId,
        bytes: u64,
    },
    /// `copy`: a device-to-device copy with no NCCL call (Transformer Engine's userbuffers); it
    /// must meet a copy recv inside the sender's rank class. Otherwise an NCCL send.
    Send {
        peer: Peer,
        bytes: u64,
        copy: bool,
    },
    Recv {
        peer: Peer,
        bytes: u64,
        copy: bool,
    },
}

/// One operation of a program. It starts when its dependencies have finished and the previous
/// operation on its stream (compute, one per group, one per point-to-point peer and direction)
/// has finished: the CUDA-stream / NCCL-communicator ordering of real training.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub kind: OpKind,
    /// Indices of earlier operations of the same program this one waits for.
    pub deps: Vec<u32>,
    /// Workload row (layer) this op reports under.
    pub row: u32,
    pub phase: Phase,
}

impl Op {
    pub fn new(kind: OpKind, deps: Vec<u32>, row: u32, phase: Phase) -> Op {
        Op { kind, deps, row, phase }
    }

    /// The stream this op is ordered on.
    pub fn stream(&self) -> Stream {
        match self.kind {
            OpKind::Compute { .. } => Stream::Compute,
            OpKind::Collective { group, .. } => Stream::Group(group),
            OpKind::Send { peer, .. } => Stream::Send(peer),
            OpKind::Recv { peer, .. } => Stream::Recv(peer),
        }
    }
}

/// An in-order queue of a rank: each op waits for the previous op on its stream (a CUDA stream
/// for compute, an NCCL communicator per group, one queue per point-to-point peer and direction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    Compute,
    Group(GroupId),
    Send(Peer),
    Recv(Peer),
}

/// An operation list shared by every rank of a class, in issue order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Program {
    pub ops: Vec<Op>,
}

impl Program {
    /// Append an op and return its index.
    pub fn push(&mut self, op: Op) -> u32 {
        self.ops.push(op);
        (self.ops.len() - 1) as u32
    }
}

/// A whole training iteration for every rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub layout: Layout,
    pub groups: Vec<Group>,
    pub programs: Vec<Program>,
    /// Program of each rank class.
    pub class_program: Vec<u32>,
    /// Class of each rank (`len() == world size`).
    pub rank_class: Vec<u32>,
    /// Row labels (layer names) that ops refer to through [`Op::row`].
    pub rows: Vec<String>,
}

impl Workload {
    pub fn world_size(&self) -> u32 {
        self.rank_class.len() as u32
    }

    /// The instance of `group` that `rank` belongs to, in rank order of the group.
    pub fn group_members(&self, group: GroupId, rank: u32) -> Vec<u32> {
        match &self.groups[group as usize].members {
            Membership::Dims(mask) => self.layout.group_of(rank, *mask),
            Membership::Explicit(instances) => {
                instances.iter().find(|inst| inst.contains(&rank)).cloned().unwrap_or_else(|| vec![rank])
            }
        }
    }

    /// The rank `peer.offset` places on from `rank` in its instance of `peer.group` (cyclic).
    pub fn peer_rank(&self, rank: u32, peer: Peer) -> u32 {
        let members = self.group_members(peer.group, rank);
        let me = members.iter().position(|&r| r == rank).unwrap_or(0) as i64;
        members[(me + peer.offset as i64).rem_euclid(members.len() as i64) as usize]
    }

    pub fn group_size(&self, group: GroupId) -> u32 {
        match &self.groups[group as usize].members {
            Membership::Dims(mask) => self.layout.size_of(*mask),
            Membership::Explicit(instances) => instances.first().map_or(1, |i| i.len() as u32),
        }
    }

    /// A rank of each class (the lowest), used to stand for the whole class.
    pub fn class_representatives(&self) -> Vec<u32> {
        let mut reps = vec![u32::MAX; self.class_program.len()];
        for (rank, &class) in self.rank_class.iter().enumerate() {
            let r = &mut reps[class as usize];
            if *r == u32::MAX {
                *r = rank as u32;
            }
        }
        reps
    }
}
