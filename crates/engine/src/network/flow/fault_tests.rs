//! Faults on the flow model, against closed forms: a ring all-reduce on one-GPU servers whose
//! every link has no latency takes 2(n−1) steps of S/n bytes each, a step as long as its
//! slowest GPU port takes (T = 2(n−1)·S/(n·b) at port rate b), so halving one GPU's port rate
//! doubles every step.

use super::network::{fixed_algorithm, FlowNetwork};
use super::tests::allreduce_workload;
use super::*;
use crate::collective::Algorithm;
use crate::executor::Executor;
use crate::platform::fault::parse_faults;
use crate::platform::{Link, NodeKind};
use crate::workload::Workload;

fn both(links: &mut Vec<Link>, a: u32, b: u32, bandwidth: f64) {
    for (src, dst) in [(a, b), (b, a)] {
        links.push(Link { src, dst, bandwidth, latency_ns: 0.0, error_rate: 0.0 });
    }
}

/// `n` one-GPU servers, two per ToR; with `dual`, each GPU also on a second ToR (the AlibabaHPN
/// wiring: ToR sets A and B). Ports `b` B/ns, ToRs to one spine at 100·b (no bottleneck there).
/// Nodes: GPUs 0..n, ToRs of set A, of set B, the spine.
fn fabric(n: u32, dual: bool, b: f64, routing: Routing) -> Platform {
    let tors = n / 2;
    let sets = if dual { 2 } else { 1 };
    let spine = n + sets * tors;
    let kinds = [vec![NodeKind::Gpu; n as usize], vec![NodeKind::Switch; (sets * tors + 1) as usize]].concat();
    let mut links = Vec::new();
    for g in 0..n {
        for s in 0..sets {
            both(&mut links, g, n + s * tors + g / 2, b);
        }
    }
    for t in 0..sets * tors {
        both(&mut links, n + t, spine, 100.0 * b);
    }
    let mut t = Platform::from_parts("test", kinds, links, 1, "H100").unwrap();
    t.routing = routing;
    t
}

/// The run's end (ns) and the bytes each link carried, with `faults` applied.
fn run(t: Platform, w: &Workload, faults: &str) -> Result<(f64, Vec<f64>)> {
    let faults = if faults.is_empty() { Vec::new() } else { parse_faults("--fault", faults, &t)? };
    let mut net = FlowNetwork::new(t, fixed_algorithm(Algorithm::RING, 1), 0, false);
    net.set_faults(faults)?;
    let e = Executor::new(w)?.run(&mut net, &mut |_| true)?;
    Ok((e.end_ns, net.carried_bytes().to_vec()))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs()
}

const N: u32 = 4;
const S: u64 = 1 << 24;
const B: f64 = 25.0;

/// One ring step at port rate `b`: S/n bytes.
fn step(b: f64) -> f64 {
    S as f64 / N as f64 / b
}

#[test]
fn a_tor_link_down_on_a_dual_tor_fabric_halves_the_gpu_s_port_and_the_run_goes_on() {
    // Spraying uses both ToR links of every GPU: a port of 2B. GPU 0 loses its link to ToR A
    // (node 4) before the all-reduce: every step then waits on GPU 0's one link of B.
    let steps = 2.0 * (N as f64 - 1.0);
    let (healthy, _) = run(fabric(N, true, B, Routing::Spray), &allreduce_workload(N, S), "").unwrap();
    assert!(close(healthy, 10.0 + steps * step(2.0 * B)), "{healthy}");
    let (hurt, carried) = run(fabric(N, true, B, Routing::Spray), &allreduce_workload(N, S), "link:0-4@0ns").unwrap();
    assert!(close(hurt, 10.0 + steps * step(B)), "{hurt} vs {}", 10.0 + steps * step(B));
    let t = fabric(N, true, B, Routing::Spray);
    let dead = crate::platform::routing::link_between(&t, 0, 4).unwrap() as usize;
    let alive = crate::platform::routing::link_between(&t, 0, 6).unwrap() as usize;
    assert_eq!(carried[dead], 0.0);
    // GPU 0's survivor carried everything GPU 0 sent: 2(n−1) chunks of S/n.
    assert!(close(carried[alive], steps * S as f64 / N as f64));

    // Down in the middle of step k = 2: the flows on the dead link move with what they have
    // left. GPU 0's half-done step has S/(2n) left over one link of B (d0 more); every later
    // step takes 2·d0 (d0 = a healthy step).
    let d0 = step(2.0 * B);
    let k = 2.0;
    let at = 10.0 + (k + 0.5) * d0;
    let (mid, carried) =
        run(fabric(N, true, B, Routing::Spray), &allreduce_workload(N, S), &format!("link:0-4@{at}ns")).unwrap();
    let want = at + d0 + (steps - k - 1.0) * 2.0 * d0;
    assert!(close(mid, want), "{mid} vs {want}");
    // The dead link carried GPU 0's half of the first k steps and of half of step k.
    assert!(close(carried[dead], (k + 0.5) * S as f64 / N as f64 / 2.0), "{}", carried[dead]);
}

#[test]
fn a_tor_link_down_on_a_single_tor_fabric_stops_the_run_naming_the_group() {
    for at in ["0ns", "100us"] {
        let e =
            run(fabric(N, false, B, Routing::Ecmp), &allreduce_workload(N, S), &format!("link:0-4@{at}")).unwrap_err();
        assert!(!e.is_internal());
        let text = e.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("DP group 0 (ranks 0, 1, 2, 3; AllReduce): no path from node 0 to node"), "{text}");
        assert!(text.contains("link:0-4 went down at"), "{text}");
    }
}

#[test]
fn a_degraded_port_slows_every_ring_step_by_its_factor() {
    // GPU 0's link to its only ToR at 40 %: every step at 0.4·B. From the middle of step 1 on:
    // half of step 1 at B, its other half at 0.4·B (S/(2n) bytes), the rest at 0.4·B.
    let steps = 2.0 * (N as f64 - 1.0);
    let (slow, _) = run(fabric(N, false, B, Routing::Ecmp), &allreduce_workload(N, S), "link:0-4@0ns:0.4").unwrap();
    assert!(close(slow, 10.0 + steps * step(0.4 * B)), "{slow}");
    let at = 10.0 + 1.5 * step(B);
    let (mid, _) =
        run(fabric(N, false, B, Routing::Ecmp), &allreduce_workload(N, S), &format!("link:0-4@{at}ns:0.4")).unwrap();
    let want = at + step(0.4 * B) / 2.0 + (steps - 2.0) * step(0.4 * B);
    assert!(close(mid, want), "{mid} vs {want}");
    // A fault after the run changes nothing.
    let (late, _) = run(fabric(N, false, B, Routing::Ecmp), &allreduce_workload(N, S), "link:0-4@1s:0.4").unwrap();
    assert!(close(late, 10.0 + steps * step(B)));
}

#[test]
fn with_per_flow_ecmp_one_queue_pair_uses_one_tor_link_and_moves_when_it_fails() {
    // One queue pair per connection hashes onto one of GPU 0's two ToR links: the other is
    // idle, so losing either leaves the ring's time as it was (the flow moves at the same
    // rate). This is why the dual-ToR gain needs traffic on both links (spraying, or enough
    // queue pairs and channels).
    let steps = 2.0 * (N as f64 - 1.0);
    let t = fabric(N, true, B, Routing::Ecmp);
    let (healthy, carried) = run(t.clone(), &allreduce_workload(N, S), "").unwrap();
    assert!(close(healthy, 10.0 + steps * step(B)), "{healthy}");
    let up = [4u32, 6].map(|tor| crate::platform::routing::link_between(&t, 0, tor).unwrap() as usize);
    let used = if carried[up[0]] > 0.0 { 0 } else { 1 };
    assert_eq!(carried[up[1 - used]], 0.0);
    let tor = [4, 6][used];
    let (hurt, carried) = run(t, &allreduce_workload(N, S), &format!("link:0-{tor}@0ns")).unwrap();
    assert!(close(hurt, healthy));
    assert_eq!(carried[up[used]], 0.0);
    assert!(close(carried[up[1 - used]], steps * S as f64 / N as f64));
}

#[test]
fn the_packet_backend_refuses_faults() {
    let t = fabric(N, true, B, Routing::Ecmp);
    let faults = parse_faults("--fault", "link:0-4@0ns", &t).unwrap();
    let mut net = FlowNetwork::new(t, fixed_algorithm(Algorithm::RING, 1), 0, false);
    net.use_packets(crate::network::packet::PacketConfig::default()).unwrap();
    let e = net.set_faults(faults).unwrap_err();
    assert!(e.to_string().contains("--backend flow"), "{e}");
}
