//! The discrete-event executor: runs every rank class's program against a [`NetworkModel`].
//!
//! An op starts when (a) all its dependencies have finished and (b) the previous op on its stream
//! has finished. Streams are the compute stream, one stream per communicator group, and one per
//! point-to-point peer and direction — the ordering CUDA streams and NCCL communicators impose.
//! A collective whose group lies inside one class starts as soon as that class issues it; one
//! that spans classes (and every send/recv pair) starts when the last party has issued it,
//! matched by per-communicator sequence number as NCCL matches them. A send/recv pair inside one
//! class (the k-th send to peer +o meets the k-th recv from peer −o) is a shift of the whole
//! class along its group ([`Comm::Shift`]): the ranks run in lock step, so each sends to its next
//! peer while it receives from its previous one. The pair is a copy (no NCCL call) only when
//! both ops say so (`copy`); a copy must stay inside its class, and a copy send never meets an
//! NCCL recv.
//!
//! Ranks of a class run in lock step, so the cost per event is independent of the rank count.

use std::collections::BinaryHeap;

use crate::due::Due;
use crate::error::{InputError, Result};
use crate::int_hash::IntMap;
use crate::network::{Comm, NetworkModel};
use crate::workload::{OpKind, Peer, Program, Stream, Workload};

/// Times of every op of one class, in ns from the start of the iteration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    /// When the op became ready to run (deps and stream done).
    pub issued: Vec<f64>,
    /// When it started executing (for communication: when every party had issued it).
    pub start: Vec<f64>,
    pub end: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    pub timelines: Vec<Timeline>,
    /// Iteration time: when the last op of any class finished.
    pub end_ns: f64,
    pub events: u64,
}

/// Dependency graph of a program, shared by all classes that run it.
struct Graph {
    indegree: Vec<u32>,
    succ_start: Vec<u32>,
    succ: Vec<u32>,
}

impl Graph {
    fn new(p: &Program) -> Graph {
        let n = p.ops.len();
        // Each op's predecessors (its deps and the previous op on its stream, sorted, without
        // repeats), all in one list: op i's are preds[pred_start[i]..pred_start[i + 1]].
        let mut preds: Vec<u32> = Vec::with_capacity(n * 2);
        let mut pred_start: Vec<u32> = Vec::with_capacity(n + 1);
        let mut last: IntMap<Stream, u32> = IntMap::default();
        for (i, op) in p.ops.iter().enumerate() {
            let from = preds.len();
            pred_start.push(from as u32);
            preds.extend_from_slice(&op.deps);
            if let Some(prev) = last.insert(op.stream(), i as u32) {
                preds.push(prev);
            }
            preds[from..].sort_unstable();
            let mut kept = from;
            for k in from..preds.len() {
                if k == from || preds[k] != preds[kept - 1] {
                    preds[kept] = preds[k];
                    kept += 1;
                }
            }
            preds.truncate(kept);
        }
        pred_start.push(preds.len() as u32);
        let of = |i: usize| &preds[pred_start[i] as usize..pred_start[i + 1] as usize];
        let mut count = vec![0u32; n + 1];
        for &d in &preds {
            count[d as usize + 1] += 1;
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut fill = count.clone();
        let mut succ = vec![0u32; count[n] as usize];
        for i in 0..n {
            for &d in of(i) {
                succ[fill[d as usize] as usize] = i as u32;
                fill[d as usize] += 1;
            }
        }
        let indegree = pred_start.windows(2).map(|w| w[1] - w[0]).collect();
        Graph { indegree, succ_start: count, succ }
    }
}

/// A compute op finishing: (class, op).
type Event = Due<(u32, u32)>;

/// Where communications are matched: a communicator spanning several classes, or a class pair on
/// a communicator.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
enum Channel {
    Coll {
        group: u16,
        first_class: u32,
    },
    /// `offset` is the sender's peer offset, so messages in opposite pipeline directions between
    /// the same two classes (interleaved schedules, p = 2) never match each other; `group`, as NCCL
    /// matches sends per communicator, so transfers on two communicators (a workload graph's p2p
    /// vertices under `--concurrent-collectives`) never meet each other's receives.
    P2p {
        src: u32,
        dst: u32,
        group: u16,
        offset: i32,
    },
}

/// A communication waiting for its parties, or in flight.
struct Rendezvous {
    parties: Vec<(u32, u32)>,
    needed: usize,
    /// As the first party issued it; the others must agree.
    comm: Comm,
}

pub struct Executor<'w> {
    w: &'w Workload,
    graphs: Vec<Graph>,
    reps: Vec<u32>,
    /// Classes taking part in each (class, group) collective; absent = the class alone.
    coll_parties: IntMap<(u32, u16), Vec<u32>>,
    /// (class, peer) → (peer's class, peer rank), for every peer the programs use.
    peers: IntMap<(u32, Peer), (u32, u32)>,
}

impl<'w> Executor<'w> {
    pub fn new(w: &'w Workload) -> Result<Executor<'w>> {
        let reps = w.class_representatives();
        if let Some(c) = reps.iter().position(|&r| r == u32::MAX) {
            return Err(InputError::internal("executor", format!("rank class {c} has no ranks")));
        }
        let graphs = w.programs.iter().map(Graph::new).collect();
        let mut coll_parties = IntMap::default();
        for (class, &rep) in reps.iter().enumerate() {
            for g in 0..w.groups.len() as u16 {
                let mut classes: Vec<u32> = w.group_members(g, rep).iter().map(|&r| w.rank_class[r as usize]).collect();
                classes.sort_unstable();
                classes.dedup();
                if classes.len() > 1 {
                    coll_parties.insert((class as u32, g), classes);
                }
            }
        }
        let mut peers = IntMap::default();
        for (class, &prog) in w.class_program.iter().enumerate() {
            for op in &w.programs[prog as usize].ops {
                if let OpKind::Send { peer, .. } | OpKind::Recv { peer, .. } = op.kind {
                    // The mirrored peer too: a recv inside the class names the shift by its send.
                    for peer in [peer, Peer { offset: peer.offset.wrapping_neg(), ..peer }] {
                        peers.entry((class as u32, peer)).or_insert_with(|| {
                            let other = w.peer_rank(reps[class], peer);
                            (w.rank_class[other as usize], other)
                        });
                    }
                }
            }
        }
        Ok(Executor { w, graphs, reps, coll_parties, peers })
    }

    fn peer_class(&self, class: u32, peer: Peer) -> (u32, u32) {
        self.peers[&(class, peer)]
    }

    /// A send of `class` to `peer` from rank `src` to `dst`: a shift when `dst` is in the class.
    fn transfer(&self, class: u32, peer: Peer, (src, dst): (u32, u32), bytes: u64, copy: bool) -> Comm {
        if self.w.rank_class[dst as usize] == class {
            Comm::Shift { group: peer.group, offset: peer.offset, class, src, dst, bytes, copy }
        } else {
            Comm::Transfer { src, dst, bytes }
        }
    }

    /// Run one iteration. `progress` is called with the fraction of ops finished, now and then;
    /// returning false stops the run (an interrupted run is an error).
    pub fn run(&self, model: &mut dyn NetworkModel, progress: &mut dyn FnMut(f64) -> bool) -> Result<Execution> {
        let w = self.w;
        model.prepare(w)?;
        let mut remaining: Vec<Vec<u32>> =
            w.class_program.iter().map(|&p| self.graphs[p as usize].indegree.clone()).collect();
        let mut tl: Vec<Timeline> = w
            .class_program
            .iter()
            .map(|&p| {
                let n = w.programs[p as usize].ops.len();
                Timeline { issued: vec![f64::NAN; n], start: vec![f64::NAN; n], end: vec![f64::NAN; n] }
            })
            .collect();
        let total_ops: u64 = tl.iter().map(|t| t.end.len() as u64).sum();
        let mut finished_ops = 0u64;
        let mut heap: BinaryHeap<Event> = BinaryHeap::new();
        let mut seq = 0u64;
        let mut comms: Vec<Rendezvous> = Vec::new();
        // Rendezvous still waiting for parties: (channel, sequence number) → index in `comms`.
        let mut open: IntMap<(Channel, u64), usize> = IntMap::default();
        let mut counters: IntMap<(Channel, u32, bool), u64> = IntMap::default();
        let mut ready: Vec<(u32, u32)> = Vec::new();
        for (c, rem) in remaining.iter().enumerate() {
            for (i, &d) in rem.iter().enumerate() {
                if d == 0 {
                    ready.push((c as u32, i as u32));
                }
            }
        }
        // Popped from the back: issue in (class, op) order, as after every later step.
        ready.reverse();
        let mut now = 0.0f64;
        let mut done: Vec<u64> = Vec::new();
        let mut events = 0u64;
        let mut next_report = total_ops / 20 + 1;
        loop {
            // Issue everything that became ready at `now`.
            while let Some((c, i)) = ready.pop() {
                let ci = c as usize;
                tl[ci].issued[i as usize] = now;
                let op = &w.programs[w.class_program[ci] as usize].ops[i as usize];
                let (comm, channel) = match op.kind {
                    OpKind::Compute { ns, .. } => {
                        tl[ci].start[i as usize] = now;
                        seq += 1;
                        heap.push(Due { time: now + ns.max(0.0), seq, item: (c, i) });
                        continue;
                    }
                    OpKind::Collective { collective, group, bytes } => {
                        let parties = self.coll_parties.get(&(c, group));
                        // Every party names the same (first) class, so the matched comms agree.
                        let class = parties.map_or(c, |classes| classes[0]);
                        let comm = Comm::Collective { collective, group, bytes, class };
                        let channel = parties
                            .map(|classes| (Channel::Coll { group, first_class: classes[0] }, classes.len(), false));
                        (comm, channel)
                    }
                    OpKind::Send { peer, bytes, copy } => {
                        let (dc, dst) = self.peer_class(c, peer);
                        if copy && dc != c {
                            return Err(copy_outside_error(w, (c, i), dc));
                        }
                        let comm = self.transfer(c, peer, (self.reps[ci], dst), bytes, copy);
                        let channel = Channel::P2p { src: c, dst: dc, group: peer.group, offset: peer.offset };
                        (comm, Some((channel, 2, false)))
                    }
                    OpKind::Recv { peer, bytes, copy } => {
                        let (sc, src) = self.peer_class(c, peer);
                        let comm = match sc == c {
                            // Inside the class: the shift its matching send names.
                            true => {
                                let send = Peer { offset: peer.offset.wrapping_neg(), ..peer };
                                self.transfer(c, send, (self.reps[ci], self.peer_class(c, send).1), bytes, copy)
                            }
                            false if copy => return Err(copy_outside_error(w, (c, i), sc)),
                            false => Comm::Transfer { src, dst: self.reps[ci], bytes },
                        };
                        let channel = Channel::P2p { src: sc, dst: c, group: peer.group, offset: -peer.offset };
                        (comm, Some((channel, 2, true)))
                    }
                };
                let idx = match channel {
                    None => {
                        comms.push(Rendezvous { parties: vec![(c, i)], needed: 1, comm });
                        comms.len() - 1
                    }
                    Some((ch, needed, is_recv)) => {
                        // The k-th op of this class on this channel meets the k-th of its peers.
                        let cnt = counters.entry((ch, c, is_recv)).or_insert(0);
                        let key = (ch, *cnt);
                        *cnt += 1;
                        let ix = *open.entry(key).or_insert_with(|| {
                            comms.push(Rendezvous { parties: Vec::new(), needed, comm });
                            comms.len() - 1
                        });
                        if comms[ix].comm != comm {
                            return Err(mismatch_error(w, &comms[ix], (c, i), &comm));
                        }
                        comms[ix].parties.push((c, i));
                        if comms[ix].parties.len() == needed {
                            open.remove(&key);
                        }
                        ix
                    }
                };
                let rz = &comms[idx];
                if rz.parties.len() == rz.needed {
                    for &(pc, pi) in &rz.parties {
                        tl[pc as usize].start[pi as usize] = now;
                    }
                    model.start(now, &comm, idx as u64)?;
                }
            }
            // Advance to the next event: a compute end or a communication end.
            let t_comp = heap.peek().map(|e| e.time);
            let t_comm = model.next_completion();
            let t = match (t_comp, t_comm) {
                (None, None) => break,
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (Some(a), Some(b)) => a.min(b),
            };
            if !(t.is_finite() && t >= now) {
                return Err(InputError::internal(
                    "network model",
                    format!("a communication finishes at {t} ns, before now ({now} ns)"),
                ));
            }
            now = t;
            events += 1;
            let finish =
                |c: u32, i: u32, tl: &mut Vec<Timeline>, rem: &mut Vec<Vec<u32>>, ready: &mut Vec<(u32, u32)>| {
                    tl[c as usize].end[i as usize] = now;
                    let g = &self.graphs[w.class_program[c as usize] as usize];
                    for &s in &g.succ[g.succ_start[i as usize] as usize..g.succ_start[i as usize + 1] as usize] {
                        let r = &mut rem[c as usize][s as usize];
                        *r -= 1;
                        if *r == 0 {
                            ready.push((c, s));
                        }
                    }
                };
            while heap.peek().is_some_and(|e| e.time <= now) {
                let (class, op) = heap.pop().unwrap().item;
                finish(class, op, &mut tl, &mut remaining, &mut ready);
                finished_ops += 1;
            }
            if t_comm.is_some_and(|b| b <= now) {
                done.clear();
                model.complete_until(now, &mut done)?;
                for &tok in &done {
                    let parties = std::mem::take(&mut comms[tok as usize].parties);
                    for (c, i) in parties {
                        finish(c, i, &mut tl, &mut remaining, &mut ready);
                        finished_ops += 1;
                    }
                }
            }
            // Deterministic issue order regardless of completion order within one instant.
            ready.sort_unstable_by(|a, b| b.cmp(a));
            if finished_ops >= next_report {
                if !progress(finished_ops as f64 / total_ops.max(1) as f64) {
                    return Err(InputError::new("run", "interrupted"));
                }
                next_report = finished_ops + total_ops / 20 + 1;
            }
        }
        if finished_ops < total_ops {
            return Err(deadlock_error(w, &tl));
        }
        let end_ns = tl.iter().flat_map(|t| t.end.iter().copied()).fold(0.0, f64::max);
        let _ = progress(1.0);
        Ok(Execution { timelines: tl, end_ns, events })
    }
}

/// The row an op reports under.
fn row_of(w: &Workload, c: u32, i: u32) -> &str {
    let op = &w.programs[w.class_program[c as usize] as usize].ops[i as usize];
    w.rows.get(op.row as usize).map_or("?", |s| s.as_str())
}

/// Parties matched as one communication must issue the same one.
fn mismatch_error(w: &Workload, rz: &Rendezvous, (c, i): (u32, u32), comm: &Comm) -> InputError {
    let (fc, fi) = rz.parties[0];
    let (first, row) = (row_of(w, fc, fi), row_of(w, c, i));
    if let (Comm::Shift { copy: a, .. }, Comm::Shift { copy: b, .. }) = (rz.comm, *comm) {
        if a != b {
            return InputError::new(
                "workload",
                format!(
                    "copy: rank class {fc} op {fi} (row '{first}') has copy {a} but its matching send/recv, op {i} (row '{row}'), has copy {b}; a copy pair marks both ops"
                ),
            );
        }
    }
    InputError::new(
        "workload",
        format!(
            "mismatched communication: rank class {fc} op {fi} (row '{first}') issues {:?} but its peer, class {c} op {i} (row '{row}'), issues {comm:?}",
            rz.comm
        ),
    )
}

/// A copy (userbuffers) moves data between the ranks of one class only.
fn copy_outside_error(w: &Workload, (c, i): (u32, u32), peer_class: u32) -> InputError {
    InputError::new(
        "workload",
        format!(
            "copy: rank class {c} op {i} (row '{}') is a copy to or from rank class {peer_class}; a copy must stay inside its rank class (drop copy for an NCCL send/recv)",
            row_of(w, c, i)
        ),
    )
}

/// Ops that never ran mean unmatched communication (a send without its recv, a collective that
/// not every class issues): name the first one so the user can find it.
fn deadlock_error(w: &Workload, tl: &[Timeline]) -> InputError {
    for (c, t) in tl.iter().enumerate() {
        if let Some(i) = t.end.iter().position(|e| e.is_nan()) {
            let op = &w.programs[w.class_program[c] as usize].ops[i];
            let row = w.rows.get(op.row as usize).map_or("?", |s| s.as_str());
            return InputError::new(
                "workload",
                format!(
                    "deadlock: op {i} ({:?}, row '{row}') of rank class {c} never ran; its peers never issued the matching communication",
                    op.kind
                ),
            );
        }
    }
    InputError::new("workload", "deadlock")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposure::exposure;
    use crate::layout::{Axis, Layout};
    use crate::network::analytical::{Analytical, CollectiveCost, GroupShape};
    use crate::platform::Placement;
    use crate::workload::{Collective, Group, Membership, Op, Phase};

    /// Every collective takes 50 ns, every transfer 20 ns.
    struct Fixed;
    impl CollectiveCost for Fixed {
        fn collective_ns(&self, _: Collective, _: &GroupShape, _: u64) -> std::result::Result<f64, InputError> {
            Ok(50.0)
        }
        fn transfer_ns(&self, _: bool, _: u64) -> std::result::Result<f64, InputError> {
            Ok(20.0)
        }
    }

    fn op(kind: OpKind, deps: Vec<u32>) -> Op {
        Op::new(kind, deps, 0, Phase::Forward)
    }
    fn compute(ns: f64, deps: Vec<u32>) -> Op {
        op(OpKind::Compute { ns, work: None }, deps)
    }
    fn allreduce(group: u16, deps: Vec<u32>) -> Op {
        op(OpKind::Collective { collective: Collective::AllReduce, group, bytes: 1 }, deps)
    }

    /// Two pipeline stages of two TP ranks: groups TP (0) and PP (1).
    fn workload(programs: Vec<Vec<Op>>) -> Workload {
        let layout = Layout::megatron(2, 1, 1, 1, 2);
        let groups = vec![
            Group { name: "TP".into(), members: Membership::Dims(layout.mask(&[Axis::Tp])) },
            Group { name: "PP".into(), members: Membership::Dims(layout.mask(&[Axis::Pp])) },
        ];
        let n = programs.len() as u32;
        let rank_class = (0..4).map(|r| if n == 1 { 0 } else { layout.coord(r, Axis::Pp) }).collect();
        Workload {
            layout,
            groups,
            programs: programs.into_iter().map(|ops| Program { ops }).collect(),
            class_program: (0..n).collect(),
            rank_class,
            rows: vec!["row".into()],
        }
    }

    fn run(w: &Workload) -> Result<Execution> {
        Executor::new(w)?
            .run(&mut Analytical::new(Box::new(Fixed), Placement::servers(w.world_size(), 8)), &mut |_| true)
    }

    #[test]
    fn blocking_collective_sits_between_computes() {
        let w = workload(vec![vec![compute(100.0, vec![]), allreduce(0, vec![0]), compute(10.0, vec![1])]]);
        let e = run(&w).unwrap();
        assert_eq!(e.timelines[0].start, vec![0.0, 100.0, 150.0]);
        assert_eq!(e.end_ns, 160.0);
    }

    #[test]
    fn collectives_on_one_communicator_run_in_order() {
        // Two non-blocking all-reduces issued at 0 and 10 share the TP stream: 0–50, 50–100;
        // the compute in between does not wait for them.
        let ops = vec![allreduce(0, vec![]), compute(10.0, vec![]), allreduce(0, vec![1]), compute(5.0, vec![1])];
        let e = run(&workload(vec![ops])).unwrap();
        let t = &e.timelines[0];
        assert_eq!((t.start[2], t.end[2]), (50.0, 100.0));
        assert_eq!(t.issued[2], 50.0);
        assert_eq!(t.end[3], 15.0);
        assert_eq!(e.end_ns, 100.0);
    }

    #[test]
    fn send_and_recv_meet_across_stages() {
        let pp_next = Peer { group: 1, offset: 1 };
        let pp_prev = Peer { group: 1, offset: -1 };
        let stage0 = vec![compute(100.0, vec![]), op(OpKind::Send { peer: pp_next, bytes: 8, copy: false }, vec![0])];
        let stage1 = vec![op(OpKind::Recv { peer: pp_prev, bytes: 8, copy: false }, vec![]), compute(10.0, vec![0])];
        let w = workload(vec![stage0, stage1]);
        let e = run(&w).unwrap();
        let t1 = &e.timelines[1];
        // The recv is posted at 0 but moves data only once the send is posted at 100.
        assert_eq!((t1.issued[0], t1.start[0], t1.end[0]), (0.0, 100.0, 120.0));
        assert_eq!(t1.end[1], 130.0);
        assert_eq!(e.timelines[0].end[1], 120.0);
        // Stage 1 idles 100 ns with nothing in flight (bubble), then 20 ns of exposed transfer.
        let ex = exposure(&w.programs[1], t1, e.end_ns);
        assert_eq!((ex.idle_ns, ex.exposed[0], ex.compute_ns), (100.0, 20.0, 10.0));
    }

    #[test]
    fn sends_on_two_communicators_meet_their_own_receives() {
        // PP2 has PP's members. Stage 0 sends on PP after 100 ns, on PP2 at once; stage 1 posts
        // both receives at 0, PP's first: each meets the send of its own communicator.
        let mut w = workload(vec![
            vec![
                compute(100.0, vec![]),
                op(OpKind::Send { peer: Peer { group: 1, offset: 1 }, bytes: 8, copy: false }, vec![0]),
                op(OpKind::Send { peer: Peer { group: 2, offset: 1 }, bytes: 16, copy: false }, vec![]),
            ],
            vec![
                op(OpKind::Recv { peer: Peer { group: 1, offset: -1 }, bytes: 8, copy: false }, vec![]),
                op(OpKind::Recv { peer: Peer { group: 2, offset: -1 }, bytes: 16, copy: false }, vec![]),
            ],
        ]);
        w.groups.push(Group { name: "PP2".into(), members: w.groups[1].members.clone() });
        let e = run(&w).unwrap();
        assert_eq!((e.timelines[1].start[0], e.timelines[1].start[1]), (100.0, 0.0));
    }

    #[test]
    fn a_collective_spanning_stages_waits_for_both() {
        let s0 = vec![compute(30.0, vec![]), allreduce(1, vec![0])];
        let s1 = vec![compute(70.0, vec![]), allreduce(1, vec![0])];
        let e = run(&workload(vec![s0, s1])).unwrap();
        assert_eq!(e.timelines[0].start[1], 70.0);
        assert_eq!(e.timelines[1].end[1], 120.0);
    }

    /// A transfer costs 20 ns of call latency plus 1 ns/B.
    struct PerByte;
    impl CollectiveCost for PerByte {
        fn collective_ns(&self, _: Collective, _: &GroupShape, _: u64) -> std::result::Result<f64, InputError> {
            Ok(50.0)
        }
        fn transfer_ns(&self, _: bool, bytes: u64) -> std::result::Result<f64, InputError> {
            Ok(20.0 + bytes as f64)
        }
    }

    /// One class of two TP ranks: compute 5 ns, each rank sends 8 B to its next TP peer and
    /// receives from its previous, then computes 10 ns after the recv.
    fn in_class_pair(send_copy: bool, recv_copy: bool) -> Result<Execution> {
        let next = Peer { group: 0, offset: 1 };
        let prev = Peer { group: 0, offset: -1 };
        let ops = vec![
            compute(5.0, vec![]),
            op(OpKind::Send { peer: next, bytes: 8, copy: send_copy }, vec![0]),
            op(OpKind::Recv { peer: prev, bytes: 8, copy: recv_copy }, vec![0]),
            compute(10.0, vec![2]),
        ];
        let w = workload(vec![ops]);
        Executor::new(&w)?.run(&mut Analytical::new(Box::new(PerByte), Placement::servers(4, 8)), &mut |_| true)
    }

    #[test]
    fn a_marked_copy_pair_inside_one_class_is_one_shift_without_call_latency() {
        // The pair is one shift, priced as a copy: 28 − 20 ns.
        let e = in_class_pair(true, true).unwrap();
        let t = &e.timelines[0];
        assert_eq!((t.start[1], t.end[1], t.start[2], t.end[2]), (5.0, 13.0, 5.0, 13.0));
        assert_eq!(e.end_ns, 23.0);
    }

    #[test]
    fn an_unmarked_pair_inside_one_class_pays_its_nccl_latency() {
        // A p2p ring inside one class (ring attention, a user's ring): NCCL sends, 20 + 8 ns.
        let e = in_class_pair(false, false).unwrap();
        let t = &e.timelines[0];
        assert_eq!((t.start[1], t.end[1], t.start[2], t.end[2]), (5.0, 33.0, 5.0, 33.0));
        assert_eq!(e.end_ns, 43.0);
    }

    #[test]
    fn a_copy_must_be_marked_on_both_ops_and_stay_in_its_class() {
        for (send, recv) in [(true, false), (false, true)] {
            let err = in_class_pair(send, recv).unwrap_err();
            assert!(
                err.message.starts_with("copy: rank class 0 op 1")
                    && err.message.contains("a copy pair marks both ops"),
                "{err}"
            );
        }
        // Across pipeline stages (two classes) a copy is refused, on either side.
        let pp_next = Peer { group: 1, offset: 1 };
        let pp_prev = Peer { group: 1, offset: -1 };
        for (send, recv) in [(true, true), (false, true)] {
            let s0 = vec![op(OpKind::Send { peer: pp_next, bytes: 8, copy: send }, vec![])];
            let s1 = vec![op(OpKind::Recv { peer: pp_prev, bytes: 8, copy: recv }, vec![])];
            let err = run(&workload(vec![s0, s1])).unwrap_err();
            assert!(err.message.contains("a copy must stay inside its rank class"), "{err}");
        }
    }

    #[test]
    fn a_shift_runs_at_the_pace_of_its_pairs_across_servers() {
        // One class of 4 TP ranks on servers of 2 GPUs: the lowest rank's next peer shares its
        // server, but ranks 1 and 3 copy to the other server, and the ranks shift in lock step,
        // so the copy takes the cross-server time (10 ns/B against 1 ns/B inside a server).
        struct TwoSpeeds;
        impl CollectiveCost for TwoSpeeds {
            fn collective_ns(&self, _: Collective, _: &GroupShape, _: u64) -> std::result::Result<f64, InputError> {
                Ok(50.0)
            }
            fn transfer_ns(&self, same_server: bool, bytes: u64) -> std::result::Result<f64, InputError> {
                Ok(20.0 + bytes as f64 * if same_server { 1.0 } else { 10.0 })
            }
        }
        let layout = Layout::megatron(4, 1, 1, 1, 1);
        let shift = vec![
            op(OpKind::Send { peer: Peer { group: 0, offset: 1 }, bytes: 8, copy: true }, vec![]),
            op(OpKind::Recv { peer: Peer { group: 0, offset: -1 }, bytes: 8, copy: true }, vec![]),
        ];
        for (per_server, want) in [(2, 80.0), (4, 8.0)] {
            let w = Workload {
                groups: vec![Group { name: "TP".into(), members: Membership::Dims(layout.mask(&[Axis::Tp])) }],
                layout: layout.clone(),
                programs: vec![Program { ops: shift.clone() }],
                class_program: vec![0],
                rank_class: vec![0; 4],
                rows: vec!["row".into()],
            };
            let e = Executor::new(&w)
                .unwrap()
                .run(&mut Analytical::new(Box::new(TwoSpeeds), Placement::servers(4, per_server)), &mut |_| true)
                .unwrap();
            assert_eq!(e.end_ns, want, "{per_server} GPUs per server");
        }
    }

    #[test]
    fn matched_parties_must_agree() {
        let s0 = vec![op(OpKind::Send { peer: Peer { group: 1, offset: 1 }, bytes: 8, copy: false }, vec![])];
        let s1 = vec![op(OpKind::Recv { peer: Peer { group: 1, offset: -1 }, bytes: 1000, copy: false }, vec![])];
        let err = run(&workload(vec![s0, s1])).unwrap_err();
        assert!(err.message.contains("mismatched communication"), "{err}");
    }

    #[test]
    fn an_unmatched_recv_is_reported_not_hung() {
        let recv = op(OpKind::Recv { peer: Peer { group: 1, offset: -1 }, bytes: 8, copy: false }, vec![]);
        let err = run(&workload(vec![vec![compute(1.0, vec![])], vec![recv]])).unwrap_err();
        assert!(err.message.contains("deadlock"), "{err}");
    }

    #[test]
    fn exposure_counts_only_idle_time_with_comm_in_flight() {
        // compute 0–100 with a non-blocking all-reduce 0–50 under it, then a blocking one
        // 100–150, then compute 150–160: 50 ns exposed, all on the second all-reduce.
        let ops = vec![allreduce(0, vec![]), compute(100.0, vec![]), allreduce(0, vec![1]), compute(10.0, vec![2])];
        let w = workload(vec![ops]);
        let e = run(&w).unwrap();
        let ex = exposure(&w.programs[0], &e.timelines[0], e.end_ns);
        assert_eq!(ex.exposed, vec![0.0, 0.0, 50.0, 0.0]);
        assert_eq!((ex.compute_ns, ex.idle_ns), (110.0, 0.0));
    }
}
