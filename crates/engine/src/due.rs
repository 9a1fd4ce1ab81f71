//! Entries of the simulators' event heaps.

use std::cmp::Ordering;

/// `item` due at `time` (ns). In a `BinaryHeap` the earliest comes out first, ties in `seq`
/// order, so equal inputs give equal runs bit for bit.
#[derive(Debug, Clone, Copy)]
pub struct Due<T> {
    pub time: f64,
    pub seq: u64,
    pub item: T,
}

impl<T> PartialEq for Due<T> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl<T> Eq for Due<T> {}
impl<T> Ord for Due<T> {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        o.time.total_cmp(&self.time).then(o.seq.cmp(&self.seq))
    }
}
impl<T> PartialOrd for Due<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

#[cfg(test)]
mod tests {
    use super::Due;
    use std::collections::BinaryHeap;

    #[test]
    fn earliest_first_then_issue_order() {
        let mut h = BinaryHeap::new();
        for (time, seq) in [(5.0, 0), (1.0, 2), (1.0, 1), (3.0, 3)] {
            h.push(Due { time, seq, item: () });
        }
        let order: Vec<u64> = std::iter::from_fn(|| h.pop().map(|d| d.seq)).collect();
        assert_eq!(order, vec![1, 2, 3, 0]);
    }
}
