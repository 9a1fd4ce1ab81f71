//! What the node-link JSON readers (platform graphs, workload graphs) share: the document whose
//! errors name its file, and the scalar fields both read the same way.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::error::{InputError, Result};

/// A node-link document being read: errors name its file and the field.
pub(crate) struct Doc<'a> {
    pub file: &'a str,
}

impl Doc<'_> {
    pub fn err(&self, field: &str, m: impl Into<String>) -> InputError {
        InputError::field(self.file, field, m)
    }

    pub fn text<'v>(&self, field: &str, v: &'v Value) -> Result<&'v str> {
        v.as_str().ok_or_else(|| self.err(field, format!("expected a string, got {}", type_name(v))))
    }

    /// The document's `nodes` and its `links` (or NetworkX's other name for them, `edges`).
    pub fn lists<'v>(&self, top: &'v Map<String, Value>) -> Result<(&'v Vec<Value>, &'v Vec<Value>)> {
        let list = |key: &str| -> Result<&'v Vec<Value>> {
            match top.get(key) {
                Some(Value::Array(a)) => Ok(a),
                Some(v) => Err(self.err(key, format!("expected a list, got {}", type_name(v)))),
                None => Err(self.err(key, "missing")),
            }
        };
        let nodes = list("nodes")?;
        let edges = match (top.get("links"), top.get("edges")) {
            (Some(_), Some(_)) => return Err(self.err("edges", "give links or edges, not both")),
            (_, Some(_)) => list("edges")?,
            _ => list("links")?,
        };
        Ok((nodes, edges))
    }

    /// An edge's source and target, each as (id text, index in `ids`); errors call the ends
    /// `what` ("node", "vertex").
    pub fn ends(
        &self,
        at: &str,
        map: &Map<String, Value>,
        ids: &HashMap<String, u32>,
        what: &str,
    ) -> Result<[(String, u32); 2]> {
        let end = |key: &str| -> Result<(String, u32)> {
            let field = format!("{at}: {key}");
            let v = map.get(key).ok_or_else(|| self.err(&field, "missing"))?;
            let name =
                id_text(v).ok_or_else(|| self.err(&field, format!("expected a {what} id, got {}", type_name(v))))?;
            let &id = ids.get(&name).ok_or_else(|| self.err(&field, format!("no {what} '{name}'")))?;
            Ok((name, id))
        };
        Ok([end("source")?, end("target")?])
    }

    /// A boolean, or what GraphML and YAML write for one (0/1, yes/no, true/false).
    pub fn flag(&self, field: &str, v: &Value) -> Result<bool> {
        match v {
            Value::Bool(b) => Ok(*b),
            Value::Number(n) if n.as_f64() == Some(0.0) || n.as_f64() == Some(1.0) => Ok(n.as_f64() == Some(1.0)),
            Value::String(s) => match s.to_ascii_lowercase().as_str() {
                "yes" | "true" | "1" => Ok(true),
                "no" | "false" | "0" => Ok(false),
                _ => Err(self.err(field, format!("'{s}' is not true or false"))),
            },
            other => Err(self.err(field, format!("expected true or false, got {}", type_name(other)))),
        }
    }
}

/// How errors name a JSON value's type.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// A node id as text: strings as they are, integers in decimal.
pub(crate) fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}
