//! Which algorithm and protocol run a collective: NCCL's tuning model.
//!
//! For every candidate algorithm a and protocol p, the time is the schedule's price with NCCL's
//! timing ([`super::nccl`]: per-call latency, protocol and algorithm efficiency) by
//! [`super::cost::schedule_ns`], the same price the analytical model charges and, on a
//! non-blocking fabric, the time the flow model takes. The smallest wins, as NCCL picks the
//! (algorithm, protocol) of least predicted time per call.
//!
//! The options mirror NCCL's and SimAI's environment variables (shared/reference/formats.md §7):
//! `NCCL_ALGO` / `NCCL_PROTO` force an algorithm / protocol; `AS_SEND_LAT` (µs every transfer
//! step waits before it starts) replaces NCCL's latency model; `AS_NVLS_ENABLE`,
//! `AS_PXN_ENABLE` and `AS_NVLSTREE_ENABLE` (each default off, as in SimAI). Candidates are the
//! algorithms that can run the collective and say they are offered
//! ([`super::CollectiveAlgorithm::offered`]): NCCL's own, ring, tree, direct (all-to-all), NVLS
//! and NVLS tree when enabled, PXN when enabled and the group spans servers, and PXN in place of
//! direct for all-to-all between servers under `NCCL_P2P_PXN_LEVEL=2`. Halving-doubling and
//! hierarchical run only when forced.
//!
//! `--algo auto+extra` ([`AUTO_EXTRA`], [`Options::extra`]) widens the candidates beyond NCCL's:
//! algorithms NCCL does not have (the MSCCL++ all-pairs family, [`super::all_pairs`]) offer
//! themselves too, and the least predicted time still wins. Plain `auto` is NCCL's tuner alone.
//!
//! [`Options::all_reduce`] sends every all-reduce across servers to one algorithm built from the
//! platform (reduction servers, CollNet), while every other collective keeps the forced algorithm
//! or the tuner's choice: the way a job runs with NCCL's CollNet plugin or a reduction server.

use super::cost::{timed_ns, Links};
use super::nccl::{call_latency_ns, Protocol, Timing};
use super::{schedule, schedule_grained, valid_algorithms, Algorithm, Call, Grain, GroupTopo, Schedule};
use crate::error::InputError;
use crate::workload::Collective;

/// How to choose; `Default` is NCCL's defaults (its latencies; point-to-point PXN on) with
/// SimAI's AS_* switches off (NVLS / PXN / NVLS tree as tuner candidates).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// `AS_SEND_LAT`, µs per transfer step; None: NCCL's latency model.
    pub send_lat_us: Option<f64>,
    /// `AS_NVLS_ENABLE`.
    pub nvls_enable: bool,
    /// `AS_PXN_ENABLE`.
    pub pxn_enable: bool,
    /// `AS_NVLSTREE_ENABLE`.
    pub nvlstree_enable: bool,
    /// `NCCL_ALGO`: run this algorithm whatever the prediction (it must be able to run the collective).
    pub algorithm: Option<Algorithm>,
    /// `NCCL_PROTO`: run this protocol (the algorithm must support it).
    pub protocol: Option<Protocol>,
    /// `NCCL_P2P_PXN_LEVEL` = 2, NCCL's default since 2.12: point-to-point traffic between
    /// servers (all-to-all, which NCCL builds from sends and receives) always leaves through the
    /// source server's GPU on the destination's rail; 0 or 1 (false): sends go direct.
    pub p2p_pxn: bool,
    /// `--algo auto+extra`: algorithms beyond NCCL's that offer themselves when asked are
    /// candidates too; false (plain `auto`): NCCL's tuner as it is.
    pub extra: bool,
    /// The algorithm of every all-reduce across servers (reduction servers, CollNet: built from
    /// the platform, [`super::on_platform`]), whatever `algorithm` says; every other collective,
    /// and an all-reduce inside one server, keeps `algorithm` or the tuner's choice.
    pub all_reduce: Option<Algorithm>,
}

impl Options {
    /// The algorithm forced on `c` on `g`: [`Options::all_reduce`] for an all-reduce across
    /// servers (NCCL runs CollNet only on communicators spanning nodes, and NVLink inside a
    /// server is faster than any NIC to a reduction server), else [`Options::algorithm`].
    pub fn forced(&self, c: Collective, g: &GroupTopo) -> Option<Algorithm> {
        match self.all_reduce {
            Some(a) if c == Collective::AllReduce && g.servers().members.len() > 1 => Some(a),
            _ => self.algorithm,
        }
    }
}

/// `--algo` (and NCCL_ALGO) for NCCL's tuner widened to the algorithms beyond NCCL ([`Options::extra`]).
pub const AUTO_EXTRA: &str = "auto+extra";

/// The tuner's (forced algorithm, extra) for `--algo`: "auto" is NCCL's tuner (None, false),
/// [`AUTO_EXTRA`] the tuner with the extra candidates (None, true), else a name for
/// [`Algorithm::parse`] (forced). Case-insensitive.
pub fn algorithm_choice(algo: &str) -> Result<(Option<Algorithm>, bool), InputError> {
    let key = algo.trim();
    if key.eq_ignore_ascii_case("auto") {
        return Ok((None, false));
    }
    if key.eq_ignore_ascii_case(AUTO_EXTRA) {
        return Ok((None, true));
    }
    Algorithm::parse(key).map(|a| (Some(a), false)).map_err(|mut e| {
        // An unknown name lists the valid ones: add the tuner's choices (a bad MSCCL file's
        // error stays as it is).
        if e.message.contains("(valid: ") {
            let names = e.message.trim_end_matches(')').replace("(valid: ", "(valid: auto, ");
            e.message = format!("{names}, {AUTO_EXTRA})");
        }
        e
    })
}

impl Default for Options {
    fn default() -> Options {
        Options {
            send_lat_us: None,
            nvls_enable: false,
            pxn_enable: false,
            nvlstree_enable: false,
            algorithm: None,
            protocol: None,
            p2p_pxn: true,
            extra: false,
            all_reduce: None,
        }
    }
}

/// The chosen algorithm and protocol, the predicted time, and the schedule to run (its timing set).
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    pub predicted_ns: f64,
    pub schedule: Schedule,
}

/// The timings `algo` can run `c` of `bytes` on `g` over `channels` with: one per protocol
/// (NCCL), or AS_SEND_LAT's.
fn timings(
    c: Collective,
    algo: Algorithm,
    (g, bytes, channels): (&GroupTopo, u64, u32),
    s: &Schedule,
    links: &Links,
    opts: &Options,
) -> Result<Vec<Timing>, InputError> {
    if let Some(x) = opts.send_lat_us {
        return Ok(vec![Timing { step_latency_ns: Some(x * 1e3), ..Timing::RAW }]);
    }
    let servers = g.servers();
    let nodes = servers.members.len() as u32;
    let call = Call { collective: c, group: g, servers, bytes, channels, schedule: s };
    let h = algo.hops(&call);
    let efficiency = algo.efficiency(&call, links)?;
    Ok(algo
        .protocols()
        .into_iter()
        .filter(|(p, _)| opts.protocol.is_none_or(|want| want == *p))
        .map(|(p, lat)| Timing {
            protocol: p,
            efficiency: p.efficiency() * efficiency,
            call_latency_ns: call_latency_ns(c, algo, p, lat, h, nodes, (links.alpha_nvlink_ns, links.alpha_net_ns)),
            step_latency_ns: None,
        })
        .collect())
}

/// Choose how to run collective `c` of S = `bytes` on `g` with `channels` channels, on links of
/// the given bandwidths and physical latencies.
pub fn choose(
    c: Collective,
    g: &GroupTopo,
    bytes: u64,
    channels: u32,
    links: &Links,
    opts: &Options,
) -> Result<Choice, InputError> {
    if let Some(x) = opts.send_lat_us {
        if !(x >= 0.0 && x.is_finite()) {
            return Err(super::err("send_lat_us", format!("AS_SEND_LAT must be a non-negative number of µs, got {x}")));
        }
    }
    let forced = opts.forced(c, g);
    let candidates: Vec<Algorithm> = match forced {
        Some(a) => vec![a],
        None => {
            let servers = g.servers();
            valid_algorithms(c, g).into_iter().filter(|a| a.offered(c, g, servers, opts)).collect()
        }
    };
    let mut best: Option<(Algorithm, Timing, f64, Schedule)> = None;
    for algo in candidates {
        let steps = schedule(c, algo, g, bytes, channels)?;
        // LL and LL128 pipeline at the grain of their lines (only NCCL's timing has protocols);
        // that schedule is built only when such a protocol is weighed.
        let mut lines: Option<Schedule> = None;
        // The best protocol of this algorithm, if it beats every earlier algorithm: its timing,
        // time, and whether it runs on `lines`.
        let mut won: Option<(Timing, f64, bool)> = None;
        for timing in timings(c, algo, (g, bytes, channels), &steps, links, opts)? {
            let on_lines = timing.step_latency_ns.is_none() && timing.protocol != Protocol::Simple;
            let s = if on_lines {
                if lines.is_none() {
                    lines = Some(schedule_grained(c, algo, g, bytes, channels, Grain::Lines)?);
                }
                lines.as_ref().expect("built above")
            } else {
                &steps
            };
            let t = timed_ns(s, &timing, g, links)?;
            let to_beat = won.as_ref().map(|w| w.1).or(best.as_ref().map(|b| b.2));
            if to_beat.is_none_or(|b| t < b) {
                won = Some((timing, t, on_lines));
            }
        }
        if let Some((timing, t, on_lines)) = won {
            let s = if on_lines { lines.expect("priced on it") } else { steps };
            best = Some((algo, timing, t, s));
        }
    }
    let Some((algorithm, timing, predicted_ns, schedule)) = best else {
        let valid: Vec<&str> = valid_algorithms(c, g).iter().map(|a| a.name()).collect();
        let forced = match (forced, opts.protocol) {
            (Some(a), Some(p)) => format!("; {} does not run {}", a.name(), p.name()),
            _ => String::new(),
        };
        return Err(super::err(
            "algorithm",
            format!(
                "no enabled algorithm runs {} on {} ranks (valid here: {}; force one or enable NVLS / PXN){forced}",
                c.name(),
                g.size(),
                valid.join(", ")
            ),
        ));
    };
    Ok(Choice { algorithm, protocol: timing.protocol, predicted_ns, schedule: Schedule { timing, ..schedule } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Collective::*;

    /// H100-like: NVLink 370.8 GB/s, one 400 Gb/s NIC per GPU at 48.5 GB/s.
    const LINKS: Links =
        Links { nvlink_gbps: 370.8, nic_gbps: 48.5, alpha_nvlink_ns: 0.0, alpha_net_ns: 0.0, arch: None };

    fn pick(c: Collective, ranks: &[u32], bytes: u64, opts: &Options) -> Choice {
        let g = GroupTopo::on_servers(ranks, 8, true);
        choose(c, &g, bytes, 8, &LINKS, opts).unwrap()
    }

    #[test]
    fn nvls_wins_large_all_reduce_in_an_nvswitch_server_only_when_enabled() {
        let server: Vec<u32> = (0..8).collect();
        let on = Options { nvls_enable: true, ..Options::default() };
        let big = pick(AllReduce, &server, 1 << 30, &on);
        assert_eq!((big.algorithm, big.protocol), (Algorithm::NVLS, Protocol::Simple));
        let off = pick(AllReduce, &server, 1 << 30, &Options::default());
        assert!([Algorithm::RING, Algorithm::TREE].contains(&off.algorithm), "{:?}", off.algorithm);
        // NVLS (≈ S/(0.8·B): NCCL's NVLS efficiency) is faster than the ring (≈ 1.75 S/B).
        assert!(big.predicted_ns < off.predicted_ns / 1.3);
        // 4 KiB: LL ring, 6.6 + 14 × 0.6 = 15 µs, beats NVLS's 25 µs.
        let small = pick(AllReduce, &server, 4096, &on);
        assert_eq!((small.algorithm, small.protocol), (Algorithm::RING, Protocol::LL));
        let want = 15.0e3 + 2.0 * 7.0 / 8.0 * 4096.0 / 370.8 / 0.5;
        assert!((small.predicted_ns - want).abs() < 1e-9 * want, "{} vs {want}", small.predicted_ns);
    }

    #[test]
    fn nvls_tree_and_pxn_only_when_enabled() {
        let two: Vec<u32> = (0..16).collect();
        let all = Options { nvls_enable: true, nvlstree_enable: true, pxn_enable: true, ..Options::default() };
        assert_eq!(pick(AllReduce, &two, 1 << 30, &all).algorithm, Algorithm::NVLS_TREE);
        let no_tree = Options { nvlstree_enable: false, ..all.clone() };
        let got = pick(AllReduce, &two, 1 << 30, &no_tree).algorithm;
        assert!([Algorithm::RING, Algorithm::TREE, Algorithm::PXN].contains(&got), "{got:?}");
        let direct_p2p = Options { p2p_pxn: false, ..Options::default() };
        for bytes in [1 << 10, 1 << 20, 1 << 30] {
            for c in [AllReduce, AllGather] {
                let got = pick(c, &two, bytes, &Options::default()).algorithm;
                assert!([Algorithm::RING, Algorithm::TREE].contains(&got), "{c:?} {bytes}: {got:?}");
            }
            // All-to-all between servers: PXN, NCCL's default, even where direct is predicted
            // faster (NCCL_P2P_PXN_LEVEL=2 does not weigh them); direct with level 0 or 1.
            assert_eq!(pick(AllToAll, &two, bytes, &Options::default()).algorithm, Algorithm::PXN);
            assert_eq!(pick(AllToAll, &two, bytes, &direct_p2p).algorithm, Algorithm::DIRECT);
            // Inside one server there is nothing to relay.
            assert_eq!(pick(AllToAll, &two[..8], bytes, &Options::default()).algorithm, Algorithm::DIRECT);
        }
    }

    #[test]
    fn forced_algorithms_run_or_say_why_not() {
        let two: Vec<u32> = (0..16).collect();
        let forced = Options { algorithm: Some(Algorithm::HIERARCHICAL), ..Options::default() };
        assert_eq!(pick(AllReduce, &two, 1 << 20, &forced).algorithm, Algorithm::HIERARCHICAL);
        let g = GroupTopo::on_servers(&two, 8, true);
        let nvls = Options { algorithm: Some(Algorithm::NVLS), ..Options::default() };
        let e = choose(AllReduce, &g, 1 << 20, 8, &LINKS, &nvls).unwrap_err();
        assert!(e.message.contains("inside one server"), "{e}");
    }

    #[test]
    fn an_all_reduce_algorithm_takes_only_the_all_reduces_across_servers() {
        // Halving-doubling stands for an algorithm built from the platform: never offered, so
        // wherever it runs, the all-reduce override put it there.
        let (two, one): (Vec<u32>, Vec<u32>) = ((0..16).collect(), (0..8).collect());
        let hd = Options { all_reduce: Some(Algorithm::HALVING_DOUBLING), ..Options::default() };
        let ring = Options { algorithm: Some(Algorithm::RING), ..hd.clone() };
        for bytes in [1 << 10, 1 << 30] {
            assert_eq!(pick(AllReduce, &two, bytes, &hd).algorithm, Algorithm::HALVING_DOUBLING);
            assert_eq!(pick(AllReduce, &two, bytes, &ring).algorithm, Algorithm::HALVING_DOUBLING);
            // Everything else is as without it: the tuner's choice, or the forced algorithm.
            for c in [AllGather, ReduceScatter, AllToAll, Broadcast] {
                assert_eq!(pick(c, &two, bytes, &hd), pick(c, &two, bytes, &Options::default()), "{c:?}");
            }
            for c in [AllGather, ReduceScatter, Broadcast] {
                assert_eq!(pick(c, &two, bytes, &ring).algorithm, Algorithm::RING, "{c:?}");
            }
            // An all-reduce inside one server stays on NVLink with NCCL's choice.
            assert_eq!(pick(AllReduce, &one, bytes, &hd), pick(AllReduce, &one, bytes, &Options::default()));
            assert_eq!(pick(AllReduce, &one, bytes, &ring).algorithm, Algorithm::RING);
        }
    }

    #[test]
    fn send_lat_replaces_the_latency_table_per_step() {
        // 8-rank ring all-reduce: 14 sequential steps × 10 µs, then the Simple-protocol bandwidth term.
        let server: Vec<u32> = (0..8).collect();
        let opts = Options { send_lat_us: Some(10.0), algorithm: Some(Algorithm::RING), ..Options::default() };
        let got = pick(AllReduce, &server, 1 << 30, &opts);
        let want = 14.0 * 10.0e3 + 2.0 * 7.0 / 8.0 * (1u64 << 30) as f64 / 370.8;
        assert!((got.predicted_ns - want).abs() < 1e-9 * want, "{} vs {want}", got.predicted_ns);
        let g = GroupTopo::on_servers(&server, 8, false);
        let bad = Options { send_lat_us: Some(-1.0), ..Options::default() };
        assert!(choose(AllReduce, &g, 1, 1, &LINKS, &bad).is_err());
    }
}
