//! An MSCCL program as our schedule: its send/receive pairs matched into transfers, its
//! dependencies checked for cycles, and the transfers levelised into phases (module
//! documentation of [`super`]).

use super::xml::{Step, Xml};
use crate::collective::Protocol;
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
/// that sends is received by the k-th step that receives. A connection is one thread block at
/// each end, as MSCCL's executor builds one per (peer, channel).
fn match_sends(file: &str, xml: &Xml, nodes: &mut [Node]) -> Result<(), InputError> {
    use std::collections::BTreeMap;
    // Connection → (thread block line, its sending / receiving steps in order).
    type Ends = BTreeMap<(u32, u32, u32), (usize, Vec<usize>)>;
    let (mut sends, mut recvs): (Ends, Ends) = (BTreeMap::new(), BTreeMap::new());
    let mut i = 0;
    for g in &xml.gpus {
        for tb in &g.tbs {
            for (side, peer, is_end) in [(&mut sends, tb.send, true), (&mut recvs, tb.recv, false)] {
                let Some(peer) = peer else { continue };
                let key = if is_end { (g.id, peer, tb.chan) } else { (peer, g.id, tb.chan) };
                let steps = (i..i + tb.steps.len())
                    .filter(|&n| if is_end { nodes[n].step.kind.sends() } else { nodes[n].step.kind.receives() })
                    .collect();
                if let Some((line, _)) = side.insert(key, (tb.line, steps)) {
                    let (verb, whom) = if is_end { ("send to", peer) } else { ("receive from", peer) };
                    return Err(InputError::at(
                        file,
                        tb.line,
                        if is_end { "send" } else { "recv" },
                        format!(
                            "two thread blocks of gpu {} {verb} gpu {whom} on channel {} (the other on line {line})",
                            g.id, tb.chan
                        ),
                    ));
                }
            }
            i += tb.steps.len();
        }
    }
    for (&(src, dst, chan), (line, out)) in &sends {
        let Some((rline, inn)) = recvs.get(&(src, dst, chan)) else {
            if out.is_empty() {
                continue;
            }
            return Err(InputError::at(
                file,
                nodes[out[0]].step.line,
                "send",
                format!("gpu {src} sends to gpu {dst} on channel {chan}, but no tb of gpu {dst} receives from gpu {src} on it"),
            ));
        };
        if out.len() != inn.len() {
            let (l, field) = if out.len() > inn.len() { (*line, "send") } else { (*rline, "recv") };
            return Err(InputError::at(
                file,
                l,
                field,
                format!(
                    "gpu {src} sends {} times to gpu {dst} on channel {chan}, and gpu {dst} receives {} times: every send needs its receive",
                    out.len(),
                    inn.len()
                ),
            ));
        }
        for (&s, &r) in out.iter().zip(inn) {
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
    for (&(src, dst, chan), (_, inn)) in &recvs {
        if !inn.is_empty() && !sends.contains_key(&(src, dst, chan)) {
            return Err(InputError::at(
                file,
                nodes[inn[0]].step.line,
                "recv",
                format!("gpu {dst} receives from gpu {src} on channel {chan}, but no tb of gpu {src} sends to it"),
            ));
        }
    }
    Ok(())
}

/// What a step waits for: the previous step of its thread block, its `depid`/`deps`, its sender.
fn waits_for<'a>(n: &'a Node) -> impl Iterator<Item = usize> + 'a {
    [n.prev, n.dep, n.sender].into_iter().flatten()
}

/// The steps in an order where each comes after everything it waits for; a cycle (a program
/// that would deadlock) is an error at one of its steps.
fn topological_order(file: &str, nodes: &[Node]) -> Result<Vec<usize>, InputError> {
    let mut waiting = vec![0u32; nodes.len()];
    let mut unblocks: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        for w in waits_for(n) {
            waiting[i] += 1;
            unblocks[w].push(i);
        }
    }
    let mut order: Vec<usize> = (0..nodes.len()).filter(|&i| waiting[i] == 0).collect();
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
    if order.len() == nodes.len() {
        return Ok(order);
    }
    // Every step left waits on another step left: walking back from one reaches a cycle.
    let mut seen = vec![false; nodes.len()];
    let mut at = (0..nodes.len()).find(|&i| waiting[i] > 0).expect("some step is left");
    while !seen[at] {
        seen[at] = true;
        at = waits_for(&nodes[at]).find(|&w| waiting[w] > 0).expect("a blocked step waits on a blocked step");
    }
    let n = &nodes[at];
    Err(InputError::at(
        file,
        n.step.line,
        "depid",
        format!("gpu {} tb {}: this step waits on itself through a dependency cycle (the program would deadlock)", n.gpu, n.tb),
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
