//! Size-efficiency tables: measured bus bandwidth as a fraction of the large-message value, by
//! message size (rows, 16 MiB … 16 GiB) and node count (columns). Shipped tables are SimAI's
//! (`astra-sim-alibabacloud/inputs/ratio/{nvlink,nic,ata}_ratio.csv`).

use crate::error::{InputError, Result};

/// Node count of each value column, in file order (SimAI's "Multi 16" is column 9).
const COLUMN_NODES: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
const MULTI_COLUMN: usize = 9;
/// The range of a cell: measured fractions of the peak are below 1 (SimAI's lie in 0.01–1).
const MIN_CELL: f64 = 1e-6;
const MAX_CELL: f64 = 1e3;

#[derive(Debug, Clone, PartialEq)]
pub struct RatioTable {
    /// Where the table came from, for error messages.
    pub file: String,
    pub sizes: Vec<f64>,
    /// cells[row][col - 1]; `None` = empty cell (no measurement).
    pub cells: Vec<Vec<Option<f64>>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RatioTables {
    pub nvlink: RatioTable,
    pub nic: RatioTable,
    pub all_to_all: RatioTable,
}

impl RatioTables {
    /// The tables shipped with clustersim.
    pub fn builtin() -> RatioTables {
        let parse = |name, text| RatioTable::parse(name, text).expect("shipped ratio table parses");
        RatioTables {
            nvlink: parse("nvlink_ratio.csv", include_str!("../../../data/ratio/nvlink_ratio.csv")),
            nic: parse("nic_ratio.csv", include_str!("../../../data/ratio/nic_ratio.csv")),
            all_to_all: parse("ata_ratio.csv", include_str!("../../../data/ratio/ata_ratio.csv")),
        }
    }
}

impl RatioTable {
    pub fn parse(file: &str, text: &str) -> Result<RatioTable> {
        let mut sizes = Vec::new();
        let mut cells = Vec::new();
        for (i, line) in text.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let mut parts = line.split(',');
            let size = parts.next().unwrap_or("").trim();
            let size: f64 = match size.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => v,
                _ => return Err(InputError::at(file, i + 1, "Size", format!("not a size in bytes: '{size}'"))),
            };
            if sizes.last().is_some_and(|&last| size <= last) {
                return Err(InputError::at(file, i + 1, "Size", "sizes must increase"));
            }
            let row = parts
                .enumerate()
                .map(|(c, cell)| {
                    let cell = cell.trim();
                    if cell.is_empty() {
                        Ok(None)
                    } else {
                        // Bounded so that a cell over another (the lookup) stays finite and non-zero.
                        match cell.parse::<f64>() {
                            Ok(v) if (MIN_CELL..=MAX_CELL).contains(&v) => Ok(Some(v)),
                            _ => Err(InputError::at(
                                file,
                                i + 1,
                                &format!("column {}", c + 2),
                                format!("not a ratio from {MIN_CELL:e} to {MAX_CELL:e}: '{cell}'"),
                            )),
                        }
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            if row.len() < MULTI_COLUMN {
                return Err(InputError::at(
                    file,
                    i + 1,
                    "row",
                    format!("expected at least {} columns", MULTI_COLUMN + 1),
                ));
            }
            sizes.push(size);
            cells.push(row);
        }
        if sizes.len() < 2 {
            let end = text.lines().count().max(1);
            return Err(InputError::at(file, end, "Size", "the table needs at least two size rows"));
        }
        Ok(RatioTable { file: file.to_string(), sizes, cells })
    }

    /// SimAI's lookup (`Layer.cc: getValue`), quirks included: column by node count (1, 2, 4, …,
    /// 128; 9 = "Multi 16"; any other count → the 16-node column), empty cells read as 1, linear
    /// interpolation in size, the first row below the smallest size, normalised by the same
    /// column's last (16 GiB) row, and no answer above the largest size.
    pub fn simai_value(&self, bytes: f64, nodes: u32) -> Result<f32> {
        let col =
            if nodes == 9 { MULTI_COLUMN } else { COLUMN_NODES.iter().position(|&n| n == nodes).map_or(5, |p| p + 1) };
        let cell = |r: usize| self.cells[r][col - 1].unwrap_or(1.0);
        let last = cell(self.sizes.len() - 1);
        if bytes == 0.0 {
            return Ok(1.0);
        }
        if bytes < self.sizes[0] {
            return Ok((cell(0) / last) as f32);
        }
        for r in 0..self.sizes.len() - 1 {
            let (s1, s2) = (self.sizes[r], self.sizes[r + 1]);
            if bytes >= s1 && bytes <= s2 {
                let v = cell(r) + (cell(r + 1) - cell(r)) * (bytes - s1) / (s2 - s1);
                return Ok((v / last) as f32);
            }
        }
        Err(InputError::field(
            &self.file,
            "Size",
            format!(
                "a message of {bytes} bytes is above the table's largest size ({}), which SimAI cannot price",
                self.sizes[self.sizes.len() - 1]
            ),
        ))
    }

    /// Corrected lookup: the column of the largest measured node count ≤ `nodes` (nearest filled
    /// column to the left when a cell is empty), sizes clamped to the table's range.
    pub fn value(&self, bytes: f64, nodes: u32) -> f64 {
        let mut col = COLUMN_NODES.iter().rposition(|&n| n <= nodes.max(1)).unwrap_or(0);
        while col > 0 && self.cells.iter().any(|r| r[col].is_none()) {
            col -= 1;
        }
        let cell = |r: usize| self.cells[r][col].unwrap_or(1.0);
        let last = cell(self.sizes.len() - 1);
        let b = bytes.clamp(self.sizes[0], self.sizes[self.sizes.len() - 1]);
        let r = self.sizes.windows(2).position(|w| b <= w[1]).unwrap_or(self.sizes.len() - 2);
        let (s1, s2) = (self.sizes[r], self.sizes[r + 1]);
        (cell(r) + (cell(r + 1) - cell(r)) * (b - s1) / (s2 - s1)) / last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simai_lookup_matches_hand_values() {
        let t = RatioTables::builtin();
        // NVLink 1 node at 16 MiB = 0.45 / 0.81; 48 MiB halfway between 0.55 and 0.65.
        assert!((t.nvlink.simai_value(16777216.0, 1).unwrap() as f64 - 0.45 / 0.81).abs() < 1e-6);
        assert!((t.nvlink.simai_value(50331648.0, 1).unwrap() as f64 - 0.60 / 0.81).abs() < 1e-6);
        // Below the first row: the first row.
        assert!((t.all_to_all.simai_value(1024.0, 1).unwrap() as f64 - 0.44 / 0.78).abs() < 1e-6);
        // Unknown node count → 16-node column; above 16 GiB → error.
        assert_eq!(t.nic.simai_value(17179869184.0, 3).unwrap(), 1.0);
        assert!(t.nic.simai_value(2.0 * 17179869184.0, 1).is_err());
    }

    #[test]
    fn corrected_lookup_clamps_and_falls_back() {
        let t = RatioTables::builtin();
        assert!((t.nic.value(1e12, 1) - 1.0).abs() < 1e-12);
        assert!((t.nic.value(1.0, 2) - 0.32 / 0.96).abs() < 1e-12);
        // ata has no 32-node data: use the 16-node column.
        assert!((t.all_to_all.value(17179869184.0, 32) - 1.0).abs() < 1e-12);
        assert!((t.all_to_all.value(16777216.0, 32) - 0.62 / 0.90).abs() < 1e-12);
    }

    #[test]
    fn cells_out_of_range_and_short_tables_are_refused() {
        // Found by fuzzing: a cell of 1e46 (or 6e299) made lookups infinite; no rows gave an
        // error without a line or field.
        let e = RatioTable::parse("r.csv", "\n6,,,,,,,,7e38,\n8,,,,,,,,.6,").unwrap_err();
        assert_eq!(e.to_string(), "r.csv:2: column 9: not a ratio from 1e-6 to 1e3: '7e38'");
        let e = RatioTable::parse("r.csv", "").unwrap_err();
        assert_eq!(e.to_string(), "r.csv:1: Size: the table needs at least two size rows");
    }
}
