//! What a compute op does, apart from how long it takes on one device: its FLOPs, its memory
//! traffic and the data type of its math. The IR carries it with each compute op
//! ([`super::OpKind::Compute`]) so that any backend can price the op again on another device
//! (`compute::reprice_ns`, the compute model's roofline) and reports can count FLOPs and bytes
//! without a second formula.

use std::ops::{Add, Sub};

use crate::catalog::Dtype;

/// FLOPs and bytes of memory traffic of a compute op, the FLOPs in `dtype`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    pub flops: f64,
    pub bytes: f64,
    pub dtype: Dtype,
}

impl Work {
    /// Nothing done, in `dtype`.
    pub const fn none(dtype: Dtype) -> Work {
        Work { flops: 0.0, bytes: 0.0, dtype }
    }

    /// `1/pieces` of the work: one of equal pieces a kernel is cut into.
    pub fn share(self, pieces: u32) -> Work {
        Work { flops: self.flops / f64::from(pieces), bytes: self.bytes / f64::from(pieces), ..self }
    }
}

/// The data type of a sum is the one its FLOPs are in (element-wise ops and the optimizer add
/// bytes only); two different data types with FLOPs keep the first.
impl Add for Work {
    type Output = Work;
    fn add(self, other: Work) -> Work {
        let dtype = if self.flops == 0.0 && other.flops > 0.0 { other.dtype } else { self.dtype };
        Work { flops: self.flops + other.flops, bytes: self.bytes + other.bytes, dtype }
    }
}

/// What is left of a block once some of its kernels are issued apart.
impl Sub for Work {
    type Output = Work;
    fn sub(self, other: Work) -> Work {
        Work { flops: (self.flops - other.flops).max(0.0), bytes: (self.bytes - other.bytes).max(0.0), ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_keep_the_flops_data_type() {
        let gemm = Work { flops: 2e9, bytes: 6e6, dtype: Dtype::Bf16 };
        let adam = Work { flops: 0.0, bytes: 34e6, dtype: Dtype::Fp32 };
        let both = adam + gemm;
        assert_eq!((both.flops, both.bytes, both.dtype), (2e9, 40e6, Dtype::Bf16));
        assert_eq!((both - gemm).bytes, 34e6);
        assert_eq!(gemm.share(4).flops, 5e8);
    }
}
