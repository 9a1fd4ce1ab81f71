//! ECMP as the hardware does it: queue pairs hashed one by one, spraying, collisions.

use super::*;
use crate::collective::GroupTopo;
use crate::platform::{Link, NodeKind};

/// `gpus` one-GPU servers, GPU g on ToR g % `tors`, every ToR on every one of `spines` spines;
/// every link 1 B/ns with no delay.
fn clos(gpus: u32, tors: u32, spines: u32, routing: Routing) -> Platform {
    let kinds = [vec![NodeKind::Gpu; gpus as usize], vec![NodeKind::Switch; (tors + spines) as usize]].concat();
    let mut links = Vec::new();
    let mut both = |a: u32, b: u32| {
        for (s, d) in [(a, b), (b, a)] {
            links.push(Link { src: s, dst: d, bandwidth: 1.0, latency_ns: 0.0, error_rate: 0.0 });
        }
    };
    for g in 0..gpus {
        both(g, gpus + g % tors);
    }
    for t in 0..tors {
        for s in 0..spines {
            both(gpus + t, gpus + tors + s);
        }
    }
    let mut t = Platform::from_parts("t", kinds, links, 1, "H100").unwrap();
    t.routing = routing;
    t
}

fn network(t: Platform, qps: u32, seed: u64) -> FlowNetwork {
    FlowNetwork::tuned(t, &Tuning { channels: 1, qps, seed, ..Tuning::default() }, |s| s).unwrap()
}

/// The flows of one connection from `a` to `b`.
fn connection(net: &mut FlowNetwork, a: u32, b: u32, bytes: f64) -> Vec<(Rc<[u32]>, f64)> {
    let mut flows = Vec::new();
    net.flows_between(a, b, bytes, &mut flows).unwrap();
    flows
}

/// The spine (third node) of a GPU → ToR → spine → ToR → GPU path.
fn spine(t: &Platform, path: &[u32]) -> u32 {
    assert_eq!(path.len(), 4, "{path:?}");
    t.links[path[1] as usize].dst
}

/// Finish time (ns) of each connection (a, b, bytes), all started at 0 on an idle fabric.
fn finish(net: &mut FlowNetwork, conns: &[(u32, u32, f64)]) -> Vec<f64> {
    for (i, &(a, b, bytes)) in conns.iter().enumerate() {
        let flows = connection(net, a, b, bytes);
        let flows = flows.into_iter().map(|(p, b)| (p, b, f64::INFINITY)).collect();
        net.sim.add_batch(0.0, flows, 1, i as u64, super::Wait::Path { extra_ns: 0.0 });
    }
    let mut done = vec![f64::NAN; conns.len()];
    let mut finished = Vec::new();
    while let Some(t) = net.sim.step(&mut finished) {
        for (tag, _) in finished.drain(..) {
            done[tag as usize] = t;
        }
    }
    done
}

#[test]
fn queue_pairs_split_a_connection_evenly_and_hash_one_by_one() {
    let t = clos(2, 2, 8, Routing::Ecmp);
    let mut spread = false;
    for seed in 0..16 {
        let mut net = network(t.clone(), 4, seed);
        let flows = connection(&mut net, 0, 1, 8.0);
        assert_eq!(flows.len(), 4);
        assert!(flows.iter().all(|(_, b)| *b == 2.0), "{flows:?}");
        let spines: std::collections::BTreeSet<u32> = flows.iter().map(|(p, _)| spine(&t, p)).collect();
        spread |= spines.len() > 1;
    }
    // Each QP is hashed on its own: some seed puts the 4 QPs of one connection on two spines.
    assert!(spread);
    // One QP (NCCL's default): one flow with all the bytes.
    let flows = connection(&mut network(t.clone(), 0, 0), 0, 1, 8.0);
    assert_eq!((flows.len(), flows[0].1), (1, 8.0));
}

#[test]
fn spraying_on_two_spines_carries_exactly_half_per_path() {
    let t = clos(2, 2, 2, Routing::Spray);
    for qps in [1, 4] {
        let flows = connection(&mut network(t.clone(), qps, 0), 0, 1, 8.0);
        assert_eq!(flows.len(), 2);
        assert!(flows.iter().all(|(_, b)| *b == 4.0), "{flows:?}");
        assert_ne!(spine(&t, &flows[0].0), spine(&t, &flows[1].0));
    }
}

#[test]
fn a_forced_collision_halves_a_flow_rate_and_spraying_removes_it() {
    // GPUs 0, 2 on ToR 4 and 1, 3 on ToR 5; spines 6, 7. 0 → 1 and 2 → 3 meet only if ECMP
    // hashes both onto one spine: then each gets half the uplink, 2000 ns instead of 1000.
    let conns = [(0, 1, 1000.0), (2, 3, 1000.0)];
    let t = clos(4, 2, 2, Routing::Ecmp);
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..32 {
        let mut net = network(t.clone(), 1, seed);
        let spines: Vec<u32> =
            conns.iter().map(|&(a, b, _)| spine(&t, &connection(&mut net, a, b, 1.0)[0].0)).collect();
        let times = finish(&mut network(t.clone(), 1, seed), &conns);
        let want = if spines[0] == spines[1] { 2000.0 } else { 1000.0 };
        assert!(times.iter().all(|&x| (x - want).abs() < 1e-9), "seed {seed}: {times:?} vs {want}");
        seen.insert(want as u64);
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![1000, 2000]);
    // Sprayed, each uplink carries half of each flow: no collision, whatever the seed.
    for seed in 0..4 {
        let times = finish(&mut network(clos(4, 2, 2, Routing::Spray), 1, seed), &conns);
        assert!(times.iter().all(|&x| (x - 1000.0).abs() < 1e-9), "{times:?}");
    }
}

#[test]
fn channels_follow_the_group_ranks_per_server() {
    // A data-parallel group with one rank per server: one ring; a whole 8-GPU server: 8 (one
    // per NIC), never more than the NICs.
    let dp: Vec<u32> = (0..4).map(|s| 8 * s + 3).collect();
    let whole: Vec<u32> = (0..16).collect();
    let g = |ranks: &[u32]| group_channels(&GroupTopo::on_servers(ranks, 8, false), 8);
    assert_eq!((g(&dp), g(&whole)), (1, 8));
    assert_eq!(group_channels(&GroupTopo::on_servers(&whole, 8, false), 2), 2);
}
