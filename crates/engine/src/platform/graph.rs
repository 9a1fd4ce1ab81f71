//! The platform as a graph document: NetworkX's node-link JSON with HCSim's attribute names
//! (Li et al. 2025, Table 2), read and written here. YAML files, GraphML files and NetworkX
//! graphs reach the engine as this document (the Python side converts them), so one reader
//! checks them all.
//!
//! ```json
//! {"graph": {"name": "two servers"},
//!  "nodes": [
//!    {"id": "x0", "kind": "xpu", "type": "H100"},
//!    {"id": "x1", "kind": "xpu", "type": "my-asic", "fp16_flops": 4e14, "fp32_flops": 1e14, "memory": 6.4e10},
//!    {"id": "sw", "kind": "xpu_switch", "reduction": false},
//!    {"id": "m0", "kind": "memory", "memory_kind": "cxl", "memory": "512GiB"},
//!    {"id": "tor", "kind": "switch", "tier": "tor"}],
//!  "links": [{"source": "x0", "target": "sw", "bandwidth": 9e11, "latency": 1e-7},
//!            {"source": "m0", "target": "sw", "bandwidth": "128GB/s", "latency": "200ns", "directed": true}],
//!  "ranks": ["x1", "x0"]}
//! ```
//!
//! Node attributes: `id` (string or integer), `kind` (gpu/xpu/accelerator, nvswitch/xpu_switch,
//! switch, cpu, nic, memory, pcie_switch, cxl_switch); an XPU has `type` (a catalog name, whose
//! spec is used) and/or its own `<dtype>_flops` (FLOP/s; fp64, fp32, tf32, bf16, fp16, fp8),
//! `memory` (HBM bytes) and `memory_bandwidth` (bytes/s), which override the catalog's; a
//! memory node has `memory` (bytes, or "inf" for unbounded), `memory_kind` (dram or cxl; default
//! dram), `bandwidth` (bytes/s; default unbounded), `latency` (s; default 0) and `window` (the
//! bytes a reader keeps in flight to it, or "inf"; default by kind, [`super::window`]); a switch has
//! `tier` (tor, spine, core); an XPU switch `reduction` (bool); any node `forward` (bool).
//! Links (`links` or `edges`) have `source`, `target`, `bandwidth` (bytes/s) and `latency` (s)
//! and are full duplex unless `"directed": true` (or the graph is directed). Numbers may also
//! be strings with units: rates like `900GB/s` or `400Gbps`, times like `100ns`, capacities
//! like `80GB`. `ranks` lists the XPUs that run ranks 0, 1, ... (default: every XPU in node
//! order). Unknown attributes are errors (a misspelt name would otherwise be ignored). Errors
//! name the file, the node or link, and the field.

use crate::node_link::{id_text, type_name, Doc};
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::file::{parse_bytes, scale_up_domains};
use super::simai::{parse_rate, parse_time};
use super::window::check_window;
use super::xpu::{catalog_names, catalog_xpu, check_capacity, Dtype, XpuSpec};
use super::{Link, MemoryKind, MemorySpec, NodeAttrs, NodeKind, Placement, Platform, Tier};
use crate::error::{InputError, Result};

/// The slowest rate accepted, bytes/ns (1 byte/s): slower is a unit mistake, and a rate this
/// small still writes back and reads again unchanged.
const MIN_RATE: f64 = 1e-9;

/// Attributes NetworkX itself writes into node-link data (ignored).
const NETWORKX_KEYS: [&str; 3] = ["directed", "multigraph", "key"];

impl Doc<'_> {
    /// A number: a JSON number or a string `parse` reads (units), else a type error.
    fn quantity(&self, field: &str, v: &Value, what: &str, parse: impl Fn(&str) -> Option<f64>) -> Result<f64> {
        match v {
            Value::Number(n) => n.as_f64().ok_or_else(|| self.err(field, format!("{n} is not a number"))),
            Value::String(s) => parse(s.trim()).ok_or_else(|| self.err(field, format!("'{s}' is not {what}"))),
            other => Err(self.err(field, format!("expected {what}, got {}", type_name(other)))),
        }
    }

    fn positive(&self, field: &str, x: f64) -> Result<f64> {
        if x.is_finite() && x > 0.0 {
            Ok(x)
        } else {
            Err(self.err(field, format!("{x} must be positive and finite")))
        }
    }

    /// Bytes/s as bytes/ns (checked once converted, so that no rate underflows to 0).
    fn rate(&self, field: &str, v: &Value) -> Result<f64> {
        let per_ns = |s: &str| s.parse::<f64>().ok().map(|x| x / 1e9).or_else(|| parse_rate(s));
        let x = self.quantity(field, v, "a rate in bytes/s (or like 900GB/s)", |s| per_ns(s).map(|b| b * 1e9))?;
        let b = x / 1e9;
        if b.is_finite() && b >= MIN_RATE {
            Ok(b)
        } else {
            Err(self.err(field, format!("{x} bytes/s must be positive and finite (at least 1 byte/s)")))
        }
    }

    /// Seconds as ns.
    fn time(&self, field: &str, v: &Value) -> Result<f64> {
        let secs = |s: &str| s.parse::<f64>().ok().or_else(|| parse_time(s).map(|ns| ns / 1e9));
        let x = self.quantity(field, v, "a time in s (or like 100ns)", secs)? * 1e9;
        if x.is_finite() && x >= 0.0 {
            Ok(x)
        } else {
            Err(self.err(field, format!("{} s must be finite and non-negative", x / 1e9)))
        }
    }

    /// Bytes: a number, a string like 80GB, or inf.
    fn bytes(&self, field: &str, v: &Value, what: &str) -> Result<f64> {
        let bytes = |s: &str| match s.to_ascii_lowercase().as_str() {
            "inf" | "infinity" => Some(f64::INFINITY),
            _ => s.parse::<f64>().ok().or_else(|| parse_bytes(s)),
        };
        self.quantity(field, v, what, bytes)
    }

    fn capacity(&self, field: &str, v: &Value) -> Result<f64> {
        let x = self.bytes(field, v, "a capacity in bytes (or like 80GB, or inf)")?;
        check_capacity(self.file, field, x)
    }
}

/// Whether an id can stand in an error's field (`file:line: field: problem` has no other colon).
fn plain(id: &str) -> bool {
    !id.contains(':') && !id.chars().any(char::is_control)
}

/// Whether an attribute name can stand in an error's field: plain, and not starting with a space.
fn plain_key(key: &str) -> bool {
    plain(key) && !key.is_empty() && !key.starts_with(char::is_whitespace)
}

/// How errors name node `i` with id `id`: by its id where it is plain, else by its position.
fn node_label(i: usize, id: &str) -> String {
    if plain(id) {
        format!("node '{id}'")
    } else {
        format!("node #{i}")
    }
}

impl Platform {
    /// Read a platform graph document (module doc); named XPU types come from the catalog.
    pub fn parse_graph_json(file: &str, text: &str) -> Result<Platform> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            InputError::at(file, e.line().max(1), "JSON", format!("not valid JSON: {msg}"))
        })?;
        Platform::from_graph_value(file, &value)
    }

    /// [`Platform::parse_graph_json`] of a parsed document.
    pub fn from_graph_value(file: &str, value: &Value) -> Result<Platform> {
        let doc = Doc { file };
        let top = value.as_object().ok_or_else(|| doc.err("(top level)", "expected a mapping with nodes and links"))?;
        for key in top.keys() {
            if !matches!(key.as_str(), "nodes" | "links" | "edges" | "ranks" | "graph" | "directed" | "multigraph") {
                return Err(doc.err(
                    "(top level)",
                    format!("unknown key '{key}' (valid: graph, nodes, links or edges, ranks, directed)"),
                ));
            }
        }
        let directed = match top.get("directed") {
            Some(v) => doc.flag("directed", v)?,
            None => false,
        };
        if let Some(g) = top.get("graph") {
            g.as_object().ok_or_else(|| doc.err("graph", format!("expected a mapping, got {}", type_name(g))))?;
        }
        let (nodes, edges) = doc.lists(top)?;
        let mut kinds = Vec::with_capacity(nodes.len());
        let mut attrs = Vec::with_capacity(nodes.len());
        let mut ids: HashMap<String, u32> = HashMap::with_capacity(nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            let at = format!("node {i}");
            let map =
                node.as_object().ok_or_else(|| doc.err(&at, format!("expected a mapping, got {}", type_name(node))))?;
            let id = map.get("id").ok_or_else(|| doc.err(&at, "missing id"))?;
            let name = id_text(id).ok_or_else(|| {
                doc.err(&format!("{at}: id"), format!("expected a string or an integer, got {}", type_name(id)))
            })?;
            let (kind, a) = read_node(&doc, &node_label(i, &name), map, name.clone())?;
            if ids.insert(name.clone(), i as u32).is_some() {
                return Err(doc.err(&node_label(i, &name), "id: two nodes have this id"));
            }
            kinds.push(kind);
            attrs.push(a);
        }
        let mut links = Vec::with_capacity(2 * edges.len());
        for (i, edge) in edges.iter().enumerate() {
            read_link(&doc, i, edge, &ids, directed, &mut links)?;
        }
        let device: Vec<u32> = match top.get("ranks") {
            None => (0..kinds.len() as u32).filter(|&v| kinds[v as usize] == NodeKind::Gpu).collect(),
            Some(Value::Array(r)) => r
                .iter()
                .enumerate()
                .map(|(k, v)| {
                    let field = format!("ranks[{k}]");
                    let name = id_text(v)
                        .ok_or_else(|| doc.err(&field, format!("expected a node id, got {}", type_name(v))))?;
                    let &d = ids.get(&name).ok_or_else(|| doc.err(&field, format!("no node '{name}'")))?;
                    if kinds[d as usize] != NodeKind::Gpu {
                        return Err(doc.err(&field, format!("'{name}' is a {}, not an XPU", kinds[d as usize].name())));
                    }
                    Ok(d)
                })
                .collect::<Result<_>>()?,
            Some(v) => return Err(doc.err("ranks", format!("expected a list of node ids, got {}", type_name(v)))),
        };
        if device.is_empty() {
            return Err(doc.err("nodes", "no XPU nodes: a platform needs accelerators"));
        }
        let domain = scale_up_domains(&kinds, &links, &device);
        let placement = Placement::new(file, device, &domain)?;
        let gpu_type = attrs[placement.device(0) as usize].accelerator.clone().unwrap_or_default();
        Platform::new(file, kinds, links, attrs, placement, &gpu_type)
    }

    /// The platform as a graph document (module doc) that [`Platform::parse_graph_json`] reads
    /// back to the same platform: every attribute written out, XPUs with their full spec, a
    /// directed link paired with its equal reverse as one full-duplex link.
    pub fn to_graph_json(&self, name: &str) -> String {
        let mut nodes = Vec::with_capacity(self.kinds.len());
        for v in 0..self.node_count() {
            nodes.push(Value::Object(self.node_value(v)));
        }
        let mut links = Vec::with_capacity(self.links.len() / 2);
        let key = |l: &Link| (l.src, l.dst, l.bandwidth.to_bits(), l.latency_ns.to_bits());
        let mut open: HashMap<(u32, u32, u64, u64), Vec<usize>> = HashMap::new();
        let mut paired = vec![false; self.links.len()];
        for (i, l) in self.links.iter().enumerate() {
            let twin = Link { src: l.dst, dst: l.src, ..*l };
            if let Some(j) = open.get_mut(&key(&twin)).and_then(|v| v.pop()) {
                paired[j] = true;
                paired[i] = true;
            } else {
                open.entry(key(l)).or_default().push(i);
            }
        }
        // A pair is written at its first direction; the second is skipped.
        let mut skip = vec![false; self.links.len()];
        let mut first_open: HashMap<(u32, u32, u64, u64), Vec<usize>> = HashMap::new();
        for (i, l) in self.links.iter().enumerate() {
            if !paired[i] {
                continue;
            }
            let twin = Link { src: l.dst, dst: l.src, ..*l };
            if first_open.get_mut(&key(&twin)).and_then(|v| v.pop()).is_some() {
                skip[i] = true;
            } else {
                first_open.entry(key(l)).or_default().push(i);
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            if skip[i] {
                continue;
            }
            let mut m = Map::new();
            m.insert("source".into(), Value::String(self.node_name(l.src)));
            m.insert("target".into(), Value::String(self.node_name(l.dst)));
            m.insert("bandwidth".into(), number(l.bandwidth * 1e9));
            m.insert("latency".into(), number(l.latency_ns / 1e9));
            if !paired[i] {
                m.insert("directed".into(), Value::Bool(true));
            }
            links.push(Value::Object(m));
        }
        let ranks = (0..self.placement.ranks()).map(|r| Value::String(self.node_name(self.placement.device(r))));
        let mut graph = Map::new();
        graph.insert("name".into(), Value::String(name.to_string()));
        let mut top = Map::new();
        top.insert("graph".into(), Value::Object(graph));
        top.insert("nodes".into(), Value::Array(nodes));
        top.insert("links".into(), Value::Array(links));
        top.insert("ranks".into(), Value::Array(ranks.collect()));
        serde_json::to_string_pretty(&Value::Object(top)).unwrap_or_default() + "\n"
    }

    fn node_value(&self, v: u32) -> Map<String, Value> {
        let mut m = Map::new();
        let kind = self.kinds[v as usize];
        m.insert("id".into(), Value::String(self.node_name(v)));
        m.insert("kind".into(), Value::String(kind.name().into()));
        let a = self.attrs.get(v as usize).cloned().unwrap_or_default();
        if kind == NodeKind::Gpu {
            m.insert("type".into(), Value::String(self.accelerator_type(v).to_string()));
            if let Some(x) = &a.xpu {
                for d in Dtype::ALL {
                    if let Some(f) = x.flops(d) {
                        m.insert(format!("{}_flops", d.name()), number(f));
                    }
                }
                m.insert("memory".into(), capacity_value(x.memory_bytes));
                if let Some(b) = x.memory_bandwidth {
                    m.insert("memory_bandwidth".into(), number(b * 1e9));
                }
            }
        }
        if let Some(mem) = a.memory {
            m.insert(
                "memory_kind".into(),
                Value::String(if mem.kind == MemoryKind::Cxl { "cxl" } else { "dram" }.into()),
            );
            m.insert("memory".into(), capacity_value(mem.capacity_bytes));
            if mem.bandwidth.is_finite() {
                m.insert("bandwidth".into(), number(mem.bandwidth * 1e9));
            }
            m.insert("latency".into(), number(mem.latency_ns / 1e9));
            m.insert("window".into(), capacity_value(mem.window_bytes));
        }
        if let Some(t) = a.tier {
            let name = match t {
                Tier::Tor => "tor",
                Tier::Spine => "spine",
                Tier::Core => "core",
            };
            m.insert("tier".into(), Value::String(name.into()));
        }
        if kind == NodeKind::NvSwitch {
            m.insert("reduction".into(), Value::Bool(a.reduction));
        }
        if a.forwards {
            m.insert("forward".into(), Value::Bool(true));
        }
        m
    }
}

fn number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

fn capacity_value(bytes: f64) -> Value {
    if bytes.is_finite() {
        number(bytes)
    } else {
        Value::String("inf".into())
    }
}

fn read_node(doc: &Doc, at: &str, map: &Map<String, Value>, name: String) -> Result<(NodeKind, NodeAttrs)> {
    let field = |key: &str| format!("{at}: {key}");
    let kind_value =
        map.get("kind").ok_or_else(|| doc.err(&field("kind"), format!("missing (valid: {})", NodeKind::NAMES)))?;
    let kind_text = doc.text(&field("kind"), kind_value)?;
    let kind = NodeKind::parse(kind_text)
        .ok_or_else(|| doc.err(&field("kind"), format!("unknown kind '{kind_text}' (valid: {})", NodeKind::NAMES)))?;
    let mut a = NodeAttrs { name: Some(name), ..NodeAttrs::default() };
    let mut xpu = XpuSpec::default();
    let (mut memory, mut memory_bandwidth, mut own) = (None, None, false);
    // own: the node gives FLOPS of its own (a user-defined XPU, or a catalog one overridden).
    let mut mem = MemorySpec {
        kind: MemoryKind::Dram,
        capacity_bytes: 0.0,
        bandwidth: f64::INFINITY,
        latency_ns: 0.0,
        window_bytes: f64::NAN,
    };
    let mut window = None;
    for (key, v) in map {
        // A key that cannot stand in the field (a colon, leading space) is named in the message.
        let f = if plain_key(key) { field(key) } else { at.to_string() };
        match (kind, key.as_str()) {
            (_, "id" | "kind") => {}
            (_, k) if NETWORKX_KEYS.contains(&k) => {}
            (_, "forward") => a.forwards = doc.flag(&f, v)?,
            (NodeKind::Gpu, "type") => a.accelerator = Some(doc.text(&f, v)?.to_string()),
            (NodeKind::Gpu | NodeKind::Memory, "memory") => memory = Some(doc.capacity(&f, v)?),
            (NodeKind::Gpu, "memory_bandwidth") => memory_bandwidth = Some(doc.rate(&f, v)?),
            (NodeKind::Gpu, k) if k.ends_with("_flops") => {
                let d = Dtype::parse(&k[..k.len() - 6]).ok_or_else(|| {
                    let valid: Vec<String> = Dtype::ALL.iter().map(|d| format!("{}_flops", d.name())).collect();
                    doc.err(&f, format!("{key:?}: unknown data type (valid: {})", valid.join(", ")))
                })?;
                let x = doc.quantity(&f, v, "FLOP/s", |s| s.parse().ok())?;
                xpu.set_flops(d, doc.positive(&f, x)?);
                own = true;
            }
            (NodeKind::Memory, "memory_kind") => {
                mem.kind = match doc.text(&f, v)?.to_ascii_lowercase().as_str() {
                    "dram" => MemoryKind::Dram,
                    "cxl" => MemoryKind::Cxl,
                    other => return Err(doc.err(&f, format!("unknown memory kind '{other}' (valid: dram, cxl)"))),
                }
            }
            (NodeKind::Memory, "bandwidth") => mem.bandwidth = doc.rate(&f, v)?,
            (NodeKind::Memory, "latency") => mem.latency_ns = doc.time(&f, v)?,
            (NodeKind::Memory, "window") => {
                let x = doc.bytes(&f, v, "a read window in bytes (or like 1MiB, or inf)")?;
                window = Some(check_window(doc.file, &f, x)?);
            }
            (NodeKind::Switch, "tier") => {
                let t = doc.text(&f, v)?;
                a.tier = Some(
                    Tier::parse(t)
                        .ok_or_else(|| doc.err(&f, format!("unknown tier '{t}' (valid: tor, spine, core)")))?,
                );
            }
            (NodeKind::NvSwitch, "reduction") => a.reduction = doc.flag(&f, v)?,
            _ => return Err(doc.err(&f, format!("a {} node has no attribute {key:?}", kind.name()))),
        }
    }
    match kind {
        NodeKind::Gpu => {
            let mut spec = match a.accelerator.as_deref() {
                Some(t) => match catalog_xpu(t) {
                    Some((canonical, s)) => {
                        a.accelerator = Some(canonical);
                        s
                    }
                    None if own => XpuSpec::default(),
                    None => {
                        return Err(doc.err(
                            &field("type"),
                            format!(
                                "unknown XPU type '{t}' (catalog: {}; or give its <dtype>_flops and memory)",
                                catalog_names()
                            ),
                        ))
                    }
                },
                None if own => XpuSpec::default(),
                None => {
                    return Err(doc.err(
                        &field("type"),
                        format!(
                            "an XPU needs a type (catalog: {}) or its own <dtype>_flops and memory",
                            catalog_names()
                        ),
                    ))
                }
            };
            for d in Dtype::ALL {
                if let Some(f) = xpu.flops(d) {
                    spec.set_flops(d, f);
                }
            }
            if a.accelerator.is_none() {
                a.accelerator = Some("custom".into());
            }
            if let Some(m) = memory {
                spec.memory_bytes = m;
            } else if spec.memory_bytes == 0.0 {
                return Err(doc.err(&field("memory"), "a user-defined XPU needs its memory (HBM bytes)"));
            }
            if memory_bandwidth.is_some() {
                spec.memory_bandwidth = memory_bandwidth;
            }
            spec.check(doc.file, at)?;
            a.xpu = Some(spec);
        }
        NodeKind::Memory => {
            mem.capacity_bytes =
                memory.ok_or_else(|| doc.err(&field("memory"), "a memory node needs its capacity (bytes, or inf)"))?;
            mem.window_bytes = window.unwrap_or(mem.kind.default_window());
            a.memory = Some(mem);
        }
        _ => {}
    }
    Ok((kind, a))
}

fn read_link(
    doc: &Doc,
    i: usize,
    edge: &Value,
    ids: &HashMap<String, u32>,
    directed: bool,
    out: &mut Vec<Link>,
) -> Result<()> {
    let at = format!("link {i}");
    let map = edge.as_object().ok_or_else(|| doc.err(&at, format!("expected a mapping, got {}", type_name(edge))))?;
    let [(s, a), (t, b)] = doc.ends(&at, map, ids, "node")?;
    let at = if plain(&s) && plain(&t) { format!("link {i} ({s} -> {t})") } else { at };
    if a == b {
        return Err(doc.err(&format!("{at}: target"), "a link from a node to itself"));
    }
    let (mut bandwidth, mut latency_ns, mut simplex) = (None, None, directed);
    for (key, v) in map {
        let f = if plain_key(key) { format!("{at}: {key}") } else { at.clone() };
        match key.as_str() {
            "source" | "target" | "key" | "id" => {}
            "bandwidth" => bandwidth = Some(doc.rate(&f, v)?),
            "latency" => latency_ns = Some(doc.time(&f, v)?),
            "directed" => simplex = doc.flag(&f, v)?,
            _ => {
                return Err(doc.err(
                    &f,
                    format!("unknown attribute {key:?} (valid: source, target, bandwidth, latency, directed)"),
                ))
            }
        }
    }
    let bandwidth = bandwidth.ok_or_else(|| doc.err(&format!("{at}: bandwidth"), "missing (bytes/s)"))?;
    let latency_ns = latency_ns.ok_or_else(|| doc.err(&format!("{at}: latency"), "missing (s)"))?;
    out.push(Link { src: a, dst: b, bandwidth, latency_ns, error_rate: 0.0 });
    if !simplex {
        out.push(Link { src: b, dst: a, bandwidth, latency_ns, error_rate: 0.0 });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
