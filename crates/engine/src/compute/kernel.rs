use super::{Device, Priced};
use crate::catalog::{Accelerator, Dtype};
use crate::workload::Work;

/// Element-wise ops of a transformer iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pointwise {
    /// LayerNorm or RMSNorm over the hidden dimension.
    Norm,
    /// Dropout and the residual add.
    Residual,
    Gelu,
    /// SiLU of the gate times the up projection.
    Swiglu,
    /// Scale, causal mask, softmax and dropout over the attention scores (unfused attention).
    Softmax,
    /// Vocabulary-parallel cross-entropy over fp32 logits.
    CrossEntropy,
    /// Embedding lookup.
    Embedding,
    /// MoE token permutation (dispatch order) and its inverse.
    Permute,
}

impl Pointwise {
    pub const ALL: [Pointwise; 8] = [
        Pointwise::Norm,
        Pointwise::Residual,
        Pointwise::Gelu,
        Pointwise::Swiglu,
        Pointwise::Softmax,
        Pointwise::CrossEntropy,
        Pointwise::Embedding,
        Pointwise::Permute,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Pointwise::Norm => "norm",
            Pointwise::Residual => "dropout_add",
            Pointwise::Gelu => "gelu",
            Pointwise::Swiglu => "swiglu",
            Pointwise::Softmax => "softmax",
            Pointwise::CrossEntropy => "cross_entropy",
            Pointwise::Embedding => "embedding",
            Pointwise::Permute => "moe_permute",
        }
    }

    /// HBM bytes per element of the op: forward, bf16 reads and the write (2 B each); the
    /// softmax adds its dropout (a read, a write and a 1-byte mask); cross-entropy's fp32 passes
    /// as the module doc counts them (38 B forward, 14 B backward). Backward ops read the input
    /// and the output gradient and write the input gradient: twice the forward bytes, except the
    /// un-permutation, which is the same pass again.
    pub fn bytes(self, backward: bool) -> f64 {
        let forward = match self {
            Pointwise::Norm | Pointwise::Gelu | Pointwise::Embedding | Pointwise::Permute => 4.0,
            Pointwise::Residual | Pointwise::Swiglu => 6.0,
            Pointwise::Softmax => 7.0,
            Pointwise::CrossEntropy => return if backward { CE_BWD_BYTES } else { CE_FWD_BYTES },
        };
        match (backward, self) {
            (false, _) | (true, Pointwise::Permute) => forward,
            (true, _) => 2.0 * forward,
        }
    }

    fn dtype(self) -> Dtype {
        if self == Pointwise::CrossEntropy {
            Dtype::Fp32
        } else {
            Dtype::Bf16
        }
    }
}

/// One kernel of an iteration, by what its time depends on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kernel {
    /// `batch` products C[m×n] = A[m×k]·B[k×n] in bf16.
    Gemm { m: u64, n: u64, k: u64, batch: u64 },
    /// Fused causal attention over `batch_heads` (micro-batch × heads on this GPU) heads.
    FlashAttention { backward: bool, batch_heads: u64, s_q: u64, s_k: u64, d_qk: u64, d_v: u64 },
    /// An element-wise op over `rows` × `cols` elements.
    Elementwise { op: Pointwise, backward: bool, rows: u64, cols: u64 },
    /// Adam over `params` parameters.
    Optimizer { params: u64 },
}

/// Bytes of one bf16 element.
const BF16: f64 = 2.0;
/// Adam's HBM traffic per parameter (see the module doc).
const ADAM_BYTES: f64 = 34.0;
/// Cross-entropy's HBM bytes per logit, forward (cast 6, max 4, subtract 8, exp 8, sum 4,
/// divide 8) and backward (scale 8, cast back 6): see the module doc.
const CE_FWD_BYTES: f64 = 38.0;
const CE_BWD_BYTES: f64 = 14.0;

impl Kernel {
    /// The kernel's name in a kernel table: (class, shape, dtype).
    pub fn key(&self) -> (String, String, &'static str) {
        let bwd = |b: bool| if b { "_bwd" } else { "" };
        match *self {
            Kernel::Gemm { m, n, k, batch: 1 } => ("gemm".into(), format!("{m}x{n}x{k}"), "bf16"),
            Kernel::Gemm { m, n, k, batch } => ("gemm".into(), format!("{batch}x{m}x{n}x{k}"), "bf16"),
            Kernel::FlashAttention { backward, batch_heads, s_q, s_k, d_qk, d_v } => {
                (format!("flash_attention{}", bwd(backward)), format!("{batch_heads}x{s_q}x{s_k}x{d_qk}x{d_v}"), "bf16")
            }
            Kernel::Elementwise { op, backward, rows, cols } => {
                (format!("{}{}", op.name(), bwd(backward)), format!("{rows}x{cols}"), op.dtype().name())
            }
            Kernel::Optimizer { params } => ("adam".into(), params.to_string(), "fp32"),
        }
    }

    /// What the kernel does: its FLOPs (GEMMs and attention, in bf16) and HBM bytes (one pass over
    /// operands and results; element-wise ops and the optimizer as the module doc counts them).
    pub fn work(&self) -> Work {
        match *self {
            Kernel::Gemm { m, n, k, batch } => Work {
                flops: 2.0 * batch as f64 * m as f64 * n as f64 * k as f64,
                bytes: BF16 * batch as f64 * (m * k + k * n + m * n) as f64,
                dtype: Dtype::Bf16,
            },
            Kernel::FlashAttention { backward, batch_heads, s_q, s_k, d_qk, d_v } => {
                let (bh, sq, sk, d) = (batch_heads as f64, s_q as f64, s_k as f64, (d_qk + d_v) as f64);
                let fwd_flops = bh * sq * sk * d; // 2·bh·s_q·s_k·d / 2 (causal)
                let bytes = BF16 * bh * (sq + sk) * d;
                let (flops, bytes) = if backward { (2.5 * fwd_flops, 2.0 * bytes) } else { (fwd_flops, bytes) };
                Work { flops, bytes, dtype: Dtype::Bf16 }
            }
            Kernel::Elementwise { op, backward, rows, cols } => {
                Work { flops: 0.0, bytes: op.bytes(backward) * (rows * cols) as f64, dtype: op.dtype() }
            }
            Kernel::Optimizer { params } => Work { flops: 0.0, bytes: ADAM_BYTES * params as f64, dtype: Dtype::Fp32 },
        }
    }

    /// The kernel's time on `acc` by the model (ns).
    pub fn model_ns(&self, acc: &Accelerator) -> f64 {
        let bw = acc.hbm_tbps * 1e3 * acc.hbm_efficiency; // B/ns
        let peak = acc.matmul_tflops * 1e3; // FLOP/ns
        let body = match *self {
            Kernel::Gemm { m, n, k, batch } => gemm_ns(m, n, k, batch, acc, bw),
            Kernel::FlashAttention { backward, .. } => {
                let Work { flops, bytes, .. } = self.work();
                let efficiency = if backward { acc.attention_bwd() } else { acc.attention_efficiency };
                (flops / (peak * efficiency)).max(bytes / bw)
            }
            Kernel::Elementwise { .. } | Kernel::Optimizer { .. } => self.work().bytes / bw,
        };
        body + acc.kernel_overhead_ns
    }

    /// The kernel's time on `device` with its work.
    pub fn priced(&self, device: &Device) -> Priced {
        Priced { ns: self.ns(device), work: self.work() }
    }

    /// The kernel's time on `device`: measured when its table has the kernel, else the model's.
    pub fn ns(&self, device: &Device) -> f64 {
        if device.measured.is_empty() {
            return self.model_ns(device);
        }
        device.measured.get(self).unwrap_or_else(|| self.model_ns(device))
    }
}

/// Largest split-k factor considered.
const MAX_SPLIT_K: u64 = 16;
/// Bytes of one fp32 partial sum.
const FP32: f64 = 4.0;

/// The output tiles a library chooses among: the accelerator's tile, its doubles and its halves.
fn tile_choices([tm, tn]: [u64; 2]) -> impl Iterator<Item = [u64; 2]> {
    [[2 * tm, tn], [tm, 2 * tn], [tm, tn], [tm, tn / 2], [tm / 2, tn]].into_iter().filter(|t| t[0] > 0 && t[1] > 0)
}

/// A tile's FLOPs per byte of operands it loads: 2·tm·tn·dk / (2·(tm + tn)·dk).
fn reuse([tm, tn]: [u64; 2]) -> f64 {
    (tm * tn) as f64 / (tm + tn) as f64
}

/// Time of `batch` GEMMs C[m×n] = A[m×k]·B[k×n] without the launch (ns): the best tile and
/// split-k (see the module doc). `bw` is the achievable HBM bandwidth (B/ns).
fn gemm_ns(m: u64, n: u64, k: u64, batch: u64, acc: &Accelerator, bw: f64) -> f64 {
    let base = acc.gemm_tile.map(u64::from);
    let sms = acc.sms as u64;
    let per_sm = acc.matmul_tflops * 1e3 / acc.sms as f64 * acc.gemm_efficiency; // FLOP/ns
    let memory = Kernel::Gemm { m, n, k, batch }.work().bytes / bw;
    let mut best = f64::INFINITY;
    for tile @ [tm, tn] in tile_choices(base) {
        let rate = per_sm * (reuse(tile) / reuse(base)).min(1.0);
        let tiles = batch * m.div_ceil(tm) * n.div_ceil(tn);
        let splits = if 0 < tiles && tiles < sms { (sms / tiles).min(MAX_SPLIT_K).min(k.max(1)) } else { 1 };
        for s in 1..=splits {
            let waves = (tiles * s).div_ceil(sms) as f64;
            let wave = 2.0 * (tm * tn * k.div_ceil(s)) as f64 / rate + acc.gemm_fill_drain_ns;
            let partials = (s - 1) as f64 * 2.0 * FP32 * (batch * m * n) as f64 / bw;
            best = best.min((waves * wave).max(memory) + partials);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::{distinct, is_class, KernelTable, Measured};

    /// An A100-like device: 108 SMs, 312 TFLOP/s, 2 TB/s, 128×128 tiles, no launch overhead, no
    /// fill/drain.
    fn gpu() -> Accelerator {
        Accelerator {
            sms: 108,
            matmul_tflops: 312.0,
            hbm_tbps: 2.0,
            gemm_efficiency: 0.8,
            hbm_efficiency: 0.9,
            attention_efficiency: 0.5,
            gemm_tile: [128, 128],
            kernel_overhead_ns: 0.0,
            ..Accelerator::ideal()
        }
    }

    /// The same with a 1 µs fill/drain per wave of tiles.
    const FILL_DRAIN: f64 = 1000.0;
    fn gpu_fd() -> Accelerator {
        Accelerator { gemm_fill_drain_ns: FILL_DRAIN, ..gpu() }
    }

    /// One wave of 128×128 tiles with depth k: 2·128²·k FLOPs at one SM's share of 0.8 × peak.
    fn wave_ns(k: u64) -> f64 {
        2.0 * 128.0 * 128.0 * k as f64 / (312e3 / 108.0 * 0.8)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b
    }

    #[test]
    fn a_tile_count_one_above_the_sm_count_costs_a_wave_of_math_but_one_fill_drain() {
        let acc = gpu_fd();
        let (w, f) = (wave_ns(8192), FILL_DRAIN);
        // 12 × 9 tiles of 128×128 fill the 108 SMs once: W + F. (256×128: 54 tiles split in 2,
        // W + F + fp32 partials; 128×64: 216 tiles at 2/3 of the rate, 2 · (0.75 W + F).)
        let full = Kernel::Gemm { m: 12 * 128, n: 9 * 128, k: 8192, batch: 1 }.model_ns(&acc);
        assert!(close(full, w + f), "{full}");
        // One more row: 117 tiles of 128×128 are two waves, 2W + 2F; 7 × 9 = 63 tiles of 256×128
        // are one wave of twice the math, 2W + F (the best); halves 234 tiles, 3 · (0.75 W + F).
        let over = Kernel::Gemm { m: 12 * 128 + 1, n: 9 * 128, k: 8192, batch: 1 }.model_ns(&acc);
        assert!(close(over, 2.0 * w + f), "{over}");
        // A batched GEMM counts every product's tiles: 12 products of 3 × 3 tiles are one wave,
        // 13 are 117 tiles: 2W + F again (13 × 2 × 3 = 78 tiles of 256×128, one wave).
        let batched = Kernel::Gemm { m: 384, n: 384, k: 8192, batch: 12 }.model_ns(&acc);
        assert!(close(batched, w + f));
        let one_more = Kernel::Gemm { m: 384, n: 384, k: 8192, batch: 13 }.model_ns(&acc);
        assert!(close(one_more, 2.0 * w + f));
    }

    #[test]
    fn split_k_fills_idle_sms_and_pays_for_its_partial_sums() {
        let acc = gpu_fd();
        let (w, f) = (wave_ns(8192), FILL_DRAIN);
        // 6 × 9 = 54 tiles leave half the SMs idle: split in 2, 108 tiles of depth 4096 in one
        // wave (W/2 + F) plus one fp32 partial of 768 × 1152 written and read (8 B per element at
        // 0.9 × 2 TB/s). Unsplit: W + F; 64×128 or 128×64: 108 tiles at 2/3 rate, 0.75 W + F.
        let (m, n) = (6 * 128, 9 * 128);
        let partials = 8.0 * (m * n) as f64 / 1800.0;
        let t = Kernel::Gemm { m, n, k: 8192, batch: 1 }.model_ns(&acc);
        assert!(close(t, w / 2.0 + f + partials), "{t}");
        assert!(t < 0.75 * w + f);
    }

    #[test]
    fn a_thin_gemm_takes_half_tiles_at_two_thirds_of_the_rate() {
        let acc = gpu();
        // m = 192: 128×128 tiles waste a third of their second row (72 tiles, one wave, W);
        // 64×128 tiles fit it (108 tiles, one wave of half the math) but carry
        // ρ = 64·128/192 = 42.7 FLOP per operand byte against 128×128's 64, so they run at 2/3 of
        // the rate: 0.75 W, the best. (256×128 or 128×256: 36 tiles split in 3, 2/3 W plus two
        // fp32 partials, 0.94 W; 128×64: 144 tiles, two waves.)
        let t = Kernel::Gemm { m: 192, n: 36 * 128, k: 2048, batch: 1 }.model_ns(&acc);
        assert!(close(t, 0.75 * wave_ns(2048)), "{t}");
        let partials = 2.0 * 8.0 * (192.0 * 36.0 * 128.0) / 1800.0;
        assert!(2.0 / 3.0 * wave_ns(2048) + partials > t);
    }

    #[test]
    fn time_is_flat_within_a_wave_and_steps_at_each_wave() {
        let acc = gpu();
        // n spans 12 tiles, so every 9 tiles (1152 rows) of m are one more wave of 128×128 tiles
        // (or half as many of 256×128: the same math per SM).
        let t = |m: u64| Kernel::Gemm { m, n: 12 * 128, k: 8192, batch: 1 }.model_ns(&acc);
        assert_eq!(t(8 * 128 + 1), t(9 * 128));
        assert!(close(t(9 * 128), wave_ns(8192)));
        assert!((t(9 * 128 + 1) / t(9 * 128) - 2.0).abs() < 1e-9);
        assert!((t(27 * 128 + 1) / t(9 * 128) - 4.0).abs() < 1e-9);
        // Large and aligned: the sustained rate is ε_gemm × peak; with a fill/drain per wave the
        // 256×128 tile runs half the waves of 128×128: 16 · (2W + F).
        let (m, n, k) = (108 * 128 * 4, 128 * 8, 4096);
        let g = Kernel::Gemm { m, n, k, batch: 1 };
        let rate = 2.0 * (m * n * k) as f64 / g.model_ns(&acc);
        assert!((rate - 0.8 * 312e3).abs() < 1e-6 * rate);
        assert!(close(g.model_ns(&gpu_fd()), 16.0 * (2.0 * wave_ns(k) + FILL_DRAIN)));
    }

    #[test]
    fn thin_gemms_are_bound_by_memory_and_launches_add_their_overhead() {
        let mut acc = gpu();
        // m = n = 4096, k = 8: bytes 2·(2·4096·8 + 4096²) at 0.9 × 2 TB/s beat one wave's
        // compute (2·128²·8 FLOPs per SM, 16 waves).
        let (m, n, k) = (4096u64, 4096u64, 8u64);
        let bytes = 2.0 * (m * k + k * n + m * n) as f64;
        let memory = bytes / (2e3 * 0.9);
        assert!(memory > 16.0 * wave_ns(8));
        assert!((Kernel::Gemm { m, n, k, batch: 1 }.model_ns(&acc) - memory).abs() < 1e-6 * memory);
        acc.kernel_overhead_ns = 3000.0;
        assert!((Kernel::Gemm { m, n, k, batch: 1 }.model_ns(&acc) - memory - 3000.0).abs() < 1e-6 * memory);
    }

    #[test]
    fn element_wise_ops_move_their_bytes_at_the_achievable_bandwidth() {
        let acc = gpu();
        // LayerNorm over 8192 tokens × 4096: read and write bf16, 4 B per element, at 1.8 TB/s;
        // its backward twice that; dropout + residual 6 B; the un-permutation as the permutation.
        let (rows, cols) = (8192u64, 4096u64);
        let n = (rows * cols) as f64;
        let t = |op, backward| Kernel::Elementwise { op, backward, rows, cols }.model_ns(&acc);
        assert!((t(Pointwise::Norm, false) - 4.0 * n / 1800.0).abs() < 1e-6);
        assert!((t(Pointwise::Norm, true) - 8.0 * n / 1800.0).abs() < 1e-6);
        assert!((t(Pointwise::Residual, false) - 6.0 * n / 1800.0).abs() < 1e-6);
        assert!((t(Pointwise::Permute, true) - 4.0 * n / 1800.0).abs() < 1e-6);
        // Adam: 34 B per parameter.
        let adam = Kernel::Optimizer { params: 1_000_000_000 }.model_ns(&acc);
        assert!((adam - 34e9 / 1800.0).abs() < 1e-3);
    }

    #[test]
    fn cross_entropy_makes_megatrons_fp32_passes_over_the_vocabulary_shard() {
        // H100-like: 3.35 TB/s at ε_hbm 0.7 = 2345 B/ns, 2 µs launches. GPT with V = 131072 at
        // TP 8, one sequence of 4096 tokens: 4096 × 16384 = 67.1 M logits on this GPU.
        let acc = Accelerator { hbm_tbps: 3.35, hbm_efficiency: 0.7, kernel_overhead_ns: 2000.0, ..gpu() };
        let (rows, cols) = (4096u64, 131072 / 8);
        let logits = 67_108_864.0;
        let ce = |backward| Kernel::Elementwise { op: Pointwise::CrossEntropy, backward, rows, cols };
        // Forward: cast 2 + 4, max 4, subtract 4 + 4, exp 4 + 4, sum 4, divide 4 + 4 = 38 B:
        // 2.550 GB in 1.0875 ms, plus the launch.
        let fwd = ce(false).model_ns(&acc);
        assert!((fwd - (38.0 * logits / 2345.0 + 2000.0)).abs() < 1e-6 * fwd, "{fwd}");
        assert!((fwd - 1_089_478.0).abs() < 1.0, "{fwd}");
        // Backward: scale 4 + 4 and the cast back 4 + 2 = 14 B: 0.9395 GB in 0.4006 ms + 2 µs.
        let bwd = ce(true).model_ns(&acc);
        assert!((bwd - (14.0 * logits / 2345.0 + 2000.0)).abs() < 1e-6 * bwd, "{bwd}");
        assert!((bwd - 402_650.0).abs() < 1.0, "{bwd}");
        assert_eq!(ce(true).key(), ("cross_entropy_bwd".into(), "4096x16384".into(), "fp32"));
    }

    #[test]
    fn flash_attention_is_compute_bound_at_long_sequences_and_memory_bound_at_short() {
        let acc = gpu();
        // 32 heads of 4096 tokens, d = 128: causal FLOPs 2·32·4096²·256 / 2 at 0.5 × 312 TFLOP/s.
        let k = |s, backward| Kernel::FlashAttention { backward, batch_heads: 32, s_q: s, s_k: s, d_qk: 128, d_v: 128 };
        let flops = 32.0 * 4096.0 * 4096.0 * 256.0;
        assert!((k(4096, false).model_ns(&acc) - flops / 156e3).abs() < 1e-6);
        assert!((k(4096, true).model_ns(&acc) - 2.5 * flops / 156e3).abs() < 1e-6);
        // 8 tokens: FLOPs 32·8·8·256 (3.4 ns at 156 TFLOP/s), bytes 2·32·16·256 (146 ns at 1.8 TB/s).
        let bytes = 2.0 * 32.0 * 16.0 * 256.0;
        assert!((k(8, false).model_ns(&acc) - bytes / 1800.0).abs() < 1e-9);
    }

    #[test]
    fn the_attention_backward_runs_at_its_own_efficiency_where_one_is_given() {
        // Forward at 0.5 × 312 TFLOP/s; backward at 0.4 × 312: 2.5 × 32·4096²·256 FLOPs in
        // 2.753 ms (at the forward's 0.5 it would take 2.203 ms).
        let acc = Accelerator { attention_bwd_efficiency: Some(0.4), ..gpu() };
        let k =
            |backward| Kernel::FlashAttention { backward, batch_heads: 32, s_q: 4096, s_k: 4096, d_qk: 128, d_v: 128 };
        let flops = 32.0 * 4096.0 * 4096.0 * 256.0;
        assert!((k(false).model_ns(&acc) - flops / 156e3).abs() < 1e-6);
        let bwd = k(true).model_ns(&acc);
        assert!((bwd - 2.5 * flops / (0.4 * 312e3)).abs() < 1e-6, "{bwd}");
        assert!((bwd - 2_753_184.2).abs() < 1.0, "{bwd}");
        // Without it the backward takes the forward's efficiency.
        assert!((k(true).model_ns(&gpu()) - 2_202_547.3).abs() < 1.0);
    }

    #[test]
    fn a_measured_time_replaces_the_model_for_that_kernel_only() {
        let mut acc = Device::from(gpu());
        let g = Kernel::Gemm { m: 4096, n: 4096, k: 4096, batch: 1 };
        let other = Kernel::Gemm { m: 4096, n: 4096, k: 2048, batch: 1 };
        assert_eq!(g.key(), ("gemm".into(), "4096x4096x4096".into(), "bf16"));
        acc.measured = KernelTable::from(vec![Measured {
            kernel: "gemm".into(),
            shape: "4096x4096x4096".into(),
            dtype: "bf16".into(),
            ns: 123.0,
        }]);
        assert_eq!(g.ns(&acc), 123.0);
        assert_eq!(other.ns(&acc), other.model_ns(&acc));
    }

    #[test]
    fn every_key_names_a_known_class() {
        let kernels = [
            Kernel::Gemm { m: 1, n: 2, k: 3, batch: 4 },
            Kernel::FlashAttention { backward: true, batch_heads: 1, s_q: 2, s_k: 2, d_qk: 3, d_v: 3 },
            Kernel::Optimizer { params: 5 },
        ];
        let pointwise = Pointwise::ALL.map(|op| Kernel::Elementwise { op, backward: true, rows: 1, cols: 2 });
        for k in kernels.iter().chain(&pointwise) {
            assert!(is_class(&k.key().0), "{:?}", k.key());
        }
        assert!(!is_class("gemm_bwd") && !is_class("conv"));
        assert_eq!(distinct(&[kernels[0], kernels[2], kernels[0]]), vec![(kernels[0], 2), (kernels[2], 1)]);
    }
}
