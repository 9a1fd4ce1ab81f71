//! How ranks map to parallel coordinates (Megatron's `--order`, fastest-varying first).
//!
//! rank = Σ_d coord_d · Π_{k<d} size_k. The default order is Megatron-Core's `tp-cp-ep-dp-pp`,
//! where EP is carved out of data parallelism (DP = EP × DP_EP).

/// A named axis of the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Axis {
    Tp,
    Cp,
    Ep,
    /// The data-parallel part outside EP (SimAI's DP_EP).
    DpEp,
    Pp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Axes and their sizes, fastest-varying first.
    pub axes: Vec<(Axis, u32)>,
}

impl Layout {
    /// Megatron-Core's default order tp-cp-ep-dp-pp.
    pub fn megatron(tp: u32, cp: u32, ep: u32, dp_ep: u32, pp: u32) -> Layout {
        Layout { axes: vec![(Axis::Tp, tp), (Axis::Cp, cp), (Axis::Ep, ep), (Axis::DpEp, dp_ep), (Axis::Pp, pp)] }
    }

    pub fn world_size(&self) -> u32 {
        self.axes.iter().map(|a| a.1).product()
    }

    /// Bit mask of the given axes (bit i = position i in `axes`).
    pub fn mask(&self, axes: &[Axis]) -> u32 {
        self.axes.iter().enumerate().filter(|(_, (a, _))| axes.contains(a)).fold(0, |m, (i, _)| m | (1 << i))
    }

    pub fn axis_size(&self, axis: Axis) -> u32 {
        self.axes.iter().find(|a| a.0 == axis).map_or(1, |a| a.1)
    }

    pub fn size_of(&self, mask: u32) -> u32 {
        self.axes.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, a)| a.1).product()
    }

    pub fn coords(&self, rank: u32) -> Vec<u32> {
        let mut r = rank;
        self.axes
            .iter()
            .map(|&(_, n)| {
                let c = r % n;
                r /= n;
                c
            })
            .collect()
    }

    pub fn rank_of(&self, coords: &[u32]) -> u32 {
        let mut rank = 0;
        let mut stride = 1;
        for (c, &(_, n)) in coords.iter().zip(&self.axes) {
            rank += c * stride;
            stride *= n;
        }
        rank
    }

    /// Coordinate of `rank` along `axis` (0 if the layout has no such axis).
    pub fn coord(&self, rank: u32, axis: Axis) -> u32 {
        let mut stride = 1;
        for &(a, n) in &self.axes {
            if a == axis {
                return (rank / stride) % n;
            }
            stride *= n;
        }
        0
    }

    /// The ranks that share every coordinate of `rank` outside `mask`, in increasing
    /// group-local index (the first masked axis varies fastest).
    pub fn group_of(&self, rank: u32, mask: u32) -> Vec<u32> {
        let base = self.coords(rank);
        let varying: Vec<usize> = (0..self.axes.len()).filter(|i| mask & (1 << i) != 0).collect();
        let size = self.size_of(mask);
        let mut out = Vec::with_capacity(size as usize);
        let mut coords = base.clone();
        for k in 0..size {
            let mut rem = k;
            for &i in &varying {
                let n = self.axes[i].1;
                coords[i] = rem % n;
                rem /= n;
            }
            out.push(self.rank_of(&coords));
        }
        out
    }
}

/// The divisors of `n`, ascending (O(√n), so error messages stay fast for huge inputs).
pub fn divisors(n: u64) -> Vec<u64> {
    let (mut low, mut high) = (Vec::new(), Vec::new());
    let mut d = 1;
    while d * d <= n {
        if n.is_multiple_of(d) {
            low.push(d);
            if d * d != n {
                high.push(n / d);
            }
        }
        d += 1;
    }
    low.extend(high.into_iter().rev());
    low
}

/// Divisors of `n` for an error message: all of them, or the first and last few.
pub fn divisors_text(n: u64) -> String {
    let d: Vec<String> = divisors(n).iter().map(|x| x.to_string()).collect();
    if d.len() > 16 {
        format!("{} … {}", d[..8].join(", "), d[d.len() - 4..].join(", "))
    } else {
        d.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_in_order() {
        assert_eq!(divisors(36), vec![1, 2, 3, 4, 6, 9, 12, 18, 36]);
        assert_eq!(divisors(1), vec![1]);
        assert_eq!(divisors_text(7), "1, 7");
    }

    #[test]
    fn megatron_order_strides() {
        // t=2, e=4, dp_ep=3, p=2: TP consecutive, EP stride t, DP_EP stride t·e, PP stride t·dp.
        let l = Layout::megatron(2, 1, 4, 3, 2);
        assert_eq!(l.world_size(), 48);
        assert_eq!(l.group_of(0, l.mask(&[Axis::Tp])), vec![0, 1]);
        assert_eq!(l.group_of(0, l.mask(&[Axis::Ep])), vec![0, 2, 4, 6]);
        assert_eq!(l.group_of(0, l.mask(&[Axis::DpEp])), vec![0, 8, 16]);
        assert_eq!(l.group_of(3, l.mask(&[Axis::Pp])), vec![3, 27]);
        let dp = l.group_of(1, l.mask(&[Axis::Ep, Axis::DpEp]));
        assert_eq!(dp, vec![1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23]);
        assert_eq!(l.coord(27, Axis::Pp), 1);
    }
}
