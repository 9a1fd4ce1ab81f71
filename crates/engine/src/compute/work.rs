//! A compute op as the model prices it ([`Priced`]: its time on the run's device with its
//! [`Work`]), and the roofline that prices a [`Work`] again on another accelerator.

use std::ops::{Add, Sub};

use crate::catalog::Accelerator;
use crate::workload::Work;

/// The roofline of `work` on `acc`: the slower of its FLOPs at the accelerator's peak for the
/// data type and its bytes at the HBM bandwidth, ns; None when the accelerator has no peak for
/// the data type and the op has FLOPs.
pub fn reprice_ns(work: &Work, acc: &Accelerator) -> Option<f64> {
    let flops_per_s = acc.flops(work.dtype);
    if flops_per_s.is_none() && work.flops > 0.0 {
        return None;
    }
    Some(super::roofline_ns(work.flops, flops_per_s, work.bytes, Some(acc.hbm_tbps * 1e3)))
}

/// A compute op as the model prices it: its time on the run's device and its work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Priced {
    pub ns: f64,
    pub work: Work,
}

impl Priced {
    /// One of `pieces` equal pieces.
    pub fn share(self, pieces: u32) -> Priced {
        Priced { ns: self.ns / f64::from(pieces), work: self.work.share(pieces) }
    }

    /// The same work in `ns` (a time the schedule fits it into).
    pub fn in_time(self, ns: f64) -> Priced {
        Priced { ns, ..self }
    }
}

impl Add for Priced {
    type Output = Priced;
    fn add(self, other: Priced) -> Priced {
        Priced { ns: self.ns + other.ns, work: self.work + other.work }
    }
}

impl Sub for Priced {
    type Output = Priced;
    fn sub(self, other: Priced) -> Priced {
        Priced { ns: self.ns - other.ns, work: self.work - other.work }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Dtype;

    #[test]
    fn roofline_on_a_catalog_accelerator_by_hand() {
        let a100 = crate::catalog::Catalog::shipped().accelerator("a100").unwrap();
        // 312e12 FLOP/s bf16, 2.039 TB/s: 312e9 FLOPs take 1 ms; 2.039e9 bytes take 1 ms.
        let w = Work { flops: 312e9, bytes: 1e6, dtype: Dtype::Bf16 };
        assert!((reprice_ns(&w, a100).unwrap() - 1e6).abs() < 1e-3);
        let w = Work { flops: 1.0, bytes: a100.hbm_tbps * 1e9, dtype: Dtype::Bf16 };
        assert!((reprice_ns(&w, a100).unwrap() - 1e6).abs() < 1e-3);
        // A100 has no fp8 peak.
        assert_eq!(reprice_ns(&Work { flops: 1.0, bytes: 0.0, dtype: Dtype::Fp8 }, a100), None);
    }

    #[test]
    fn pieces_and_remainders_add_back_up() {
        let whole = Priced { ns: 100.0, work: Work { flops: 8e9, bytes: 4e6, dtype: Dtype::Bf16 } };
        let piece = whole.share(4);
        assert_eq!((piece.ns, piece.work.flops), (25.0, 2e9));
        let rest = whole - piece;
        assert_eq!(rest + piece, whole);
        assert_eq!(piece.in_time(10.0).work, piece.work);
    }
}
