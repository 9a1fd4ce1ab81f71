//! MSCCL++-style all-pairs algorithms: every rank reads or writes every peer's buffer directly,
//! in as few dependent steps as the collective allows (MSCCL++ `allgather_fullmesh`,
//! `allreduce_allpair_packet`, `allreduce_rsag`; shared/seeds/001, microsoft/mscclpp
//! src/ext/collectives at 1f5f065). On n ranks, per rank, with B its port rate:
//!
//! ```text
//! all_pairs  all-gather       one step: its shard S/n to each of the n−1 peers
//!                             T = lat + (n−1)·S/(n·B)
//!            reduce-scatter   one step: peer p's shard S/n to each peer p, reduced locally
//!                             T = lat + (n−1)·S/(n·B)
//! one_shot   all-reduce       one step: the whole buffer S to each peer, every rank reduces all
//!                             n copies itself: S·(n−1) in (and out) per rank
//!                             T = lat + (n−1)·S/B
//! two_shot   all-reduce       all-pairs reduce-scatter, then all-pairs all-gather of the
//!                             reduced shards: 2·S·(n−1)/n per rank
//!                             T = lat + 2·(n−1)·S/(n·B)
//! ```
//!
//! each port sending and receiving at once (ingress and egress carry the same bytes), B the
//! NVLink rate inside a server; all-pairs between servers puts (n−m)/n · S of the all-gather on
//! each NIC (m ranks per server), which is why NCCL's ring beats it there (the seed's note):
//! [`super::hier_all_pairs`] crosses once per rail instead. One-shot wins on latency (one step),
//! two-shot on bandwidth for n > 2; MSCCL++ runs both, as here, inside one server only.
//!
//! Timing: MSCCL++'s own step costs ([`MSCCLPP_LATENCY_US`]) with packets (LL: half of every
//! packet is flags, efficiency 0.5) or put/get with a signal (Simple), one latency hop per
//! dependent step. NCCL has none of these: the tuner weighs them under `--algo auto+extra`
//! ([`Options::extra`]) only. Being registered, they are among the algorithms whose analytical
//! and flow times network/agreement.rs checks against each other.

use super::choose::Options;
use super::nccl::{Latency, Protocol};
use super::{send, Algorithm, CollectiveAlgorithm, GroupTopo, Phase, Request, Servers, Transfer, DIRECT_MAX_RANKS};
use crate::collective::Identity;
use crate::workload::Collective;

/// MSCCL++'s cost of one dependent step, µs, as (base, NVLink hop, network hop) per protocol.
/// Source: MSCCL++'s own tutorials (microsoft/mscclpp docs/tutorials/03-memory-channel.md and
/// 04-port-channel.md at 1f5f065), 1 KB exchanged both ways between two GPUs, one kernel per
/// iteration: 4.07 µs with packets (`putPackets`, LL), 6.51 µs with put + signal + wait
/// (Simple), 20.49 µs through a port channel (the host proxy that also drives InfiniBand). Each
/// figure is a whole one-step kernel, so there is no separate base: a one-step collective costs
/// one hop, and every further dependent step one more.
pub const MSCCLPP_LATENCY_US: [(Protocol, Latency); 2] =
    [(Protocol::LL, (0.0, 4.07, 20.49)), (Protocol::Simple, (0.0, 6.51, 20.49))];

/// MSCCL++'s all-pairs algorithms: one exchange among all ranks, in three shapes.
pub enum AllPairs {
    /// All-pairs all-gather and reduce-scatter, on any group.
    Gather,
    /// One-shot all-reduce inside one server: every rank reads every peer's whole buffer.
    OneShot,
    /// Two-shot all-reduce inside one server: all-pairs reduce-scatter, then all-pairs all-gather.
    TwoShot,
}

impl Algorithm {
    pub const ALL_PAIRS: Algorithm = Algorithm::new(&AllPairs::Gather);
    pub const ONE_SHOT: Algorithm = Algorithm::new(&AllPairs::OneShot);
    pub const TWO_SHOT: Algorithm = Algorithm::new(&AllPairs::TwoShot);
}

/// Every member of `ranks` sends `bytes` to every other member, at once.
pub(super) fn exchange(ranks: &[u32], bytes: f64) -> Vec<Transfer> {
    let mut transfers = Vec::with_capacity(ranks.len() * ranks.len().saturating_sub(1));
    for &a in ranks {
        transfers.extend(ranks.iter().filter(|&&b| b != a).map(|&b| send(a, b, bytes)));
    }
    transfers
}

/// One phase of [`exchange`] among all n ranks of the group.
fn everyone(n: u32, bytes: f64) -> Phase {
    let ranks: Vec<u32> = (0..n).collect();
    Phase { transfers: exchange(&ranks, bytes), repeat: 1 }
}

/// Why the n(n−1) transfers of an all-pairs step are too many, if they are.
pub(super) fn too_many(n: u32) -> Option<String> {
    (n > DIRECT_MAX_RANKS)
        .then(|| format!("{n} ranks needs n(n−1) transfers; all-pairs is limited to {DIRECT_MAX_RANKS} ranks"))
}

/// Why a single-server all-reduce (one-shot, two-shot) cannot run `c` on `s`, or None.
fn in_one_server(name: &str, c: Collective, g: &GroupTopo, s: &Servers) -> Option<String> {
    let nodes = s.members.len();
    if c != Collective::AllReduce {
        Some(format!("{name} is an all-reduce"))
    } else if nodes > 1 {
        Some(format!("{name} runs inside one server (peers' buffers over NVLink) and the group spans {nodes}"))
    } else {
        too_many(g.size())
    }
}

impl Identity for AllPairs {
    fn name(&self) -> &'static str {
        match self {
            AllPairs::Gather => "all_pairs",
            AllPairs::OneShot => "one_shot",
            AllPairs::TwoShot => "two_shot",
        }
    }

    fn collectives(&self) -> &[Collective] {
        match self {
            AllPairs::Gather => &[Collective::AllGather, Collective::ReduceScatter],
            AllPairs::OneShot | AllPairs::TwoShot => &[Collective::AllReduce],
        }
    }
}

impl CollectiveAlgorithm for AllPairs {
    fn unsupported(&self, c: Collective, g: &GroupTopo, s: &Servers) -> Option<String> {
        match self {
            AllPairs::Gather if !matches!(c, Collective::AllGather | Collective::ReduceScatter) => {
                Some("all_pairs gathers and scatters; its all-reduces are one_shot and two_shot".into())
            }
            AllPairs::Gather => too_many(g.size()),
            AllPairs::OneShot | AllPairs::TwoShot => in_one_server(self.name(), c, g, s),
        }
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        let n = r.group.size();
        let shard = r.bytes / n as f64;
        match self {
            AllPairs::Gather => vec![everyone(n, shard)],
            AllPairs::OneShot => vec![everyone(n, r.bytes)],
            AllPairs::TwoShot => vec![everyone(n, shard), everyone(n, shard)],
        }
    }

    fn offered(&self, _c: Collective, _g: &GroupTopo, _s: &Servers, opts: &Options) -> bool {
        opts.extra
    }

    fn protocols(&self) -> Vec<(Protocol, Latency)> {
        MSCCLPP_LATENCY_US.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::choose::{choose, Choice};
    use crate::collective::cost::{schedule_ns, Links};
    use crate::collective::schedule;
    use Collective::*;

    const LINKS: Links =
        Links { nvlink_gbps: 300.0, nic_gbps: 50.0, alpha_nvlink_ns: 700.0, alpha_net_ns: 3000.0, arch: None };
    const S: u64 = 1 << 30;

    /// Bare price (each step its path latency, payload at link rate) of `c` with `a` on `ranks`.
    fn price(c: Collective, a: Algorithm, ranks: &[u32], gps: u32, bytes: u64) -> f64 {
        let g = GroupTopo::on_servers(ranks, gps, false);
        schedule_ns(&schedule(c, a, &g, bytes, 8).unwrap(), &g, &LINKS).unwrap()
    }

    fn close(got: f64, want: f64) {
        assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    }

    #[test]
    fn closed_forms_on_an_nvswitch_crossbar() {
        // One server of n on its NVSwitch: every rank's port carries the same bytes in and out.
        let s = S as f64;
        for n in [2u32, 8] {
            let ranks: Vec<u32> = (0..n).collect();
            let (k, b) = ((n - 1) as f64, LINKS.nvlink_gbps);
            // One-shot: S to each of n−1 peers, in one step. Two-shot: two steps of S/n to each.
            close(price(AllReduce, Algorithm::ONE_SHOT, &ranks, 8, S), 700.0 + k * s / b);
            close(price(AllReduce, Algorithm::TWO_SHOT, &ranks, 8, S), 2.0 * (700.0 + k * s / n as f64 / b));
            // All-gather and reduce-scatter: one step of S/n to each peer.
            for c in [AllGather, ReduceScatter] {
                close(price(c, Algorithm::ALL_PAIRS, &ranks, 8, S), 700.0 + k * s / n as f64 / b);
            }
        }
        // Two servers of 8: 8 of a rank's 15 shards of S/16 leave on its NIC, 7 stay on NVLink.
        let ranks: Vec<u32> = (0..16).collect();
        let want = 3000.0 + (8.0 * s / 16.0 / 50.0).max(7.0 * s / 16.0 / 300.0);
        close(price(AllGather, Algorithm::ALL_PAIRS, &ranks, 8, S), want);
    }

    fn forced(c: Collective, a: Algorithm, p: Option<Protocol>, ranks: &[u32], bytes: u64, links: &Links) -> Choice {
        let g = GroupTopo::on_servers(ranks, 8, false);
        let opts = Options { algorithm: Some(a), protocol: p, ..Options::default() };
        choose(c, &g, bytes, 8, links, &opts).unwrap()
    }

    #[test]
    fn mscclpp_timing_is_one_measured_step_per_dependent_step() {
        // 8 ranks on NVLink: one-shot pays one hop (MSCCL++'s 6.51 µs with Simple, 4.07 µs with
        // packets at half the rate) plus the path; two-shot two.
        let ranks: Vec<u32> = (0..8).collect();
        let s = S as f64;
        let one = forced(AllReduce, Algorithm::ONE_SHOT, Some(Protocol::Simple), &ranks, S, &LINKS);
        close(one.predicted_ns, 7210.0 + 7.0 * s / 300.0);
        let one = forced(AllReduce, Algorithm::ONE_SHOT, Some(Protocol::LL), &ranks, S, &LINKS);
        close(one.predicted_ns, 4770.0 + 7.0 * s / 300.0 / 0.5);
        let two = forced(AllReduce, Algorithm::TWO_SHOT, Some(Protocol::Simple), &ranks, S, &LINKS);
        close(two.predicted_ns, 2.0 * 7210.0 + 2.0 * 7.0 / 8.0 * s / 300.0);
        // Across two servers the all-gather's one step crosses the network: the proxy's 20.49 µs
        // and the network path, which Simple pays twice (NCCL's composition).
        let ranks: Vec<u32> = (0..16).collect();
        let ag = forced(AllGather, Algorithm::ALL_PAIRS, Some(Protocol::Simple), &ranks, S, &LINKS);
        close(ag.predicted_ns, 26490.0 + 8.0 * s / 16.0 / 50.0);
    }

    #[test]
    fn across_servers_the_ring_all_gather_beats_all_pairs() {
        // NDv4: 2 servers × 8 A100 (NCCL's 240 GB/s NVLink), one 200 Gb/s HDR NIC per GPU. All-pairs
        // puts half the buffer on every NIC; NCCL's 8 rings cross each NIC with 15/128 of it.
        let ndv4 = Links { nvlink_gbps: 240.0, nic_gbps: 25.0, alpha_nvlink_ns: 0.0, alpha_net_ns: 0.0, arch: None };
        let ranks: Vec<u32> = (0..16).collect();
        for bytes in [1u64 << 30, 4 << 30] {
            let ring = forced(AllGather, Algorithm::RING, None, &ranks, bytes, &ndv4).predicted_ns;
            let all_pairs = forced(AllGather, Algorithm::ALL_PAIRS, None, &ranks, bytes, &ndv4).predicted_ns;
            assert!(ring * 4.0 < all_pairs, "ring {ring} ns, all-pairs {all_pairs} ns");
            // Crossing once per rail, the hierarchical all-pairs all-gather does better than both.
            let hier = forced(AllGather, Algorithm::HIER_ALL_PAIRS, None, &ranks, bytes, &ndv4).predicted_ns;
            assert!(hier < ring, "hierarchical {hier} ns, ring {ring} ns");
        }
        // Inside one server they move the same bytes and all-pairs takes one step, not seven.
        let ring = forced(AllGather, Algorithm::RING, None, &ranks[..8], 1 << 10, &ndv4).predicted_ns;
        let all_pairs = forced(AllGather, Algorithm::ALL_PAIRS, None, &ranks[..8], 1 << 10, &ndv4).predicted_ns;
        assert!(all_pairs < ring, "all-pairs {all_pairs} ns, ring {ring} ns");
    }

    #[test]
    fn the_tuner_weighs_them_only_when_asked() {
        let ranks: Vec<u32> = (0..8).collect();
        let g = GroupTopo::on_servers(&ranks, 8, false);
        let extra = Options { extra: true, ..Options::default() };
        for (bytes, want) in
            [(1u64 << 10, (Algorithm::ONE_SHOT, Protocol::LL)), (S, (Algorithm::TWO_SHOT, Protocol::Simple))]
        {
            let nccl = choose(AllReduce, &g, bytes, 8, &LINKS, &Options::default()).unwrap();
            assert!([Algorithm::RING, Algorithm::TREE].contains(&nccl.algorithm), "{:?}", nccl.algorithm);
            let wider = choose(AllReduce, &g, bytes, 8, &LINKS, &extra).unwrap();
            assert_eq!((wider.algorithm, wider.protocol), want, "{bytes} B");
            assert!(wider.predicted_ns < nccl.predicted_ns);
        }
        // All-to-all has no all-pairs variant here: NCCL's choice stands.
        let a2a = choose(AllToAll, &g, S, 8, &LINKS, &extra).unwrap();
        assert_eq!(a2a.algorithm, Algorithm::DIRECT);
    }

    #[test]
    fn what_they_cannot_run_says_why() {
        let ranks: Vec<u32> = (0..16).collect();
        let g = GroupTopo::on_servers(&ranks, 8, false);
        let e = schedule(AllReduce, Algorithm::ONE_SHOT, &g, 1 << 20, 1).unwrap_err();
        assert!(e.message.contains("inside one server") && e.message.contains("spans 2"), "{e}");
        let e = schedule(AllGather, Algorithm::TWO_SHOT, &g, 1 << 20, 1).unwrap_err();
        assert!(e.message.contains("is an all-reduce"), "{e}");
        let e = schedule(AllReduce, Algorithm::ALL_PAIRS, &g, 1 << 20, 1).unwrap_err();
        assert!(e.message.contains("one_shot and two_shot"), "{e}");
        assert_eq!(Algorithm::parse("One-Shot").unwrap(), Algorithm::ONE_SHOT);
        let big: Vec<u32> = (0..DIRECT_MAX_RANKS + 1).collect();
        let e = schedule(AllGather, Algorithm::ALL_PAIRS, &GroupTopo::on_servers(&big, 8, false), 64, 1).unwrap_err();
        assert!(e.message.contains("limited to"), "{e}");
    }
}
