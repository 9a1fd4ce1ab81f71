//! k-ary fat-tree (Al-Fares et al., SIGCOMM 2008) with GPU servers at the edge.
//!
//! Built from k-port switches in three tiers: k pods, each of k/2 edge and k/2 aggregation
//! switches, and (k/2)² core switches; each edge switch has k/2 GPU ports, so the fabric holds
//! k³/4 GPUs and has full bisection bandwidth. GPUs are grouped into servers of
//! `gpu_per_server`, each server with `nv_switch_per_server` NVSwitches (the scale-up domain),
//! as in SimAI's templates.
//!
//! Numbering: GPUs 0 … k³/4 − 1 (server s holds GPUs s·gps …); then NVSwitches server by
//! server; then edge switches pod by pod (pod p's edge e is number p·k/2 + e among them); then
//! aggregation switches in the same order; then core switches. Wiring, in link order: for each
//! GPU, its NVSwitch links, then one link to edge switch g // (k/2); then in each pod every edge
//! switch to every aggregation switch; then aggregation switch a of every pod to core switches
//! a·k/2 … a·k/2 + k/2 − 1. GPU–edge links use `bandwidth`, switch–switch links `ap_bandwidth`,
//! all network links `latency`.
//!
//! The parameters are SimAI's ([`TemplateParams`]), of which a fat-tree takes [`PARAMS`].

use super::params::TemplateParams;
use super::{Fabric, Links};
use crate::error::{InputError, Result};

/// The template parameters a fat-tree takes (the others shape SimAI's pods).
pub const PARAMS: [&str; 9] = [
    "gpu_per_server",
    "nv_switch_per_server",
    "gpu_type",
    "nvlink_bw",
    "nv_latency",
    "bandwidth",
    "ap_bandwidth",
    "latency",
    "error_rate",
];

/// Most switch ports (k): a fat-tree of 2^28 GPUs.
const MAX_K: i64 = 1024;

/// The error for a switch port count `got` (as the caller spells it) that is not one.
pub fn not_a_port_count(got: &str) -> InputError {
    InputError::field(
        "fat-tree",
        "k",
        format!("the switch port count must be an even number from 2 to {MAX_K}, got {got}"),
    )
}

/// A k-ary fat-tree of k³/4 GPUs (module doc) with `p`'s [`PARAMS`].
pub fn build(k: i64, p: &TemplateParams) -> Result<Fabric> {
    let t = "fat-tree";
    if k < 2 || k % 2 != 0 || k > MAX_K {
        return Err(not_a_port_count(&k.to_string()));
    }
    let gps = p.whole(t, "gpu_per_server")?;
    let nsps = p.whole(t, "nv_switch_per_server")?;
    let (k, half) = (k as u64, k as u64 / 2);
    let gpus = k.pow(3) / 4;
    if !gpus.is_multiple_of(gps) {
        return Err(InputError::field(
            t,
            "gpu_per_server (-gps)",
            format!("a k={k} fat-tree has {gpus} GPUs, which do not fill whole servers of {gps}"),
        ));
    }
    let r = p.link_rates()?;
    let nv_base = gpus;
    let edge_base = nv_base + gpus / gps * nsps;
    let agg_base = edge_base + k * half;
    let core_base = agg_base + k * half;
    let nodes = core_base + half * half;
    let mut links = Links::with_capacity(t, gpus * (nsps + 1) + 2 * k * half * half, r.error_rate)?;
    for g in 0..gpus {
        let nv = nv_base + (g / gps) * nsps;
        for j in 0..nsps {
            links.add(g, nv + j, r.nvlink, r.nv_latency);
        }
        links.add(g, edge_base + g / half, r.nic, r.latency);
    }
    for pod in 0..k {
        for e in 0..half {
            for a in 0..half {
                links.add(edge_base + pod * half + e, agg_base + pod * half + a, r.ap, r.latency);
            }
        }
    }
    for pod in 0..k {
        for a in 0..half {
            for m in 0..half {
                links.add(agg_base + pod * half + a, core_base + a * half + m, r.ap, r.latency);
            }
        }
    }
    let name = format!("FatTree_k{k}_{gpus}g_{gps}gps_{}_{}", p.bandwidth, p.gpu_type);
    let counts = (gpus, edge_base - nv_base, nodes - edge_base);
    let platform = links.platform(&format!("fat-tree {name}"), counts, gps, &p.gpu_type)?;
    Ok(Fabric { platform, name, warnings: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::NodeKind;

    #[test]
    fn counts_and_edge_wiring() {
        for (k, gps) in [(2, 1), (4, 2), (6, 1), (8, 4)] {
            let p = TemplateParams { gpu_per_server: gps, ..TemplateParams::default() };
            let f = build(k, &p).unwrap();
            let n = |kind| f.platform.kinds.iter().filter(|&&x| x == kind).count() as i64;
            let hosts = k * k * k / 4;
            assert_eq!(
                (n(NodeKind::Gpu), n(NodeKind::Switch), n(NodeKind::NvSwitch)),
                (hosts, 5 * k * k / 4, hosts / gps)
            );
            // NVLink + GPU–edge + edge–aggregation + aggregation–core.
            assert_eq!(f.platform.links.len() as i64 / 2, hosts + hosts + 2 * (k * k * k / 4));
        }
        let f = build(4, &TemplateParams { gpu_per_server: 4, ..TemplateParams::default() }).unwrap();
        let edge0 = 16 + 4;
        let to_edge: Vec<u32> =
            f.platform.links.iter().filter(|l| l.src < 16 && l.dst >= edge0).map(|l| l.dst - edge0).collect();
        assert_eq!(to_edge, (0..16).map(|g| g / 2).collect::<Vec<_>>());
        assert_eq!(f.name, "FatTree_k4_16g_4gps_400Gbps_H100");
    }

    #[test]
    fn bad_parameters() {
        let e = build(5, &TemplateParams::default()).unwrap_err().to_string();
        assert_eq!(e, "fat-tree: k: the switch port count must be an even number from 2 to 1024, got 5");
        let e = build(4, &TemplateParams { gpu_per_server: 3, ..TemplateParams::default() }).unwrap_err();
        assert!(e.to_string().contains("16 GPUs, which do not fill whole servers of 3"), "{e}");
    }
}
