use super::closed_form::{daly_interval, expected_cycle_s, optimum_interval, young_interval};
use super::*;

const HOUR: f64 = 3600.0;

fn restarts(rate_per_s: f64) -> Vec<JobCause> {
    vec![JobCause { name: "any".into(), effect: Effect::Restart, rate_per_s }]
}

fn run(mtbf_s: f64, interval_s: f64, checkpoint_s: f64, resume_s: f64) -> Run {
    Run {
        causes: restarts(1.0 / mtbf_s),
        interval_s,
        checkpoint_s,
        restart_s: resume_s,
        restore_s: 0.0,
        spare_servers: None,
        repair_s: 0.0,
        window_s: f64::INFINITY,
        work_s: 1000.0 * interval_s,
        trials: 2000,
        seed: 7,
    }
}

#[test]
fn exponential_failures_give_dalys_expected_wall_time_within_the_monte_carlo_error() {
    // M = 3 h, τ = 30 min, δ = 2 min, R = 10 min; 1000 cycles. Failures also strike restarts.
    for (m, tau, delta, r) in [(3.0 * HOUR, 1800.0, 120.0, 600.0), (1.0 * HOUR, 600.0, 60.0, 300.0)] {
        let run = run(m, tau, delta, r);
        let t = simulate(&run).unwrap();
        let wall = Spread::of(&t.wall_s);
        let expected = 1000.0 * expected_cycle_s(tau, delta, r, m);
        let sem = wall.sem(t.wall_s.len());
        assert!((wall.mean - expected).abs() < 4.0 * sem, "M {m}: {} vs {expected} ± {sem}", wall.mean);
        // And the error is small: the check can fail.
        assert!(sem < 2e-3 * expected);
        // Goodput as the ratio of the means.
        let goodput = run.work_s / wall.mean;
        assert!((goodput / (tau / expected_cycle_s(tau, delta, r, m)) - 1.0).abs() < 4.0 * sem / expected);
    }
}

#[test]
fn every_trial_accounts_for_its_wall_time() {
    let mut r = run(2.0 * HOUR, 1800.0, 120.0, 600.0);
    r.causes.push(JobCause { name: "gpu".into(), effect: Effect::Swap, rate_per_s: 1.0 / (5.0 * HOUR) });
    r.causes.push(JobCause { name: "maintenance".into(), effect: Effect::Planned, rate_per_s: 1.0 / (20.0 * HOUR) });
    r.spare_servers = Some(1);
    r.repair_s = 6.0 * HOUR;
    r.trials = 200;
    let t = simulate(&r).unwrap();
    for i in 0..t.wall_s.len() {
        assert!((t.work_s[i] - r.work_s).abs() < 1e-6 * r.work_s);
        assert!(t.restart_s[i] >= -1e-6, "trial {i}: {}", t.restart_s[i]);
        assert!(t.wait_s[i] >= 0.0 && t.lost_s[i] >= 0.0);
    }
    assert_eq!(t.by_cause.iter().sum::<u64>() as f64, t.interruptions.iter().sum::<f64>());
    // With one spare, two swaps within a repair's 6 h wait; with twenty, none ever does.
    assert!(t.wait_s.iter().all(|&w| w > 0.0));
    let many = simulate(&Run { spare_servers: Some(20), ..r.clone() }).unwrap();
    assert!(many.wait_s.iter().all(|&w| w == 0.0));
    assert!(Spread::of(&many.wall_s).mean < Spread::of(&t.wall_s).mean);
}

#[test]
fn without_a_spare_each_lone_swap_waits_the_whole_repair() {
    // Swaps every 100 h on average, repairs of 2 h, no spare: an interruption far from the
    // others waits its whole repair; the waits add up exactly.
    let mut r = run(100.0 * HOUR, 1800.0, 60.0, 300.0);
    r.causes[0].effect = Effect::Swap;
    r.spare_servers = Some(0);
    r.repair_s = 2.0 * HOUR;
    r.trials = 1;
    r.work_s = 2000.0 * HOUR;
    for seed in 0..5 {
        r.seed = seed;
        let events = timeline(&r, 0).unwrap();
        let lone = events.windows(2).all(|w| w[1].at_s - w[0].at_s > r.repair_s + r.restart_s);
        let t = simulate(&r).unwrap();
        assert!(!events.is_empty());
        if lone {
            assert!((t.wait_s[0] - events.len() as f64 * r.repair_s).abs() < 1e-6);
        }
        // With a spare always free, nobody waits.
        let spare = simulate(&Run { spare_servers: None, ..r.clone() }).unwrap();
        assert_eq!(spare.wait_s[0], 0.0);
        assert!(spare.wall_s[0] < t.wall_s[0]);
    }
}

#[test]
fn a_window_counts_interruptions_at_the_total_rate() {
    // 466 in 54 days on average; the mean of 4000 trials is within 4 standard errors.
    let window = 54.0 * 24.0 * HOUR;
    let mut r = run(window / 466.0, 1800.0, 30.0, 600.0);
    r.window_s = window;
    r.work_s = f64::INFINITY;
    r.trials = 4000;
    let t = simulate(&r).unwrap();
    let n = Spread::of(&t.interruptions);
    assert!((n.mean - 466.0).abs() < 4.0 * (466.0_f64 / 4000.0).sqrt(), "{}", n.mean);
    // Poisson: the variance is the mean.
    assert!((n.std * n.std / 466.0 - 1.0).abs() < 0.1);
    assert!(t.wall_s.iter().all(|&w| w == window));
    assert_eq!(t.unfinished, 0);
}

#[test]
fn the_simulated_optimum_is_within_5_percent_of_young_and_daly() {
    // δ = 30 s ≪ M = 4 h: Young's and Daly's assumptions hold.
    let (m, delta) = (4.0 * HOUR, 30.0);
    let mut r = run(m, 1.0, delta, 300.0);
    r.work_s = 2000.0 * HOUR;
    r.trials = 400;
    let grid: Vec<f64> = (0..13).map(|i| 400.0 * 1.15_f64.powi(i)).collect();
    let spreads = interval_sweep(&r, &grid).unwrap();
    let means: Vec<f64> = spreads.iter().map(|s| s.mean).collect();
    let best = best_interval(&grid, &means);
    let (young, daly, exact) = (young_interval(delta, m), daly_interval(delta, m), optimum_interval(delta, m));
    assert!((best / young - 1.0).abs() < 0.05, "simulated {best} vs Young {young}");
    assert!((best / daly - 1.0).abs() < 0.05, "simulated {best} vs Daly {daly}");
    assert!((best / exact - 1.0).abs() < 0.05, "simulated {best} vs exact {exact}");
}

#[test]
fn the_same_seed_gives_the_same_trials_and_another_does_not() {
    let r = run(HOUR, 600.0, 30.0, 60.0);
    let a = simulate(&Run { trials: 50, ..r.clone() }).unwrap();
    assert_eq!(a, simulate(&Run { trials: 50, ..r.clone() }).unwrap());
    assert_ne!(a.wall_s, simulate(&Run { trials: 50, seed: 8, ..r }).unwrap().wall_s);
}

#[test]
fn bad_input_names_the_field() {
    let r = run(HOUR, 600.0, 30.0, 60.0);
    let err = |r: Run| simulate(&r).unwrap_err().to_string();
    let mut bad = r.clone();
    bad.causes[0].rate_per_s = -1.0;
    assert_eq!(err(bad), "goodput: rate of any: must be a number ≥ 0, got -1");
    assert_eq!(err(Run { interval_s: 0.0, ..r.clone() }), "goodput: checkpoint_interval_s: must be > 0, got 0");
    assert_eq!(err(Run { restart_s: -5.0, ..r.clone() }), "goodput: restart_s: must be a number ≥ 0, got -5");
    assert_eq!(err(Run { trials: 0, ..r.clone() }), "goodput: trials: must be ≥ 1");
    assert_eq!(
        err(Run { work_s: f64::INFINITY, ..r }),
        "goodput: days: give a window (days) or a token budget (tokens)"
    );
}

#[test]
fn a_checkpoint_holds_the_bf16_weights_and_adams_fp32_state() {
    // 14 bytes a parameter: Llama 3 405B's 405.9e9 parameters are 5.68 TB.
    assert_eq!(checkpoint_bytes(1_000), 14_000.0);
}
