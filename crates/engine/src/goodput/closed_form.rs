//! Closed forms for exponential failures (rate 1/M), a fixed checkpoint write δ after every τ
//! of training and a restart R during which failures may strike again (each begins R anew):
//! the model [`super::simulate`] runs when every cause is `restart` (or `swap` with spares always
//! free).
//!
//! Expected wall time per cycle (Daly 2006, "A higher order estimate of the optimum checkpoint
//! interval for restart dumps", FGCS 22(3), eq. (13) per segment):
//!
//!   E[T] = M · e^(R/M) · (e^((τ+δ)/M) − 1),   goodput = τ / E[T].
//!
//! The τ that maximises it solves e^((τ+δ)/M)·(τ/M − 1) + 1 = 0 ([`optimum_interval`]). Young
//! (1974, "A first order approximation to the optimum checkpoint interval", CACM 17(9)) gives
//! τ ≈ √(2δM) for δ ≪ M; Daly (2006, eq. (37)) the higher-order
//! τ ≈ √(2δM)·[1 + ⅓·√(δ/2M) + ⅑·(δ/2M)] − δ for δ < 2M, else M.

/// Expected wall time of one cycle of τ training and its write δ.
pub fn expected_cycle_s(interval_s: f64, checkpoint_s: f64, restart_s: f64, mtbf_s: f64) -> f64 {
    if mtbf_s.is_infinite() {
        return interval_s + checkpoint_s;
    }
    mtbf_s * (restart_s / mtbf_s).exp() * ((interval_s + checkpoint_s) / mtbf_s).exp_m1()
}

/// Expected goodput: τ over [`expected_cycle_s`].
pub fn expected_goodput(interval_s: f64, checkpoint_s: f64, restart_s: f64, mtbf_s: f64) -> f64 {
    interval_s / expected_cycle_s(interval_s, checkpoint_s, restart_s, mtbf_s)
}

/// Young's interval, √(2δM).
pub fn young_interval(checkpoint_s: f64, mtbf_s: f64) -> f64 {
    (2.0 * checkpoint_s * mtbf_s).sqrt()
}

/// Daly's higher-order interval.
pub fn daly_interval(checkpoint_s: f64, mtbf_s: f64) -> f64 {
    if checkpoint_s >= 2.0 * mtbf_s {
        return mtbf_s;
    }
    let r = checkpoint_s / (2.0 * mtbf_s);
    (2.0 * checkpoint_s * mtbf_s).sqrt() * (1.0 + r.sqrt() / 3.0 + r / 9.0) - checkpoint_s
}

/// The interval of best [`expected_goodput`] (it does not depend on R): the root in (0, M] of
/// e^((τ+δ)/M)·(τ/M − 1) + 1, by bisection; infinite when nothing fails.
pub fn optimum_interval(checkpoint_s: f64, mtbf_s: f64) -> f64 {
    if mtbf_s.is_infinite() {
        return f64::INFINITY;
    }
    let g = |t: f64| ((t + checkpoint_s) / mtbf_s).exp() * (t / mtbf_s - 1.0) + 1.0;
    let (mut lo, mut hi) = (0.0, mtbf_s);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if g(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn young_and_daly_by_hand() {
        // δ = 60 s, M = 3 h: √(2·60·10800) = 1138.42 s.
        assert!((young_interval(60.0, 10800.0) - 1138.4200).abs() < 1e-3);
        // r = 60/21600: 1138.42·(1 + 0.017568 + 0.000309) − 60 = 1098.77 s.
        let r: f64 = 60.0 / 21600.0;
        let daly = 1138.42004_f64 * (1.0 + r.sqrt() / 3.0 + r / 9.0) - 60.0;
        assert!((daly_interval(60.0, 10800.0) - daly).abs() < 1e-3);
        assert_eq!(daly_interval(30.0, 10.0), 10.0);
    }

    #[test]
    fn the_optimum_is_the_maximum_and_daly_is_close_to_it() {
        let (d, m, r) = (60.0, 10800.0, 600.0);
        let t = optimum_interval(d, m);
        let g = |t: f64| expected_goodput(t, d, r, m);
        assert!(g(t) > g(t * 1.01) && g(t) > g(t * 0.99));
        // Daly's higher-order estimate is within 0.5 % of the exact optimum for δ ≪ M.
        assert!((daly_interval(d, m) / t - 1.0).abs() < 5e-3, "{} vs {t}", daly_interval(d, m));
        // Nothing failing: a cycle costs τ + δ.
        assert_eq!(expected_goodput(100.0, 10.0, 5.0, f64::INFINITY), 100.0 / 110.0);
        // For small τ/M the cycle time is (τ + δ)(1 + (τ+δ)/2M) e^(R/M), to first order.
        let e = expected_cycle_s(100.0, 10.0, 0.0, 1e9);
        assert!((e / 110.0 - 1.0 - 55.0 / 1e9).abs() < 1e-12);
    }
}
