//! Algorithms built from a platform, whose schedules name nodes that run no rank: reduction
//! servers ([`super::reduction_server`]) and in-network reduction ([`super::collnet`]). Each run
//! builds its own (they hold the platform's nodes and rates), so `--algo` names them here.

use super::collnet::{CollNet, Variant};
use super::reduction_server::{ReductionServer, Split};
use super::Algorithm;
use crate::error::{InputError, Result};
use crate::platform::Platform;

/// What a run says about such algorithms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlatformOptions {
    /// Reduction servers ([`super::reduction_server::select_servers`]); None: none.
    pub servers: Option<String>,
    /// A reduction server's throughput, GB/s; None: as fast as its NICs.
    pub reduce_gbps: Option<f64>,
    pub split: Split,
    /// A reducing switch's throughput, GB/s; None: as fast as its links.
    pub switch_reduce_gbps: Option<f64>,
}

fn bad(field: &str, message: String) -> InputError {
    InputError::field("collective", field, message)
}

/// The tuner's forced algorithm for `algorithm` ("auto" or a name): with reduction servers,
/// "auto" and "reduction_server" run on them; "collnet_direct" / "collnet_chain" run CollNet on
/// the platform's switches; other names as [`super::choose::algorithm_choice`] reads them (with
/// whether the tuner may pick the extra algorithms). Options that the algorithm does not use are
/// errors. May scale `topo`'s links (the reduction throughputs).
pub fn algorithm_option(
    topo: &mut Platform,
    algorithm: &str,
    o: &PlatformOptions,
) -> Result<(Option<Algorithm>, bool)> {
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
    match (collnet, o.servers.as_deref()) {
        (Some(_), Some(_)) => {
            Err(bad("algorithm", format!("'{algorithm}' reduces in switches, not on reduction servers")))
        }
        (Some(v), None) => Ok((Some(CollNet::on_platform(topo, v, o.switch_reduce_gbps)?.algorithm()), false)),
        (None, Some(select)) if key == "reductionserver" || key == "auto" => {
            Ok((Some(ReductionServer::on_platform(topo, select, o.reduce_gbps, o.split)?.algorithm()), false))
        }
        (None, Some(_)) => Err(bad(
            "algorithm",
            format!("'{algorithm}' does not run on reduction servers (use reduction_server or auto)"),
        )),
        (None, None) if key == "reductionserver" => Err(bad(
            "reduction_servers",
            "the reduction_server algorithm needs servers: name them (all, a count or cpu node names)".into(),
        )),
        (None, None) => {
            let choice = super::choose::algorithm_choice(algorithm)?;
            super::coherent_ring::check_platform(choice.0, topo, "collective")?;
            Ok(choice)
        }
    }
}
