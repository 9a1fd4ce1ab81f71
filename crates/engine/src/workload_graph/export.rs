//! A workload (the IR: every rank's program) as a workload graph on a platform: what
//! [`super::lower`] undoes, so any plan `clustersim train` builds (or any SimAI workload) can be
//! run, edited and shared as HCSim's Table 3 graph.
//!
//! Every op of every rank becomes a vertex, so a graph has ranks × ops vertices at most:
//! - a compute op of t ns on XPU x: a compute vertex of F = t · FLOPS_d(x) FLOPs in data type d,
//!   with no bytes (its data in HBM), so that it takes t again on x (Eq. 1) and F / FLOPS_d on
//!   any other XPU it is moved to;
//! - a collective: one vertex per group instance and sequence number on that group (the k-th
//!   all-reduce of a TP group is one vertex whatever the classes of its members), its
//!   participants the instance's XPUs, its communicator the group's name (so that two groups
//!   with the same members, as CP and DP_CP at DP 1, stay two streams), as the executor matches
//!   collectives;
//! - a send and the receive it meets (the k-th send from a to b on a group at offset o and the
//!   k-th receive at b from a on that group at offset −o, as the executor matches them: each
//!   direction of a pair on its own, so in a group of two, where +1 and −1 name the same rank,
//!   activations and gradients never meet each other's receives): one p2p vertex.
//!
//! What the executor refuses has no graph either: parties of one vertex that issue different
//! collectives or bytes, and a collective, send or receive that its peers never issue.
//!
//! Edges: each op's dependencies, and the op before it on its stream (compute, each group, each
//! peer and direction), which a graph must state as edges because it has no streams of its own;
//! and the loop (`not_first`, iteration count 1): each rank's first op on every stream waits for
//! its last op on every stream of the iteration before, so `--iterations N` runs N iterations.
//! Userbuffers copies (`copy` send/recv pairs) have no graph form and are refused.

use std::collections::HashMap;

use super::{Communication, Compute, Edge, Memory, Pattern, Vertex, VertexKind, WorkloadGraph, Xpus};
use crate::error::{InputError, Result};
use crate::platform::xpu::Dtype;
use crate::platform::Platform;
use crate::workload::{GroupId, OpKind, Stream, Workload};

/// What a rank numbers its communications by, and what one vertex stands for: the k-th
/// collective of a group instance (its first member), or the k-th transfer from src to dst on a
/// group at the sender's offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Channel {
    Coll { group: GroupId, first: u32 },
    P2p { src: u32, dst: u32, group: GroupId, offset: i32 },
}

/// A shared vertex: the first rank to issue it (and its op), its channel and sequence number
/// there, and how many of its parties have issued it.
struct Party {
    rank: u32,
    op: usize,
    channel: Channel,
    k: u32,
    count: u32,
}

/// `w` as a graph of one iteration on `platform` (which runs its ranks), compute in `dtype`;
/// `file` names the workload in errors.
pub fn from_workload(file: &str, w: &Workload, platform: &Platform, dtype: Dtype) -> Result<WorkloadGraph> {
    let world = w.world_size();
    if platform.placement.ranks() != world {
        return Err(InputError::field(
            file,
            "ranks",
            format!("the workload has {world} ranks and the platform runs {}", platform.placement.ranks()),
        ));
    }
    let xpu = |r: u32| platform.node_name(platform.placement.device(r));
    let mut vertices: Vec<Vertex> = Vec::new();
    // Shared vertices: (channel, sequence number on it).
    let mut shared: HashMap<(Channel, u32), u32> = HashMap::new();
    let mut parties: HashMap<u32, Party> = HashMap::new();
    // Collectives each rank issues on each group.
    let mut issued: HashMap<(GroupId, u32), u32> = HashMap::new();
    let mut edges: Vec<Edge> = Vec::new();
    let mut ops_vertex: Vec<u32> = Vec::new();
    for r in 0..world {
        let program = &w.programs[w.class_program[w.rank_class[r as usize] as usize] as usize];
        ops_vertex.clear();
        // A rank's sends and receives on one p2p channel are numbered apart (the channel of a
        // transfer to itself, in a group of one, has both).
        let mut seq: HashMap<(Channel, bool), u32> = HashMap::new();
        let (mut first_on, mut last_on): (HashMap<Stream, u32>, HashMap<Stream, u32>) = Default::default();
        for (i, op) in program.ops.iter().enumerate() {
            let at = || format!("rank {r}: op {i}");
            let mut next = |key: (Channel, bool)| {
                let k = seq.entry(key).or_insert(0);
                *k += 1;
                *k - 1
            };
            let v = match op.kind {
                OpKind::Compute { ns, .. } => {
                    let spec = platform.attrs.get(platform.placement.device(r) as usize).and_then(|a| a.xpu.as_ref());
                    let flops = spec.and_then(|s| s.flops(dtype)).ok_or_else(|| {
                        InputError::field(file, &at(), format!("XPU '{}' has no {} FLOPS figure", xpu(r), dtype.name()))
                    })?;
                    vertices.push(Vertex {
                        id: format!("r{r}.{i}"),
                        kind: VertexKind::Compute(Compute {
                            xpus: Xpus::Named(vec![xpu(r)]),
                            flops: ns * flops / 1e9,
                            dtype,
                            bytes: 0.0,
                            memory: Memory::Local,
                        }),
                    });
                    (vertices.len() - 1) as u32
                }
                OpKind::Collective { collective, group, bytes } => {
                    let members = w.group_members(group, r);
                    let channel = Channel::Coll { group, first: members[0] };
                    let k = next((channel, false));
                    let key = (channel, k);
                    let name = &w.groups[group as usize].name;
                    match shared.get(&key) {
                        Some(&v) => {
                            let p = parties.get_mut(&v).expect("a shared vertex has its parties");
                            p.count += 1;
                            let VertexKind::Communication(c) = &vertices[v as usize].kind else { unreachable!() };
                            let Pattern::Collective { collective: theirs, .. } = c.pattern else { unreachable!() };
                            if (theirs, c.bytes) != (collective, bytes) {
                                return Err(InputError::field(
                                    file,
                                    &at(),
                                    format!(
                                        "{} of {bytes} bytes, but rank {} issues {} of {} bytes as collective {k} of its {name} instance",
                                        collective.name(),
                                        p.rank,
                                        theirs.name(),
                                        c.bytes
                                    ),
                                ));
                            }
                            v
                        }
                        None => {
                            vertices.push(Vertex {
                                id: format!("{name}@r{}.{k}", members[0]),
                                kind: VertexKind::Communication(Communication {
                                    bytes,
                                    pattern: Pattern::Collective {
                                        collective,
                                        participants: Xpus::Named(members.iter().map(|&m| xpu(m)).collect()),
                                    },
                                    communicator: Some(name.clone()),
                                }),
                            });
                            let v = (vertices.len() - 1) as u32;
                            shared.insert(key, v);
                            parties.insert(v, Party { rank: r, op: i, channel, k, count: 1 });
                            v
                        }
                    }
                }
                OpKind::Send { copy: true, .. } | OpKind::Recv { copy: true, .. } => {
                    return Err(InputError::field(
                        file,
                        &format!("{}: copy", at()),
                        "a userbuffers copy (--tp-comm-overlap) has no workload-graph form",
                    ))
                }
                OpKind::Send { peer, bytes, .. } | OpKind::Recv { peer, bytes, .. } => {
                    let other = w.peer_rank(r, peer);
                    let send = matches!(op.kind, OpKind::Send { .. });
                    // A receive names its sender at the opposite offset.
                    let (src, dst, offset) =
                        if send { (r, other, peer.offset) } else { (other, r, peer.offset.wrapping_neg()) };
                    let channel = Channel::P2p { src, dst, group: peer.group, offset };
                    let k = next((channel, send));
                    let key = (channel, k);
                    match shared.get(&key) {
                        Some(&v) => {
                            let p = parties.get_mut(&v).expect("a shared vertex has its parties");
                            p.count += 1;
                            let VertexKind::Communication(c) = &vertices[v as usize].kind else { unreachable!() };
                            if c.bytes != bytes {
                                let (what, theirs) = if send { ("send", "receives") } else { ("receive", "sends") };
                                return Err(InputError::field(
                                    file,
                                    &at(),
                                    format!("a {what} of {bytes} bytes, but rank {} {theirs} {}", p.rank, c.bytes),
                                ));
                            }
                            v
                        }
                        None => {
                            let name = &w.groups[peer.group as usize].name;
                            vertices.push(Vertex {
                                id: format!("{name}{offset:+}@r{src}-r{dst}.{k}"),
                                kind: VertexKind::Communication(Communication {
                                    bytes,
                                    pattern: Pattern::P2p { src: xpu(src), dst: xpu(dst) },
                                    communicator: None,
                                }),
                            });
                            let v = (vertices.len() - 1) as u32;
                            shared.insert(key, v);
                            parties.insert(v, Party { rank: r, op: i, channel, k, count: 1 });
                            v
                        }
                    }
                }
            };
            for &d in &op.deps {
                edges.push(Edge { source: ops_vertex[d as usize], target: v, not_first: false });
            }
            if let Some(u) = last_on.insert(op.stream(), v) {
                edges.push(Edge { source: u, target: v, not_first: false });
            }
            first_on.entry(op.stream()).or_insert(v);
            ops_vertex.push(v);
        }
        // The loop: a rank's next iteration starts each stream once the last op of every stream
        // of this one has ended (the optimizer step ends an iteration, the next forward follows).
        // (A stream's one op waits for itself by the stream's order alone.)
        for &u in last_on.values() {
            for &v in first_on.values().filter(|&&v| v != u) {
                edges.push(Edge { source: u, target: v, not_first: true });
            }
        }
        for (&(channel, _), &n) in &seq {
            if let Channel::Coll { group, .. } = channel {
                issued.insert((group, r), n);
            }
        }
    }
    unmatched(file, w, &parties, &issued)?;
    // An edge within the iteration and a loop edge between the same vertices: the first is
    // kept, which orders them in every iteration as the loop edge would from the second on.
    edges.sort_unstable_by_key(|e| (e.source, e.target, e.not_first));
    edges.dedup_by_key(|e| (e.source, e.target));
    let iterations = Some(1);
    let mut g = WorkloadGraph { name: file.to_string(), iterations, vertices, edges, order: Vec::new() };
    g.order = super::json::order(file, &g)?;
    Ok(g)
}

/// The first shared vertex (in the order made) that a party never issues, as the executor's
/// deadlock: a collective a member of its instance never reaches, a send never received, a
/// receive never sent.
fn unmatched(
    file: &str,
    w: &Workload,
    parties: &HashMap<u32, Party>,
    issued: &HashMap<(GroupId, u32), u32>,
) -> Result<()> {
    let mut vs: Vec<u32> = parties.keys().copied().collect();
    vs.sort_unstable();
    for v in vs {
        let p = &parties[&v];
        match p.channel {
            Channel::Coll { group, first } => {
                // A rank in no instance of an explicit group is a group of its own.
                let members = w.group_members(group, first);
                if p.count as usize >= members.len() {
                    continue;
                }
                let count = |m: u32| issued.get(&(group, m)).copied().unwrap_or(0);
                let m = members.into_iter().find(|&m| count(m) <= p.k).unwrap_or(first);
                return Err(InputError::field(
                    file,
                    &format!("rank {m}: {}", w.groups[group as usize].name),
                    format!(
                        "{} collectives, where rank {} issues {} on their instance (a collective waits for every member)",
                        count(m),
                        p.rank,
                        count(p.rank)
                    ),
                ));
            }
            Channel::P2p { src, dst, .. } if p.count < 2 => {
                let what = if p.rank == src {
                    format!("a send to rank {dst} that rank {dst} never receives")
                } else {
                    format!("a receive from rank {src} that rank {src} never sends")
                };
                return Err(InputError::field(file, &format!("rank {}: op {}", p.rank, p.op), what));
            }
            _ => {}
        }
    }
    Ok(())
}
