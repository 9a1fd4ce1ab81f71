//! Algorithms built from a platform, whose schedules name nodes that run no rank: reduction
//! servers ([`super::reduction_server`]) and in-network reduction ([`super::collnet`]). Each run
//! builds its own (they hold the platform's nodes and rates), so `--algo` and the reduction
//! options are read here, once for every command (`collective`, `run`, `train`).
//!
//! Such an algorithm runs all-reduce only, so it takes the all-reduces across servers
//! ([`Options::all_reduce`]) and leaves every other collective to `--algo` or NCCL's tuner: its
//! name stands bare (`--algo collnet_direct`) or as an item (`--algo ring,all_reduce=collnet_direct`:
//! the ring for everything else, an all-reduce inside one server included).

use serde::Deserialize;

use super::choose::{set_algorithms, AlgoSpec, Options};
use super::collnet::{CollNet, Variant};
use super::reduction_server::{ReductionServer, Split};
use crate::error::{InputError, Result};
use crate::platform::Platform;

/// What a run says about such algorithms (the Python API's and the fabric document's names).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PlatformOptions {
    /// Reduction servers ([`super::reduction_server::select_servers`]); None: none.
    #[serde(rename = "reduction_servers")]
    pub servers: Option<String>,
    /// A reduction server's throughput, GB/s; None: as fast as its NICs.
    pub reduce_gbps: Option<f64>,
    #[serde(flatten)]
    pub split: Split,
    /// A reducing switch's throughput, GB/s; None: as fast as its links.
    pub switch_reduce_gbps: Option<f64>,
}

fn bad(field: &str, message: String) -> InputError {
    InputError::field("collective", field, message)
}

/// Set the tuner's algorithms in `opts` ([`set_algorithms`]: [`Options::algorithm`],
/// [`Options::per_collective`], [`Options::extra`], [`Options::all_reduce`]) from `algorithm`
/// (`--algo`: NAME and KIND=NAME items) and `o`. With reduction servers, every all-reduce across
/// servers runs on them ("reduction_server" names them, bare or as `all_reduce=`, and is "auto"
/// for the other collectives); "collnet_direct" / "collnet_chain" run those all-reduces on the
/// platform's switches; every other name as [`super::choose::algorithm_choice`] reads it, per kind. Options
/// that no chosen algorithm uses are errors. May scale `topo`'s links (the reduction throughputs).
pub fn algorithm_options(topo: &mut Platform, algorithm: &str, o: &PlatformOptions, opts: &mut Options) -> Result<()> {
    let key = |name: &str| name.to_ascii_lowercase().replace(['-', '_'], "");
    let spec = AlgoSpec::parse(algorithm)?;
    let names = spec.every.into_iter().chain(spec.kinds.iter().map(|k| k.1));
    let collnet = names.clone().find_map(|n| match key(n).as_str() {
        "collnetdirect" => Some((n, Variant::Direct)),
        "collnetchain" => Some((n, Variant::Chain)),
        _ => None,
    });
    let server_name = names.clone().find(|n| key(n) == "reductionserver");
    if collnet.is_none() && o.switch_reduce_gbps.is_some() {
        return Err(bad("switch_reduce_gbps", "applies to collnet_direct and collnet_chain only".into()));
    }
    if o.servers.is_none() && o.reduce_gbps.is_some() {
        return Err(bad("reduce_gbps", "applies to reduction servers only (name them)".into()));
    }
    let all_reduce = match (collnet, o.servers.as_deref()) {
        (Some((name, _)), Some(_)) => {
            return Err(bad("algorithm", format!("'{name}' reduces in switches, not on reduction servers")))
        }
        (Some((_, v)), None) => Some(CollNet::on_platform(topo, v, o.switch_reduce_gbps)?.algorithm()),
        (None, Some(select)) => Some(ReductionServer::on_platform(topo, select, o.reduce_gbps, o.split)?.algorithm()),
        (None, None) if server_name.is_some() => {
            return Err(bad(
                "reduction_servers",
                "the reduction_server algorithm needs servers: name them (all, a count or cpu node names)".into(),
            ))
        }
        (None, None) => None,
    };
    set_algorithms(algorithm, opts, &|name| {
        matches!(key(name).as_str(), "collnetdirect" | "collnetchain" | "reductionserver")
    })?;
    opts.all_reduce = all_reduce;
    Ok(())
}
