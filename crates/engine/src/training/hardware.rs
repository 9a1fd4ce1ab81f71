//! Accelerators and the roofline cost of one operation on them.
//!
//! t = max(FLOPs / (peak · ε_c(FLOPs)), bytes / (HBM bandwidth · ε_m(bytes))) + launch overhead.
//!
//! ε_c and ε_m are size-dependent efficiencies: small kernels do not fill the machine. Their
//! shape follows Calculon's A100 system description (calculon-ai/calculon `systems/a100_80g.json`:
//! matrix efficiency rising with op size, HBM efficiency rising with transfer size), and one
//! curve serves every model: there are no per-model factors.

use serde::Deserialize;

use crate::error::{InputError, Result};

/// (op size, efficiency) points, largest size first; between points the efficiency is
/// interpolated in log(size), beyond them it is the end point's.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Efficiency(pub Vec<(f64, f64)>);

impl Efficiency {
    /// Points with sizes ≥ 0 in decreasing order and efficiencies in (0, 1].
    fn check(&self, field: &str) -> Result<()> {
        let bad = |msg: String| Err(InputError::field("accelerator", field, msg));
        if self.0.is_empty() {
            return bad("needs at least one [size, efficiency] point".into());
        }
        for (i, &(size, e)) in self.0.iter().enumerate() {
            if !(size.is_finite() && size >= 0.0) {
                return bad(format!("point {}: size {size} must be a finite number ≥ 0", i + 1));
            }
            if !(MIN_RATE..=1.0).contains(&e) {
                return bad(format!("point {}: efficiency {e} must be from {MIN_RATE:e} to 1", i + 1));
            }
            if i > 0 && size >= self.0[i - 1].0 {
                return bad(format!("point {}: sizes must decrease (largest first)", i + 1));
            }
        }
        Ok(())
    }

    pub fn at(&self, size: f64) -> f64 {
        let pts = &self.0;
        match pts.iter().position(|(s, _)| size >= *s) {
            None => pts.last().map_or(1.0, |p| p.1),
            Some(0) => pts[0].1,
            Some(i) => {
                let ((s_hi, e_hi), (s_lo, e_lo)) = (pts[i - 1], pts[i]);
                if s_lo <= 0.0 {
                    return e_lo;
                }
                let f = (size.ln() - s_lo.ln()) / (s_hi.ln() - s_lo.ln());
                e_lo + f * (e_hi - e_lo)
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Accelerator {
    pub name: String,
    /// Dense BF16/FP16 tensor-core peak, TFLOP/s.
    pub matmul_tflops: f64,
    /// Non-tensor FP32 peak, TFLOP/s (element-wise math, optimizer).
    pub vector_tflops: f64,
    /// HBM capacity, GB (10⁹ B).
    pub hbm_gb: f64,
    /// HBM bandwidth, TB/s (10¹² B/s).
    pub hbm_tbps: f64,
    /// Matrix-unit efficiency by FLOPs of the op.
    pub matmul_efficiency: Efficiency,
    /// HBM efficiency by bytes moved.
    pub memory_efficiency: Efficiency,
    /// Fixed cost of launching one kernel, ns.
    #[serde(default)]
    pub kernel_overhead_ns: f64,
}

/// Smallest rate or efficiency accepted: any positive bound keeps op times finite.
const MIN_RATE: f64 = 1e-6;
/// Largest rate accepted (TFLOP/s, TB/s, GB).
const MAX_RATE: f64 = 1e9;

impl Accelerator {
    /// Check what an accelerator file gave: rates and capacity positive and bounded, efficiency
    /// curves well formed, overhead finite. Errors name `accelerator`.
    pub fn check(&self) -> Result<()> {
        for (field, v) in [
            ("matmul_tflops", self.matmul_tflops),
            ("vector_tflops", self.vector_tflops),
            ("hbm_gb", self.hbm_gb),
            ("hbm_tbps", self.hbm_tbps),
        ] {
            if !(MIN_RATE..=MAX_RATE).contains(&v) {
                return Err(InputError::field(
                    "accelerator",
                    field,
                    format!("must be from {MIN_RATE:e} to {MAX_RATE:e}, got {v}"),
                ));
            }
        }
        if !(0.0..=1e12).contains(&self.kernel_overhead_ns) {
            return Err(InputError::field(
                "accelerator",
                "kernel_overhead_ns",
                format!("must be from 0 to 1e12 ns, got {}", self.kernel_overhead_ns),
            ));
        }
        self.matmul_efficiency.check("matmul_efficiency")?;
        self.memory_efficiency.check("memory_efficiency")
    }

    /// A GPU that runs every op at its peak (300 TFLOP/s, 2 TB/s), for tests of the schedule.
    #[cfg(test)]
    pub fn ideal() -> Accelerator {
        Accelerator {
            name: "ideal".into(),
            matmul_tflops: 300.0,
            vector_tflops: 20.0,
            hbm_gb: 80.0,
            hbm_tbps: 2.0,
            matmul_efficiency: Efficiency(vec![(0.0, 1.0)]),
            memory_efficiency: Efficiency(vec![(0.0, 1.0)]),
            kernel_overhead_ns: 0.0,
        }
    }

    /// ns for a matrix multiplication C[m×n] = A[m×k] · B[k×n] in 2-byte elements.
    pub fn gemm_ns(&self, m: f64, n: f64, k: f64) -> f64 {
        let flops = 2.0 * m * n * k;
        let bytes = 2.0 * (m * k + k * n + m * n);
        self.roofline_ns(flops, bytes, true)
    }

    /// ns for an op of `flops` and `bytes` of HBM traffic on the matrix (or vector) units.
    pub fn roofline_ns(&self, flops: f64, bytes: f64, matrix: bool) -> f64 {
        if flops <= 0.0 && bytes <= 0.0 {
            return 0.0;
        }
        let peak = if matrix { self.matmul_tflops } else { self.vector_tflops } * 1e3; // FLOP/ns
        let compute = if flops > 0.0 { flops / (peak * self.matmul_efficiency.at(flops)) } else { 0.0 };
        let bw = self.hbm_tbps * 1e3; // B/ns
        let memory = if bytes > 0.0 { bytes / (bw * self.memory_efficiency.at(bytes)) } else { 0.0 };
        compute.max(memory) + self.kernel_overhead_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a100() -> Accelerator {
        Accelerator {
            name: "a100".into(),
            matmul_tflops: 312.0,
            vector_tflops: 19.5,
            hbm_gb: 80.0,
            hbm_tbps: 2.039,
            matmul_efficiency: Efficiency(vec![(1.28e8, 0.8), (1.6e7, 0.6), (0.0, 0.1)]),
            memory_efficiency: Efficiency(vec![(1e8, 0.9), (0.0, 0.3)]),
            kernel_overhead_ns: 0.0,
        }
    }

    #[test]
    fn large_gemm_is_compute_bound() {
        // 2·4096³ FLOP at 0.8 × 312 TFLOP/s.
        let t = a100().gemm_ns(4096.0, 4096.0, 4096.0);
        assert!((t - 2.0 * 4096f64.powi(3) / (312e3 * 0.8)).abs() < 1e-6);
    }

    #[test]
    fn efficiency_interpolates_in_log_size() {
        let e = Efficiency(vec![(1e12, 0.8), (1e10, 0.6), (0.0, 0.1)]);
        assert_eq!(e.at(1e13), 0.8);
        assert!((e.at(1e11) - 0.7).abs() < 1e-12);
        assert_eq!(e.at(1e10), 0.6);
        assert_eq!(e.at(5e9), 0.1);
    }

    #[test]
    fn elementwise_is_memory_bound() {
        // 1 GB through HBM at 0.9 × 2.039 TB/s.
        let t = a100().roofline_ns(1e8, 1e9, false);
        assert!((t - 1e9 / (2039.0 * 0.9)).abs() < 1e-6);
    }

    #[test]
    fn check_refuses_rates_and_curves_a_run_cannot_use() {
        // Found by fuzzing: a rate of 0 made op times infinite (an internal error downstream).
        let mut a = a100();
        assert_eq!(a.check(), Ok(()));
        a.vector_tflops = 0.0;
        assert_eq!(a.check().unwrap_err().to_string(), "accelerator: vector_tflops: must be from 1e-6 to 1e9, got 0");
        a.vector_tflops = 19.5;
        a.memory_efficiency = Efficiency(vec![(0.0, 0.3), (1e8, 0.9)]);
        assert_eq!(
            a.check().unwrap_err().to_string(),
            "accelerator: memory_efficiency: point 2: sizes must decrease (largest first)"
        );
    }
}
