//! Closed-form checks of the packet model (issue 27's "Must show").

use super::*;
use crate::catalog::transport::ROCE_V2;
use crate::platform::Link;

/// `n` hosts on one switch (node n), every link `rate` bytes/ns and `lat` ns, both ways.
pub(super) fn star(n: u32, rate: f64, lat: f64) -> Platform {
    let kinds = [vec![NodeKind::Gpu; n as usize], vec![NodeKind::Switch]].concat();
    let mut links = Vec::new();
    for i in 0..n {
        links.push(Link { src: i, dst: n, bandwidth: rate, latency_ns: lat, error_rate: 0.0 });
        links.push(Link { src: n, dst: i, bandwidth: rate, latency_ns: lat, error_rate: 0.0 });
    }
    Platform::from_parts("star", kinds, links, 1, "H100").unwrap()
}

/// The links of host a → switch → host b on [`star`].
pub(super) fn route(a: u32, b: u32) -> Rc<[u32]> {
    Rc::from([2 * a, 2 * b + 1])
}

fn wire_of(bytes: u64, payload: u32) -> Vec<u64> {
    let p = u64::from(payload);
    let mut out = vec![u64::from(ROCE_V2.wire_bytes(payload)); (bytes / p) as usize];
    if !bytes.is_multiple_of(p) {
        out.push(u64::from(ROCE_V2.wire_bytes((bytes % p) as u32)));
    }
    out
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn one_flow_is_line_rate_times_payload_share_after_the_propagation_delay() {
    let (c, d, s) = (50.0, 1000.0, 1_000_000u64);
    let mut sim = PacketSim::new(&star(2, c, d), PacketConfig::plain()).unwrap();
    sim.add_batch(100.0, vec![(route(0, 1), s as f64, f64::INFINITY)], 1, 7, Wait::Path { extra_ns: 0.0 });
    let done = sim.run_to_end();
    let w = wire_of(s, 9000);
    let total: u64 = w.iter().sum();
    assert_eq!(total, s + w.len() as u64 * 82);
    // 2 hops: both delays, the first packet stored and forwarded once, then the line rate.
    let t = 100.0 + 2.0 * d + w[0] as f64 / c + total as f64 / c;
    assert_eq!(done.len(), 1);
    assert!(close(done[0].1, t, 1e-12), "{} vs {t}", done[0].1);
    // Goodput after the first packet's delays: C × payload / (payload + headers).
    let goodput = s as f64 / (done[0].1 - 100.0 - 2.0 * d - w[0] as f64 / c);
    assert!(close(goodput, c * s as f64 / total as f64, 1e-12));
    // The sender finishes when the last ACK (82 wire bytes) is back: two more hops.
    let r = sim.records()[0];
    assert_eq!((r.src, r.dst, r.bytes), (0, 1, s));
    assert!(close(r.start_ns + r.fct_ns, t + 2.0 * (d + 82.0 / c), 1e-12));
    let st = sim.stats();
    assert_eq!((st.data_packets, st.drops, st.retransmitted, st.pauses), (w.len() as u64, 0, 0, 0));
    // Every wire byte is carried once per hop.
    assert_eq!(sim.carried_bytes()[0], total as f64);
    assert_eq!(sim.carried_bytes()[3], total as f64);
}

#[test]
fn incast_with_pfc_drops_nothing_and_shares_the_port() {
    // 8 senders to host 8 at line rate: the switch's port to host 8 is the bottleneck.
    let (n, c, d, s) = (8u32, 50.0, 1000.0, 4_000_000u64);
    let cfg = PacketConfig {
        pfc: true,
        pfc_threshold: PfcThreshold::Static { xoff: 100_000, xon: 80_000 },
        // Room for every port's threshold plus its headroom (2 delays of line rate + 2 packets).
        buffer_bytes: u64::from(n) * (100_000 + (2.0 * d * c) as u64 + 2 * 9082 + 9082),
        ..PacketConfig::plain()
    };
    let mut sim = PacketSim::new(&star(n + 1, c, d), cfg).unwrap();
    for i in 0..n {
        sim.add_batch(0.0, vec![(route(i, n), s as f64, f64::INFINITY)], 1, u64::from(i), Wait::Path { extra_ns: 0.0 });
    }
    // Until the first flow is done all N send: each has had 1/N of the port.
    let first = {
        let mut probe = Vec::new();
        while probe.is_empty() {
            sim.step(&mut probe);
        }
        probe[0].1
    };
    let got: Vec<u64> = (0..n as usize).map(|f| sim.qps[f].rcv_nxt).collect();
    let sum: u64 = got.iter().sum();
    let port = sim.carried_bytes()[2 * n as usize + 1];
    let mut done = sim.run_to_end();
    done.sort_by(|a, b| a.1.total_cmp(&b.1));
    let st = sim.stats();
    eprintln!("incast: first done at {first}, delivered then {got:?}, ends {done:?}, {st:?}");
    assert_eq!(st.drops, 0);
    assert!(st.pauses > 0, "{st:?}");
    for &g in &got {
        let share = g as f64 / sum as f64;
        assert!((share - 1.0 / f64::from(n)).abs() < 0.06 / f64::from(n), "{got:?}");
    }
    // The port was busy all along, from the first packet's arrival (d + w/C) until then
    // (carried bytes count a packet as it starts): C × (first − d − w/C), within one packet.
    let busy = c * (first - d - 9082.0 / c);
    assert!(port >= busy && port < busy + 9082.0, "{port} vs {busy}");
    // The last flow ends when the port has sent every byte: N × wire bytes / C after the delays.
    let total: u64 = wire_of(s, 9000).iter().sum::<u64>() * u64::from(n);
    let last = done.last().unwrap().1;
    assert!(close(last, total as f64 / c + 2.0 * d + 9082.0 / c, 1e-9), "{last}");
}

#[test]
fn pfc_off_with_a_small_buffer_drops_and_goes_back_n() {
    let (n, c, d, s) = (4u32, 50.0, 1000.0, 2_000_000u64);
    let cfg = PacketConfig { buffer_bytes: 100_000, rto_ns: 50_000.0, ..PacketConfig::plain() };
    let mut sim = PacketSim::new(&star(n + 1, c, d), cfg).unwrap();
    for i in 0..n {
        sim.add_batch(0.0, vec![(route(i, n), s as f64, f64::INFINITY)], 1, u64::from(i), Wait::Path { extra_ns: 0.0 });
    }
    let done = sim.run_to_end();
    let st = sim.stats();
    assert_eq!(done.len(), n as usize);
    assert!(st.drops > 0 && st.retransmitted > 0 && st.nacks > 0, "{st:?}");
    assert_eq!(sim.records().len(), n as usize);
    // Every packet sent is a first send or a retransmission, exactly.
    let first_sends = wire_of(s, 9000).len() as u64 * u64::from(n);
    assert_eq!(st.data_packets, first_sends + st.retransmitted);
    // Goodput: the useful bytes over the bottleneck's time; the bottleneck link carried the
    // useful wire bytes plus what it forwarded again (duplicates the receiver dropped), so
    // goodput ≤ C × useful / carried, and the port idles while senders go back.
    let end = done.iter().map(|x| x.1).fold(0.0, f64::max);
    let useful: u64 = wire_of(s, 9000).iter().sum::<u64>() * u64::from(n);
    let carried = sim.carried_bytes()[2 * n as usize + 1];
    assert!(carried > useful as f64);
    let goodput = (s * u64::from(n)) as f64 / end;
    let bound = c * (s * u64::from(n)) as f64 / carried;
    assert!(goodput <= bound * (1.0 + 1e-9), "{goodput} vs {bound}");
    // Below what the same flows get without loss: C × payload / wire bytes.
    assert!(goodput < c * 9000.0 / 9082.0);
    eprintln!("go-back-N: goodput {goodput:.2} B/ns of {c} (bound {bound:.2}), {st:?}");
}

#[test]
fn ecn_marks_follow_red_on_a_held_queue() {
    let red = Red { kmin: 100_000, kmax: 400_000, pmax: 0.2 };
    let cfg = PacketConfig { ecn: true, red: vec![(0.0, red)], ..PacketConfig::plain() };
    let mut sim = PacketSim::new(&star(2, 50.0, 1000.0), cfg).unwrap();
    sim.add_batch(0.0, vec![(route(0, 1), 1e9, f64::INFINITY)], 1, 0, Wait::Path { extra_ns: 0.0 });
    let m = 20_000u64;
    for q in [50_000u64, 100_000, 175_000, 250_000, 399_999, 400_000, 1_000_000] {
        let before = sim.stats().ecn_marks;
        let out = 3; // the switch's link to host 1
        sim.ports[out].free_at = f64::INFINITY;
        sim.ports[out].free_pending = true;
        for k in 0..m {
            sim.ports[out].queued = q;
            let p = Packet {
                seq: k,
                flow: 0,
                payload: 9000,
                wire: 9082,
                hop: 1,
                kind: Kind::Data,
                ce: false,
                telemetry: cc::NO_TELEMETRY,
            };
            sim.qps[0].live += 1;
            sim.forward(0, 3, p);
            // Take it back out, leaving q bytes behind it: the queue is held at q.
            let mut p = sim.ports[out].data.pop_back().unwrap();
            sim.ports[out].queued = q;
            sim.dequeued(out as u32, &mut p);
        }
        let marks = (sim.stats().ecn_marks - before) as f64;
        let p = red.probability(q);
        let sd = (m as f64 * p * (1.0 - p)).sqrt();
        assert!((marks - m as f64 * p).abs() <= 4.0 * sd + 1e-9, "q {q}: {marks} marks, expected {}", m as f64 * p);
    }
    assert_eq!(red.probability(175_000), 0.05);
}

/// Bytes each flow has delivered by `t`.
pub(super) fn delivered_by(sim: &mut PacketSim, t: f64, flows: &[u32]) -> Vec<u64> {
    let mut sink = Vec::new();
    while sim.next_time().is_some_and(|x| x <= t) {
        sim.step(&mut sink);
    }
    flows.iter().map(|&f| sim.qps[f as usize].rcv_nxt).collect()
}

#[test]
fn two_dcqcn_flows_converge_to_equal_shares() {
    // The paper's parameters (§5: K = T = 55 µs, B = 10 MB, F = 5, R_AI 40 Mb/s, R_HAI 400
    // Mb/s, g = 1/256) on a 40 Gb/s dumbbell; one flow starts 0.5 ms after the other.
    let c = 5.0;
    let dcqcn = DcqcnParams {
        gain: 1.0 / 256.0,
        rate_ai: 40e6 / 8e9,
        rate_hai: 400e6 / 8e9,
        min_rate: 40e6 / 8e9,
        fast_recovery: 5,
        timer_ns: 55e3,
        byte_counter: 10_000_000,
        alpha_interval_ns: 55e3,
        decrease_interval_ns: 50e3,
        // The paper: every cut sets R_T ← R_C.
        clamp_target: true,
    };
    let cfg = PacketConfig {
        cc: CcMode::Dcqcn,
        dcqcn,
        ecn: true,
        red: vec![(0.0, Red { kmin: 5_000, kmax: 200_000, pmax: 0.01 })],
        pfc: true,
        pfc_threshold: PfcThreshold::Static { xoff: 400_000, xon: 380_000 },
        buffer_bytes: 12_000_000,
        payload_bytes: 1000,
        ..PacketConfig::plain()
    };
    let mut sim = PacketSim::new(&star(3, c, 1000.0), cfg).unwrap();
    sim.add_batch(0.0, vec![(route(0, 2), 1e12, f64::INFINITY)], 1, 0, Wait::Path { extra_ns: 0.0 });
    sim.add_batch(500e3, vec![(route(1, 2), 1e12, f64::INFINITY)], 1, 1, Wait::Path { extra_ns: 0.0 });
    let a = delivered_by(&mut sim, 30e6, &[0, 1]);
    let b = delivered_by(&mut sim, 40e6, &[0, 1]);
    let (ra, rb) = ((b[0] - a[0]) as f64 / 10e6, (b[1] - a[1]) as f64 / 10e6);
    eprintln!("DCQCN shares over 30-40 ms: {ra:.3} and {rb:.3} B/ns of {c}; {:?}", sim.stats());
    assert!(sim.stats().cnps > 0);
    assert!(close(ra, rb, 0.1), "{ra} vs {rb}");
    // Together they use the link.
    assert!(ra + rb > 0.8 * c * 1000.0 / 1082.0);
}

#[test]
fn links_without_a_way_back_are_refused() {
    let mut t = star(2, 1.0, 1.0);
    t.links.truncate(3);
    let e = PacketSim::new(&t, PacketConfig::plain()).err().unwrap();
    assert!(e.to_string().contains("no link back"), "{e}");
}

#[test]
fn same_inputs_same_run() {
    let run = || {
        let mut sim =
            PacketSim::new(&star(5, 50.0, 500.0), PacketConfig { buffer_bytes: 200_000, ..PacketConfig::default() })
                .unwrap();
        for i in 0..4 {
            sim.add_batch(0.0, vec![(route(i, 4), 3e6, f64::INFINITY)], 2, u64::from(i), Wait::Path { extra_ns: 0.0 });
        }
        (sim.run_to_end(), sim.stats())
    };
    let (a, sa) = run();
    let (b, sb) = run();
    assert_eq!(sa, sb);
    assert_eq!(
        a.iter().map(|x| x.1.to_bits()).collect::<Vec<_>>(),
        b.iter().map(|x| x.1.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn uncongested_crossbar_packet_equals_flow_with_headers_accounted() {
    // A permutation on a crossbar (every host sends 64 MB to the next): nothing shares a link,
    // so each flow runs at line rate on both. The flow model moves payload; with the framing's
    // wire bytes per payload byte it must give the packet model's times within 1 %.
    use crate::network::flow::FlowSim;
    use crate::network::Transfers;
    let (n, c, d, s) = (16u32, 50.0, 500.0, 64e6);
    let t = star(n, c, d);
    let mut flow = FlowSim::new(&t);
    let mut packet = PacketSim::new(&t, PacketConfig::plain()).unwrap();
    let total = wire_of(s as u64, 9000).iter().sum::<u64>() as f64;
    let sims: [(&mut dyn Transfers, f64); 2] = [(&mut flow, total / s), (&mut packet, 1.0)];
    let mut ends = Vec::new();
    for (sim, scale) in sims {
        for i in 0..n {
            let r = route(i, (i + 1) % n);
            sim.add_batch(0.0, vec![(r, s * scale, f64::INFINITY)], 1, u64::from(i), Wait::Path { extra_ns: 0.0 });
        }
        let mut done = Vec::new();
        while sim.step(&mut done).is_some() {}
        done.sort_by_key(|x| x.0);
        ends.push(done);
    }
    for (f, p) in ends[0].iter().zip(&ends[1]) {
        assert!(close(p.1, f.1, 0.01), "flow {} ns, packet {} ns", f.1, p.1);
    }
}

#[test]
fn a_batch_done_on_ack_ends_when_the_sender_has_the_last_ack() {
    // SimAI's completion: the batch ends at the flow's FCT (start + fct), the ACK's two hops
    // (82 wire bytes each) after the last byte arrived.
    let (c, d, s) = (50.0, 1000.0, 100_000u64);
    let run = |on_ack: bool| {
        let mut sim = PacketSim::new(&star(2, c, d), PacketConfig::plain()).unwrap();
        sim.set_complete_on_ack(on_ack);
        sim.add_batch(0.0, vec![(route(0, 1), s as f64, f64::INFINITY)], 1, 7, Wait::Path { extra_ns: 0.0 });
        let done = sim.run_to_end();
        (done[0].1, sim.records()[0])
    };
    let (arrived, _) = run(false);
    let (acked, r) = run(true);
    assert!(close(acked, r.start_ns + r.fct_ns, 1e-12), "{acked} vs {r:?}");
    assert!(close(acked - arrived, 2.0 * (d + 82.0 / c), 1e-12), "{acked} - {arrived}");
}
