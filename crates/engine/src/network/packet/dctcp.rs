//! DCTCP's sender as a rate, as the SIGCOMM '10 paper specifies its control law (Alizadeh et
//! al., "Data Center TCP (DCTCP)", §3.1) and SimAI's ns-3 runs it on RDMA queue pairs
//! ([`DctcpParams`]).
//!
//! Switches mark packets (ECN, here by the egress port's RED profile); the receiver echoes a
//! packet's mark in its ACK. Once per window of data (the first ACK beyond the byte that was next
//! to send at the previous update), with F the fraction of ACKs in that window that echoed a mark:
//!   α ← (1 − g) α + g F,
//! the window being the packets sent since the previous update. On a marked ACK, unless a cut is
//! already in progress (congestion window reduced: until the ACKs pass the byte that was next
//! to send at the cut), R ← R (1 − α/2). At each new window without a cut in progress,
//! R ← R + R_AI (`DCTCP_RATE_AI`). R stays within [min rate, line rate]; α starts at 1.

use super::config::DctcpParams;

/// One queue pair's DCTCP state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dctcp {
    pub rate: f64,
    pub alpha: f64,
    /// The next byte to send at the last α update; None before the first ACK.
    last_update_seq: Option<u64>,
    /// Packets in the current window, and the marked ACKs seen in it.
    window_packets: u64,
    marked: u64,
    /// A cut is in progress until an ACK passes this byte.
    cut_until: Option<u64>,
    /// For measurement: ACKs seen and the marked ones among them; windows closed and the sum of
    /// their marked fractions F.
    pub acks: u64,
    pub marked_acks: u64,
    pub windows: u64,
    pub fraction_sum: f64,
}

impl Dctcp {
    pub fn new(line: f64) -> Dctcp {
        Dctcp {
            rate: line,
            alpha: 1.0,
            last_update_seq: None,
            window_packets: 0,
            marked: 0,
            cut_until: None,
            acks: 0,
            marked_acks: 0,
            windows: 0,
            fraction_sum: 0.0,
        }
    }

    /// An ACK of every byte below `ack_seq`, echoing a mark or not; the sender's next byte is
    /// `snd_nxt`, its packets carry `packet_bytes` of payload. The new rate, None when unchanged.
    pub fn on_ack(
        &mut self,
        p: &DctcpParams,
        ack_seq: u64,
        snd_nxt: u64,
        marked: bool,
        packet_bytes: u64,
        line: f64,
    ) -> Option<f64> {
        let before = self.rate;
        self.acks += 1;
        self.marked_acks += u64::from(marked);
        self.marked += u64::from(marked);
        let packet_bytes = packet_bytes.max(1);
        let mut new_window = false;
        match self.last_update_seq {
            None => {
                self.last_update_seq = Some(snd_nxt);
                self.window_packets = snd_nxt / packet_bytes + 1;
                new_window = true;
            }
            Some(last) if ack_seq > last => {
                let fraction = (self.marked as f64 / self.window_packets as f64).min(1.0);
                self.alpha = (1.0 - p.gain) * self.alpha + p.gain * fraction;
                self.windows += 1;
                self.fraction_sum += fraction;
                self.last_update_seq = Some(snd_nxt);
                self.marked = 0;
                self.window_packets = snd_nxt.saturating_sub(ack_seq) / packet_bytes + 1;
                new_window = true;
            }
            Some(_) => {}
        }
        if self.cut_until.is_some_and(|s| ack_seq > s) {
            self.cut_until = None;
        }
        if marked && self.cut_until.is_none() {
            self.rate *= 1.0 - self.alpha / 2.0;
            self.cut_until = Some(snd_nxt);
        }
        if new_window && self.cut_until.is_none() {
            self.rate += p.rate_ai;
        }
        self.rate = self.rate.clamp(p.min_rate.min(line), line);
        (self.rate != before).then_some(self.rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_is_the_moving_average_of_the_marked_fraction() {
        // Windows of 10 packets with 3 marked: α_n = F + (α_0 − F)(1 − g)^n, F = 3/10.
        let (g, mtu) = (1.0 / 16.0, 1000u64);
        let p = DctcpParams { gain: g, rate_ai: 0.0, min_rate: 0.0 };
        let mut d = Dctcp::new(50.0);
        // The first ACK opens a window of the 9 packets ahead of it and itself.
        let mut last = 9 * mtu;
        d.on_ack(&p, 0, last, false, mtu, 50.0);
        let mut alphas = Vec::new();
        for _ in 0..40 {
            // The window's other 9 ACKs, 3 of them marked, then the one beyond it that closes it.
            for k in 0..9 {
                d.on_ack(&p, last, last, k < 3, mtu, 50.0);
            }
            let snd_nxt = last + 1 + 9 * mtu;
            d.on_ack(&p, last + 1, snd_nxt, false, mtu, 50.0);
            last = snd_nxt;
            alphas.push(d.alpha);
        }
        let f = 0.3;
        for (n, a) in alphas.iter().enumerate() {
            let want = f + (1.0 - f) * (1.0 - g).powi(n as i32 + 1);
            assert!((a - want).abs() < 1e-12, "window {n}: {a} vs {want}");
        }
        assert_eq!(d.acks, 401);
        assert_eq!(d.marked_acks, 120);
    }

    #[test]
    fn one_cut_by_alpha_over_two_per_window() {
        let p = DctcpParams { gain: 0.0, rate_ai: 1.0, min_rate: 0.0 };
        let mut d = Dctcp::new(40.0);
        d.rate = 20.0;
        d.alpha = 0.5;
        // First ACK: a new window, no cut in progress: + R_AI.
        assert_eq!(d.on_ack(&p, 1, 100, false, 10, 40.0), Some(21.0));
        // A mark: × (1 − α/2); a second mark before the ACKs pass byte 100 does not cut again.
        assert_eq!(d.on_ack(&p, 10, 100, true, 10, 40.0), Some(21.0 * 0.75));
        assert_eq!(d.on_ack(&p, 20, 110, true, 10, 40.0), None);
        // Past byte 100: the cut is over; this ACK also opens a new window: + R_AI.
        assert_eq!(d.on_ack(&p, 101, 200, false, 10, 40.0), Some(21.0 * 0.75 + 1.0));
    }
}
