//! Faults inside a run: a link or a NIC down, or slower, from a given time on.
//!
//! One syntax, parsed and checked here only (the CLI's `--fault`, the API's `faults=`):
//!
//! ```text
//! link:<a>-<b>@<time>[:<factor>]   every link between nodes a and b, both directions
//! nic:<node>@<time>[:<factor>]     every link into or out of the node but its NVLinks
//! ```
//!
//! Nodes are named as the platform names them (a SimAI topology file's nodes by their ids);
//! `<time>` is a number with a unit, `ns`, `us`, `ms` or `s`, from the start of the run;
//! `<factor>` is the share of its bandwidth the part keeps, from 0 (down, the default) to 1.
//! Several faults are separated by commas. A fault lasts to the end of the run. A failed cable
//! takes both directions down, so a link fault does too; a NIC fault takes every port of the
//! node (a GPU's links to its ToRs on a SimAI fabric, where each GPU is its own NIC).
//!
//! What a fault does is the network model's ([`crate::network::flow`]): a degraded link shares
//! its lower capacity max-min fairly from then on; flows on a link that goes down move to the
//! surviving equal-cost paths (the second ToR, the second plane) as the fabric's routing finds
//! them, and where none is left the run stops with an error naming the group.

use crate::error::{InputError, Result};
use crate::platform::{NodeKind, Platform};

/// One fault: `links` (directed link ids) keep `factor` of their bandwidth from `at_ns` on
/// (0: down). `what` names it as given (`link:tor3-gpu5`) for reports and messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub what: String,
    pub links: Vec<u32>,
    pub at_ns: f64,
    pub factor: f64,
}

impl Fault {
    pub fn is_down(&self) -> bool {
        self.factor == 0.0
    }
}

/// Parse `spec` (the module doc's syntax) against `topo`; `source` names the input in errors
/// (`--fault`, `faults=`). Faults come back in time order (stable for equal times).
pub fn parse_faults(source: &str, spec: &str, topo: &Platform) -> Result<Vec<Fault>> {
    let mut out = Vec::new();
    for (i, item) in spec.split(',').map(str::trim).enumerate() {
        let field = format!("fault {} ({item})", i + 1);
        let err = |m: String| InputError::field(source, &field, m);
        if item.is_empty() {
            return Err(err("empty fault; give link:<a>-<b>@<time>[:<factor>] or nic:<node>@<time>[:<factor>]".into()));
        }
        let (kind, rest) = item.split_once(':').ok_or_else(|| err("expected link:... or nic:...".into()))?;
        let (target, when) = rest.rsplit_once('@').ok_or_else(|| err("expected @<time> after the part".into()))?;
        let (time, factor) = match when.split_once(':') {
            Some((t, f)) => (t, Some(f)),
            None => (when, None),
        };
        let at_ns = parse_time(time).map_err(err)?;
        let factor = match factor {
            None => 0.0,
            Some(f) => match f.trim().parse::<f64>() {
                Ok(x) if (0.0..=1.0).contains(&x) => x,
                _ => return Err(err(format!("factor {f:?} must be a number from 0 (down) to 1"))),
            },
        };
        let links = match kind.trim() {
            "link" => link_between_nodes(topo, target).map_err(err)?,
            "nic" => {
                let v = node(topo, target.trim()).ok_or_else(|| err(format!("no node named {:?}", target.trim())))?;
                let links = ports(topo, v);
                if links.is_empty() {
                    return Err(err(format!("node {:?} has no network links", target.trim())));
                }
                links
            }
            other => return Err(err(format!("unknown part {other:?}; expected link or nic"))),
        };
        out.push(Fault { what: format!("{}:{}", kind.trim(), target.trim()), links, at_ns, factor });
    }
    out.sort_by(|a, b| a.at_ns.total_cmp(&b.at_ns));
    Ok(out)
}

/// A time with its unit, in ns: the platform's one time reader (ns-3's units), a unit required
/// (ns-3 reads a bare number as seconds; here it is more likely a slip).
fn parse_time(text: &str) -> std::result::Result<f64, String> {
    let t = text.trim();
    if !t.ends_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(format!("time {t:?} needs a unit (ns, us, ms or s)"));
    }
    super::simai::parse_time(t)
        .ok_or_else(|| format!("time {t:?} must be a non-negative number with a unit (ns, us, ms or s)"))
}

/// The node named `name` (its given name, else its id).
fn node(topo: &Platform, name: &str) -> Option<u32> {
    (0..topo.node_count()).find(|&v| topo.node_name(v) == name)
}

/// Every link between the two nodes of `a-b`, both directions. Names may hold '-': every split
/// that names two nodes is tried, and exactly one must.
fn link_between_nodes(topo: &Platform, pair: &str) -> std::result::Result<Vec<u32>, String> {
    let pair = pair.trim();
    let splits: Vec<(u32, u32)> = pair
        .match_indices('-')
        .filter_map(|(k, _)| Some((node(topo, pair[..k].trim())?, node(topo, pair[k + 1..].trim())?)))
        .collect();
    let (a, b) = match splits[..] {
        [one] => one,
        [] => return Err(format!("{pair:?} does not name two nodes of the topology as <a>-<b>")),
        _ => return Err(format!("{pair:?} names two nodes in more than one way")),
    };
    let links: Vec<u32> = topo
        .out_links(a)
        .iter()
        .chain(topo.in_links(a))
        .copied()
        .filter(|&l| {
            let link = &topo.links[l as usize];
            (link.src, link.dst) == (a, b) || (link.src, link.dst) == (b, a)
        })
        .collect();
    if links.is_empty() {
        return Err(format!("no link between {} and {} in the topology", topo.node_name(a), topo.node_name(b)));
    }
    Ok(links)
}

/// A node's network ports: its links, both directions, but those to or from an NVSwitch.
fn ports(topo: &Platform, v: u32) -> Vec<u32> {
    let nvlink = |l: u32| {
        let link = &topo.links[l as usize];
        topo.kinds[link.src as usize] == NodeKind::NvSwitch || topo.kinds[link.dst as usize] == NodeKind::NvSwitch
    };
    topo.out_links(v).iter().chain(topo.in_links(v)).copied().filter(|&l| !nvlink(l)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Link;

    /// GPUs 0, 1 (one server, NVSwitch 2), each to ToRs 3 and 4.
    fn fabric() -> Platform {
        let mut links = Vec::new();
        let mut both = |a: u32, b: u32| {
            links.push(Link { src: a, dst: b, bandwidth: 25.0, latency_ns: 500.0, error_rate: 0.0 });
            links.push(Link { src: b, dst: a, bandwidth: 25.0, latency_ns: 500.0, error_rate: 0.0 });
        };
        for g in 0..2 {
            both(g, 2);
            both(g, 3);
            both(g, 4);
        }
        let kinds = vec![NodeKind::Gpu, NodeKind::Gpu, NodeKind::NvSwitch, NodeKind::Switch, NodeKind::Switch];
        Platform::from_parts("t", kinds, links, 2, "H100").unwrap()
    }

    #[test]
    fn faults_parse_with_units_factors_and_both_directions() {
        let t = fabric();
        let f = parse_faults("--fault", "link:0-3@1.5ms:0.5, nic:1@20us", &t).unwrap();
        // In time order: the NIC first.
        assert_eq!(f[0].what, "nic:1");
        assert_eq!(f[0].at_ns, 20e3);
        assert!(f[0].is_down());
        // GPU 1's four ToR links, not its NVLinks.
        let mut ends: Vec<(u32, u32)> =
            f[0].links.iter().map(|&l| (t.links[l as usize].src, t.links[l as usize].dst)).collect();
        ends.sort_unstable();
        assert_eq!(ends, vec![(1, 3), (1, 4), (3, 1), (4, 1)]);
        assert_eq!(f[1].at_ns, 1.5e6);
        assert_eq!(f[1].factor, 0.5);
        let mut ends: Vec<(u32, u32)> =
            f[1].links.iter().map(|&l| (t.links[l as usize].src, t.links[l as usize].dst)).collect();
        ends.sort_unstable();
        assert_eq!(ends, vec![(0, 3), (3, 0)]);
    }

    #[test]
    fn bad_faults_name_the_field() {
        let t = fabric();
        for (spec, says) in [
            ("link:0-1@1ms", "no link between 0 and 1"),
            ("link:0-9@1ms", "does not name two nodes"),
            ("link:0-3@1", "needs a unit"),
            ("link:0-3@-1ms", "non-negative"),
            ("link:0-3@1ms:1.5", "from 0 (down) to 1"),
            ("port:0@1ms", "unknown part"),
            ("nic:7@1ms", "no node named"),
            ("link:0-3", "@<time>"),
        ] {
            let e = parse_faults("--fault", spec, &t).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(format!("fault 1 ({spec})").as_str()), "{spec}");
            assert!(e.message.contains(says), "{spec}: {}", e.message);
        }
    }
}
