//! A workload graph on a platform becomes the workload IR: one program per rank class, the
//! graph unrolled over its iterations. The one executor then runs it on the flow model.
//!
//! A compute vertex of F FLOPs in data type d, accessing B bytes on an XPU with peak rate
//! FLOPS_d and HBM bandwidth W, placed with L bytes in HBM and R = B − L on a remote memory
//! device ([`super::memory`]):
//!
//! - all local (R = 0): one compute op of t = max(F / FLOPS_d, B / W) (the compute model's
//!   roofline, [`crate::compute::roofline_ns`]; HCSim's Eq. 1 when W is not given);
//! - non-coherent (the remote device is host DRAM, Fig. 3b): a read of R bytes from the device
//!   to the XPU over the platform's links, then compute of max(F / FLOPS_d, B / W);
//! - coherent (a CXL device, Fig. 3c): the read and a compute of max(F / FLOPS_d, L / W) start
//!   together, and the vertex ends when both have, so it lasts as long as the slower. The read
//!   is a flow like any other, sharing links with collectives and other reads.
//!
//! A read is a flow from the device to the XPU that waits its path latency plus the device's
//! own latency, then moves at its max-min fair share (`network/flow/mod.rs`): alone, R / bottleneck +
//! Σ latency. A communication vertex is a collective on a group of its participants (one per
//! participant set and `communicator`; one per vertex with [`Options::concurrent`]), run by the
//! collective algorithms on the platform as NCCL's tuner picks them, or a send/recv pair.
//! Compute ops of one XPU run one at a time in dependency order (one compute stream); reads from
//! one device one at a time per XPU.
//!
//! Ranks whose programs come out the same (same vertices, XPU speed and placement) share one
//! program: a rank class. The reads of a class stand for one read per rank, each from its own
//! device; [`Lowered::reads`] says which.

use std::collections::HashMap;

use super::memory::{Memories, Placed, Source, Want};
use super::{Memory, Pattern, VertexKind, WorkloadGraph, Xpus};
use crate::compute::roofline_ns;
use crate::error::{InputError, Result};
use crate::layout::Layout;
use crate::platform::{NodeKind, Platform};
use crate::workload::Work;
use crate::workload::{Group, GroupId, Membership, Op, OpKind, Peer, Phase, Program, Workload};

/// The most vertex runs (vertices × iterations) one lowering unrolls: 2^26, some 10 GB of ops.
pub const MAX_VERTEX_RUNS: u64 = 1 << 26;

/// How a compute vertex reads remote memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// Coherent on CXL memory, copy-then-compute on host DRAM.
    #[default]
    Auto,
    /// Always copy, then compute (a system without coherence).
    Copy,
    /// Always compute while reading.
    Coherent,
}

impl Access {
    pub fn parse(text: &str) -> Option<Access> {
        match text.to_ascii_lowercase().as_str() {
            "auto" => Some(Access::Auto),
            "copy" | "noncoherent" | "non-coherent" => Some(Access::Copy),
            "coherent" => Some(Access::Coherent),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Options {
    /// Overrides the graph's iteration count.
    pub iterations: Option<u32>,
    pub access: Access,
    /// Each communication vertex on a communicator of its own, so that it starts as soon as its
    /// dependencies are met (HCSim's engine, §2.4 (3)); otherwise those of one participant set
    /// share one and run one at a time (NCCL's order).
    pub concurrent: bool,
}

/// What an op of a lowered program stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Compute,
    Read,
    Collective,
    P2p,
}

pub struct Lowered {
    pub workload: Workload,
    /// Groups from here on are reads: group `first_read + i` reads from `reads[i]`.
    pub first_read: GroupId,
    pub reads: Vec<Source>,
    /// Each rank's home memory node (u32::MAX where it never spilled).
    pub home: Vec<u32>,
    pub iterations: u32,
    /// Per program: the iteration and role of each op.
    pub op_iteration: Vec<Vec<u32>>,
    pub op_role: Vec<Vec<Role>>,
    /// Bytes placed in HBM, host DRAM and CXL memory, summed over the copies.
    pub placed_bytes: [f64; 3],
    /// Compute-vertex copies with remote bytes.
    pub spilled: u64,
}

/// The ranks a vertex runs on (or takes part in): every one, or a sorted list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Ranks {
    All,
    Some(Vec<u32>),
}

impl Ranks {
    fn contains(&self, r: u32) -> bool {
        match self {
            Ranks::All => true,
            Ranks::Some(v) => v.binary_search(&r).is_ok(),
        }
    }

    fn index(&self, r: u32) -> usize {
        match self {
            Ranks::All => r as usize,
            Ranks::Some(v) => v.binary_search(&r).unwrap_or(0),
        }
    }

    fn list(&self, world: u32) -> Vec<u32> {
        match self {
            Ranks::All => (0..world).collect(),
            Ranks::Some(v) => v.clone(),
        }
    }

    fn meets(&self, other: &Ranks) -> bool {
        match (self, other) {
            (Ranks::All, _) | (_, Ranks::All) => true,
            (Ranks::Some(a), Ranks::Some(b)) => {
                let (small, big) = if a.len() < b.len() { (a, b) } else { (b, a) };
                small.iter().any(|r| big.binary_search(r).is_ok())
            }
        }
    }
}

struct Resolver<'a> {
    file: &'a str,
    platform: &'a Platform,
    names: HashMap<String, u32>,
}

impl Resolver<'_> {
    fn err(&self, field: &str, m: impl Into<String>) -> InputError {
        InputError::field(self.file, field, m)
    }

    fn rank(&self, field: &str, name: &str) -> Result<u32> {
        let &v = self.names.get(name).ok_or_else(|| self.err(field, format!("no node '{name}' in the platform")))?;
        let kind = self.platform.kinds[v as usize];
        if kind != NodeKind::Gpu {
            return Err(self.err(field, format!("'{name}' is a {}, not an XPU", kind.name())));
        }
        self.platform.rank_on(v).ok_or_else(|| self.err(field, format!("XPU '{name}' runs no rank")))
    }

    fn ranks(&self, field: &str, x: &Xpus) -> Result<Ranks> {
        match x {
            Xpus::All => Ok(Ranks::All),
            Xpus::Named(names) => {
                let mut v = names.iter().map(|n| self.rank(field, n)).collect::<Result<Vec<u32>>>()?;
                v.sort_unstable();
                if let Some(w) = v.windows(2).find(|w| w[0] == w[1]) {
                    let name = self.platform.node_name(self.platform.placement.device(w[0]));
                    return Err(self.err(field, format!("XPU '{name}' is named twice")));
                }
                Ok(Ranks::Some(v))
            }
        }
    }
}

fn vertex_label(id: &str, i: usize) -> String {
    if !id.contains(':') && !id.chars().any(char::is_control) && !id.is_empty() {
        format!("vertex '{id}'")
    } else {
        format!("vertex {i}")
    }
}

/// Lower `g` (read from `file`) onto `platform`.
pub fn lower(file: &str, g: &WorkloadGraph, platform: &Platform, o: &Options) -> Result<Lowered> {
    let world = platform.placement.ranks();
    let names: HashMap<String, u32> = (0..platform.node_count()).map(|v| (platform.node_name(v), v)).collect();
    let res = Resolver { file, platform, names };
    let iterations = g.iteration_count(file, o.iterations)?;
    let n = g.vertices.len();
    if u64::from(iterations) * n as u64 > MAX_VERTEX_RUNS {
        return Err(res.err(
            "iterations",
            format!("{iterations} iterations of {n} vertices is more than 2^26 vertex runs to simulate"),
        ));
    }
    let labels: Vec<String> = g.vertices.iter().enumerate().map(|(i, v)| vertex_label(&v.id, i)).collect();
    // Ranks of every vertex.
    let mut ranks = Vec::with_capacity(n);
    // The sending rank of each p2p vertex.
    let mut p2p_src = vec![u32::MAX; n];
    for (i, v) in g.vertices.iter().enumerate() {
        let at = |f: &str| format!("{}: {f}", labels[i]);
        ranks.push(match &v.kind {
            VertexKind::Compute(c) => res.ranks(&at("xpu"), &c.xpus)?,
            VertexKind::Communication(c) => match &c.pattern {
                Pattern::Collective { participants, .. } => res.ranks(&at("participants"), participants)?,
                Pattern::P2p { src, dst } => {
                    let (a, b) = (res.rank(&at("src"), src)?, res.rank(&at("dst"), dst)?);
                    if a == b {
                        return Err(res.err(&at("dst"), format!("'{dst}' is also the source")));
                    }
                    p2p_src[i] = a;
                    Ranks::Some(if a < b { vec![a, b] } else { vec![b, a] })
                }
            },
        });
    }
    for (i, e) in g.edges.iter().enumerate() {
        let (s, t) = (e.source as usize, e.target as usize);
        if !ranks[s].meets(&ranks[t]) {
            return Err(res.err(
                &super::json::edge_label(i, &g.vertices, e),
                "the two vertices share no XPU (data moves between XPUs through a communication vertex)",
            ));
        }
    }
    // Memory placement, in dependency order, copies in rank order.
    let mut mem = Memories::new(platform);
    let mut placed_table: Vec<Placed> = Vec::new();
    let mut placed_ids: HashMap<(u64, u64, u32, bool), u32> = HashMap::new();
    let mut placed: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut sources: Vec<Source> = Vec::new();
    let mut spilled = 0u64;
    for &v in &g.order {
        let VertexKind::Compute(c) = &g.vertices[v as usize].kind else { continue };
        let field = format!("{}: bytes", labels[v as usize]);
        if c.bytes > mem.largest {
            return Err(res.err(
                &field,
                format!(
                    "{:e} bytes is more than any memory device can hold (the largest holds {:e})",
                    c.bytes, mem.largest
                ),
            ));
        }
        let want_node = match &c.memory {
            Memory::Node(name) => {
                let at = format!("{}: memory", labels[v as usize]);
                let &m =
                    res.names.get(name).ok_or_else(|| res.err(&at, format!("no node '{name}' in the platform")))?;
                match platform.kinds[m as usize] {
                    NodeKind::Memory | NodeKind::Gpu => Some(m),
                    k => return Err(res.err(&at, format!("'{name}' is a {}, not a memory device", k.name()))),
                }
            }
            _ => None,
        };
        let list = ranks[v as usize].list(world);
        let mut ids = Vec::with_capacity(list.len());
        for r in list {
            let want = match (&c.memory, want_node) {
                (Memory::Auto, _) => Want::Auto,
                (Memory::Local, _) => Want::Local,
                (_, Some(m)) if m == platform.placement.device(r) => Want::Local,
                (_, Some(m)) if platform.kinds[m as usize] == NodeKind::Gpu => {
                    return Err(res.err(
                        &format!("{}: memory", labels[v as usize]),
                        format!("'{}' is another XPU: put remote data on a memory node", platform.node_name(m)),
                    ))
                }
                (_, Some(m)) => Want::Node(m),
                (_, None) => Want::Auto,
            };
            let p = mem.place(r, c.bytes, want).map_err(|m| res.err(&field, m))?;
            if p.remote > 0.0 {
                spilled += 1;
                if !sources.contains(&p.source) {
                    sources.push(p.source);
                }
            }
            let key = (p.local.to_bits(), p.remote.to_bits(), source_code(p.source), p.cxl);
            let id = *placed_ids.entry(key).or_insert_with(|| {
                placed_table.push(p);
                (placed_table.len() - 1) as u32
            });
            ids.push(id);
        }
        placed[v as usize] = ids;
    }
    sources.sort_unstable();
    // Compute time of each (vertex, XPU spec), by rank.
    let spec_of = |r: u32| platform.attrs.get(platform.placement.device(r) as usize).and_then(|a| a.xpu.as_ref());
    let compute_ns = |v: usize, r: u32, p: &Placed| -> Result<(OpKind, f64, bool)> {
        let VertexKind::Compute(c) = &g.vertices[v].kind else { unreachable!("compute vertices only") };
        let name = || platform.node_name(platform.placement.device(r));
        let spec = spec_of(r).ok_or_else(|| {
            res.err(&format!("{}: xpu", labels[v]), format!("XPU '{}' has no FLOPS figures in this platform", name()))
        })?;
        let flops = spec.flops(c.dtype).ok_or_else(|| {
            res.err(
                &format!("{}: dtype", labels[v]),
                format!("XPU '{}' has no {} FLOPS figure", name(), c.dtype.name()),
            )
        })?;
        let coherent = p.remote > 0.0
            && match o.access {
                Access::Auto => p.cxl,
                Access::Copy => false,
                Access::Coherent => true,
            };
        // HBM traffic while computing: everything after a copy, the local part when reading in place.
        let hbm = if coherent { p.local } else { c.bytes };
        let ns = roofline_ns(c.flops, Some(flops), hbm, spec.memory_bandwidth);
        let work = Work { flops: c.flops, bytes: hbm, dtype: c.dtype };
        Ok((OpKind::Compute { ns, work: Some(work) }, p.remote, coherent))
    };
    // Rank classes: ranks with the same program.
    let mut class_of_sig: HashMap<Vec<u64>, u32> = HashMap::new();
    let mut rank_class = Vec::with_capacity(world as usize);
    let mut reps: Vec<u32> = Vec::new();
    let mut sig = Vec::new();
    for r in 0..world {
        sig.clear();
        for &v in &g.order {
            let v = v as usize;
            if !ranks[v].contains(r) {
                continue;
            }
            // A p2p vertex sends on one rank and receives on the other.
            sig.push(v as u64 | u64::from(p2p_src[v] == r) << 40);
            if matches!(g.vertices[v].kind, VertexKind::Compute(_)) {
                let p = &placed_table[placed[v][ranks[v].index(r)] as usize];
                let (compute, remote, coherent) = compute_ns(v, r, p)?;
                let OpKind::Compute { ns, work: Some(work) } = compute else {
                    unreachable!("compute_ns gives computes")
                };
                sig.extend([ns.to_bits(), work.bytes.to_bits(), remote.to_bits()]);
                sig.extend([source_code(p.source) as u64, coherent as u64]);
            }
        }
        let next = reps.len() as u32;
        let c = *class_of_sig.entry(sig.clone()).or_insert(next);
        if c == next {
            reps.push(r);
        }
        rank_class.push(c);
    }
    // Groups: one per collective participant set and communicator (per vertex when concurrent),
    // one per p2p pair (likewise), one per read source.
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of: HashMap<(Ranks, Option<&str>, usize), GroupId> = HashMap::new();
    let mut vertex_group = vec![0 as GroupId; n];
    for (v, vx) in g.vertices.iter().enumerate() {
        let VertexKind::Communication(c) = &vx.kind else { continue };
        let key = ranks[v].clone();
        let next = groups.len();
        let comm = c.communicator.as_deref();
        let id = *group_of.entry((key.clone(), comm, if o.concurrent { v } else { 0 })).or_insert(next as GroupId);
        if id as usize == next {
            if next >= u16::MAX as usize - sources.len() {
                return Err(res.err(&labels[v], "more than 65 000 distinct communicator groups"));
            }
            let mut name = match (&c.pattern, &key) {
                (_, Ranks::All) => "all XPUs".to_string(),
                (Pattern::P2p { src, dst }, _) => format!("{src}-{dst}"),
                (_, Ranks::Some(list)) => {
                    format!("{} XPUs from {}", list.len(), platform.node_name(platform.placement.device(list[0])))
                }
            };
            if let Some(comm) = comm {
                name = format!("{comm}: {name}");
            }
            groups.push(Group { name, members: Membership::Explicit(vec![key.list(world)]) });
        }
        vertex_group[v] = id;
    }
    let first_read = groups.len() as GroupId;
    for s in &sources {
        let name = match s {
            Source::Home => "read home memory".to_string(),
            Source::Node(m) => format!("read {}", platform.node_name(*m)),
        };
        groups.push(Group { name, members: Membership::Explicit(Vec::new()) });
    }
    let read_group = |s: Source| first_read + sources.iter().position(|&x| x == s).unwrap_or(0) as GroupId;
    // Programs, one per class, unrolled over the iterations.
    let mut in_edges: Vec<Vec<(u32, bool)>> = vec![Vec::new(); n];
    for e in &g.edges {
        in_edges[e.target as usize].push((e.source, e.not_first));
    }
    let mut programs = Vec::with_capacity(reps.len());
    let (mut op_iteration, mut op_role) = (Vec::new(), Vec::new());
    for &r in &reps {
        let mut p = Program::default();
        let (mut iters, mut roles) = (Vec::new(), Vec::new());
        let mut prev: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut cur: Vec<Vec<u32>> = vec![Vec::new(); n];
        for k in 0..iterations {
            for &v in &g.order {
                let v = v as usize;
                if !ranks[v].contains(r) {
                    continue;
                }
                let mut deps = Vec::new();
                for &(u, not_first) in &in_edges[v] {
                    match (not_first, k) {
                        (false, _) => deps.extend_from_slice(&cur[u as usize]),
                        (true, 0) => {}
                        (true, _) => deps.extend_from_slice(&prev[u as usize]),
                    }
                }
                let row = v as u32;
                let mut push = |p: &mut Program, kind: OpKind, deps: Vec<u32>, role: Role| {
                    iters.push(k);
                    roles.push(role);
                    p.push(Op::new(kind, deps, row, Phase::Other))
                };
                let ends = match &g.vertices[v].kind {
                    VertexKind::Compute(_) => {
                        let pl = placed_table[placed[v][ranks[v].index(r)] as usize];
                        let (compute, remote, coherent) = compute_ns(v, r, &pl)?;
                        if remote <= 0.0 {
                            vec![push(&mut p, compute, deps, Role::Compute)]
                        } else {
                            let read = OpKind::Collective {
                                collective: crate::workload::Collective::Broadcast,
                                group: read_group(pl.source),
                                bytes: remote as u64,
                            };
                            let read = push(&mut p, read, deps.clone(), Role::Read);
                            if coherent {
                                vec![read, push(&mut p, compute, deps, Role::Compute)]
                            } else {
                                vec![push(&mut p, compute, vec![read], Role::Compute)]
                            }
                        }
                    }
                    VertexKind::Communication(c) => match &c.pattern {
                        Pattern::Collective { collective, .. } => {
                            let kind =
                                OpKind::Collective { collective: *collective, group: vertex_group[v], bytes: c.bytes };
                            vec![push(&mut p, kind, deps, Role::Collective)]
                        }
                        Pattern::P2p { .. } => {
                            let Ranks::Some(pair) = &ranks[v] else { unreachable!("a p2p vertex has two ranks") };
                            let me = pair.iter().position(|&x| x == r).unwrap_or(0) as i32;
                            let peer = Peer { group: vertex_group[v], offset: 1 - 2 * me };
                            let kind = if r == p2p_src[v] {
                                OpKind::Send { peer, bytes: c.bytes, copy: false }
                            } else {
                                OpKind::Recv { peer, bytes: c.bytes, copy: false }
                            };
                            vec![push(&mut p, kind, deps, Role::P2p)]
                        }
                    },
                };
                cur[v] = ends;
            }
            std::mem::swap(&mut prev, &mut cur);
            for c in cur.iter_mut() {
                c.clear();
            }
        }
        programs.push(p);
        op_iteration.push(iters);
        op_role.push(roles);
    }
    let classes = reps.len() as u32;
    let workload = Workload {
        layout: Layout::megatron(1, 1, 1, world, 1),
        groups,
        programs,
        class_program: (0..classes).collect(),
        rank_class,
        rows: g.vertices.iter().map(|v| v.id.clone()).collect(),
    };
    Ok(Lowered {
        workload,
        first_read,
        reads: sources,
        home: mem.home.clone(),
        iterations,
        op_iteration,
        op_role,
        placed_bytes: mem.placed_bytes,
        spilled,
    })
}

fn source_code(s: Source) -> u32 {
    match s {
        Source::Home => u32::MAX,
        Source::Node(m) => m,
    }
}
