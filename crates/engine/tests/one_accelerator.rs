//! One accelerator, one description: SimAI's `-g_type H100`, a training run's `--gpu h100` and an
//! H100 in a platform file or graph all resolve the catalog's figures.

use clustersim_engine::catalog::{Arch, Catalog, Dtype};
use clustersim_engine::collective::nccl::nvlink_gbps;
use clustersim_engine::compute::Device;
use clustersim_engine::network::analytical::server_spec::ServerSpec;
use clustersim_engine::platform::xpu::XpuSpec;
use clustersim_engine::platform::Platform;

const PLATFORM: &str = "\
node g0 gpu type=H100
node g1 gpu type=h100
node nvs nvswitch
link g0 nvs 900GB/s 100ns
link g1 nvs 900GB/s 100ns
";

const GRAPH: &str = r#"{"nodes": [{"id": "x0", "kind": "xpu", "type": "H100"}, {"id": "x1", "kind": "xpu", "type": "h100"},
  {"id": "sw", "kind": "xpu_switch"}],
  "links": [{"source": "x0", "target": "sw", "bandwidth": 9e11, "latency": 1e-7},
            {"source": "x1", "target": "sw", "bandwidth": 9e11, "latency": 1e-7}]}"#;

#[test]
fn every_path_to_an_h100_reads_the_catalog() {
    let h100 = Catalog::shipped().accelerator("h100").unwrap();
    assert_eq!(
        (h100.nvlink_busbw, h100.nvls_busbw, h100.nic_busbw, h100.arch),
        (370.8, Some(475.0), 48.5, Some(Arch::Hopper))
    );

    // SimAI-Analytical's -g_type H100 (single precision, as SimAI computes).
    let simai = ServerSpec::new(8, 8, "H100", "cx7").unwrap();
    assert!((f64::from(simai.nvlink()) - h100.nvlink_busbw).abs() < 1e-4);
    assert_eq!(simai.gpu.nvls_busbw.map(f64::from), h100.nvls_busbw);
    assert_eq!((f64::from(simai.nic_bw()), simai.gpu.arch), (h100.nic_busbw, h100.arch));

    // train --gpu h100: the run's device is the catalog entry, read back from its mapping.
    let device: Device = serde_json::from_value(h100.to_value()).unwrap();
    assert_eq!(&device.accelerator, h100);

    // A platform file's H100: the flow model caps its NVLink at the catalog's figure.
    let p = Platform::parse_text("p.platform", PLATFORM).unwrap();
    for g in 0..2 {
        let t = p.accelerator_type(g);
        assert_eq!((nvlink_gbps(t), Catalog::arch_of(t)), (Some(h100.nvlink_busbw), h100.arch), "{t}");
    }

    // A graph's H100: peaks and HBM from the catalog.
    let g = Platform::parse_graph_json("g.json", GRAPH).unwrap();
    for x in 0..2 {
        let spec = g.attrs[x].xpu.as_ref().unwrap();
        assert_eq!(spec, &XpuSpec::of(h100));
        assert_eq!(
            (spec.flops(Dtype::Bf16), spec.memory_bytes, spec.memory_bandwidth),
            (Some(989e12), 80e9, Some(3350.0))
        );
    }
}
