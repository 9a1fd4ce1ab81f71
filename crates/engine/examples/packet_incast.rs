//! DCQCN against HPCC (and TIMELY, DCTCP, none) on the same incast (what
//! `benchmarks/bench_packet_cc.py` runs): `cargo run --release -p clustersim-engine --example
//! packet_incast -- N BYTES CC…`: N hosts each send BYTES to one more host through one switch,
//! all starting together; 400 Gb/s links of 1 µs, SimAI.conf's shipped settings (PFC with dynamic
//! thresholds, ECN by RED per link rate, windows) but for the congestion control. Prints one JSON
//! line per CC: the bottleneck queue (time-weighted mean and largest, bytes), per-flow completion
//! times (SimAI's FCT: start to the last ACK; median, p99 by nearest rank, largest, ns), the
//! bottleneck's share of line rate busy until the last flow is done, PFC pauses, ECN marks, CPU s.

mod common;

use common::cpu_seconds;
use std::rc::Rc;

use clustersim_engine::network::flow::Wait;
use clustersim_engine::network::packet::{CcMode, PacketConfig, PacketSim};
use clustersim_engine::platform::{Link, NodeKind, Platform};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: packet_incast N BYTES CC... (CC: none, dcqcn, hpcc, timely, dctcp)";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u32 = args.first().ok_or(usage)?.parse()?;
    let bytes: f64 = args.get(1).ok_or(usage)?.parse()?;
    let (rate, lat) = (50.0, 1000.0);
    let kinds = [vec![NodeKind::Gpu; n as usize + 1], vec![NodeKind::Switch]].concat();
    let switch = n + 1;
    let mut links = Vec::new();
    for i in 0..=n {
        links.push(Link { src: i, dst: switch, bandwidth: rate, latency_ns: lat, error_rate: 0.0 });
        links.push(Link { src: switch, dst: i, bandwidth: rate, latency_ns: lat, error_rate: 0.0 });
    }
    let topo = Platform::from_parts("incast", kinds, links, 1, "H100")?;
    // The switch's link to the receiver (host n) is the bottleneck.
    let bottleneck = 2 * n + 1;
    for name in &args[2..] {
        let cc = CcMode::from_name(name).ok_or(usage)?;
        let started = cpu_seconds();
        let mut sim = PacketSim::new(&topo, PacketConfig { cc, ..PacketConfig::default() })?;
        for i in 0..n {
            let route: Rc<[u32]> = Rc::from([2 * i, bottleneck]);
            sim.add_batch(0.0, vec![(route, bytes, f64::INFINITY)], 1, u64::from(i), Wait::Path { extra_ns: 0.0 });
        }
        let (mut area, mut max, mut last, mut q) = (0.0, 0u64, 0.0, 0u64);
        let mut sink = Vec::new();
        while let Some(t) = sim.next_time() {
            area += q as f64 * (t - last);
            last = t;
            sim.step(&mut sink);
            q = sim.queued_bytes(bottleneck);
            max = max.max(q);
        }
        let mut fct: Vec<f64> = sim.records().iter().map(|r| r.fct_ns).collect();
        fct.sort_by(f64::total_cmp);
        let rank = |p: f64| fct[((p * fct.len() as f64).ceil() as usize).clamp(1, fct.len()) - 1];
        let end = sim.records().iter().map(|r| r.start_ns + r.fct_ns).fold(0.0, f64::max);
        let busy = sim.carried_bytes()[bottleneck as usize] / (rate * end);
        let st = sim.stats();
        println!(
            "{{\"cc\": \"{name}\", \"flows\": {}, \"queue_mean_bytes\": {:.0}, \"queue_max_bytes\": {max}, \
             \"fct_median_ns\": {:.0}, \"fct_p99_ns\": {:.0}, \"fct_max_ns\": {:.0}, \"bottleneck_busy\": {busy:.4}, \
             \"pauses\": {}, \"ecn_marks\": {}, \"cpu_s\": {:.3}}}",
            fct.len(),
            area / last.max(1e-9),
            rank(0.5),
            rank(0.99),
            fct.last().copied().unwrap_or(0.0),
            st.pauses,
            st.ecn_marks,
            cpu_seconds() - started,
        );
    }
    Ok(())
}
