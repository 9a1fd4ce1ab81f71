//! Data packets per CPU-second of the packet model on a permutation over a k-ary fat-tree (what
//! `benchmarks/bench_packet.py` runs): `cargo run --release -p clustersim-engine --example
//! packet_permutation -- K BYTES [cc]`, k³/4 hosts each sending BYTES to another (a seeded random
//! permutation with no fixed point), 400 Gb/s links of 1 µs, routes by a seeded hash per flow
//! (up to a random aggregation and core switch, then down). `cc`: none (default) or dcqcn, at
//! SimAI.conf's shipped settings with PFC and ECN on. Prints one JSON line: hosts, data packets,
//! events, CPU seconds, packets per CPU-second, peak RSS MB, simulated ns, and a fingerprint of every
//! flow's delivery time (equal runs print equal fingerprints).

mod common;

use clustersim_engine::random::mix;
use common::{cpu_seconds, peak_rss_mb};
use std::collections::HashMap;
use std::rc::Rc;

use clustersim_engine::network::flow::Wait;
use clustersim_engine::network::packet::{CcMode, PacketConfig, PacketSim};
use clustersim_engine::platform::{Link, NodeKind, Platform};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let k: u32 = args.first().ok_or("usage: packet_permutation K BYTES [none|dcqcn]")?.parse()?;
    let bytes: f64 = args.get(1).ok_or("usage: packet_permutation K BYTES [none|dcqcn]")?.parse()?;
    let cc = match args.get(2).map(String::as_str) {
        None | Some("none") => CcMode::None,
        Some("dcqcn") => CcMode::Dcqcn,
        Some(other) => return Err(format!("cc {other}: none or dcqcn").into()),
    };
    let h = k / 2;
    let hosts = k * k * k / 4;
    let (edge0, agg0, core0) = (hosts, hosts + k * h, hosts + 2 * k * h);
    let nodes = core0 + h * h;
    let mut kinds = vec![NodeKind::Gpu; hosts as usize];
    kinds.resize(nodes as usize, NodeKind::Switch);
    let mut links = Vec::new();
    let mut both = |a: u32, b: u32| {
        for (src, dst) in [(a, b), (b, a)] {
            links.push(Link { src, dst, bandwidth: 50.0, latency_ns: 1000.0, error_rate: 0.0 });
        }
    };
    for g in 0..hosts {
        both(g, edge0 + g / h);
    }
    for p in 0..k {
        for e in 0..h {
            for a in 0..h {
                both(edge0 + p * h + e, agg0 + p * h + a);
            }
        }
        for a in 0..h {
            for c in 0..h {
                both(agg0 + p * h + a, core0 + a * h + c);
            }
        }
    }
    let id: HashMap<(u32, u32), u32> = links.iter().enumerate().map(|(i, l)| ((l.src, l.dst), i as u32)).collect();
    let topo = Platform::from_parts("fat-tree", kinds, links, 1, "H100")?;
    let cfg = PacketConfig { cc, ..PacketConfig::default() };
    let started = cpu_seconds();
    let mut sim = PacketSim::new(&topo, cfg)?;
    sim.set_keep_records(false);
    // A permutation without fixed points: a seeded shuffle, then each host sends to the next in it.
    let mut order: Vec<u32> = (0..hosts).collect();
    for i in (1..order.len()).rev() {
        let j = (mix(i as u64) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    for i in 0..hosts as usize {
        let (s, d) = (order[i], order[(i + 1) % hosts as usize]);
        let (se, de) = (edge0 + s / h, edge0 + d / h);
        let (sp, dp) = ((se - edge0) / h, (de - edge0) / h);
        let r = mix(0xC0FFEE ^ i as u64);
        let mut path = vec![id[&(s, se)]];
        if se != de {
            let a = (r % u64::from(h)) as u32;
            let (sa, da) = (agg0 + sp * h + a, agg0 + dp * h + a);
            path.push(id[&(se, sa)]);
            if sp != dp {
                let c = core0 + a * h + ((r >> 20) % u64::from(h)) as u32;
                path.push(id[&(sa, c)]);
                path.push(id[&(c, da)]);
            }
            path.push(id[&(da, de)]);
        }
        path.push(id[&(de, d)]);
        let route: Rc<[u32]> = path.into();
        sim.add_batch(0.0, vec![(route, bytes, f64::INFINITY)], 1, i as u64, Wait::Path { extra_ns: 0.0 });
    }
    let done = sim.run_to_end();
    let cpu = cpu_seconds() - started;
    let st = sim.stats();
    let end = done.iter().map(|x| x.1).fold(0.0, f64::max);
    // Every flow's delivery time, bit for bit, folded into one number: equal runs print equal
    // fingerprints (what a change to the event loop must keep).
    let fingerprint = done.iter().fold(0u64, |h, &(tag, t)| mix(h ^ mix(tag ^ t.to_bits())));
    println!(
        "{{\"hosts\": {hosts}, \"flows\": {}, \"data_packets\": {}, \"events\": {}, \"cpu_s\": {cpu:.3}, \"packets_per_cpu_s\": {:.0}, \"peak_rss_mb\": {:.1}, \"end_ns\": {end:.0}, \"pauses\": {}, \"ecn_marks\": {}, \"drops\": {}, \"fingerprint\": \"{fingerprint:016x}\"}}",
        done.len(),
        st.data_packets,
        st.events,
        st.data_packets as f64 / cpu.max(1e-9),
        peak_rss_mb(),
        st.pauses,
        st.ecn_marks,
        st.drops
    );
    Ok(())
}
