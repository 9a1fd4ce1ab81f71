//! Coherent ring all-reduce (Li et al., "Performance Modeling and Optimization for Large-Scale
//! Heterogeneous Consistency Integrated Computing System", JCRD 2025, §3.3 and Fig. 12b).
//!
//! A ring all-reduce is a reduce-scatter (n − 1 steps) then an all-gather (n − 1 steps): 2(n − 1)
//! communications. The all-gather only copies each reduced shard into every XPU's own memory,
//! which a system whose XPU memories are isolated needs before the update. On a cache-coherent
//! system (a CXL fabric joining the XPUs, `hcsim-cxl`) every XPU can address every other's memory,
//! so it suffices that the reduced gradient exists somewhere in the coherent memory: the paper
//! keeps only the reduce-scatter, n − 1 communications, half the steps. Over c channels:
//!
//! ```text
//! all-reduce    n − 1 steps, every rank sends S/(n·c) per channel to its ring successor
//! α–β (one rank per server, bare schedule, per-step latency α, port bandwidth B):
//!               T = (n − 1) · (α + S/(n·B))       against the ring's 2(n − 1) · (α + S/(n·B))
//! ```
//!
//! How the in-place read is charged: not by the collective. The paper counts the coherent
//! all-reduce as its n − 1 communications (Table 6) and lets the consumer of the reduced
//! gradient (the optimizer update) load its shards through the coherent fabric as part of its own
//! memory access, a coherent vertex whose time is the slower of its compute and its remote reads
//! (Fig. 3c), so the read overlaps the consumer's work instead of being a separate transfer. The
//! schedule here is therefore the reduce-scatter alone, and the collective ends when it does; a
//! consumer that is bound by those remote reads is not slowed by them in this model.
//!
//! NCCL times it as its ring reduce-scatter: the ring's protocols and latency constants, n − 1
//! hops, and the ring's rules (an intra-server hop of a multi-server ring costs at least the
//! network post overhead). One rule goes beyond: NCCL's ×1.4 on the latency of a multi-server
//! Simple ring all-reduce applies too, the call being an all-reduce, so with Simple the
//! coherent ring's latency term is up to 1.4× its reduce-scatter's (conservative).
//!
//! It runs only when forced (`--algo coherent_ring` or `--algo all_reduce=coherent_ring`: the
//! all-reduces alone, every other collective as the rest of `--algo` says, [`Options::forced`])
//! and only on a coherent platform: where the run has one, [`check_platform`] refuses the name on
//! a platform whose XPUs share no CXL fabric.
//! On a bare group (the analytical model's servers) it runs as any forced schedule does.

use super::choose::Options;
use super::nccl::{Latency, Protocol, RING_LATENCY_US};
use super::registered;
use super::{ring, Algorithm, Call, CollectiveAlgorithm, GroupTopo, Phase, Request, Servers};
use crate::error::{InputError, Result};
use crate::platform::{NodeKind, Platform};
use crate::workload::Collective;

registered! {
    /// All-reduce as the reduce-scatter half of a ring; the shards are read in place.
    CoherentRing as COHERENT_RING: "coherent_ring", [Collective::AllReduce]
}

impl CollectiveAlgorithm for CoherentRing {
    fn unsupported(&self, c: Collective, _g: &GroupTopo, _s: &Servers) -> Option<String> {
        (c != Collective::AllReduce)
            .then(|| "it is an all-reduce (the reduce-scatter half of a ring, read in place)".into())
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        // S is the per-rank buffer: the reduce-scatter of the whole buffer, n − 1 steps of S/(n·c).
        ring::ring(Collective::ReduceScatter, r.servers, r.bytes, r.channels, r.grain)
    }

    /// NCCL's ring protocols and their latency constants.
    fn protocols(&self) -> Vec<(Protocol, Latency)> {
        Protocol::ALL.into_iter().zip(RING_LATENCY_US).collect()
    }

    /// The reduce-scatter's hops: n − 1, N − 1 of them across servers.
    fn hops(&self, call: &Call) -> (u32, u32) {
        ring::ring_hops(Collective::ReduceScatter, call.group.size(), call.servers.members.len() as u32)
    }

    /// NCCL's ring rules (module doc).
    fn ring_latency(&self) -> bool {
        true
    }
}

/// Whether `platform` is cache-coherent: every XPU that runs a rank is linked to a CXL switch
/// (the CXL fabric of HCSim's Fig. 6b), so the XPUs can address each other's memory.
pub fn is_coherent(platform: &Platform) -> bool {
    let p = &platform.placement;
    (0..p.ranks()).all(|r| {
        platform
            .out_links(p.device(r))
            .iter()
            .any(|&l| platform.kinds[platform.links[l as usize].dst as usize] == NodeKind::CxlSwitch)
    })
}

/// Refuse the coherent ring (when `options` force it on any kind) on a platform that is not
/// coherent; `source` names the platform.
pub fn check_platform(options: &Options, platform: &Platform, source: &str) -> Result<()> {
    if options.forced_algorithms().any(|a| a == Algorithm::COHERENT_RING) && !is_coherent(platform) {
        return Err(InputError::field(
            source,
            "algorithm",
            "coherent_ring needs a cache-coherent platform (every XPU on a CXL switch, as hcsim-cxl); this one is not",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::schedule;
    use crate::executor::Executor;
    use crate::network::agreement::run_both_nvls;
    use crate::network::flow::network::{FlowNetwork, Tuning};
    use crate::platform::hcsim::HcsimParams;
    use crate::workload::sweep::sweep_workload;

    /// (analytical, flow) ns of one all-reduce of `bytes` on n ranks, one per server on a
    /// non-blocking switch (50 GB/s NICs, no link latency), every step waiting `alpha_us`.
    fn crossbar(algorithm: Algorithm, n: u32, bytes: u64, alpha_us: f64) -> (f64, f64) {
        let options = Options { algorithm: Some(algorithm), send_lat_us: Some(alpha_us), ..Options::default() };
        run_both_nvls(&sweep_workload(Collective::AllReduce, n, &[bytes]), n, 1, options, false)
    }

    #[test]
    fn equals_its_alpha_beta_formula_on_a_crossbar_on_both_backends() {
        let b = 50.0; // GB/s = bytes/ns: the agreement fabric's NIC
        for n in [2u32, 3, 8, 64] {
            for (bytes, alpha_us) in [(64u64 << 20, 0.0), (64 << 20, 5.0), (4096, 2.0)] {
                let want = (n - 1) as f64 * (alpha_us * 1e3 + bytes as f64 / (n as f64 * b));
                let (a, f) = crossbar(Algorithm::COHERENT_RING, n, bytes, alpha_us);
                assert!((a - want).abs() <= 1e-9 * want, "analytical n={n} S={bytes}: {a} vs {want}");
                assert!((f - want).abs() <= 1e-9 * want, "flow n={n} S={bytes}: {f} vs {want}");
                // The ring pays both halves: exactly twice as long here.
                let (ra, rf) = crossbar(Algorithm::RING, n, bytes, alpha_us);
                assert!((ra - 2.0 * want).abs() <= 1e-9 * want && (rf - 2.0 * want).abs() <= 1e-9 * want, "{ra} {rf}");
            }
        }
    }

    #[test]
    fn it_is_the_reduce_scatter_half_of_the_ring() {
        let ranks: Vec<u32> = (0..16).collect();
        let g = GroupTopo::on_servers(&ranks, 8, false);
        let s = 1u64 << 24;
        let coherent = schedule(Collective::AllReduce, Algorithm::COHERENT_RING, &g, s, 2).unwrap();
        let ring = schedule(Collective::AllReduce, Algorithm::RING, &g, s, 2).unwrap();
        let rs = schedule(Collective::ReduceScatter, Algorithm::RING, &g, s, 2).unwrap();
        assert_eq!(coherent.phases, rs.phases);
        assert_eq!((coherent.phases[0].repeat, ring.phases[0].repeat), (15, 30));
        assert_eq!(coherent.phases[0].transfers, ring.phases[0].transfers);
        assert_eq!(2.0 * coherent.total_bytes(), ring.total_bytes());
        let e = schedule(Collective::AllGather, Algorithm::COHERENT_RING, &g, s, 1).unwrap_err();
        assert!(e.message.contains("coherent_ring cannot run allgather"), "{e}");
        assert_eq!(Algorithm::parse("coherent-ring").unwrap(), Algorithm::COHERENT_RING);
    }

    /// Flow-model ns of one `c` of `bytes` on every XPU of `platform` with `algorithm` and
    /// NCCL's timing (`protocol`, or its choice).
    fn on_platform(
        platform: Platform,
        algorithm: Algorithm,
        c: Collective,
        bytes: u64,
        protocol: Option<Protocol>,
    ) -> f64 {
        let n = platform.placement.ranks();
        let options = Options { algorithm: Some(algorithm), protocol, ..Options::default() };
        let mut flow = FlowNetwork::tuned(platform, &Tuning { options, ..Tuning::default() }, |s| s).unwrap();
        let w = sweep_workload(c, n, &[bytes]);
        Executor::new(&w).unwrap().run(&mut flow, &mut |_| true).unwrap().end_ns
    }

    #[test]
    fn beats_the_ring_on_a_coherent_system_and_is_refused_on_a_non_coherent_one() {
        let cxl = Platform::hcsim("hcsim-cxl", &HcsimParams::paper(true, "H100", 32)).unwrap();
        let pcie = Platform::hcsim("hcsim-pcie", &HcsimParams::paper(false, "H100", 32)).unwrap();
        assert!(is_coherent(&cxl) && !is_coherent(&pcie));
        let forcing = |a: Algorithm| Options { algorithm: Some(a), ..Options::default() };
        check_platform(&forcing(Algorithm::COHERENT_RING), &cxl, "hcsim-cxl").unwrap();
        check_platform(&forcing(Algorithm::RING), &pcie, "hcsim-pcie").unwrap();
        let e = check_platform(&forcing(Algorithm::COHERENT_RING), &pcie, "hcsim-pcie").unwrap_err();
        // Named for all-reduces only, it is refused all the same.
        let per_kind = Options {
            per_collective: vec![(Collective::AllReduce, Some(Algorithm::COHERENT_RING))],
            ..forcing(Algorithm::RING)
        };
        assert_eq!(check_platform(&per_kind, &pcie, "hcsim-pcie").unwrap_err(), e);
        assert_eq!(e.to_string().lines().count(), 1);
        assert!(
            e.to_string().starts_with("hcsim-pcie: algorithm: coherent_ring needs a cache-coherent platform"),
            "{e}"
        );
        // 256 MiB over 32 XPUs on 4 servers: the bandwidth term dominates, so the coherent ring
        // takes about half the ring's time (the same hops, half the steps).
        let s = 256u64 << 20;
        let ring = on_platform(cxl.clone(), Algorithm::RING, Collective::AllReduce, s, None);
        let coherent = on_platform(cxl.clone(), Algorithm::COHERENT_RING, Collective::AllReduce, s, None);
        let ratio = coherent / ring;
        assert!((0.45..0.55).contains(&ratio), "coherent {coherent} ns vs ring {ring} ns: {ratio}");
        // NCCL times it as its ring reduce-scatter of the same S (with LL and LL128; Simple adds ×1.4).
        for (p, s) in [(Protocol::LL, 1u64 << 20), (Protocol::LL128, s)] {
            let rs = on_platform(cxl.clone(), Algorithm::RING, Collective::ReduceScatter, s, Some(p));
            let coherent = on_platform(cxl.clone(), Algorithm::COHERENT_RING, Collective::AllReduce, s, Some(p));
            assert!((coherent - rs).abs() <= 1e-12 * rs, "{p:?}: {coherent} vs {rs}");
        }
    }
}
