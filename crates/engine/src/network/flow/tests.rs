use super::network::{fixed_algorithm, FlowNetwork, Tuning};
use super::reference_tests::end_times;
use super::*;
use crate::collective::choose::Options;
use crate::collective::nccl::{RING_LATENCY_US, RING_SIMPLE_ALLREDUCE_FACTOR};
use crate::collective::{Algorithm, Protocol, StepLatency, Timing};
use crate::executor::Executor;
use crate::layout::{Axis, Layout};
use crate::network::Comm;
use crate::network::NetworkModel;
use crate::platform::{Link, NodeKind};
use crate::workload::sweep::sweep_workload;
use crate::workload::{Collective, Group, Membership, Op, OpKind, Phase as OpPhase, Program, Workload};

fn both(links: &mut Vec<Link>, a: u32, b: u32, bandwidth: f64, latency_ns: f64) {
    for (src, dst) in [(a, b), (b, a)] {
        links.push(Link { src, dst, bandwidth, latency_ns, error_rate: 0.0 });
    }
}

/// `tors` ToRs of `per_tor` single-GPU servers, every ToR on every one of `spines` spines.
fn leaf_spine(per_tor: u32, tors: u32, spines: u32, nic_bw: f64, up_bw: f64, lat: f64) -> Platform {
    let g = per_tor * tors;
    let kinds = [vec![NodeKind::Gpu; g as usize], vec![NodeKind::Switch; (tors + spines) as usize]].concat();
    let mut links = Vec::new();
    for i in 0..g {
        both(&mut links, i, g + i / per_tor, nic_bw, lat);
    }
    for t in 0..tors {
        for s in 0..spines {
            both(&mut links, g + t, g + tors + s, up_bw, lat);
        }
    }
    Platform::from_parts("test", kinds, links, 1, "H100").unwrap()
}

fn flow(src: u32, dst: u32, bytes: f64, start_ns: f64) -> FlowSpec {
    FlowSpec { src, dst, bytes, start_ns }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

#[test]
fn one_flow_pays_latency_then_size_over_bandwidth() {
    // GPU 0 → switch → GPU 1: 2 links of 50 B/ns (400 Gbps) and 500 ns each.
    let t = leaf_spine(2, 1, 0, 50.0, 50.0, 500.0);
    let c = completion_times(&t, &[flow(0, 1, 1e6, 100.0)], None, 0).unwrap();
    assert_eq!(c, vec![100.0 + 1000.0 + 1e6 / 50.0]);
}

#[test]
fn sprayed_flow_spreads_over_every_spine() {
    // Two ToRs of one GPU each under 4 spines of 10 B/ns: ECMP puts the flow on one spine
    // (10 B/ns); spraying splits it in four (a quarter each) and the 40 B/ns NICs bound it.
    let mut t = leaf_spine(1, 2, 4, 40.0, 10.0, 100.0);
    let ecmp = completion_times(&t, &[flow(0, 1, 4e6, 0.0)], None, 0).unwrap();
    assert_eq!(ecmp, vec![400.0 + 4e6 / 10.0]);
    t.routing = Routing::Spray;
    let spray = completion_times(&t, &[flow(0, 1, 4e6, 0.0), flow(1, 1, 5.0, 0.0)], None, 0).unwrap();
    assert!(close(spray[0], 400.0 + 4e6 / 40.0, 1e-12), "{spray:?}");
    assert_eq!(spray[1], 0.0);
}

#[test]
fn flows_into_one_bottleneck_share_it_equally() {
    // n senders into GPU 0: its down link carries n flows at B/n each.
    let n = 5;
    let t = leaf_spine(n + 1, 1, 0, 10.0, 10.0, 0.0);
    let flows: Vec<FlowSpec> = (1..=n).map(|s| flow(s, 0, 1000.0, 0.0)).collect();
    let c = completion_times(&t, &flows, None, 0).unwrap();
    assert!(c.iter().all(|&x| close(x, n as f64 * 1000.0 / 10.0, 1e-12)), "{c:?}");
}

#[test]
fn classic_max_min_gives_the_leftover_to_unconstrained_flows() {
    // GPUs 0..3 on switches 4..7 (fat access links), switch chain 4 → 5 → 6 → 7 with capacities
    // 1, 3, 2. A: 0 → 3 crosses all three; B: 0 → 1 on the first; C: 1 → 2 on the second;
    // D: 2 → 3 on the third. Link 1 bounds A and B to 0.5; C gets 3 − 0.5, D gets 2 − 0.5.
    let kinds = [vec![NodeKind::Gpu; 4], vec![NodeKind::Switch; 4]].concat();
    let mut links = Vec::new();
    for g in 0..4 {
        both(&mut links, g, 4 + g, 1000.0, 0.0);
    }
    for (i, cap) in [1.0, 3.0, 2.0].into_iter().enumerate() {
        both(&mut links, 4 + i as u32, 5 + i as u32, cap, 0.0);
    }
    let t = Platform::from_parts("test", kinds, links, 1, "H100").unwrap();
    let flows = [flow(0, 3, 1000.0, 0.0), flow(0, 1, 1000.0, 0.0), flow(1, 2, 1e4, 0.0), flow(2, 3, 1e4, 0.0)];
    let c = completion_times(&t, &flows, None, 0).unwrap();
    // A, B at 0.5 end at 2000; then C at 3: 5000 + 3(t − 2000) = 1e4; D at 2: 3000 + 2(t − 2000) = 1e4.
    assert_eq!((c[0], c[1]), (2000.0, 2000.0));
    assert!(close(c[2], 2000.0 + 5000.0 / 3.0, 1e-12), "{c:?}");
    assert!(close(c[3], 5500.0, 1e-12), "{c:?}");
}

#[test]
fn a_later_flow_slows_an_earlier_one_from_its_start() {
    // One 1 B/ns bottleneck: flow 1 alone for 200 ns (200 B), then both at 0.5 until flow 1's
    // last 800 B are done at 1800; flow 2 then has 200 B left at full rate: 2000.
    let t = leaf_spine(2, 1, 0, 1.0, 1.0, 0.0);
    let c = completion_times(&t, &[flow(0, 1, 1000.0, 0.0), flow(0, 1, 1000.0, 200.0)], None, 0).unwrap();
    assert!(close(c[0], 1800.0, 1e-12) && close(c[1], 2000.0, 1e-12), "{c:?}");
    // Latency loads no link: a flow still paying its latency does not slow the other.
    let t = leaf_spine(2, 1, 0, 1.0, 1.0, 100.0);
    let c = completion_times(&t, &[flow(0, 1, 100.0, 0.0), flow(0, 1, 100.0, 150.0)], None, 0).unwrap();
    assert_eq!(c, vec![300.0, 450.0]);
}

#[test]
fn all_to_all_on_an_oversubscribed_fabric_is_bisection_bound() {
    // 2 ToRs of 4 GPUs, one spine, uplinks as fast as one NIC (4:1). Each direction across the
    // spine carries 16 flows of s bytes: the last ends at 16 s / B; inside a ToR flows take
    // the rest of each NIC (B/4 each) and end at 4 s / B.
    let (b, s) = (10.0, 1000.0);
    let t = leaf_spine(4, 2, 1, b, b, 0.0);
    let flows: Vec<FlowSpec> =
        (0..8).flat_map(|i| (0..8).filter(move |&j| j != i).map(move |j| flow(i, j, s, 0.0))).collect();
    let c = completion_times(&t, &flows, None, 0).unwrap();
    for (f, &x) in flows.iter().zip(&c) {
        let want = if f.src / 4 == f.dst / 4 { 4.0 * s / b } else { 16.0 * s / b };
        assert!(close(x, want, 1e-9), "{f:?}: {x} vs {want}");
    }
}

#[test]
fn ecmp_is_deterministic_and_seeded() {
    // Two flows between ToRs over 2 spines either collide on one spine (both slower) or not.
    let t = leaf_spine(2, 2, 2, 10.0, 10.0, 0.0);
    let flows = [flow(0, 2, 1000.0, 0.0), flow(1, 3, 1000.0, 0.0)];
    let mut outcomes = std::collections::BTreeSet::new();
    for seed in 0..16 {
        let a = completion_times(&t, &flows, None, seed).unwrap();
        assert_eq!(a, completion_times(&t, &flows, None, seed).unwrap());
        outcomes.insert(a.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    }
    // 100 ns apart, or 200 ns when they share a spine.
    assert_eq!(outcomes.len(), 2);
}

#[test]
fn user_routes_override_and_bad_ones_are_input_errors() {
    let t = leaf_spine(2, 2, 2, 10.0, 10.0, 0.0);
    // Both forced over spine 6: they share it and take twice as long.
    let routes = vec![vec![0, 4, 6, 5, 2], vec![1, 4, 6, 5, 3]];
    let flows = [flow(0, 2, 1000.0, 0.0), flow(1, 3, 1000.0, 0.0)];
    assert_eq!(completion_times(&t, &flows, Some(&routes), 0).unwrap(), vec![200.0, 200.0]);
    let bad = vec![vec![0, 4, 2], vec![]];
    let e = completion_times(&t, &flows, Some(&bad), 0).unwrap_err();
    assert!(e.message.contains("flow 0") && e.message.contains("hop 4 -> 2"), "{e}");
    let e = completion_times(&t, &[flow(0, 1, -1.0, 0.0)], None, 0).unwrap_err();
    assert!(e.to_string().contains("flow 0"), "{e}");
    let e = completion_times(&t, &flows, Some(&routes[..1]), 0).unwrap_err();
    assert!(e.message.contains("1 routes for 2 flows"), "{e}");
}

/// A batch for [`run_batches`]: (src, dst, bytes) flows, runs, start time.
type TestBatch = (Vec<(u32, u32, f64)>, u32, f64);

/// Run `batches` (flow lists with repeats, start times), each flow ECMP-routed as its own;
/// completion time of each batch in the order given, solves, bytes per link. `ff`: fast-forward
/// repeats; `incremental`: re-solve rates locally.
fn run_batches(t: &Platform, batches: &[TestBatch], ff: bool, incremental: bool) -> (Vec<f64>, u64, Vec<f64>) {
    run_batches_waiting(t, batches, ff, incremental, Wait::Path { extra_ns: 0.0 })
}

/// [`run_batches`] with every flow waiting `wait` before it starts.
fn run_batches_waiting(
    t: &Platform,
    batches: &[TestBatch],
    ff: bool,
    incremental: bool,
    wait: Wait,
) -> (Vec<f64>, u64, Vec<f64>) {
    let mut router = Router::new(t, 0);
    let mut sim = FlowSim::new(t);
    sim.set_fast_forward(ff);
    sim.set_incremental(incremental);
    let mut id = 0;
    for (k, (flows, repeat, start)) in batches.iter().enumerate() {
        let fl: Vec<_> = flows
            .iter()
            .map(|&(s, d, bytes)| {
                let mut p = Vec::new();
                id += 1;
                router.route(t, s, d, id, &mut p).unwrap();
                (p, bytes)
            })
            .collect();
        sim.add_batch_waiting(*start, fl, *repeat, k as u64, wait);
    }
    let out = end_times(&mut sim, batches.len());
    (out, sim.solves(), sim.carried_bytes().to_vec())
}

#[test]
fn repeated_runs_fast_forward_and_resume_exactly() {
    let t = leaf_spine(4, 1, 0, 2.0, 2.0, 30.0);
    // Batch 0: two flows of unequal size, 50 runs; a stranger joins at an odd time, another
    // one later on a link of its own.
    let batches = vec![
        (vec![(0, 1, 1000.0), (2, 3, 300.0), (2, 1, 700.0)], 50, 0.0),
        (vec![(3, 1, 250.0)], 1, 12345.6),
        (vec![(0, 2, 400.0)], 3, 30000.0),
    ];
    let (fast, solves_fast, carried_fast) = run_batches(&t, &batches, true, true);
    let (slow, solves_slow, carried_slow) = run_batches(&t, &batches, false, true);
    for (a, b) in fast.iter().zip(&slow) {
        assert!(close(*a, *b, 1e-12), "{fast:?} vs {slow:?}");
    }
    for (a, b) in carried_fast.iter().zip(&carried_slow) {
        assert!(close(*a, *b, 1e-12), "{a} vs {b}");
    }
    assert!(solves_fast * 4 < solves_slow, "{solves_fast} vs {solves_slow}");
    // Alone, 50 runs take 50 times one run.
    let (one, _, _) = run_batches(&t, &batches[..1], true, true);
    let single = run_batches(&t, &[(batches[0].0.clone(), 1, 0.0)], false, true).0[0];
    assert!(close(one[0], 50.0 * single, 1e-12), "{} vs {}", one[0], 50.0 * single);
}

#[test]
fn runs_in_company_replay_and_resume_exactly() {
    let t = leaf_spine(4, 1, 0, 2.0, 2.0, 30.0);
    let ring = vec![(0, 1, 500.0), (1, 2, 500.0), (2, 3, 500.0), (3, 0, 800.0)];
    // A ring of 300 runs shares its links with long flows (company) that start, end and are
    // joined by strangers at odd times, and with a repeated batch of its own later.
    let cases: Vec<Vec<TestBatch>> = vec![
        vec![(ring.clone(), 300, 0.0), (vec![(0, 1, 60_000.0), (2, 1, 90_000.0)], 1, 5.0)],
        vec![
            (ring.clone(), 300, 0.0),
            (vec![(0, 1, 60_000.0), (2, 1, 90_000.0)], 1, 5.0),
            (vec![(3, 1, 250.0)], 1, 54_321.7),
            (vec![(1, 3, 40_000.0)], 1, 70_000.5),
            (vec![(2, 0, 100.0)], 20, 150_000.0),
        ],
        // The company outlasts the ring: its last runs are replayed, then the company speeds up.
        vec![(ring.clone(), 300, 0.0), (vec![(0, 1, 600_000.0), (2, 1, 900_000.0)], 1, 5.0)],
    ];
    // Flows that wait their path latency, flows that start at once, and flows that wait a fixed
    // time (a collective's steps, each paying its share of the call's hops' latency).
    let waits = [Wait::Path { extra_ns: 7.0 }, Wait::Fixed(0.0), Wait::Fixed(45.0)];
    for (batches, wait) in cases.iter().flat_map(|b| waits.map(|w| (b, w))) {
        let (fast, solves_fast, carried_fast) = run_batches_waiting(&t, batches, true, true, wait);
        let (slow, solves_slow, carried_slow) = run_batches_waiting(&t, batches, false, true, wait);
        for (a, b) in fast.iter().zip(&slow) {
            assert!(close(*a, *b, 1e-9), "{fast:?} vs {slow:?}");
        }
        for (a, b) in carried_fast.iter().zip(&carried_slow) {
            assert!(close(*a, *b, 1e-9), "{a} vs {b}");
        }
        assert!(solves_fast * 4 < solves_slow, "{solves_fast} vs {solves_slow}");
    }
}

/// One all-reduce of `bytes` over all `n` ranks (a DP group), plus a compute before it.
pub(super) fn allreduce_workload(n: u32, bytes: u64) -> Workload {
    let layout = Layout::megatron(1, 1, 1, n, 1);
    let groups = vec![Group { name: "DP".into(), members: Membership::Dims(layout.mask(&[Axis::DpEp])) }];
    let ops = vec![
        Op::new(OpKind::Compute { ns: 10.0, work: None }, vec![], 0, OpPhase::Forward),
        Op::new(OpKind::Collective { collective: Collective::AllReduce, group: 0, bytes }, vec![0], 0, OpPhase::Other),
    ];
    Workload {
        layout,
        groups,
        programs: vec![Program { ops }],
        class_program: vec![0],
        rank_class: vec![0; n as usize],
        rows: vec!["allreduce".into()],
    }
}

#[test]
fn ring_allreduce_on_a_non_blocking_fabric_matches_the_closed_form() {
    // 4 ToRs of 4 GPUs, 4 spines: non-blocking. Every ring step has a cross-ToR hop (4 links of
    // 500 ns), so a step takes α + S/(nB) with α = 2000 ns.
    let (n, bytes, b, lat) = (16u32, 1u64 << 30, 50.0, 500.0);
    let t = leaf_spine(4, 4, 4, b, b, lat);
    let w = allreduce_workload(n, bytes);
    let mut net = FlowNetwork::new(t, fixed_algorithm(Algorithm::RING, 1), 0, false);
    let e = Executor::new(&w).unwrap().run(&mut net, &mut |_| true).unwrap();
    let want = 10.0 + 2.0 * (n as f64 - 1.0) * (4.0 * lat + bytes as f64 / (n as f64 * b));
    assert!(close(e.end_ns, want, 0.005), "{} vs {want}", e.end_ns);
    assert!(net.solves() < 10, "repeats were re-solved: {} solves", net.solves());
    // Each NIC uplink carried 2(n−1) chunks of S/n.
    let up = net.topology().out_links(0)[0] as usize;
    assert!(close(net.carried_bytes()[up], 2.0 * (n as f64 - 1.0) * bytes as f64 / n as f64, 1e-12));
}

/// Run one all-reduce of `bytes` over `n` GPUs on a crossbar (one switch, `b` B/ns and `lat` ns
/// per link, one GPU per server: every path is 2 hops, nothing blocks); its end time.
fn crossbar_allreduce_ns(algorithm: Algorithm, n: u32, bytes: u64, b: f64, lat: f64) -> f64 {
    let t = leaf_spine(n, 1, 0, b, b, lat);
    let w = allreduce_workload(n, bytes);
    let mut net = FlowNetwork::new(t, fixed_algorithm(algorithm, 1), 0, false);
    Executor::new(&w).unwrap().run(&mut net, &mut |_| true).unwrap().end_ns - 10.0
}

#[test]
fn ring_tree_and_halving_doubling_on_a_crossbar_match_their_closed_forms() {
    // The issue asks for 0.5%; on a crossbar the flow model meets them to rounding.
    let (b, lat) = (50.0, 500.0);
    let alpha = 2.0 * lat;
    let s = 1u64 << 30;
    let sf = s as f64;
    // Ring: 2(n−1) steps of α + S/(nB).
    let n = 16.0;
    let ring = crossbar_allreduce_ns(Algorithm::RING, 16, s, b, lat);
    let want = 2.0 * (n - 1.0) * (alpha + sf / (n * b));
    assert!(close(ring, want, 1e-9), "ring {ring} vs {want}");
    // Halving-doubling (Rabenseifner): 2·log2 n steps, 2(n−1)/n · S bytes per rank.
    let hd = crossbar_allreduce_ns(Algorithm::HALVING_DOUBLING, 16, s, b, lat);
    let want = 2.0 * 4.0 * alpha + 2.0 * (n - 1.0) / n * sf / b;
    assert!(close(hd, want, 1e-9), "halving-doubling {hd} vs {want}");
    // Double binary tree on 4 ranks: A = 0→1←2, 1→3 and its mirror B; depth D = 2; rank 1 (and
    // 2) carries 4 chunks per step each way. S/2 per tree in k = S/(2·chunk) chunks:
    // (k + 2D − 1) steps of α + 4·chunk/B.
    let s = 64u64 << 20;
    let chunk = crate::collective::PIPELINE_CHUNK_BYTES;
    let k = s as f64 / 2.0 / chunk;
    let tree = crossbar_allreduce_ns(Algorithm::TREE, 4, s, b, lat);
    let want = (k + 3.0) * (alpha + 4.0 * chunk / b);
    assert!(close(tree, want, 1e-9), "tree {tree} vs {want}");
}

#[test]
fn intra_server_transfers_use_every_nvswitch() {
    // 2 servers of 2 GPUs, 2 NVSwitches each (100 B/ns per GPU link), ToR at 10 B/ns.
    let kinds = [vec![NodeKind::Gpu; 4], vec![NodeKind::NvSwitch; 4], vec![NodeKind::Switch]].concat();
    let mut links = Vec::new();
    for g in 0..4 {
        for k in 0..2 {
            both(&mut links, g, 4 + 2 * (g / 2) + k, 100.0, 0.0);
        }
        both(&mut links, g, 8, 10.0, 0.0);
    }
    let t = Platform::from_parts("test", kinds, links, 2, "H100").unwrap();
    // Each rank its own class, so a transfer stands for one pair.
    let mut w = allreduce_workload(4, 0);
    w.rank_class = vec![0, 1, 2, 3];
    w.class_program = vec![0; 4];
    let mut net = FlowNetwork::new(t, fixed_algorithm(Algorithm::RING, 1), 0, false);
    net.prepare(&w).unwrap();
    // 1 → 0 is inside server 0: 2 × 100 B/ns; 1 → 3 leaves it: 10 B/ns.
    let mut clock = 0.0;
    for (dst, took) in [(0u32, 1e4 / 200.0), (3, 1e4 / 10.0)] {
        net.start(clock, &Comm::Transfer { src: 1, dst, bytes: 10_000 }, 7).unwrap();
        let mut done = Vec::new();
        let mut now = clock;
        while done.is_empty() {
            now = net.next_completion().unwrap();
            net.complete_until(now, &mut done).unwrap();
        }
        assert_eq!((done, now), (vec![7], clock + took));
        clock = now;
    }
    // A transfer that maps a rank outside the world is an input error.
    let e = net.start(clock, &Comm::Transfer { src: 3, dst: 4, bytes: 1 }, 8).unwrap_err();
    assert!(e.message.contains("outside the world"), "{e}");
}

/// A Spectrum-X-like fabric (formats.md §3.3): 8 GPUs and one NVSwitch (2880 Gbps, 25 ns) per
/// server; rail-optimised, GPU k of a server on ASW k of its 64-server segment (400 Gbps,
/// 500 ns); every ASW on every one of 64 PSWs (400 Gbps).
fn spectrum_x(gpus: u32) -> Platform {
    let (gps, per_asw) = (8u32, 64u32);
    let servers = gpus / gps;
    let segments = servers.div_ceil(per_asw);
    let asws = segments * gps;
    let psws = 64;
    let nvs0 = gpus;
    let asw0 = nvs0 + servers;
    let psw0 = asw0 + asws;
    let kinds = [
        vec![NodeKind::Gpu; gpus as usize],
        vec![NodeKind::NvSwitch; servers as usize],
        vec![NodeKind::Switch; (asws + psws) as usize],
    ]
    .concat();
    let mut links = Vec::new();
    for g in 0..gpus {
        let s = g / gps;
        both(&mut links, g, nvs0 + s, 360.0, 25.0);
        both(&mut links, g, asw0 + (s / per_asw) * gps + g % gps, 50.0, 500.0);
    }
    for a in 0..asws {
        for p in 0..psws {
            both(&mut links, asw0 + a, psw0 + p, 50.0, 500.0);
        }
    }
    Platform::from_parts("spectrum-x", kinds, links, gps, "H100").unwrap()
}

/// Speed targets: 1 GiB ring all-reduce on 4096 ranks within 2 s, 16384 within 20 s (release
/// build). `cargo test --release -- --ignored ring_speed --nocapture` prints the times.
#[test]
#[ignore]
fn ring_speed() {
    for (n, limit) in [(4096u32, 2.0), (16384, 20.0)] {
        let w = allreduce_workload(n, 1 << 30);
        let start = std::time::Instant::now();
        let t = spectrum_x(n);
        let mut net = FlowNetwork::new(t, fixed_algorithm(Algorithm::RING, 1), 0, false);
        let e = Executor::new(&w).unwrap().run(&mut net, &mut |_| true).unwrap();
        let secs = start.elapsed().as_secs_f64();
        // Without ECMP collisions a cross-server step takes 4 × 500 ns + S/(nB); flows hashed
        // onto the same ASW uplink share it, so the flow model can only be slower.
        let ideal = 10.0 + 2.0 * (n as f64 - 1.0) * (2000.0 + (1u64 << 30) as f64 / (n as f64 * 50.0));
        println!(
            "{n}-rank 1 GiB ring all-reduce: {secs:.3} s wall, {:.3} ms simulated ({:.2}x the collision-free time), {} solves",
            e.end_ns / 1e6,
            e.end_ns / ideal,
            net.solves()
        );
        assert!(e.end_ns >= ideal * (1.0 - 1e-9), "{} vs {ideal}", e.end_ns);
        assert!(secs < limit, "{secs} s");
    }
}

/// A small deterministic generator for randomised cases.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u32) -> u32 {
        (self.next() * n as f64) as u32 % n
    }
}

#[test]
fn local_re_solves_give_the_whole_component_answer() {
    // Random leaf-spine fabrics (uneven uplinks, ECMP collisions) under random batches of
    // all-to-all-like traffic that start, repeat and overlap at random.
    let mut rng = Lcg(42);
    for case in 0..30 {
        let (per_tor, tors, spines) = (1 + rng.below(4), 2 + rng.below(4), 1 + rng.below(3));
        let up = [5.0, 10.0, 25.0][rng.below(3) as usize];
        let t = leaf_spine(per_tor, tors, spines, 10.0, up, 100.0 * rng.next());
        let g = per_tor * tors;
        let batches: Vec<TestBatch> = (0..3 + rng.below(20))
            .map(|_| {
                let n = 1 + rng.below(2 * g);
                let flows = (0..n)
                    .map(|_| {
                        let s = rng.below(g);
                        (s, (s + 1 + rng.below(g - 1)) % g, 1e3 + 1e5 * rng.next())
                    })
                    .collect();
                (flows, 1 + rng.below(4), 2e4 * rng.next())
            })
            .collect();
        let local = run_batches(&t, &batches, true, true).0;
        let whole = run_batches(&t, &batches, true, false).0;
        for (a, b) in local.iter().zip(&whole) {
            assert!(close(*a, *b, 1e-9), "case {case}: {local:?} vs {whole:?}");
        }
    }
}

#[test]
fn many_small_flows_do_not_hide_a_link_s_spare_capacity() {
    // L (cap 1) holds X and 1000 flows S that P (0.999) bottlenecks; T joins P and K (5e-10) at
    // t = 10, so the S lose 5e-10 in all and X must gain it on L: a spare of 5e-10 on L is
    // within 1e-9 of C but half a millionth of X's rate.
    let kinds = vec![NodeKind::Gpu, NodeKind::Switch, NodeKind::Switch, NodeKind::Switch];
    let mut links = Vec::new();
    for (s, cap) in [(1, 1.0), (2, 0.999), (3, 5e-10)] {
        both(&mut links, 0, s, cap, 0.0);
    }
    let t = Platform::from_parts("star", kinds, links, 1, "H100").unwrap();
    let end_of_x = |incremental: bool| {
        let mut sim = FlowSim::new(&t);
        sim.set_incremental(incremental);
        sim.add_batch(0.0, vec![(vec![0u32], 1.0)], 1, 0);
        sim.add_batch(0.0, (0..1000).map(|_| (vec![0u32, 2], 1e6)), 1, 1);
        sim.add_batch(10.0, vec![(vec![2u32, 4], 1e6)], 1, 2);
        let mut fin = Vec::new();
        loop {
            sim.step(&mut fin).unwrap();
            if let Some(&(_, t)) = fin.iter().find(|(tag, _)| *tag == 0) {
                return t;
            }
        }
    };
    let (local, whole) = (end_of_x(true), end_of_x(false));
    assert!(close(local, whole, 1e-12), "{local} vs {whole}");
}

/// Every flow of `flows` (src, dst, bytes, start) as its own batch, ECMP-routed with seed 0;
/// completion times and solves, with instants coalesced or each distinct time alone.
fn per_flow_run(t: &Platform, flows: &[(u32, u32, f64, f64)], coalesce: bool) -> (Vec<f64>, u64) {
    let mut router = Router::new(t, 0);
    let mut sim = FlowSim::new(t);
    sim.set_coalesce(coalesce);
    for (k, &(s, d, bytes, start)) in flows.iter().enumerate() {
        let mut p = Vec::new();
        router.route(t, s, d, k as u64, &mut p).unwrap();
        sim.add_batch(start, vec![(p, bytes)], 1, k as u64);
    }
    let out = end_times(&mut sim, flows.len());
    (out, sim.solves())
}

#[test]
fn coalesced_instants_match_the_per_event_solve() {
    // Direct all-to-all on a 128-GPU Spectrum-X-like fabric (ECMP collisions on the ASW
    // uplinks), then random traffic on random leaf-spines: every flow ends as it does when each
    // distinct event time is solved alone, to 1e-6 (the target is 0.1 %), with fewer solves.
    let n = 128;
    let a2a: Vec<_> = (0..n).flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b, 65536.0, 0.0))).collect();
    let mut cases = vec![(spectrum_x(n), a2a)];
    let mut rng = Lcg(7);
    for _ in 0..10 {
        let (per_tor, tors, spines) = (2 + rng.below(4), 2 + rng.below(4), 1 + rng.below(3));
        let t = leaf_spine(per_tor, tors, spines, 10.0, [5.0, 10.0, 25.0][rng.below(3) as usize], 100.0);
        let g = per_tor * tors;
        // Equal sizes and start times in groups, so that many flows end together.
        let flows = (0..4 * g)
            .map(|k| {
                let s = rng.below(g);
                (s, (s + 1 + rng.below(g - 1)) % g, 1e4 * (1 + k % 3) as f64, 1e3 * (k % 2) as f64)
            })
            .collect();
        cases.push((t, flows));
    }
    for (case, (t, flows)) in cases.iter().enumerate() {
        let (merged, solves_merged) = per_flow_run(t, flows, true);
        let (exact, solves_exact) = per_flow_run(t, flows, false);
        for (k, (a, b)) in merged.iter().zip(&exact).enumerate() {
            assert!(close(*a, *b, 1e-6), "case {case}, flow {k}: {a} vs {b}");
        }
        assert!(solves_merged <= solves_exact, "case {case}: {solves_merged} vs {solves_exact}");
        if case == 0 {
            // Flows of equal rate and size end within rounding of each other: one instant.
            assert!(solves_merged * 2 < solves_exact, "{solves_merged} vs {solves_exact}");
        }
    }
}

/// One all-to-all of `bytes` over all `n` ranks.
fn alltoall_workload(n: u32, bytes: u64) -> Workload {
    let mut w = allreduce_workload(n, bytes);
    w.programs[0].ops[1] =
        Op::new(OpKind::Collective { collective: Collective::AllToAll, group: 0, bytes }, vec![0], 0, OpPhase::Other);
    w
}

/// Direct 64 MiB all-to-all on Spectrum-X-like fabrics: `cargo test --release -- --ignored
/// alltoall_speed --nocapture` prints the times (A2A_N=1024 for one size).
#[test]
#[ignore]
fn alltoall_speed() {
    let sizes: Vec<u32> = match std::env::var("A2A_N").ok().and_then(|s| s.parse().ok()) {
        Some(n) => vec![n],
        None => vec![128, 256, 512],
    };
    for n in sizes {
        let w = alltoall_workload(n, 64 << 20);
        let start = std::time::Instant::now();
        let mut net = FlowNetwork::new(spectrum_x(n), fixed_algorithm(Algorithm::DIRECT, 1), 0, false);
        let e = Executor::new(&w).unwrap().run(&mut net, &mut |_| true).unwrap();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{n}-rank 64 MiB all-to-all: {secs:.3} s wall, {:.1} us simulated, {} solves",
            e.end_ns / 1e3,
            net.solves()
        );
        // Each NIC sends the (n − 8)/n of 64 MiB bound for other servers, at 50 B/ns at best.
        assert!(e.end_ns >= (n - 8) as f64 / n as f64 * (64u64 << 20) as f64 / 50.0);
    }
}

#[test]
fn zero_byte_flows_end_after_their_path_latency() {
    // α + 0·β: a flow of no bytes waits its path latency (2 hops of 500 ns) and ends, beside
    // flows that move bytes and without slowing them; one on no link ends as it starts.
    let t = leaf_spine(4, 1, 0, 50.0, 50.0, 500.0);
    let flows = [flow(0, 1, 1e6, 100.0), flow(2, 3, 0.0, 50.0), flow(0, 1, 0.0, 0.0), flow(1, 1, 0.0, 7.0)];
    let c = completion_times(&t, &flows, None, 0).unwrap();
    assert_eq!(c, vec![100.0 + 1000.0 + 1e6 / 50.0, 1050.0, 1000.0, 7.0]);
    // In repeated batches (fast-forwarded, then resumed by a stranger on the zero-byte flow's
    // links) as when every run is simulated.
    let t = leaf_spine(4, 1, 0, 2.0, 2.0, 30.0);
    let batches = vec![
        (vec![(0, 1, 1000.0), (2, 3, 0.0)], 20, 0.0),
        (vec![(2, 3, 250.0)], 1, 4321.0),
        (vec![(3, 2, 0.0)], 5, 100.0),
    ];
    let (fast, _, carried_fast) = run_batches(&t, &batches, true, true);
    let (slow, _, carried_slow) = run_batches(&t, &batches, false, false);
    for (a, b) in fast.iter().zip(&slow).chain(carried_fast.iter().zip(&carried_slow)) {
        assert!(close(*a, *b, 1e-12), "{fast:?} vs {slow:?}");
    }
    // Batch 0 runs alone (the stranger shares no link with its 1000-byte flow): 20 runs of
    // α + S/B; batch 2 is 5 latencies of 2 hops.
    assert!(close(fast[0], 20.0 * (60.0 + 1000.0 / 2.0), 1e-12), "{fast:?}");
    assert_eq!(fast[2], 100.0 + 5.0 * 60.0);
}

#[test]
fn a_schedule_phase_with_a_zero_byte_transfer_runs_as_alpha_beta_prices_it() {
    use crate::collective::cost::{schedule_ns, Links};
    use crate::collective::{Endpoint, GroupTopo, Phase, Schedule, Timing, Transfer};
    // 4 GPUs on one switch, 10 B/ns and 100 ns per link: every path is 2 hops, α = 200 ns.
    let t = leaf_spine(4, 1, 0, 10.0, 10.0, 100.0);
    let send = |a, b, bytes| Transfer { src: Endpoint::Rank(a), dst: Endpoint::Rank(b), bytes };
    let schedule = Schedule {
        algorithm: Algorithm::RING,
        phases: vec![
            Phase { transfers: vec![send(0, 1, 1000.0), send(2, 3, 0.0)], repeat: 3 },
            Phase { transfers: vec![send(1, 2, 0.0)], repeat: 1 },
        ],
        timing: Timing::RAW,
    };
    let s = schedule.clone();
    let mut net = FlowNetwork::new(t, Box::new(move |_, _, _| Ok(s.clone())), 0, false);
    let flow = Executor::new(&allreduce_workload(4, 1000)).unwrap().run(&mut net, &mut |_| true).unwrap().end_ns - 10.0;
    // 3 (α + S/B) for the first phase, α for the second.
    assert!(close(flow, 3.0 * (200.0 + 100.0) + 200.0, 1e-12), "{flow}");
    let links = Links { nvlink_gbps: 100.0, nic_gbps: 10.0, alpha_nvlink_ns: 50.0, alpha_net_ns: 200.0, arch: None };
    let ranks = [0, 1, 2, 3];
    let priced = schedule_ns(&schedule, &GroupTopo::on_servers(&ranks, 1, false), &links).unwrap();
    assert!(close(priced, flow, 1e-12), "analytical {priced} vs flow {flow}");
}

/// End time of each flow given as (path, bytes, ceiling, start), each its own batch.
fn capped_run(t: &Platform, flows: &[(Vec<u32>, f64, f64, f64)]) -> Vec<f64> {
    let mut sim = FlowSim::new(t);
    for (k, (p, bytes, ceil, start)) in flows.iter().enumerate() {
        sim.add_batch_capped(*start, [(p.clone(), *bytes, *ceil)], 1, k as u64, Wait::Path { extra_ns: 0.0 });
    }
    end_times(&mut sim, flows.len())
}

#[test]
fn a_capped_flow_runs_at_the_lower_of_its_ceiling_and_its_fair_share() {
    // GPU 0 → switch → GPU 1: 2 links of 10 B/ns and 100 ns, so α = 200 ns.
    let t = leaf_spine(3, 1, 0, 10.0, 10.0, 100.0);
    let mut path = paths(&t);
    let (p01, p21) = (path(0, 1), path(2, 1));
    // Alone: T = α + B / min(b, c), ceiling below and above the link.
    let got = capped_run(&t, &[(p01.clone(), 1e4, 4.0, 0.0)]);
    assert!(close(got[0], 200.0 + 1e4 / 4.0, 1e-12), "{got:?}");
    let got = capped_run(&t, &[(p01.clone(), 1e4, 25.0, 0.0)]);
    assert!(close(got[0], 200.0 + 1e4 / 10.0, 1e-12), "{got:?}");
    // Two capped flows into GPU 1 (its link is shared): each min(c, b/2).
    let got = capped_run(&t, &[(p01.clone(), 1e4, 3.0, 0.0), (p21.clone(), 1e4, 3.0, 0.0)]);
    assert!(got.iter().all(|&x| close(x, 200.0 + 1e4 / 3.0, 1e-12)), "{got:?}");
    let got = capped_run(&t, &[(p01.clone(), 1e4, 8.0, 0.0), (p21.clone(), 1e4, 8.0, 0.0)]);
    assert!(got.iter().all(|&x| close(x, 200.0 + 1e4 / 5.0, 1e-12)), "{got:?}");
    // Capped at 2 beside an uncapped flow: 2 and the other 8; when the capped one ends (2e3 B
    // at 1000 ns after its start) the other has moved 8e3 of its 1e4 B and takes the link.
    let got = capped_run(&t, &[(p01.clone(), 2e3, 2.0, 0.0), (p21.clone(), 1e4, f64::INFINITY, 0.0)]);
    assert!(close(got[0], 200.0 + 1e3, 1e-12) && close(got[1], 200.0 + 1e3 + 2e3 / 10.0, 1e-12), "{got:?}");
    // Ceilings 2 and 5 beside an uncapped flow on one 10 B/ns link: 2, then 4 and 4 (the fair
    // share of what is left is below 5). The uncapped one arrives 1000 ns late: 2 and 5 until then.
    let p = path(0, 1);
    let mut t3 = t.clone();
    t3.links.iter_mut().for_each(|l| l.latency_ns = 0.0);
    let got = capped_run(
        &t3,
        &[(p.clone(), 1e4, 2.0, 0.0), (p.clone(), 7e3, 5.0, 0.0), (p.clone(), 8e3, f64::INFINITY, 1e3)],
    );
    // Flow 1: 5e3 B by 1000 ns, then 2e3 at 4 → 1500. Flow 2: 4 until 1500 (2e3), then 8 (the
    // link less flow 0's 2) → 6e3 more by 2250. Flow 0: 2 throughout → 5000.
    assert!(close(got[1], 1500.0, 1e-12) && close(got[2], 2250.0, 1e-12) && close(got[0], 5000.0, 1e-12), "{got:?}");
}

/// End of one all-reduce (the ring, or `algorithm`, with NCCL's timing: `protocol`) of `bytes`
/// over a crossbar of `n` single-GPU servers, `b` B/ns and `lat` ns per link.
fn crossbar_nccl_ns(algorithm: Algorithm, protocol: Protocol, n: u32, bytes: u64, b: f64, lat: f64) -> f64 {
    let options = Options { algorithm: Some(algorithm), protocol: Some(protocol), ..Options::default() };
    let t = leaf_spine(n, 1, 0, b, b, lat);
    let mut net = FlowNetwork::tuned(t, &Tuning { options, ..Tuning::default() }, |s| s).unwrap();
    let w = sweep_workload(Collective::AllReduce, n, &[bytes]);
    Executor::new(&w).unwrap().run(&mut net, &mut |_| true).unwrap().end_ns
}

#[test]
fn ring_with_nccl_timing_pays_base_once_and_a_hop_per_step_on_a_crossbar() {
    // N ranks, one per server: every one of the ring's 2(N − 1) steps is a network hop of
    // latency L = hw_net + α_net (NCCL's LL128 hop, α_net = 2 links), so
    // T = base + 2(N − 1)(L + S/(N·B·eff)); the coherent ring has N − 1 such steps.
    let (b, lat, s) = (50.0, 500.0, 1u64 << 28);
    let (base, hw_net) = (RING_LATENCY_US[1].0 * 1e3, RING_LATENCY_US[1].2 * 1e3);
    for n in [4u32, 16] {
        let nf = n as f64;
        let step = hw_net + 2.0 * lat + s as f64 / (nf * b * Protocol::LL128.efficiency());
        let ring = crossbar_nccl_ns(Algorithm::RING, Protocol::LL128, n, s, b, lat);
        let want = base + 2.0 * (nf - 1.0) * step;
        assert!(close(ring, want, 1e-12), "ring, {n} ranks: {ring} vs {want}");
        let coherent = crossbar_nccl_ns(Algorithm::COHERENT_RING, Protocol::LL128, n, s, b, lat);
        let want = base + (nf - 1.0) * step;
        assert!(close(coherent, want, 1e-12), "coherent ring, {n} ranks: {coherent} vs {want}");
        // Simple: the flush doubles α_net and a multi-node ring all-reduce's latency is × 1.4,
        // base and hops alike.
        let (base, hw_net) = (RING_LATENCY_US[2].0 * 1e3, RING_LATENCY_US[2].2 * 1e3);
        let f = RING_SIMPLE_ALLREDUCE_FACTOR;
        let step = f * (hw_net + 2.0 * 2.0 * lat) + s as f64 / (nf * b);
        let ring = crossbar_nccl_ns(Algorithm::RING, Protocol::Simple, n, s, b, lat);
        let want = f * base + 2.0 * (nf - 1.0) * step;
        assert!(close(ring, want, 1e-12), "ring Simple, {n} ranks: {ring} vs {want}");
    }
}

#[test]
fn a_collective_pays_its_hops_latency_before_each_step_not_up_front() {
    // Two single-GPU servers on one switch (B = 50 B/ns, 500 ns per link). A ring all-reduce of
    // S = 2c over both (2 steps, each rank sending c to the other) with base 10 µs and hops
    // H = 40 µs: 20 µs before each step. Beside it, from t = 0, X bytes from GPU 0 to GPU 1 that
    // wait their path latency α = 1 µs. With X = B·(10 + 20 − 1 µs) + c/2 that flow meets the
    // ring's first step: both at B/2 until it ends (c/B later), then the step's last c/2 at B.
    let t = leaf_spine(2, 1, 0, 50.0, 50.0, 500.0);
    let (b, c) = (50.0, 500_000.0);
    let (base, hops) = (10e3, 40e3);
    let mut net = FlowNetwork::new(
        t,
        Box::new(move |coll, g, bytes| {
            let mut s = crate::collective::schedule(coll, Algorithm::RING, g, bytes, 1)?;
            s.timing = Timing { call_latency_ns: base, step: StepLatency::Hops(hops), ..Timing::RAW };
            Ok(s)
        }),
        0,
        false,
    );
    let s = 2 * c as u64;
    net.prepare(&allreduce_workload(2, s)).unwrap();
    let x = b * (base + hops / 2.0 - 1000.0) + c / 2.0;
    net.start(0.0, &Comm::Collective { collective: Collective::AllReduce, group: 0, bytes: s, class: 0 }, 1).unwrap();
    net.start_node_flows(0.0, 2, (7, x as u64), || vec![(0.0, f64::INFINITY, vec![(0, 1, x)])]).unwrap();
    let mut end = [f64::NAN; 3];
    let mut done = Vec::new();
    while let Some(at) = net.next_completion() {
        net.complete_until(at, &mut done).unwrap();
        for tok in done.drain(..) {
            end[tok as usize] = at;
        }
    }
    let want_ring = base + hops + 2.5 * c / b;
    assert!(close(end[1], want_ring, 1e-12), "ring ends at {} vs {want_ring}", end[1]);
    let want_flow = base + hops / 2.0 + c / b;
    assert!(close(end[2], want_flow, 1e-12), "the flow ends at {} vs {want_flow}", end[2]);
    // Paid up front, the whole 50 µs would pass before the ring's first byte, the flow would be
    // done by then (x < B·49 µs), and the ring would end at base + H + 2c/B.
    assert!(x < b * (base + hops - 1000.0));
}

#[test]
fn a_replay_in_company_is_cut_where_a_company_flow_ends() {
    // A ring of steps that wait their share of latency (two instants a run) beside six flows
    // of its links that end one after the other: each end cuts the replay there and then, so a
    // company flow's end costs a cut, the rest of its run and one recorded run, not the runs
    // of slack before it as well. Fast-forward on and off agree to 1e-9.
    let t = leaf_spine(4, 1, 0, 2.0, 2.0, 30.0);
    let ring = vec![(0, 1, 500.0), (1, 2, 500.0), (2, 3, 500.0), (3, 0, 800.0)];
    let company: Vec<(u32, u32, f64)> =
        [(0, 1, 20_000.0), (2, 1, 35_000.0), (1, 2, 50_000.0), (3, 0, 65_000.0), (2, 3, 80_000.0), (0, 2, 95_000.0)]
            .into();
    let batches: Vec<TestBatch> =
        vec![(ring, 400, 0.0), (company.into_iter().map(|f| vec![f]).collect::<Vec<_>>().concat(), 1, 5.0)];
    let (fast, solves_fast, carried_fast) = run_batches_waiting(&t, &batches, true, true, Wait::Fixed(45.0));
    let (slow, solves_slow, carried_slow) = run_batches_waiting(&t, &batches, false, true, Wait::Fixed(45.0));
    for (a, b) in fast.iter().zip(&slow).chain(carried_fast.iter().zip(&carried_slow)) {
        assert!(close(*a, *b, 1e-9), "{fast:?} vs {slow:?}");
    }
    // 57 against 1340; 94 when the replay stopped a run short of each end and went on event by event.
    assert!(solves_fast * 20 < solves_slow, "{solves_fast} vs {solves_slow}");
}

#[test]
fn an_in_class_send_pays_its_p2p_latency_and_a_marked_copy_only_its_path() {
    // Two single-GPU servers on one switch (50 B/ns, 500 ns per link), one rank class: each
    // rank sends S to the other and receives as much (one shift). With AS_SEND_LAT 3 µs an NCCL
    // send waits its path (2 links) and 3 µs, then S/B; a userbuffers copy only its path.
    let (b, lat, s) = (50.0, 500.0, 1u64 << 20);
    let layout = Layout::megatron(2, 1, 1, 1, 1);
    let shift = |copy| {
        let peer = |offset| crate::workload::Peer { group: 0, offset };
        let ops = vec![
            Op::new(OpKind::Send { peer: peer(1), bytes: s, copy }, vec![], 0, OpPhase::Forward),
            Op::new(OpKind::Recv { peer: peer(-1), bytes: s, copy }, vec![], 0, OpPhase::Forward),
        ];
        Workload {
            groups: vec![Group { name: "TP".into(), members: Membership::Dims(layout.mask(&[Axis::Tp])) }],
            layout: layout.clone(),
            programs: vec![Program { ops }],
            class_program: vec![0],
            rank_class: vec![0, 0],
            rows: vec!["ring".into()],
        }
    };
    let options = Options { send_lat_us: Some(3.0), ..Options::default() };
    for (copy, want) in [(true, 2.0 * lat + s as f64 / b), (false, 2.0 * lat + 3000.0 + s as f64 / b)] {
        let t = leaf_spine(2, 1, 0, b, b, lat);
        let mut net = FlowNetwork::tuned(t, &Tuning { options: options.clone(), ..Tuning::default() }, |s| s).unwrap();
        let e = Executor::new(&shift(copy)).unwrap().run(&mut net, &mut |_| true).unwrap();
        assert!(close(e.end_ns, want, 1e-12), "copy {copy}: {} vs {want}", e.end_ns);
    }
}

#[test]
fn simai_ring_steps_follow_the_data_rank_by_rank() {
    // 4 single-GPU servers, two per ToR, one spine (50 B/ns, 500 ns per link): around the ring
    // 0 → 1 → 2 → 3 → 0 the hops alternate between 2 links (t_a = 2 lat + c/B) and 4 links
    // (t_b = 4 lat + c/B), c = S/n, and none shares a link. With AS_SEND_LAT x each rank's next
    // step waits x after what it receives, not after the whole step: every rank's 6 steps pass
    // 3 short and 3 long hops, so the all-reduce takes 6x + 3(t_a + t_b), not 6(x + t_b).
    let (n, s, b, lat, x) = (4u32, 1u64 << 24, 50.0, 500.0, 3.0);
    let c = s as f64 / n as f64 / b;
    let (ta, tb) = (2.0 * lat + c, 4.0 * lat + c);
    let options = Options { send_lat_us: Some(x), algorithm: Some(Algorithm::RING), ..Options::default() };
    let tuning = Tuning { options, channels: 1, ..Tuning::default() };
    let mut net = FlowNetwork::tuned(leaf_spine(2, 2, 1, b, b, lat), &tuning, |s| s).unwrap();
    let e = Executor::new(&allreduce_workload(n, s)).unwrap().run(&mut net, &mut |_| true).unwrap();
    let want = 10.0 + 6.0 * x * 1e3 + 3.0 * (ta + tb);
    assert!(close(e.end_ns, want, 1e-9), "{} vs {want} (all at once: {})", e.end_ns, 10.0 + 6.0 * (x * 1e3 + tb));
    // The same on packets (plain: no CC, no PFC), where a step is done when its sender has the
    // last ACK: slower than the flows, never faster, by at most per step the framing (82 bytes
    // a 9000-byte packet), the opposite flow's ACKs on each link (as much again), a packet's
    // store-and-forward on up to 3 later hops, and the last ACK's way back over up to 4 links.
    let mut net = FlowNetwork::tuned(leaf_spine(2, 2, 1, b, b, lat), &tuning, |s| s).unwrap();
    net.use_packets(crate::network::packet::PacketConfig::plain()).unwrap();
    let p = Executor::new(&allreduce_workload(n, s)).unwrap().run(&mut net, &mut |_| true).unwrap();
    let slack = 2.0 * c * 82.0 / 9000.0 + 3.0 * 9082.0 / b + 4.0 * (lat + 82.0 / b);
    assert!(p.end_ns > want && p.end_ns < want + 6.0 * slack, "{} vs {want}", p.end_ns);
}

/// A flow's links and bytes.
type Route = (Vec<u32>, f64);

/// Seed-0 routing on `t`: the path (links) it gives from node s to node d.
fn paths(t: &Platform) -> impl FnMut(u32, u32) -> Vec<u32> + '_ {
    let mut router = Router::new(t, 0);
    move |s, d| {
        let mut p = Vec::new();
        router.route(t, s, d, 0, &mut p).unwrap();
        p
    }
}

/// The recall tests' case on a 4-server leaf-spine: a ring of 4 hops, the two long flows beside it
/// (its reads), and a stranger of `stranger_bytes` on one of its links.
fn ring_beside_reads(stranger_bytes: f64) -> (Platform, [Vec<Route>; 3]) {
    let t = leaf_spine(4, 1, 0, 2.0, 2.0, 30.0);
    let routes = {
        let mut path = paths(&t);
        let mut route = |s: u32, d: u32, bytes: f64| (path(s, d), bytes);
        let ring = [(0, 1, 500.0), (1, 2, 500.0), (2, 3, 500.0), (3, 0, 800.0)].map(|(s, d, b)| route(s, d, b)).into();
        let company = [(0, 1, 2e6), (2, 1, 3e6)].map(|(s, d, b)| route(s, d, b)).into();
        [ring, company, vec![route(1, 2, stranger_bytes)]]
    };
    (t, routes)
}

/// A simulation of `t` (fast-forward `ff`, recall `recall`) with the reads in `company` started
/// at 5 ns and the first ring (tag 1) of 60 runs at 100 ns.
fn ring_started(t: &Platform, ring: &[Route], company: &[Route], ff: bool, recall: bool) -> FlowSim {
    let mut sim = FlowSim::new(t);
    sim.set_fast_forward(ff);
    sim.set_recall(recall);
    sim.add_batch_waiting(5.0, company.to_vec(), 1, 0, Wait::Fixed(45.0));
    sim.add_batch_waiting(100.0, ring.to_vec(), 60, 1, Wait::Fixed(45.0));
    sim
}

#[test]
fn a_run_met_again_in_the_same_company_is_recalled_exactly() {
    // Rings of 60 runs start one after the other, each as the one before ends (as an executor
    // issues a graph's all-reduces), beside two long flows of their links (its reads); strangers
    // of the same shape come and go meanwhile. A run met again in a company seen before (the
    // same flows' links and ceilings) replays from the record of the first, without being run.
    // Recall on, off, and every run simulated agree to 1e-9; recall saves runs.
    let (t, [ring, company, stranger]) = ring_beside_reads(9_000.0);
    let run = |ff: bool, recall: bool| {
        let mut sim = ring_started(&t, &ring, &company, ff, recall);
        let (mut ends, mut strangers) = (Vec::new(), [20_000.3, 61_000.7, 130_000.1].into_iter());
        let mut finished = Vec::new();
        while let Some(now) = sim.step(&mut finished) {
            for (tag, at) in finished.drain(..) {
                ends.push(at);
                if (1..8).contains(&tag) {
                    sim.add_batch_waiting(now, ring.clone(), 60, tag + 1, Wait::Fixed(45.0));
                }
            }
            if let Some(s) = strangers.clone().next().filter(|&s| sim.next_time().is_none_or(|t| t > s) || now > s) {
                strangers.next();
                sim.add_batch_waiting(s.max(now), stranger.clone(), 1, 100, Wait::Fixed(45.0));
            }
        }
        (ends, sim.solves(), sim.carried_bytes().to_vec())
    };
    let (fast, solves_fast, carried_fast) = run(true, true);
    let (plain, solves_plain, carried_plain) = run(true, false);
    let (slow, solves_slow, carried_slow) = run(false, false);
    assert_eq!(fast.len(), 12, "{fast:?}");
    for (x, y) in [(&fast, &slow), (&plain, &slow), (&carried_fast, &carried_slow), (&carried_plain, &carried_slow)] {
        for (a, b) in x.iter().zip(y) {
            assert!(close(*a, *b, 1e-9), "{x:?} vs {y:?}");
        }
    }
    assert!(
        solves_fast < solves_plain && solves_plain * 10 < solves_slow,
        "{solves_fast}, {solves_plain}, {solves_slow}"
    );
}

#[test]
fn a_recall_waits_for_a_batch_added_for_sooner_after_one_added_for_later() {
    // After each ring ends, its successor is added to start 3 µs later and then a short stranger
    // to start 1 ns later: the stranger's instant comes first although it was added last, so a
    // replay of the successor must not start before it. Recall on, off, and every run simulated
    // agree to 1e-9.
    let (t, [ring, company, stranger]) = ring_beside_reads(700.0);
    let run = |ff: bool, recall: bool| {
        let mut sim = ring_started(&t, &ring, &company, ff, recall);
        let mut ends = Vec::new();
        let mut finished = Vec::new();
        while let Some(now) = sim.step(&mut finished) {
            for (tag, at) in finished.drain(..) {
                ends.push((tag, at));
                if (1..8).contains(&tag) {
                    sim.add_batch_waiting(now + 3000.0, ring.clone(), 60, tag + 1, Wait::Fixed(45.0));
                    sim.add_batch_waiting(now + 1.0, stranger.clone(), 1, 100 + tag, Wait::Fixed(45.0));
                }
            }
        }
        ends.sort_by_key(|&(tag, _)| tag);
        (ends, sim.solves())
    };
    let ((fast, solves_fast), (plain, solves_plain), (slow, _)) =
        (run(true, true), run(true, false), run(false, false));
    assert_eq!(fast.len(), 1 + 8 + 7, "{fast:?}");
    assert!(solves_fast < solves_plain, "recall is exercised: {solves_fast} vs {solves_plain}");
    for (x, y) in [(&fast, &slow), (&plain, &slow)] {
        for ((ta, a), (tb, b)) in x.iter().zip(y) {
            assert!(ta == tb && close(*a, *b, 1e-9), "{x:?} vs {y:?}");
        }
    }
}

#[test]
fn a_run_moved_by_a_stranger_s_event_in_its_instant_is_not_parked() {
    // 10 s in, an instant takes the events of the next 10 ns with it. A ring of 300 runs has
    // its links to itself; a stranger on the other ToR ends 5 ns before the ring's first run
    // would, and that instant, processed at the stranger's end, ends the run 5 ns early. Parked
    // on that run, the ring would end 300 × 5 ns early; it parks on a run of its own instead.
    // Fast-forward on and off agree to 1e-9 of the time taken.
    let t = leaf_spine(4, 2, 1, 2.0, 2.0, 30.0);
    let mut route = paths(&t);
    let ring: Vec<Route> =
        [(0, 1, 500.0), (1, 2, 500.0), (2, 3, 500.0), (3, 0, 800.0)].map(|(s, d, b)| (route(s, d), b)).into();
    let stranger = route(4, 5);
    let t0 = 1e10;
    let first_run_end = {
        let mut sim = FlowSim::new(&t);
        sim.add_batch_waiting(t0, ring.clone(), 1, 0, Wait::Fixed(45.0));
        end_times(&mut sim, 1)[0]
    };
    let run = |ff: bool| {
        let mut sim = FlowSim::new(&t);
        sim.set_fast_forward(ff);
        sim.add_batch_waiting(t0, ring.clone(), 300, 0, Wait::Fixed(45.0));
        sim.add_batch_waiting(t0, [(stranger.clone(), 2.0 * (first_run_end - 5.0 - t0))], 1, 1, Wait::Fixed(0.0));
        (end_times(&mut sim, 2), sim.solves())
    };
    let ((fast, solves_fast), (slow, solves_slow)) = (run(true), run(false));
    assert!(close(fast[1], first_run_end - 5.0, 1e-15), "the stranger ends 5 ns before the run: {fast:?}");
    let taken = slow[0] - t0;
    assert!((fast[0] - slow[0]).abs() <= 1e-9 * taken, "{} vs {} ({} ns apart)", fast[0], slow[0], fast[0] - slow[0]);
    assert!(solves_fast * 20 < solves_slow, "{solves_fast} vs {solves_slow}");
}

#[test]
fn a_stale_event_does_not_set_an_instant_s_time() {
    // 10 s in, an instant takes the events of the next 10 ns with it. A (0 → 1, 1000 B) and B
    // (2 → 1, 400 B) share GPU 1's link of 2 B/ns; when B ends at +400 ns, A speeds up and ends
    // at +700 ns, and its first end, due at +1000 ns, is left in the heap, stale. D (3 → 2, on
    // links of its own) ends at +1005 ns: at its own time, not taken along by the stale event.
    let t = leaf_spine(4, 1, 0, 2.0, 2.0, 30.0);
    let mut route = paths(&t);
    let t0 = 1e10;
    let mut sim = FlowSim::new(&t);
    for (tag, (s, d, bytes)) in [(0, 1, 1000.0), (2, 1, 400.0), (3, 2, 2010.0)].into_iter().enumerate() {
        sim.add_batch_waiting(t0, [(route(s, d), bytes)], 1, tag as u64, Wait::Fixed(0.0));
    }
    let ends = end_times(&mut sim, 3);
    for (end, want) in ends.iter().zip([700.0, 400.0, 1005.0]) {
        assert!(close(*end, t0 + want, 1e-15), "{:?}", ends.iter().map(|e| e - t0).collect::<Vec<_>>());
    }
}

#[test]
fn runs_sharing_each_instant_at_the_very_same_time_are_parked_on() {
    // Two rings of 300 runs on links of their own (one per ToR) start together: their events
    // are due at the very same times, so each instant holds both, and neither moves the other's
    // (each instant is processed at the time both are due). Each ring parks on its run as it
    // would alone: far fewer solves than without fast-forward, the same end times to 1e-9 of
    // the time taken, and the two rings end together.
    let t = leaf_spine(4, 2, 1, 2.0, 2.0, 30.0);
    let mut router = Router::new(&t, 0);
    let mut route = |s: u32, d: u32| {
        let mut p = Vec::new();
        router.route(&t, s, d, 0, &mut p).unwrap();
        p
    };
    let mut ring = |first: u32| -> Vec<Route> {
        [(0, 1, 500.0), (1, 2, 500.0), (2, 3, 500.0), (3, 0, 800.0)]
            .map(|(s, d, b)| (route(first + s, first + d), b))
            .into()
    };
    let (a, b) = (ring(0), ring(4));
    let t0 = 1e10;
    let run = |ff: bool| {
        let mut sim = FlowSim::new(&t);
        sim.set_fast_forward(ff);
        sim.add_batch_waiting(t0, a.clone(), 300, 0, Wait::Fixed(45.0));
        sim.add_batch_waiting(t0, b.clone(), 300, 1, Wait::Fixed(45.0));
        (end_times(&mut sim, 2), sim.solves())
    };
    let ((fast, solves_fast), (slow, solves_slow)) = (run(true), run(false));
    assert_eq!(fast[0], fast[1], "the rings end together: {fast:?}");
    let taken = slow[0] - t0;
    assert!((fast[0] - slow[0]).abs() <= 1e-9 * taken, "{} vs {} ({} ns apart)", fast[0], slow[0], fast[0] - slow[0]);
    assert!(solves_fast * 20 < solves_slow, "{solves_fast} vs {solves_slow}");
}

/// End of a ring/Simple all-reduce of `bytes` between two one-GPU servers of `platform` text.
fn two_server_ring_ns(platform: &str, bytes: u64) -> f64 {
    let t = Platform::parse_platform("p.platform", platform).unwrap();
    let options = Options { algorithm: Some(Algorithm::RING), protocol: Some(Protocol::Simple), ..Options::default() };
    let mut net = FlowNetwork::tuned(t, &Tuning { options, ..Tuning::default() }, |s| s).unwrap();
    let w = sweep_workload(Collective::AllReduce, 2, &[bytes]);
    Executor::new(&w).unwrap().run(&mut net, &mut |_| true).unwrap().end_ns
}

#[test]
fn a_nic_on_an_rdma_fabric_carries_what_nccl_achieves_through_it() {
    // Two H100s, each on its own link to one leaf. A ring all-reduce of S on 2 ranks sends S/2
    // out of each NIC in each of its 2 steps, S in all, so S more bytes take S / B more time: the
    // difference of two sizes is free of latency. At 400 Gb/s on InfiniBand the line less the
    // framing is 50 × 4096/4122 = 49.68 GB/s, and NCCL achieves the catalog's ConnectX-7 figure,
    // 48.5 GB/s; at 350 Gb/s no catalog NIC fits, so the link keeps 43.75 × 4096/4122; without
    // a transport the 400 Gb/s link is taken as given, 50 GB/s.
    let fabric = |rate: &str, transport: &str| {
        format!(
            "node g0 gpu type=H100\nnode g1 gpu type=H100\nnode leaf switch tier=tor{transport}\n\
             link g0 leaf {rate} 500ns\nlink g1 leaf {rate} 500ns\n"
        )
    };
    let (s, half) = (1u64 << 30, 1u64 << 29);
    let rate = |text: &str| (s - half) as f64 / (two_server_ring_ns(text, s) - two_server_ring_ns(text, half));
    let ndr = rate(&fabric("400Gbps", " transport=ib"));
    assert!(close(ndr, 48.5, 1e-9), "{ndr}");
    let odd = rate(&fabric("350Gbps", " transport=ib"));
    assert!(close(odd, 43.75 * 4096.0 / 4122.0, 1e-9), "{odd}");
    let bare = rate(&fabric("400Gbps", ""));
    assert!(close(bare, 50.0, 1e-9), "{bare}");
}
