//! Bindings of the flow model: flow completion times on a SimAI topology (conversion only).

use clustersim_engine::flow::{completion_times, FlowSpec};
use clustersim_engine::topology::Topology;
use pyo3::prelude::*;

use crate::input_err;

/// Completion time (ns) of each flow `(src node, dst node, bytes, start_ns)` on the topology
/// given as SimAI topology file text; `routes` optionally gives a node path per flow (an empty
/// one means "route it"); `seed` drives ECMP.
#[pyfunction]
#[pyo3(signature = (topology, flows, routes = None, seed = 0))]
pub fn flow_completion_times(
    py: Python<'_>,
    topology: &str,
    flows: Vec<(u32, u32, f64, f64)>,
    routes: Option<Vec<Vec<u32>>>,
    seed: u64,
) -> PyResult<Vec<f64>> {
    py.detach(|| {
        let topo = Topology::parse_simai("topology", topology)?;
        let specs: Vec<FlowSpec> =
            flows.iter().map(|&(src, dst, bytes, start_ns)| FlowSpec { src, dst, bytes, start_ns }).collect();
        completion_times(&topo, &specs, routes.as_deref(), seed)
    })
    .map_err(input_err)
}
