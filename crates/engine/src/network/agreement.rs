//! The analytical and flow models agree on a non-blocking fabric: every algorithm, collective and
//! group size, priced in closed form and run on the flow model from the same schedule.
//!
//! Fabric: servers of m = min(n, 8) GPUs, one NVSwitch each (NVLink 360 GB/s per GPU), every
//! GPU's NIC (50 GB/s) on one switch that never congests, links without latency. Both models run
//! the same one-collective workload through the executor with the algorithm forced, NCCL's
//! protocol choice and their default channels. An algorithm defined only in this file (a star
//! all-gather) runs on both the same way: adding an algorithm touches nothing else.

use super::analytical::alpha_beta::{AlphaBeta, Bandwidths};
use super::analytical::server_spec::ServerSpec;
use super::analytical::Analytical;
use crate::collective::choose::Options;
use crate::collective::Identity;
use crate::collective::{
    schedule, valid_algorithms, Algorithm, CollectiveAlgorithm, Endpoint, GroupTopo, Phase as SchedulePhase, Request,
    Servers, Transfer,
};
use crate::executor::Executor;
use crate::layout::{Axis, Layout};
use crate::network::flow::network::{FlowNetwork, Tuning};
use crate::platform::Placement;
use crate::platform::{Link, NodeKind, Platform};
use crate::workload::sweep::sweep_workload;
use crate::workload::{Collective, Group, Membership, Op, OpKind, Peer, Phase, Program, Workload};

const NVLINK: f64 = 360.0;
const NIC: f64 = 50.0;

fn fabric(n: u32, m: u32) -> Platform {
    let servers = n / m;
    let kinds =
        [vec![NodeKind::Gpu; n as usize], vec![NodeKind::NvSwitch; servers as usize], vec![NodeKind::Switch]].concat();
    let mut links = Vec::new();
    for gpu in 0..n {
        for (peer, bandwidth) in [(n + gpu / m, NVLINK), (n + servers, NIC)] {
            for (src, dst) in [(gpu, peer), (peer, gpu)] {
                links.push(Link { src, dst, bandwidth, latency_ns: 0.0, error_rate: 0.0 });
            }
        }
    }
    Platform::from_parts("agreement", kinds, links, m, "H100").unwrap()
}

/// (analytical, flow) ns of `c` of `bytes` on n ranks with `algorithm`.
fn both(c: Collective, algorithm: Algorithm, n: u32, m: u32, bytes: u64) -> (f64, f64) {
    let options = Options { algorithm: Some(algorithm), nvls_enable: true, ..Options::default() };
    run_both(&sweep_workload(c, n, &[bytes]), n, m, options)
}

/// (analytical, flow) ns of `w` on n ranks in servers of m.
fn run_both(w: &Workload, n: u32, m: u32, options: Options) -> (f64, f64) {
    run_both_nvls(w, n, m, options, true)
}

/// [`run_both`] with NVLS present (`nvls`) or not; other test modules run their algorithms on
/// the same fabric through it.
pub(crate) fn run_both_nvls(w: &Workload, n: u32, m: u32, options: Options, nvls: bool) -> (f64, f64) {
    let mut platform = ServerSpec::new(m, m, "H100", "cx7").unwrap();
    platform.nvlink_busbw = Some(NVLINK as f32);
    platform.nic_busbw = Some(NIC as f32);
    let cost =
        AlphaBeta { platform, bandwidths: Bandwidths::Builtin(None), nvls, options: options.clone(), memo: None };
    let mut analytical = Analytical::new(Box::new(cost), Placement::servers(n, m));
    let a = Executor::new(w).unwrap().run(&mut analytical, &mut |_| true).unwrap().end_ns;
    let tuning = Tuning { options, ..Tuning::default() };
    let mut flow = FlowNetwork::tuned(fabric(n, m), &tuning, |s| s).unwrap();
    let f = Executor::new(w).unwrap().run(&mut flow, &mut |_| true).unwrap().end_ns;
    (a, f)
}

/// Every valid algorithm of every collective on each group size, except those in `skip`.
fn check(sizes: &[u32], skip: &[Algorithm]) {
    let mut worst: (f64, String) = (0.0, String::new());
    for &n in sizes {
        let m = n.min(8);
        let ranks: Vec<u32> = (0..n).collect();
        let g = GroupTopo::on_servers(&ranks, m, true);
        for c in Collective::ALL {
            for algorithm in valid_algorithms(c, &g).into_iter().filter(|a| !skip.contains(a)) {
                for bytes in [4096u64, 64 << 20] {
                    let (a, f) = both(c, algorithm, n, m, bytes);
                    let off = (a - f).abs() / f;
                    let case =
                        format!("{} {} n={n} S={bytes}: analytical {a} ns, flow {f} ns", algorithm.name(), c.name());
                    assert!(off <= 0.01, "{case}");
                    if off > worst.0 {
                        worst = (off, case);
                    }
                }
            }
        }
    }
    eprintln!("worst: {:.4} % ({})", worst.0 * 100.0, worst.1);
}

#[test]
fn every_algorithm_agrees_on_small_groups() {
    check(&[2, 8, 64], &[]);
}

#[test]
fn every_algorithm_agrees_on_1024_ranks() {
    // Direct and PXN all-to-all are n(n−1) ≈ 1 M flows here: about half a minute in all.
    // Flat all-pairs all-gather and reduce-scatter are the same one phase of n(n−1) transfers of
    // S/n as direct all-to-all, so the flow model meets nothing new in them here (only their
    // timing differs, checked at 2, 8 and 64), at 1 M flows each: with them this test takes 40 % longer.
    check(&[1024], &[Algorithm::ALL_PAIRS]);
}

/// Two pipeline stages of `n / 2` ranks each; every rank of the first sends `bytes` to its peer.
fn pipeline_send(n: u32, bytes: u64) -> Workload {
    let layout = Layout::megatron(n / 2, 1, 1, 1, 2);
    let mask = layout.mask(&[Axis::Pp]);
    let op = |kind| Program { ops: vec![Op::new(kind, Vec::new(), 0, Phase::Other)] };
    let peer = |offset| Peer { group: 0, offset };
    Workload {
        layout,
        groups: vec![Group { name: "PP".into(), members: Membership::Dims(mask) }],
        programs: vec![
            op(OpKind::Send { peer: peer(1), bytes, copy: false }),
            op(OpKind::Recv { peer: peer(-1), bytes, copy: false }),
        ],
        class_program: vec![0, 1],
        rank_class: (0..n).map(|r| u32::from(r >= n / 2)).collect(),
        rows: vec!["pp".into()],
    }
}

#[test]
fn point_to_point_sends_agree() {
    // Inside one server of 8 (NVLink) and across two servers of 8 (the NIC).
    for (n, m) in [(8, 8), (16, 8)] {
        for bytes in [4096u64, 64 << 20] {
            let (a, f) = run_both(&pipeline_send(n, bytes), n, m, Options::default());
            assert!((a - f).abs() <= 1e-9 * f, "n={n} S={bytes}: analytical {a} ns, flow {f} ns");
        }
    }
}

/// A naive all-gather through rank 0, defined here and nowhere else: every rank sends its shard
/// S/n to rank 0, which then sends each rank the n − 1 shards it lacks. Everything an algorithm
/// needs is this impl; forcing it runs it on both backends.
struct Star;

impl Identity for Star {
    fn name(&self) -> &'static str {
        "star"
    }
}

impl CollectiveAlgorithm for Star {
    fn unsupported(&self, c: Collective, _g: &GroupTopo, _s: &Servers) -> Option<String> {
        (c != Collective::AllGather).then(|| "the star gathers only".into())
    }

    fn phases(&self, r: &Request) -> Vec<SchedulePhase> {
        let (n, bytes) = (r.group.size(), r.bytes);
        let shard = bytes / n as f64;
        let send = |a, b, bytes| Transfer { src: Endpoint::Rank(a), dst: Endpoint::Rank(b), bytes };
        vec![
            SchedulePhase { transfers: (1..n).map(|r| send(r, 0, shard)).collect(), repeat: 1 },
            SchedulePhase { transfers: (1..n).map(|r| send(0, r, bytes - shard)).collect(), repeat: 1 },
        ]
    }
}

const STAR: Algorithm = Algorithm::new(&Star);

#[test]
fn an_algorithm_defined_in_one_place_runs_on_both_backends() {
    let star = Options { algorithm: Some(STAR), ..Options::default() };
    for n in [2u32, 8, 64, 1024] {
        let m = n.min(8);
        for bytes in [4096u64, 64 << 20] {
            let (a, f) = run_both(&sweep_workload(Collective::AllGather, n, &[bytes]), n, m, star.clone());
            assert!((a - f).abs() <= 0.01 * f, "star n={n} S={bytes}: analytical {a} ns, flow {f} ns");
        }
    }
    // One server of 8: NCCL's point-to-point latency for two dependent NVLink steps, then rank 0's
    // NVLink port takes 7 shards in and sends 7 × 7 out: 56 S/8 at 360 GB/s.
    let s = 64u64 << 20;
    let (a, _) = run_both(&sweep_workload(Collective::AllGather, 8, &[s]), 8, 8, star.clone());
    let want = (8.4 + 2.0 * 3.4) * 1e3 + 56.0 * s as f64 / 8.0 / NVLINK;
    assert!((a - want).abs() <= 1e-9 * want, "{a} vs {want}");
    // It is not registered: the tuner never offers it, and only a forced run names it.
    assert!(!Algorithm::ALL.contains(&STAR));
    let ranks: Vec<u32> = (0..8).collect();
    let e = schedule(Collective::AllReduce, STAR, &GroupTopo::on_servers(&ranks, 8, false), 64, 1).unwrap_err();
    assert!(e.message.contains("star cannot run allreduce") && e.message.contains("gathers only"), "{e}");
}

/// The packet backend (congestion control, ECN and PFC off) and the flow backend on the same
/// non-blocking fabric: a ring all-reduce through the same schedule player, the flow model's time
/// scaled by the framing's wire bytes per payload byte, within 1 %.
#[test]
fn packet_and_flow_agree_on_a_non_blocking_fabric() {
    use crate::catalog::transport::ROCE_V2;
    use crate::network::packet::PacketConfig;
    let (n, m, bytes) = (4, 1, 256u64 << 20);
    let w = sweep_workload(Collective::AllReduce, n, &[bytes]);
    let options = Options { algorithm: Some(Algorithm::RING), ..Options::default() };
    let tuning = Tuning { options, ..Tuning::default() };
    let run = |packets: bool| {
        let mut net = FlowNetwork::tuned(fabric(n, m), &tuning, |s| s).unwrap();
        if packets {
            net.use_packets(PacketConfig::plain()).unwrap();
        }
        Executor::new(&w).unwrap().run(&mut net, &mut |_| true).unwrap().end_ns
    };
    let (f, p) = (run(false), run(true));
    let framing = f64::from(ROCE_V2.wire_bytes(9000)) / 9000.0;
    eprintln!("ring all-reduce {bytes} B on {n}: flow {f} ns, packet {p} ns, flow × framing {}", f * framing);
    assert!((p - f * framing).abs() <= 0.01 * p, "flow {f} ns × {framing}, packet {p} ns");
}
