//! The platform as Python sees it: a handle on the engine's [`Platform`] with bulk array views,
//! never a second model.

use std::collections::HashMap;

use clustersim_engine::platform::hcsim::{Figure, HcsimParams, LinkFigures};
use clustersim_engine::platform::simgrid::SimgridRouting;
use clustersim_engine::platform::xpu::Dtype;
use clustersim_engine::platform::{simai, Link, MemoryKind, NodeKind, Platform};
use pyo3::prelude::*;

use crate::engine_err;

/// Full-duplex links as arrays: src, dst, bandwidth (GB/s), latency (ns), error rate.
type DuplexLinks = (Vec<u32>, Vec<u32>, Vec<f64>, Vec<f64>, Vec<f64>);

#[pyclass(name = "Platform", module = "clustersim._engine", frozen)]
pub struct PyPlatform {
    pub inner: Platform,
}

#[pymethods]
impl PyPlatform {
    /// Parse a platform file or a SimAI topology file (`path` names it in errors);
    /// accelerator types are the catalog's.
    #[staticmethod]
    fn parse(py: Python<'_>, path: &str, text: &str) -> PyResult<PyPlatform> {
        py.detach(|| Platform::parse_text(path, text)).map(|inner| PyPlatform { inner }).map_err(engine_err)
    }

    /// Parse a SimAI topology file only (`path` names it in errors).
    #[staticmethod]
    fn parse_simai(py: Python<'_>, path: &str, text: &str) -> PyResult<PyPlatform> {
        py.detach(|| Platform::parse_simai(path, text)).map(|inner| PyPlatform { inner }).map_err(engine_err)
    }

    /// A SimAI-convention platform from full-duplex link arrays (the bulk path of templates and
    /// NetworkX graphs): `kinds` 0 GPU, 1 NVSwitch, 2 switch, GPUs first; link i joins `src[i]`
    /// and `dst[i]` both ways with `bandwidth[i]` GB/s (bytes/ns), `latency[i]` ns and per-packet
    /// drop probability `error_rate[i]`. `source` names the input in errors.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn from_arrays(
        py: Python<'_>,
        source: &str,
        kinds: Vec<u8>,
        src: Vec<u32>,
        dst: Vec<u32>,
        bandwidth: Vec<f64>,
        latency: Vec<f64>,
        error_rate: Vec<f64>,
        gpus_per_server: u32,
        gpu_type: &str,
    ) -> PyResult<PyPlatform> {
        let bad = |m: String| engine_err(clustersim_engine::Error::field(source, "arrays", m));
        let kinds = kinds
            .iter()
            .map(|&k| match k {
                0 => Ok(NodeKind::Gpu),
                1 => Ok(NodeKind::NvSwitch),
                2 => Ok(NodeKind::Switch),
                _ => Err(bad(format!("node kind code {k} (valid: 0 gpu, 1 nvswitch, 2 switch)"))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let n = src.len();
        if [dst.len(), bandwidth.len(), latency.len(), error_rate.len()].iter().any(|&m| m != n) {
            return Err(bad("link arrays of different lengths".into()));
        }
        if let Some(i) = (0..n).find(|&i| !(0.0..=1.0).contains(&error_rate[i])) {
            return Err(bad(format!("link {i}: error rate {} is not a probability", error_rate[i])));
        }
        let mut links = Vec::with_capacity(2 * n);
        for i in 0..n {
            let (bandwidth, latency_ns, error_rate) = (bandwidth[i], latency[i], error_rate[i]);
            links.push(Link { src: src[i], dst: dst[i], bandwidth, latency_ns, error_rate });
            links.push(Link { src: dst[i], dst: src[i], bandwidth, latency_ns, error_rate });
        }
        py.detach(|| Platform::from_parts(source, kinds, links, gpus_per_server, gpu_type))
            .map(|inner| PyPlatform { inner })
            .map_err(engine_err)
    }

    /// A platform graph document (NetworkX node-link JSON with HCSim's attribute names; see the
    /// engine's `platform::graph`); XPU types are the catalog's.
    #[staticmethod]
    fn parse_graph(py: Python<'_>, path: &str, text: &str) -> PyResult<PyPlatform> {
        py.detach(|| Platform::parse_graph_json(path, text)).map(|inner| PyPlatform { inner }).map_err(engine_err)
    }

    /// One of HCSim's systems (Fig. 6a, or 6b when `coherent`): XPU types and counts in rank
    /// order (`mix`), link classes overridden by name with (GB/s, ns), rates in GB/s, capacities
    /// in bytes (inf: unbounded), read windows in bytes (None: the protocols' defaults).
    #[staticmethod]
    #[pyo3(signature = (source, coherent, mix, xpus_per_server = 8, servers_per_tor = 16,
        cpus_per_server = 2, nics_per_server = 2, pcie_uplinks = 4, links = HashMap::new(), cxl_uplink = None,
        dram_bytes = f64::INFINITY, cxl_memory_bytes = f64::INFINITY, dram_window_bytes = None,
        cxl_window_bytes = None))]
    #[allow(clippy::too_many_arguments)]
    fn hcsim(
        py: Python<'_>,
        source: &str,
        coherent: bool,
        mix: Vec<(String, u32)>,
        xpus_per_server: u32,
        servers_per_tor: u32,
        cpus_per_server: u32,
        nics_per_server: u32,
        pcie_uplinks: u32,
        links: HashMap<String, (f64, f64)>,
        cxl_uplink: Option<f64>,
        dram_bytes: f64,
        cxl_memory_bytes: f64,
        dram_window_bytes: Option<f64>,
        cxl_window_bytes: Option<f64>,
    ) -> PyResult<PyPlatform> {
        let mut figures = LinkFigures::TABLE5;
        for (name, (bandwidth, latency_ns)) in links {
            let names: Vec<&str> = LinkFigures::TABLE5.all().iter().map(|x| x.0).collect();
            let slot = figures.get_mut(&name).ok_or_else(|| {
                engine_err(clustersim_engine::Error::field(
                    source,
                    "link",
                    format!("unknown link class '{name}' (valid: {})", names.join(", ")),
                ))
            })?;
            *slot = Figure { bandwidth, latency_ns };
        }
        let params = HcsimParams {
            coherent,
            mix,
            xpus_per_server,
            servers_per_tor,
            cpus_per_server,
            nics_per_server,
            pcie_uplinks,
            links: figures,
            cxl_uplink,
            dram_bytes,
            cxl_memory_bytes,
            dram_window_bytes: dram_window_bytes.unwrap_or(MemoryKind::Dram.default_window()),
            cxl_window_bytes: cxl_window_bytes.unwrap_or(MemoryKind::Cxl.default_window()),
        };
        py.detach(|| Platform::hcsim(source, &params)).map(|inner| PyPlatform { inner }).map_err(engine_err)
    }

    /// The platform as a graph document (JSON text) that `parse_graph` reads back.
    fn to_graph_json(&self, py: Python<'_>, name: &str) -> String {
        py.detach(|| self.inner.to_graph_json(name))
    }

    /// The SimGrid platform XML; `routing` full, floyd or dijkstra; `dtype` the XPU speed's data type.
    #[pyo3(signature = (routing = "full", dtype = "fp32", seed = 0))]
    fn to_simgrid(&self, py: Python<'_>, routing: &str, dtype: &str, seed: u64) -> PyResult<String> {
        let bad = |f: &str, m: String| engine_err(clustersim_engine::Error::field("command line", f, m));
        let routing = SimgridRouting::parse(routing)
            .ok_or_else(|| bad("--simgrid-routing", format!("'{routing}' is not full, floyd or dijkstra")))?;
        let dtype = Dtype::parse(dtype).ok_or_else(|| {
            let names: Vec<&str> = Dtype::ALL.iter().map(|d| d.name()).collect();
            bad("--dtype", format!("'{dtype}' is not a data type ({})", names.join(", ")))
        })?;
        py.detach(|| self.inner.to_simgrid(routing, dtype, seed)).map_err(engine_err)
    }

    /// Per node: (accelerator type or "", HBM or memory device capacity in bytes or 0, memory
    /// kind "hbm"/"dram"/"cxl" or "", switch tier or "").
    #[getter]
    fn node_specs(&self) -> Vec<(String, f64, &'static str, &'static str)> {
        use clustersim_engine::platform::{MemoryKind, Tier};
        (0..self.inner.node_count())
            .map(|v| {
                let a = self.inner.attrs.get(v as usize).cloned().unwrap_or_default();
                let gpu = self.inner.kinds[v as usize] == NodeKind::Gpu;
                let ty = if gpu { self.inner.accelerator_type(v).to_string() } else { String::new() };
                let (bytes, kind) = match (&a.xpu, a.memory) {
                    (Some(x), _) => (x.memory_bytes, "hbm"),
                    (_, Some(m)) => (m.capacity_bytes, if m.kind == MemoryKind::Cxl { "cxl" } else { "dram" }),
                    _ => (0.0, ""),
                };
                let tier = match a.tier {
                    Some(Tier::Tor) => "tor",
                    Some(Tier::Spine) => "spine",
                    Some(Tier::Core) => "core",
                    None => "",
                };
                (ty, bytes, kind, tier)
            })
            .collect()
    }

    /// The nodes of the path our router gives flow `flow` from node `src` to node `dst` (seeded
    /// per-flow ECMP; the SimGrid export writes flow 0's).
    #[pyo3(signature = (src, dst, flow = 0, seed = 0))]
    fn route(&self, src: u32, dst: u32, flow: u64, seed: u64) -> PyResult<Vec<u32>> {
        let mut router = clustersim_engine::platform::routing::Router::new(&self.inner, seed);
        let mut links = Vec::new();
        router.route(&self.inner, src, dst, flow, &mut links).map_err(engine_err)?;
        Ok(std::iter::once(src).chain(links.iter().map(|&l| self.inner.links[l as usize].dst)).collect())
    }

    /// Ranks (GPUs that run one).
    #[getter]
    fn ranks(&self) -> u32 {
        self.inner.placement.ranks()
    }

    /// Node kinds by node id ("gpu", "nvswitch", "switch", "cpu", "nic", "memory", ...).
    #[getter]
    fn kinds(&self) -> Vec<&'static str> {
        self.inner.kinds.iter().map(|k| k.name()).collect()
    }

    /// Node names by node id (the id itself where the input gave none).
    #[getter]
    fn names(&self) -> Vec<String> {
        (0..self.inner.node_count()).map(|v| self.inner.node_name(v)).collect()
    }

    /// Per node, whether routes pass through it (the one reachability rule: switches, NICs and
    /// nodes declared to forward; never an accelerator).
    #[getter]
    fn forwards(&self) -> Vec<bool> {
        (0..self.inner.node_count()).map(|v| self.inner.is_transit(v)).collect()
    }

    /// Directed links as (src, dst, bandwidth GB/s, latency ns) arrays.
    #[getter]
    fn links(&self) -> (Vec<u32>, Vec<u32>, Vec<f64>, Vec<f64>) {
        let l = &self.inner.links;
        (
            l.iter().map(|x| x.src).collect(),
            l.iter().map(|x| x.dst).collect(),
            l.iter().map(|x| x.bandwidth).collect(),
            l.iter().map(|x| x.latency_ns).collect(),
        )
    }

    /// Full-duplex links (each a pair of directed links with equal rate, delay and error rate)
    /// as (src, dst, bandwidth GB/s, latency ns, error rate) arrays, in link order.
    fn duplex_links(&self) -> PyResult<DuplexLinks> {
        let first = self.inner.duplex_links().map_err(engine_err)?;
        let l = |i: &usize| self.inner.links[*i];
        Ok((
            first.iter().map(|i| l(i).src).collect(),
            first.iter().map(|i| l(i).dst).collect(),
            first.iter().map(|i| l(i).bandwidth).collect(),
            first.iter().map(|i| l(i).latency_ns).collect(),
            first.iter().map(|i| l(i).error_rate).collect(),
        ))
    }

    /// Per-packet drop probability of every directed link (SimAI files carry one).
    #[getter]
    fn error_rates(&self) -> Vec<f64> {
        self.inner.links.iter().map(|x| x.error_rate).collect()
    }

    /// GPUs of the largest scale-up domain (SimAI's gpus_per_server).
    #[getter]
    fn gpus_per_server(&self) -> u32 {
        self.inner.placement.largest_domain()
    }

    /// The accelerator type of GPUs that name none (SimAI's gpu_type).
    #[getter]
    fn gpu_type(&self) -> String {
        self.inner.gpu_type.clone()
    }

    /// Per rank: (device node, scale-up domain, rail) arrays.
    #[getter]
    fn placement(&self) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        let p = &self.inner.placement;
        let r = 0..p.ranks();
        (
            r.clone().map(|r| p.device(r)).collect(),
            r.clone().map(|r| p.domain(r)).collect(),
            r.map(|r| p.rail(r)).collect(),
        )
    }

    /// Accelerator type of each rank's device.
    #[getter]
    fn accelerator_types(&self) -> Vec<String> {
        let p = &self.inner.placement;
        (0..p.ranks()).map(|r| self.inner.accelerator_type(p.device(r)).to_string()).collect()
    }

    /// The SimAI topology text (only for platforms that format can hold).
    fn to_simai(&self) -> PyResult<String> {
        self.inner.to_simai().map_err(engine_err)
    }

    fn __repr__(&self) -> String {
        let p = &self.inner.placement;
        format!(
            "Platform({} nodes, {} links, {} ranks in {} scale-up domains)",
            self.inner.node_count(),
            self.inner.links.len(),
            p.ranks(),
            p.domains()
        )
    }
}

/// An ns-3 DataRate string (`400Gbps`) in GB/s (bytes/ns), as SimAI files are read; None if
/// it is not one.
#[pyfunction]
pub fn parse_rate(text: &str) -> Option<f64> {
    simai::parse_rate(text)
}

/// An ns-3 Time string (`0.0005ms`) in ns, as SimAI files are read; None if it is not one.
#[pyfunction]
pub fn parse_time(text: &str) -> Option<f64> {
    simai::parse_time(text)
}

/// GB/s as SimAI files spell rates (`400Gbps`).
#[pyfunction]
pub fn format_rate(bytes_per_ns: f64) -> String {
    simai::format_rate(bytes_per_ns)
}

/// ns as SimAI files spell delays (`0.0005ms`).
#[pyfunction]
pub fn format_time(ns: f64) -> String {
    simai::format_time(ns)
}

/// What the flow bindings take as a fabric: a parsed platform or SimAI topology text.
#[derive(FromPyObject)]
pub enum FabricArg<'py> {
    Platform(PyRef<'py, PyPlatform>),
    Text(String),
}

impl FabricArg<'_> {
    pub fn platform(&self) -> clustersim_engine::Result<Platform> {
        match self {
            FabricArg::Platform(p) => Ok(p.inner.clone()),
            FabricArg::Text(t) => Platform::parse_simai("topology", t),
        }
    }
}
