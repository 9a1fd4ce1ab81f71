//! Faults on the flow model ([`crate::platform::fault`]): at time t a link keeps a share of its
//! capacity, or goes down and its flows move to other paths.
//!
//! A degraded link: C_l becomes factor · C_l at t and the rates are re-solved from there (bytes
//! moved before t at the old rates stay moved). A link down: every flow whose path crosses it
//! takes the path the caller's `reroute` gives (the fabric's routing without the dead links):
//! an active flow carries on from t with the bytes it has left, a waiting one starts on the new
//! path, and the later runs of its batch keep the new path. Bytes carried before t are counted
//! on the old path's links, the rest on the new one's.
//!
//! A run with faults is played event by event: fast-forwarding of repeated runs and the replay
//! of runs seen before assume capacities and paths that hold for the whole run, so
//! [`FlowSim::take_faults`] turns both off. After a fault the whole connected component of the
//! changed links is re-solved: the local repair proves a flow's bottleneck from the capacities
//! it was solved with, which a fault changes.

use std::rc::Rc;

use super::{FlowSim, State, NO_LINK};
use crate::error::Result;

/// Gives a flow on a dead link its new path: (the tag of its batch, its old path) → new path.
pub type Reroute<'a> = dyn FnMut(u64, &[u32]) -> Result<Rc<[u32]>> + 'a;

impl FlowSim {
    /// Play the run event by event, as faults need (module doc).
    pub fn take_faults(&mut self) {
        self.fast_forward = false;
        self.recall = false;
    }

    /// At `now` (no earlier than the last instant processed, no later than the next pending):
    /// links of `capacity` get that capacity (bytes/ns), flows on the links of `down` move to
    /// the path `reroute` gives them.
    pub fn fault(&mut self, now: f64, capacity: &[(u32, f64)], down: &[u32], reroute: &mut Reroute<'_>) -> Result<()> {
        debug_assert!(!self.fast_forward, "take_faults before the run");
        self.time = self.time.max(now);
        for &(l, c) in capacity {
            self.cap[l as usize] = c;
            self.link_stat[l as usize].0 = false;
            self.touched.push(l);
        }
        if !down.is_empty() {
            let mut dead = vec![false; self.cap.len()];
            for &l in down {
                dead[l as usize] = true;
                self.touched.push(l);
            }
            for f in 0..self.path.len() {
                let state = self.state[f];
                if state == State::Free || !self.path[f].iter().any(|&l| dead[l as usize]) {
                    continue;
                }
                let tag = self.batches[self.batch_of[f] as usize].tag;
                let new = reroute(tag, &self.path[f])?;
                if state != State::Active {
                    self.path[f] = new;
                    continue;
                }
                // Bytes moved so far stay on the old path; the rest goes on the new one.
                let moved = self.bytes[f] - (self.rem[f] - self.rate[f] * (now - self.upd[f])).max(0.0);
                self.detach(f as u32, true);
                self.set_bneck(f, NO_LINK);
                for &l in self.path[f].iter() {
                    self.carried[l as usize] += moved;
                }
                for &l in new.iter() {
                    self.carried[l as usize] -= moved;
                }
                self.path[f] = new;
                self.touched.extend_from_slice(&self.path[f]);
                self.link_on(f as u32);
                self.fresh.push(f as u32);
            }
        }
        // The whole component of the changes (module doc).
        let incremental = std::mem::replace(&mut self.incremental, false);
        let mut finished = Vec::new();
        self.solve(now, &mut finished);
        self.incremental = incremental;
        debug_assert!(finished.is_empty(), "no run ends in a re-solve without fast-forwarding");
        self.prune();
        Ok(())
    }
}
