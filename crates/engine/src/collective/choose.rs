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
//! `--algo` picks per kind of collective ([`AlgoSpec`]): a bare NAME forces every collective
//! (NCCL_ALGO), `KIND=NAME` items one kind each (`all_reduce=coherent_ring,all_gather=ring`), and
//! both mix (`ring,all_reduce=tree`: the tree for all-reduces, the ring for the rest). An
//! algorithm defined for one kind only (the coherent ring, the tree, one-shot, an MSCCL program)
//! forces that kind alone when named bare, so `--algo coherent_ring` leaves the all-gathers and
//! reduce-scatters of a job to the tuner ([`Options::forced`]).
//!
//! [`Options::all_reduce`] sends every all-reduce across servers to one algorithm built from the
//! platform (reduction servers, CollNet), while every other collective keeps the forced algorithm
//! or the tuner's choice: the way a job runs with NCCL's CollNet plugin or a reduction server.

use super::cost::{timed_ns, Links};
use super::nccl::{call_latency, Protocol, StepLatency, Timing};
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
    /// `NCCL_ALGO`: run this algorithm whatever the prediction (it must be able to run the
    /// collective); one defined for a single kind forces that kind only ([`Options::forced`]).
    pub algorithm: Option<Algorithm>,
    /// `--algo KIND=NAME`: per kind, the algorithm forced on it (None: the tuner's choice),
    /// over `algorithm`.
    pub per_collective: Vec<(Collective, Option<Algorithm>)>,
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
    /// server is faster than any NIC to a reduction server), else [`Options::forced_kind`].
    pub fn forced(&self, c: Collective, g: &GroupTopo) -> Option<Algorithm> {
        match self.all_reduce {
            Some(a) if c == Collective::AllReduce && g.servers().members.len() > 1 => Some(a),
            _ => self.forced_kind(c),
        }
    }

    /// The algorithm forced on every `c`, wherever it runs: `c`'s own
    /// ([`Options::per_collective`]), else [`Options::algorithm`] unless that one is defined for
    /// another single kind (a bare `coherent_ring` forces the all-reduces alone).
    pub fn forced_kind(&self, c: Collective) -> Option<Algorithm> {
        if let Some(&(_, a)) = self.per_collective.iter().find(|(k, _)| *k == c) {
            return a;
        }
        self.algorithm.filter(|a| !matches!(a.collectives(), [only] if *only != c))
    }

    /// Every algorithm forced on some kind.
    pub fn forced_algorithms(&self) -> impl Iterator<Item = Algorithm> + '_ {
        self.algorithm.into_iter().chain(self.per_collective.iter().filter_map(|(_, a)| *a))
    }
}

/// `--algo` split into its items: NAME, for every collective, and KIND=NAME, for one kind
/// (KIND as `clustersim collective` names it: all_reduce, allgather, reduce-scatter, ...),
/// joined by commas, at most one bare NAME and one item per kind. The names are read by the
/// caller ([`algorithm_choice`], or the platform's algorithms in [`super::on_platform`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AlgoSpec<'a> {
    /// The bare NAME, with its item (for messages).
    pub every: Option<&'a str>,
    /// (kind, NAME, the item) in the order given.
    pub kinds: Vec<(Collective, &'a str, &'a str)>,
}

/// A one-line error about `item` of `--algo`.
pub fn algo_error(item: &str, message: impl std::fmt::Display) -> InputError {
    super::err("algorithm", format!("--algo item '{item}': {message}"))
}

/// `e`, about a name in `item`, said of the item; an error in a file the name reads (an MSCCL
/// program) keeps its file, line and field.
fn in_item(item: &str, e: InputError) -> InputError {
    if e.file == "collective" && e.line.is_none() {
        algo_error(item, e.message)
    } else {
        e
    }
}

impl<'a> AlgoSpec<'a> {
    pub fn parse(algo: &'a str) -> Result<AlgoSpec<'a>, InputError> {
        let mut spec = AlgoSpec { every: None, kinds: Vec::new() };
        for item in algo.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(super::err("algorithm", format!("--algo '{algo}' has an empty item")));
            }
            let Some((kind, name)) = item.split_once('=') else {
                if let Some(first) = spec.every {
                    return Err(algo_error(item, format!("a second algorithm for every collective (after '{first}')")));
                }
                spec.every = Some(item);
                continue;
            };
            let c = parse_kind(kind.trim()).map_err(|e| algo_error(item, e))?;
            if spec.kinds.iter().any(|(k, _, _)| *k == c) {
                return Err(algo_error(item, format!("a second algorithm for {}", c.name())));
            }
            spec.kinds.push((c, name.trim(), item));
        }
        Ok(spec)
    }
}

/// A collective's kind, as `clustersim collective` names it (case, `_` and `-` ignored).
fn parse_kind(kind: &str) -> Result<Collective, String> {
    let key = kind.to_ascii_lowercase().replace(['_', '-'], "");
    Collective::ALL.into_iter().find(|c| c.name() == key).ok_or_else(|| {
        let names: Vec<&str> = Collective::ALL.iter().map(|c| c.name()).collect();
        format!("unknown collective '{kind}' (valid: {})", names.join(", "))
    })
}

/// The tuner's algorithms for `--algo` ([`AlgoSpec`], names by [`algorithm_choice`]) in `opts`:
/// [`Options::algorithm`], [`Options::per_collective`] and [`Options::extra`]. `platform` tells
/// the names of algorithms only the platform can build (reduction servers, CollNet: the caller
/// sets [`Options::all_reduce`]); such a name stands bare or as `all_reduce=NAME`, and is the
/// tuner's choice for every other collective.
pub fn set_algorithms(algo: &str, opts: &mut Options, platform: &dyn Fn(&str) -> bool) -> Result<(), InputError> {
    let spec = AlgoSpec::parse(algo)?;
    opts.algorithm = None;
    opts.extra = false;
    opts.per_collective.clear();
    // The bare item when it takes one kind only: the all-reduces (a platform's algorithm) or
    // the single kind its algorithm runs.
    let mut bare_kind = None;
    if let Some(item) = spec.every {
        if platform(item) {
            bare_kind = Some(Collective::AllReduce);
        } else {
            let (a, extra) = algorithm_choice(item).map_err(|e| in_item(item, e))?;
            (opts.algorithm, opts.extra) = (a, extra);
            if let Some(&[only]) = a.as_ref().map(|a| a.collectives()) {
                bare_kind = Some(only);
            }
        }
    }
    for &(c, name, item) in &spec.kinds {
        if let (Some(first), true) = (spec.every, bare_kind == Some(c)) {
            return Err(algo_error(item, format!("a second algorithm for {} (after '{first}')", c.name())));
        }
        if platform(name) {
            if c == Collective::AllReduce {
                continue;
            }
            return Err(algo_error(item, format!("{name} runs allreduce only")));
        }
        let (a, extra) = algorithm_choice(name).map_err(|e| in_item(item, e))?;
        if extra {
            return Err(algo_error(item, format!("{AUTO_EXTRA} widens the tuner for every collective: give it bare")));
        }
        if let Some(a) = a.filter(|a| !a.collectives().contains(&c)) {
            let kinds: Vec<&str> = a.collectives().iter().map(|k| k.name()).collect();
            return Err(algo_error(
                item,
                format!("{} cannot run {} (it runs {})", a.name(), c.name(), kinds.join(", ")),
            ));
        }
        opts.per_collective.push((c, a));
    }
    Ok(())
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
        if e.message.starts_with("unknown algorithm") {
            let names = e.message.trim_end_matches(')').replace("(valid: ", "(valid: auto, ");
            e.message = format!("{names}, {AUTO_EXTRA})");
        }
        e
    })
}

/// "auto" (NCCL's choice per size) or a protocol name.
pub fn protocol_option(protocol: &str) -> Result<Option<Protocol>, InputError> {
    if protocol.eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    Protocol::parse(protocol).map(Some).map_err(|mut e| {
        e.message = format!("{} (or auto)", e.message);
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
            per_collective: Vec::new(),
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
        return Ok(vec![Timing { step: StepLatency::Path(x * 1e3), ..Timing::RAW }]);
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
        .map(|(p, lat)| {
            let l = call_latency(c, algo, p, lat, h, nodes, (links.alpha_nvlink_ns, links.alpha_net_ns));
            Timing {
                protocol: p,
                efficiency: p.efficiency() * efficiency,
                call_latency_ns: l.base_ns,
                step: StepLatency::Hops(l.hops_ns),
            }
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
            let on_lines = matches!(timing.step, StepLatency::Hops(_)) && timing.protocol != Protocol::Simple;
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

    /// `--algo` read with no platform-built names.
    fn algo(text: &str) -> Result<Options, InputError> {
        let mut o = Options::default();
        set_algorithms(text, &mut o, &|n| n == "servers").map(|()| o)
    }

    #[test]
    fn algo_picks_per_kind_and_a_bare_name_keeps_its_meaning() {
        use Algorithm as A;
        let kinds = |o: &Options| Collective::ALL.map(|c| o.forced_kind(c));
        let every = |a: Option<A>| Collective::ALL.map(|_| a);
        // Bare names: as before, on every collective.
        for (text, want) in [("auto", None), ("RING", Some(A::RING)), ("Halving-Doubling", Some(A::HALVING_DOUBLING))] {
            let o = algo(text).unwrap();
            assert_eq!((o.algorithm, o.extra, kinds(&o)), (want, false, every(want)), "{text}");
        }
        let o = algo("auto+extra").unwrap();
        assert_eq!((o.algorithm, o.extra), (None, true));
        // One defined for a single kind forces that kind alone.
        let mut want = every(None);
        want[0] = Some(A::COHERENT_RING);
        assert_eq!(kinds(&algo("coherent_ring").unwrap()), want);
        assert_eq!(kinds(&algo("all_reduce=coherent_ring").unwrap()), want);
        want[1] = Some(A::RING);
        assert_eq!(kinds(&algo(" all_reduce = coherent_ring , all-gather=ring").unwrap()), want);
        assert_eq!(kinds(&algo("allgather=ring,coherent_ring").unwrap()), want);
        // A default and per-kind exceptions, the tuner among them.
        let o = algo("ring,AllReduce=tree,reduce_scatter=auto").unwrap();
        assert_eq!(o.per_collective, vec![(AllReduce, Some(A::TREE)), (ReduceScatter, None)]);
        let [ar, ag, rs, a2a, bc, red] = kinds(&o);
        assert_eq!(
            (ar, ag, rs, a2a, bc, red),
            (Some(A::TREE), Some(A::RING), None, Some(A::RING), Some(A::RING), Some(A::RING))
        );
        // A platform's algorithm takes the all-reduces, the rest as named.
        let o = algo("all_reduce=servers,ring").unwrap();
        assert_eq!((o.algorithm, o.per_collective.len()), (Some(A::RING), 0));
        assert_eq!(algo("servers").unwrap(), Options::default());
    }

    #[test]
    fn bad_algo_items_are_named_in_one_line() {
        for (text, want) in [
            ("all_reduce=ring,allreduce=tree", "--algo item 'allreduce=tree': a second algorithm for allreduce"),
            ("ring,tree", "--algo item 'tree': a second algorithm for every collective (after 'ring')"),
            ("all_gather=coherent_ring", "--algo item 'all_gather=coherent_ring': coherent_ring cannot run allgather (it runs allreduce)"),
            ("alltoall=ring", "--algo item 'alltoall=ring': ring cannot run alltoall (it runs allreduce, allgather, reducescatter, broadcast, reduce)"),
            ("gather=ring", "--algo item 'gather=ring': unknown collective 'gather' (valid: allreduce, allgather, reducescatter, alltoall, broadcast, reduce)"),
            ("all_reduce=bruck", "--algo item 'all_reduce=bruck': unknown algorithm 'bruck' (valid: auto, ring,"),
            ("ring,", "--algo 'ring,' has an empty item"),
            ("all_gather=auto+extra", "--algo item 'all_gather=auto+extra': auto+extra widens the tuner for every collective: give it bare"),
            ("coherent_ring,all_reduce=ring", "--algo item 'all_reduce=ring': a second algorithm for allreduce (after 'coherent_ring')"),
            ("servers,allreduce=ring", "--algo item 'allreduce=ring': a second algorithm for allreduce (after 'servers')"),
            ("all_gather=servers", "--algo item 'all_gather=servers': servers runs allreduce only"),
        ] {
            let e = algo(text).unwrap_err();
            assert_eq!((e.field.as_deref(), e.to_string().lines().count()), (Some("algorithm"), 1), "{e}");
            assert!(e.message.starts_with(want), "{text}: {e}");
        }
    }

    #[test]
    fn per_kind_algorithms_run_their_kind_and_the_all_reduce_slot_wins_across_servers() {
        let (two, one): (Vec<u32>, Vec<u32>) = ((0..16).collect(), (0..8).collect());
        let o = algo("all_reduce=halving_doubling,all_gather=ring").unwrap();
        for bytes in [1 << 10, 1 << 30] {
            for ranks in [&two, &one] {
                assert_eq!(pick(AllReduce, ranks, bytes, &o).algorithm, Algorithm::HALVING_DOUBLING);
                assert_eq!(pick(AllGather, ranks, bytes, &o).algorithm, Algorithm::RING);
                // Kinds not named: the tuner's choice, to the last bit.
                for c in [ReduceScatter, AllToAll, Broadcast] {
                    assert_eq!(pick(c, ranks, bytes, &o), pick(c, ranks, bytes, &Options::default()), "{c:?}");
                }
            }
            // A platform's all-reduce across servers comes first; inside one server the kind's own.
            let slot = Options { all_reduce: Some(Algorithm::HIERARCHICAL), ..o.clone() };
            assert_eq!(pick(AllReduce, &two, bytes, &slot).algorithm, Algorithm::HIERARCHICAL);
            assert_eq!(pick(AllReduce, &one, bytes, &slot).algorithm, Algorithm::HALVING_DOUBLING);
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
