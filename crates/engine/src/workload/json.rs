//! The workload IR as JSON, version 1 (docs/workload-ir.md; JSON Schema in
//! python/clustersim/schema/workload-ir.schema.json).
//!
//! ```text
//! { "format": "clustersim-workload", "version": 1,
//!   "layout": [{"axis": "TP", "size": 2}, …],            parallel axes, fastest first (may be [])
//!   "groups": [{"name": "TP", "axes": ["TP"]},           ranks sharing all other coordinates
//!              {"name": "EMB", "instances": [[0, 2], …]}],  or explicit member lists
//!   "rows": ["layer 0", …],                              labels ops report under
//!   "rank_class": [0, 0, 1, 1], "class_program": [0, 1], class of each rank, program of each class
//!   "programs": [{"ops": [{"kind": "COMP", "ns": 1000.0, "deps": [], "row": 0, "phase": "fwd"},
//!                         {"kind": "COMM_COLL", "collective": "allreduce", "group": 0, "bytes": 1048576, …},
//!                         {"kind": "SEND", "group": 1, "offset": 1, "bytes": 8, …},
//!                         {"kind": "RECV", "group": 1, "offset": -1, "bytes": 8, …}]}] }
//! ```
//!
//! Node kinds follow Chakra's (COMP, COMM_COLL; SEND/RECV for COMM_SEND/RECV). Writing then reading gives the
//! same [`Workload`] exactly (floats are written shortest-round-trip and read correctly rounded).
//! Reading checks the document's shape with serde and the workload's invariants with
//! [`Workload::check`]; every error names the file, the JSON path and the problem.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Collective, Group, Membership, Op, OpKind, Peer, Phase, Program, Work, Workload};
use crate::catalog::Dtype;
use crate::error::{InputError, Result};
use crate::layout::{Axis, Layout};

pub const FORMAT: &str = "clustersim-workload";
pub const VERSION: u32 = 1;

/// Layout axis names as written in files (SimAI's group names).
const AXES: [(Axis, &str); 5] =
    [(Axis::Tp, "TP"), (Axis::Cp, "CP"), (Axis::Ep, "EP"), (Axis::DpEp, "DP_EP"), (Axis::Pp, "PP")];

/// An axis's name in files.
pub fn axis_name(a: Axis) -> &'static str {
    AXES.iter().find(|(b, _)| *b == a).map_or("?", |(_, n)| n)
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AxisDoc {
    axis: String,
    size: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupDoc {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    axes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instances: Option<Vec<Vec<u32>>>,
}

/// One op; `deps`, `row` and `phase` are optional when reading ([], 0, "other").
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
enum OpDoc {
    /// `flops`, `bytes` (memory traffic) and `dtype`: what the op does, all three or none.
    #[serde(rename = "COMP")]
    Comp {
        ns: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        flops: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dtype: Option<Dtype>,
        #[serde(default)]
        deps: Vec<u32>,
        #[serde(default)]
        row: u32,
        #[serde(default)]
        phase: Phase,
    },
    #[serde(rename = "COMM_COLL")]
    Coll {
        collective: Collective,
        group: u16,
        bytes: u64,
        #[serde(default)]
        deps: Vec<u32>,
        #[serde(default)]
        row: u32,
        #[serde(default)]
        phase: Phase,
    },
    #[serde(rename = "SEND")]
    Send(PeerDoc),
    #[serde(rename = "RECV")]
    Recv(PeerDoc),
}

/// A SEND's or RECV's fields: the peer `offset` places on in its instance of `group`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerDoc {
    group: u16,
    offset: i32,
    bytes: u64,
    /// A userbuffers copy (no NCCL call); written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    copy: bool,
    #[serde(default)]
    deps: Vec<u32>,
    #[serde(default)]
    row: u32,
    #[serde(default)]
    phase: Phase,
}

impl OpDoc {
    fn of(op: &Op) -> OpDoc {
        let (deps, row, phase) = (op.deps.clone(), op.row, op.phase);
        match op.kind {
            OpKind::Compute { ns, work } => OpDoc::Comp {
                ns,
                flops: work.map(|w| w.flops),
                bytes: work.map(|w| w.bytes),
                dtype: work.map(|w| w.dtype),
                deps,
                row,
                phase,
            },
            OpKind::Collective { collective, group, bytes } => {
                OpDoc::Coll { collective, group, bytes, deps, row, phase }
            }
            OpKind::Send { peer, bytes, copy } => {
                OpDoc::Send(PeerDoc { group: peer.group, offset: peer.offset, bytes, copy, deps, row, phase })
            }
            OpKind::Recv { peer, bytes, copy } => {
                OpDoc::Recv(PeerDoc { group: peer.group, offset: peer.offset, bytes, copy, deps, row, phase })
            }
        }
    }

    /// The op; an error names the field (under the op's path) when the work is given in part.
    fn into_op(self) -> std::result::Result<Op, &'static str> {
        Ok(match self {
            OpDoc::Comp { ns, flops, bytes, dtype, deps, row, phase } => {
                let work = match (flops, bytes, dtype) {
                    (None, None, None) => None,
                    (Some(flops), Some(bytes), Some(dtype)) => Some(Work { flops, bytes, dtype }),
                    (None, ..) => return Err("flops"),
                    (_, None, _) => return Err("bytes"),
                    (.., None) => return Err("dtype"),
                };
                Op::new(OpKind::Compute { ns, work }, deps, row, phase)
            }
            OpDoc::Coll { collective, group, bytes, deps, row, phase } => {
                Op::new(OpKind::Collective { collective, group, bytes }, deps, row, phase)
            }
            OpDoc::Send(PeerDoc { group, offset, bytes, copy, deps, row, phase }) => {
                Op::new(OpKind::Send { peer: Peer { group, offset }, bytes, copy }, deps, row, phase)
            }
            OpDoc::Recv(PeerDoc { group, offset, bytes, copy, deps, row, phase }) => {
                Op::new(OpKind::Recv { peer: Peer { group, offset }, bytes, copy }, deps, row, phase)
            }
        })
    }
}

/// The top level, generic in how layout axes, groups and programs are held: typed for the fast
/// path, JSON values for the path that names where an error is.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document<A, G, P> {
    format: String,
    /// Checked before the rest, so a newer document gets a clear message.
    version: Value,
    #[serde(default = "Vec::new")]
    layout: Vec<A>,
    #[serde(default = "Vec::new")]
    groups: Vec<G>,
    #[serde(default)]
    rows: Vec<String>,
    rank_class: Vec<u32>,
    class_program: Vec<u32>,
    programs: Vec<P>,
}

type Typed = Document<AxisDoc, GroupDoc, ProgramDoc<OpDoc>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramDoc<O> {
    ops: Vec<O>,
}

impl Workload {
    /// The workload as a JSON document: one line per op, everything else on a line of its own.
    pub fn to_json(&self) -> String {
        let mut out = format!("{{\n  \"format\": \"{FORMAT}\",\n  \"version\": {VERSION},\n");
        let layout: Vec<AxisDoc> =
            self.layout.axes.iter().map(|&(a, size)| AxisDoc { axis: axis_name(a).into(), size }).collect();
        out += &format!("  \"layout\": {},\n", line(&layout));
        let groups: Vec<String> = self.groups.iter().map(|g| line(&self.group_doc(g))).collect();
        out += &format!("  \"groups\": [{}],\n", list(&groups, "    "));
        out += &format!("  \"rows\": {},\n", line(&self.rows));
        out += &format!("  \"rank_class\": {},\n", line(&self.rank_class));
        out += &format!("  \"class_program\": {},\n", line(&self.class_program));
        let programs: Vec<String> = self
            .programs
            .iter()
            .map(|p| {
                let ops: Vec<String> = p.ops.iter().map(|op| line(&OpDoc::of(op))).collect();
                format!("{{\"ops\": [{}]}}", list(&ops, "      "))
            })
            .collect();
        out += &format!("  \"programs\": [{}]\n}}\n", list(&programs, "    "));
        out
    }

    fn group_doc(&self, g: &Group) -> GroupDoc {
        let (axes, instances) = match &g.members {
            Membership::Dims(mask) => (Some(self.axes_of(*mask)), None),
            Membership::Explicit(inst) => (None, Some(inst.clone())),
        };
        GroupDoc { name: g.name.clone(), axes, instances }
    }

    /// Names of the layout axes in a group's bit mask, in layout order.
    pub fn axes_of(&self, mask: u32) -> Vec<String> {
        let axes = self.layout.axes.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0);
        axes.map(|(_, &(a, _))| axis_name(a).to_string()).collect()
    }

    /// Read a workload from JSON text (`file` names it in errors) and check its invariants.
    pub fn from_json(file: &str, text: &str) -> Result<Workload> {
        Workload::from_json_unplaced(file, text).map_err(|mut e| {
            if e.line.is_none() {
                e.line = Some(e.field.as_deref().map_or(1, |path| line_of(text, path)));
            }
            e
        })
    }

    /// [`Workload::from_json`] before errors get their line (the line of their JSON path).
    fn from_json_unplaced(file: &str, text: &str) -> Result<Workload> {
        // Fast path: straight into typed structs. Only if that fails is the text read again as
        // JSON values, piece by piece, to name the path of the error.
        let doc = match serde_json::from_str::<Typed>(text) {
            Ok(doc) => doc,
            Err(e) => return Err(locate(file, text).err().unwrap_or_else(|| json_error(file, &e))),
        };
        if doc.version.as_u64() != Some(u64::from(VERSION)) {
            return Err(unsupported(file, &doc.version));
        }
        if doc.format != FORMAT {
            return Err(InputError::field(file, "format", format!("'{}' is not '{FORMAT}'", doc.format)));
        }
        let mut axes = Vec::new();
        for (i, a) in doc.layout.iter().enumerate() {
            let axis = axis_of(&a.axis).ok_or_else(|| unknown_axis(file, format!("layout[{i}].axis"), &a.axis))?;
            axes.push((axis, a.size));
        }
        let layout = Layout { axes };
        let mut groups = Vec::new();
        for (g, d) in doc.groups.into_iter().enumerate() {
            let members = match (d.axes, d.instances) {
                (Some(names), None) => {
                    let mut mask = 0;
                    for (k, name) in names.iter().enumerate() {
                        let path = format!("groups[{g}].axes[{k}]");
                        let axis = axis_of(name).ok_or_else(|| unknown_axis(file, path.clone(), name))?;
                        let i =
                            layout.axes.iter().position(|(a, _)| *a == axis).ok_or_else(|| {
                                InputError::field(file, &path, format!("the layout has no {name} axis"))
                            })?;
                        mask |= 1 << i;
                    }
                    Membership::Dims(mask)
                }
                (None, Some(instances)) => Membership::Explicit(instances),
                _ => {
                    return Err(InputError::field(
                        file,
                        &format!("groups[{g}]"),
                        "give exactly one of \"axes\" (layout axes) and \"instances\" (member lists)",
                    ))
                }
            };
            groups.push(Group { name: d.name, members });
        }
        let mut programs = Vec::with_capacity(doc.programs.len());
        for (p, program) in doc.programs.into_iter().enumerate() {
            let ops = program.ops.into_iter().enumerate().map(|(i, op)| {
                op.into_op().map_err(|field| {
                    let path = format!("programs[{p}].ops[{i}].{field}");
                    InputError::field(file, &path, "missing: give flops, bytes and dtype together, or none of them")
                })
            });
            programs.push(Program { ops: ops.collect::<Result<_>>()? });
        }
        let w = Workload {
            layout,
            groups,
            programs,
            class_program: doc.class_program,
            rank_class: doc.rank_class,
            rows: doc.rows,
        };
        w.check(file)?;
        Ok(w)
    }
}

/// The error of a document that does not deserialize, naming its JSON path: read it as JSON
/// values and deserialize piece by piece. `Ok` if every piece reads (then the caller reports
/// serde's own error).
fn locate(file: &str, text: &str) -> Result<()> {
    let root: Value = serde_json::from_str(text).map_err(|e| json_error(file, &e))?;
    if let Some(v) = root.get("version").filter(|v| v.as_u64() != Some(u64::from(VERSION))) {
        return Err(unsupported(file, v));
    }
    let doc: Document<Value, Value, Value> = take(file, "(top level)", &root)?;
    for (i, v) in doc.layout.iter().enumerate() {
        take::<AxisDoc>(file, &format!("layout[{i}]"), v)?;
    }
    for (g, v) in doc.groups.iter().enumerate() {
        take::<GroupDoc>(file, &format!("groups[{g}]"), v)?;
    }
    for (p, v) in doc.programs.iter().enumerate() {
        let d: ProgramDoc<Value> = take(file, &format!("programs[{p}]"), v)?;
        for (i, v) in d.ops.iter().enumerate() {
            take::<OpDoc>(file, &format!("programs[{p}].ops[{i}]"), v)?;
        }
    }
    Ok(())
}

/// The line where the value at JSON `path` (`programs[0].ops[7].deps`) starts in `text`, a
/// well-formed document; where the path leaves the document, the line of its deepest part.
fn line_of(text: &str, path: &str) -> usize {
    let b = text.as_bytes();
    let mut at = skip_space(b, 0);
    for part in path_parts(path) {
        match (b.get(at), part) {
            (Some(b'{'), Part::Key(key)) => {
                let mut i = skip_space(b, at + 1);
                let mut found = None;
                while b.get(i) == Some(&b'"') {
                    let end = skip_value(b, i);
                    let name: Option<String> = serde_json::from_slice(&b[i..end]).ok();
                    let value = skip_space(b, skip_space(b, end) + 1);
                    if name.as_deref() == Some(key) {
                        found = Some(value);
                        break;
                    }
                    i = skip_space(b, skip_space(b, skip_value(b, value)) + 1);
                }
                match found {
                    Some(v) => at = v,
                    None => break,
                }
            }
            (Some(b'['), Part::Index(k)) => {
                let mut i = Some(skip_space(b, at + 1)).filter(|&i| b.get(i) != Some(&b']'));
                for _ in 0..k {
                    i = i.map(|i| skip_space(b, skip_value(b, i))).filter(|&i| b.get(i) == Some(&b','));
                    i = i.map(|i| skip_space(b, i + 1));
                }
                match i {
                    Some(i) => at = i,
                    None => break,
                }
            }
            _ => break,
        }
    }
    1 + b[..at.min(b.len())].iter().filter(|&&c| c == b'\n').count()
}

enum Part<'a> {
    Key(&'a str),
    Index(usize),
}

/// `a[1].b` → key a, index 1, key b. Anything else (`(top level)`) is the root.
fn path_parts(path: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    for piece in path.split('.') {
        let (key, rest) = piece.split_once('[').map_or((piece, ""), |(k, r)| (k, r));
        if key.is_empty() || key.contains(' ') {
            return Vec::new();
        }
        parts.push(Part::Key(key));
        for index in rest.split('[') {
            match index.trim_end_matches(']').parse() {
                Ok(k) => parts.push(Part::Index(k)),
                Err(_) => return parts,
            }
        }
    }
    parts
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// The end of the JSON value starting at `i` (a string, a number or literal, or a nest).
fn skip_value(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    loop {
        match b.get(i) {
            None => return i,
            Some(b'"') => {
                i += 1;
                while let Some(&c) = b.get(i) {
                    i += if c == b'\\' { 2 } else { 1 };
                    if c == b'"' {
                        break;
                    }
                }
            }
            Some(b'{' | b'[') => {
                depth += 1;
                i += 1;
            }
            Some(b'}' | b']' | b',') if depth == 0 => return i,
            Some(b'}' | b']') => {
                depth -= 1;
                i += 1;
            }
            Some(c) if depth == 0 && c.is_ascii_whitespace() => return i,
            Some(_) => i += 1,
        }
        if depth == 0 && matches!(b.get(i.wrapping_sub(1)), Some(b'"' | b'}' | b']')) {
            return i;
        }
    }
}

/// A JSON syntax (or otherwise unplaced) error, at its line.
fn json_error(file: &str, e: &serde_json::Error) -> InputError {
    let msg = e.to_string();
    let msg = msg.rsplit_once(" at line ").map_or(msg.as_str(), |(m, _)| m);
    InputError::at(file, e.line(), "JSON", msg)
}

fn unsupported(file: &str, v: &Value) -> InputError {
    InputError::field(file, "version", format!("{v} is not supported (this clustersim reads {VERSION})"))
}

/// Deserialize `v`, naming `path` in the error.
fn take<T: DeserializeOwned>(file: &str, path: &str, v: &Value) -> Result<T> {
    T::deserialize(v).map_err(|e| InputError::field(file, path, e.to_string()))
}

/// The axis a name in a file stands for.
pub fn axis_of(name: &str) -> Option<Axis> {
    AXES.iter().find(|(_, n)| *n == name).map(|(a, _)| *a)
}

fn unknown_axis(file: &str, path: String, name: &str) -> InputError {
    let valid: Vec<&str> = AXES.iter().map(|(_, n)| *n).collect();
    InputError::field(file, &path, format!("unknown axis '{name}' (valid: {})", valid.join(", ")))
}

/// `items` as the inside of a JSON list, one per line at `indent`.
fn list(items: &[String], indent: &str) -> String {
    if items.is_empty() {
        return String::new();
    }
    let outer = &indent[2..];
    format!("\n{indent}{}\n{outer}", items.join(&format!(",\n{indent}")))
}

/// One-line JSON (serializing these types cannot fail: no maps, no non-string keys).
fn line<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_line_of_their_json_path() {
        // Found by fuzzing: shape and invariant errors named the JSON path but no line.
        let doc = "{\"format\": \"clustersim-workload\", \"version\": 1,\n \"rank_class\": [0],\n \"class_program\": [0],\n \"programs\": [{\"ops\": [\n  {\"kind\": \"COMP\", \"ns\": 1},\n  {\"kind\": \"COMP\", \"ns\": 1, \"phase\": \"x\"}]}]}";
        let e = Workload::from_json("w.json", doc).unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(6), Some("programs[0].ops[1]")), "{e}");
        let ok = doc.replace("\"x\"", "\"fwd\"");
        assert!(Workload::from_json("w.json", &ok).is_ok());
        let e = Workload::from_json("w.json", &ok.replace("\"ns\": 1}", "\"ns\": -1}")).unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(5), Some("programs[0].ops[0].ns")), "{e}");
        let e = Workload::from_json("w.json", &ok.replace("\"version\": 1", "\"version\": 2")).unwrap_err();
        assert_eq!(e.to_string(), "w.json:1: version: 2 is not supported (this clustersim reads 1)");
        let e = Workload::from_json("w.json", &ok.replace("[0],\n \"programs", "[3],\n \"programs")).unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("class_program[0]")), "{e}");
    }

    #[test]
    fn paths_beyond_the_document_stop_at_their_deepest_part() {
        let text = "{\"a\": [\n1,\n{\"b\": \"x]\\\"\"},\n{\"c\":\n 4}]}";
        assert_eq!(line_of(text, "a[2].c"), 5);
        assert_eq!(line_of(text, "a[3].c"), 1);
        assert_eq!(line_of(text, "a[1].b"), 3);
        assert_eq!(line_of(text, "(top level)"), 1);
    }
}
