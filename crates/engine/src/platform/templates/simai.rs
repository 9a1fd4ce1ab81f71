//! SimAI's fabric templates (gen_Topo_Template.py), one pod or several joined by a core tier.
//!
//! A pod is a two-tier Clos: GPUs (each its own NIC) → ASW (access/ToR switches) → PSW (pod
//! switches); inside a server every GPU also links to each of the server's NVSwitches.
//!
//! Numbering (formats.md §3.2), for one pod of G GPUs and S = G / gpu_per_server servers:
//!
//! - GPUs 0 … G−1, server s holding GPUs s·gps … s·gps + gps − 1;
//! - then NVSwitches, nv_switch_per_server per server, server 0's first;
//! - then ASWs (dual-ToR: the whole first set, then the whole second set);
//! - then PSWs (dual-plane: plane 1, then plane 2; plane 1 gets the odd one out).
//!
//! Wiring, in file order: for each GPU, one link to each NVSwitch of its server (`nvlink_bw`,
//! `nv_latency`), then one link to an ASW (dual-ToR: one to each set) (`bandwidth`, `latency`);
//! then for each ASW, one link to each PSW (dual-plane: set i only to plane i) (`ap_bandwidth`,
//! `latency`).
//!
//! - Rail-optimised: a segment is `nics_per_aswitch` servers; it has one ASW per rail (per local
//!   GPU index), so GPU i goes to ASW (i // (gps·npa))·gps + i % gps of each set.
//! - Not rail-optimised: GPU i goes to ASW i // nics_per_aswitch of each set.
//!
//! The ASW count follows from the GPU count (a different `asw_switch_num` given with `-asn` is
//! corrected with a warning, as the script does; the template's default is corrected silently) and a pod holds at most `asw_per_psw` ASWs' worth of segments.
//!
//! Several pods (`pods` > 1, beyond SimAI): GPUs are numbered pod by pod (pod p holds GPUs p·G …
//! p·G + G − 1), then all NVSwitches, all ASWs and all PSWs pod by pod, then the core switches.
//! There are as many core switches as PSWs in a pod; core switch c joins PSW c of every pod with
//! one link whose rate is the sum of that PSW's ASW links (a non-blocking bundle) and whose delay
//! is `latency`.

use super::params::TemplateParams;
use super::{Fabric, Links};
use crate::error::{InputError, Result};

/// Structure of one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pod {
    gpus: u64,
    nvswitches: u64,
    asw_per_set: u64,
    /// 1: single ToR, 2: dual ToR.
    sets: u64,
    /// PSW count per plane.
    psw_planes: Vec<u64>,
}

/// Check the parameters and size one pod, as gen_Topo_Template.py does (its warnings into
/// `warnings`).
fn pod(p: &TemplateParams, warnings: &mut Vec<String>) -> Result<Pod> {
    let t = "template";
    let [gpu, gps, npa, app] = ["gpu", "gpu_per_server", "nics_per_aswitch", "asw_per_psw"].map(|n| p.whole(t, n));
    let (gpu, gps, npa, app) = (gpu?, gps?, npa?, app?);
    let [nsps, psn, asn] = ["nv_switch_per_server", "psw_switch_num", "asw_switch_num"].map(|n| p.whole(t, n));
    let (nsps, psn, asn) = (nsps?, psn?, asn?);
    if p.dual_plane && !p.rail_optimized {
        return Err(InputError::field(t, "--dp", "a fabric that is not rail-optimised cannot be dual-plane"));
    }
    if p.dual_plane && !p.dual_tor {
        return Err(InputError::field(t, "--dp", "a rail-optimised single-ToR fabric cannot be dual-plane (add --dt)"));
    }
    if !gpu.is_multiple_of(gps) {
        return Err(InputError::field(t, "gpu (-g)", format!("{gpu} GPUs do not fill whole servers of {gps} (-gps)")));
    }
    let sets = if p.dual_tor { 2 } else { 1 };
    let asw_per_segment_per_set = if p.rail_optimized { gps } else { 1 };
    let gpus_per_segment = npa * asw_per_segment_per_set;
    let segments = gpu.div_ceil(gpus_per_segment);
    let asw = segments * asw_per_segment_per_set * sets;
    if asw != asn && p.asw_switch_num_given {
        warnings.push(format!("asw_switch_num (-asn) {asn} does not fit {gpu} GPUs: using {asw}"));
    }
    // The script's pod capacity: segments ≤ asw_per_psw / (ASWs per segment), where a
    // rail-optimised dual-ToR segment counts one set and a non-rail-optimised dual-ToR segment
    // counts both.
    let per_segment = if p.rail_optimized { gps } else { sets };
    let capacity = app / per_segment;
    if segments > capacity {
        return Err(InputError::field(
            t,
            "gpu (-g)",
            format!(
                "{gpu} GPUs need {segments} segments of {gpus_per_segment} GPUs, but one pod holds {capacity} \
                 (asw_per_psw -app {app} / {per_segment}); use more pods for more GPUs"
            ),
        ));
    }
    let psw_planes = if p.dual_plane { vec![psn.div_ceil(2), psn / 2] } else { vec![psn] };
    Ok(Pod { gpus: gpu, nvswitches: gpu / gps * nsps, asw_per_set: asw / sets, sets, psw_planes })
}

/// Index, within one ASW set, of the ASW that pod-local GPU `i` links to.
fn gpu_asw(p: &TemplateParams, i: u64) -> u64 {
    let (gps, npa) = (p.gpu_per_server as u64, p.nics_per_aswitch as u64);
    if p.rail_optimized {
        (i / (gps * npa)) * gps + i % gps
    } else {
        i / npa
    }
}

/// The fabric of resolved parameters `p` with `pods` pods (module doc).
pub fn build(p: &TemplateParams, pods: i64) -> Result<Fabric> {
    if !(1..=u32::MAX as i64).contains(&pods) {
        return Err(InputError::field("template", "pods", format!("must be a whole number ≥ 1, got {pods}")));
    }
    let pods = pods as u64;
    let mut warnings = Vec::new();
    let pod = pod(p, &mut warnings)?;
    let r = p.link_rates()?;
    let (gps, nsps) = (p.gpu_per_server as u64, p.nv_switch_per_server as u64);
    let psw_per_pod: u64 = pod.psw_planes.iter().sum();
    let asw_per_pod = pod.asw_per_set * pod.sets;
    let nv_base = pods * pod.gpus;
    let asw_base = nv_base + pods * pod.nvswitches;
    let psw_base = asw_base + pods * asw_per_pod;
    let core_base = psw_base + pods * psw_per_pod;
    let cores = if pods > 1 { psw_per_pod } else { 0 };
    let count = nv_base * (nsps + pod.sets) + pods * asw_per_pod * psw_per_pod + cores * pods;
    let mut links = Links::with_capacity("template", count, r.error_rate)?;
    for g in 0..nv_base {
        let (q, i) = (g / pod.gpus, g % pod.gpus);
        let nv = nv_base + q * pod.nvswitches + (i / gps) * nsps;
        for j in 0..nsps {
            links.add(g, nv + j, r.nvlink, r.nv_latency);
        }
        for s in 0..pod.sets {
            let asw = asw_base + q * asw_per_pod + s * pod.asw_per_set + gpu_asw(p, i);
            links.add(g, asw, r.nic, r.latency);
        }
    }
    let planes = &pod.psw_planes;
    for q in 0..pods {
        for s in 0..pod.sets {
            // Single plane: every ASW to every PSW. Dual plane: set s to plane s only.
            let (first, count) = if planes.len() > 1 {
                (planes[..s as usize].iter().sum(), planes[s as usize])
            } else {
                (0, psw_per_pod)
            };
            for a in 0..pod.asw_per_set {
                let asw = asw_base + q * asw_per_pod + s * pod.asw_per_set + a;
                let psw0 = psw_base + q * psw_per_pod + first;
                for k in 0..count {
                    links.add(asw, psw0 + k, r.ap, r.latency);
                }
            }
        }
    }
    if cores > 0 {
        let mut uplink = vec![0.0; psw_per_pod as usize];
        for (_, dst, bandwidth) in links.duplex() {
            if dst as u64 >= psw_base {
                uplink[((dst as u64 - psw_base) % psw_per_pod) as usize] += bandwidth;
            }
        }
        for c in 0..cores {
            for q in 0..pods {
                links.add(psw_base + q * psw_per_pod + c, core_base + c, uplink[c as usize] / pods as f64, r.latency);
            }
        }
    }
    let name = if pods > 1 { format!("{}_{pods}pods", p.file_name()) } else { p.file_name() };
    let switches = core_base + cores - asw_base;
    let counts = (nv_base, asw_base - nv_base, switches);
    let platform = links.platform(&format!("template {name}"), counts, gps, &p.gpu_type)?;
    Ok(Fabric { platform, name, warnings })
}

#[cfg(test)]
mod tests {
    use super::super::params::Value;
    use super::*;
    use crate::platform::NodeKind;

    fn params(topology: Option<&str>, shape: (bool, bool, bool), overrides: &[(&str, i64)]) -> TemplateParams {
        let o: Vec<(String, Value)> = overrides.iter().map(|(n, v)| (n.to_string(), Value::Int(*v))).collect();
        TemplateParams::resolve(topology, shape.0, shape.1, shape.2, &o).unwrap()
    }

    fn counts(f: &Fabric) -> (usize, usize, usize, usize) {
        let k = &f.platform.kinds;
        let n = |kind| k.iter().filter(|&&x| x == kind).count();
        (n(NodeKind::Gpu), n(NodeKind::NvSwitch), n(NodeKind::Switch), f.platform.links.len() / 2)
    }

    #[test]
    fn template_counts_follow_the_script() {
        // GPUs, NVSwitches, ASW+PSW, links = PSW·ASW + ToRs·GPUs + NVSwitches-per-server·GPUs
        let cases = [
            (Some("Spectrum-X"), (false, false, false), (4096, 512, 64 + 64, 64 * 64 + 4096 + 4096)),
            (Some("AlibabaHPN"), (false, false, true), (15360, 1920, 240 + 120, 60 * 240 + 2 * 15360 + 15360)),
            (Some("DCN+"), (false, true, false), (512, 64, 8 + 8, 8 * 8 + 2 * 512 + 512)),
            (None, (true, true, true), (32, 4, 16 + 64, 32 * 16 + 2 * 32 + 32)),
        ];
        for (topology, shape, expected) in cases {
            assert_eq!(counts(&build(&params(topology, shape, &[]), 1).unwrap()), expected, "{topology:?}");
        }
    }

    #[test]
    fn names_are_the_scripts() {
        let name = |t, shape, o: &[(&str, i64)]| params(t, shape, o).file_name();
        assert_eq!(name(Some("DCN+"), (false, false, false), &[("gpu", 64)]), "DCN+SingleToR_64g_8gps_400Gbps_H100");
        assert_eq!(
            name(Some("AlibabaHPN"), (false, false, true), &[("gpu", 32)]),
            "AlibabaHPN_32g_8gps_DualToR_DualPlane_200Gbps_H100"
        );
        assert_eq!(name(None, (true, false, false), &[("gpu", 16)]), "Rail_Opti_SingleToR_16g_8gps_400Gbps_H100");
        assert_eq!(name(None, (false, true, false), &[]), "No_Rail_Opti_32g_8gps_DualToR_400Gbps_H100");
        assert_eq!(name(None, (true, true, false), &[]), "Rail_Opti_32g_8gps_DualToR_SinglePlane_400Gbps_H100");
    }

    #[test]
    fn rail_optimised_wiring() {
        let p = params(None, (true, false, false), &[("gpu", 32), ("gpu_per_server", 4), ("nics_per_aswitch", 2)]);
        let f = build(&p, 1).unwrap();
        let first_asw = 32 + 8;
        let asw: Vec<u32> = (0..16)
            .map(|g| f.platform.links.iter().find(|l| l.src == g && l.dst >= first_asw).unwrap().dst - first_asw)
            .collect();
        // A segment is 2 servers: GPU i → ASW (i // 8)·4 + i % 4.
        assert_eq!(asw, [[0, 1, 2, 3], [0, 1, 2, 3], [4, 5, 6, 7], [4, 5, 6, 7]].concat());
    }

    #[test]
    fn pods_join_through_non_blocking_core_links() {
        let o = [("gpu", 64), ("gpu_per_server", 4), ("nics_per_aswitch", 8), ("psw_switch_num", 8)];
        let p = params(Some("Spectrum-X"), (false, false, false), &o);
        let (one, three) = (build(&p, 1).unwrap(), build(&p, 3).unwrap());
        assert_eq!(three.name, format!("{}_3pods", one.name));
        let (g, n, s, l) = counts(&one);
        assert_eq!(counts(&three), (3 * g, 3 * n, 3 * s + 8, 3 * l + 8 * 3));
        // Each PSW has 8 ASWs of 400 Gbps below it.
        let core: Vec<f64> = three.platform.links.iter().rev().take(48).map(|l| l.bandwidth).collect();
        assert!(core.iter().all(|&b| b == 8.0 * 50.0), "{core:?}");
    }

    #[test]
    fn asw_count_follows_gpus_with_a_warning() {
        // DCN+'s default of 8 ASWs is corrected silently; an -asn the user gave, with a warning.
        let f = build(&params(Some("DCN+"), (false, false, false), &[("gpu", 128)]), 1).unwrap();
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
        assert_eq!(counts(&f).2, 2 + 8);
        let f = build(&params(Some("DCN+"), (false, false, false), &[("gpu", 128), ("asw_switch_num", 8)]), 1).unwrap();
        assert_eq!(f.warnings, ["asw_switch_num (-asn) 8 does not fit 128 GPUs: using 2"]);
        assert_eq!(counts(&f).2, 2 + 8);
    }

    #[test]
    fn bad_parameters_name_the_flag() {
        let err = |t, shape, o: &[(&str, i64)], pods| build(&params(t, shape, o), pods).unwrap_err().to_string();
        assert!(
            err(Some("Spectrum-X"), (false, false, false), &[("gpu", 8192)], 1).contains("8192 GPUs need 16 segments")
        );
        assert!(err(None, (false, false, false), &[("gpu", 36)], 1).contains("36 GPUs do not fill whole servers of 8"));
        assert!(err(None, (false, false, true), &[], 1).contains("not rail-optimised cannot be dual-plane"));
        assert!(
            err(None, (false, false, false), &[("gpu", 0)], 1).contains("gpu (-g): must be a whole number ≥ 1, got 0")
        );
        assert!(err(None, (false, false, false), &[], 0).contains("template: pods: must be a whole number ≥ 1, got 0"));
        let p = TemplateParams::resolve(
            Some("DCN+"),
            false,
            false,
            false,
            &[("bandwidth".into(), Value::Text("400G".into()))],
        );
        let e = build(&p.unwrap(), 1).unwrap_err().to_string();
        assert_eq!(e, "template: bandwidth (-bw): '400G' is not a data rate (e.g. 400Gbps, 2880Gbps, 100GBps)");
        let e = TemplateParams::resolve(Some("Clos"), false, false, false, &[]).unwrap_err().to_string();
        assert!(
            e.starts_with("template: topology: unknown template 'Clos' (valid: Spectrum-X, AlibabaHPN, DCN+"),
            "{e}"
        );
    }
}
