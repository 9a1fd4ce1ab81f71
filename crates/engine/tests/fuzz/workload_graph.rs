//! The workload-graph reader (node-link JSON with HCSim's Table 3 attributes; GraphML and
//! NetworkX graphs reach the engine as these): mutated graphs are refused naming the file, the
//! vertex or edge and the field, or accepted, written back and read again to the same graph, and
//! then run on a one-server HCSim Fig. 6b system without fault.

use clustersim_engine::network::flow::network::Tuning;
use clustersim_engine::platform::hcsim::HcsimParams;
use clustersim_engine::platform::Platform;
use clustersim_engine::workload_graph::lower::{Access, Options};
use clustersim_engine::workload_graph::run::run_graph;
use clustersim_engine::workload_graph::WorkloadGraph;
use serde_json::Value;

use crate::mutate::{mutate_json, Rng};
use crate::{campaign, refused, Outcome, Verdict};

const FILE: &str = "graph.json";

/// Most vertex runs (vertices × iterations) an accepted input is run for: larger ones are only
/// read and written back (a real graph of that size is fine, a fuzz case of it is slow).
const MAX_RUN: u64 = 4096;

/// Every attribute form: compute vertices on one XPU, a list, a comma-separated string and all
/// of them, each memory choice and data type; a collective and a p2p transfer; a not_first edge
/// closing the loop; and a two-layer data-parallel training step in HCSim's shape.
const SEEDS: [&str; 2] = [
    r#"{"directed": true, "multigraph": false, "graph": {"name": "hand", "iterations": 2},
      "nodes": [{"id": "a", "kind": "compute", "xpu": "s0.x0", "flops": 1e12, "dtype": "fp16", "bytes": "4e9", "memory": "hbm"},
                {"id": 1, "kind": "compute", "xpu": ["s0.x0", "s0.x1"], "flops": 5e11, "bytes": 9e10, "memory": "auto"},
                {"id": "c", "kind": "compute", "xpu": "s0.x0,s0.x1", "flops": 0, "bytes": 1e9, "memory": "s0.cxlmem1"},
                {"id": "d", "kind": "compute", "xpu": "s0.x1", "flops": 1e9, "bytes": 1e9, "memory": "s0.dram0", "start": false},
                {"id": "ar", "kind": "communication", "pattern": "allreduce", "participants": "*", "bytes": 1048576},
                {"id": "t", "kind": "comm", "pattern": "p2p", "src": "s0.x0", "dst": "s0.x1", "bytes": 4096}],
      "links": [{"source": "a", "target": 1}, {"source": 1, "target": "c"}, {"source": "c", "target": "d"},
                {"source": "c", "target": "ar"}, {"source": "ar", "target": "t"},
                {"source": "t", "target": "a", "not_first": true}]}"#,
    r#"{"directed": true, "graph": {"name": "two layers", "iterations": 3},
      "nodes": [{"id": "fp1", "kind": "compute", "xpu": "*", "flops": 2e12, "bytes": 4e10},
                {"id": "fp2", "kind": "compute", "xpu": "*", "flops": 2e12, "bytes": 4e10},
                {"id": "bp2", "kind": "compute", "xpu": "*", "flops": 4e12, "bytes": 6e10},
                {"id": "ar2", "kind": "communication", "pattern": "allreduce", "participants": "*", "bytes": 1e9},
                {"id": "bp1", "kind": "compute", "xpu": "*", "flops": 4e12, "bytes": 6e10},
                {"id": "ar1", "kind": "communication", "pattern": "reducescatter", "participants": "*", "bytes": 1e9}],
      "edges": [{"source": "fp1", "target": "fp2"}, {"source": "fp2", "target": "bp2"}, {"source": "bp2", "target": "ar2"},
                {"source": "bp2", "target": "bp1"}, {"source": "bp1", "target": "ar1"},
                {"source": "ar1", "target": "fp1", "not_first": true}, {"source": "ar2", "target": "fp2", "not_first": true}]}"#,
];

const WORDS: &[&str] = &[
    "compute",
    "communication",
    "comm",
    "kind",
    "id",
    "xpu",
    "flops",
    "dtype",
    "bytes",
    "memory",
    "auto",
    "hbm",
    "fp32",
    "fp16",
    "fp8",
    "pattern",
    "allreduce",
    "allgather",
    "alltoall",
    "broadcast",
    "p2p",
    "participants",
    "src",
    "dst",
    "start",
    "source",
    "target",
    "not_first",
    "iterations",
    "name",
    "graph",
    "nodes",
    "links",
    "edges",
    "directed",
    "multigraph",
    "*",
    "s0.x0",
    "s0.x3",
    "s0.cxlmem2",
    "s0.dram1",
    "s0.xsw",
    "core",
    "a",
    "ar",
    "1e300",
    "-1",
    "0",
    "nan",
    "1048576",
    "true",
];

fn platform() -> Platform {
    let mut params = HcsimParams::paper(true, "H100", 4);
    params.xpus_per_server = 4;
    params.dram_bytes = 1e12;
    params.cxl_memory_bytes = 2e11;
    Platform::hcsim("hcsim-cxl", &params).unwrap()
}

fn read_and_run(text: &str, p: &Platform) -> Verdict {
    let g = match WorkloadGraph::parse_json(FILE, text) {
        // Only a JSON syntax error has a line: the others name the vertex or edge instead.
        Err(e) => return refused(FILE, &e, |e| e.field.as_deref() != Some("JSON")),
        Ok(g) => g,
    };
    let again = WorkloadGraph::parse_json(FILE, &g.to_json()).map_err(|e| format!("written back, refused: {e}"))?;
    if again != g {
        return Err("written back, read as another graph".into());
    }
    let runs = g.vertices.len() as u64 * u64::from(g.iterations.unwrap_or(1));
    if runs > MAX_RUN {
        return Ok(Outcome::Accepted);
    }
    let o = Options { iterations: None, access: Access::Auto, concurrent: false };
    match run_graph(FILE, &g, p, &o, &Tuning::default(), None, &mut |_| true) {
        Ok(r) if r.execution.end_ns.is_finite() && r.execution.end_ns >= 0.0 => Ok(Outcome::Accepted),
        Ok(r) => Err(format!("ran to a time of {} ns", r.execution.end_ns)),
        Err(e) => refused(FILE, &e, |_| true),
    }
}

#[test]
fn workload_graph_documents() {
    let seeds: Vec<Value> = SEEDS.iter().map(|t| serde_json::from_str(t).unwrap()).collect();
    let p = platform();
    campaign(
        "workload graph JSON",
        |rng: &mut Rng| {
            let seed = &seeds[rng.below(seeds.len())];
            mutate_json(rng, seed, WORDS)
        },
        |text| read_and_run(text, &p),
    );
}
