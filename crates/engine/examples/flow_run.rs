//! Time a whole SimAI workload on the flow model (what `benchmarks/bench_flow_run.py` times,
//! without Python): `cargo run --release -p clustersim-engine --example flow_run -- WORKLOAD
//! TOPOLOGY GPUS`, the topology a SimAI file (`clustersim topo -topo Spectrum-X -g 384 -o F`).
//! Prints the CPU seconds of the run, the summary and the events executed.

mod common;

use clustersim_engine::catalog::simai::{GpuType, NicType};
use clustersim_engine::network::analytical::ratio::RatioTables;
use clustersim_engine::network::analytical::server_spec::ServerSpec;
use clustersim_engine::simai::build::Overlap;
use clustersim_engine::simai::run::{run_analytical, RunConfig};
use clustersim_engine::training::Fabric;
use common::cpu_seconds;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [workload, topology, gpus] = args.as_slice() else {
        return Err("usage: flow_run WORKLOAD TOPOLOGY GPUS".into());
    };
    let text = std::fs::read_to_string(workload)?;
    let doc = r#"{"path": "", "algorithm": "auto", "channels": 0, "seed": 0, "qps": 0, "routing": "ecmp"}"#;
    let mut fabric: Fabric = serde_json::from_str(doc)?;
    fabric.path = topology.clone();
    fabric.topology = std::fs::read_to_string(topology)?;
    let cfg = RunConfig {
        compat: false,
        gpus: Some(gpus.parse()?),
        platform: ServerSpec {
            gpus_per_server: 8,
            nics_per_server: 8,
            gpu: GpuType::parse("H100")?,
            nic: NicType::parse("cx7")?,
            nvlink_busbw: None,
            nic_busbw: None,
        },
        busbw: None,
        ratios: RatioTables::builtin(),
        overlap: Overlap { dp: 0.0, tp: 0.0, ep: 0.0, pp: 0.0 },
        run_name: "flow_run".into(),
        lenient: false,
        flow: Some(fabric.config()?),
    };
    let start = cpu_seconds();
    let run = run_analytical(workload, &text, &cfg, &mut |_| true)?;
    let cpu = cpu_seconds() - start;
    println!("cpu_s {cpu:.2} events {} summary {:?}", run.execution.events, run.report.summary);
    Ok(())
}
