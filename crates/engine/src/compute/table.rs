//! Measured kernel times (`train --kernels`, written by `clustersim kernels measure`), which
//! replace the model's where they cover a kernel.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::kernel::{Kernel, Pointwise};
use crate::error::{InputError, Result};

/// A measured time of one kernel, as a kernel table row gives it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Measured {
    pub kernel: String,
    pub shape: String,
    pub dtype: String,
    pub ns: f64,
}

/// Measured kernel times by (class, shape, dtype).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(from = "Vec<Measured>")]
pub struct KernelTable(HashMap<(String, String, String), f64>);

impl From<Vec<Measured>> for KernelTable {
    fn from(rows: Vec<Measured>) -> Self {
        KernelTable(rows.into_iter().map(|r| ((r.kernel, r.shape, r.dtype), r.ns)).collect())
    }
}

impl KernelTable {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn get(&self, kernel: &Kernel) -> Option<f64> {
        let (class, shape, dtype) = kernel.key();
        self.0.get(&(class, shape, dtype.to_string())).copied()
    }

    /// Times finite and ≥ 0; kernel classes known. Errors name the `kernels` field of the row.
    pub fn check(&self) -> Result<()> {
        for ((class, shape, _), ns) in &self.0 {
            if !(ns.is_finite() && *ns >= 0.0) {
                return Err(InputError::field(
                    "kernels",
                    "measured",
                    format!("{class} {shape}: time {ns} ns must be a finite number ≥ 0"),
                ));
            }
            if !is_class(class) {
                return Err(InputError::field("kernels", "kernel", format!("unknown kernel class {class:?}")));
            }
        }
        Ok(())
    }
}

/// Whether `class` names a kernel class of [`Kernel::key`].
pub fn is_class(class: &str) -> bool {
    let base = class.strip_suffix("_bwd").unwrap_or(class);
    matches!(class, "gemm" | "adam") || base == "flash_attention" || Pointwise::ALL.iter().any(|p| p.name() == base)
}

/// How many distinct kernels of an iteration a run timed from its measured table and how many
/// from the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelUse {
    pub measured: usize,
    pub modelled: usize,
}

impl KernelUse {
    pub fn of(kernels: &[(Kernel, usize)], table: &KernelTable) -> KernelUse {
        let measured = kernels.iter().filter(|(k, _)| table.get(k).is_some()).count();
        KernelUse { measured, modelled: kernels.len() - measured }
    }
}

/// The distinct kernels of a list, in first-seen order, each with how often it occurs.
pub fn distinct(kernels: &[Kernel]) -> Vec<(Kernel, usize)> {
    let mut out: Vec<(Kernel, usize)> = Vec::new();
    for k in kernels {
        match out.iter_mut().find(|(d, _)| d == k) {
            Some((_, n)) => *n += 1,
            None => out.push((*k, 1)),
        }
    }
    out
}
