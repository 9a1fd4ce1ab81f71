use super::*;
use crate::network::flow::{completion_times, FlowSpec};
use crate::platform::xpu::Dtype;

fn count(p: &Platform, kind: NodeKind) -> usize {
    p.kinds.iter().filter(|&&k| k == kind).count()
}

fn node(p: &Platform, name: &str) -> u32 {
    (0..p.node_count()).find(|&v| p.node_name(v) == name).unwrap()
}

/// A lone flow's time: Σ latency + bytes / slowest link (ns).
fn lone(p: &Platform, src: &str, dst: &str, bytes: f64) -> f64 {
    let f = FlowSpec { src: node(p, src), dst: node(p, dst), bytes, start_ns: 0.0 };
    completion_times(p, &[f], None, 0).unwrap()[0]
}

#[test]
fn the_papers_4096_xpu_system_has_the_papers_parts() {
    let p = Platform::hcsim("t", &HcsimParams::paper(true, "H100", 4096)).unwrap();
    // 512 servers of 8 XPUs on 32 ToRs of 16 servers.
    assert_eq!(count(&p, NodeKind::Gpu), 4096);
    assert_eq!(count(&p, NodeKind::Cpu), 1024);
    assert_eq!(count(&p, NodeKind::PcieSwitch), 1024);
    assert_eq!(count(&p, NodeKind::NvSwitch), 512);
    assert_eq!(count(&p, NodeKind::Nic), 1024);
    assert_eq!(count(&p, NodeKind::Switch), 33);
    assert_eq!(count(&p, NodeKind::CxlSwitch), 512 + 32 + 1);
    // DRAM behind each CPU, a Type-3 expander per XPU.
    assert_eq!(count(&p, NodeKind::Memory), 1024 + 4096);
    assert_eq!((p.placement.ranks(), p.placement.domains(), p.placement.largest_domain()), (4096, 512, 8));
    let pcie = HcsimParams { coherent: false, ..HcsimParams::paper(false, "H100", 4096) };
    let q = Platform::hcsim("t", &pcie).unwrap();
    assert_eq!((count(&q, NodeKind::CxlSwitch), count(&q, NodeKind::Memory)), (0, 1024));
}

#[test]
fn lone_transfers_take_the_table5_paths() {
    let gb = 1e9;
    let cxl = Platform::hcsim("t", &HcsimParams::paper(true, "H100", 256)).unwrap();
    // Same server: XPU link both ways (900 GB/s, 100 ns each).
    assert!((lone(&cxl, "s0.x0", "s0.x7", gb) - (200.0 + gb / 900.0)).abs() < 1e-6);
    // Other server, same rack: XPU → server CXL switch → rack CXL switch → ... : 4 CXL hops.
    assert!((lone(&cxl, "s0.x0", "s1.x3", gb) - (800.0 + gb / 128.0)).abs() < 1e-6);
    // Other rack: 6 CXL hops.
    assert!((lone(&cxl, "s0.x0", "s16.x0", gb) - (1200.0 + gb / 128.0)).abs() < 1e-6);
    // Its own Type-3 expander: 2 CXL hops.
    assert!((lone(&cxl, "s3.x5", "s3.cxlmem5", gb) - (400.0 + gb / 128.0)).abs() < 1e-6);
    // Host DRAM: PCIe to the switch, the 4-link uplink, the DRAM link.
    assert!((lone(&cxl, "s0.x5", "s0.dram1", gb) - (250.0 + 250.0 + 100.0 + gb / 128.0)).abs() < 1e-6);
    // Without CXL, another server is over Ethernet: PCIe, NIC, ToR (and core across racks).
    let pcie = Platform::hcsim("t", &HcsimParams::paper(false, "H100", 256)).unwrap();
    let eth = 2.0 * (250.0 + 250.0 + 5000.0);
    assert!((lone(&pcie, "s0.x0", "s1.x3", gb) - (eth + gb / 12.5)).abs() < 1e-6);
    assert!((lone(&pcie, "s0.x0", "s16.x0", gb) - (eth + 10_000.0 + gb / 12.5)).abs() < 1e-6);
    // The other CPU's DRAM: over UPI (62.4 GB/s).
    assert!((lone(&pcie, "s0.x0", "s0.dram1", gb) - (500.0 + 100.0 + 100.0 + gb / 62.4)).abs() < 1e-6);
}

#[test]
fn four_xpus_share_their_cpus_pcie_uplink() {
    // 4 XPUs of one PCIe switch read DRAM at once: 4 × 128 GB/s on a 512 GB/s uplink, and the
    // 512 GB/s DRAM link: each gets 128 GB/s. With 2 PCIe uplinks, 64 GB/s each.
    let mut params = HcsimParams::paper(false, "H100", 8);
    let gb = 1e9;
    for (uplinks, rate) in [(4, 128.0), (2, 64.0)] {
        params.pcie_uplinks = uplinks;
        let p = Platform::hcsim("t", &params).unwrap();
        let flows: Vec<FlowSpec> =
            (0..4).map(|x| FlowSpec { src: x, dst: node(&p, "s0.dram0"), bytes: gb, start_ns: 0.0 }).collect();
        for t in completion_times(&p, &flows, None, 0).unwrap() {
            assert!((t - (600.0 + gb / rate)).abs() < 1e-6, "{uplinks}: {t}");
        }
    }
}

#[test]
fn xpu_types_are_assigned_per_tor() {
    let mut params = HcsimParams::paper(true, "H100", 0);
    params.mix = vec![("h100".into(), 128), ("A100".into(), 128), ("v100".into(), 8)];
    let p = Platform::hcsim("t", &params).unwrap();
    let ty = |r: u32| p.accelerator_type(p.placement.device(r)).to_string();
    assert_eq!(
        (ty(0), ty(127), ty(128), ty(255), ty(256), ty(263)),
        ("H100".into(), "H100".into(), "A100".into(), "A100".into(), "V100".into(), "V100".into())
    );
    let v100 = p.attrs[p.placement.device(256) as usize].xpu.clone().unwrap();
    assert_eq!((v100.flops(Dtype::Fp32), v100.memory_bytes), (Some(15.7e12), 32e9));
    // Any count: a last, partial server and ToR.
    params.mix = vec![("H100".into(), 20)];
    params.servers_per_tor = 2;
    let p = Platform::hcsim("t", &params).unwrap();
    assert_eq!((p.placement.domains(), count(&p, NodeKind::Switch)), (3, 3));
}

#[test]
fn bad_parameters_name_the_field() {
    let bad = |f: &dyn Fn(&mut HcsimParams), field: &str, says: &str| {
        let mut params = HcsimParams::paper(true, "H100", 256);
        f(&mut params);
        let Err(e) = Platform::hcsim("hcsim-cxl", &params) else { panic!("accepted: {field}") };
        assert_eq!(e.field.as_deref(), Some(field), "{e}");
        assert!(e.message.contains(says), "{e}");
        assert!(e.to_string().starts_with("hcsim-cxl: "), "{e}");
    };
    bad(&|p| p.mix = vec![("H100".into(), 100), ("A100".into(), 156)], "mix", "multiple of the 128 XPUs");
    bad(&|p| p.mix[0].0 = "TPU".into(), "mix", "unknown XPU type 'TPU'");
    bad(&|p| p.xpus_per_server = 7, "xpus_per_server", "split evenly");
    bad(&|p| p.links.cxl.bandwidth = 0.0, "link cxl", "must be positive");
    bad(&|p| p.links.upi.latency_ns = -1.0, "link upi", "latency");
    bad(&|p| p.dram_bytes = 1e30, "dram", "more than any memory device holds");
    bad(&|p| p.servers_per_tor = 0, "servers_per_tor", "at least 1");
    bad(&|p| p.cxl_window_bytes = 0.0, "cxl_window", "must be positive");
    bad(&|p| p.dram_window_bytes = f64::NAN, "dram_window", "must be positive");
}
