//! Bindings of the flow model: flow completion times and collective sweeps on a SimAI topology
//! (conversion only).

use clustersim_engine::collective::choose::{protocol_option, AlgoSpec, Options};
use clustersim_engine::collective::on_platform::{self, PlatformOptions};
use clustersim_engine::collective::reduction_server::Split;
use clustersim_engine::nccl_tests::{self, SweepOptions};
use clustersim_engine::network::flow::{completion_times, FlowSpec};
use clustersim_engine::platform::Routing;
use clustersim_engine::workload::Collective;
use pyo3::prelude::*;

use crate::engine_err;
use crate::platform::FabricArg;

/// Completion time (ns) of each flow `(src node, dst node, bytes, start_ns)` on the topology
/// given as a Platform or SimAI topology file text; `routes` optionally gives a node path per flow (an empty
/// one means "route it"); `seed` drives ECMP; `routing` "ecmp" or "spray" (over every shortest path).
#[pyfunction]
#[pyo3(signature = (topology, flows, routes = None, seed = 0, routing = "ecmp"))]
pub fn flow_completion_times(
    py: Python<'_>,
    topology: FabricArg<'_>,
    flows: Vec<(u32, u32, f64, f64)>,
    routes: Option<Vec<Vec<u32>>>,
    seed: u64,
    routing: &str,
) -> PyResult<Vec<f64>> {
    let mut topo = topology.platform().map_err(engine_err)?;
    topo.routing = Routing::parse(routing).map_err(engine_err)?;
    py.detach(|| {
        let specs: Vec<FlowSpec> =
            flows.iter().map(|&(src, dst, bytes, start_ns)| FlowSpec { src, dst, bytes, start_ns }).collect();
        completion_times(&topo, &specs, routes.as_deref(), seed)
    })
    .map_err(engine_err)
}

/// nccl-tests on the flow model: time (ns) and algorithm of `collective` for each S in `sizes`
/// over the first `ranks` GPUs (all by default) of the fabric (a Platform or SimAI file text), each
/// size on an idle network. `algorithm` is "auto" (NCCL's tuner), "auto+extra" (with the
/// algorithms beyond NCCL's) or an algorithm name;
/// `channels` 0 means the first server's NIC count (at least 2). `send_lat_us`, `nvls`, `pxn`,
/// `nvlstree` are SimAI's AS_SEND_LAT, AS_NVLS_ENABLE, AS_PXN_ENABLE, AS_NVLSTREE_ENABLE;
/// `qps` is NCCL_IB_QPS_PER_CONNECTION (0 = 1); `routing` "ecmp" or "spray"; `p2p_pxn`
/// NCCL_P2P_PXN_LEVEL = 2 (NCCL's default: all-to-all between servers through PXN).
/// `reduction_servers` ("all", a count or cpu node names) runs all-reduce on those reduction
/// servers, reducing `reduce_gbps` each (None: as fast as their NICs), Optcast's `chunk_bytes`,
/// `nsplit` (0: one shard per server) and `nreq` requests in flight; `switch_reduce_gbps` is a
/// reducing switch's throughput for `collnet_direct` / `collnet_chain`.
#[pyfunction]
#[pyo3(signature = (
    topology, collective, sizes, algorithm = "auto", channels = 0, ranks = None, seed = 0,
    send_lat_us = None, nvls = false, pxn = false, nvlstree = false, protocol = "auto", qps = 0,
    routing = "ecmp", p2p_pxn = true, reduction_servers = None, reduce_gbps = None, chunk_bytes = None,
    nsplit = 0, nreq = 2, switch_reduce_gbps = None, backend = "flow"
))]
#[allow(clippy::too_many_arguments)]
pub fn collective_sweep(
    py: Python<'_>,
    topology: FabricArg<'_>,
    collective: &str,
    sizes: Vec<u64>,
    algorithm: &str,
    channels: u32,
    ranks: Option<u32>,
    seed: u64,
    send_lat_us: Option<f64>,
    nvls: bool,
    pxn: bool,
    nvlstree: bool,
    protocol: &str,
    qps: u32,
    routing: &str,
    p2p_pxn: bool,
    reduction_servers: Option<&str>,
    reduce_gbps: Option<f64>,
    chunk_bytes: Option<f64>,
    nsplit: u32,
    nreq: u32,
    switch_reduce_gbps: Option<f64>,
    backend: &str,
) -> PyResult<Vec<(f64, String, String)>> {
    let mut topo = topology.platform().map_err(engine_err)?;
    py.detach(|| {
        let c = nccl_tests::parse_collective(collective)?;
        let split = Split { chunk_bytes: chunk_bytes.unwrap_or(Split::default().chunk_bytes), nsplit, nreq };
        let servers = reduction_servers.map(str::to_string);
        let platform = PlatformOptions { servers, reduce_gbps, split, switch_reduce_gbps };
        let mut choose = Options {
            send_lat_us,
            nvls_enable: nvls,
            pxn_enable: pxn,
            nvlstree_enable: nvlstree,
            protocol: protocol_option(protocol)?,
            p2p_pxn,
            ..Options::default()
        };
        on_platform::algorithm_options(&mut topo, algorithm, &platform, &mut choose)?;
        clustersim_engine::collective::coherent_ring::check_platform(&choose, &topo, "collective")?;
        // One collective is timed, on the group asked for. A bare name is forced on it and
        // refused where it cannot run it, an all-reduce algorithm (reduction servers, CollNet,
        // the coherent ring) too; with KIND=NAME items it runs what they say for its kind (an
        // all-reduce on the platform's algorithm inside one server too).
        let platform = choose.all_reduce.take();
        let forced = if AlgoSpec::parse(algorithm)?.kinds.is_empty() {
            platform.or(choose.algorithm)
        } else {
            platform.filter(|_| c == Collective::AllReduce).or_else(|| choose.forced_kind(c))
        };
        choose.per_collective = vec![(c, forced)];
        topo.routing = Routing::parse(routing)?;
        let packet = clustersim_engine::driver::fabric_backend(backend)?;
        let opts = SweepOptions { choose, channels, ranks, seed, qps, packet };
        let points = nccl_tests::sweep(topo, c, &sizes, &opts)?;
        Ok(points.into_iter().map(|p| (p.ns, p.algorithm.name().to_string(), p.protocol.name().to_string())).collect())
    })
    .map_err(engine_err)
}

/// nccl-tests' busbw / algbw (its doc/PERFORMANCE.md) for `collective` on `ranks` ranks: the
/// engine's one definition ([`Collective::busbw_factor`]).
#[pyfunction]
pub fn busbw_factor(collective: &str, ranks: u32) -> PyResult<f64> {
    Ok(nccl_tests::parse_collective(collective).map_err(engine_err)?.busbw_factor(ranks))
}

/// nccl-tests' busbw / algbw for an all-reduce reduced in the network on `ranks` ranks.
#[pyfunction]
pub fn in_network_busbw_factor(ranks: u32) -> f64 {
    clustersim_engine::collective::collnet::in_network_busbw_factor(ranks)
}
