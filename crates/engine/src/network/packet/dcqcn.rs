//! DCQCN's reaction point: the sender's rate as the SIGCOMM '15 paper specifies it (Zhu et al.,
//! "Congestion Control for Large-Scale RDMA Deployments", §3.1, Figure 7 and its equations).
//!
//! With current rate R_C, target rate R_T and α (all per queue pair):
//! - on a CNP: R_T ← R_C, R_C ← R_C (1 − α/2), α ← (1 − g) α + g; the timer, the byte counter
//!   and their event counts restart (here at most one cut per `decrease_interval`, the paper's
//!   CNP pacing moved to the sender). Unless `clamp_target` is set, R_T ← R_C only when the timer
//!   raised the rate since the previous cut (ConnectX's `clamp_tgt_rate` = 0, SimAI's default):
//!   a burst of cuts keeps the pre-congestion rate as the target that fast recovery heads to;
//! - every K without a CNP: α ← (1 − g) α;
//! - a rate-increase event each time the timer T expires or B more bytes are sent; with T_c and
//!   B_c the counts of each since the last cut: fast recovery while max(T_c, B_c) < F:
//!   R_C ← (R_T + R_C)/2; additive increase when max ≥ F > min: R_T ← R_T + R_AI, then the
//!   average; hyper increase when min(T_c, B_c) ≥ F: R_T ← R_T + i R_HAI with i = min − F + 1,
//!   then the average. R_T and R_C stay within [min rate, line rate].
//!
//! Timers only tick while they matter: α's while α > 0, the increase timer while R_C is below the
//! line rate, so an uncongested queue pair costs no event here.

use super::config::DcqcnParams;

/// One queue pair's DCQCN state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dcqcn {
    pub rc: f64,
    pub rt: f64,
    pub alpha: f64,
    timer_events: u32,
    byte_events: u32,
    bytes: u64,
    last_cut: f64,
    /// A CNP came since α's last decay.
    cnp_since_alpha: bool,
}

impl Dcqcn {
    pub fn new(line: f64) -> Dcqcn {
        Dcqcn {
            rc: line,
            rt: line,
            alpha: 1.0,
            timer_events: 0,
            byte_events: 0,
            bytes: 0,
            last_cut: f64::NEG_INFINITY,
            cnp_since_alpha: false,
        }
    }

    /// A CNP at `now`: true when it cut the rate (then the timers restart).
    pub fn on_cnp(&mut self, p: &DcqcnParams, now: f64) -> bool {
        self.cnp_since_alpha = true;
        if now - self.last_cut < p.decrease_interval_ns {
            return false;
        }
        self.last_cut = now;
        if p.clamp_target || self.timer_events > 0 {
            self.rt = self.rc;
        }
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(p.min_rate);
        self.alpha = (1.0 - p.gain) * self.alpha + p.gain;
        self.timer_events = 0;
        self.byte_events = 0;
        self.bytes = 0;
        true
    }

    /// α's timer expired: decay unless a CNP came in the interval. True while α still matters.
    pub fn on_alpha_timer(&mut self, p: &DcqcnParams) -> bool {
        if !std::mem::take(&mut self.cnp_since_alpha) {
            self.alpha *= 1.0 - p.gain;
        }
        self.alpha > 1e-6
    }

    /// The increase timer expired.
    pub fn on_timer(&mut self, p: &DcqcnParams, line: f64) {
        self.timer_events += 1;
        self.increase(p, line);
    }

    /// `n` more bytes sent; may be a byte-counter increase event.
    pub fn on_sent(&mut self, p: &DcqcnParams, n: u64, line: f64) {
        if self.rc >= line {
            return;
        }
        self.bytes += n;
        if self.bytes >= p.byte_counter {
            self.bytes -= p.byte_counter;
            self.byte_events += 1;
            self.increase(p, line);
        }
    }

    fn increase(&mut self, p: &DcqcnParams, line: f64) {
        let (hi, lo) = (self.timer_events.max(self.byte_events), self.timer_events.min(self.byte_events));
        if lo >= p.fast_recovery {
            self.rt += f64::from(lo - p.fast_recovery + 1) * p.rate_hai;
        } else if hi >= p.fast_recovery {
            self.rt += p.rate_ai;
        }
        self.rt = self.rt.min(line);
        self.rc = ((self.rt + self.rc) / 2.0).min(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_and_recovery_by_hand() {
        let p =
            DcqcnParams { fast_recovery: 2, rate_ai: 1.0, rate_hai: 2.0, clamp_target: true, ..DcqcnParams::default() };
        let mut d = Dcqcn::new(50.0);
        // α = 1: the first cut halves the rate, α stays 1.
        assert!(d.on_cnp(&p, 0.0));
        assert_eq!((d.rc, d.rt, d.alpha), (25.0, 50.0, 1.0));
        // Within the decrease interval: no second cut.
        assert!(!d.on_cnp(&p, 1.0));
        // Fast recovery: halfway to the target, twice.
        d.on_timer(&p, 50.0);
        assert_eq!(d.rc, 37.5);
        d.on_timer(&p, 50.0);
        // Timer count 2 = F, byte count 0: additive increase, target capped at line rate, then
        // halfway: (50 + 37.5) / 2.
        assert_eq!((d.rt, d.rc), (50.0, 43.75));
        // α decays by (1 − g) per interval without CNP, after one interval that had one.
        assert!(d.on_alpha_timer(&p));
        assert_eq!(d.alpha, 1.0);
        d.on_alpha_timer(&p);
        assert_eq!(d.alpha, 1.0 - p.gain);
    }

    #[test]
    fn hyper_increase_once_both_counters_pass_f() {
        let p =
            DcqcnParams { fast_recovery: 1, rate_ai: 1.0, rate_hai: 4.0, byte_counter: 100, ..DcqcnParams::default() };
        // (R_T follows R_C at every cut here: the paper's rule.)
        let p = DcqcnParams { clamp_target: true, ..p };
        let mut d = Dcqcn::new(1000.0);
        d.on_cnp(&p, 0.0);
        assert_eq!(d.rc, 500.0);
        d.on_timer(&p, 1000.0); // T_c = 1, B_c = 0: additive (max ≥ F), R_T = 1000 capped.
        let before = d.rc;
        assert_eq!(before, 750.0);
        d.rt = 600.0;
        d.rc = 600.0;
        d.on_sent(&p, 100, 1000.0); // B_c = 1, T_c = 1: hyper, i = 1.
        assert_eq!((d.rt, d.rc), (604.0, 602.0));
    }

    #[test]
    fn unclamped_cuts_keep_the_target_until_the_timer_raises_the_rate() {
        let p = DcqcnParams { fast_recovery: 1, rate_ai: 1.0, rate_hai: 2.0, ..DcqcnParams::default() };
        assert!(!p.clamp_target, "SimAI's shipped CLAMP_TARGET_RATE is 0");
        let mut d = Dcqcn::new(100.0);
        d.on_cnp(&p, 0.0);
        d.alpha = 0.5;
        d.on_cnp(&p, 1e4);
        // Two cuts with no increase between: R_T is still the line rate, R_C 50 × (1 − 0.25).
        assert_eq!((d.rt, d.rc), (100.0, 37.5));
        // Fast recovery heads back to it: (100 + 37.5) / 2.
        d.on_timer(&p, 100.0);
        assert_eq!(d.rc, 68.75);
        // After a timer increase a cut clamps R_T to R_C again.
        d.on_cnp(&p, 2e4);
        assert_eq!(d.rt, 68.75);
    }
}
