//! SimAI workload files (`.txt`, written by AICB): reader and writer for every header variant.
//!
//! Line 1 is the header (policy keyword, then `key: value` tokens), line 2 the row count N, then
//! N rows of 12 whitespace-separated fields. Unlike SimAI (which reads a stream of tokens), this
//! reader insists on 12 fields per line and reports `file:line: field: problem`.

use crate::error::{InputError, Result};
use crate::workload::check::MAX_NS;
use crate::workload::Collective;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    HybridTransformerFwdInBckwd,
    Micro,
}

/// How the header was written, so the writer can write it back the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderVariant {
    /// Current AICB: `... all_gpus: N checkpoints: 0 checkpoint_initiates: 0 pp_comm: X`.
    Current,
    /// Older AICB: `pp_comm X` without the colon.
    PpCommNoColon,
    /// All keys but `pp_comm` (SimAI's `microAllReduce.txt`).
    NoPpComm,
    /// v1: only `model_parallel_NPU_group: t checkpoints: 0 checkpoint_initiates: 0`, tab-separated.
    V1,
    /// The single word `MICRO`.
    Micro,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub policy: Policy,
    pub variant: HeaderVariant,
    pub tp: u32,
    pub ep: u32,
    pub pp: u32,
    /// AICB writes layers per PP stage here (SimAI uses it as the interleaving factor).
    pub vpp: u32,
    pub ga: u32,
    pub all_gpus: Option<u32>,
    pub checkpoints: Vec<u32>,
    pub checkpoint_initiates: Vec<u32>,
    pub pp_comm: u64,
    /// AICB writes pp_comm as a Python float ("6291456.0") when it divides it by TP.
    pub pp_comm_decimal: bool,
}

fn pp_comm_text(h: &Header) -> String {
    if h.pp_comm_decimal {
        format!("{}.0", h.pp_comm)
    } else {
        h.pp_comm.to_string()
    }
}

/// The group a row's collective runs in, from the type's suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// No suffix: TP for fwd/ig, DP for wg.
    Plain,
    Ep,
    DpEp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommType {
    None,
    Collective(Collective, Scope),
    /// `ALLREDUCEALLTOALL[...]`, which SimAI parses as an all-reduce in no group.
    AllReduceAllToAll,
}

impl CommType {
    pub const VALID: &'static str =
        "NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, BROADCAST, REDUCE, each optionally with _EP or _DP_EP";

    pub fn parse(s: &str) -> Option<CommType> {
        if s == "NONE" {
            return Some(CommType::None);
        }
        if s.starts_with("ALLREDUCEALLTOALL") {
            return Some(CommType::AllReduceAllToAll);
        }
        let (base, scope) = if let Some(b) = s.strip_suffix("_DP_EP") {
            (b, Scope::DpEp)
        } else if let Some(b) = s.strip_suffix("_EP") {
            (b, Scope::Ep)
        } else {
            (s, Scope::Plain)
        };
        let c = match base {
            "ALLREDUCE" => Collective::AllReduce,
            "ALLGATHER" => Collective::AllGather,
            "REDUCESCATTER" => Collective::ReduceScatter,
            "ALLTOALL" => Collective::AllToAll,
            "BROADCAST" => Collective::Broadcast,
            "REDUCE" => Collective::Reduce,
            _ => return None,
        };
        Some(CommType::Collective(c, scope))
    }

    pub fn to_token(self) -> String {
        match self {
            CommType::None => "NONE".into(),
            CommType::AllReduceAllToAll => "ALLREDUCEALLTOALL".into(),
            CommType::Collective(c, scope) => {
                let base = c.name().to_ascii_uppercase();
                match scope {
                    Scope::Plain => base,
                    Scope::Ep => base + "_EP",
                    Scope::DpEp => base + "_DP_EP",
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comm {
    pub kind: CommType,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub depen: i64,
    pub fwd_ns: u64,
    pub fwd: Comm,
    pub ig_ns: u64,
    pub ig: Comm,
    pub wg_ns: u64,
    pub wg: Comm,
    pub wg_update_ns: u64,
    /// 1-based line in the file (0 for rows not read from a file).
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadFile {
    pub path: String,
    pub header: Header,
    pub rows: Vec<Row>,
    /// Non-fatal problems found while reading (with `lenient`).
    pub warnings: Vec<String>,
}

const FIELDS: [&str; 12] = [
    "name",
    "depen",
    "fwd_compute",
    "fwd_comm",
    "fwd_size",
    "ig_compute",
    "ig_comm",
    "ig_size",
    "wg_compute",
    "wg_comm",
    "wg_size",
    "wg_update_time",
];

const ASTRA_KEYWORDS: [&str; 9] = [
    "DATA",
    "HYBRID_TRANSFORMER",
    "HYBRID_DLRM",
    "HYBRID_DLRM_ENHANCED",
    "MODEL",
    "HYBRID_DATA_MODEL",
    "HYBRID_MODEL_DATA",
    "HYBRID_CUSTOMIZED",
    "DISTRIBUTED_INFERENCE",
];

fn parse_header(path: &str, line: &str) -> Result<Header> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let Some(&keyword) = tokens.first() else {
        return Err(InputError::at(
            path,
            1,
            "header",
            "empty header line (expected HYBRID_TRANSFORMER_FWD_IN_BCKWD or MICRO)",
        ));
    };
    let mut h = Header {
        policy: Policy::HybridTransformerFwdInBckwd,
        variant: HeaderVariant::V1,
        tp: 1,
        ep: 1,
        pp: 1,
        vpp: 1,
        ga: 1,
        all_gpus: None,
        checkpoints: Vec::new(),
        checkpoint_initiates: Vec::new(),
        pp_comm: 0,
        pp_comm_decimal: false,
    };
    match keyword {
        "MICRO" => {
            if tokens.len() > 1 {
                return Err(InputError::at(path, 1, "header", "MICRO takes no parameters"));
            }
            h.policy = Policy::Micro;
            h.variant = HeaderVariant::Micro;
            return Ok(h);
        }
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD" => {}
        k if ASTRA_KEYWORDS.contains(&k) => {
            return Err(InputError::at(
                path,
                1,
                "policy",
                format!("'{k}' is an ASTRA-sim 1.0 policy that AICB does not write and clustersim does not run (valid: HYBRID_TRANSFORMER_FWD_IN_BCKWD, MICRO)"),
            ))
        }
        k => {
            return Err(InputError::at(path, 1, "policy", format!("unknown policy '{k}' (valid: HYBRID_TRANSFORMER_FWD_IN_BCKWD, MICRO)")))
        }
    }
    // Field names in messages drop the key's colon ("pp_comm", not "pp_comm:").
    let field = |key: &str| key.trim_end_matches(':').to_string();
    let value = |i: usize, key: &str| -> Result<&str> {
        tokens.get(i).copied().ok_or_else(|| InputError::at(path, 1, &field(key), "missing value"))
    };
    let positive = |i: usize, key: &str| -> Result<u32> {
        let v = value(i, key)?;
        match v.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(InputError::at(
                path,
                1,
                key.trim_end_matches(':'),
                format!("must be a whole number ≥ 1, got '{v}'"),
            )),
        }
    };
    let list = |i: usize, key: &str| -> Result<(Vec<u32>, usize)> {
        let v = value(i, key)?;
        let k: usize =
            v.parse().map_err(|_| InputError::at(path, 1, &field(key), format!("expected a count, got '{v}'")))?;
        if k >= tokens.len().saturating_sub(i) {
            return Err(InputError::at(path, 1, &field(key), format!("declares {k} layer indices but fewer follow")));
        }
        let mut out = Vec::with_capacity(k);
        for j in 0..k {
            let t = value(i + 1 + j, key)?;
            out.push(
                t.parse()
                    .map_err(|_| InputError::at(path, 1, &field(key), format!("expected a layer index, got '{t}'")))?,
            );
        }
        Ok((out, 1 + k))
    };
    let mut i = 1;
    while i < tokens.len() {
        let key = tokens[i];
        match key {
            "model_parallel_NPU_group:" => h.tp = positive(i + 1, key)?,
            "ep:" => h.ep = positive(i + 1, key)?,
            "pp:" => h.pp = positive(i + 1, key)?,
            "vpp:" => h.vpp = positive(i + 1, key)?,
            "ga:" => h.ga = positive(i + 1, key)?,
            "all_gpus:" => h.all_gpus = Some(positive(i + 1, key)?),
            "checkpoints:" | "checkpoint_initiates:" => {
                let (v, used) = list(i + 1, key)?;
                if key == "checkpoints:" {
                    h.checkpoints = v;
                } else {
                    h.checkpoint_initiates = v;
                }
                i += 1 + used;
                continue;
            }
            "pp_comm:" | "pp_comm" => {
                let v = value(i + 1, key)?;
                // AICB may write a float ("6291456.0"); it must still be a whole byte count.
                let x: f64 = v.parse().map_err(|_| InputError::at(path, 1, &field(key), format!("not a number: '{v}'")))?;
                if !(x >= 0.0 && x.fract() == 0.0 && x < 1.8e19) {
                    return Err(InputError::at(
                        path,
                        1,
                        &field(key),
                        format!("must be a whole, non-negative number of bytes, got '{v}'"),
                    ));
                }
                h.pp_comm = x as u64;
                h.pp_comm_decimal = v.contains('.');
                h.variant = if key == "pp_comm:" { HeaderVariant::Current } else { HeaderVariant::PpCommNoColon };
            }
            _ => {
                return Err(InputError::at(
                    path,
                    1,
                    key.trim_end_matches(':'),
                    "unknown header key (valid: model_parallel_NPU_group: ep: pp: vpp: ga: all_gpus: checkpoints: checkpoint_initiates: pp_comm:)",
                ))
            }
        }
        i += 2;
    }
    let full = ["ep:", "pp:", "vpp:", "ga:", "all_gpus:"].iter().any(|k| tokens.contains(k));
    if h.variant == HeaderVariant::V1 && full {
        h.variant = HeaderVariant::NoPpComm;
    }
    if !tokens.contains(&"model_parallel_NPU_group:") {
        return Err(InputError::at(path, 1, "model_parallel_NPU_group", "missing (the TP size)"));
    }
    if matches!(h.variant, HeaderVariant::Current | HeaderVariant::PpCommNoColon) && h.all_gpus.is_none() {
        return Err(InputError::at(path, 1, "all_gpus", "missing (the header has pp_comm, so it is not a v1 header)"));
    }
    Ok(h)
}

fn parse_u64(path: &str, line: usize, field: &str, tok: &str, what: &str) -> Result<u64> {
    tok.parse::<u64>().map_err(|_| {
        let msg = if tok.starts_with('-') && tok[1..].parse::<f64>().is_ok() {
            format!("negative {what} '{tok}'")
        } else if !tok.is_empty() && tok.bytes().all(|b| b.is_ascii_digit()) {
            format!("{what} '{tok}' is too large (at most {})", u64::MAX)
        } else {
            format!("{what} must be a whole non-negative number, got '{tok}'")
        };
        InputError::at(path, line, field, msg)
    })
}

/// A compute time in ns, at most the IR's bound on one compute ([`MAX_NS`], about 32 years).
fn parse_ns(path: &str, line: usize, field: &str, tok: &str) -> Result<u64> {
    let ns = parse_u64(path, line, field, tok, "time")?;
    if ns as f64 > MAX_NS {
        return Err(InputError::at(path, line, field, format!("time '{tok}' is more than {MAX_NS:e} ns")));
    }
    Ok(ns)
}

fn parse_comm(path: &str, line: usize, fields: &[&str], k: usize) -> Result<Comm> {
    let tok = fields[k];
    let kind = CommType::parse(tok).ok_or_else(|| {
        InputError::at(path, line, FIELDS[k], format!("unknown collective '{tok}' (valid: {})", CommType::VALID))
    })?;
    let bytes = parse_u64(path, line, FIELDS[k + 1], fields[k + 1], "size")?;
    Ok(Comm { kind, bytes })
}

impl WorkloadFile {
    /// Parse `text` read from `path`. With `lenient`, a row count on line 2 that disagrees with
    /// the rows present is a warning instead of an error (one AICB example file has this defect).
    pub fn parse(path: &str, text: &str, lenient: bool) -> Result<WorkloadFile> {
        let mut lines = text.lines().enumerate();
        let header = match lines.next() {
            Some((_, l)) => parse_header(path, l)?,
            None => return Err(InputError::at(path, 1, "header", "empty file (expected a header line)")),
        };
        let declared: usize = match lines.next() {
            Some((_, l)) => l.trim().parse().map_err(|_| {
                InputError::at(path, 2, "rows", format!("expected the number of rows, got '{}'", l.trim()))
            })?,
            None => return Err(InputError::at(path, 2, "rows", "missing row count")),
        };
        // Not `with_capacity(declared)`: the count is user input and may be absurd.
        let mut rows = Vec::new();
        for (i, raw) in lines {
            let line = i + 1;
            let f: Vec<&str> = raw.split_whitespace().collect();
            if f.is_empty() {
                continue;
            }
            if f.len() != 12 {
                return Err(InputError::at(
                    path,
                    line,
                    "row",
                    format!("expected 12 fields ({}), found {}", FIELDS.join(" "), f.len()),
                ));
            }
            let depen = f[1]
                .parse::<i64>()
                .map_err(|_| InputError::at(path, line, "depen", format!("not an integer: '{}'", f[1])))?;
            rows.push(Row {
                name: f[0].to_string(),
                depen,
                fwd_ns: parse_ns(path, line, FIELDS[2], f[2])?,
                fwd: parse_comm(path, line, &f, 3)?,
                ig_ns: parse_ns(path, line, FIELDS[5], f[5])?,
                ig: parse_comm(path, line, &f, 6)?,
                wg_ns: parse_ns(path, line, FIELDS[8], f[8])?,
                wg: parse_comm(path, line, &f, 9)?,
                wg_update_ns: parse_ns(path, line, FIELDS[11], f[11])?,
                line,
            });
        }
        let mut warnings = Vec::new();
        if rows.len() != declared {
            let msg = format!("line 2 declares {declared} rows but the file has {}", rows.len());
            if !lenient {
                return Err(InputError::at(path, 2, "rows", format!("{msg} (use --lenient to read the rows present)")));
            }
            warnings.push(format!("{path}:2: rows: {msg}; using the {} rows present", rows.len()));
        }
        if rows.is_empty() {
            return Err(InputError::at(path, 2, "rows", "the workload has no rows"));
        }
        Ok(WorkloadFile { path: path.to_string(), header, rows, warnings })
    }

    /// Write the file back in its header variant (fields tab-separated, as AICB writes them).
    pub fn to_text(&self) -> String {
        let h = &self.header;
        let mut out = match h.variant {
            HeaderVariant::Micro => "MICRO".to_string(),
            HeaderVariant::V1 => {
                format!("HYBRID_TRANSFORMER_FWD_IN_BCKWD\tmodel_parallel_NPU_group: {} {}", h.tp, checkpoint_tokens(h))
            }
            HeaderVariant::Current | HeaderVariant::PpCommNoColon | HeaderVariant::NoPpComm => {
                let mut line = format!(
                    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {} ep: {} pp: {} vpp: {} ga: {}",
                    h.tp, h.ep, h.pp, h.vpp, h.ga
                );
                if let Some(n) = h.all_gpus {
                    line.push_str(&format!(" all_gpus: {n}"));
                }
                line.push(' ');
                line.push_str(&checkpoint_tokens(h));
                match h.variant {
                    HeaderVariant::Current => line.push_str(&format!(" pp_comm: {}", pp_comm_text(h))),
                    HeaderVariant::PpCommNoColon => line.push_str(&format!(" pp_comm {}", pp_comm_text(h))),
                    _ => {}
                }
                line
            }
        };
        out.push('\n');
        out.push_str(&self.rows.len().to_string());
        out.push('\n');
        for r in &self.rows {
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                r.name,
                r.depen,
                r.fwd_ns,
                r.fwd.kind.to_token(),
                r.fwd.bytes,
                r.ig_ns,
                r.ig.kind.to_token(),
                r.ig.bytes,
                r.wg_ns,
                r.wg.kind.to_token(),
                r.wg.bytes,
                r.wg_update_ns
            ));
        }
        out
    }
}

fn checkpoint_tokens(h: &Header) -> String {
    let list = |v: &[u32]| {
        std::iter::once(v.len().to_string()).chain(v.iter().map(|x| x.to_string())).collect::<Vec<_>>().join(" ")
    };
    format!("checkpoints: {} checkpoint_initiates: {}", list(&h.checkpoints), list(&h.checkpoint_initiates))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CURRENT: &str = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 8 vpp: 12 ga: 64 all_gpus: 1024 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 6291456.0\n1\nattention_layer\t-1\t5\tALLREDUCE\t100\t5\tNONE\t0\t5\tNONE\t0\t100\n";

    #[test]
    fn reads_current_header() {
        let f = WorkloadFile::parse("x.txt", CURRENT, false).unwrap();
        assert_eq!((f.header.tp, f.header.pp, f.header.vpp, f.header.ga), (8, 8, 12, 64));
        assert_eq!(f.header.pp_comm, 6291456);
        assert_eq!(f.header.variant, HeaderVariant::Current);
        assert_eq!(f.rows[0].fwd.kind, CommType::Collective(Collective::AllReduce, Scope::Plain));
        let again = WorkloadFile::parse("x.txt", &f.to_text(), false).unwrap();
        assert_eq!(again.header, f.header);
        assert_eq!(again.rows, f.rows);
    }

    #[test]
    fn v1_and_micro_defaults() {
        let v1 = "HYBRID_TRANSFORMER_FWD_IN_BCKWD\tmodel_parallel_NPU_group: 2 checkpoints: 0 checkpoint_initiates: 0\n1\nnorm -1 0 BROADCAST 16384 1 NONE 0 1 NONE 0 100\n";
        let f = WorkloadFile::parse("v1.txt", v1, false).unwrap();
        assert_eq!((f.header.tp, f.header.ep, f.header.pp, f.header.ga, f.header.all_gpus), (2, 1, 1, 1, None));
        assert_eq!(f.header.variant, HeaderVariant::V1);
        let m = WorkloadFile::parse("m.txt", "MICRO\n1\nmicro_test -1 1 NONE 0 1 NONE 0 1 ALLGATHER 4096 1\n", false)
            .unwrap();
        assert_eq!(m.header.policy, Policy::Micro);
        assert_eq!(WorkloadFile::parse("m.txt", &m.to_text(), false).unwrap().rows, m.rows);
    }

    fn err(text: &str) -> String {
        WorkloadFile::parse("w.txt", text, false).unwrap_err().to_string()
    }

    #[test]
    fn bad_input_names_line_and_field() {
        let h = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 8 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0\n";
        assert_eq!(
            err(&format!("{h}1\nx -1 1 ALLREDUCE -5 1 NONE 0 1 NONE 0 1\n")),
            "w.txt:3: fwd_size: negative size '-5'"
        );
        assert_eq!(
            err(&format!("{h}1\nx -1 1 ALLSUM 5 1 NONE 0 1 NONE 0 1\n")),
            format!("w.txt:3: fwd_comm: unknown collective 'ALLSUM' (valid: {})", CommType::VALID)
        );
        assert!(
            err(&format!("{h}1\nx -1 1 NONE 0 1 NONE 0 1 NONE 0\n")).starts_with("w.txt:3: row: expected 12 fields")
        );
        assert!(err(&format!("{h}3\nx -1 1 NONE 0 1 NONE 0 1 NONE 0 1\n"))
            .starts_with("w.txt:2: rows: line 2 declares 3 rows but the file has 1"));
        assert!(err("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 0\n0\n")
            .starts_with("w.txt:1: model_parallel_NPU_group: must be"));
        assert!(err("DATA\n0\n").starts_with("w.txt:1: policy: 'DATA' is an ASTRA-sim 1.0 policy"));
        assert!(err("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 foo: 3\n0\n")
            .starts_with("w.txt:1: foo: unknown header key"));
        assert!(err(&format!("{h}two\n")).starts_with("w.txt:2: rows: expected the number of rows"));
        // Found by fuzzing: the empty file's error named no line or field; a checkpoint count
        // of 2⁶⁴−1 overflowed (a panic); a compute time past the IR's bound was accepted.
        assert_eq!(err(""), "w.txt:1: header: empty file (expected a header line)");
        assert_eq!(
            err("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 checkpoints: 18446744073709551615"),
            "w.txt:1: checkpoints: declares 18446744073709551615 layer indices but fewer follow"
        );
        assert_eq!(
            err(&format!("{h}1\nx -1 18446744073709551615 NONE 0 1 NONE 0 1 NONE 0 1\n")),
            "w.txt:3: fwd_compute: time '18446744073709551615' is more than 1e18 ns"
        );
    }

    #[test]
    fn lenient_row_count_is_a_warning() {
        let text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD\tmodel_parallel_NPU_group: 8 checkpoints: 0 checkpoint_initiates: 0\n5\nx -1 1 NONE 0 1 NONE 0 1 NONE 0 1\n";
        let f = WorkloadFile::parse("w.txt", text, true).unwrap();
        assert_eq!(f.rows.len(), 1);
        assert_eq!(f.warnings.len(), 1);
    }
}
