//! The packet model's event queue: a calendar queue (R. Brown, "Calendar queues: a fast O(1)
//! priority queue implementation for the simulation event set problem", CACM 31(10), 1988) of
//! fixed-width time buckets over a window ahead of the current bucket, with a binary heap for
//! events beyond the window (timers). Packet events land a serialisation and a link delay
//! ahead, so almost every push and pop is O(1) instead of a heap's O(log n) cache misses.
//!
//! Order is exactly a binary heap's on (time, issue sequence): a bucket is sorted when it becomes
//! current, an event pushed into the current bucket goes to a small heap beside it (the earlier of
//! the two comes out), and bucket indices (⌊time / width⌋) never invert two times. So runs are
//! identical to the heap's, bit for bit.

use std::collections::BinaryHeap;

use crate::due::Due;

/// Bucket width, ns: a few events each on a thousand busy 400 Gb/s links (wider buckets of
/// hundreds of events cost more to sort than the heap they replace).
const WIDTH_NS: f64 = 1.0;
/// Buckets in the window (a power of two): 16 µs ahead, past a packet's serialisation and a few
/// link delays; rate and retransmission timers go to the heap.
const BUCKETS: u64 = 1 << 14;

pub(super) struct Calendar<T> {
    /// Events of buckets `current + 1 .. current + BUCKETS`, bucket b in slot b % BUCKETS.
    ring: Vec<Vec<Due<T>>>,
    /// Events in `ring`.
    in_ring: usize,
    /// Events at or after bucket `current + BUCKETS` when pushed.
    far: BinaryHeap<Due<T>>,
    /// The current bucket's events when it became current, sorted latest first (popped from
    /// the end).
    now: Vec<Due<T>>,
    /// Events pushed into the current bucket since (a port freed a fraction of a bucket ahead):
    /// a small heap beside `now`, so none is inserted into the middle of a long sorted bucket.
    soon: BinaryHeap<Due<T>>,
    current: u64,
    /// Empty vectors with capacity, for slots that take their first event.
    pool: Vec<Vec<Due<T>>>,
}

fn bucket(time: f64) -> u64 {
    (time / WIDTH_NS) as u64
}

impl<T> Calendar<T> {
    pub(super) fn new() -> Calendar<T> {
        Calendar {
            ring: (0..BUCKETS).map(|_| Vec::new()).collect(),
            in_ring: 0,
            far: BinaryHeap::new(),
            now: Vec::new(),
            soon: BinaryHeap::new(),
            current: 0,
            pool: Vec::new(),
        }
    }

    /// An event no earlier than the last one popped.
    pub(super) fn push(&mut self, due: Due<T>) {
        let b = bucket(due.time);
        if b <= self.current {
            self.soon.push(due);
        } else if b < self.current + BUCKETS {
            let slot = &mut self.ring[(b % BUCKETS) as usize];
            if slot.capacity() == 0 {
                if let Some(v) = self.pool.pop() {
                    *slot = v;
                }
            }
            slot.push(due);
            self.in_ring += 1;
        } else {
            self.far.push(due);
        }
        if self.now.is_empty() && self.soon.is_empty() {
            self.advance();
        }
    }

    /// The earliest event (`Due`'s order is reversed: the earliest is the greatest).
    pub(super) fn peek(&self) -> Option<&Due<T>> {
        match (self.now.last(), self.soon.peek()) {
            (Some(a), Some(b)) => Some(if b > a { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    pub(super) fn pop(&mut self) -> Option<Due<T>> {
        let from_soon = match (self.now.last(), self.soon.peek()) {
            (Some(a), Some(b)) => b > a,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        let e = if from_soon { self.soon.pop() } else { self.now.pop() }?;
        if self.now.is_empty() && self.soon.is_empty() {
            self.advance();
        }
        Some(e)
    }

    /// Make the next non-empty bucket current (nothing when none is left).
    fn advance(&mut self) {
        let far = self.far.peek().map(|e| bucket(e.time));
        let next = if self.in_ring == 0 {
            match far {
                Some(b) => b,
                None => return,
            }
        } else {
            let mut b = self.current + 1;
            while self.ring[(b % BUCKETS) as usize].is_empty() && far.is_none_or(|f| b < f) {
                b += 1;
            }
            b
        };
        self.current = next;
        // The drained current vector goes back to the pool with its capacity (a slot taking its
        // first event draws from it), so a run allocates only while its busiest window grows,
        // and memory follows the buckets in use, not all of the window's.
        let drained = std::mem::take(&mut self.now);
        if drained.capacity() > 0 {
            self.pool.push(drained);
        }
        self.now = std::mem::take(&mut self.ring[(next % BUCKETS) as usize]);
        self.in_ring -= self.now.len();
        while self.far.peek().is_some_and(|e| bucket(e.time) <= next) {
            self.now.push(self.far.pop().expect("peeked"));
        }
        // `Due`'s order is reversed (earliest is greatest): ascending puts the earliest last.
        self.now.sort_unstable();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::Stream;

    #[test]
    fn pops_in_the_binary_heaps_order() {
        // Interleaved pushes (near, same bucket, same time, far beyond the window) and pops: the
        // calendar gives exactly the heap's sequence.
        let (mut cal, mut heap) = (Calendar::new(), BinaryHeap::new());
        let (mut z, mut seq, mut now) = (Stream::from_state(7), 0u64, 0.0f64);
        let mut out = (Vec::new(), Vec::new());
        for round in 0..20_000 {
            for _ in 0..(z.next() % 3) {
                let r = z.next();
                let dt = match r % 5 {
                    0 => 0.0,
                    1 => (r >> 8) as f64 % 50.0,
                    2 => (r >> 8) as f64 % 5_000.0,
                    3 => 2e6 + (r >> 8) as f64 % 1e6,
                    _ => ((r >> 8) % 4) as f64 * WIDTH_NS,
                };
                seq += 1;
                let d = Due { time: now + dt, seq, item: round };
                cal.push(d);
                heap.push(d);
            }
            if z.next().is_multiple_of(2) {
                let (a, b) = (cal.pop(), heap.pop());
                assert_eq!(a.map(|e| (e.time, e.seq)), b.map(|e| (e.time, e.seq)));
                if let Some(e) = a {
                    now = e.time;
                    out.0.push(e.seq);
                }
            }
        }
        while let Some(b) = heap.pop() {
            assert_eq!(cal.peek().map(|e| e.seq), Some(b.seq));
            out.0.push(cal.pop().unwrap().seq);
            out.1.push(b.seq);
        }
        assert!(cal.pop().is_none());
        assert!(out.0.len() > 10_000);
    }
}
