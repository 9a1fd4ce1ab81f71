//! Workload graphs (HCSim, Li et al. 2025, Table 3 and §2.3–2.4): vertices that compute or
//! communicate, placed on a platform's XPUs, joined by dependency edges; cycles allowed, run for
//! a number of iterations.
//!
//! - A **compute vertex** has `flops` in a data type `dtype`, the `bytes` of memory it accesses,
//!   where those bytes live (`memory`) and the XPUs it runs on (`xpu`: one, a list, or `*` for
//!   every XPU that runs a rank, one copy each, as a data-parallel replica).
//! - A **communication vertex** moves `bytes`: a collective (all-reduce, all-gather, …) among
//!   its `participants`, or a point-to-point transfer from `src` to `dst`, on a `communicator`
//!   (by default one per participant set).
//! - An **edge** u → v makes v wait for u. Edges join the copies of u and v on the same XPU, so
//!   an edge needs an XPU both run on (data moves between XPUs only through communication
//!   vertices). An edge marked `not_first` is ignored in the first iteration: in iteration
//!   k ≥ 1, v waits for u of iteration k − 1 (the edge from the last layer's update back to the
//!   first layer's forward pass that closes a training loop). Every cycle needs such an edge,
//!   and a graph with a cycle needs an iteration count.
//!
//! Execution ([`run`]) lowers the graph to the workload IR and runs it with the one executor on
//! the flow model of the platform (module doc of [`lower`] for the equations); [`json`] reads
//! and writes the graph document (docs/workload-graph-format.md); [`export`] writes any workload
//! (a `train` plan, a SimAI file) as a graph.

pub mod export;
pub mod json;
pub mod llama2;
pub mod lower;
pub mod memory;
pub mod run;

use crate::platform::xpu::Dtype;
use crate::workload::Collective;

/// The XPUs a vertex runs on, by platform node name.
#[derive(Debug, Clone, PartialEq)]
pub enum Xpus {
    /// Every XPU that runs a rank (`*`).
    All,
    Named(Vec<String>),
}

/// Where a compute vertex's bytes live.
#[derive(Debug, Clone, PartialEq)]
pub enum Memory {
    /// The XPU's HBM while it has room, else spilled (the placement in [`memory`]).
    Auto,
    /// The XPU's own HBM, which must have room.
    Local,
    /// A memory node of the platform, by name.
    Node(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Compute {
    pub xpus: Xpus,
    pub flops: f64,
    pub dtype: Dtype,
    /// Bytes of memory accessed (and held, for placement).
    pub bytes: f64,
    pub memory: Memory,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    Collective { collective: Collective, participants: Xpus },
    P2p { src: String, dst: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Communication {
    pub bytes: u64,
    pub pattern: Pattern,
    /// Vertices with the same participants and communicator run one at a time, in program order
    /// (an NCCL communicator's stream); None: the participant set's own.
    pub communicator: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum VertexKind {
    Compute(Compute),
    Communication(Communication),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Vertex {
    pub id: String,
    pub kind: VertexKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// Vertex indices.
    pub source: u32,
    pub target: u32,
    /// Ignored in the first iteration; later, the target waits for the source of the iteration
    /// before.
    pub not_first: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadGraph {
    pub name: String,
    /// None: one iteration, allowed only without cycles.
    pub iterations: Option<u32>,
    pub vertices: Vec<Vertex>,
    pub edges: Vec<Edge>,
    /// Vertex indices in an order that respects every edge without `not_first` (ties by index).
    pub order: Vec<u32>,
}

#[cfg(test)]
mod tests;
