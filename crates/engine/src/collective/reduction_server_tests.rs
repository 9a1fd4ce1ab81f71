//! Closed forms on a crossbar, both backends, the seed's set-up and bad input.

use super::*;
use crate::collective::choose::Options;
use crate::collective::cost::schedule_ns;
use crate::collective::tuner_links::TunerLinks;
use crate::collective::{schedule, PIPELINE_CHUNK_BYTES};
use crate::nccl_tests::{sweep, SweepOptions};
use crate::platform::{Link, NodeAttrs, Placement};

/// n GPU workers (NIC `worker` GB/s) and `servers` CPU servers (NIC `server` GB/s, host link
/// `host` GB/s) on one switch; `lat` ns on every switch port, none on host links.
fn crossbar(n: u32, servers: u32, worker: f64, server: f64, host: f64, lat: f64) -> Platform {
    let sw = n;
    let mut kinds = vec![NodeKind::Gpu; n as usize];
    let mut names: Vec<String> = (0..n).map(|i| format!("gpu{i}")).collect();
    kinds.push(NodeKind::Switch);
    names.push("sw".into());
    let mut links = Vec::new();
    let mut duplex = |a: u32, b: u32, bandwidth: f64, latency_ns: f64| {
        links.push(Link { src: a, dst: b, bandwidth, latency_ns, error_rate: 0.0 });
        links.push(Link { src: b, dst: a, bandwidth, latency_ns, error_rate: 0.0 });
    };
    for g in 0..n {
        duplex(g, sw, worker, lat);
    }
    for i in 0..servers {
        let (cpu, nic) = (n + 1 + 2 * i, n + 2 + 2 * i);
        kinds.extend([NodeKind::Cpu, NodeKind::Nic]);
        names.extend([format!("cpu{i}"), format!("nic{i}")]);
        duplex(cpu, nic, host, 0.0);
        duplex(nic, sw, server, lat);
    }
    let attrs = names.into_iter().map(|name| NodeAttrs { name: Some(name), ..NodeAttrs::default() }).collect();
    Platform::new("crossbar", kinds, links, attrs, Placement::servers(n, 1), "H100").unwrap()
}

/// (α–β price, flow model time) in ns of an all-reduce of `bytes` on every GPU of `topo`, bare
/// timing (each step pays its path latency).
fn both(mut topo: Platform, reduce: Option<f64>, split: Split, bytes: u64) -> (f64, f64) {
    let rs = ReductionServer::on_platform(&mut topo, "all", reduce, split).unwrap().algorithm();
    let ranks: Vec<u32> = (0..topo.placement.ranks()).collect();
    let g = GroupTopo::new(&ranks, &topo.placement, false);
    let links = TunerLinks::of(&topo).unwrap().group(&g);
    let priced = schedule_ns(&schedule(Collective::AllReduce, rs, &g, bytes, 1).unwrap(), &g, &links).unwrap();
    let choose = Options { algorithm: Some(rs), send_lat_us: Some(0.0), ..Options::default() };
    let opts = SweepOptions { choose, channels: 1, ..SweepOptions::default() };
    let flow = sweep(topo, Collective::AllReduce, &[bytes], &opts).unwrap()[0].ns;
    (priced, flow)
}

fn close(got: f64, want: f64) {
    assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
}

const B: f64 = 25.0; // 200 Gbit/s
const S: u64 = 64 << 20;

#[test]
fn enough_servers_at_the_workers_rate_take_s_over_b_plus_latency() {
    // 4 workers, 4 servers, all at B; host links fast. k = S/c chunks of u = c, each step moves
    // u out of and into every worker and n·u/N_s = u through every server: t = α + u/B.
    let (alpha, c) = (2.0 * 500.0, PIPELINE_CHUNK_BYTES);
    let k = S as f64 / c;
    let want = (k + 1.0) * (alpha + c / B);
    let (priced, flow) = both(crossbar(4, 4, B, B, 100.0, 500.0), None, Split::default(), S);
    close(priced, want);
    close(flow, want);
    // = S/B + u/B + (k+1)·α.
    close(want, S as f64 / B + c / B + (k + 1.0) * alpha);
}

#[test]
fn fewer_servers_bound_the_time_by_their_bandwidth() {
    // 8 workers, 2 servers: each server takes n·u/N_s = 4u per step, 4× a worker's load.
    let c = PIPELINE_CHUNK_BYTES;
    let k = S as f64 / c;
    for (servers, scale) in [(2, 4.0), (4, 2.0)] {
        let want = (k + 1.0) * (scale * c / B);
        let (priced, flow) = both(crossbar(8, servers, B, B, 100.0, 0.0), None, Split::default(), S);
        close(priced, want);
        close(flow, want);
    }
}

#[test]
fn a_slow_reduction_bounds_the_time_by_its_throughput() {
    // 4 workers, 4 servers, R = 10 GB/s below the NICs: each server reduces n·u/N_s = u per step
    // at R; the results still leave at B.
    let c = PIPELINE_CHUNK_BYTES;
    let k = S as f64 / c;
    let want = (k + 1.0) * (c / 10.0);
    let (priced, flow) = both(crossbar(4, 4, B, B, 100.0, 0.0), Some(10.0), Split::default(), S);
    close(priced, want);
    close(flow, want);
    // A slow host link is the same bound: R only caps, it never raises.
    let (priced, flow) = both(crossbar(4, 4, B, B, 10.0, 0.0), Some(50.0), Split::default(), S);
    close(priced, want);
    close(flow, want);
}

#[test]
fn optcast_split_and_one_request_in_flight() {
    // Optcast's 8 MiB chunks, nsplit 2 on 4 servers: only servers 0 and 1 get shards, u/2 from
    // each of 4 workers: 2u per step. One request in flight: k ups then k downs.
    let c = OPTCAST_CHUNK_BYTES;
    let k = S as f64 / c;
    let split = Split { chunk_bytes: c, nsplit: 2, nreq: 1 };
    let want = 2.0 * k * (2.0 * c / B);
    let (priced, flow) = both(crossbar(4, 4, B, B, 100.0, 0.0), None, split, S);
    close(priced, want);
    close(flow, want);
}

/// algbw (Gbit/s) of an all-reduce of 32 MB on the seed's set-up with `algorithm`.
fn seed_algbw(rs: Option<Split>) -> f64 {
    let mut topo = crossbar(4, 4, B, B, 100.0, 0.0);
    let algorithm = match rs {
        Some(split) => ReductionServer::on_platform(&mut topo, "all", None, split).unwrap().algorithm(),
        None => Algorithm::RING,
    };
    let choose = Options { algorithm: Some(algorithm), send_lat_us: Some(0.0), ..Options::default() };
    let opts = SweepOptions { choose, channels: 1, ..SweepOptions::default() };
    let bytes = 32u64 << 20;
    bytes as f64 * 8.0 / sweep(topo, Collective::AllReduce, &[bytes], &opts).unwrap()[0].ns
}

#[test]
fn the_seeds_set_up_beats_the_ring_by_up_to_its_ratio() {
    // Seed 004: 4 clients + 4 servers at 200 Gbit/s. Ideal ring: 200·4/(2·3) = 133.33 Gbit/s;
    // reduction server: 200 Gbit/s less one chunk of pipeline fill, k/(k+1).
    let ring = seed_algbw(None);
    close(ring, 200.0 * 4.0 / 6.0);
    let fine = seed_algbw(Some(Split::default()));
    close(fine, 200.0 * 64.0 / 65.0);
    // The seed's run: 8 MiB chunks, nsplit 4, nreq 4: k = 4, 200·4/5 = 160 Gbit/s.
    let optcast = seed_algbw(Some(Split { chunk_bytes: OPTCAST_CHUNK_BYTES, nsplit: 4, nreq: 4 }));
    close(optcast, 160.0);
    assert!(fine / ring > 1.47 && fine / ring < 1.5, "{}", fine / ring);
}

#[test]
fn bad_servers_are_one_line_errors_naming_the_field() {
    let mut topo = crossbar(4, 2, B, B, 100.0, 0.0);
    let cases = [
        ("0", "selects 0 servers"),
        ("9", "the platform has 2 cpu nodes"),
        ("cpu0,sw", "'sw' is a switch, not a cpu"),
        ("cpu7", "no node named 'cpu7'"),
        ("cpu1,cpu1", "named twice"),
    ];
    for (select, want) in cases {
        let e = ReductionServer::on_platform(&mut topo, select, None, Split::default()).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("reduction_servers") && text.contains(want) && !text.contains('\n'), "{text}");
    }
    let e = ReductionServer::on_platform(&mut topo, "all", Some(0.0), Split::default()).unwrap_err();
    assert!(e.to_string().contains("reduce_gbps"), "{e}");
    let e = ReductionServer::new(vec![], Split::default()).unwrap_err();
    assert!(e.to_string().contains("0 servers"), "{e}");
    // A cpu without a NIC: add one linked straight to the switch.
    let mut kinds = topo.kinds.clone();
    kinds.push(NodeKind::Cpu);
    let (cpu, sw) = (kinds.len() as u32 - 1, 4);
    let mut links = topo.links.clone();
    links.push(Link { src: cpu, dst: sw, bandwidth: B, latency_ns: 0.0, error_rate: 0.0 });
    links.push(Link { src: sw, dst: cpu, bandwidth: B, latency_ns: 0.0, error_rate: 0.0 });
    let mut attrs = topo.attrs.clone();
    attrs.push(NodeAttrs { name: Some("bare".into()), ..NodeAttrs::default() });
    let mut bare = Platform::new("t", kinds, links, attrs, Placement::servers(4, 1), "H100").unwrap();
    let e = ReductionServer::on_platform(&mut bare, "cpu0,bare", None, Split::default()).unwrap_err();
    assert!(e.to_string().contains("server 'bare' has no NIC"), "{e}");
    // Only all-reduce.
    let rs = ReductionServer::on_platform(&mut topo, "all", None, Split::default()).unwrap().algorithm();
    let ranks = [0, 1, 2, 3];
    let g = GroupTopo::new(&ranks, &topo.placement, false);
    let e = schedule(Collective::AllGather, rs, &g, 1 << 20, 1).unwrap_err();
    assert!(e.to_string().contains("all-reduce only"), "{e}");
}

#[test]
fn the_analytical_backend_prices_the_same_closed_form() {
    // The analytical model (α–β on a server spec, no fabric) runs the same forced schedule:
    // 4 one-GPU servers with a 25 GB/s NIC and 2 reduction servers at 25 GB/s.
    use crate::executor::Executor;
    use crate::network::analytical::alpha_beta::{AlphaBeta, Bandwidths};
    use crate::network::analytical::server_spec::ServerSpec;
    use crate::network::analytical::Analytical;
    use crate::workload::sweep::sweep_workload;
    let mut topo = crossbar(4, 2, B, B, 100.0, 0.0);
    let rs = ReductionServer::on_platform(&mut topo, "all", None, Split::default()).unwrap().algorithm();
    let mut spec = ServerSpec::new(1, 1, "H100", "cx7").unwrap();
    spec.nic_busbw = Some(B as f32);
    let options = Options { algorithm: Some(rs), send_lat_us: Some(0.0), ..Options::default() };
    let cost = AlphaBeta { platform: spec, bandwidths: Bandwidths::Builtin(None), nvls: false, options, memo: None };
    let mut model = Analytical::new(Box::new(cost), Placement::servers(4, 1));
    let w = sweep_workload(Collective::AllReduce, 4, &[S]);
    let analytical = Executor::new(&w).unwrap().run(&mut model, &mut |_| true).unwrap().end_ns;
    // Each server takes 4·u/2 per step.
    let want = (S as f64 / PIPELINE_CHUNK_BYTES + 1.0) * 2.0 * PIPELINE_CHUNK_BYTES / B;
    close(analytical, want);
    close(both(topo, None, Split::default(), S).1, want);
}
