//! Where a class's time goes: compute, exposed communication, and idle time with nothing in
//! flight (pipeline bubbles).
//!
//! An instant counts as *exposed communication* when the compute stream is idle while
//! communications are in flight; it is shared equally among those in flight. Communication
//! that runs under compute costs nothing.

use crate::executor::Timeline;
use crate::workload::{OpKind, Program};

#[derive(Debug, Clone, PartialEq)]
pub struct Exposure {
    /// Exposed ns of each op (0 for compute ops).
    pub exposed: Vec<f64>,
    pub compute_ns: f64,
    /// Idle ns with no communication in flight.
    pub idle_ns: f64,
}

pub fn exposure(program: &Program, tl: &Timeline, end_ns: f64) -> Exposure {
    // Sweep events: (time, kind, op) with kind 0 = compute ends, 1 = comm ends, 2 = compute
    // starts, 3 = comm starts; ends first so touching intervals do not overlap. Each is packed
    // into one integer that sorts in that order (time by f64::total_cmp), so a plain unstable
    // sort of integers orders them.
    let mut ev: Vec<u128> = Vec::with_capacity(program.ops.len() * 2);
    let pack = |time: f64, kind: u8, op: usize| (ordered_bits(time) as u128) << 64 | (kind as u128) << 32 | op as u128;
    let mut compute_ns = 0.0;
    for (i, op) in program.ops.iter().enumerate() {
        let (s, e) = (tl.start[i], tl.end[i]);
        if e <= s || s.is_nan() {
            continue;
        }
        let is_compute = matches!(op.kind, OpKind::Compute { .. });
        if is_compute {
            compute_ns += e - s;
        }
        ev.push(pack(s, if is_compute { 2 } else { 3 }, i));
        ev.push(pack(e, if is_compute { 0 } else { 1 }, i));
    }
    ev.sort_unstable();
    let mut exposed = vec![0.0; program.ops.len()];
    let mut in_flight: Vec<u32> = Vec::new();
    let mut computing = 0u32;
    let mut idle_ns = 0.0;
    let mut t = 0.0;
    let charge = |from: f64, to: f64, computing: u32, in_flight: &[u32], exposed: &mut Vec<f64>, idle: &mut f64| {
        let dt = to - from;
        if dt <= 0.0 || computing > 0 {
            return;
        }
        if in_flight.is_empty() {
            *idle += dt;
        } else {
            let share = dt / in_flight.len() as f64;
            for &op in in_flight {
                exposed[op as usize] += share;
            }
        }
    };
    for e in ev {
        let (kind, op) = ((e >> 32) as u8, e as u32);
        let time = if kind >= 2 { tl.start[op as usize] } else { tl.end[op as usize] };
        charge(t, time, computing, &in_flight, &mut exposed, &mut idle_ns);
        t = time;
        match kind {
            0 => computing -= 1,
            1 => in_flight.retain(|&x| x != op),
            2 => computing += 1,
            _ => in_flight.push(op),
        }
    }
    charge(t, end_ns, computing, &in_flight, &mut exposed, &mut idle_ns);
    Exposure { exposed, compute_ns, idle_ns }
}

/// `x`'s bits as an unsigned integer whose order is [`f64::total_cmp`]'s.
fn ordered_bits(x: f64) -> u64 {
    let b = x.to_bits() as i64;
    ((b ^ (((b >> 63) as u64) >> 1) as i64) as u64) ^ (1 << 63)
}

#[cfg(test)]
mod tests {
    use super::ordered_bits;

    #[test]
    fn ordered_bits_sort_as_total_cmp() {
        let xs = [f64::NEG_INFINITY, -3.5, -1e-300, -0.0, 0.0, 5e-324, 1.0, 1.0 + f64::EPSILON, 2e9, f64::INFINITY];
        for a in xs {
            for b in xs {
                assert_eq!(ordered_bits(a).cmp(&ordered_bits(b)), a.total_cmp(&b), "{a} vs {b}");
            }
        }
    }
}
