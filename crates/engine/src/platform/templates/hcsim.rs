//! The two systems of the HCSim paper (Li et al., "Performance Modeling and Optimization for
//! Large-Scale Heterogeneous Consistency Integrated Computing System", JCRD 2025, §3.1, Fig. 6):
//!
//! - `hcsim-pcie` (Fig. 6a, no coherence): per server 2 CPUs joined by UPI; under each CPU one PCIe
//!   switch holding 4 XPUs and joined to its CPU by 4 PCIe links; an XPU switch joining the
//!   server's 8 XPUs; extension memory (host DRAM) behind each CPU; Ethernet NICs under the
//!   PCIe switches to a ToR per `servers_per_tor` servers (16), and every ToR on one core switch.
//! - `hcsim-cxl` (Fig. 6b): the same plus a CXL fabric joining every XPU (a CXL 3.0 switch per
//!   server, cascaded through a CXL switch per rack and one for the system) and a CXL Type-3
//!   memory expander per XPU on its server's CXL switch, reachable by that XPU without conflict.
//!
//! Link figures default to the paper's Table 5 ([`LinkFigures::TABLE5`]); the CXL link to §3.2's
//! 128 GB/s and 200 ns. What the paper leaves open, and our reading of it:
//! - The 4 PCIe links between a CPU and its PCIe switch are one link of 4 × 128 GB/s (the fluid
//!   equivalent of ideal spreading; one route per pair, as SimGrid needs).
//! - A NIC per PCIe switch (2 per server), on the PCIe switch by a PCIe link, as in the IEIT
//!   NF5468 servers the paper follows; `nics_per_server` changes it.
//! - The CPU–DRAM link is as fast as the CPU's PCIe uplinks (the paper configures the extension
//!   memory so that every XPU reaches it without blocking) with 100 ns (DDR4 load latency).
//! - CXL cascade links carry the sum of the CXL links below them (non-blocking), unless
//!   `cxl_uplink` gives a rate.
//! - Memory capacities default to unbounded, as HCSim allows (Table 2).
//! - Read windows (the bytes an XPU keeps in flight to a device, which bound its read rate by
//!   Little's law) default to the protocols' tag limits ([`crate::platform::window`]); HCSim has none.
//!
//! XPU types are assigned per ToR (the paper keeps the 128 XPUs of one ToR alike): `mix` lists
//! (type, count) in rank order, each count but the last a multiple of the XPUs per ToR.

use crate::error::{InputError, Result};
use crate::platform::window::check_window;
use crate::platform::xpu::{catalog_names, catalog_xpu, check_capacity};
use crate::platform::{Link, MemoryKind, MemorySpec, NodeAttrs, NodeKind, Placement, Platform, Tier};

/// A link class's rate (bytes/ns = GB/s) and latency (ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    pub bandwidth: f64,
    pub latency_ns: f64,
}

/// The link classes of the HCSim systems.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkFigures {
    /// ToR to core switch (Table 5's ToR_to_L1).
    pub tor_core: Figure,
    pub nic_tor: Figure,
    pub upi: Figure,
    /// One PCIe link (XPU or NIC to PCIe switch; a CPU uplink is `pcie_uplinks` of them).
    pub pcie: Figure,
    /// XPU to XPU switch.
    pub xpu: Figure,
    /// XPU or Type-3 device to CXL switch.
    pub cxl: Figure,
    /// CPU to its extension memory.
    pub dram: Figure,
}

impl LinkFigures {
    /// Table 5 of the paper; CXL as in §3.2 (1); DRAM our reading (module doc).
    pub const TABLE5: LinkFigures = LinkFigures {
        tor_core: Figure { bandwidth: 12.5, latency_ns: 5000.0 },
        nic_tor: Figure { bandwidth: 12.5, latency_ns: 5000.0 },
        upi: Figure { bandwidth: 62.4, latency_ns: 100.0 },
        pcie: Figure { bandwidth: 128.0, latency_ns: 250.0 },
        xpu: Figure { bandwidth: 900.0, latency_ns: 100.0 },
        cxl: Figure { bandwidth: 128.0, latency_ns: 200.0 },
        dram: Figure { bandwidth: 512.0, latency_ns: 100.0 },
    };

    /// Every class with its name.
    pub fn all(&self) -> [(&'static str, Figure); 7] {
        [
            ("tor_core", self.tor_core),
            ("nic_tor", self.nic_tor),
            ("upi", self.upi),
            ("pcie", self.pcie),
            ("xpu", self.xpu),
            ("cxl", self.cxl),
            ("dram", self.dram),
        ]
    }

    /// The figure of link class `name` (a name of [`LinkFigures::all`]).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Figure> {
        Some(match name {
            "tor_core" => &mut self.tor_core,
            "nic_tor" => &mut self.nic_tor,
            "upi" => &mut self.upi,
            "pcie" => &mut self.pcie,
            "xpu" => &mut self.xpu,
            "cxl" => &mut self.cxl,
            "dram" => &mut self.dram,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct HcsimParams {
    /// Fig. 6b (a CXL fabric and a Type-3 expander per XPU) rather than Fig. 6a.
    pub coherent: bool,
    /// XPU types in rank order with their counts; the XPU count is their sum.
    pub mix: Vec<(String, u32)>,
    pub xpus_per_server: u32,
    pub servers_per_tor: u32,
    pub cpus_per_server: u32,
    pub nics_per_server: u32,
    /// PCIe links between a CPU and its PCIe switch.
    pub pcie_uplinks: u32,
    pub links: LinkFigures,
    /// CXL cascade links' rate (bytes/ns); None: the sum of the links below (non-blocking).
    pub cxl_uplink: Option<f64>,
    /// Extension memory behind each CPU, bytes (infinite: unbounded).
    pub dram_bytes: f64,
    /// Each XPU's CXL Type-3 expander, bytes.
    pub cxl_memory_bytes: f64,
    /// Read windows of the extension memory and the CXL expanders, bytes ([`crate::platform::window`]).
    pub dram_window_bytes: f64,
    pub cxl_window_bytes: f64,
}

impl HcsimParams {
    /// The paper's configuration (§3.1) of `xpus` XPUs of one `xpu_type`.
    pub fn paper(coherent: bool, xpu_type: &str, xpus: u32) -> HcsimParams {
        HcsimParams {
            coherent,
            mix: vec![(xpu_type.to_string(), xpus)],
            xpus_per_server: 8,
            servers_per_tor: 16,
            cpus_per_server: 2,
            nics_per_server: 2,
            pcie_uplinks: 4,
            links: LinkFigures::TABLE5,
            cxl_uplink: None,
            dram_bytes: f64::INFINITY,
            cxl_memory_bytes: f64::INFINITY,
            dram_window_bytes: MemoryKind::Dram.default_window(),
            cxl_window_bytes: MemoryKind::Cxl.default_window(),
        }
    }
}

/// Nodes and links under construction.
struct Builder {
    kinds: Vec<NodeKind>,
    attrs: Vec<NodeAttrs>,
    links: Vec<Link>,
}

impl Builder {
    fn node(&mut self, kind: NodeKind, name: String) -> u32 {
        self.kinds.push(kind);
        self.attrs.push(NodeAttrs { name: Some(name), ..NodeAttrs::default() });
        (self.kinds.len() - 1) as u32
    }

    fn duplex(&mut self, a: u32, b: u32, f: Figure) {
        for (src, dst) in [(a, b), (b, a)] {
            self.links.push(Link { src, dst, bandwidth: f.bandwidth, latency_ns: f.latency_ns, error_rate: 0.0 });
        }
    }

    fn memory(&mut self, name: String, kind: MemoryKind, capacity_bytes: f64, window_bytes: f64) -> u32 {
        let m = self.node(NodeKind::Memory, name);
        // The link in front of the device limits it; the device itself adds nothing.
        self.attrs[m as usize].memory =
            Some(MemorySpec { kind, capacity_bytes, bandwidth: f64::INFINITY, latency_ns: 0.0, window_bytes });
        m
    }
}

fn check(p: &HcsimParams, source: &str) -> Result<u32> {
    let bad = |field: &str, m: String| InputError::field(source, field, m);
    for (field, v) in [
        ("xpus_per_server", p.xpus_per_server),
        ("servers_per_tor", p.servers_per_tor),
        ("cpus_per_server", p.cpus_per_server),
        ("nics_per_server", p.nics_per_server),
        ("pcie_uplinks", p.pcie_uplinks),
    ] {
        if v == 0 {
            return Err(bad(field, "must be at least 1".into()));
        }
    }
    if !p.xpus_per_server.is_multiple_of(p.cpus_per_server) {
        return Err(bad(
            "xpus_per_server",
            format!("{} XPUs do not split evenly over {} CPUs' PCIe switches", p.xpus_per_server, p.cpus_per_server),
        ));
    }
    if p.mix.is_empty() {
        return Err(bad("mix", "no XPUs".into()));
    }
    let per_tor = p.xpus_per_server as u64 * p.servers_per_tor as u64;
    let mut total: u64 = 0;
    for (i, (t, n)) in p.mix.iter().enumerate() {
        if *n == 0 {
            return Err(bad("mix", format!("{t}: a count of 0 XPUs")));
        }
        if i + 1 < p.mix.len() && !(*n as u64).is_multiple_of(per_tor) {
            return Err(bad(
                "mix",
                format!("{t}:{n}: types are assigned per ToR, so each count but the last is a multiple of the {per_tor} XPUs of a ToR"),
            ));
        }
        total += *n as u64;
    }
    if total > 1 << 22 {
        return Err(bad("mix", format!("{total} XPUs is more than 2^22")));
    }
    for (name, f) in p.links.all() {
        if !(f.bandwidth.is_finite() && f.bandwidth > 0.0) {
            return Err(bad(&format!("link {name}"), format!("bandwidth {} GB/s must be positive", f.bandwidth)));
        }
        if !(f.latency_ns.is_finite() && f.latency_ns >= 0.0) {
            return Err(bad(&format!("link {name}"), format!("latency {} ns must be finite and >= 0", f.latency_ns)));
        }
    }
    if let Some(b) = p.cxl_uplink.filter(|b| !(b.is_finite() && *b > 0.0)) {
        return Err(bad("cxl_uplink", format!("bandwidth {b} GB/s must be positive")));
    }
    check_capacity(source, "dram", p.dram_bytes)?;
    check_capacity(source, "cxl_memory", p.cxl_memory_bytes)?;
    check_window(source, "dram_window", p.dram_window_bytes)?;
    check_window(source, "cxl_window", p.cxl_window_bytes)?;
    Ok(total as u32)
}

impl Platform {
    /// An HCSim system (module doc), its XPU types from the catalog; `source` names the template
    /// in errors.
    pub fn hcsim(source: &str, p: &HcsimParams) -> Result<Platform> {
        let xpus = check(p, source)?;
        let mut specs = Vec::with_capacity(p.mix.len());
        for (t, _) in &p.mix {
            let xpu = catalog_xpu(t).ok_or_else(|| {
                InputError::field(source, "mix", format!("unknown XPU type '{t}' (catalog: {})", catalog_names()))
            })?;
            specs.push(xpu);
        }
        let gps = p.xpus_per_server;
        let servers = xpus.div_ceil(gps);
        let tors = servers.div_ceil(p.servers_per_tor);
        let mut b = Builder { kinds: Vec::new(), attrs: Vec::new(), links: Vec::new() };
        // XPUs first, so that rank r runs on node r.
        let (mut kind_of, mut left) = (0, p.mix[0].1);
        for x in 0..xpus {
            if left == 0 {
                kind_of += 1;
                left = p.mix[kind_of].1;
            }
            left -= 1;
            let v = b.node(NodeKind::Gpu, format!("s{}.x{}", x / gps, x % gps));
            let (name, spec) = &specs[kind_of];
            b.attrs[v as usize].accelerator = Some(name.clone());
            b.attrs[v as usize].xpu = Some(spec.clone());
        }
        let core = b.node(NodeKind::Switch, "core".into());
        b.attrs[core as usize].tier = Some(Tier::Core);
        let tor: Vec<u32> = (0..tors)
            .map(|t| {
                let v = b.node(NodeKind::Switch, format!("tor{t}"));
                b.attrs[v as usize].tier = Some(Tier::Tor);
                b.duplex(v, core, p.links.tor_core);
                v
            })
            .collect();
        // The CXL cascade: a switch per rack on one for the system.
        let mut tor_cxl = Vec::new();
        if p.coherent {
            let c = b.node(NodeKind::CxlSwitch, "core.cxl".into());
            let per_tor = (gps * p.servers_per_tor) as f64;
            for t in 0..tors {
                let v = b.node(NodeKind::CxlSwitch, format!("tor{t}.cxl"));
                let bw = p.cxl_uplink.unwrap_or(p.links.cxl.bandwidth * per_tor);
                b.duplex(v, c, Figure { bandwidth: bw, latency_ns: p.links.cxl.latency_ns });
                tor_cxl.push(v);
            }
        }
        let per_pcie = gps / p.cpus_per_server;
        let uplink =
            Figure { bandwidth: p.links.pcie.bandwidth * p.pcie_uplinks as f64, latency_ns: p.links.pcie.latency_ns };
        for s in 0..servers {
            let first = s * gps;
            let here: Vec<u32> = (first..xpus.min(first + gps)).collect();
            let cpus: Vec<u32> = (0..p.cpus_per_server)
                .map(|c| {
                    let v = b.node(NodeKind::Cpu, format!("s{s}.cpu{c}"));
                    // The root complex passes PCIe traffic on to memory and over UPI.
                    b.attrs[v as usize].forwards = true;
                    v
                })
                .collect();
            for (i, &a) in cpus.iter().enumerate() {
                for &c in &cpus[i + 1..] {
                    b.duplex(a, c, p.links.upi);
                }
            }
            let pcie: Vec<u32> = cpus
                .iter()
                .enumerate()
                .map(|(c, &cpu)| {
                    let v = b.node(NodeKind::PcieSwitch, format!("s{s}.pcie{c}"));
                    b.duplex(cpu, v, uplink);
                    let m = b.memory(format!("s{s}.dram{c}"), MemoryKind::Dram, p.dram_bytes, p.dram_window_bytes);
                    b.duplex(cpu, m, p.links.dram);
                    v
                })
                .collect();
            let xsw = b.node(NodeKind::NvSwitch, format!("s{s}.xsw"));
            for &x in &here {
                b.duplex(x, pcie[((x - first) / per_pcie) as usize], p.links.pcie);
                b.duplex(x, xsw, p.links.xpu);
            }
            for n in 0..p.nics_per_server {
                let v = b.node(NodeKind::Nic, format!("s{s}.nic{n}"));
                b.duplex(pcie[(n % p.cpus_per_server) as usize], v, p.links.pcie);
                b.duplex(v, tor[(s / p.servers_per_tor) as usize], p.links.nic_tor);
            }
            if p.coherent {
                let csw = b.node(NodeKind::CxlSwitch, format!("s{s}.cxl"));
                let bw = p.cxl_uplink.unwrap_or(p.links.cxl.bandwidth * here.len() as f64);
                b.duplex(
                    csw,
                    tor_cxl[(s / p.servers_per_tor) as usize],
                    Figure { bandwidth: bw, latency_ns: p.links.cxl.latency_ns },
                );
                for &x in &here {
                    b.duplex(x, csw, p.links.cxl);
                    let m = b.memory(
                        format!("s{s}.cxlmem{}", x - first),
                        MemoryKind::Cxl,
                        p.cxl_memory_bytes,
                        p.cxl_window_bytes,
                    );
                    b.duplex(m, csw, p.links.cxl);
                }
            }
        }
        let domain: Vec<u32> = (0..xpus).map(|x| x / gps).collect();
        let placement = Placement::new(source, (0..xpus).collect(), &domain)?;
        Platform::new(source, b.kinds, b.links, b.attrs, placement, &specs[0].0)
    }
}

#[cfg(test)]
mod tests;
