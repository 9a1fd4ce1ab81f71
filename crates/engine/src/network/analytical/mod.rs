//! Analytical network models: every communication takes a closed-form time, independent of
//! what else is in flight (no link sharing). Which closed form is a [`CollectiveCost`].

pub mod alpha_beta;
pub mod busbw_file;
pub mod ratio;
pub mod server_spec;
pub mod simai;

use crate::due::Due;
use std::collections::BinaryHeap;
use std::rc::Rc;

use crate::error::{InputError, Result};
use crate::int_hash::IntMap;
use crate::layout::Axis;
use crate::network::{Comm, NetworkModel};
use crate::platform::Placement;
use crate::workload::{Collective, GroupId, OpKind, Workload};

/// What a cost model knows of a communicator group (from its first instance).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupShape {
    /// TP, DP, EP, DP_EP, PP, or a custom name.
    pub name: String,
    pub size: u32,
    /// Scale-up domains (servers) the group spans.
    pub nodes: u32,
    /// Most group ranks in one domain.
    pub per_node: u32,
    /// TP and EP sizes of the layout (SimAI's formulas are written in them).
    pub tp: u32,
    pub ep: u32,
    /// Global ranks of the first instance, in group order.
    pub ranks: Vec<u32>,
    /// Where the world's ranks run (shared by every group).
    pub placement: Rc<Placement>,
}

impl GroupShape {
    /// The shape of `w`'s group `g` (its first instance) on `placement`: what every instance of
    /// it is priced as.
    pub fn of(w: &Workload, g: GroupId, placement: &Rc<Placement>) -> GroupShape {
        let (tp, ep) = (w.layout.axis_size(Axis::Tp), w.layout.axis_size(Axis::Ep));
        let members = w.group_members(g, 0);
        let mut servers: Vec<u32> = members.iter().map(|&r| placement.domain(r)).collect();
        servers.sort_unstable();
        let mut per_node = 0;
        let mut run = 0;
        for (i, s) in servers.iter().enumerate() {
            run = if i > 0 && servers[i - 1] == *s { run + 1 } else { 1 };
            per_node = per_node.max(run);
        }
        servers.dedup();
        GroupShape {
            name: w.groups[g as usize].name.clone(),
            size: members.len() as u32,
            nodes: servers.len() as u32,
            per_node,
            tp,
            ep,
            ranks: members,
            placement: placement.clone(),
        }
    }
}

/// A closed-form price for communications.
pub trait CollectiveCost {
    /// ns for a collective of `bytes` (nccl-tests S) on `group`, or why it cannot be priced.
    fn collective_ns(&self, c: Collective, group: &GroupShape, bytes: u64) -> std::result::Result<f64, InputError>;
    /// ns for a point-to-point transfer.
    fn transfer_ns(&self, same_server: bool, bytes: u64) -> std::result::Result<f64, InputError>;
    /// A device-to-device copy of `bytes` to a peer (no NCCL call, so no call latency): the
    /// bandwidth term of a transfer.
    fn copy_ns(&self, same_server: bool, bytes: u64) -> std::result::Result<f64, InputError> {
        Ok(self.transfer_ns(same_server, bytes)? - self.transfer_ns(same_server, 0)?)
    }
}

/// A [`NetworkModel`] that prices each communication with a [`CollectiveCost`].
pub struct Analytical {
    cost: Box<dyn CollectiveCost>,
    placement: Rc<Placement>,
    shapes: Vec<GroupShape>,
    prices: IntMap<(Collective, GroupId, u64), f64>,
    /// Per shift (class, group, offset): whether every rank of the class copies to a peer in its
    /// own scale-up domain. The ranks shift in lock step, so one pair across domains sets the pace.
    shift_inside: IntMap<(u32, GroupId, i32), bool>,
    /// Completions, ties in token order.
    pending: BinaryHeap<Due<()>>,
}

impl Analytical {
    pub fn new(cost: Box<dyn CollectiveCost>, placement: Placement) -> Analytical {
        Analytical {
            cost,
            placement: Rc::new(placement),
            shapes: Vec::new(),
            prices: IntMap::default(),
            shift_inside: IntMap::default(),
            pending: BinaryHeap::new(),
        }
    }

    fn price(&mut self, c: Collective, g: GroupId, bytes: u64) -> std::result::Result<f64, InputError> {
        if let Some(&t) = self.prices.get(&(c, g, bytes)) {
            return Ok(t);
        }
        let t = self.cost.collective_ns(c, &self.shapes[g as usize], bytes)?;
        self.prices.insert((c, g, bytes), t);
        Ok(t)
    }
}

impl NetworkModel for Analytical {
    fn prepare(&mut self, w: &Workload) -> Result<()> {
        if w.world_size() > self.placement.ranks() {
            return Err(InputError::new(
                "platform",
                format!("the workload has {} ranks but the platform places {}", w.world_size(), self.placement.ranks()),
            ));
        }
        let placement = &self.placement;
        self.shapes = (0..w.groups.len() as GroupId).map(|g| GroupShape::of(w, g, placement)).collect();
        let reps = w.class_representatives();
        self.shift_inside.clear();
        for (class, &prog) in w.class_program.iter().enumerate() {
            let class = class as u32;
            for op in &w.programs[prog as usize].ops {
                let OpKind::Send { peer, .. } = op.kind else { continue };
                let key = (class, peer.group, peer.offset);
                let rep = reps[class as usize];
                if rep == u32::MAX || self.shift_inside.contains_key(&key) {
                    continue;
                }
                if w.rank_class[w.peer_rank(rep, peer) as usize] == class {
                    let inside = (0..w.world_size())
                        .filter(|&r| w.rank_class[r as usize] == class)
                        .all(|r| placement.same_domain(r, w.peer_rank(r, peer)));
                    self.shift_inside.insert(key, inside);
                }
            }
        }
        // Price everything up front, so a missing bandwidth is an error before the run starts.
        for p in &w.programs {
            for op in &p.ops {
                if matches!(op.kind, OpKind::Send { .. } | OpKind::Recv { .. }) {
                    self.cost.transfer_ns(false, 1).map_err(|mut e| {
                        e.message = format!("{} (needed by pipeline transfers)", e.message);
                        e
                    })?;
                }
                if let OpKind::Collective { collective, group, bytes } = op.kind {
                    self.price(collective, group, bytes).map_err(|mut e| {
                        let row = w.rows.get(op.row as usize).map_or("?", |s| s.as_str());
                        e.message = format!(
                            "{} (needed by row '{row}': {} of {bytes} B in {})",
                            e.message,
                            collective.name(),
                            w.groups[group as usize].name
                        );
                        e
                    })?;
                }
            }
        }
        Ok(())
    }

    fn start(&mut self, now_ns: f64, comm: &Comm, token: u64) -> Result<()> {
        let t = match *comm {
            Comm::Collective { collective, group, bytes, .. } => self.price(collective, group, bytes)?,
            Comm::Transfer { src, dst, bytes } => self.cost.transfer_ns(self.placement.same_domain(src, dst), bytes)?,
            Comm::Shift { group, offset, class, src, dst, bytes, copy } => {
                let inside = self.shift_inside.get(&(class, group, offset)).copied();
                let inside = inside.unwrap_or_else(|| self.placement.same_domain(src, dst));
                match copy {
                    true => self.cost.copy_ns(inside, bytes)?,
                    false => self.cost.transfer_ns(inside, bytes)?,
                }
            }
        };
        if !(t.is_finite() && t >= 0.0) {
            return Err(InputError::new(
                "network model",
                format!("{comm:?} priced at {t} ns; check the bandwidth inputs"),
            ));
        }
        self.pending.push(Due { time: now_ns + t, seq: token, item: () });
        Ok(())
    }

    fn next_completion(&self) -> Option<f64> {
        self.pending.peek().map(|d| d.time)
    }

    fn complete_until(&mut self, now_ns: f64, done: &mut Vec<u64>) -> Result<()> {
        while self.pending.peek().is_some_and(|d| d.time <= now_ns) {
            done.push(self.pending.pop().expect("peeked").seq);
        }
        Ok(())
    }
}
