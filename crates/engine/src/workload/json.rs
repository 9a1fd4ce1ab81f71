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

use super::{Collective, Group, Membership, Op, OpKind, Peer, Phase, Program, Workload};
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
    #[serde(rename = "COMP")]
    Comp {
        ns: f64,
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
    Send {
        group: u16,
        offset: i32,
        bytes: u64,
        #[serde(default)]
        deps: Vec<u32>,
        #[serde(default)]
        row: u32,
        #[serde(default)]
        phase: Phase,
    },
    #[serde(rename = "RECV")]
    Recv {
        group: u16,
        offset: i32,
        bytes: u64,
        #[serde(default)]
        deps: Vec<u32>,
        #[serde(default)]
        row: u32,
        #[serde(default)]
        phase: Phase,
    },
}

impl OpDoc {
    fn of(op: &Op) -> OpDoc {
        let (deps, row, phase) = (op.deps.clone(), op.row, op.phase);
        match op.kind {
            OpKind::Compute { ns } => OpDoc::Comp { ns, deps, row, phase },
            OpKind::Collective { collective, group, bytes } => {
                OpDoc::Coll { collective, group, bytes, deps, row, phase }
            }
            OpKind::Send { peer, bytes } => {
                OpDoc::Send { group: peer.group, offset: peer.offset, bytes, deps, row, phase }
            }
            OpKind::Recv { peer, bytes } => {
                OpDoc::Recv { group: peer.group, offset: peer.offset, bytes, deps, row, phase }
            }
        }
    }

    fn into_op(self) -> Op {
        match self {
            OpDoc::Comp { ns, deps, row, phase } => Op::new(OpKind::Compute { ns }, deps, row, phase),
            OpDoc::Coll { collective, group, bytes, deps, row, phase } => {
                Op::new(OpKind::Collective { collective, group, bytes }, deps, row, phase)
            }
            OpDoc::Send { group, offset, bytes, deps, row, phase } => {
                Op::new(OpKind::Send { peer: Peer { group, offset }, bytes }, deps, row, phase)
            }
            OpDoc::Recv { group, offset, bytes, deps, row, phase } => {
                Op::new(OpKind::Recv { peer: Peer { group, offset }, bytes }, deps, row, phase)
            }
        }
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
        let programs = doc
            .programs
            .into_iter()
            .map(|p| Program { ops: p.ops.into_iter().map(OpDoc::into_op).collect() })
            .collect();
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
