//! The invariants of a [`Workload`], checked where one comes from outside the engine (a JSON
//! file, Python's columns), so the executor can rely on them.
//!
//! Every rank is in one class, every class has ranks and a program; groups name layout axes or
//! list disjoint, equal-sized instances of ranks in range; ops refer to existing groups, rows and
//! ops; computes take a finite, non-negative time; and the dependencies together with the stream
//! order (each op waits for the previous op on its [`Stream`]) form no cycle.
//! Errors name the place as a JSON path, e.g. `programs[0].ops[7].deps[1]`.

use std::collections::HashMap;

use super::{Membership, OpKind, Program, Stream, Workload};
use crate::error::{InputError, Result};

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
                    if *mask != 0 && self.layout.world_size() as usize != ranks {
                        return bad(
                            "layout".into(),
                            format!(
                                "spans {} ranks but the workload has {ranks} (groups[{g}] is defined by it)",
                                self.layout.world_size()
                            ),
                        );
                    }
                }
                Membership::Explicit(instances) => check_instances(instances, ranks, g).or_else(|(p, m)| bad(p, m))?,
            }
        }
        for (p, program) in self.programs.iter().enumerate() {
            self.check_program(program, p).or_else(|(path, m)| bad(path, m))?;
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
                OpKind::Compute { ns } if !(ns.is_finite() && ns >= 0.0) => {
                    return Err((at("ns"), format!("must be finite and non-negative, got {ns}")));
                }
                OpKind::Compute { .. } => None,
                OpKind::Collective { group, .. } => Some(group),
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
