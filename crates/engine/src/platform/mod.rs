//! The platform: typed nodes (accelerators, CPUs, NICs, memory devices, switches), directed
//! links between them, and where each rank runs ([`Placement`]).
//!
//! Units: bandwidth in bytes/ns (= GB/s with GB = 1e9 B; SimAI files give bits per second, so
//! `400Gbps` = 50 B/ns), latency in ns. Readers: SimAI's topology file ([`simai`]), the platform
//! file of typed devices ([`file`]), graph documents ([`graph`]), and arrays from NetworkX
//! ([`Platform::from_parts`]); builders: the fabric templates ([`templates`]: SimAI's, the
//! fat-tree, HCSim's).
//!
//! One reachability rule: routes pass through switches and NICs (a NIC bridges its host side
//! and the network) and through other nodes only when declared to forward. An accelerator is an
//! endpoint: a route never passes through a GPU it neither starts nor ends at, as in SimAI's
//! ns-3 backend where hosts do not forward. In a SimAI file each GPU is also its own NIC, so a
//! GPU's link to a ToR is its NIC link.

pub mod fault;
pub mod file;
pub mod graph;
mod placement;
pub mod routing;
pub mod simai;
pub mod simgrid;
pub mod templates;
pub mod window;
pub mod xpu;

pub use placement::Placement;
pub use templates::hcsim;

use crate::catalog::{Arch, Catalog};
use crate::error::{InputError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A GPU or other accelerator (XPU): runs ranks; its type names a catalog entry.
    Gpu,
    /// Scale-up switch (NVSwitch, XPU switch): its GPUs form a scale-up domain; it may reduce
    /// in-network (NVLS).
    NvSwitch,
    /// Scale-out network switch (ToR/ASW, spine/PSW, core/DSW: see [`Tier`]).
    Switch,
    Cpu,
    /// Network interface: forwards between its host side and the network.
    Nic,
    /// Host DRAM or a CXL Type-3 memory expander ([`MemorySpec`]).
    Memory,
    PcieSwitch,
    CxlSwitch,
}

impl NodeKind {
    pub const NAMES: &'static str = "gpu, nvswitch, switch, cpu, nic, memory, pcie_switch, cxl_switch";

    pub fn name(self) -> &'static str {
        match self {
            NodeKind::Gpu => "gpu",
            NodeKind::NvSwitch => "nvswitch",
            NodeKind::Switch => "switch",
            NodeKind::Cpu => "cpu",
            NodeKind::Nic => "nic",
            NodeKind::Memory => "memory",
            NodeKind::PcieSwitch => "pcie_switch",
            NodeKind::CxlSwitch => "cxl_switch",
        }
    }

    pub fn parse(text: &str) -> Option<NodeKind> {
        let key = text.to_ascii_lowercase().replace('-', "_");
        let key = match key.as_str() {
            "accelerator" | "xpu" => "gpu",
            "xpu_switch" => "nvswitch",
            k => k,
        };
        [
            NodeKind::Gpu,
            NodeKind::NvSwitch,
            NodeKind::Switch,
            NodeKind::Cpu,
            NodeKind::Nic,
            NodeKind::Memory,
            NodeKind::PcieSwitch,
            NodeKind::CxlSwitch,
        ]
        .into_iter()
        .find(|k| k.name() == key)
    }

    /// Whether routes pass through nodes of this kind without a declaration.
    pub fn forwards(self) -> bool {
        matches!(
            self,
            NodeKind::NvSwitch | NodeKind::Switch | NodeKind::Nic | NodeKind::PcieSwitch | NodeKind::CxlSwitch
        )
    }
}

/// Tier of a scale-out switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    Tor,
    Spine,
    Core,
}

impl Tier {
    pub fn parse(text: &str) -> Option<Tier> {
        match text.to_ascii_lowercase().as_str() {
            "tor" | "leaf" | "asw" => Some(Tier::Tor),
            "spine" | "psw" => Some(Tier::Spine),
            "core" | "dsw" => Some(Tier::Core),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Host DRAM behind a CPU.
    Dram,
    /// CXL Type-3 memory expander.
    Cxl,
}

/// A memory device's capacity and how fast it serves requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemorySpec {
    pub kind: MemoryKind,
    pub capacity_bytes: f64,
    /// Bytes per ns.
    pub bandwidth: f64,
    pub latency_ns: f64,
    /// Bytes a reader keeps in flight to it (∞: no bound; [`window`]).
    pub window_bytes: f64,
}

/// What a node is beyond its kind (defaults for nodes of a SimAI file).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeAttrs {
    /// The name the input gave it (errors and reports).
    pub name: Option<String>,
    /// Accelerator type, a catalog name (A100, H100, MI300X, ...); None: the platform's `gpu_type`.
    pub accelerator: Option<String>,
    /// The accelerator's FLOPS per dtype and local memory, where the input gave or resolved one.
    pub xpu: Option<xpu::XpuSpec>,
    pub memory: Option<MemorySpec>,
    /// A scale-up switch that reduces in-network (NVLS).
    pub reduction: bool,
    pub tier: Option<Tier>,
    /// Declared to forward though its kind does not.
    pub forwards: bool,
    /// A switch of an RDMA fabric (`transport=`): its links' rates are already the payload share
    /// of their line rate ([`crate::platform::file`]); kept so models can recover the line rate.
    pub transport: Option<crate::catalog::transport::Transport>,
}

/// One direction of a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    pub src: u32,
    pub dst: u32,
    /// Bytes per ns (GB/s).
    pub bandwidth: f64,
    pub latency_ns: f64,
    /// Per-packet drop probability from the SimAI file (kept for round trips; the flow model
    /// does not use it).
    pub error_rate: f64,
}

/// How the fabric's switches spread a flow over equal-cost next hops (a property of the fabric;
/// a SimAI file does not say, so a parsed topology uses per-flow ECMP until told otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    /// Per-flow ECMP: each switch hashes a flow's header (RoCE: one UDP source port per queue
    /// pair) onto one of its equal-cost next hops, and the flow stays there; two flows hashed
    /// onto one link share it, whatever the other links carry.
    #[default]
    Ecmp,
    /// Per-packet spraying / adaptive routing (NVIDIA Spectrum-X): each switch spreads a flow's
    /// packets evenly over all its equal-cost next hops. As a fluid, a flow becomes one sub-flow
    /// per path carrying the product of the 1/k splits along it, which is exact for ideal
    /// spraying (equal packet shares per port, reordering absorbed at the receiver).
    Spray,
}

impl Routing {
    pub fn parse(text: &str) -> Result<Routing> {
        match text.trim().to_ascii_lowercase().as_str() {
            "ecmp" => Ok(Routing::Ecmp),
            "spray" => Ok(Routing::Spray),
            _ => Err(InputError::field("fabric", "routing", format!("'{text}' is not ecmp or spray"))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Routing::Ecmp => "ecmp",
            Routing::Spray => "spray",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    pub kinds: Vec<NodeKind>,
    pub links: Vec<Link>,
    /// Rank → device, scale-up domain and rail.
    pub placement: Placement,
    /// Type of the accelerators that name none (SimAI's gpu_type field, written back unchanged).
    pub gpu_type: String,
    /// Per-node attributes; empty when no node has any (a SimAI file).
    pub attrs: Vec<NodeAttrs>,
    /// Per-flow ECMP or per-packet spraying ([`Routing`]); not part of the SimAI file.
    pub routing: Routing,
    out_start: Vec<u32>,
    out_links: Vec<u32>,
    in_start: Vec<u32>,
    in_links: Vec<u32>,
    /// Rank on each node (u32::MAX where none).
    rank_on: Vec<u32>,
    /// NVSwitch nodes of each scale-up domain (CSR over domains).
    nvs_start: Vec<u32>,
    nvs: Vec<u32>,
}

fn csr(n: usize, keys: impl Iterator<Item = u32> + Clone) -> (Vec<u32>, Vec<u32>) {
    let mut start = vec![0u32; n + 1];
    for k in keys.clone() {
        start[k as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut items = vec![0u32; start[n] as usize];
    for (i, k) in keys.enumerate() {
        items[fill[k as usize] as usize] = i as u32;
        fill[k as usize] += 1;
    }
    (start, items)
}

/// [`csr`] of (key, item) pairs: the items of each key, in the order given.
fn csr_of(n: usize, pairs: impl Iterator<Item = (u32, u32)> + Clone) -> (Vec<u32>, Vec<u32>) {
    let (start, index) = csr(n, pairs.clone().map(|p| p.0));
    let items: Vec<u32> = pairs.map(|p| p.1).collect();
    (start, index.into_iter().map(|i| items[i as usize]).collect())
}

impl Platform {
    /// Build from arrays in SimAI's convention (the bulk path for NetworkX graphs): GPUs are
    /// nodes `0..G` and run ranks `0..G` on servers of `gpus_per_server`; every other node is a
    /// switch; `links` are directed. `source` names the input in errors.
    pub fn from_parts(
        source: &str,
        kinds: Vec<NodeKind>,
        links: Vec<Link>,
        gpus_per_server: u32,
        gpu_type: &str,
    ) -> Result<Platform> {
        let gpus = kinds.iter().take_while(|k| **k == NodeKind::Gpu).count() as u32;
        if let Some(i) = kinds.iter().skip(gpus as usize).position(|k| *k == NodeKind::Gpu) {
            return Err(InputError::field(
                source,
                "nodes",
                format!("GPU ids must be 0..{gpus} before all switches, but node {} is a GPU", i + gpus as usize),
            ));
        }
        if gpus_per_server == 0 {
            return Err(InputError::field(source, "gpus_per_server", "must be at least 1"));
        }
        let placement = Placement::servers(gpus, gpus_per_server);
        Platform::new(source, kinds, links, Vec::new(), placement, gpu_type)
    }

    /// A platform of any typed nodes: `attrs` empty or one per node, ranks placed on GPU nodes
    /// by `placement`. NVSwitches belong to the scale-up domain of the first ranked GPU they
    /// link to. Every ranked GPU must reach every other.
    pub fn new(
        source: &str,
        kinds: Vec<NodeKind>,
        links: Vec<Link>,
        attrs: Vec<NodeAttrs>,
        placement: Placement,
        gpu_type: &str,
    ) -> Result<Platform> {
        let n = kinds.len();
        if n > u32::MAX as usize / 2 {
            return Err(InputError::field(source, "nodes", format!("{n} nodes is too many")));
        }
        if !attrs.is_empty() && attrs.len() != n {
            return Err(InputError::internal(source, format!("{} node attributes for {n} nodes", attrs.len())));
        }
        if placement.ranks() == 0 {
            return Err(InputError::field(source, "nodes", "no GPU nodes"));
        }
        let name = |v: u32| attrs.get(v as usize).and_then(|a| a.name.clone()).unwrap_or_else(|| v.to_string());
        for r in 0..placement.ranks() {
            let d = placement.device(r);
            let kind = kinds.get(d as usize).copied();
            if kind != Some(NodeKind::Gpu) {
                let what =
                    kind.map_or(format!("node {d}, which does not exist"), |k| format!("{} '{}'", k.name(), name(d)));
                return Err(InputError::field(
                    source,
                    &format!("rank {r}"),
                    format!("runs on {what}, not an accelerator"),
                ));
            }
        }
        let mut names = std::collections::HashMap::new();
        for (v, a) in attrs.iter().enumerate() {
            if let Some(first) = a.name.as_ref().and_then(|nm| names.insert(nm.as_str(), v)) {
                return Err(InputError::field(
                    source,
                    "nodes",
                    format!("nodes {first} and {v} are both named '{}'", a.name.as_deref().unwrap_or("")),
                ));
            }
        }
        for (i, l) in links.iter().enumerate() {
            let what = |m: String| InputError::field(source, &format!("link {i} ({} -> {})", l.src, l.dst), m);
            if l.src as usize >= n || l.dst as usize >= n {
                return Err(what(format!("node id out of range 0..{n}")));
            }
            if l.src == l.dst {
                return Err(what("a link from a node to itself".into()));
            }
            if !(l.bandwidth.is_finite() && l.bandwidth > 0.0) {
                return Err(what(format!("bandwidth {} B/ns must be positive", l.bandwidth)));
            }
            if !(l.latency_ns.is_finite() && l.latency_ns >= 0.0) {
                return Err(what(format!("latency {} ns must be finite and non-negative", l.latency_ns)));
            }
        }
        let (out_start, out_links) = csr(n, links.iter().map(|l| l.src));
        let (in_start, in_links) = csr(n, links.iter().map(|l| l.dst));
        let rank_on = placement.rank_on(n);
        let mut owner: Vec<(u32, u32)> = Vec::new();
        for (v, k) in kinds.iter().enumerate() {
            if *k == NodeKind::NvSwitch {
                let range = out_start[v] as usize..out_start[v + 1] as usize;
                let ranked = out_links[range].iter().map(|&l| rank_on[links[l as usize].dst as usize]);
                if let Some(r) = ranked.into_iter().find(|&r| r != u32::MAX) {
                    owner.push((placement.domain(r), v as u32));
                }
            }
        }
        let (nvs_start, idx) = csr(placement.domains() as usize, owner.iter().map(|o| o.0));
        let nvs = idx.iter().map(|&i| owner[i as usize].1).collect();
        let t = Platform {
            kinds,
            links,
            rank_on,
            placement,
            gpu_type: gpu_type.to_string(),
            attrs,
            routing: Routing::Ecmp,
            out_start,
            out_links,
            in_start,
            in_links,
            nvs_start,
            nvs,
        };
        t.check_connected(source)?;
        Ok(t)
    }

    /// Take the links marked in `down` out of the adjacency lists, so that routes no longer
    /// find them; link ids, and so every per-link table, stay as they are (a fault,
    /// [`fault::Fault`]).
    pub fn route_around(&mut self, down: &[bool]) {
        let n = self.kinds.len();
        let up = |i: &usize| !down.get(*i).copied().unwrap_or(false);
        let live = |key: fn(&Link) -> u32| {
            self.links.iter().enumerate().filter(|(i, _)| up(i)).map(move |(i, l)| (key(l), i as u32))
        };
        (self.out_start, self.out_links) = csr_of(n, live(|l| l.src));
        (self.in_start, self.in_links) = csr_of(n, live(|l| l.dst));
    }

    /// Read either format: a platform file (its first statement is `node`) or a SimAI topology
    /// file.
    pub fn parse_text(file: &str, text: &str) -> Result<Platform> {
        let first = text.lines().map(|l| l.split('#').next().unwrap_or("").trim()).find(|l| !l.is_empty());
        if first.is_some_and(|l| l.split_whitespace().next() == Some("node")) {
            Platform::parse_platform(file, text)
        } else {
            Platform::parse_simai(file, text)
        }
    }

    /// The name of `node`: the one its input gave, else its id.
    pub fn node_name(&self, node: u32) -> String {
        self.attrs.get(node as usize).and_then(|a| a.name.clone()).unwrap_or_else(|| node.to_string())
    }

    /// Catalog type of the accelerator `node`.
    pub fn accelerator_type(&self, node: u32) -> &str {
        self.attrs.get(node as usize).and_then(|a| a.accelerator.as_deref()).unwrap_or(&self.gpu_type)
    }

    /// Whether scale-up `domain` has a switch that reduces in-network: a declared one, or, in a
    /// SimAI file (no attributes), any NVSwitch of GPUs newer than Ampere (NVLS came with the
    /// third-generation NVSwitch of Hopper systems) or of a type NCCL has no figures for.
    pub fn reduces_in_switch(&self, domain: u32) -> bool {
        let nvs = self.nvswitches(domain);
        if self.attrs.is_empty() {
            return !nvs.is_empty() && !matches!(Catalog::arch_of(&self.gpu_type), Some(Arch::Volta | Arch::Ampere));
        }
        nvs.iter().any(|&s| self.attrs[s as usize].reduction)
    }

    pub fn node_count(&self) -> u32 {
        self.kinds.len() as u32
    }

    /// Directed links leaving `node`.
    pub fn out_links(&self, node: u32) -> &[u32] {
        &self.out_links[self.out_start[node as usize] as usize..self.out_start[node as usize + 1] as usize]
    }

    /// Directed links entering `node`.
    pub fn in_links(&self, node: u32) -> &[u32] {
        &self.in_links[self.in_start[node as usize] as usize..self.in_start[node as usize + 1] as usize]
    }

    /// Rank running on `node`, if it is an accelerator that runs one.
    pub fn rank_on(&self, node: u32) -> Option<u32> {
        self.rank_on.get(node as usize).copied().filter(|&r| r != u32::MAX)
    }

    /// Scale-up domain of the accelerator `node` (None for other nodes).
    pub fn domain_of(&self, node: u32) -> Option<u32> {
        self.rank_on(node).map(|r| self.placement.domain(r))
    }

    /// NVSwitch nodes of scale-up `domain` (empty when it has none or does not exist).
    pub fn nvswitches(&self, domain: u32) -> &[u32] {
        let s = domain as usize;
        if s + 1 >= self.nvs_start.len() {
            return &[];
        }
        &self.nvs[self.nvs_start[s] as usize..self.nvs_start[s + 1] as usize]
    }

    /// Whether routes may pass through `node` (the reachability rule of the module doc).
    pub fn is_transit(&self, node: u32) -> bool {
        self.kinds[node as usize].forwards() || self.attrs.get(node as usize).is_some_and(|a| a.forwards)
    }

    /// Nodes reachable from `from` (forward) or reaching it (`reverse`), passing only through
    /// switches.
    fn reach(&self, from: u32, reverse: bool) -> Vec<bool> {
        let mut seen = vec![false; self.kinds.len()];
        seen[from as usize] = true;
        let mut stack = vec![from];
        while let Some(u) = stack.pop() {
            if u != from && !self.is_transit(u) {
                continue;
            }
            let ls = if reverse { self.in_links(u) } else { self.out_links(u) };
            for &l in ls {
                let l = &self.links[l as usize];
                let v = if reverse { l.src } else { l.dst };
                if !seen[v as usize] {
                    seen[v as usize] = true;
                    stack.push(v);
                }
            }
        }
        seen
    }

    /// Every rank's GPU must reach rank 0's and be reached from it; a pair that still cannot
    /// talk is an error from the router when a flow needs it.
    fn check_connected(&self, source: &str) -> Result<()> {
        let p = &self.placement;
        for reverse in [true, false] {
            let seen = self.reach(p.device(0), reverse);
            if let Some(r) = (0..p.ranks()).find(|&r| !seen[p.device(r) as usize]) {
                let (a, b) = (self.node_name(p.device(r)), self.node_name(p.device(0)));
                let (a, b) = if reverse { (a, b) } else { (b, a) };
                return Err(InputError::field(
                    source,
                    "links",
                    format!(
                        "the topology is disconnected: GPU {a} cannot reach GPU {b} (routes pass through switches, never through a GPU)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(src: u32, dst: u32) -> Link {
        Link { src, dst, bandwidth: 1.0, latency_ns: 1.0, error_rate: 0.0 }
    }

    #[test]
    fn nvswitches_belong_to_their_servers() {
        // 4 GPUs, 2 per server, one NVSwitch each (4, 5), one switch (6).
        let kinds = [vec![NodeKind::Gpu; 4], vec![NodeKind::NvSwitch; 2], vec![NodeKind::Switch]].concat();
        let mut links = Vec::new();
        for g in 0..4 {
            for (a, b) in [(g, 4 + g / 2), (g, 6)] {
                links.push(link(a, b));
                links.push(link(b, a));
            }
        }
        let t = Platform::from_parts("t", kinds, links, 2, "H100").unwrap();
        assert_eq!((t.nvswitches(0), t.nvswitches(1), t.nvswitches(2)), (&[4][..], &[5][..], &[][..]));
    }

    #[test]
    fn disconnected_gpus_are_named() {
        // Two servers with NVSwitches only: GPU 2 cannot reach GPU 0.
        let kinds = [vec![NodeKind::Gpu; 4], vec![NodeKind::NvSwitch; 2]].concat();
        let links = (0..4).flat_map(|g| [link(g, 4 + g / 2), link(4 + g / 2, g)]).collect();
        let e = Platform::from_parts("t", kinds, links, 2, "H100").unwrap_err();
        assert!(e.message.contains("GPU 2 cannot reach GPU 0"), "{e}");
    }

    #[test]
    fn a_gpu_does_not_forward() {
        // 0 - 1 - 2 wired through GPU 1 only: 2 cannot reach 0.
        let kinds = vec![NodeKind::Gpu; 3];
        let links = vec![link(0, 1), link(1, 0), link(1, 2), link(2, 1)];
        let e = Platform::from_parts("t", kinds, links, 1, "H100").unwrap_err();
        assert!(e.message.contains("GPU 2 cannot reach GPU 0"), "{e}");
    }

    #[test]
    fn bad_parts_are_input_errors() {
        let kinds = vec![NodeKind::Gpu, NodeKind::Switch, NodeKind::Gpu];
        let e = Platform::from_parts("t", kinds, vec![], 1, "H100").unwrap_err();
        assert!(e.message.contains("node 2 is a GPU"), "{e}");
        let kinds = vec![NodeKind::Gpu, NodeKind::Gpu];
        let e = Platform::from_parts("t", kinds, vec![link(0, 5)], 1, "H100").unwrap_err();
        assert!(e.to_string().contains("link 0 (0 -> 5)"), "{e}");
    }
}
