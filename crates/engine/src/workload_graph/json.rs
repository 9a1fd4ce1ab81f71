//! The workload graph as a document: NetworkX's node-link JSON of a DiGraph with HCSim's
//! Table 3 attributes, read and written here. GraphML files and NetworkX graphs reach the engine
//! as this document (the Python side converts them), so one reader checks them all.
//!
//! ```json
//! {"directed": true, "graph": {"name": "two layers", "iterations": 2},
//!  "nodes": [
//!    {"id": "fp", "kind": "compute", "xpu": "*", "flops": 2e12, "dtype": "fp32", "bytes": 4e9},
//!    {"id": "bp", "kind": "compute", "xpu": "*", "flops": 4e12, "bytes": 9e10, "memory": "auto"},
//!    {"id": "ar", "kind": "communication", "pattern": "allreduce", "participants": "*", "bytes": 1e9},
//!    {"id": "tx", "kind": "communication", "pattern": "p2p", "src": "s0.x0", "dst": "s0.x1", "bytes": 8}],
//!  "links": [{"source": "fp", "target": "bp"}, {"source": "bp", "target": "ar"},
//!            {"source": "ar", "target": "fp", "not_first": true}]}
//! ```
//!
//! Vertex attributes: `id` (string or integer), `kind` (compute, or communication / comm). A
//! compute vertex: `xpu` (a platform XPU's name, a list of names, a comma-separated string of
//! names, or `*` for every XPU running a rank), `flops` (≥ 0), `dtype` (fp64, fp32, tf32, bf16,
//! fp16, fp8; default fp32, as HCSim's study), `bytes` (memory accessed, ≥ 0; default 0),
//! `memory` (`auto`: HBM while it has room, else spilled; `hbm`; or a memory node's name).
//! A communication vertex: `bytes`, `pattern` (allreduce, allgather, reducescatter, alltoall,
//! broadcast, reduce, or p2p), `participants` (as `xpu`; collectives) or `src` and `dst` (p2p),
//! `communicator` (a name: vertices with the same participants and communicator run one at a
//! time; default one per participant set).
//! `start` (HCSim's start-vertex flag) is accepted and ignored: start vertices follow from the
//! edges. Edges (`links` or `edges`): `source`, `target`, `not_first` (bool, default false).
//! Graph attributes: `name`, `iterations` (≥ 1). Numbers may be strings (`"2e12"`); unknown
//! attributes are errors. Errors name the file, the vertex or edge, and the field.

use crate::node_link::{id_text, type_name, Doc};
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{Communication, Compute, Edge, Memory, Pattern, Vertex, VertexKind, WorkloadGraph, Xpus};
use crate::error::{InputError, Result};
use crate::platform::xpu::Dtype;
use crate::workload::Collective;

/// The largest byte or FLOP count accepted (2^62): larger is a unit mistake.
const MAX_COUNT: f64 = (1u64 << 62) as f64;
/// The most iterations a graph may ask for.
pub const MAX_ITERATIONS: u32 = 1 << 20;
/// Attributes NetworkX itself writes into node-link data (ignored).
const NETWORKX_KEYS: [&str; 2] = ["key", "id"];

/// Whether text can stand in an error's field (`file: field: problem` has no other colon).
fn plain(text: &str) -> bool {
    !text.contains(':') && !text.chars().any(char::is_control) && !text.is_empty()
}

/// Whether an attribute name can stand in an error's field: plain, and not starting with a space
/// (`file: edge 0:  x:` would read as a field with no name).
fn plain_key(key: &str) -> bool {
    plain(key) && !key.starts_with(char::is_whitespace)
}

impl Doc<'_> {
    /// A count of bytes or FLOPs: a number or a numeric string, finite, 0 ≤ x ≤ 2^62.
    fn count(&self, field: &str, v: &Value) -> Result<f64> {
        let x = match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            other => return Err(self.err(field, format!("expected a number, got {}", type_name(other)))),
        }
        .ok_or_else(|| self.err(field, format!("'{}' is not a number", v.as_str().unwrap_or("?"))))?;
        if x.is_finite() && (0.0..=MAX_COUNT).contains(&x) {
            Ok(x.round())
        } else {
            Err(self.err(field, format!("{x} must be from 0 to 2^62")))
        }
    }

    /// XPU names: `*`, a name, a comma-separated string of names, or a list of names.
    fn xpus(&self, field: &str, v: &Value) -> Result<Xpus> {
        let names: Vec<String> = match v {
            Value::String(s) if s.trim() == "*" => return Ok(Xpus::All),
            Value::String(s) => s.split(',').map(|p| p.trim().to_string()).collect(),
            Value::Number(_) => vec![id_text(v).ok_or_else(|| self.err(field, format!("{v} is not an XPU name")))?],
            Value::Array(a) => a
                .iter()
                .map(|x| id_text(x).ok_or_else(|| self.err(field, format!("expected XPU names, got {}", type_name(x)))))
                .collect::<Result<_>>()?,
            other => {
                return Err(
                    self.err(field, format!("expected an XPU name, a list of them or *, got {}", type_name(other)))
                )
            }
        };
        if names.is_empty() || names.iter().any(String::is_empty) {
            return Err(self.err(field, "an empty XPU name"));
        }
        Ok(Xpus::Named(names))
    }
}

impl WorkloadGraph {
    /// Read a workload graph document (module doc); `file` names it in errors.
    pub fn parse_json(file: &str, text: &str) -> Result<WorkloadGraph> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            InputError::at(file, e.line().max(1), "JSON", format!("not valid JSON: {msg}"))
        })?;
        WorkloadGraph::from_value(file, &value)
    }

    /// [`WorkloadGraph::parse_json`] of a parsed document.
    pub fn from_value(file: &str, value: &Value) -> Result<WorkloadGraph> {
        let doc = Doc { file };
        let top = value.as_object().ok_or_else(|| doc.err("(top level)", "expected a mapping with nodes and links"))?;
        for key in top.keys() {
            if !matches!(key.as_str(), "nodes" | "links" | "edges" | "graph" | "directed" | "multigraph") {
                return Err(doc.err(
                    "(top level)",
                    format!("unknown key '{key}' (valid: graph, nodes, links or edges, directed, multigraph)"),
                ));
            }
        }
        if let Some(v) = top.get("directed") {
            if !doc.flag("directed", v)? {
                return Err(doc.err("directed", "a workload graph is directed (a NetworkX DiGraph)"));
            }
        }
        if let Some(v) = top.get("multigraph") {
            if doc.flag("multigraph", v)? {
                return Err(doc.err("multigraph", "a workload graph has at most one edge per pair (a DiGraph)"));
            }
        }
        let (mut name, mut iterations) = (String::new(), None);
        if let Some(g) = top.get("graph") {
            let g =
                g.as_object().ok_or_else(|| doc.err("graph", format!("expected a mapping, got {}", type_name(g))))?;
            for (key, v) in g {
                match key.as_str() {
                    "name" => name = doc.text("graph: name", v)?.to_string(),
                    "iterations" => {
                        let k = doc.count("graph: iterations", v)?;
                        if !(1.0..=MAX_ITERATIONS as f64).contains(&k) {
                            return Err(doc.err("graph: iterations", format!("{k} must be from 1 to {MAX_ITERATIONS}")));
                        }
                        iterations = Some(k as u32);
                    }
                    _ => {
                        let f = if plain_key(key) { format!("graph: {key}") } else { "graph".into() };
                        return Err(doc.err(&f, format!("unknown attribute {key:?} (valid: name, iterations)")));
                    }
                }
            }
        }
        let (nodes, edges) = doc.lists(top)?;
        if nodes.len() >= u32::MAX as usize / 2 || edges.len() >= u32::MAX as usize / 2 {
            return Err(doc.err("nodes", "too many vertices or edges"));
        }
        let mut vertices = Vec::with_capacity(nodes.len());
        let mut ids: HashMap<String, u32> = HashMap::with_capacity(nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            let at = format!("vertex {i}");
            let map =
                node.as_object().ok_or_else(|| doc.err(&at, format!("expected a mapping, got {}", type_name(node))))?;
            let id = map.get("id").ok_or_else(|| doc.err(&format!("{at}: id"), "missing"))?;
            let id = id_text(id).ok_or_else(|| {
                doc.err(&format!("{at}: id"), format!("expected a string or an integer, got {}", type_name(id)))
            })?;
            let at = if plain(&id) { format!("vertex '{id}'") } else { at };
            if ids.insert(id.clone(), i as u32).is_some() {
                return Err(doc.err(&format!("{at}: id"), "two vertices have this id"));
            }
            vertices.push(Vertex { kind: read_vertex(&doc, &at, map)?, id });
        }
        let mut pairs = std::collections::HashSet::with_capacity(edges.len());
        let mut out = Vec::with_capacity(edges.len());
        for (i, edge) in edges.iter().enumerate() {
            let e = read_edge(&doc, i, edge, &ids)?;
            if !pairs.insert((e.source, e.target)) {
                return Err(doc.err(&edge_label(i, &vertices, &e), "a second edge between these vertices"));
            }
            out.push(e);
        }
        let order = check_cycles(&doc, &vertices, &out)?;
        Ok(WorkloadGraph { name, iterations, vertices, edges: out, order })
    }

    /// The iteration count: `given` (a command line's), else the graph's, else 1 where the graph
    /// has no cycle; a graph with a cycle and no count is an error naming an edge on it.
    pub fn iteration_count(&self, file: &str, given: Option<u32>) -> Result<u32> {
        let doc = Doc { file };
        if let Some(k) = given.or(self.iterations) {
            if !(1..=MAX_ITERATIONS).contains(&k) {
                return Err(doc.err("iterations", format!("{k} must be from 1 to {MAX_ITERATIONS}")));
            }
            return Ok(k);
        }
        let n = self.vertices.len();
        if self.edges.iter().any(|e| e.not_first) {
            let all = topological(n, &self.edges, |_| true);
            if all.len() < n {
                let i = cycle_edge(n, &self.edges, &all, |_| true);
                return Err(doc.err(
                    "graph: iterations",
                    format!(
                        "missing: the graph has a cycle (through {}) and so needs an iteration count",
                        edge_label(i, &self.vertices, &self.edges[i])
                    ),
                ));
            }
        }
        Ok(1)
    }

    /// The graph as a document that [`WorkloadGraph::parse_json`] reads back to the same graph.
    pub fn to_json(&self) -> String {
        let mut nodes = Vec::with_capacity(self.vertices.len());
        for v in &self.vertices {
            let mut m = Map::new();
            m.insert("id".into(), Value::String(v.id.clone()));
            match &v.kind {
                VertexKind::Compute(c) => {
                    m.insert("kind".into(), "compute".into());
                    m.insert("xpu".into(), xpus_value(&c.xpus));
                    m.insert("flops".into(), number(c.flops));
                    m.insert("dtype".into(), c.dtype.name().into());
                    m.insert("bytes".into(), number(c.bytes));
                    let memory = match &c.memory {
                        Memory::Auto => "auto".to_string(),
                        Memory::Local => "hbm".to_string(),
                        Memory::Node(n) => n.clone(),
                    };
                    m.insert("memory".into(), Value::String(memory));
                }
                VertexKind::Communication(c) => {
                    m.insert("kind".into(), "communication".into());
                    m.insert("bytes".into(), Value::from(c.bytes));
                    match &c.pattern {
                        Pattern::Collective { collective, participants } => {
                            m.insert("pattern".into(), collective.name().into());
                            m.insert("participants".into(), xpus_value(participants));
                        }
                        Pattern::P2p { src, dst } => {
                            m.insert("pattern".into(), "p2p".into());
                            m.insert("src".into(), Value::String(src.clone()));
                            m.insert("dst".into(), Value::String(dst.clone()));
                        }
                    }
                    if let Some(name) = &c.communicator {
                        m.insert("communicator".into(), Value::String(name.clone()));
                    }
                }
            }
            nodes.push(Value::Object(m));
        }
        let links: Vec<Value> = self
            .edges
            .iter()
            .map(|e| {
                let mut m = Map::new();
                m.insert("source".into(), Value::String(self.vertices[e.source as usize].id.clone()));
                m.insert("target".into(), Value::String(self.vertices[e.target as usize].id.clone()));
                if e.not_first {
                    m.insert("not_first".into(), Value::Bool(true));
                }
                Value::Object(m)
            })
            .collect();
        let mut graph = Map::new();
        graph.insert("name".into(), Value::String(self.name.clone()));
        if let Some(k) = self.iterations {
            graph.insert("iterations".into(), Value::from(k));
        }
        let mut top = Map::new();
        top.insert("directed".into(), Value::Bool(true));
        top.insert("multigraph".into(), Value::Bool(false));
        top.insert("graph".into(), Value::Object(graph));
        top.insert("nodes".into(), Value::Array(nodes));
        top.insert("links".into(), Value::Array(links));
        serde_json::to_string(&Value::Object(top)).unwrap_or_default() + "\n"
    }
}

fn number(x: f64) -> Value {
    // Counts are whole numbers up to 2^62: written as integers, exactly.
    if x.fract() == 0.0 && x.abs() < 9.2e18 {
        Value::from(x as i64)
    } else {
        serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

fn xpus_value(x: &Xpus) -> Value {
    match x {
        Xpus::All => "*".into(),
        Xpus::Named(names) => Value::Array(names.iter().map(|n| Value::String(n.clone())).collect()),
    }
}

pub(crate) fn edge_label(i: usize, vertices: &[Vertex], e: &Edge) -> String {
    let (s, t) = (&vertices[e.source as usize].id, &vertices[e.target as usize].id);
    if plain(s) && plain(t) {
        format!("edge {i} ({s} -> {t})")
    } else {
        format!("edge {i}")
    }
}

fn read_vertex(doc: &Doc, at: &str, map: &Map<String, Value>) -> Result<VertexKind> {
    let field = |key: &str| format!("{at}: {key}");
    let kind = map.get("kind").ok_or_else(|| doc.err(&field("kind"), "missing (valid: compute, communication)"))?;
    let kind = doc.text(&field("kind"), kind)?.to_ascii_lowercase();
    let compute = match kind.as_str() {
        "compute" => true,
        "communication" | "comm" => false,
        other => return Err(doc.err(&field("kind"), format!("unknown kind '{other}' (valid: compute, communication)"))),
    };
    let (mut xpus, mut flops, mut dtype, mut bytes, mut memory) = (None, None, Dtype::Fp32, None, Memory::Auto);
    let (mut pattern, mut participants, mut src, mut dst, mut communicator) = (None, None, None, None, None);
    for (key, v) in map {
        let f = if plain_key(key) { field(key) } else { at.to_string() };
        match (compute, key.as_str()) {
            (_, "kind") => {}
            (_, k) if NETWORKX_KEYS.contains(&k) => {}
            (_, "start") => {
                doc.flag(&f, v)?;
            }
            (_, "bytes") => bytes = Some(doc.count(&f, v)?),
            (true, "xpu") => xpus = Some(doc.xpus(&f, v)?),
            (true, "flops") => flops = Some(doc.count(&f, v)?),
            (true, "dtype") => {
                let t = doc.text(&f, v)?;
                dtype = Dtype::parse(t).ok_or_else(|| {
                    let valid: Vec<&str> = Dtype::ALL.iter().map(|d| d.name()).collect();
                    doc.err(&f, format!("unknown data type '{t}' (valid: {})", valid.join(", ")))
                })?;
            }
            (true, "memory") => {
                let t = doc.text(&f, v)?.trim();
                memory = match t.to_ascii_lowercase().as_str() {
                    "auto" => Memory::Auto,
                    "hbm" | "local" => Memory::Local,
                    "" => return Err(doc.err(&f, "an empty memory name")),
                    _ => Memory::Node(t.to_string()),
                };
            }
            (false, "pattern") => {
                let t = doc.text(&f, v)?.to_ascii_lowercase().replace(['-', '_'], "");
                pattern = Some(if t == "p2p" || t == "send" {
                    None
                } else {
                    Some(Collective::ALL.into_iter().find(|c| c.name() == t).ok_or_else(|| {
                        doc.err(
                            &f,
                            format!(
                                "unknown pattern '{t}' (valid: allreduce, allgather, reducescatter, alltoall, broadcast, reduce, p2p)"
                            ),
                        )
                    })?)
                });
            }
            (false, "participants") => participants = Some(doc.xpus(&f, v)?),
            (false, "src") => src = Some(id_text(v).ok_or_else(|| doc.err(&f, "expected an XPU name"))?),
            (false, "dst") => dst = Some(id_text(v).ok_or_else(|| doc.err(&f, "expected an XPU name"))?),
            (false, "communicator") => {
                let t = id_text(v).ok_or_else(|| doc.err(&f, "expected a name"))?;
                if t.is_empty() {
                    return Err(doc.err(&f, "an empty communicator name"));
                }
                communicator = Some(t);
            }
            _ => {
                let valid = if compute {
                    "id, kind, xpu, flops, dtype, bytes, memory, start"
                } else {
                    "id, kind, pattern, bytes, participants, src, dst, communicator, start"
                };
                return Err(doc.err(&f, format!("unknown attribute {key:?} for a {kind} vertex (valid: {valid})")));
            }
        }
    }
    if compute {
        let xpus = xpus.ok_or_else(|| doc.err(&field("xpu"), "missing (the XPU it runs on, a list, or *)"))?;
        let flops = flops.ok_or_else(|| doc.err(&field("flops"), "missing"))?;
        return Ok(VertexKind::Compute(Compute { xpus, flops, dtype, bytes: bytes.unwrap_or(0.0), memory }));
    }
    let bytes = bytes.ok_or_else(|| doc.err(&field("bytes"), "missing"))? as u64;
    let pattern = match pattern.ok_or_else(|| doc.err(&field("pattern"), "missing (a collective's name or p2p)"))? {
        Some(collective) => {
            if src.is_some() || dst.is_some() {
                return Err(doc.err(&field("src"), "only a p2p vertex has src and dst"));
            }
            let participants = participants.ok_or_else(|| doc.err(&field("participants"), "missing"))?;
            Pattern::Collective { collective, participants }
        }
        None => {
            if participants.is_some() {
                return Err(doc.err(&field("participants"), "a p2p vertex has src and dst instead"));
            }
            let src = src.ok_or_else(|| doc.err(&field("src"), "missing"))?;
            let dst = dst.ok_or_else(|| doc.err(&field("dst"), "missing"))?;
            Pattern::P2p { src, dst }
        }
    };
    Ok(VertexKind::Communication(Communication { bytes, pattern, communicator }))
}

fn read_edge(doc: &Doc, i: usize, edge: &Value, ids: &HashMap<String, u32>) -> Result<Edge> {
    let at = format!("edge {i}");
    let map = edge.as_object().ok_or_else(|| doc.err(&at, format!("expected a mapping, got {}", type_name(edge))))?;
    let [(s, source), (t, target)] = doc.ends(&at, map, ids, "vertex")?;
    let at = if plain(&s) && plain(&t) { format!("edge {i} ({s} -> {t})") } else { at };
    if source == target {
        return Err(doc.err(&format!("{at}: target"), "an edge from a vertex to itself"));
    }
    let mut not_first = false;
    for (key, v) in map {
        let f = if plain_key(key) { format!("{at}: {key}") } else { at.clone() };
        match key.as_str() {
            "source" | "target" | "key" | "start" => {}
            "not_first" => not_first = doc.flag(&f, v)?,
            _ => return Err(doc.err(&f, format!("unknown attribute {key:?} (valid: source, target, not_first)"))),
        }
    }
    Ok(Edge { source, target, not_first })
}

/// [`check_cycles`] of a graph built in code (`file` names it in errors).
pub(crate) fn order(file: &str, g: &WorkloadGraph) -> Result<Vec<u32>> {
    check_cycles(&Doc { file }, &g.vertices, &g.edges)
}

/// The vertices in dependency order (ties by index), ignoring `not_first` edges: a cycle of
/// plain edges would never start.
fn check_cycles(doc: &Doc, vertices: &[Vertex], edges: &[Edge]) -> Result<Vec<u32>> {
    let n = vertices.len();
    let order = topological(n, edges, |e| !e.not_first);
    if order.len() < n {
        let i = cycle_edge(n, edges, &order, |e| !e.not_first);
        return Err(doc.err(
            &edge_label(i, vertices, &edges[i]),
            "lies on a cycle with no not_first edge, which never starts (mark the edge that closes the loop not_first)",
        ));
    }
    Ok(order)
}

/// An edge on a cycle, given the vertices Kahn's algorithm could order: every vertex it left
/// out has a used in-edge from another left-out one, so walking back along them must come round.
fn cycle_edge(n: usize, edges: &[Edge], ordered: &[u32], used: impl Fn(&Edge) -> bool) -> usize {
    let mut left = vec![true; n];
    for &v in ordered {
        left[v as usize] = false;
    }
    let mut back = vec![usize::MAX; n];
    for (i, e) in edges.iter().enumerate() {
        if used(e) && left[e.source as usize] && left[e.target as usize] && back[e.target as usize] == usize::MAX {
            back[e.target as usize] = i;
        }
    }
    let mut seen = vec![false; n];
    let mut v = (0..n).find(|&v| left[v]).expect("a vertex left out");
    while !seen[v] {
        seen[v] = true;
        v = edges[back[v]].source as usize;
    }
    back[v]
}

/// Kahn's algorithm, smallest index first among the ready vertices; vertices on cycles are left out.
pub(crate) fn topological(n: usize, edges: &[Edge], used: impl Fn(&Edge) -> bool) -> Vec<u32> {
    let mut indegree = vec![0u32; n];
    let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n];
    for e in edges.iter().filter(|e| used(e)) {
        indegree[e.target as usize] += 1;
        succ[e.source as usize].push(e.target);
    }
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<u32>> =
        (0..n as u32).filter(|&v| indegree[v as usize] == 0).map(std::cmp::Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(v)) = ready.pop() {
        order.push(v);
        for &s in &succ[v as usize] {
            indegree[s as usize] -= 1;
            if indegree[s as usize] == 0 {
                ready.push(std::cmp::Reverse(s));
            }
        }
    }
    order
}
