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
    // Sweep events: (time, kind) with kind 0 = compute ends, 1 = comm ends, 2 = compute starts,
    // 3 = comm starts; ends first so touching intervals do not overlap.
    let mut ev: Vec<(f64, u8, u32)> = Vec::with_capacity(program.ops.len() * 2);
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
        ev.push((s, if is_compute { 2 } else { 3 }, i as u32));
        ev.push((e, if is_compute { 0 } else { 1 }, i as u32));
    }
    ev.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
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
    for (time, kind, op) in ev {
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
