//! clustersim's engine: the workload IR, the discrete-event executor, and network models.
//! Pure Rust; the Python package drives it through the `clustersim-python` bindings.

pub mod catalog;
pub mod collective;
pub mod compute;
pub mod driver;
pub mod due;
pub mod error;
pub mod executor;
pub mod exposure;
pub mod goodput;
pub mod int_hash;
pub mod layout;
pub mod nccl_tests;
pub mod network;
mod node_link;
pub mod platform;
pub mod random;
pub mod simai;
pub mod trace;
pub mod training;
pub mod workload;
pub mod workload_graph;

pub use error::{Error, InputError, Result};
