//! The one compute model: each kernel's time from its shape and the device ([`Kernel`]), or
//! from a measured kernel table when the run has one ([`KernelTable`]); the roofline
//! ([`roofline_ns`]) is its degenerate case, for ops known only by their FLOPs and bytes.
//!
//! - GEMM C[m×n] = A[m×k]·B[k×n] (`batch` of them): the library picks, per shape, the fastest of
//!   a few output tiles tm×tn and split-k factors s, as cuBLAS's heuristic aims to (cuBLASLt
//!   enumerates its tiles as `cublasLtMatmulTile_t` and splits k with `SPLITK_NUM`):
//!   the accelerator's tile (`gemm_tile`, 128×128), its doubles 256×128 and 128×256 and its
//!   halves 128×64 and 64×128; s > 1 only while the output tiles leave SMs idle (s·tiles ≤ SMs,
//!   s ≤ 16). tiles = batch·⌈m/tm⌉·⌈n/tn⌉·s run in waves = ⌈tiles / SMs⌉, one tile per SM per
//!   wave; a wave takes one tile's main loop, 2·tm·tn·⌈k/s⌉ FLOPs at one SM's share of
//!   ε_gemm·peak, plus the tile's pipeline fill and drain t_fd (`gemm_fill_drain_ns`):
//!   t = max(waves · (2·tm·tn·⌈k/s⌉ / (r·peak/SMs·ε_gemm) + t_fd), 2·batch·(mk + kn + mn) / (B_hbm·ε_hbm))
//!   plus t_split = (s − 1)·8·batch·m·n / (B_hbm·ε_hbm) and t_launch.
//!   r = min(1, ρ(tile) / ρ(base)) with ρ = tm·tn / (tm + tn), the tile's FLOPs per operand byte
//!   loaded: a tile with less reuse than the accelerator's own is fed too slowly to keep its
//!   tensor cores busy, a larger one is no faster per FLOP ("larger tiles have more data reuse,
//!   allowing them to use less bandwidth", NVIDIA's "Matrix Multiplication Background" user
//!   guide). The split-k term writes and reads back each extra fp32 partial sum. A tile count one
//!   above a multiple of the SM count still costs a whole wave's math (tile/wave quantisation, as
//!   that guide describes it), but the larger tile can save the second fill and drain and split-k
//!   fills idle SMs. t_fd = 3.3 µs: OpenXLA's measured cuBLAS times on H100 at m = n = 1024 (one
//!   wave) grow linearly in k from an intercept of 5.3 µs, 3.3 µs above a 2 µs launch
//!   (benchmarks/hopper_kernels.py checks the other shapes and B200).
//! - Flash attention (causal, fused): FLOPs 2·bh·s_q·s_k·(d_qk + d_v)/2 forward and 2.5× that
//!   backward (the backward recomputes the scores and makes 5 GEMMs to the forward's 2,
//!   Dao 2023 §3.1); bytes Q, K, V, O (and their gradients backward). Roofline at
//!   ε_attention · peak forward and ε_attention,bwd · peak backward (the accelerator's
//!   `attention_bwd_efficiency`, ε_attention where no measurement gives the backward apart:
//!   on Hopper cuDNN's causal backward runs at 0.83 of its causal forward's rate), and
//!   ε_hbm · B_hbm, plus t_launch.
//! - Element-wise ops (norms, activations, dropout + residual, softmax, cross-entropy, embedding
//!   lookup, MoE permutation) are HBM-bound: t = bytes / (B_hbm · ε_hbm) + t_launch, bytes per
//!   element as [`Pointwise::bytes`] says; backward ones move twice the bytes, except the
//!   cross-entropy, whose passes are counted one by one from Megatron-Core's code.
//! - Cross-entropy over the vocabulary-parallel logits (n tokens × V/t), as Megatron-Core runs it
//!   unfused (`cross_entropy_loss_fusion` off by default; megatron/core/tensor_parallel/
//!   cross_entropy.py at f2e5db4, the code of the published H100 runs): forward casts the bf16
//!   logits to fp32 (read 2 B, write 4 B), takes the max (read 4), subtracts it in place (8),
//!   exponentiates in place (8), sums (4) and divides in place (8): 38 B per logit; backward
//!   scales the saved softmax in place by the loss gradient (8) and autograd casts the fp32
//!   gradient back to bf16 for the output layer (read 4, write 2): 14 B. Per-token gathers and
//!   the TP all-reduces of n floats are negligible beside these passes.
//! - The optimizer step (mixed-precision Adam) reads fp32 master weights, m, v and gradients and
//!   writes master, m, v and the bf16 copy: 34 B per parameter, HBM-bound.
//!
//! Device constants (SMs, peak, HBM bandwidth) come from datasheets; ε_gemm, ε_hbm and
//! t_launch are fitted once on the Megatron-LM A100 results (benchmarks/calibrate.py);
//! ε_attention is FlashAttention-2's published fraction of the A100 peak. Other accelerators
//! carry the A100 fit scaled by kernel-level measurements, never by training results: on
//! Hopper ε_gemm = 0.80 × (largest measured bf16 GEMM rate as a fraction of peak, H100 / A100)
//! = 0.74, which also absorbs the clock the 700 W limit sustains below the 1.83 GHz at which
//! 989 TFLOP/s is quoted, and ε_attention is cuDNN fused attention's measured fraction
//! (the catalog, crates/engine/src/catalog/accelerators.yaml, names every figure and source;
//! benchmarks/hopper_kernels.py checks the model against the published kernel rates).

mod kernel;
mod table;
mod work;

pub use kernel::{Kernel, Pointwise};
pub use table::{distinct, is_class, KernelTable, KernelUse, Measured};
pub use work::{reprice_ns, Priced};

use std::ops::Deref;

use serde::{Deserialize, Deserializer};

use crate::catalog::Accelerator;

/// An accelerator as the compute model prices kernels on it: the catalog's figures and the
/// kernel times measured on it, which replace the model's where they cover a kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    pub accelerator: Accelerator,
    pub measured: KernelTable,
}

impl From<Accelerator> for Device {
    fn from(accelerator: Accelerator) -> Device {
        Device { accelerator, measured: KernelTable::default() }
    }
}

/// A device is read as its accelerator (`device.sms`, `device.matmul_tflops`).
impl Deref for Device {
    type Target = Accelerator;
    fn deref(&self) -> &Accelerator {
        &self.accelerator
    }
}

impl Device {
    /// Check the figures and the measured times.
    pub fn check(&self) -> crate::Result<()> {
        self.accelerator.check()?;
        self.measured.check()
    }

    /// A device that runs every op at its peak ([`Accelerator::ideal`]), for tests.
    #[cfg(test)]
    pub fn ideal() -> Device {
        Device::from(Accelerator::ideal())
    }
}

/// Read from an accelerator's mapping with its `measured_kernels` (a run's input document).
impl<'de> Deserialize<'de> for Device {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut v = serde_json::Value::deserialize(d)?;
        let measured = match v.as_object_mut().and_then(|m| m.remove("measured_kernels")) {
            Some(rows) => KernelTable::deserialize(rows).map_err(D::Error::custom)?,
            None => KernelTable::default(),
        };
        let accelerator = Accelerator::deserialize(v).map_err(D::Error::custom)?;
        Ok(Device { accelerator, measured })
    }
}

/// The roofline (HCSim's Eq. 1 with memory): an op of `flops` at `flops_per_s` and `bytes` of
/// memory traffic at `bytes_per_ns` takes the slower of the two, ns; a rate of None bounds
/// nothing. The per-kernel model's degenerate case, for ops known only by their totals.
pub fn roofline_ns(flops: f64, flops_per_s: Option<f64>, bytes: f64, bytes_per_ns: Option<f64>) -> f64 {
    let compute = flops_per_s.map_or(0.0, |f| flops / f * 1e9);
    compute.max(bytes_per_ns.map_or(0.0, |w| bytes / w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roofline_is_the_slower_bound() {
        // 1e12 FLOPs at 1e15 FLOP/s: 1 ms; 4e9 bytes at 2000 B/ns: 2 ms.
        assert_eq!(roofline_ns(1e12, Some(1e15), 4e9, Some(2000.0)), 2e6);
        assert_eq!(roofline_ns(1e12, Some(1e15), 1e9, Some(2000.0)), 1e6);
        assert_eq!(roofline_ns(1e12, Some(1e15), 4e9, None), 1e6);
        assert_eq!(roofline_ns(0.0, None, 0.0, None), 0.0);
    }
}
