//! The workload IR as columns: one array per op field over the ops of every program, so that
//! Python (or any bulk producer) builds and reads workloads without one object per op.
//!
//! Programs' ops are concatenated; program p owns ops `program_start[p]..program_start[p+1]`.
//! Op i's dependencies are `deps[dep_start[i]..dep_start[i+1]]` (indices within its program).
//! Enumerations are small integers: `kind` indexes [`KINDS`], `collective` [`Collective::ALL`],
//! `phase` [`PHASES`]; fields a kind does not use hold 0. A COMP op's work (`flops`,
//! `mem_bytes`, `dtype`) is given when `dtype` is 1 + its index in [`Dtype::ALL`]; 0 means the op
//! states no work (a time only).

use super::json::{axis_name, axis_of};
use super::{Collective, Group, Membership, Op, OpKind, Peer, Phase, Program, Work, Workload};
use crate::catalog::Dtype;
use crate::error::{InputError, Result};
use crate::layout::Layout;

/// Op kinds, as in the JSON form.
pub const KINDS: [&str; 4] = ["COMP", "COMM_COLL", "SEND", "RECV"];
pub const PHASES: [Phase; 4] = [Phase::Forward, Phase::InputGrad, Phase::WeightGrad, Phase::Other];
/// Phase names, as in the JSON form.
pub const PHASE_NAMES: [&str; 4] = ["fwd", "ig", "wg", "other"];

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Columns {
    /// (axis name, size), fastest-varying first.
    pub layout: Vec<(String, u32)>,
    pub group_names: Vec<String>,
    /// Per group: its layout axes, or `None` for an explicit group.
    pub group_axes: Vec<Option<Vec<String>>>,
    /// Per group: its member lists, or `None` for a layout group.
    pub group_instances: Vec<Option<Vec<Vec<u32>>>>,
    pub rows: Vec<String>,
    pub rank_class: Vec<u32>,
    pub class_program: Vec<u32>,
    pub program_start: Vec<u32>,
    pub kind: Vec<u8>,
    /// COMP duration.
    pub ns: Vec<f64>,
    /// COMP work: FLOPs, bytes of memory traffic and the FLOPs' data type (see the module doc).
    pub flops: Vec<f64>,
    pub mem_bytes: Vec<f64>,
    pub dtype: Vec<u8>,
    pub collective: Vec<u8>,
    /// Group of a collective, or of a send/recv's peer.
    pub group: Vec<u16>,
    /// Send/recv peer offset within the group instance.
    pub offset: Vec<i32>,
    pub bytes: Vec<u64>,
    /// Send/recv: a userbuffers copy (no NCCL call).
    pub copy: Vec<bool>,
    pub row: Vec<u32>,
    pub phase: Vec<u8>,
    pub dep_start: Vec<u32>,
    pub deps: Vec<u32>,
}

impl From<&Workload> for Columns {
    fn from(w: &Workload) -> Columns {
        let mut c = Columns {
            layout: w.layout.axes.iter().map(|&(a, n)| (axis_name(a).to_string(), n)).collect(),
            rows: w.rows.clone(),
            rank_class: w.rank_class.clone(),
            class_program: w.class_program.clone(),
            program_start: vec![0],
            dep_start: vec![0],
            ..Columns::default()
        };
        for g in &w.groups {
            c.group_names.push(g.name.clone());
            let (axes, instances) = match &g.members {
                Membership::Dims(mask) => (Some(w.axes_of(*mask)), None),
                Membership::Explicit(inst) => (None, Some(inst.clone())),
            };
            c.group_axes.push(axes);
            c.group_instances.push(instances);
        }
        for p in &w.programs {
            for op in &p.ops {
                let (flops, mem_bytes, dtype) = match op.kind {
                    OpKind::Compute { work: Some(w), .. } => (w.flops, w.bytes, 1 + w.dtype as u8),
                    _ => (0.0, 0.0, 0),
                };
                c.flops.push(flops);
                c.mem_bytes.push(mem_bytes);
                c.dtype.push(dtype);
                let (kind, ns, coll, group, offset, bytes, copy) = match op.kind {
                    OpKind::Compute { ns, .. } => (0, ns, 0, 0, 0, 0, false),
                    OpKind::Collective { collective, group, bytes } => {
                        let k = Collective::ALL.iter().position(|&x| x == collective).unwrap_or(0);
                        (1, 0.0, k as u8, group, 0, bytes, false)
                    }
                    OpKind::Send { peer, bytes, copy } => (2, 0.0, 0, peer.group, peer.offset, bytes, copy),
                    OpKind::Recv { peer, bytes, copy } => (3, 0.0, 0, peer.group, peer.offset, bytes, copy),
                };
                c.kind.push(kind);
                c.ns.push(ns);
                c.collective.push(coll);
                c.group.push(group);
                c.offset.push(offset);
                c.bytes.push(bytes);
                c.copy.push(copy);
                c.row.push(op.row);
                c.phase.push(PHASES.iter().position(|&x| x == op.phase).unwrap_or(3) as u8);
                c.deps.extend(&op.deps);
                c.dep_start.push(c.deps.len() as u32);
            }
            c.program_start.push(c.kind.len() as u32);
        }
        c
    }
}

impl Columns {
    /// The workload these columns describe, checked ([`Workload::check`]); `file` names the
    /// source in errors, whose fields are column names with the op's global index.
    pub fn to_workload(&self, file: &str) -> Result<Workload> {
        let bad = |field: String, m: String| InputError::field(file, &field, m);
        let n = self.kind.len();
        for (name, len) in [
            ("ns", self.ns.len()),
            ("flops", self.flops.len()),
            ("mem_bytes", self.mem_bytes.len()),
            ("dtype", self.dtype.len()),
            ("collective", self.collective.len()),
            ("group", self.group.len()),
            ("offset", self.offset.len()),
            ("bytes", self.bytes.len()),
            ("copy", self.copy.len()),
            ("row", self.row.len()),
            ("phase", self.phase.len()),
            ("dep_start", self.dep_start.len().saturating_sub(1)),
        ] {
            if len != n {
                return Err(bad(name.into(), format!("has {len} entries for {n} ops")));
            }
        }
        let ends_ok = |s: &[u32], end: usize| {
            s.first() == Some(&0) && s.last() == Some(&(end as u32)) && s.windows(2).all(|p| p[0] <= p[1])
        };
        if !ends_ok(&self.dep_start, self.deps.len()) {
            return Err(bad("dep_start".into(), format!("must rise from 0 to {} (the deps' count)", self.deps.len())));
        }
        if !ends_ok(&self.program_start, n) {
            return Err(bad("program_start".into(), format!("must rise from 0 to {n} (the ops' count)")));
        }
        let mut axes = Vec::new();
        for (i, (name, size)) in self.layout.iter().enumerate() {
            let axis = axis_of(name).ok_or_else(|| bad(format!("layout[{i}]"), format!("unknown axis '{name}'")))?;
            axes.push((axis, *size));
        }
        let layout = Layout { axes };
        let groups_in = self.group_names.len();
        if self.group_axes.len() != groups_in || self.group_instances.len() != groups_in {
            return Err(bad("groups".into(), "names, axes and instances differ in length".into()));
        }
        let mut groups = Vec::new();
        for g in 0..groups_in {
            let members = match (&self.group_axes[g], &self.group_instances[g]) {
                (Some(names), None) => {
                    let mut mask = 0;
                    for name in names {
                        let i = layout.axes.iter().position(|&(a, _)| axis_name(a) == name).ok_or_else(|| {
                            bad(format!("groups[{g}].axes"), format!("the layout has no '{name}' axis"))
                        })?;
                        mask |= 1 << i;
                    }
                    Membership::Dims(mask)
                }
                (None, Some(inst)) => Membership::Explicit(inst.clone()),
                _ => return Err(bad(format!("groups[{g}]"), "give exactly one of axes and instances".into())),
            };
            groups.push(Group { name: self.group_names[g].clone(), members });
        }
        let mut programs = Vec::new();
        for p in self.program_start.windows(2) {
            let mut ops = Vec::with_capacity((p[1] - p[0]) as usize);
            for i in p[0] as usize..p[1] as usize {
                let at = |col: &str| format!("{col}[{i}]");
                let kind = match self.kind[i] {
                    0 => {
                        let work = match self.dtype[i] {
                            0 => None,
                            k => {
                                let dtype = *Dtype::ALL.get(k as usize - 1).ok_or_else(|| {
                                    bad(at("dtype"), format!("{k} is not a data type code (0..={})", Dtype::ALL.len()))
                                })?;
                                Some(Work { flops: self.flops[i], bytes: self.mem_bytes[i], dtype })
                            }
                        };
                        OpKind::Compute { ns: self.ns[i], work }
                    }
                    1 => {
                        let k = self.collective[i] as usize;
                        let collective = *Collective::ALL.get(k).ok_or_else(|| {
                            bad(
                                at("collective"),
                                format!("{k} is not a collective code (0..{})", Collective::ALL.len()),
                            )
                        })?;
                        OpKind::Collective { collective, group: self.group[i], bytes: self.bytes[i] }
                    }
                    k @ (2 | 3) => {
                        let peer = Peer { group: self.group[i], offset: self.offset[i] };
                        let (bytes, copy) = (self.bytes[i], self.copy[i]);
                        if k == 2 {
                            OpKind::Send { peer, bytes, copy }
                        } else {
                            OpKind::Recv { peer, bytes, copy }
                        }
                    }
                    k => return Err(bad(at("kind"), format!("{k} is not an op kind code (0..{})", KINDS.len()))),
                };
                let phase = *PHASES
                    .get(self.phase[i] as usize)
                    .ok_or_else(|| bad(at("phase"), format!("{} is not a phase code (0..4)", self.phase[i])))?;
                let deps = self.deps[self.dep_start[i] as usize..self.dep_start[i + 1] as usize].to_vec();
                ops.push(Op::new(kind, deps, self.row[i], phase));
            }
            programs.push(Program { ops });
        }
        let w = Workload {
            layout,
            groups,
            programs,
            class_program: self.class_program.clone(),
            rank_class: self.rank_class.clone(),
            rows: self.rows.clone(),
        };
        w.check(file)?;
        Ok(w)
    }
}
