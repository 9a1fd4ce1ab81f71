//! The one narrow interface between the executor and a network model.
//!
//! The executor tells a model when a communication starts; the model tells the executor when
//! communications finish. Analytical models answer in closed form; flow models share links among
//! whatever is in flight. Nothing model-specific lives in the executor.
//!
//! This folder holds the contract ([`NetworkModel`], [`Comm`]) and the models only:
//! [`analytical`] (closed-form prices: NCCL's tuning model, SimAI's formulas, measured busbw) and
//! [`flow`] (max-min fair flows on a platform's links). A model may use the layers below it
//! (collectives, compute, workload, platform, catalog, utilities) and the contract here, never the
//! executor, the driver or a front end: the nccl-tests sweep that runs the flow model through the
//! driver is a front end ([`crate::nccl_tests`]).

pub mod analytical;
pub mod flow;

use crate::error::Result;
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
    /// `now_ns` never precedes a time the model has already been advanced to.
    fn complete_until(&mut self, now_ns: f64, done: &mut Vec<u64>);
}
