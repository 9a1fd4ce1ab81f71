//! Algorithms built from a platform, whose schedules name nodes that run no rank: reduction
//! servers ([`super::reduction_server`]) and in-network reduction ([`super::collnet`]). Each run
//! builds its own (they hold the platform's nodes and rates), so `--algo` and the reduction
//! options are read here, once for every command (`collective`, `run`, `train`).
//!
//! Such an algorithm runs all-reduce only, so it takes the all-reduces across servers
//! ([`Options::all_reduce`]) and leaves every other collective to `--algo` or NCCL's tuner.

use serde::Deserialize;

use super::choose::{algorithm_choice, Options};
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

/// Set the tuner's algorithms in `opts` ([`Options::algorithm`], [`Options::extra`],
/// [`Options::all_reduce`]) from `algorithm` ("auto", "auto+extra" or a name) and `o`:
/// with reduction servers, all-reduce runs on them and `algorithm` ("reduction_server" is
/// "auto") names the other collectives'; "collnet_direct" / "collnet_chain" run all-reduce on
/// the platform's switches and NCCL's tuner the rest; other names as
/// [`algorithm_choice`] reads them. Options that no chosen algorithm uses are errors. May scale
/// `topo`'s links (the reduction throughputs).
pub fn algorithm_options(topo: &mut Platform, algorithm: &str, o: &PlatformOptions, opts: &mut Options) -> Result<()> {
    let key = algorithm.to_ascii_lowercase().replace(['-', '_'], "");
    let collnet = match key.as_str() {
        "collnetdirect" => Some(Variant::Direct),
        "collnetchain" => Some(Variant::Chain),
        _ => None,
    };
    if collnet.is_none() && o.switch_reduce_gbps.is_some() {
        return Err(bad("switch_reduce_gbps", "applies to collnet_direct and collnet_chain only".into()));
    }
    if o.servers.is_none() && o.reduce_gbps.is_some() {
        return Err(bad("reduce_gbps", "applies to reduction servers only (name them)".into()));
    }
    let (forced, extra, all_reduce) = match (collnet, o.servers.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(bad("algorithm", format!("'{algorithm}' reduces in switches, not on reduction servers")))
        }
        (Some(v), None) => (None, false, Some(CollNet::on_platform(topo, v, o.switch_reduce_gbps)?.algorithm())),
        (None, Some(select)) => {
            let servers = ReductionServer::on_platform(topo, select, o.reduce_gbps, o.split)?.algorithm();
            let (forced, extra) = if key == "reductionserver" { (None, false) } else { algorithm_choice(algorithm)? };
            (forced, extra, Some(servers))
        }
        (None, None) if key == "reductionserver" => {
            return Err(bad(
                "reduction_servers",
                "the reduction_server algorithm needs servers: name them (all, a count or cpu node names)".into(),
            ))
        }
        (None, None) => {
            let (forced, extra) = algorithm_choice(algorithm)?;
            (forced, extra, None)
        }
    };
    opts.algorithm = forced;
    opts.extra = extra;
    opts.all_reduce = all_reduce;
    Ok(())
}
