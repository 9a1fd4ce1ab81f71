//! SimAI-Analytical's `busbw.yaml`: measured bus bandwidth per group and collective.
//!
//! Not YAML: line 1 is skipped unread; a line ending in `:` opens a section (TP, DP, EP, DP_EP,
//! PP); other lines are `key: value` with the key cut at its first comma (`allreduce,: 300`);
//! `null` leaves a value unset; `#` starts a comment line. Values are GB/s.

use std::collections::HashMap;

use crate::error::{InputError, Result};
use crate::workload::Collective;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct BusbwTable {
    pub file: String,
    /// (section, key) → GB/s; `None` = given as null.
    pub values: HashMap<(String, String), Option<f32>>,
}

const SECTIONS: [&str; 5] = ["TP", "DP", "EP", "DP_EP", "PP"];

impl BusbwTable {
    pub fn parse(file: &str, text: &str) -> Result<BusbwTable> {
        let mut values = HashMap::new();
        let mut section: Option<String> = None;
        for (i, raw) in text.lines().enumerate().skip(1) {
            let line = raw.trim();
            let n = i + 1;
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(name) = line.strip_suffix(':') {
                let name = name.trim();
                if !SECTIONS.contains(&name) {
                    return Err(InputError::at(
                        file,
                        n,
                        name,
                        format!("unknown section (valid: {})", SECTIONS.join(", ")),
                    ));
                }
                section = Some(name.to_string());
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                return Err(InputError::at(file, n, line, "expected 'key: value' or a section header ending in ':'"));
            };
            let key = key.split(',').next().unwrap_or("").trim().to_ascii_lowercase();
            let Some(sec) = &section else {
                return Err(InputError::at(file, n, &key, "value outside any section (TP:, DP:, EP:, DP_EP:, PP:)"));
            };
            let valid: &[&str] =
                if sec == "PP" { &["busbw"] } else { &["allreduce", "allgather", "reducescatter", "alltoall"] };
            if !valid.contains(&key.as_str()) {
                return Err(InputError::at(
                    file,
                    n,
                    &format!("{sec}.{key}"),
                    format!("unknown key (valid: {})", valid.join(", ")),
                ));
            }
            let value = value.trim();
            let v = if value == "null" {
                None
            } else {
                match value.parse::<f32>() {
                    Ok(v) if v > 0.0 && v.is_finite() => Some(v),
                    _ => {
                        return Err(InputError::at(
                            file,
                            n,
                            &format!("{sec}.{key}"),
                            format!("busbw must be a positive number of GB/s or null, got '{value}'"),
                        ));
                    }
                }
            };
            values.insert((sec.clone(), key), v);
        }
        Ok(BusbwTable { file: file.to_string(), values })
    }

    /// The value of `section.key`, or an error naming the file and field.
    pub fn get(&self, section: &str, key: &str) -> Result<f32> {
        let field = format!("{section}.{key}");
        match self.values.get(&(section.to_string(), key.to_string())) {
            Some(Some(v)) => Ok(*v),
            Some(None) => Err(InputError::field(&self.file, &field, "is null but the workload needs it")),
            None => Err(InputError::field(&self.file, &field, "missing but the workload needs it")),
        }
    }

    pub fn key(c: Collective) -> &'static str {
        match c {
            Collective::AllReduce => "allreduce",
            Collective::AllGather | Collective::Broadcast => "allgather",
            Collective::ReduceScatter | Collective::Reduce => "reducescatter",
            Collective::AllToAll => "alltoall",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_simai_example() {
        let t = BusbwTable::parse(
            "busbw.yaml",
            "test\nTP:\nallreduce,: 300\nallgather,: 280\nDP:\nallreduce,: null\nPP:\nbusbw: 47.5",
        )
        .unwrap();
        assert_eq!(t.get("TP", "allreduce"), Ok(300.0));
        assert_eq!(t.get("PP", "busbw"), Ok(47.5));
        assert_eq!(
            t.get("DP", "allreduce").unwrap_err().to_string(),
            "busbw.yaml: DP.allreduce: is null but the workload needs it"
        );
        assert!(t.get("EP", "alltoall").unwrap_err().to_string().contains("missing"));
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = BusbwTable::parse("b.yaml", "x\nTP:\nallreduce,: fast\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "b.yaml:3: TP.allreduce: busbw must be a positive number of GB/s or null, got 'fast'"
        );
        let e = BusbwTable::parse("b.yaml", "x\nXP:\n").unwrap_err();
        assert!(e.to_string().starts_with("b.yaml:2: XP: unknown section"));
    }
}
