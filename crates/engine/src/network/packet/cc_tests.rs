//! Closed-form and comparative checks of HPCC, TIMELY and DCTCP (issue 27, item 4).

use super::tests::{delivered_by, route, star};
use super::*;
use crate::catalog::transport::ROCE_V2;
use dctcp::Dctcp;

/// Time-weighted mean and the largest of link `l`'s queue (bytes) over [t0, t1], stepping `sim`.
fn queue_over(sim: &mut PacketSim, l: usize, t0: f64, t1: f64) -> (f64, u64) {
    let mut sink = Vec::new();
    while sim.next_time().is_some_and(|x| x <= t0) {
        sim.step(&mut sink);
    }
    let (mut area, mut max, mut last, mut q) = (0.0, 0u64, t0, sim.ports[l].queued);
    while let Some(t) = sim.next_time().filter(|&x| x <= t1) {
        area += q as f64 * (t - last);
        last = t;
        sim.step(&mut sink);
        q = sim.ports[l].queued;
        max = max.max(q);
    }
    area += q as f64 * (t1 - last);
    (area / (t1 - t0), max)
}

/// Rates (bytes/ns) two flows of `cfg` get over [t0, t1] on a 100 Gb/s star; the second
/// starts `lag` ns after the first.
fn two_flows(cfg: PacketConfig, lag: f64, t0: f64, t1: f64) -> (f64, f64, PacketStats) {
    let mut sim = PacketSim::new(&star(3, 12.5, 2000.0), cfg).unwrap();
    sim.add_batch(0.0, vec![(route(0, 2), 1e12, f64::INFINITY)], 1, 0, Wait::Path { extra_ns: 0.0 });
    sim.add_batch(lag, vec![(route(1, 2), 1e12, f64::INFINITY)], 1, 1, Wait::Path { extra_ns: 0.0 });
    let a = delivered_by(&mut sim, t0, &[0, 1]);
    let b = delivered_by(&mut sim, t1, &[0, 1]);
    ((b[0] - a[0]) as f64 / (t1 - t0), (b[1] - a[1]) as f64 / (t1 - t0), sim.stats())
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// Without a window (the congestion control alone sets the rates) unless `cfg` has one.
fn unwindowed(cc: CcMode) -> PacketConfig {
    PacketConfig { cc, window: false, ..PacketConfig::default() }
}

#[test]
fn two_flows_of_each_cc_converge_to_equal_shares() {
    // A 100 Gb/s dumbbell (2 µs per link), the second flow 0.2 ms after the first; shares over
    // 20–40 ms within 10 % of each other (the DCQCN test's tolerance), the link used.
    let hpcc = PacketConfig {
        cc: CcMode::Hpcc,
        window: true,
        // The paper's settings (§3.3, §5): maxStage 5, W_AI = W_init (1 − η) / N for N = 2 flows.
        hpcc: HpccParams { mi_thresh: 5, rate_ai: 12.5 * (1.0 - 0.95) / 2.0, ..HpccParams::default() },
        ..PacketConfig::default()
    };
    // DCTCP's paper marks at a step, K (here 60 KB, half the path's bandwidth-delay product),
    // and averages with g = 1/16.
    let dctcp = PacketConfig {
        red: vec![(0.0, Red { kmin: 60_000, kmax: 60_001, pmax: 1.0 })],
        dctcp: DctcpParams { gain: 1.0 / 16.0, ..DctcpParams::default() },
        ..unwindowed(CcMode::Dctcp)
    };
    for (cfg, payload_share) in [(hpcc, 0.95), (unwindowed(CcMode::Timely), 0.9), (dctcp, 0.9)] {
        let cc = cfg.cc;
        let (ra, rb, st) = two_flows(cfg, 200e3, 20e6, 40e6);
        eprintln!("{cc:?}: shares over 20-40 ms {ra:.3} and {rb:.3} B/ns of 12.5; {st:?}");
        assert!(close(ra, rb, 0.1), "{cc:?}: {ra} vs {rb}");
        assert!(ra + rb > payload_share * 12.5 * 9000.0 / 9124.0, "{cc:?}: {ra} + {rb}");
        assert_eq!(st.drops, 0);
    }
}

#[test]
fn hpcc_keeps_the_incast_queue_below_eta_bdp_where_dcqcn_builds_one() {
    // 8 → 1 at 100 Gb/s, SimAI's shipped settings but for CC_MODE. HPCC aims U = tx/B + q/(B T)
    // at η = U_TARGET, so once it has reacted (after 0.2 ms, ~20 round trips) the queue term
    // stays below η: q ≤ η B T. DCQCN on the same incast holds its queue near RED's thresholds.
    let (n, c) = (8u32, 12.5);
    let run = |cc: CcMode| {
        let mut sim = PacketSim::new(&star(n + 1, c, 2000.0), PacketConfig { cc, ..PacketConfig::default() }).unwrap();
        for i in 0..n {
            sim.add_batch(0.0, vec![(route(i, n), 1e12, f64::INFINITY)], 1, u64::from(i), Wait::Path { extra_ns: 0.0 });
        }
        let l = 2 * n as usize + 1;
        let (m0, _) = queue_over(&mut sim, l, 0.0, 200e3);
        let (mean, max) = queue_over(&mut sim, l, 200e3, 4e6);
        let rtt = match &sim.qps[0].ack_cc {
            cc::AckCc::Hpcc(h) => h.base_rtt(),
            _ => 0.0,
        };
        eprintln!(
            "{cc:?} 8->1 incast: queue mean {m0:.0} B over 0-0.2 ms, then mean {mean:.0} max {max} B; {:?}",
            sim.stats()
        );
        (mean, max, rtt, sim.stats())
    };
    let (h_mean, h_max, t, st) = run(CcMode::Hpcc);
    let (d_mean, _, _, _) = run(CcMode::Dcqcn);
    let bound = 0.95 * c * t;
    assert!(t > 9000.0 && bound > 100e3, "T {t}");
    assert!((h_max as f64) <= bound, "HPCC's queue reached {h_max} B, above η B T = {bound}");
    assert!(h_mean < 0.25 * bound, "HPCC's mean queue {h_mean}");
    assert!(d_mean > 3.0 * bound, "DCQCN's mean queue {d_mean} vs η B T {bound}");
    assert_eq!((st.drops, st.pauses), (0, 0));
}

#[test]
fn dctcp_alpha_follows_the_marked_fraction() {
    // Two DCTCP flows hold the bottleneck's queue around the marking step. α is a moving average
    // (g = 1/16, about the last 16 windows) of F, each window's marked fraction: sampled every
    // 0.1 ms over 20–40 ms, its mean is the mean F of the windows closed in that time.
    let cfg = PacketConfig {
        red: vec![(0.0, Red { kmin: 60_000, kmax: 60_001, pmax: 1.0 })],
        dctcp: DctcpParams { gain: 1.0 / 16.0, ..DctcpParams::default() },
        ..unwindowed(CcMode::Dctcp)
    };
    let mut sim = PacketSim::new(&star(3, 12.5, 2000.0), cfg).unwrap();
    sim.add_batch(0.0, vec![(route(0, 2), 1e12, f64::INFINITY)], 1, 0, Wait::Path { extra_ns: 0.0 });
    sim.add_batch(200e3, vec![(route(1, 2), 1e12, f64::INFINITY)], 1, 1, Wait::Path { extra_ns: 0.0 });
    let state = |sim: &PacketSim, f: usize| match &sim.qps[f].ack_cc {
        cc::AckCc::Dctcp(d) => *d,
        _ => unreachable!(),
    };
    delivered_by(&mut sim, 20e6, &[0, 1]);
    let start: Vec<Dctcp> = (0..2).map(|f| state(&sim, f)).collect();
    let mut alpha_sum = [0.0; 2];
    let samples = 200;
    for k in 1..=samples {
        delivered_by(&mut sim, 20e6 + f64::from(k) * 100e3, &[0, 1]);
        for (f, sum) in alpha_sum.iter_mut().enumerate() {
            *sum += state(&sim, f).alpha;
        }
    }
    for f in 0..2 {
        let (a, b) = (start[f], state(&sim, f));
        let mean_f = (b.fraction_sum - a.fraction_sum) / (b.windows - a.windows) as f64;
        let acks = (b.marked_acks - a.marked_acks) as f64 / (b.acks - a.acks) as f64;
        let alpha = alpha_sum[f] / f64::from(samples);
        eprintln!(
            "DCTCP flow {f}: {} windows, mean F {mean_f:.4} (marked share of ACKs {acks:.4}), mean α {alpha:.4}",
            b.windows - a.windows
        );
        assert!(mean_f > 0.05, "the queue is held at the marking step");
        assert!(close(alpha, mean_f, 0.1), "flow {f}: α {alpha} vs mean F {mean_f}");
    }
}

#[test]
fn timely_cuts_by_beta_once_per_round_trip_when_the_rtt_is_above_t_high() {
    // A lone flow on an idle path: every packet's RTT is the base r0 = 2 (w + a)/C + 4 d.
    // T_high = r0 / 2: each update is R ← R (1 − β (1 − T_high / r0)) = 0.6 R, one per round trip.
    let (c, d) = (12.5, 2000.0);
    let (w, a) = (f64::from(ROCE_V2.wire_bytes(9000) + 8), f64::from(ROCE_V2.wire_bytes(0) + 8));
    let r0 = 2.0 * (w + a) / c + 4.0 * d;
    let run = |t_low: f64, t_high: f64| {
        let timely = TimelyParams { t_low_ns: t_low, t_high_ns: t_high, ..TimelyParams::default() };
        let mut sim = PacketSim::new(&star(2, c, d), PacketConfig { timely, ..unwindowed(CcMode::Timely) }).unwrap();
        sim.add_batch(0.0, vec![(route(0, 1), 1e9, f64::INFINITY)], 1, 0, Wait::Path { extra_ns: 0.0 });
        let mut rates = vec![(0.0, c)];
        let mut sink = Vec::new();
        while let Some(t) = sim.step(&mut sink) {
            let r = sim.qps[0].rate;
            if r != rates.last().unwrap().1 {
                rates.push((t, r));
            }
            if rates.len() == 6 || t > 2e6 {
                break;
            }
        }
        rates
    };
    let rates = run(r0 / 4.0, r0 / 2.0);
    eprintln!("TIMELY above T_high: r0 {r0} ns, rates {rates:?}");
    assert_eq!(rates.len(), 6);
    for (k, &(t, r)) in rates.iter().enumerate() {
        assert!(close(r, c * 0.6f64.powi(k as i32), 1e-12), "update {k}: {r}");
        if k >= 2 {
            // One update per round trip (at least r0 apart, paced packets add their gaps).
            assert!(t - rates[k - 1].0 >= r0 * (1.0 - 1e-9), "{rates:?}");
        }
    }
    // RTT below T_low: the rate stays at the line rate.
    assert_eq!(run(2.0 * r0, 4.0 * r0), vec![(0.0, c)]);
}

#[test]
fn telemetry_slots_all_come_back_even_with_drops() {
    // HPCC and TIMELY packets carry slots; with PFC off and a small buffer some are dropped and
    // sent again. When every flow is done, every slot is free and each flow is recorded once.
    for cc in [CcMode::Hpcc, CcMode::Timely] {
        let cfg = PacketConfig { cc, pfc: false, buffer_bytes: 60_000, rto_ns: 50_000.0, ..PacketConfig::default() };
        let mut sim = PacketSim::new(&star(5, 12.5, 1000.0), cfg).unwrap();
        for i in 0..4 {
            sim.add_batch(0.0, vec![(route(i, 4), 2e6, f64::INFINITY)], 1, u64::from(i), Wait::Path { extra_ns: 0.0 });
        }
        let done = sim.run_to_end();
        let st = sim.stats();
        eprintln!("{cc:?}: {} slots, {st:?}", sim.telemetry.len());
        assert_eq!((done.len(), sim.records().len()), (4, 4));
        assert!(st.drops > 0, "{cc:?}: {st:?}");
        assert!(!sim.telemetry.is_empty());
        assert_eq!(sim.free_telemetry.len(), sim.telemetry.len(), "{cc:?}: a slot was not released");
    }
}

#[test]
fn no_telemetry_slot_is_freed_twice() {
    // A slot freed twice and another leaked would cancel in a count: the free list names each
    // slot once after lossy runs (drops, go-back-N).
    for cc in [CcMode::Hpcc, CcMode::Timely] {
        let cfg = PacketConfig { cc, pfc: false, buffer_bytes: 60_000, rto_ns: 50_000.0, ..PacketConfig::default() };
        let mut sim = PacketSim::new(&star(5, 12.5, 1000.0), cfg).unwrap();
        for i in 0..4 {
            sim.add_batch(0.0, vec![(route(i, 4), 2e6, f64::INFINITY)], 1, u64::from(i), Wait::Path { extra_ns: 0.0 });
        }
        sim.run_to_end();
        assert!(sim.stats().drops > 0);
        let mut free = sim.free_telemetry.clone();
        free.sort_unstable();
        free.dedup();
        assert_eq!((free.len(), sim.free_telemetry.len()), (sim.telemetry.len(), sim.telemetry.len()), "{cc:?}");
    }
}
