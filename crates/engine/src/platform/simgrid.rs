//! The platform as a SimGrid platform file (XML, version 4.1; simgrid.org/doc "Describing your
//! Simulated Platform"), so that SimGrid-based tools such as HCSim can run on it and SimGrid can
//! check our flow model on it.
//!
//! One zone. Hosts are the nodes that compute or hold data (XPUs, CPUs, memory devices); an
//! XPU's speed is its peak FLOP/s in the chosen data type, with every data type's figure and its
//! memory as properties; a host that does not compute gets speed 1 flop/s (SimGrid requires
//! one). A full-duplex link (two directed links of equal rate and latency) is one SPLITDUPLEX
//! link, a directed one a SHARED link used one way. Routes:
//!
//! - `Full`: one route per ordered pair of hosts, written from our own router (the path a flow
//!   numbered 0 takes; [`super::routing::Router`]), so SimGrid moves every byte over the links
//!   our flow model uses and the two can be compared exactly. n² routes: for small platforms.
//! - `Floyd` / `Dijkstra`: switches and NICs become routers and each directed link is a route
//!   between its two ends; SimGrid finds shortest paths itself (by hop count), which may differ
//!   from ours where several paths tie or where SimGrid would pass through a host. Linear in
//!   size; Floyd's O(n³) set-up suits a few thousand nodes, Dijkstra (computed on demand, cached)
//!   any size.

use std::collections::HashMap;
use std::fmt::Write;

use super::routing::Router;
use super::xpu::Dtype;
use super::{NodeKind, Platform};
use crate::error::{InputError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimgridRouting {
    Full,
    Floyd,
    Dijkstra,
}

impl SimgridRouting {
    pub fn parse(text: &str) -> Option<SimgridRouting> {
        match text.to_ascii_lowercase().as_str() {
            "full" => Some(SimgridRouting::Full),
            "floyd" => Some(SimgridRouting::Floyd),
            "dijkstra" => Some(SimgridRouting::Dijkstra),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SimgridRouting::Full => "Full",
            SimgridRouting::Floyd => "Floyd",
            SimgridRouting::Dijkstra => "DijkstraCache",
        }
    }
}

/// Text safe inside an XML attribute.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => {
                let _ = write!(out, "&#{};", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// The SimGrid link a directed link is part of, and the direction it is crossed in ("UP",
/// "DOWN"; None for a SHARED link).
type SimgridLink = (u32, Option<&'static str>);

/// Whether `kind` is a SimGrid host (else a router or nothing).
pub fn is_host(kind: NodeKind) -> bool {
    matches!(kind, NodeKind::Gpu | NodeKind::Cpu | NodeKind::Memory)
}

impl Platform {
    /// SimGrid link of each directed link: (SimGrid link number, direction "UP"/"DOWN" or None
    /// for a SHARED link), and the SimGrid links as (first directed link, duplex).
    fn simgrid_links(&self) -> (Vec<SimgridLink>, Vec<(usize, bool)>) {
        let key = |i: usize| {
            let l = &self.links[i];
            (l.src, l.dst, l.bandwidth.to_bits(), l.latency_ns.to_bits())
        };
        let mut open: HashMap<(u32, u32, u64, u64), Vec<u32>> = HashMap::new();
        let mut of = vec![(u32::MAX, None); self.links.len()];
        let mut sg: Vec<(usize, bool)> = Vec::new();
        for i in 0..self.links.len() {
            let (s, d, b, l) = key(i);
            if let Some(k) = open.get_mut(&(d, s, b, l)).and_then(|v| v.pop()) {
                sg[k as usize].1 = true;
                of[sg[k as usize].0].1 = Some("UP");
                of[i] = (k, Some("DOWN"));
            } else {
                let k = sg.len() as u32;
                sg.push((i, false));
                of[i] = (k, None);
                open.entry((s, d, b, l)).or_default().push(k);
            }
        }
        (of, sg)
    }

    /// The SimGrid platform XML (module doc); `dtype` picks the XPU speed's data type (an XPU
    /// without a figure for it gets its highest one), `seed` the router's ECMP choices.
    pub fn to_simgrid(&self, routing: SimgridRouting, dtype: Dtype, seed: u64) -> Result<String> {
        let mut out = String::with_capacity(256 * self.links.len());
        out.push_str("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
        out.push_str("<platform version=\"4.1\">\n");
        let _ = writeln!(out, "<zone id=\"platform\" routing=\"{}\">", routing.name());
        let hosts: Vec<u32> = (0..self.node_count()).filter(|&v| is_host(self.kinds[v as usize])).collect();
        for &v in &hosts {
            self.write_host(&mut out, v, dtype);
        }
        if routing != SimgridRouting::Full {
            for v in (0..self.node_count()).filter(|&v| !is_host(self.kinds[v as usize])) {
                let _ = writeln!(out, "  <router id=\"{}\"/>", xml(&self.node_name(v)));
            }
        }
        let (of, sg) = self.simgrid_links();
        for (k, &(i, duplex)) in sg.iter().enumerate() {
            let l = &self.links[i];
            let _ = writeln!(
                out,
                "  <link id=\"l{k}\" bandwidth=\"{:e}Bps\" latency=\"{:e}s\" sharing_policy=\"{}\"/>",
                l.bandwidth * 1e9,
                l.latency_ns * 1e-9,
                if duplex { "SPLITDUPLEX" } else { "SHARED" }
            );
        }
        let names: Vec<String> = (0..self.node_count()).map(|v| xml(&self.node_name(v))).collect();
        let ctn = |out: &mut String, link: u32| {
            let (k, dir) = of[link as usize];
            match dir {
                Some(d) => {
                    let _ = write!(out, "<link_ctn id=\"l{k}\" direction=\"{d}\"/>");
                }
                None => {
                    let _ = write!(out, "<link_ctn id=\"l{k}\"/>");
                }
            }
        };
        if routing == SimgridRouting::Full {
            let mut router = Router::new(self, seed);
            let mut path = Vec::new();
            for &a in &hosts {
                for &b in &hosts {
                    path.clear();
                    if a == b || router.route(self, a, b, 0, &mut path).is_err() {
                        continue;
                    }
                    let _ = write!(
                        out,
                        "  <route src=\"{}\" dst=\"{}\" symmetrical=\"NO\">",
                        names[a as usize], names[b as usize]
                    );
                    for &l in &path {
                        ctn(&mut out, l);
                    }
                    out.push_str("</route>\n");
                }
            }
        } else {
            for (i, l) in self.links.iter().enumerate() {
                let _ = write!(
                    out,
                    "  <route src=\"{}\" dst=\"{}\" symmetrical=\"NO\">",
                    names[l.src as usize], names[l.dst as usize]
                );
                ctn(&mut out, i as u32);
                out.push_str("</route>\n");
            }
        }
        out.push_str("</zone>\n</platform>\n");
        if hosts.len() < 2 {
            return Err(InputError::field("platform", "nodes", "a SimGrid platform needs two hosts"));
        }
        Ok(out)
    }

    fn write_host(&self, out: &mut String, v: u32, dtype: Dtype) {
        let name = xml(&self.node_name(v));
        let a = self.attrs.get(v as usize);
        let xpu = a.and_then(|a| a.xpu.as_ref());
        let speed = xpu
            .and_then(|x| x.flops(dtype).or_else(|| Dtype::ALL.iter().filter_map(|&d| x.flops(d)).reduce(f64::max)))
            .unwrap_or(1.0);
        let _ = write!(out, "  <host id=\"{name}\" speed=\"{speed:e}f\">");
        let _ = write!(out, "<prop id=\"kind\" value=\"{}\"/>", self.kinds[v as usize].name());
        if self.kinds[v as usize] == NodeKind::Gpu {
            let _ = write!(out, "<prop id=\"type\" value=\"{}\"/>", xml(self.accelerator_type(v)));
        }
        if let Some(x) = xpu {
            for d in Dtype::ALL {
                if let Some(f) = x.flops(d) {
                    let _ = write!(out, "<prop id=\"{}_flops\" value=\"{f:e}\"/>", d.name());
                }
            }
            let _ = write!(out, "<prop id=\"memory\" value=\"{:e}\"/>", x.memory_bytes);
        }
        if let Some(m) = a.and_then(|a| a.memory) {
            let _ = write!(out, "<prop id=\"memory\" value=\"{:e}\"/>", m.capacity_bytes);
        }
        out.push_str("</host>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::hcsim::HcsimParams;

    #[test]
    fn full_routes_follow_our_router_and_links_pair_up() {
        let mut p = HcsimParams::paper(true, "h100", 16);
        p.servers_per_tor = 1;
        let platform = Platform::hcsim("t", &p).unwrap();
        let text = platform.to_simgrid(SimgridRouting::Full, Dtype::Fp32, 0).unwrap();
        let hosts = (0..platform.node_count()).filter(|&v| is_host(platform.kinds[v as usize])).count();
        assert_eq!(text.matches("<host ").count(), hosts);
        // Every ordered pair of hosts has a route, except CPUs and their DRAM to the CXL
        // expanders: the CXL fabric is reached through XPUs only, and XPUs do not forward.
        let (cpu_side, cxl_mem) = (2 * 2 * 2, 16);
        assert_eq!(hosts, 16 + cpu_side + cxl_mem);
        assert_eq!(text.matches("<route ").count(), hosts * (hosts - 1) - 2 * cpu_side * cxl_mem);
        // Every link is duplex: half as many SimGrid links as directed ones.
        assert_eq!(text.matches("<link id=").count(), platform.links.len() / 2);
        assert!(text.contains("<host id=\"s0.x0\" speed=\"6.7e13f\">"), "{}", &text[..600]);
        // s0.x0 to s1.x0 (one server per rack): over the CXL fabric, server, rack and system switches.
        let line = text.lines().find(|l| l.contains("src=\"s0.x0\" dst=\"s1.x0\"")).unwrap();
        assert_eq!(line.matches("<link_ctn").count(), 6, "{line}");
        let floyd = platform.to_simgrid(SimgridRouting::Floyd, Dtype::Fp32, 0).unwrap();
        assert_eq!(floyd.matches("<route ").count(), platform.links.len());
        assert!(floyd.contains("<router id=\"core.cxl\"/>"));
    }

    #[test]
    fn names_are_escaped() {
        assert_eq!(xml("a\"<b>&'"), "a&quot;&lt;b&gt;&amp;&apos;");
    }
}
