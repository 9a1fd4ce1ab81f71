//! HPCC's sender: the rate from in-band network telemetry, as the SIGCOMM '19 paper specifies it
//! (Li et al., "HPCC: High Precision Congestion Control", §3.2–3.3 and Algorithm 1), in rates
//! (R = W / T) as SimAI's ns-3 runs it, with its keys ([`HpccParams`]).
//!
//! Every switch a data packet leaves stamps an INT record for that egress port ([`IntHop`]): the
//! time, the bytes the port has sent so far, its queue behind the packet and its line rate; the
//! receiver echoes the records in the ACK. With T the flow's base round trip, for each hop the
//! sender compares the record with the one the previous ACK carried:
//!
//!   u_j = txRate_j / B_j + min(q_j, q_j') / (B_j · T),   txRate_j = Δbytes_j / Δt_j,
//!
//! the hop's utilisation (traffic plus the queue it must drain within T). With the most utilised
//! hop's u and its τ = Δt (at most T), U ← U (1 − τ/T) + u τ/T. Then with η the target
//! utilisation and R_c the reference rate:
//! - U/η ≥ 1, or `MI_THRESH` additive steps done: R ← R_c / (U/η) + R_AI, the stage restarts;
//! - else R ← R_c + R_AI, one more stage.
//!
//! R stays within [min rate, line rate]. The reference R_c (and the stage) move once per round
//! trip: on the first ACK beyond the byte that was next to send at the previous such update; the
//! ACKs between set R from R_c without moving it (`FAST_REACT`), so the sender reacts to every
//! ACK without compounding. With `MULTI_RATE` each hop keeps its own U, R_c and stage and the
//! sender takes the least rate. The first ACK only stores the records.

use super::config::HpccParams;

/// INT records a packet can carry (SimAI's ns-3: 5); a longer path's ACKs are ignored.
pub const MAX_HOPS: usize = 5;

/// One switch egress port's INT record, taken as a data packet leaves it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IntHop {
    pub time_ns: f64,
    /// Bytes the port had sent before this packet.
    pub tx_bytes: f64,
    /// Bytes queued behind the packet.
    pub qlen: u64,
    /// Line rate, bytes/ns.
    pub rate: f64,
}

/// The INT stack a data packet gathers on its way, echoed by its ACK.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Int {
    /// Records pushed (more than [`MAX_HOPS`]: the stack overflowed).
    pub nhop: u32,
    pub hops: [IntHop; MAX_HOPS],
}

impl Int {
    pub fn push(&mut self, hop: IntHop) {
        if let Some(slot) = self.hops.get_mut(self.nhop as usize) {
            *slot = hop;
        }
        self.nhop += 1;
    }
}

/// One queue pair's HPCC state.
#[derive(Debug, Clone, PartialEq)]
pub struct Hpcc {
    /// T: the base round trip, ns.
    base_rtt: f64,
    /// The next byte to send at the last reference update; None before the first ACK.
    last_update_seq: Option<u64>,
    /// R_c: the reference rate, bytes/ns.
    pub rc: f64,
    pub stage: u32,
    /// U: the path's utilisation, averaged over T.
    pub u: f64,
    /// The records the last ACK carried.
    prev: Int,
    /// Per hop (`MULTI_RATE`): U, R_c, stage.
    hop_u: [f64; MAX_HOPS],
    hop_rc: [f64; MAX_HOPS],
    hop_stage: [u32; MAX_HOPS],
}

impl Hpcc {
    /// A queue pair starting at `line` bytes/ns on a path whose base round trip is `base_rtt` ns.
    pub fn new(line: f64, base_rtt: f64) -> Hpcc {
        Hpcc {
            base_rtt: base_rtt.max(1e-9),
            last_update_seq: None,
            rc: line,
            stage: 0,
            u: 1.0,
            prev: Int::default(),
            hop_u: [1.0; MAX_HOPS],
            hop_rc: [line; MAX_HOPS],
            hop_stage: [0; MAX_HOPS],
        }
    }

    /// T, ns.
    #[cfg(test)]
    pub fn base_rtt(&self) -> f64 {
        self.base_rtt
    }

    /// An ACK of every byte below `ack_seq`, carrying `int`, reaches the sender, whose next byte
    /// to send is `snd_nxt`: the rate to send at now, None when unchanged.
    pub fn on_ack(&mut self, p: &HpccParams, ack_seq: u64, snd_nxt: u64, int: &Int, line: f64) -> Option<f64> {
        let Some(last) = self.last_update_seq else {
            self.last_update_seq = Some(snd_nxt);
            self.prev = *int;
            return None;
        };
        let full = ack_seq > last;
        if !full && !p.fast_react {
            return None;
        }
        let rate = self.update(p, int, !full, line);
        if full {
            self.last_update_seq = Some(last.max(snd_nxt));
        }
        rate
    }

    // Hop i's record, its previous one and its per-hop state go together: indices read best.
    #[allow(clippy::needless_range_loop)]
    fn update(&mut self, p: &HpccParams, int: &Int, fast: bool, line: f64) -> Option<f64> {
        if int.nhop as usize > MAX_HOPS {
            return None;
        }
        let t = self.base_rtt;
        let n = int.nhop as usize;
        let mut updated = [false; MAX_HOPS];
        let (mut max_u, mut max_tau) = (f64::NEG_INFINITY, 0.0);
        for i in 0..n {
            let (now, before) = (int.hops[i], self.prev.hops[i]);
            if p.sample_feedback && fast && now.qlen == 0 {
                continue;
            }
            let tau = now.time_ns - before.time_ns;
            if tau <= 0.0 || i >= self.prev.nhop as usize {
                // A first record for this hop, or the same instant: no rate to measure.
                self.prev.hops[i] = now;
                continue;
            }
            let tx_rate = (now.tx_bytes - before.tx_bytes).max(0.0) / tau;
            let u = tx_rate / now.rate + now.qlen.min(before.qlen) as f64 / (now.rate * t);
            updated[i] = true;
            if p.multi_rate {
                let tau = tau.min(t);
                self.hop_u[i] = (self.hop_u[i] * (t - tau) + u * tau) / t;
            } else if u > max_u {
                (max_u, max_tau) = (u, tau);
            }
            self.prev.hops[i] = now;
        }
        self.prev.nhop = int.nhop;
        if !updated.iter().any(|&x| x) {
            return None;
        }
        let step = |rc: f64, stage: u32, u: f64| -> (f64, u32) {
            let c = u / p.target_util;
            let (r, s) =
                if c >= 1.0 || stage >= p.mi_thresh { (rc / c + p.rate_ai, 0) } else { (rc + p.rate_ai, stage + 1) };
            (r.clamp(p.min_rate.min(line), line), s)
        };
        let rate = if p.multi_rate {
            let mut rate = line;
            for i in 0..n {
                if updated[i] {
                    let (r, s) = step(self.hop_rc[i], self.hop_stage[i], self.hop_u[i]);
                    rate = rate.min(r);
                    if !fast {
                        (self.hop_rc[i], self.hop_stage[i]) = (r, s);
                    }
                } else {
                    rate = rate.min(self.hop_rc[i]);
                }
            }
            rate
        } else {
            let tau = max_tau.min(t);
            self.u = (self.u * (t - tau) + max_u * tau) / t;
            let (r, s) = step(self.rc, self.stage, self.u);
            if !fast {
                (self.rc, self.stage) = (r, s);
            }
            r
        };
        Some(rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(time_ns: f64, tx_bytes: f64, qlen: u64) -> Int {
        let mut int = Int::default();
        int.push(IntHop { time_ns, tx_bytes, qlen, rate: 50.0 });
        int
    }

    #[test]
    fn a_full_link_with_a_queue_is_cut_to_eta_over_u() {
        let p = HpccParams { rate_ai: 0.0, ..HpccParams::default() };
        let (line, t) = (50.0, 10_000.0);
        let mut h = Hpcc::new(line, t);
        assert_eq!(h.on_ack(&p, 1000, 5000, &hop(0.0, 0.0, 0), line), None, "the first ACK only stores");
        // τ = T: the port sent at line rate and holds a queue of B·T/2 both times, so
        // u = 1 + 0.5 and U (averaged over τ = T) is u itself: R = R_c η / 1.5.
        let q = (line * t / 2.0) as u64;
        let mut h2 = h.clone();
        h2.on_ack(&p, 1000, 5000, &hop(0.0, 0.0, q), line);
        let r = h2.on_ack(&p, 6000, 9000, &hop(t, line * t, q), line).unwrap();
        assert!((h2.u - 1.5).abs() < 1e-12, "{}", h2.u);
        assert!((r - line * 0.95 / 1.5).abs() < 1e-9, "{r}");
        assert_eq!(h2.rc, r, "a full update moves the reference");
        // An ACK within the same round trip (ack ≤ 9000) reacts from R_c without moving it.
        let rc = h2.rc;
        let r2 = h2.on_ack(&p, 7000, 10_000, &hop(t + 100.0, line * (t + 100.0), q), line).unwrap();
        assert_eq!(h2.rc, rc);
        assert!(r2 < line);
        // No queue, half the line rate: U = 0.5 after a whole T, R = R_c × 0.95 / 0.5 capped at
        // the line rate.
        let r = h.on_ack(&p, 6000, 9000, &hop(t, line * t / 2.0, 0), line).unwrap();
        assert!((h.u - 0.5).abs() < 1e-12);
        assert_eq!(r, line);
    }

    #[test]
    fn below_the_target_additive_steps_until_mi_thresh() {
        let p = HpccParams { mi_thresh: 2, rate_ai: 1.0, ..HpccParams::default() };
        let (line, t) = (50.0, 1000.0);
        let mut h = Hpcc::new(line, t);
        h.rc = 10.0;
        h.on_ack(&p, 1, 1, &hop(0.0, 0.0, 0), line);
        // The link runs at 40 % (U < η): R_c + R_AI twice, then a multiplicative step.
        let mut seq = 1;
        let mut rates = Vec::new();
        for k in 1..=3 {
            seq += 10;
            let tk = f64::from(k) * t;
            rates.push(h.on_ack(&p, seq, seq + 5, &hop(tk, 0.4 * line * tk, 0), line).unwrap());
        }
        assert_eq!(rates[0], 11.0);
        assert_eq!(rates[1], 12.0);
        // U: from 1 towards 0.4 with τ = T: 0.4 exactly after the first update.
        assert!((rates[2] - (12.0_f64 / (0.4 / 0.95) + 1.0).min(line)).abs() < 1e-9, "{rates:?}");
        assert_eq!(h.stage, 0);
    }

    #[test]
    fn multi_rate_takes_the_least_hop_rate() {
        let p = HpccParams { multi_rate: true, rate_ai: 0.0, ..HpccParams::default() };
        let (line, t) = (50.0, 1000.0);
        let two = |tk: f64, busy: f64| {
            let mut int = Int::default();
            int.push(IntHop { time_ns: tk, tx_bytes: 0.2 * line * tk, qlen: 0, rate: line });
            int.push(IntHop { time_ns: tk, tx_bytes: busy * line * tk, qlen: 0, rate: line });
            int
        };
        let mut h = Hpcc::new(line, t);
        h.on_ack(&p, 1, 1, &two(0.0, 0.0), line);
        // Hop 0 at 20 %, hop 1 at 190 % of its rate: R = line × 0.95 / 1.9 from hop 1.
        let r = h.on_ack(&p, 2, 2, &two(t, 1.9), line).unwrap();
        assert!((r - line * 0.95 / 1.9).abs() < 1e-9, "{r}");
    }
}
