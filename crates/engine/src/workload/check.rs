//! The invariants of a [`Workload`], checked where one comes from outside the engine (a JSON
//! file, Python's columns), so the executor can rely on them.
//!
//! Every rank is in one class, every class has ranks and a program; groups name layout axes (of
//! a layout of every rank) or list disjoint, equal-sized instances of ranks in range; ranks of
//! one class meet the same classes in every group (the class runs in lock step, its first rank
//! pairing with the first ranks of its peers' classes); ops refer to existing groups, rows and
//! ops, with peer offsets that negate; computes take a non-negative time of at most [`MAX_NS`]
//! (so no sum of them overflows to infinity); and the dependencies together with the stream
//! order (each op waits for the previous op on its [`Stream`]) form no cycle.
//! Errors name the place as a JSON path, e.g. `programs[0].ops[7].deps[1]`.

use std::collections::HashMap;

use super::{Membership, OpKind, Program, Stream, Workload};
use crate::error::{InputError, Result};

/// The longest a compute may take: 10^18 ns, about 32 years. Any bound keeps the executor's
/// clock finite (a program's computes add up); this one is far beyond any real kernel.
pub const MAX_NS: f64 = 1e18;
/// The most FLOPs or bytes a compute op may state (1e30: far beyond any run, finite).
pub const MAX_WORK: f64 = 1e30;

impl Workload {
    /// Check every invariant; `file` names the source in errors.
    pub fn check(&self, file: &str) -> Result<()> {
        let bad = |path: String, message: String| Err(InputError::field(file, &path, message));
        let ranks = self.rank_class.len();
        if ranks == 0 {
            return bad("rank_class".into(), "a workload needs at least one rank".into());
        }
        let classes = self.class_program.len();
        let mut populated = vec![false; classes];
        for (r, &c) in self.rank_class.iter().enumerate() {
            match populated.get_mut(c as usize) {
                Some(p) => *p = true,
                None => {
                    return bad(format!("rank_class[{r}]"), format!("class {c} does not exist ({classes} classes)"))
                }
            }
        }
        if let Some(c) = populated.iter().position(|p| !p) {
            return bad(format!("class_program[{c}]"), format!("class {c} has no ranks"));
        }
        let programs = self.programs.len();
        if let Some(c) = self.class_program.iter().position(|&p| p as usize >= programs) {
            return bad(
                format!("class_program[{c}]"),
                format!("program {} does not exist ({programs} programs)", self.class_program[c]),
            );
        }
        for (a, (axis, size)) in self.layout.axes.iter().enumerate() {
            if *size == 0 {
                return bad(format!("layout[{a}].size"), "must be at least 1".into());
            }
            if self.layout.axes[..a].iter().any(|(b, _)| b == axis) {
                return bad(format!("layout[{a}].axis"), "the axis comes twice".into());
            }
        }
        let world = self.layout.axes.iter().try_fold(1u32, |w, &(_, size)| w.checked_mul(size));
        let mut names = HashMap::new();
        for (g, group) in self.groups.iter().enumerate() {
            if let Some(first) = names.insert(group.name.as_str(), g) {
                return bad(format!("groups[{g}].name"), format!("'{}' is also groups[{first}]", group.name));
            }
            match &group.members {
                Membership::Dims(mask) => {
                    if *mask >> self.layout.axes.len() != 0 {
                        return bad(format!("groups[{g}].axes"), "names an axis the layout lacks".into());
                    }
                    // Even a group of no axes (each rank alone) finds its rank by layout coordinates.
                    if world.map(|w| w as usize) != Some(ranks) {
                        let spans: f64 = self.layout.axes.iter().map(|&(_, size)| f64::from(size)).product();
                        return bad(
                            "layout".into(),
                            format!("spans {spans} ranks but the workload has {ranks} (groups[{g}] is defined by it)"),
                        );
                    }
                }
                Membership::Explicit(instances) => check_instances(instances, ranks, g).or_else(|(p, m)| bad(p, m))?,
            }
        }
        for (p, program) in self.programs.iter().enumerate() {
            self.check_program(program, p).or_else(|(path, m)| bad(path, m))?;
        }
        for g in 0..self.groups.len() {
            self.check_lock_step(g).or_else(|(path, m)| bad(path, m))?;
        }
        Ok(())
    }

    /// The executor and the network models act for a class through its first rank, so every
    /// rank of a class must meet the same classes in group `g`: its instance spans the same
    /// classes, and each point-to-point peer the class's program names is of the same class;
    /// and a class's first rank must pair with the first rank of its peer's class (or a peer of
    /// its own class: the executor runs that pair as a shift of the whole class).
    fn check_lock_step(&self, g: usize) -> std::result::Result<(), (String, String)> {
        let ranks = self.rank_class.len();
        // Each rank's instance (index into `instances`) and place in it.
        let (mut instance, mut place) = (vec![u32::MAX; ranks], vec![0u32; ranks]);
        let mut instances: Vec<Vec<u32>> = Vec::new();
        let mut add = |members: Vec<u32>, instance: &mut Vec<u32>| {
            for (k, &r) in members.iter().enumerate() {
                instance[r as usize] = instances.len() as u32;
                place[r as usize] = k as u32;
            }
            instances.push(members);
        };
        match &self.groups[g].members {
            Membership::Explicit(list) => list.iter().for_each(|m| add(m.clone(), &mut instance)),
            Membership::Dims(mask) => {
                for r in 0..ranks as u32 {
                    if instance[r as usize] == u32::MAX {
                        add(self.layout.group_of(r, *mask), &mut instance);
                    }
                }
            }
        }
        let members = |r: u32| -> std::borrow::Cow<'_, [u32]> {
            match instance[r as usize] {
                u32::MAX => vec![r].into(),
                i => instances[i as usize].as_slice().into(),
            }
        };
        // The classes each instance spans, sorted, found once per instance.
        let spans: Vec<Vec<u32>> = instances
            .iter()
            .map(|m| {
                let mut c: Vec<u32> = m.iter().map(|&r| self.rank_class[r as usize]).collect();
                c.sort_unstable();
                c.dedup();
                c
            })
            .collect();
        let classes = |r: u32| -> std::borrow::Cow<'_, [u32]> {
            match instance[r as usize] {
                u32::MAX => vec![self.rank_class[r as usize]].into(),
                i => spans[i as usize].as_slice().into(),
            }
        };
        let peer = |r: u32, offset: i32| -> u32 {
            let m = members(r);
            m[(i64::from(place[r as usize]) + i64::from(offset)).rem_euclid(m.len() as i64) as usize]
        };
        let peer_class = |r: u32, offset: i32| self.rank_class[peer(r, offset) as usize];
        let reps = self.class_representatives();
        let rep_classes: Vec<std::borrow::Cow<'_, [u32]>> = reps.iter().map(|&rep| classes(rep)).collect();
        // The offsets each class's program uses on this group.
        let offsets: Vec<Vec<i32>> = self
            .class_program
            .iter()
            .map(|&p| {
                let mut o: Vec<i32> = self.programs[p as usize]
                    .ops
                    .iter()
                    .filter_map(|op| match op.kind {
                        OpKind::Send { peer, .. } | OpKind::Recv { peer, .. } if peer.group as usize == g => {
                            Some(peer.offset)
                        }
                        _ => None,
                    })
                    .collect();
                o.sort_unstable();
                o.dedup();
                o
            })
            .collect();
        let name = &self.groups[g].name;
        for (r, &c) in self.rank_class.iter().enumerate() {
            let (r, rep) = (r as u32, reps[c as usize]);
            if r == rep {
                continue;
            }
            let mine = classes(r);
            if mine != rep_classes[c as usize] {
                return Err((
                    format!("groups[{g}]"),
                    format!(
                        "rank {r}'s {name} group spans classes {mine:?} but rank {rep}'s spans {:?}; ranks of \
                         one class (here {c}) run in lock step, so their groups must span the same classes",
                        rep_classes[c as usize]
                    ),
                ));
            }
            for &o in &offsets[c as usize] {
                let (mine, theirs) = (peer_class(r, o), peer_class(rep, o));
                if mine != theirs {
                    return Err((
                        format!("groups[{g}]"),
                        format!(
                            "rank {r}'s peer at offset {o} in {name} is of class {mine} but rank {rep}'s is of \
                             class {theirs}; ranks of one class (here {c}) run in lock step, so their peers \
                             must be of one class"
                        ),
                    ));
                }
            }
        }
        // A send meets its receive through the classes' first ranks: they must be each other's
        // peers, unless the peer is of the same class (a shift of the class along the group).
        for (c, &rep) in reps.iter().enumerate() {
            for &o in &offsets[c] {
                let q = peer(rep, o);
                let first = reps[self.rank_class[q as usize] as usize];
                if q != first && self.rank_class[q as usize] != c as u32 {
                    return Err((
                        format!("groups[{g}]"),
                        format!(
                            "rank {rep}'s peer at offset {o} in {name} is rank {q}, not the first rank {first} of \
                             its class {}; a class's sends and receives are matched through its first rank, so \
                             give peers classes of their own (several classes may run one program)",
                            self.rank_class[q as usize]
                        ),
                    ));
                }
            }
        }
        // Copies (userbuffers) stay inside their class, and the k-th send to +o and the k-th
        // receive from −o, which the executor pairs, both are copies or neither is.
        for (c, &rep) in reps.iter().enumerate() {
            let p = self.class_program[c] as usize;
            let ops = &self.programs[p].ops;
            let mut seen: std::collections::BTreeMap<(bool, i32), Vec<(usize, bool)>> = Default::default();
            for (i, op) in ops.iter().enumerate() {
                let (send, to, copy) = match op.kind {
                    OpKind::Send { peer, copy, .. } => (true, peer, copy),
                    OpKind::Recv { peer, copy, .. } => (false, peer, copy),
                    _ => continue,
                };
                if to.group as usize != g {
                    continue;
                }
                let other = self.rank_class[peer(rep, to.offset) as usize];
                let inside = other == c as u32;
                if copy && !inside {
                    return Err((
                        format!("programs[{p}].ops[{i}].copy"),
                        format!(
                            "a copy to or from rank class {} (its peer at offset {} in {name}); a copy \
                             stays inside its rank class: drop copy for an NCCL send/recv",
                            other, to.offset
                        ),
                    ));
                }
                if inside {
                    // Keyed by the send's offset: a receive from −o pairs with a send to +o.
                    let key = if send { to.offset } else { to.offset.wrapping_neg() };
                    seen.entry((send, key)).or_default().push((i, copy));
                }
            }
            for (&(send, o), mine) in &seen {
                if !send {
                    continue;
                }
                let theirs = seen.get(&(false, o)).map_or(&[][..], |v| v.as_slice());
                for (&(si, sc), &(ri, rc)) in mine.iter().zip(theirs) {
                    if sc != rc {
                        let at = if sc { ri } else { si };
                        return Err((
                            format!("programs[{p}].ops[{at}].copy"),
                            format!(
                                "op {si} (send to offset {o} in {name}) and op {ri} (its receive) pair up \
                                 inside rank class {c} but only one is a copy; a copy pair marks both ops"
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn check_program(&self, program: &Program, p: usize) -> std::result::Result<(), (String, String)> {
        let n = program.ops.len();
        let groups = self.groups.len();
        let rows = self.rows.len().max(1);
        for (i, op) in program.ops.iter().enumerate() {
            let at = |field: &str| format!("programs[{p}].ops[{i}].{field}");
            let group = match op.kind {
                OpKind::Compute { ns, .. } if !(0.0..=MAX_NS).contains(&ns) => {
                    return Err((at("ns"), format!("must be from 0 to {MAX_NS:e} ns, got {ns:?}")));
                }
                OpKind::Compute { work, .. } => {
                    let numbers = work.iter().flat_map(|w| [("flops", w.flops), ("bytes", w.bytes)]);
                    if let Some((field, v)) = numbers.into_iter().find(|(_, v)| !(0.0..=MAX_WORK).contains(v)) {
                        return Err((at(field), format!("must be from 0 to {MAX_WORK:e}, got {v:?}")));
                    }
                    None
                }
                OpKind::Collective { group, .. } => Some(group),
                // A receive matches the send of the opposite offset, so the offset must negate.
                OpKind::Send { peer, .. } | OpKind::Recv { peer, .. } if peer.offset == i32::MIN => {
                    return Err((
                        at("offset"),
                        format!("must be from {} to {}, got {}", -i32::MAX, i32::MAX, peer.offset),
                    ));
                }
                OpKind::Send { peer, .. } | OpKind::Recv { peer, .. } => Some(peer.group),
            };
            if let Some(g) = group.filter(|&g| g as usize >= groups) {
                return Err((at("group"), format!("group {g} does not exist ({groups} groups)")));
            }
            if op.row as usize >= rows {
                return Err((at("row"), format!("row {} does not exist ({} rows)", op.row, self.rows.len())));
            }
            for (k, &d) in op.deps.iter().enumerate() {
                if d as usize >= n {
                    return Err((
                        at(&format!("deps[{k}]")),
                        format!("depends on op {d}, which does not exist ({n} ops)"),
                    ));
                }
                if d as usize == i {
                    return Err((at(&format!("deps[{k}]")), "an op cannot depend on itself".into()));
                }
            }
        }
        match find_cycle(program) {
            None => Ok(()),
            Some(cycle) => {
                let text: Vec<String> = cycle.iter().map(|i| format!("op {i}")).collect();
                Err((
                    format!("programs[{p}].ops[{}].deps", cycle[0]),
                    format!(
                        "dependency cycle: {} -> op {} (each waits for the next, by deps or stream order)",
                        text.join(" -> "),
                        cycle[0]
                    ),
                ))
            }
        }
    }
}

/// Instances of an explicit group: ranks in range, each in at most one instance, all of one size.
fn check_instances(instances: &[Vec<u32>], ranks: usize, g: usize) -> std::result::Result<(), (String, String)> {
    let at = |path: String, m: String| Err((format!("groups[{g}].instances{path}"), m));
    let size = instances.first().map_or(0, |i| i.len());
    if size == 0 {
        return at(String::new(), "needs at least one instance of at least one rank".into());
    }
    let mut seen: Vec<Option<usize>> = vec![None; ranks];
    for (k, inst) in instances.iter().enumerate() {
        if inst.len() != size {
            return at(format!("[{k}]"), format!("has {} ranks but instance 0 has {size}", inst.len()));
        }
        for (j, &r) in inst.iter().enumerate() {
            match seen.get_mut(r as usize) {
                None => return at(format!("[{k}][{j}]"), format!("rank {r} is outside the workload's 0..{ranks}")),
                Some(Some(other)) => return at(format!("[{k}][{j}]"), format!("rank {r} is also in instance {other}")),
                Some(s) => *s = Some(k),
            }
        }
    }
    Ok(())
}

/// A cycle of the graph of dependencies plus stream order, if there is one: ops that each wait
/// for the next, the last for the first.
fn find_cycle(program: &Program) -> Option<Vec<u32>> {
    let n = program.ops.len();
    let mut last: HashMap<Stream, u32> = HashMap::new();
    let preds: Vec<Vec<u32>> = program
        .ops
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let mut pr = op.deps.clone();
            pr.extend(last.insert(op.stream(), i as u32));
            pr
        })
        .collect();
    // Iterative depth-first search over predecessors: 0 new, 1 on the path, 2 done.
    let mut state = vec![0u8; n];
    for root in 0..n {
        if state[root] != 0 {
            continue;
        }
        let mut path: Vec<(u32, usize)> = vec![(root as u32, 0)];
        state[root] = 1;
        while let Some(&mut (v, ref mut k)) = path.last_mut() {
            match preds[v as usize].get(*k) {
                Some(&u) => {
                    *k += 1;
                    match state[u as usize] {
                        0 => {
                            state[u as usize] = 1;
                            path.push((u, 0));
                        }
                        1 => {
                            // The path from u to v: each op waits for the next, and v for u.
                            let start = path.iter().position(|&(w, _)| w == u).unwrap_or(0);
                            return Some(path[start..].iter().map(|&(w, _)| w).collect());
                        }
                        _ => {}
                    }
                }
                None => {
                    state[v as usize] = 2;
                    path.pop();
                }
            }
        }
    }
    None
}
