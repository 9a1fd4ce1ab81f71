//! An MSCCL program as our schedule: its send/receive pairs matched into transfers, its
//! dependencies checked for cycles, and the transfers levelised into phases (module
//! documentation of [`super`]).

use super::xml::{Step, Xml};
use crate::collective::{send, Phase, Protocol};
use crate::error::InputError;
use crate::workload::Collective;

/// `chunks` chunks sent from `src` to `dst` (GPU ids = group ranks) on channel `chan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Move {
    pub chan: u32,
    pub src: u32,
    pub dst: u32,
    pub chunks: u32,
}

/// Moves that run together, `repeat` times back to back.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub moves: Vec<Move>,
    pub repeat: u32,
}

/// A checked MSCCL program, levelised.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub name: String,
    pub collective: Collective,
    pub protocol: Protocol,
    pub ngpus: u32,
    pub nchunksperloop: u32,
    pub levels: Vec<Level>,
}

/// A step of the whole program: where it is and what it waits for.
struct Node<'a> {
    gpu: u32,
    tb: u32,
    chan: u32,
    send: Option<u32>,
    step: &'a Step,
    /// The previous step of its thread block, and the step its `depid`/`deps` name.
    prev: Option<usize>,
    dep: Option<usize>,
    /// The send step whose data this step receives.
    sender: Option<usize>,
}

impl Program {
    /// Read and check `text`, an MSCCL algorithm file named `file` in errors.
    pub fn parse(file: &str, text: &str) -> Result<Program, InputError> {
        let xml = super::xml::parse(file, text)?;
        let mut nodes = nodes(&xml);
        match_sends(file, &xml, &mut nodes)?;
        let order = topological_order(file, &nodes)?;
        let levels = levelise(&nodes, &order);
        Ok(Program {
            name: xml.name.clone(),
            collective: xml.collective,
            protocol: xml.protocol,
            ngpus: xml.ngpus,
            nchunksperloop: xml.nchunksperloop,
            levels,
        })
    }

    /// The phases of a call of S = `bytes`: each level's moves of `chunks` · S / nchunksperloop.
    pub fn phases(&self, bytes: f64) -> Vec<Phase> {
        let chunk = bytes / self.nchunksperloop as f64;
        let phase = |l: &Level| Phase {
            transfers: l.moves.iter().map(|m| send(m.src, m.dst, m.chunks as f64 * chunk)).collect(),
            repeat: l.repeat,
        };
        self.levels.iter().map(phase).collect()
    }
}

/// Every step of every thread block, numbered in file order, with its in-block and `depid` links.
fn nodes(xml: &Xml) -> Vec<Node<'_>> {
    let mut nodes = Vec::new();
    for g in &xml.gpus {
        // Index of the first step of each thread block of this GPU.
        let mut first = Vec::with_capacity(g.tbs.len());
        let mut next = nodes.len();
        for tb in &g.tbs {
            first.push(next);
            next += tb.steps.len();
        }
        for (t, tb) in g.tbs.iter().enumerate() {
            for (k, step) in tb.steps.iter().enumerate() {
                let dep = step.dep.and_then(|(depid, deps)| {
                    let target = g.tbs.iter().position(|x| x.id == depid)?;
                    Some(first[target] + deps as usize)
                });
                let prev = (k > 0).then(|| first[t] + k - 1);
                nodes.push(Node { gpu: g.id, tb: tb.id, chan: tb.chan, send: tb.send, step, prev, dep, sender: None });
            }
        }
    }
    nodes
}

/// Pair every receive with its send: on a connection (sender, receiver, channel) the k-th step
/// that sends is received by the k-th step that receives. Where several thread blocks of a GPU
/// share one end of a connection (msccl-tools writes such programs), their steps take turns in
/// the order the GPU's own dependencies give them ([`local_order`]).
fn match_sends(file: &str, xml: &Xml, nodes: &mut [Node]) -> Result<(), InputError> {
    use std::collections::BTreeMap;
    let local = local_order(nodes);
    // Connection → its sending (receiving) steps, in turn.
    let (mut sends, mut recvs): (BTreeMap<_, Vec<usize>>, BTreeMap<_, Vec<usize>>) = Default::default();
    let mut i = 0;
    for g in &xml.gpus {
        for tb in &g.tbs {
            for (k, step) in tb.steps.iter().enumerate() {
                let (n, kind) = (i + k, step.kind);
                if let (true, Some(dst)) = (kind.sends(), tb.send) {
                    sends.entry((g.id, dst, tb.chan)).or_default().push(n);
                }
                if let (true, Some(src)) = (kind.receives(), tb.recv) {
                    recvs.entry((src, g.id, tb.chan)).or_default().push(n);
                }
            }
            i += tb.steps.len();
        }
    }
    for (&(src, dst, chan), out) in &mut sends {
        out.sort_by_key(|&n| local[n]);
        let Some(inn) = recvs.get_mut(&(src, dst, chan)) else {
            return Err(InputError::at(
                file,
                nodes[out[0]].step.line,
                "send",
                format!("gpu {src} sends to gpu {dst} on channel {chan}, but no tb of gpu {dst} receives from gpu {src} on it"),
            ));
        };
        inn.sort_by_key(|&n| local[n]);
        if out.len() != inn.len() {
            // Point at the first step without a partner.
            let (extra, field) =
                if out.len() > inn.len() { (out[inn.len()], "send") } else { (inn[out.len()], "recv") };
            return Err(InputError::at(
                file,
                nodes[extra].step.line,
                field,
                format!(
                    "gpu {src} sends {} times to gpu {dst} on channel {chan}, and gpu {dst} receives {} times: every send needs its receive",
                    out.len(),
                    inn.len()
                ),
            ));
        }
        for (&s, &r) in out.iter().zip(inn.iter()) {
            if nodes[s].step.cnt != nodes[r].step.cnt {
                return Err(InputError::at(
                    file,
                    nodes[r].step.line,
                    "cnt",
                    format!(
                        "receives {} chunks from gpu {src}, whose matching send (line {}) sends {}",
                        nodes[r].step.cnt, nodes[s].step.line, nodes[s].step.cnt
                    ),
                ));
            }
            nodes[r].sender = Some(s);
        }
    }
    if let Some((&(src, dst, chan), inn)) = recvs.iter().find(|(k, _)| !sends.contains_key(k)) {
        return Err(InputError::at(
            file,
            nodes[inn[0]].step.line,
            "recv",
            format!("gpu {dst} receives from gpu {src} on channel {chan}, but no tb of gpu {src} sends to it"),
        ));
    }
    Ok(())
}

/// Each step's position in an order that respects every GPU's own dependencies (the previous
/// step of its thread block, its `depid`/`deps`); steps on a cycle come last (the cycle is
/// reported by [`topological_order`]).
fn local_order(nodes: &[Node]) -> Vec<usize> {
    let local = |n: &Node| [n.prev, n.dep].into_iter().flatten().collect::<Vec<_>>();
    let waits: Vec<Vec<usize>> = nodes.iter().map(local).collect();
    let order = kahn(nodes.len(), |i| waits[i].iter().copied());
    let mut rank = vec![usize::MAX; nodes.len()];
    for (k, &i) in order.iter().enumerate() {
        rank[i] = k;
    }
    rank
}

/// Kahn's algorithm over `n` nodes, node i waiting for `waits(i)`: an order in which each node
/// comes after what it waits for, as far as one exists (nodes on or behind a cycle are left out).
fn kahn<I: Iterator<Item = usize>>(n: usize, waits: impl Fn(usize) -> I) -> Vec<usize> {
    let mut unblocks: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut waiting: Vec<u32> = (0..n)
        .map(|i| {
            waits(i).fold(0, |count, w| {
                unblocks[w].push(i);
                count + 1
            })
        })
        .collect();
    let mut order: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    let mut k = 0;
    while k < order.len() {
        for &j in &unblocks[order[k]] {
            waiting[j] -= 1;
            if waiting[j] == 0 {
                order.push(j);
            }
        }
        k += 1;
    }
    order
}

/// What a step waits for: the previous step of its thread block, its `depid`/`deps`, its sender.
fn waits_for<'a>(n: &'a Node) -> impl Iterator<Item = usize> + 'a {
    [n.prev, n.dep, n.sender].into_iter().flatten()
}

/// The steps in an order where each comes after everything it waits for; a cycle (a program
/// that would deadlock) is an error at one of its steps.
fn topological_order(file: &str, nodes: &[Node]) -> Result<Vec<usize>, InputError> {
    let order = kahn(nodes.len(), |i| waits_for(&nodes[i]));
    if order.len() == nodes.len() {
        return Ok(order);
    }
    let mut left = vec![true; nodes.len()];
    for &i in &order {
        left[i] = false;
    }
    // Every step left waits on another step left: walking back from one reaches a cycle.
    let mut seen = vec![false; nodes.len()];
    let mut at = (0..nodes.len()).find(|&i| left[i]).expect("some step is left");
    while !seen[at] {
        seen[at] = true;
        at = waits_for(&nodes[at]).find(|&w| left[w]).expect("a blocked step waits on a blocked step");
    }
    let n = &nodes[at];
    Err(InputError::at(
        file,
        n.step.line,
        "depid",
        format!(
            "gpu {} tb {}: this step waits on itself through a dependency cycle (the program would deadlock)",
            n.gpu, n.tb
        ),
    ))
}

/// Levelise: a transfer runs at level 1 + the level of what its sending step waits for (the
/// previous step of its thread block, its `depid`, and for a receive-and-send step the receive);
/// a step is done when its receive and its send are.
fn levelise(nodes: &[Node], order: &[usize]) -> Vec<Level> {
    let mut done = vec![0u32; nodes.len()];
    let mut sent = vec![0u32; nodes.len()];
    let mut moves: Vec<(u32, Move)> = Vec::new();
    for &i in order {
        let n = &nodes[i];
        let ready = [n.prev, n.dep].into_iter().flatten().map(|w| done[w]).max().unwrap_or(0);
        let received = n.sender.map_or(0, |s| sent[s]);
        let start = ready.max(received);
        done[i] = start;
        if let (true, Some(dst)) = (n.step.kind.sends(), n.send) {
            sent[i] = start + 1;
            done[i] = start + 1;
            moves.push((start + 1, Move { chan: n.chan, src: n.gpu, dst, chunks: n.step.cnt }));
        }
    }
    moves.sort_unstable();
    let mut levels: Vec<Level> = Vec::new();
    let mut k = 0;
    while k < moves.len() {
        let level = moves[k].0;
        let mut these = Vec::new();
        while k < moves.len() && moves[k].0 == level {
            if moves[k].1.chunks > 0 {
                these.push(moves[k].1);
            }
            k += 1;
        }
        match levels.last_mut() {
            _ if these.is_empty() => {}
            Some(last) if last.moves == these => last.repeat += 1,
            _ => levels.push(Level { moves: these, repeat: 1 }),
        }
    }
    levels
}
