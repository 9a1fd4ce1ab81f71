//! The analytical and flow models agree on a non-blocking fabric: every algorithm, collective and
//! group size, priced in closed form and run on the flow model from the same schedule.
//!
//! Fabric: servers of m = min(n, 8) GPUs, one NVSwitch each (NVLink 360 GB/s per GPU), every
//! GPU's NIC (50 GB/s) on one switch that never congests, links without latency. Both models run
//! the same one-collective workload through the executor with the algorithm forced, NCCL's
//! protocol choice and their default channels.

use super::alpha_beta::{AlphaBeta, Bandwidths};
use super::platform::{GpuType, NicType, Platform};
use super::Analytical;
use crate::collective::choose::Options;
use crate::collective::{valid_algorithms, Algorithm, GroupTopo};
use crate::executor::Executor;
use crate::flow::network::{FlowNetwork, Tuning};
use crate::flow::sweep::sweep_workload;
use crate::topology::{Link, NodeKind, Topology};
use crate::workload::Collective;

const NVLINK: f64 = 360.0;
const NIC: f64 = 50.0;

fn fabric(n: u32, m: u32) -> Topology {
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
    Topology::from_parts("agreement", kinds, links, m, "H100").unwrap()
}

/// (analytical, flow) ns of `c` of `bytes` on n ranks with `algorithm`.
fn both(c: Collective, algorithm: Algorithm, n: u32, m: u32, bytes: u64) -> (f64, f64) {
    let options = Options { algorithm: Some(algorithm), nvls_enable: true, ..Options::default() };
    let w = sweep_workload(c, n, &[bytes]);
    let mut platform = Platform::new(m, m, GpuType::H100, NicType::Cx7);
    platform.nvlink_busbw = Some(NVLINK as f32);
    platform.nic_busbw = Some(NIC as f32);
    let cost = AlphaBeta { platform, bandwidths: Bandwidths::Builtin(None), nvls: true, options: options.clone() };
    let mut analytical = Analytical::new(Box::new(cost), m);
    let a = Executor::new(&w).unwrap().run(&mut analytical, &mut |_| true).unwrap().end_ns;
    let tuning = Tuning { options, ..Tuning::default() };
    let mut flow = FlowNetwork::tuned(fabric(n, m), &tuning, |s| s).unwrap();
    let f = Executor::new(&w).unwrap().run(&mut flow, &mut |_| true).unwrap().end_ns;
    (a, f)
}

fn check(sizes: &[u32]) {
    let mut worst: (f64, String) = (0.0, String::new());
    for &n in sizes {
        let m = n.min(8);
        let ranks: Vec<u32> = (0..n).collect();
        let g = GroupTopo { ranks: &ranks, gpus_per_server: m, nvls: true };
        for c in Collective::ALL {
            for algorithm in valid_algorithms(c, &g) {
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
    check(&[2, 8, 64]);
}

#[test]
fn every_algorithm_agrees_on_1024_ranks() {
    // Direct and PXN all-to-all are n(n−1) ≈ 1 M flows here: about half a minute in all.
    check(&[1024]);
}
