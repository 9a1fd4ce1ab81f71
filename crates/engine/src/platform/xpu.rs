//! What an accelerator (XPU) computes with: peak FLOP/s per data type and its local memory (HBM
//! capacity and bandwidth). HCSim (Li et al. 2025, Table 2) describes an XPU by its fp16 and fp32
//! FLOPS; any other data type may be given too. A compute vertex of `f` FLOPs in data type `d`
//! takes at least `f / flops[d]` seconds (HCSim's Eq. 1, the roofline's compute bound).
//!
//! Catalog types (A100, H100, V100, ...) take theirs from the catalog's accelerator
//! ([`XpuSpec::of`]); a user-defined XPU (an FPGA, an ASIC) gives its own.

pub use crate::catalog::Dtype;
use crate::catalog::{Accelerator, Catalog};
use crate::error::{InputError, Result};

/// The catalog's accelerator `name` as a graph or template node's type: its name in upper case
/// (as HCSim writes XPU types) and what it computes with.
pub fn catalog_xpu(name: &str) -> Option<(String, XpuSpec)> {
    Catalog::shipped().accelerator(name).map(|a| (a.name.to_uppercase(), XpuSpec::of(a)))
}

/// The catalog's accelerator names in upper case, comma-separated, for messages.
pub fn catalog_names() -> String {
    Catalog::shipped().accelerators.iter().map(|a| a.name.to_uppercase()).collect::<Vec<_>>().join(", ")
}

/// The largest memory capacity a device may declare (1 EiB): no memory device holds more, so a
/// larger figure is a unit mistake. Unbounded memory (HCSim lets a memory node be infinite) is
/// given as infinity.
pub const MAX_MEMORY_BYTES: f64 = (1u64 << 60) as f64;

/// Check a memory capacity in bytes: positive, and finite up to [`MAX_MEMORY_BYTES`] or infinite.
pub fn check_capacity(file: &str, field: &str, bytes: f64) -> Result<f64> {
    if bytes.is_nan() || bytes <= 0.0 {
        return Err(InputError::field(file, field, format!("capacity {bytes} bytes must be positive")));
    }
    if bytes.is_finite() && bytes > MAX_MEMORY_BYTES {
        return Err(InputError::field(
            file,
            field,
            format!("capacity {bytes:e} bytes is more than any memory device holds (at most 2^60 = 1 EiB; 'inf' for unbounded)"),
        ));
    }
    Ok(bytes)
}

/// An accelerator's compute and local memory.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct XpuSpec {
    /// Peak FLOP/s per data type ([`Dtype::ALL`] order); None where it has no figure.
    pub flops_per_s: [Option<f64>; 6],
    /// Local memory (HBM) capacity, bytes.
    pub memory_bytes: f64,
    /// Local memory bandwidth, bytes/ns (GB/s); None where not given.
    pub memory_bandwidth: Option<f64>,
}

impl XpuSpec {
    /// What catalog accelerator `acc` computes with: its peaks (FLOP/s), HBM bytes and bandwidth.
    pub fn of(acc: &Accelerator) -> XpuSpec {
        let mut spec = XpuSpec {
            flops_per_s: [None; 6],
            memory_bytes: acc.hbm_gb * 1e9,
            memory_bandwidth: Some(acc.hbm_tbps * 1e12 / 1e9),
        };
        for d in Dtype::ALL {
            if let Some(t) = acc.tflops[d as usize] {
                spec.set_flops(d, t * 1e12);
            }
        }
        spec
    }

    /// Peak FLOP/s in data type `dtype`, if the XPU has a figure for it.
    pub fn flops(&self, dtype: Dtype) -> Option<f64> {
        self.flops_per_s[dtype as usize]
    }

    pub fn set_flops(&mut self, dtype: Dtype, flops_per_s: f64) {
        self.flops_per_s[dtype as usize] = Some(flops_per_s);
    }

    /// Check the spec (errors name `file` and `field`, e.g. the node): at least one positive
    /// finite FLOP/s figure, a valid capacity, a positive bandwidth.
    pub fn check(&self, file: &str, field: &str) -> Result<()> {
        let bad = |m: String| InputError::field(file, field, m);
        for d in Dtype::ALL {
            if let Some(f) = self.flops(d) {
                if !(f.is_finite() && f > 0.0) {
                    return Err(bad(format!("{}_flops {f} must be positive and finite", d.name())));
                }
            }
        }
        if self.flops_per_s.iter().all(Option::is_none) {
            return Err(bad("an XPU needs at least one FLOPS figure (fp16_flops, fp32_flops, ...)".into()));
        }
        check_capacity(file, &format!("{field} memory"), self.memory_bytes)?;
        if let Some(b) = self.memory_bandwidth.filter(|b| !(b.is_finite() && *b > 0.0)) {
            return Err(bad(format!("memory_bandwidth {b} must be positive and finite")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_and_specs_are_checked() {
        assert_eq!(check_capacity("f", "c", f64::INFINITY).unwrap(), f64::INFINITY);
        assert!(check_capacity("f", "c", 0.0).is_err());
        let e = check_capacity("f", "node m: capacity", 2.0 * MAX_MEMORY_BYTES).unwrap_err();
        assert!(e.to_string().starts_with("f: node m: capacity: capacity 2.3"), "{e}");
        let mut s = XpuSpec { memory_bytes: 80e9, ..XpuSpec::default() };
        assert!(s.check("f", "x").unwrap_err().message.contains("at least one FLOPS"));
        s.set_flops(Dtype::Fp16, 989e12);
        s.check("f", "x").unwrap();
        assert_eq!((s.flops(Dtype::Fp16), s.flops(Dtype::Fp32)), (Some(989e12), None));
        s.set_flops(Dtype::Fp32, -1.0);
        assert!(s.check("f", "x").unwrap_err().message.contains("fp32_flops -1"));
        assert_eq!(Dtype::parse("BF16"), Some(Dtype::Bf16));
    }
}
