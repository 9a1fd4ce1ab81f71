//! TIMELY's sender: the rate from the round-trip time and its gradient, as the SIGCOMM '15
//! paper specifies it (Mittal et al., "TIMELY: RTT-based Congestion Control for the
//! Datacenter", §4–5, Algorithm 1), with SimAI's ns-3 rate steps ([`TimelyParams`]).
//!
//! A data packet carries the time it was sent; its ACK brings it back, so the sender has the
//! packet's RTT. Once per round trip (the first ACK beyond the byte that was next to send at the
//! previous update), with new_diff = RTT − previous RTT:
//!   rtt_diff ← (1 − α) rtt_diff + α new_diff,   gradient = rtt_diff / minRTT;
//! - RTT < T_low: R ← R + δ;
//! - RTT > T_high: R ← R (1 − β (1 − T_high / RTT));
//! - gradient ≤ 0: R ← R + δ, or + N δ (`RATE_HAI`) after N increases in a row (hyper increase);
//! - else R ← R (1 − β · gradient).
//!
//! R stays within [min rate, line rate]. The first ACK only takes the RTT.

use super::config::TimelyParams;

/// One queue pair's TIMELY state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timely {
    pub rate: f64,
    /// The next byte to send at the last update; None before the first ACK.
    last_update_seq: Option<u64>,
    last_rtt: f64,
    pub rtt_diff: f64,
    /// Increases in a row.
    increases: u32,
}

impl Timely {
    pub fn new(line: f64) -> Timely {
        Timely { rate: line, last_update_seq: None, last_rtt: 0.0, rtt_diff: 0.0, increases: 0 }
    }

    /// An ACK of every byte below `ack_seq` whose data packet took `rtt` ns there and back; the
    /// sender's next byte is `snd_nxt`. The new rate, None when this ACK does not update it.
    pub fn on_ack(&mut self, p: &TimelyParams, ack_seq: u64, snd_nxt: u64, rtt: f64, line: f64) -> Option<f64> {
        let Some(last) = self.last_update_seq else {
            self.last_update_seq = Some(snd_nxt);
            self.last_rtt = rtt;
            return None;
        };
        if ack_seq <= last {
            return None;
        }
        let new_diff = rtt - self.last_rtt;
        self.rtt_diff = (1.0 - p.alpha) * self.rtt_diff + p.alpha * new_diff;
        let gradient = self.rtt_diff / p.min_rtt_ns;
        let rate = if rtt < p.t_low_ns || (rtt <= p.t_high_ns && gradient <= 0.0) {
            let step = if self.increases >= p.hai_after { p.rate_hai } else { p.rate_ai };
            self.increases += 1;
            self.rate + step
        } else {
            self.increases = 0;
            let factor = if rtt > p.t_high_ns {
                1.0 - p.beta * (1.0 - p.t_high_ns / rtt)
            } else {
                (1.0 - p.beta * gradient).max(0.0)
            };
            self.rate * factor
        };
        self.rate = rate.clamp(p.min_rate.min(line), line);
        self.last_update_seq = Some(last.max(snd_nxt));
        self.last_rtt = rtt;
        Some(self.rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_regions_by_hand() {
        let p = TimelyParams { rate_ai: 1.0, rate_hai: 5.0, hai_after: 2, min_rate: 0.5, ..TimelyParams::default() };
        let line = 50.0;
        let mut t = Timely::new(line);
        t.rate = 20.0;
        assert_eq!(t.on_ack(&p, 10, 100, 30e3, line), None);
        // Below T_low: +δ, whatever the gradient.
        assert_eq!(t.on_ack(&p, 101, 200, 40e3, line), Some(21.0));
        // Within [T_low, T_high] and rising: rtt_diff = 0.125 × 8750 + 0.875 × 20e3 = 18593.75
        // (the first was 0.875 × 10e3), a cut by β × gradient.
        let r = t.on_ack(&p, 201, 300, 60e3, line).unwrap();
        assert!((r - 21.0 * (1.0 - 0.8 * 18593.75 / 20e3)).abs() < 1e-9, "{r}");
        // Falling: rtt_diff = 0.125 × 18593.75 − 0.875 × 5e3 < 0, +δ.
        assert_eq!(t.on_ack(&p, 301, 350, 55e3, line), Some(r + 1.0));
        // Within the same round trip (ack ≤ 300): nothing.
        assert_eq!(t.on_ack(&p, 350, 400, 1e9, line), None);
        // Above T_high: R (1 − β (1 − T_high / RTT)), here RTT = 2 T_high: R × 0.6.
        let before = t.rate;
        let r = t.on_ack(&p, 401, 500, 1000e3, line).unwrap();
        assert!((r - before * 0.6).abs() < 1e-9);
    }

    #[test]
    fn hyper_increase_after_n_increases_in_a_row() {
        let p = TimelyParams { rate_ai: 1.0, rate_hai: 5.0, hai_after: 2, ..TimelyParams::default() };
        let mut t = Timely::new(100.0);
        t.rate = 10.0;
        t.on_ack(&p, 1, 1, 10e3, 100.0);
        let rates: Vec<f64> = (2..6).map(|k| t.on_ack(&p, k, k, 10e3, 100.0).unwrap()).collect();
        assert_eq!(rates, vec![11.0, 12.0, 17.0, 22.0]);
    }
}
