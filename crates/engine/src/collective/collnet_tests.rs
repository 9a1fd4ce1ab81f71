//! Closed forms on one switch and on two tiers, on both backends; bad input.

use super::*;
use crate::collective::choose::Options;
use crate::collective::cost::schedule_ns;
use crate::collective::tuner_links::TunerLinks;
use crate::collective::{schedule, PIPELINE_CHUNK_BYTES};
use crate::driver::{simulate, Backend};
use crate::layout::Layout;
use crate::nccl_tests::{sweep, SweepOptions};
use crate::network::flow::network::{FlowNetwork, Tuning};
use crate::platform::{Link, Placement};
use crate::workload::sweep::sweep_workload;

const B: f64 = 50.0;
const NV: f64 = 1000.0;
const S: u64 = 64 << 20;

/// GPUs in servers of `m` (one NVSwitch each when m > 1), GPU i on leaf i / `per_leaf`; leaves
/// joined by `spines` switches (none: one leaf); `up` GB/s per leaf–spine link.
fn fabric(n: u32, m: u32, per_leaf: u32, spines: u32, up: f64) -> Platform {
    let servers = n / m;
    let leaves = n.div_ceil(per_leaf);
    let nvs = if m > 1 { servers } else { 0 };
    let (nv0, leaf0) = (n, n + nvs);
    let spine0 = leaf0 + leaves;
    let kinds = [
        vec![NodeKind::Gpu; n as usize],
        vec![NodeKind::NvSwitch; nvs as usize],
        vec![NodeKind::Switch; (leaves + spines) as usize],
    ]
    .concat();
    let mut links = Vec::new();
    let mut duplex = |a: u32, b: u32, bandwidth: f64| {
        links.push(Link { src: a, dst: b, bandwidth, latency_ns: 0.0, error_rate: 0.0 });
        links.push(Link { src: b, dst: a, bandwidth, latency_ns: 0.0, error_rate: 0.0 });
    };
    for g in 0..n {
        duplex(g, leaf0 + g / per_leaf, B);
        if m > 1 {
            duplex(g, nv0 + g / m, NV);
        }
    }
    for l in 0..leaves {
        for s in 0..spines {
            duplex(leaf0 + l, spine0 + s, up);
        }
    }
    Platform::from_parts("fabric", kinds, links, m, "H100").unwrap()
}

/// (α–β price, flow time) of an all-reduce of S on every GPU, bare timing.
fn both(mut topo: Platform, variant: Variant, reduce: Option<f64>) -> (f64, f64) {
    let algo = CollNet::on_platform(&mut topo, variant, reduce).unwrap().algorithm();
    let ranks: Vec<u32> = (0..topo.placement.ranks()).collect();
    let g = GroupTopo::new(&ranks, &topo.placement, false);
    let links = TunerLinks::of(&topo).unwrap().group(&g);
    let priced = schedule_ns(&schedule(Collective::AllReduce, algo, &g, S, 1).unwrap(), &g, &links).unwrap();
    let choose = Options { algorithm: Some(algo), send_lat_us: Some(0.0), ..Options::default() };
    let opts = SweepOptions { choose, channels: 1, ..SweepOptions::default() };
    (priced, sweep(topo, Collective::AllReduce, &[S], &opts).unwrap()[0].ns)
}

fn check((priced, flow): (f64, f64), want: f64) {
    for got in [priced, flow] {
        assert!((got - want).abs() <= 1e-9 * want, "analytical {priced}, flow {flow}, want {want}");
    }
}

const U: f64 = PIPELINE_CHUNK_BYTES;
const K: f64 = (S as f64) / PIPELINE_CHUNK_BYTES;

#[test]
fn one_switch_reduces_at_the_nic_rate() {
    // 8 GPUs on one switch: each sends u up and gets u back per step, k + 1 steps: ≈ S/B.
    for variant in [Variant::Direct, Variant::Chain] {
        check(both(fabric(8, 1, 8, 0, B), variant, None), (K + 1.0) * U / B);
    }
}

#[test]
fn a_slow_switch_is_bound_by_its_reduction_throughput() {
    // R = 100 GB/s for 8 GPUs' 8u per step.
    check(both(fabric(8, 1, 8, 0, B), Variant::Direct, Some(100.0)), (K + 1.0) * 8.0 * U / 100.0);
}

#[test]
fn two_tiers_add_one_step() {
    // 2 leaves of 4 GPUs under one spine, uplinks at 4·B (non-blocking): k + 2 steps of u/B.
    check(both(fabric(8, 1, 4, 1, 4.0 * B), Variant::Direct, None), (K + 2.0) * U / B);
    // Uplinks at B: the root's links carry 4 results per step, u·4/B.
    check(both(fabric(8, 1, 4, 1, B), Variant::Direct, None), (K + 2.0) * 4.0 * U / B);
}

#[test]
fn direct_and_chain_inside_servers() {
    // 2 servers × 2 GPUs on one leaf. Direct: each GPU sends its shard u/2 to the switch and
    // u (reduce-scatter + all-gather) to its peer over NVLink: k + 3 steps of u/(2B).
    check(both(fabric(4, 2, 4, 0, B), Variant::Direct, None), (K + 3.0) * U / (2.0 * B));
    // Chain: the head sends u to the switch: k + 3 steps of u/B.
    check(both(fabric(4, 2, 4, 0, B), Variant::Chain, None), (K + 3.0) * U / B);
}

#[test]
fn groups_of_one_shape_reduce_on_their_own_leaves() {
    // 8 one-GPU servers, leaves of 4 joined by a spine at B per uplink; two groups of 4 (one per
    // leaf, the same shape) all-reduce at once, CollNet taking the all-reduces. Each reduces on
    // its own leaf, as alone: (k + 1)·u/B. A schedule shared by shape would send the second
    // group's shards to the first group's leaf, over the spine.
    let mut topo = fabric(8, 1, 4, 1, B);
    let algo = CollNet::on_platform(&mut topo, Variant::Direct, None).unwrap().algorithm();
    let mut w = sweep_workload(Collective::AllReduce, 4, &[S]);
    w.layout = Layout::megatron(4, 1, 1, 2, 1);
    w.rank_class = vec![0; 8];
    let options = Options { all_reduce: Some(algo), send_lat_us: Some(0.0), ..Options::default() };
    let net = FlowNetwork::tuned(topo, &Tuning { options, channels: 1, ..Tuning::default() }, |s| s).unwrap();
    let run = simulate(&w, Backend::FlowNetwork(Box::new(net)), &mut |_| true).unwrap().execution;
    let (start, end) = (run.timelines[0].start[0], run.timelines[0].end[0]);
    let want = (K + 1.0) * U / B;
    assert!((end - start - want).abs() <= 1e-9 * want, "{} vs {want}", end - start);
}

#[test]
fn bad_requests_are_refused_with_the_reason() {
    let mut topo = fabric(8, 1, 8, 0, B);
    let algo = CollNet::on_platform(&mut topo, Variant::Direct, None).unwrap().algorithm();
    let ranks: Vec<u32> = (0..8).collect();
    let g = GroupTopo::new(&ranks, &topo.placement, false);
    let e = schedule(Collective::AllGather, algo, &g, 1 << 20, 1).unwrap_err();
    assert!(e.to_string().contains("all-reduce only"), "{e}");
    let e = CollNet::on_platform(&mut topo, Variant::Chain, Some(-1.0)).unwrap_err();
    assert!(e.to_string().contains("switch_reduce_gbps"), "{e}");
    // Two leaves whose spines meet only at a core: no two-tier tree.
    let kinds = [vec![NodeKind::Gpu; 2], vec![NodeKind::Switch; 5]].concat();
    let mut links = Vec::new();
    for (a, b) in [(0, 2), (1, 3), (2, 4), (3, 5), (4, 6), (5, 6)] {
        links.push(Link { src: a, dst: b, bandwidth: B, latency_ns: 0.0, error_rate: 0.0 });
        links.push(Link { src: b, dst: a, bandwidth: B, latency_ns: 0.0, error_rate: 0.0 });
    }
    let mut deep = Platform::new("deep", kinds, links, Vec::new(), Placement::servers(2, 1), "H100").unwrap();
    let algo = CollNet::on_platform(&mut deep, Variant::Direct, None).unwrap().algorithm();
    let g = GroupTopo::new(&ranks[..2], &deep.placement, false);
    let e = schedule(Collective::AllReduce, algo, &g, 1 << 20, 1).unwrap_err();
    assert!(e.to_string().contains("no common parent"), "{e}");
    assert_eq!(in_network_busbw_factor(8), 7.0 / 9.0);
}
