//! Accelerators: the datasheet constants and fitted efficiencies the per-kernel compute model
//! ([`super::kernels`]) prices kernels with, and the measured kernel times that replace it.
//!
//! One description per accelerator type, no per-model factors. SMs, peak and HBM bandwidth
//! come from datasheets; `gemm_efficiency`, `hbm_efficiency` and `kernel_overhead_ns` are fitted
//! on the Megatron-LM A100 results (benchmarks/calibrate.py) and carried to other accelerators
//! by kernel-level measurements; `attention_efficiency` is the fused-attention kernel's
//! published fraction of the peak, forward, and `attention_bwd_efficiency` the backward's where
//! a measurement gives it apart (the catalog names each figure and source).

use serde::Deserialize;

use super::kernels::KernelTable;
use crate::error::{InputError, Result};

fn default_tile() -> [u32; 2] {
    [128, 128]
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Accelerator {
    pub name: String,
    /// Dense BF16/FP16 tensor-core peak, TFLOP/s.
    pub matmul_tflops: f64,
    /// Non-tensor FP32 peak, TFLOP/s (catalog information; element-wise ops are HBM-bound).
    pub vector_tflops: f64,
    /// HBM capacity, GB (10⁹ B).
    pub hbm_gb: f64,
    /// HBM bandwidth, TB/s (10¹² B/s).
    pub hbm_tbps: f64,
    /// Streaming multiprocessors (compute units): GEMM tiles run in waves of this many.
    pub sms: u32,
    /// Output tile of a bf16 GEMM, rows × columns.
    #[serde(default = "default_tile")]
    pub gemm_tile: [u32; 2],
    /// Fraction of the peak a full wave of GEMM tiles sustains.
    pub gemm_efficiency: f64,
    /// Fraction of the HBM bandwidth streaming kernels sustain.
    pub hbm_efficiency: f64,
    /// Fraction of the peak fused (flash) attention sustains (forward; backward too unless
    /// `attention_bwd_efficiency` is given).
    pub attention_efficiency: f64,
    /// Fraction of the peak the fused attention backward sustains, where measured apart.
    #[serde(default)]
    pub attention_bwd_efficiency: Option<f64>,
    /// Fixed cost of launching one kernel, ns.
    #[serde(default)]
    pub kernel_overhead_ns: f64,
    /// A GEMM tile's pipeline fill (operands of the first k-steps in flight before the first
    /// MMA) and drain (epilogue writing the tile), ns, once per wave of tiles.
    #[serde(default)]
    pub gemm_fill_drain_ns: f64,
    /// Measured kernel times that replace the model's (`train --kernels`).
    #[serde(default)]
    pub measured_kernels: KernelTable,
}

/// Smallest rate or efficiency accepted: any positive bound keeps op times finite.
const MIN_RATE: f64 = 1e-6;
/// Largest rate accepted (TFLOP/s, TB/s, GB).
const MAX_RATE: f64 = 1e9;
/// Most SMs and largest tile side accepted.
const MAX_UNITS: u32 = 1 << 20;

impl Accelerator {
    /// Check what an accelerator file gave: rates and capacity positive and bounded,
    /// efficiencies in (0, 1], SMs and tile sides whole and positive, overhead finite. Errors
    /// name `accelerator`.
    pub fn check(&self) -> Result<()> {
        let bad = |field: &str, msg: String| Err(InputError::field("accelerator", field, msg));
        for (field, v) in [
            ("matmul_tflops", self.matmul_tflops),
            ("vector_tflops", self.vector_tflops),
            ("hbm_gb", self.hbm_gb),
            ("hbm_tbps", self.hbm_tbps),
        ] {
            if !(MIN_RATE..=MAX_RATE).contains(&v) {
                return bad(field, format!("must be from {MIN_RATE:e} to {MAX_RATE:e}, got {v}"));
            }
        }
        for (field, v) in [
            ("gemm_efficiency", self.gemm_efficiency),
            ("hbm_efficiency", self.hbm_efficiency),
            ("attention_efficiency", self.attention_efficiency),
            ("attention_bwd_efficiency", self.attention_bwd()),
        ] {
            if !(MIN_RATE..=1.0).contains(&v) {
                return bad(field, format!("must be from {MIN_RATE:e} to 1, got {v}"));
            }
        }
        if !(1..=MAX_UNITS).contains(&self.sms) {
            return bad("sms", format!("must be from 1 to {MAX_UNITS}, got {}", self.sms));
        }
        if self.gemm_tile.iter().any(|t| !(1..=MAX_UNITS).contains(t)) {
            return bad("gemm_tile", format!("sides must be from 1 to {MAX_UNITS}, got {:?}", self.gemm_tile));
        }
        for (field, v) in
            [("kernel_overhead_ns", self.kernel_overhead_ns), ("gemm_fill_drain_ns", self.gemm_fill_drain_ns)]
        {
            if !(0.0..=1e12).contains(&v) {
                return bad(field, format!("must be from 0 to 1e12 ns, got {v}"));
            }
        }
        self.measured_kernels.check()
    }

    /// Fraction of the peak the fused attention backward sustains.
    pub fn attention_bwd(&self) -> f64 {
        self.attention_bwd_efficiency.unwrap_or(self.attention_efficiency)
    }

    /// A GPU that runs every op at its peak (300 TFLOP/s on 100 SMs, 2 TB/s, 1×1 tiles, no
    /// launch or fill/drain cost), for tests of the schedule.
    #[cfg(test)]
    pub fn ideal() -> Accelerator {
        Accelerator {
            name: "ideal".into(),
            matmul_tflops: 300.0,
            vector_tflops: 20.0,
            hbm_gb: 80.0,
            hbm_tbps: 2.0,
            sms: 100,
            gemm_tile: [1, 1],
            gemm_efficiency: 1.0,
            hbm_efficiency: 1.0,
            attention_efficiency: 1.0,
            attention_bwd_efficiency: None,
            kernel_overhead_ns: 0.0,
            gemm_fill_drain_ns: 0.0,
            measured_kernels: KernelTable::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_refuses_rates_and_constants_a_run_cannot_use() {
        // Found by fuzzing: a rate of 0 made op times infinite (an internal error downstream).
        let mut a = Accelerator::ideal();
        assert_eq!(a.check(), Ok(()));
        a.vector_tflops = 0.0;
        assert_eq!(a.check().unwrap_err().to_string(), "accelerator: vector_tflops: must be from 1e-6 to 1e9, got 0");
        a.vector_tflops = 19.5;
        a.gemm_efficiency = 1.5;
        assert_eq!(a.check().unwrap_err().to_string(), "accelerator: gemm_efficiency: must be from 1e-6 to 1, got 1.5");
        a.gemm_efficiency = 0.8;
        a.sms = 0;
        assert_eq!(a.check().unwrap_err().to_string(), "accelerator: sms: must be from 1 to 1048576, got 0");
        a.sms = 108;
        a.gemm_tile = [128, 0];
        assert_eq!(
            a.check().unwrap_err().to_string(),
            "accelerator: gemm_tile: sides must be from 1 to 1048576, got [128, 0]"
        );
        a.gemm_tile = [128, 128];
        a.attention_bwd_efficiency = Some(0.0);
        assert_eq!(
            a.check().unwrap_err().to_string(),
            "accelerator: attention_bwd_efficiency: must be from 1e-6 to 1, got 0"
        );
        a.attention_bwd_efficiency = None;
        a.gemm_fill_drain_ns = f64::NAN;
        assert_eq!(
            a.check().unwrap_err().to_string(),
            "accelerator: gemm_fill_drain_ns: must be from 0 to 1e12 ns, got NaN"
        );
    }
}
