//! The one narrow interface between the executor and a network model.
//!
//! The executor tells a model when a communication starts; the model tells the executor when
//! communications finish. Analytical models answer in closed form; flow models share links among
//! whatever is in flight. Nothing model-specific lives in the executor.
//!
//! This folder holds the contract ([`NetworkModel`], [`Comm`]) and the models only. A model may
//! use the layers below it (collectives, compute, workload, platform, catalog, utilities) and the
//! contract here, never the executor, the driver or a front end
//! (`crates/engine/tests/layering.rs` checks it). What each file is, and so where it lives:
//! - [`analytical`]: the analytical network model ([`analytical::Analytical`], its
//!   [`analytical::CollectiveCost`] prices) and the prices themselves: NCCL's tuning model on the
//!   algorithms' schedules (`alpha_beta.rs`) and SimAI's formulas (`simai.rs`); the measured
//!   tables they read (`busbw_file.rs`, `ratio.rs`) and the server they price (`server_spec.rs`,
//!   whose GPU and NIC figures are moving to the catalog) are the model's inputs.
//! - [`flow`]: the flow model: max-min fair flows on a platform's links (`mod.rs`, `solve.rs`,
//!   `cycle.rs`) and the [`NetworkModel`] that plays collectives' schedules on them
//!   (`network.rs`), through the [`Transfers`] trait.
//! - [`packet`]: the packet model (queue pairs, switch queues, PFC, ECN, DCQCN), a second
//!   [`Transfers`] the same schedule player drives, and SimAI's `SimAI.conf` reader.
//! - Not here: the algorithms, their α–β cost formulas, NCCL's tuner and what it reads off a
//!   fabric (link rates, default channels) are the collectives' ([`crate::collective`],
//!   `collective/tuner_links.rs`), used by both models; the nccl-tests sweep, which builds a
//!   workload and runs the flow model through the driver, is a front end ([`crate::nccl_tests`]).
//! - `agreement.rs` (tests only): the two models agree on a non-blocking fabric; the collectives'
//!   tests run their algorithms on its fabric.

pub mod analytical;
pub mod flow;
pub mod packet;

#[cfg(test)]
pub(crate) mod agreement;

use std::rc::Rc;

use crate::error::Result;
use crate::network::flow::fault::Reroute;
use crate::network::flow::{FlowSim, Wait};
use crate::network::packet::PacketSim;
use crate::workload::{Collective, GroupId, Workload};

/// One communication as issued by a rank class: a collective covers every instance of `group`
/// among the ranks of `class` (they run concurrently; for a group spanning classes, `class` is
/// the lowest of them); a transfer goes from the lowest rank of one class to its peer in the
/// other, standing for every such pair; a shift is a send/recv pair inside one class: every rank
/// of `class` sends `bytes` to its peer `offset` places on in its instance of `group` and
/// receives as much from the peer as far back (`src` → `dst`: the class's lowest rank and its
/// peer); `copy` when the ops are marked as a device-to-device copy with no NCCL call
/// (Transformer Engine's userbuffers), else NCCL sends paying their call latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Comm {
    Collective { collective: Collective, group: GroupId, bytes: u64, class: u32 },
    Transfer { src: u32, dst: u32, bytes: u64 },
    Shift { group: GroupId, offset: i32, class: u32, src: u32, dst: u32, bytes: u64, copy: bool },
}

pub trait NetworkModel {
    /// Called once before the run, with the workload whose communications will be started.
    fn prepare(&mut self, workload: &Workload) -> Result<()>;
    /// A communication starts at `now_ns`; `token` identifies it in completions.
    fn start(&mut self, now_ns: f64, comm: &Comm, token: u64) -> Result<()>;
    /// None when nothing is in flight; else a time t ≥ the last `now` given, no later than the
    /// earliest completion. The executor advances to t and calls [`NetworkModel::complete_until`],
    /// which may return nothing when t was only an internal event of the model (a flow model's
    /// phase boundary); it then asks again. The analytical model returns the completion itself.
    fn next_completion(&self) -> Option<f64>;
    /// Append the tokens of communications finished at or before `now_ns`, in finishing order;
    /// `now_ns` never precedes a time the model has already been advanced to. An error stops
    /// the run (a fault that leaves a communication no path).
    fn complete_until(&mut self, now_ns: f64, done: &mut Vec<u64>) -> Result<()>;
}

/// What moves a schedule's transfers over a platform's directed links, for the one schedule player
/// ([`flow::network::FlowNetwork`]): batches of transfers (route as link ids, bytes, rate ceiling
/// in bytes/ns, ∞ for none) that run `repeat` times back to back, each run's transfers waiting
/// `wait` first; `tag` is reported when the last run is done. The flow model moves them as
/// max-min fair fluids ([`FlowSim`]), the packet model as packets ([`PacketSim`]).
pub trait Transfers {
    fn add_batch(&mut self, now: f64, flows: Vec<(Rc<[u32]>, f64, f64)>, repeat: u32, tag: u64, wait: Wait);
    /// Process the earliest pending instant; append (tag, time) of batches done then. None when
    /// nothing is pending.
    fn step(&mut self, finished: &mut Vec<(u64, f64)>) -> Option<f64>;
    fn next_time(&self) -> Option<f64>;
    /// Bytes carried so far by each directed link (the packet model counts wire bytes).
    fn carried_bytes(&self) -> &[f64];
    /// Max-min re-solves so far (0 for a model that does none).
    fn solves(&self) -> u64 {
        0
    }
    /// Get ready for faults during the run ([`crate::platform::fault`]); an error where the
    /// model cannot express them.
    fn take_faults(&mut self) -> Result<()> {
        Err(crate::error::InputError::field(
            "command line",
            "fault",
            "the packet backend takes no faults yet; run them on the flow backend (--backend flow)",
        ))
    }
    /// At `now`, links get new capacities (bytes/ns) and flows on the `down` links move to the
    /// paths `reroute` gives ([`FlowSim::fault`]).
    fn fault(&mut self, now: f64, capacity: &[(u32, f64)], down: &[u32], reroute: &mut Reroute<'_>) -> Result<()> {
        let _ = (now, capacity, down, reroute);
        self.take_faults()
    }
    /// Finished queue pairs so far (SimAI's FCT lines; empty for a model without them).
    fn flow_records(&self) -> &[packet::FlowRecord] {
        &[]
    }
}

impl Transfers for FlowSim {
    fn add_batch(&mut self, now: f64, flows: Vec<(Rc<[u32]>, f64, f64)>, repeat: u32, tag: u64, wait: Wait) {
        self.add_batch_capped(now, flows, repeat, tag, wait);
    }
    fn step(&mut self, finished: &mut Vec<(u64, f64)>) -> Option<f64> {
        FlowSim::step(self, finished)
    }
    fn next_time(&self) -> Option<f64> {
        FlowSim::next_time(self)
    }
    fn carried_bytes(&self) -> &[f64] {
        FlowSim::carried_bytes(self)
    }
    fn solves(&self) -> u64 {
        FlowSim::solves(self)
    }
    fn take_faults(&mut self) -> Result<()> {
        FlowSim::take_faults(self);
        Ok(())
    }
    fn fault(&mut self, now: f64, capacity: &[(u32, f64)], down: &[u32], reroute: &mut Reroute<'_>) -> Result<()> {
        FlowSim::fault(self, now, capacity, down, reroute)
    }
}

impl Transfers for PacketSim {
    fn add_batch(&mut self, now: f64, flows: Vec<(Rc<[u32]>, f64, f64)>, repeat: u32, tag: u64, wait: Wait) {
        PacketSim::add_batch(self, now, flows, repeat, tag, wait);
    }
    fn step(&mut self, finished: &mut Vec<(u64, f64)>) -> Option<f64> {
        PacketSim::step(self, finished)
    }
    fn next_time(&self) -> Option<f64> {
        PacketSim::next_time(self)
    }
    fn carried_bytes(&self) -> &[f64] {
        PacketSim::carried_bytes(self)
    }
    fn flow_records(&self) -> &[packet::FlowRecord] {
        PacketSim::records(self)
    }
}
