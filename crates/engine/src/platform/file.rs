//! The platform file: typed devices, links and the rank mapping, one statement per line.
//!
//! ```text
//! # Two H100 and two A100 on one NVSwitch each, a ToR, a CXL expander behind a CXL switch.
//! node gpu0 gpu type=H100
//! node nvs0 nvswitch reduction=yes
//! node tor0 switch tier=tor
//! node cxl0 memory kind=cxl capacity=512GiB bandwidth=64GB/s latency=250ns
//! node csw0 cxl_switch
//! link gpu0 nvs0 3600Gbps 25ns          # full duplex: one link each way
//! link gpu0 tor0 400Gbps 500ns
//! link cxl0 csw0 64GB/s 100ns simplex   # one direction only
//! rank 0 gpu0                           # optional: GPUs in file order otherwise
//! ```
//!
//! Kinds: `gpu` (also `accelerator`, `xpu`; `type=` names a catalog entry), `nvswitch` (also
//! `xpu_switch`; `reduction=yes` reduces in-network), `switch` (`tier=tor|spine|core`,
//! `transport=ib|roce`: see below), `cpu`,
//! `nic`, `memory` (`kind=dram|cxl`, `capacity`, `bandwidth`, `latency`, optional `window`: the
//! bytes a reader keeps in flight to it, default by kind, [`super::window`]), `pcie_switch`,
//! `cxl_switch`; any node may be declared `forward=yes`. Rates are ns-3 data rates
//! (`400Gbps`, `64GB/s`), times ns-3 times (`25ns`, `1us`), capacities bytes with an SI or IEC
//! prefix (`80GB`, `512GiB`). Scale-up domains are the GPUs joined through NVSwitches (each
//! other GPU alone); a rank's rail is its order among its domain's ranks. Errors name the file,
//! the line and the field.
//!
//! A link's rate is what it carries of payload. A switch declared `transport=ib` or
//! `transport=roce` is part of an RDMA fabric whose links are given at their line rate: every
//! link to or from it carries payload at the line rate × the transport's full-MTU efficiency
//! ([`crate::catalog::transport`]: 4096 / 4122 on InfiniBand, 4096 / 4178 on RoCEv2), the share
//! of the wire that large RDMA messages leave to data. A link between two such switches takes the
//! smaller efficiency. Without `transport=` a rate is taken as it is. The switch keeps its
//! transport ([`super::NodeAttrs::transport`]), so the flow model can cap a NIC's link at what
//! NCCL achieves through a NIC of its line rate (`network/flow/network.rs`, `cap_nic`).

use std::collections::HashMap;

use super::simai::{parse_rate, parse_time};
use super::xpu::XpuSpec;
use super::{Link, MemoryKind, MemorySpec, NodeAttrs, NodeKind, Placement, Platform, Tier};
use crate::catalog::transport::{Transport, INFINIBAND, ROCE_V2};
use crate::catalog::Catalog;
use crate::error::{InputError, Result};

/// Bytes of a capacity like `80GB`, `512GiB` or `4096` (bytes).
pub(crate) fn parse_bytes(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num.parse().ok()?;
    let scale = match unit {
        "" | "B" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024f64.powi(2),
        "GiB" => 1024f64.powi(3),
        "TiB" => 1024f64.powi(4),
        _ => return None,
    };
    let b = value * scale;
    (b.is_finite() && b > 0.0).then_some(b)
}

struct Reader<'a> {
    file: &'a str,
    kinds: Vec<NodeKind>,
    attrs: Vec<NodeAttrs>,
    ids: HashMap<&'a str, (u32, usize)>,
    links: Vec<Link>,
    /// Switches declared with `transport=`: their links' payload share of the line rate.
    transport: HashMap<u32, Transport>,
    /// (rank, device, line)
    ranks: Vec<(u32, u32, usize)>,
}

impl<'a> Reader<'a> {
    fn node(&self, line: usize, field: &str, name: &str) -> Result<u32> {
        self.ids.get(name).map(|&(id, _)| id).ok_or_else(|| {
            InputError::at(self.file, line, field, format!("no node named '{name}' (nodes are declared before use)"))
        })
    }

    fn add_node(&mut self, line: usize, words: &[&'a str]) -> Result<()> {
        let catalog = Catalog::shipped();
        // The catalog's names as platform files name them (lower case, sorted).
        let valid = || {
            let mut names: Vec<&str> = catalog.accelerators.iter().map(|a| a.name.as_str()).collect();
            names.sort_unstable();
            names.join(", ")
        };
        let (file, at) = (self.file, |field: &str, m: String| InputError::at(self.file, line, field, m));
        let [name, kind, options @ ..] = words else {
            return Err(at("node", "expected 'node <name> <kind> [key=value ...]'".into()));
        };
        if let Some(&(_, first)) = self.ids.get(name) {
            return Err(at("node name", format!("'{name}' is already the name of the node on line {first}")));
        }
        let kind = NodeKind::parse(kind)
            .ok_or_else(|| at("node kind", format!("unknown kind '{kind}' (valid: {})", NodeKind::NAMES)))?;
        let mut a = NodeAttrs { name: Some(name.to_string()), ..NodeAttrs::default() };
        let mut memory: HashMap<&str, &str> = HashMap::new();
        let mut transport = None;
        for opt in options {
            let (key, value) =
                opt.split_once('=').ok_or_else(|| at("node option", format!("'{opt}' is not key=value")))?;
            let yes_no = |v: &str| match v.to_ascii_lowercase().as_str() {
                "yes" | "true" | "1" => Ok(true),
                "no" | "false" | "0" => Ok(false),
                _ => Err(InputError::at(file, line, key, format!("'{v}' is not yes or no"))),
            };
            match (kind, key) {
                (_, "forward") => a.forwards = yes_no(value)?,
                (NodeKind::Gpu, "type") => {
                    let known = catalog.accelerator(value);
                    let t = known.ok_or_else(|| {
                        at("type", format!("unknown accelerator type '{value}' (valid: {})", valid()))
                    })?;
                    a.accelerator = Some(t.name.clone());
                    // What it computes with, as a graph document's or a template's XPU of the type.
                    a.xpu = Some(XpuSpec::of(t));
                }
                (NodeKind::NvSwitch, "reduction") => a.reduction = yes_no(value)?,
                (NodeKind::Switch, "tier") => {
                    a.tier = Some(
                        Tier::parse(value)
                            .ok_or_else(|| at("tier", format!("unknown tier '{value}' (valid: tor, spine, core)")))?,
                    )
                }
                (NodeKind::Switch, "transport") => {
                    transport = Some(match value.to_ascii_lowercase().as_str() {
                        "ib" | "infiniband" => INFINIBAND,
                        "roce" | "rocev2" => ROCE_V2,
                        _ => return Err(at("transport", format!("unknown transport '{value}' (valid: ib, roce)"))),
                    })
                }
                (NodeKind::Memory, "kind" | "capacity" | "bandwidth" | "latency" | "window") => {
                    memory.insert(key, value);
                }
                _ => return Err(at(key, format!("a {} node has no option '{key}'", kind.name()))),
            }
        }
        if kind == NodeKind::Gpu && a.accelerator.is_none() {
            return Err(at("type", format!("a gpu needs type=<name> (valid: {})", valid())));
        }
        if kind == NodeKind::Memory {
            let get =
                |key: &str| memory.get(key).copied().ok_or_else(|| at(key, format!("a memory node needs {key}=")));
            let mem_kind = match get("kind")?.to_ascii_lowercase().as_str() {
                "dram" => MemoryKind::Dram,
                "cxl" => MemoryKind::Cxl,
                other => return Err(at("kind", format!("unknown memory kind '{other}' (valid: dram, cxl)"))),
            };
            let (c, b, l) = (get("capacity")?, get("bandwidth")?, get("latency")?);
            a.memory = Some(MemorySpec {
                kind: mem_kind,
                capacity_bytes: parse_bytes(c)
                    .ok_or_else(|| at("capacity", format!("'{c}' is not a capacity like 512GiB")))?,
                bandwidth: parse_rate(b).ok_or_else(|| at("bandwidth", format!("'{b}' is not a rate like 64GB/s")))?,
                latency_ns: parse_time(l).ok_or_else(|| at("latency", format!("'{l}' is not a time like 250ns")))?,
                window_bytes: match memory.get("window") {
                    None => mem_kind.default_window(),
                    Some(&"inf") => f64::INFINITY,
                    Some(w) => parse_bytes(w)
                        .ok_or_else(|| at("window", format!("'{w}' is not a positive size like 1MiB (or inf)")))?,
                },
            });
        }
        if let Some(t) = transport {
            self.transport.insert(self.kinds.len() as u32, t);
        }
        a.transport = transport;
        self.ids.insert(name, (self.kinds.len() as u32, line));
        self.kinds.push(kind);
        self.attrs.push(a);
        Ok(())
    }

    fn add_link(&mut self, line: usize, words: &[&'a str]) -> Result<()> {
        let at = |field: &str, m: String| InputError::at(self.file, line, field, m);
        let (src, dst, rate, delay, simplex) = match words {
            [s, d, r, l] => (s, d, r, l, false),
            [s, d, r, l, "simplex"] => (s, d, r, l, true),
            [_, _, _, _, x] => return Err(at("link", format!("'{x}' after the latency: only 'simplex' may follow"))),
            _ => return Err(at("link", "expected 'link <node> <node> <bandwidth> <latency> [simplex]'".into())),
        };
        let (a, b) = (self.node(line, "link src", src)?, self.node(line, "link dst", dst)?);
        if a == b {
            return Err(at("link dst", format!("a link from '{src}' to itself")));
        }
        let line_rate =
            parse_rate(rate).ok_or_else(|| at("link bandwidth", format!("'{rate}' is not a rate like 400Gbps")))?;
        // An RDMA fabric's link: payload at the line rate less the framing (module doc).
        let efficiency =
            [a, b].iter().filter_map(|n| self.transport.get(n)).map(Transport::efficiency).fold(1.0, f64::min);
        let bandwidth = line_rate * efficiency;
        let latency_ns =
            parse_time(delay).ok_or_else(|| at("link latency", format!("'{delay}' is not a time like 500ns")))?;
        self.links.push(Link { src: a, dst: b, bandwidth, latency_ns, error_rate: 0.0 });
        if !simplex {
            self.links.push(Link { src: b, dst: a, bandwidth, latency_ns, error_rate: 0.0 });
        }
        Ok(())
    }

    fn add_rank(&mut self, line: usize, words: &[&'a str]) -> Result<()> {
        let at = |field: &str, m: String| InputError::at(self.file, line, field, m);
        let [rank, device] = words else {
            return Err(at("rank", "expected 'rank <number> <node>'".into()));
        };
        let r: u32 = rank.parse().map_err(|_| at("rank", format!("'{rank}' is not a rank number")))?;
        let d = self.node(line, "rank device", device)?;
        let kind = self.kinds[d as usize];
        if kind != NodeKind::Gpu {
            return Err(at("rank device", format!("'{device}' is a {}, not an accelerator", kind.name())));
        }
        if let Some(&(_, _, first)) = self.ranks.iter().find(|x| x.0 == r) {
            return Err(at("rank", format!("rank {r} is already mapped on line {first}")));
        }
        if let Some(&(other, _, first)) = self.ranks.iter().find(|x| x.1 == d) {
            return Err(at("rank device", format!("'{device}' already runs rank {other} (line {first})")));
        }
        self.ranks.push((r, d, line));
        Ok(())
    }

    /// Rank → device: the `rank` lines, which must number 0..R, else the GPUs in file order.
    fn placement(&self) -> Result<Placement> {
        let device: Vec<u32> = if self.ranks.is_empty() {
            (0..self.kinds.len() as u32).filter(|&v| self.kinds[v as usize] == NodeKind::Gpu).collect()
        } else {
            let mut by_rank = self.ranks.clone();
            by_rank.sort_unstable();
            if let Some((i, &(r, _, line))) = by_rank.iter().enumerate().find(|(i, x)| x.0 != *i as u32) {
                return Err(InputError::at(
                    self.file,
                    line,
                    "rank",
                    format!("ranks must be numbered 0..{} without gaps; rank {i} is missing before {r}", by_rank.len()),
                ));
            }
            by_rank.iter().map(|x| x.1).collect()
        };
        if device.is_empty() {
            return Err(InputError::field(self.file, "nodes", "no gpu nodes: a platform needs accelerators"));
        }
        let domain = scale_up_domains(&self.kinds, &self.links, &device);
        Placement::new(self.file, device, &domain)
    }
}

/// The scale-up domain of each of `device`: GPUs joined through NVSwitches (union-find over
/// those links) share one; a GPU on no NVSwitch is its own. Ids are node ids (any, unordered).
pub(crate) fn scale_up_domains(kinds: &[NodeKind], links: &[Link], device: &[u32]) -> Vec<u32> {
    let mut parent: Vec<u32> = (0..kinds.len() as u32).collect();
    fn root(parent: &mut [u32], mut v: u32) -> u32 {
        while parent[v as usize] != v {
            parent[v as usize] = parent[parent[v as usize] as usize];
            v = parent[v as usize];
        }
        v
    }
    for l in links {
        let (ka, kb) = (kinds[l.src as usize], kinds[l.dst as usize]);
        let scale_up = |k: NodeKind| matches!(k, NodeKind::Gpu | NodeKind::NvSwitch);
        if scale_up(ka) && scale_up(kb) && (ka == NodeKind::NvSwitch || kb == NodeKind::NvSwitch) {
            let (a, b) = (root(&mut parent, l.src), root(&mut parent, l.dst));
            parent[a as usize] = b;
        }
    }
    device.iter().map(|&d| root(&mut parent, d)).collect()
}

impl Platform {
    /// Read a platform file (module doc); accelerator types are the catalog's.
    pub fn parse_platform(file: &str, text: &str) -> Result<Platform> {
        let mut r = Reader {
            file,
            kinds: Vec::new(),
            attrs: Vec::new(),
            ids: HashMap::new(),
            links: Vec::new(),
            transport: HashMap::new(),
            ranks: Vec::new(),
        };
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let words: Vec<&str> = raw.split('#').next().unwrap_or("").split_whitespace().collect();
            match words.split_first() {
                None => {}
                Some((&"node", rest)) => r.add_node(line, rest)?,
                Some((&"link", rest)) => r.add_link(line, rest)?,
                Some((&"rank", rest)) => r.add_rank(line, rest)?,
                Some((other, _)) => {
                    return Err(InputError::at(
                        file,
                        line,
                        "statement",
                        format!("unknown statement '{other}' (valid: node, link, rank)"),
                    ))
                }
            }
        }
        let placement = r.placement()?;
        let gpu_type = r.attrs[placement.device(0) as usize].accelerator.clone().unwrap_or_default();
        Platform::new(file, r.kinds, r.links, r.attrs, placement, &gpu_type)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn parse(text: &str) -> Result<Platform> {
        Platform::parse_platform("p.platform", text)
    }

    pub(crate) const MIXED: &str = "\
# two servers of different GPU generations and a CXL expander
node h0 gpu type=H100
node h1 gpu type=h100
node nvs0 nvswitch reduction=yes
node a0 gpu type=A100
node a1 gpu type=A100
node nvs1 nvswitch
node tor switch tier=tor
node cxl memory kind=cxl capacity=512GiB bandwidth=64GB/s latency=250ns
node csw cxl_switch
link h0 nvs0 3600Gbps 25ns
link h1 nvs0 3600Gbps 25ns
link a0 nvs1 2400Gbps 25ns
link a1 nvs1 2400Gbps 25ns
link h0 tor 400Gbps 500ns
link h1 tor 400Gbps 500ns
link a0 tor 200Gbps 500ns
link a1 tor 200Gbps 500ns
link cxl csw 64GB/s 100ns
link csw tor 64GB/s 100ns simplex
rank 0 a1
rank 1 h0
rank 2 a0
rank 3 h1
";

    #[test]
    fn a_gpu_computes_with_its_catalog_figures_as_in_a_graph_document() {
        let p = Platform::parse_platform("p.platform", "node g0 gpu type=h100\nnode s switch\nlink g0 s 400Gbps 1us\n")
            .unwrap();
        let (_, h100) = super::super::xpu::catalog_xpu("H100").unwrap();
        assert_eq!(p.attrs[0].xpu.as_ref(), Some(&h100));
        assert!(h100.flops(crate::catalog::Dtype::Bf16).is_some_and(|f| f > 9e14));
    }

    #[test]
    fn a_mixed_platform_keeps_types_domains_and_ranks() {
        let p = parse(MIXED).unwrap();
        assert_eq!(p.node_count(), 9);
        // 13 duplex links and one simplex.
        assert_eq!(p.links.len(), 19);
        let pl = &p.placement;
        assert_eq!((0..4).map(|r| p.node_name(pl.device(r))).collect::<Vec<_>>(), ["a1", "h0", "a0", "h1"]);
        // Domains by NVSwitch, numbered by first rank; rails in rank order within a domain.
        assert_eq!((0..4).map(|r| pl.domain(r)).collect::<Vec<_>>(), [0, 1, 0, 1]);
        assert_eq!((0..4).map(|r| pl.rail(r)).collect::<Vec<_>>(), [0, 0, 1, 1]);
        assert_eq!((p.accelerator_type(pl.device(1)), p.accelerator_type(pl.device(0))), ("h100", "a100"));
        assert_eq!(p.gpu_type, "a100");
        assert!(p.reduces_in_switch(1) && !p.reduces_in_switch(0));
        let mem = p.attrs[7].memory.unwrap();
        assert_eq!(
            (mem.kind, mem.capacity_bytes, mem.bandwidth, mem.latency_ns),
            (MemoryKind::Cxl, 512.0 * (1u64 << 30) as f64, 64.0, 250.0)
        );
        // No window given: CXL.mem's default (16384 lines of 64 B).
        assert_eq!(mem.window_bytes, 1048576.0);
        let wide = parse(&MIXED.replace("latency=250ns", "latency=250ns window=4MiB")).unwrap();
        assert_eq!(wide.attrs[7].memory.unwrap().window_bytes, 4.0 * 1048576.0);
        assert_eq!(p.attrs[6].tier, Some(Tier::Tor));
        // Switches forward, GPUs and memory do not.
        assert!(p.is_transit(8) && p.is_transit(6) && !p.is_transit(0) && !p.is_transit(7));
    }

    #[test]
    fn without_rank_lines_gpus_run_ranks_in_file_order() {
        let text = MIXED.lines().filter(|l| !l.starts_with("rank")).collect::<Vec<_>>().join("\n");
        let p = parse(&text).unwrap();
        assert_eq!((0..4).map(|r| p.node_name(p.placement.device(r))).collect::<Vec<_>>(), ["h0", "h1", "a0", "a1"]);
    }

    /// (replace this line of MIXED with that, expected line, expected field, text in the message)
    fn bad(from: &str, to: &str, line: usize, field: &str, says: &str) {
        assert!(MIXED.contains(from), "{from}");
        let e = parse(&MIXED.replacen(from, to, 1)).unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(line), Some(field)), "{e}");
        assert!(e.message.contains(says), "{e}");
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
    }

    #[test]
    fn a_transport_switch_carries_payload_at_line_rate_less_framing() {
        // 400 Gbit/s = 50 GB/s of line; per 4096-byte packet InfiniBand adds 26 bytes, RoCEv2
        // 62 of headers and 20 of preamble and gap (catalog::transport): by hand,
        // 50 × 4096 / 4122 and 50 × 4096 / 4178 GB/s. NVLink links and links of a plain switch
        // keep their rate.
        let rate = |text: &str, a: &str, b: &str| {
            let p = parse(text).unwrap();
            let id = |name: &str| (0..p.kinds.len() as u32).find(|&v| p.node_name(v) == name).unwrap();
            let (a, b) = (id(a), id(b));
            let l = p.links.iter().find(|l| l.src == a && l.dst == b).unwrap();
            l.bandwidth
        };
        let close = |x: f64, want: f64| assert!((x - want).abs() < 1e-6 * want, "{x} vs {want}");
        let ib = MIXED.replace("node tor switch tier=tor", "node tor switch tier=tor transport=ib");
        close(rate(&ib, "h0", "tor"), 50.0 * 4096.0 / 4122.0);
        close(rate(&ib, "tor", "h0"), 50.0 * 4096.0 / 4122.0);
        close(rate(&ib, "a0", "tor"), 25.0 * 4096.0 / 4122.0);
        close(rate(&ib, "h0", "nvs0"), 450.0);
        let roce = MIXED.replace("node tor switch tier=tor", "node tor switch tier=tor transport=RoCE");
        close(rate(&roce, "h1", "tor"), 50.0 * 4096.0 / 4178.0);
        close(rate(MIXED, "h0", "tor"), 50.0);
    }

    #[test]
    fn bad_input_names_the_line_and_field() {
        bad("rank 2 a0", "rank 2 tor", 23, "rank device", "'tor' is a switch, not an accelerator");
        bad("node a0 gpu", "node h1 gpu", 5, "node name", "already the name of the node on line 3");
        bad("link a1 nvs1", "link a1 nvs9", 14, "link dst", "no node named 'nvs9'");
        bad("node tor switch", "node tor router", 8, "node kind", "unknown kind 'router'");
        bad("type=A100\nnode a1", "type=Z9\nnode a1", 5, "type", "unknown accelerator type 'Z9'");
        bad("capacity=512GiB", "capacity=lots", 9, "capacity", "not a capacity");
        bad("capacity=512GiB", "capacity=512GiB window=0", 9, "window", "not a positive size");
        bad("capacity=512GiB", "capacity=512GiB window=-1MiB", 9, "window", "not a positive size");
        bad("kind=cxl ", "", 9, "kind", "needs kind=");
        bad("link h0 tor 400Gbps 500ns", "link h0 tor 400Gbps", 15, "link", "expected 'link");
        bad("link h0 tor 400Gbps 500ns", "link h0 tor fast 500ns", 15, "link bandwidth", "'fast'");
        bad("rank 3 h1", "rank 3 h0", 24, "rank device", "already runs rank 1");
        bad("rank 3 h1", "rank 5 h1", 24, "rank", "rank 3 is missing");
        bad("node tor switch tier=tor", "node tor switch tier=tor reduction=yes", 8, "reduction", "no option");
        bad("rank 0 a1", "bogus 0 a1", 21, "statement", "unknown statement 'bogus'");
        bad(
            "node tor switch tier=tor",
            "node tor switch tier=tor transport=omnipath",
            8,
            "transport",
            "unknown transport 'omnipath' (valid: ib, roce)",
        );
        bad("node nvs0 nvswitch reduction=yes", "node nvs0 nvswitch transport=ib", 4, "transport", "no option");
        // A GPU with no path to the others.
        let e = parse(&MIXED.replace("link a0 tor 200Gbps 500ns\n", "").replace("link a1 tor 200Gbps 500ns\n", ""))
            .unwrap_err();
        assert!(e.message.contains("cannot reach"), "{e}");
        let e = parse("node s switch\n").unwrap_err();
        assert!(e.message.contains("no gpu nodes"), "{e}");
    }
}
