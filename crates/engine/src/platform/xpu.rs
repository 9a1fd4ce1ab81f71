//! What an accelerator (XPU) computes with: peak FLOP/s per data type and its local memory (HBM
//! capacity and bandwidth). HCSim (Li et al. 2025, Table 2) describes an XPU by its fp16 and fp32
//! FLOPS; any other data type may be given too. A compute vertex of `f` FLOPs in data type `d`
//! takes at least `f / flops[d]` seconds (HCSim's Eq. 1, the roofline's compute bound).
//!
//! Catalog types (A100, H100, V100, ...) come with a spec from the catalog; a user-defined XPU
//! (an FPGA, an ASIC) gives its own.

use crate::error::{InputError, Result};

/// Floating-point data types an XPU may have a peak rate for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    Fp64,
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
}

impl Dtype {
    pub const ALL: [Dtype; 6] = [Dtype::Fp64, Dtype::Fp32, Dtype::Tf32, Dtype::Bf16, Dtype::Fp16, Dtype::Fp8];

    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp64 => "fp64",
            Dtype::Fp32 => "fp32",
            Dtype::Tf32 => "tf32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
        }
    }

    pub fn parse(text: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name().eq_ignore_ascii_case(text))
    }
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

/// Accelerator types by name (case-insensitive), each with its spec.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub entries: Vec<(String, XpuSpec)>,
}

impl Catalog {
    pub fn get(&self, name: &str) -> Option<(&str, &XpuSpec)> {
        self.entries.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(n, s)| (n.as_str(), s))
    }

    pub fn names(&self) -> String {
        self.entries.iter().map(|e| e.0.as_str()).collect::<Vec<_>>().join(", ")
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
