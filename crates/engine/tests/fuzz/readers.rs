//! One campaign per reader: its seeds (small valid files of each variant), the words of its
//! format, and what accepting an input must mean.

use clustersim_engine::network::analytical::busbw_file::BusbwTable;
use clustersim_engine::network::analytical::ratio::{RatioTable, RatioTables};
use clustersim_engine::network::analytical::server_spec::ServerSpec;
use clustersim_engine::platform::hcsim::HcsimParams;
use clustersim_engine::platform::routing::Routes;
use clustersim_engine::platform::{NodeKind, Platform};
use clustersim_engine::simai::build::{BuildOptions, Overlap, SimaiWorkload, MAX_GPUS};
use clustersim_engine::simai::file::WorkloadFile;
use clustersim_engine::simai::run::{run_analytical, RunConfig};
use clustersim_engine::training::{run_training, TrainingInput};
use clustersim_engine::workload::Workload;
use serde_json::Value;

use crate::mutate::{mutate_json, mutate_text, Rng};
use crate::{campaign, refused, Outcome, Verdict};

/// The user's file, as the front ends name it.
const FILE: &str = "in.txt";

fn never(_: &clustersim_engine::Error) -> bool {
    false
}

const WORKLOADS: [&str; 5] = [
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 2 pp: 2 vpp: 2 ga: 2 all_gpus: 16 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 6291456.0\n3\n\
     embedding_layer\t-1\t556000\tALLREDUCE\t16777216\t1\tNONE\t0\t1\tNONE\t0\t1\n\
     attention_layer\t-1\t5\tALLGATHER\t100\t5\tREDUCESCATTER\t1000\t5\tALLREDUCE\t4096\t100\n\
     mlp_moelayer\t-1\t5\tALLTOALL_EP\t100\t5\tALLTOALL_EP\t100\t5\tREDUCESCATTER_DP_EP\t4096\t100\n",
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 2 vpp: 8 ga: 4 all_gpus: 8 checkpoints: 0 checkpoint_initiates: 0 pp_comm 50331648\n2\n\
     grad_gather\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t2807758848\t100\n\
     layernorm\t-1\t1\tALLREDUCE\t4096\t1\tNONE\t0\t1\tALLREDUCE_DP_EP\t1024\t100\n",
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD\tmodel_parallel_NPU_group: 4 checkpoints: 0 checkpoint_initiates: 0\n1\n\
     norm -1 0 BROADCAST 16384 1 NONE 0 1 REDUCE 64 100\n",
    "MICRO\n1\nmicro_test -1 1 NONE 0 1 NONE 0 1 ALLGATHER 4096 1\n",
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus: 8 checkpoints: 1 3 checkpoint_initiates: 2 1 2\n2\n\
     embedding_layer     -1 556000  ALLREDUCE   16777216      1       NONE 0        1      NONE   0      1 \n\
     embedding_layer     -1 556000  ALLREDUCEALLTOALL   67108864      1       NONE 0        1      NONE   0      1 \n",
];

const WORKLOAD_WORDS: &[&str] = &[
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD",
    "MICRO",
    "DATA",
    "model_parallel_NPU_group:",
    "ep:",
    "pp:",
    "vpp:",
    "ga:",
    "all_gpus:",
    "checkpoints:",
    "checkpoint_initiates:",
    "pp_comm:",
    "pp_comm",
    "NONE",
    "ALLREDUCE",
    "ALLGATHER",
    "REDUCESCATTER",
    "ALLTOALL",
    "BROADCAST",
    "REDUCE",
    "ALLTOALL_EP",
    "ALLREDUCE_DP_EP",
    "ALLREDUCEALLTOALL",
    "_EP",
];

fn simai_config(compat: bool) -> RunConfig {
    RunConfig {
        compat,
        gpus: None,
        platform: ServerSpec::new(8, 8, "H100", "cx7").unwrap(),
        busbw: None,
        ratios: RatioTables::builtin(),
        overlap: Overlap { dp: 0.0, tp: 0.0, ep: 0.0, pp: 1.0 },
        run_name: "fuzz".into(),
        lenient: false,
        flow: None,
    }
}

/// A SimAI workload file: read, written back and read again to the same rows; then built and
/// run (both modes) on a small world, where every refusal still names the file.
fn simai_workload(text: &str, configs: &[RunConfig; 2]) -> Verdict {
    let lenient = text.len() % 2 == 1;
    let f = match WorkloadFile::parse(FILE, text, lenient) {
        Ok(f) => f,
        Err(e) => return refused(FILE, &e, never),
    };
    let written = f.to_text();
    let again = WorkloadFile::parse(FILE, &written, false).map_err(|e| format!("written back, refused: {e}"))?;
    let strip = |w: &WorkloadFile| {
        w.rows
            .iter()
            .map(|r| (r.line, r.clone()))
            .map(|(_, mut r)| {
                r.line = 0;
                r
            })
            .collect::<Vec<_>>()
    };
    if again.header != f.header || strip(&again) != strip(&f) {
        return Err(format!("written back as {written:?}, read as another workload"));
    }
    if again.to_text() != written {
        return Err("writing is not idempotent".into());
    }
    // Building and running: small worlds, and worlds beyond the limit (to see them refused);
    // a big world in between takes memory in proportion, as it should.
    let world = f.header.all_gpus.unwrap_or(0);
    let small = world <= 4096 && f.rows.len() <= 64;
    if world > 65536 && world <= MAX_GPUS {
        return Ok(Outcome::Accepted);
    }
    let opts = BuildOptions { gpus: None, gpus_per_server: 8, compat: false, overlap: configs[0].overlap };
    match SimaiWorkload::build(f, &opts) {
        Err(e) => return refused(FILE, &e, |_| true),
        Ok(sw) if small => {
            let w = &sw.workload;
            let back = Workload::from_json("w.json", &w.to_json()).map_err(|e| format!("built IR refused: {e}"))?;
            if &back != w {
                return Err("built IR does not round-trip".into());
            }
        }
        Ok(_) => return Ok(Outcome::Accepted),
    }
    for cfg in configs {
        let cfg = RunConfig { lenient, ..cfg.clone() };
        match run_analytical(FILE, text, &cfg, &mut |_| true) {
            Ok(run) => {
                if !(run.execution.end_ns.is_finite() && run.execution.end_ns >= 0.0) {
                    return Err(format!("ran to {} ns", run.execution.end_ns));
                }
            }
            // A run may fail on the combination of file and options (a size beyond a ratio
            // table, a group SimAI cannot price): then the table or option is named.
            Err(e) => {
                refused(&e.file.clone(), &e, |_| true)?;
            }
        }
    }
    Ok(Outcome::Accepted)
}

#[test]
fn simai_workload_files() {
    let configs = [simai_config(false), simai_config(true)];
    campaign(
        "SimAI workload",
        |rng: &mut Rng| {
            let seed = *rng.pick(&WORKLOADS);
            mutate_text(rng, seed, WORKLOAD_WORDS)
        },
        |text| simai_workload(text, &configs),
    );
}

/// Two servers of 2 GPUs, an NVSwitch each, one ToR (SimAI's generator layout).
const TOPOLOGY: &str = "7 2 2 1 8 H100\n4 5 6 \n\
    0 4 2880Gbps 0.000025ms 0\n0 6 400Gbps 0.0005ms 0\n1 4 2880Gbps 0.000025ms 0\n1 6 400Gbps 0.0005ms 0\n\
    2 5 2880Gbps 0.000025ms 0\n2 6 400Gbps 0.0005ms 0\n3 5 2880Gbps 0.000025ms 0\n3 6 400Gbps 0.0005ms 0\n";

const TOPOLOGIES: [&str; 3] = [
    TOPOLOGY,
    // Two GPUs on two ToRs under a spine; ids wrapped over lines, no gpu_type, mixed units.
    "5 1 0 3 4\n2\n3 4\n0 2 100Gbps 1us 0\n1 3 12.5GBps 1000ns 0.001\n2 4 400000Mbps 0.000001s 0\n3 4 1Tbps 500ns 0\n",
    "2 2 0 0 1 A100\n\n0 1 2400Gbps 0.000025ms 0\n",
];

const TOPOLOGY_WORDS: &[&str] = &[
    "400Gbps", "2880Gbps", "1Kibps", "8bps", "1GBps", "1B/s", "1Gb/s", "0.0005ms", "25ns", "1ps", "1min", "1h", "1d",
    "H100",
];

/// A SimAI topology file: read, written back and read again to the same topology.
fn simai_topology(text: &str) -> Verdict {
    match Platform::parse_simai(FILE, text) {
        Err(e) => refused(FILE, &e, |e| {
            e.field.as_deref() == Some("links") && e.message.starts_with("the topology is disconnected")
        }),
        Ok(t) => {
            let written = t.to_simai().map_err(|e| format!("cannot write back: {e}"))?;
            let again = Platform::parse_simai(FILE, &written)
                .map_err(|e| format!("written back as {written:?}, refused: {e}"))?;
            if again != t {
                return Err(format!("written back as {written:?}, read as another topology"));
            }
            Ok(Outcome::Accepted)
        }
    }
}

#[test]
fn simai_topology_files() {
    campaign(
        "SimAI topology",
        |rng: &mut Rng| {
            let seed = *rng.pick(&TOPOLOGIES);
            mutate_text(rng, seed, TOPOLOGY_WORDS)
        },
        simai_topology,
    );
}

const PLATFORMS: [&str; 2] = [
    // Two H100 on a reducing NVSwitch and two A100 on another, one ToR, a CXL expander.
    "node h0 gpu type=H100\nnode h1 gpu type=h100\nnode nvs0 nvswitch reduction=yes\nnode a0 gpu type=A100\n\
     node a1 gpu type=A100\nnode nvs1 nvswitch\nnode tor switch tier=tor\n\
     node cxl memory kind=cxl capacity=512GiB bandwidth=64GB/s latency=250ns\nnode csw cxl_switch\n\
     link h0 nvs0 3600Gbps 25ns\nlink h1 nvs0 3600Gbps 25ns\nlink a0 nvs1 2400Gbps 25ns\n\
     link a1 nvs1 2400Gbps 25ns\nlink h0 tor 400Gbps 500ns\nlink h1 tor 400Gbps 500ns\n\
     link a0 tor 200Gbps 500ns\nlink a1 tor 200Gbps 500ns\nlink cxl csw 64GB/s 100ns\n\
     link csw tor 64GB/s 100ns simplex\nrank 0 a1\nrank 1 h0\nrank 2 a0\nrank 3 h1\n",
    "# comment\nnode g0 xpu type=MI300X forward=no\nnode g1 accelerator type=mi300x\nnode n0 nic\n\
     node c0 cpu forward=yes\nnode p0 pcie_switch\nnode s0 switch tier=spine\n\
     link g0 p0 64GB/s 1us\nlink g1 p0 64GB/s 1us # shared PCIe\nlink p0 n0 400Gbps 100ns\n\
     link n0 s0 400Gbps 1us\nlink c0 p0 32GB/s 1us\n",
];

const PLATFORM_WORDS: &[&str] = &[
    "node",
    "link",
    "rank",
    "gpu",
    "nvswitch",
    "switch",
    "memory",
    "cpu",
    "nic",
    "cxl_switch",
    "type=H100",
    "reduction=yes",
    "tier=core",
    "forward=yes",
    "kind=dram",
    "capacity=1TB",
    "simplex",
    "400Gbps",
    "25ns",
];

/// A platform file: accepted platforms place every rank on a GPU and keep their names.
fn platform_file(text: &str) -> Verdict {
    match Platform::parse_platform(FILE, text) {
        Err(e) => refused(FILE, &e, |e| {
            e.field.as_deref() == Some("links") && e.message.starts_with("the topology is disconnected")
                || e.field.as_deref() == Some("nodes") && e.message.starts_with("no gpu nodes")
        }),
        Ok(p) => {
            let pl = &p.placement;
            for r in 0..pl.ranks() {
                if p.kinds[pl.device(r) as usize] != NodeKind::Gpu {
                    return Err(format!("rank {r} placed on a {:?}", p.kinds[pl.device(r) as usize]));
                }
            }
            Ok(Outcome::Accepted)
        }
    }
}

#[test]
fn platform_files() {
    campaign(
        "platform file",
        |rng: &mut Rng| {
            let seed = *rng.pick(&PLATFORMS);
            mutate_text(rng, seed, PLATFORM_WORDS)
        },
        platform_file,
    );
}

const BUSBW: [&str; 2] = [
    "test\nTP:\nallreduce,: 300\nallgather,: 280\nreducescatter,: 280\nalltoall,: 230\nDP:\nallreduce,: null\n\
     allgather,: 380\nreducescatter,: 380\nalltoall,: null\nEP:\nallreduce,: null\nallgather,: 45\n\
     reducescatter,: 45\nalltoall,: 80\nPP:\nbusbw: 47.5",
    "# measured\n  TP:\n  allreduce: 1e2   \n# DP\nDP_EP:\nAllGather,x: 3.5\n\nPP:\nbusbw: null\n",
];

const BUSBW_WORDS: &[&str] =
    &["TP:", "DP:", "EP:", "DP_EP:", "PP:", "allreduce,", "allgather", "reducescatter", "alltoall", "busbw", "null"];

/// busbw.yaml: every value read is a positive, finite bandwidth or null.
fn busbw(text: &str) -> Verdict {
    match BusbwTable::parse(FILE, text) {
        Err(e) => refused(FILE, &e, never),
        Ok(t) => {
            for ((sec, key), v) in &t.values {
                match (v, t.get(sec, key)) {
                    (Some(v), Ok(w)) if *v == w && w.is_finite() && w > 0.0 => {}
                    (None, Err(e)) => {
                        refused(FILE, &e, |_| true)?;
                    }
                    (v, got) => return Err(format!("{sec}.{key}: read {v:?}, get gives {got:?}")),
                }
            }
            Ok(Outcome::Accepted)
        }
    }
}

#[test]
fn busbw_files() {
    campaign(
        "busbw.yaml",
        |rng: &mut Rng| {
            let seed = *rng.pick(&BUSBW);
            mutate_text(rng, seed, BUSBW_WORDS)
        },
        busbw,
    );
}

const RATIOS: [&str; 3] = [
    include_str!("../../data/ratio/nvlink_ratio.csv"),
    include_str!("../../data/ratio/nic_ratio.csv"),
    include_str!("../../data/ratio/ata_ratio.csv"),
];

/// A ratio table: lookups at any size and node count give a positive, finite ratio or a refusal
/// naming the file.
fn ratio(text: &str) -> Verdict {
    match RatioTable::parse(FILE, text) {
        Err(e) => refused(FILE, &e, never),
        Ok(t) => {
            for bytes in [0.0, 1.0, 1048576.0, 16777216.0, 1e9, 1.7e10, 1e12] {
                for nodes in [1, 2, 3, 9, 16, 128, 1024] {
                    let v = t.value(bytes, nodes);
                    if !(v.is_finite() && v > 0.0) {
                        return Err(format!("corrected ratio {v} at {bytes} bytes on {nodes} nodes"));
                    }
                    match t.simai_value(bytes, nodes) {
                        Ok(v) if v.is_finite() && v > 0.0 => {}
                        Ok(v) => return Err(format!("ratio {v} at {bytes} bytes on {nodes} nodes")),
                        Err(e) => {
                            refused(FILE, &e, |_| true)?;
                        }
                    }
                }
            }
            Ok(Outcome::Accepted)
        }
    }
}

#[test]
fn ratio_tables() {
    campaign(
        "ratio table",
        |rng: &mut Rng| {
            let seed = *rng.pick(&RATIOS);
            mutate_text(rng, seed, &["16777216", "17179869184", "Size"])
        },
        ratio,
    );
}

const ROUTES: [&str; 2] =
    ["# GPU 0 to GPU 2 through the ToR\n0 6 2\n2 6 0\n1 4 0  # over the NVSwitch\n3 5 2\n", "0 6 3\n\n\n1 6 2\n"];

/// A routes file against the 7-node topology: every accepted route is a path of links.
fn routes(text: &str, topo: &Platform) -> Verdict {
    match Routes::parse(FILE, text, topo) {
        Err(e) => refused(FILE, &e, never),
        Ok(r) => {
            for src in 0..topo.node_count() {
                for dst in 0..topo.node_count() {
                    if let Some(links) = r.get(src, dst) {
                        let mut at = src;
                        for &l in links {
                            let link = topo.links[l as usize];
                            if link.src != at {
                                return Err(format!("route {src} -> {dst} is not a path"));
                            }
                            at = link.dst;
                        }
                        if at != dst {
                            return Err(format!("route {src} -> {dst} ends at {at}"));
                        }
                    }
                }
            }
            Ok(Outcome::Accepted)
        }
    }
}

#[test]
fn routes_files() {
    let topo = Platform::parse_simai("t.txt", TOPOLOGY).unwrap();
    campaign(
        "routes",
        |rng: &mut Rng| {
            let seed = *rng.pick(&ROUTES);
            mutate_text(rng, seed, &["6", "4", "5", "7", "#"])
        },
        |text| routes(text, &topo),
    );
}

/// Workload IR seeds: a hand-written one with every op kind and group kind, and one built
/// from a SimAI workload.
fn ir_seeds() -> Vec<Value> {
    let hand = r#"{"format": "clustersim-workload", "version": 1,
        "layout": [{"axis": "TP", "size": 2}, {"axis": "PP", "size": 2}],
        "groups": [{"name": "TP", "axes": ["TP"]}, {"name": "PP", "axes": ["PP"]},
                   {"name": "EMB", "instances": [[0, 2], [1, 3]]}],
        "rows": ["layer 0", "layer 1"],
        "rank_class": [0, 0, 1, 1], "class_program": [0, 1],
        "programs": [
          {"ops": [{"kind": "COMP", "ns": 1000.0, "deps": [], "row": 0, "phase": "fwd"},
                   {"kind": "COMM_COLL", "collective": "allreduce", "group": 0, "bytes": 1048576, "deps": [0]},
                   {"kind": "SEND", "group": 1, "offset": 1, "bytes": 8, "deps": [1], "row": 1},
                   {"kind": "COMM_COLL", "collective": "allgather", "group": 2, "bytes": 64, "phase": "wg"}]},
          {"ops": [{"kind": "RECV", "group": 1, "offset": -1, "bytes": 8},
                   {"kind": "COMP", "ns": 2.5e3, "deps": [0], "phase": "bwd"},
                   {"kind": "COMM_COLL", "collective": "reducescatter", "group": 0, "bytes": 4096, "deps": [1]},
                   {"kind": "COMM_COLL", "collective": "allgather", "group": 2, "bytes": 64}]}]}"#;
    let built = {
        let f = WorkloadFile::parse("w.txt", WORKLOADS[0], false).unwrap();
        let opts = BuildOptions {
            gpus: None,
            gpus_per_server: 8,
            compat: false,
            overlap: Overlap { dp: 0.0, tp: 0.0, ep: 0.0, pp: 1.0 },
        };
        SimaiWorkload::build(f, &opts).unwrap().workload.to_json()
    };
    [hand, built.as_str()].iter().map(|t| serde_json::from_str(t).unwrap()).collect()
}

const IR_WORDS: &[&str] = &[
    "COMP",
    "COMM_COLL",
    "SEND",
    "RECV",
    "allreduce",
    "alltoall",
    "broadcast",
    "TP",
    "PP",
    "EP",
    "DP_EP",
    "CP",
    "fwd",
    "bwd",
    "wg",
    "other",
    "kind",
    "deps",
    "group",
    "offset",
    "bytes",
    "ns",
    "row",
    "phase",
    "instances",
    "axes",
];

/// Workload IR JSON: written back and read again to the same workload.
fn workload_ir(text: &str) -> Verdict {
    match Workload::from_json(FILE, text) {
        Err(e) => refused(FILE, &e, never),
        Ok(w) => {
            let written = w.to_json();
            let again = Workload::from_json(FILE, &written).map_err(|e| format!("written back, refused: {e}"))?;
            if again != w {
                return Err("written back, read as another workload".into());
            }
            Ok(Outcome::Accepted)
        }
    }
}

#[test]
fn workload_ir_files() {
    let seeds = ir_seeds();
    campaign(
        "workload IR JSON",
        |rng: &mut Rng| {
            let seed = rng_pick(rng, &seeds);
            mutate_json(rng, seed, IR_WORDS)
        },
        workload_ir,
    );
}

fn rng_pick<'a>(rng: &mut Rng, seeds: &'a [Value]) -> &'a Value {
    &seeds[rng.below(seeds.len())]
}

/// The engine's training input (model, accelerator, plan and network as the Python front end
/// sends them): tiny models, so that each input runs a whole iteration.
fn training_seeds() -> Vec<Value> {
    let acc = r#"{"name": "h100", "matmul_tflops": 989, "vector_tflops": 67, "hbm_gb": 80, "hbm_tbps": 3.35,
        "sms": 132, "gemm_efficiency": 0.75, "hbm_efficiency": 0.7, "attention_efficiency": 0.55,
        "kernel_overhead_ns": 2000, "nvlink_busbw": 360, "nic_busbw": 48}"#;
    let net = r#"{"nvlink_busbw": 360, "nvls_busbw": 480, "nic_busbw": 48, "nics_per_server": 4}"#;
    let plan = r#"{"gpus": 8, "gpus_per_server": 4, "tp": 2, "pp": 2, "vpp": 1, "ep": 1, "cp": 1, "mbs": 1,
        "gbs": 4, "seq": 256, "sp": true, "dp": "ddp", "recompute": "none"}"#;
    let models = [
        r#"{"name": "tiny", "family": "gpt", "layers": 2, "hidden": 256, "heads": 4, "kv_heads": 4, "ffn": 1024,
            "vocab": 1000, "seq_len": 256}"#,
        r#"{"name": "moe", "family": "llama", "layers": 2, "hidden": 256, "heads": 4, "kv_heads": 2, "ffn": 512,
            "vocab": 1000, "seq_len": 256, "moe": {"experts": 4, "topk": 2, "expert_ffn": 256, "shared_experts": 1,
            "shared_ffn": 256, "dense_layers": 1}}"#,
        r#"{"name": "mla", "family": "llama", "layers": 4, "hidden": 256, "heads": 4, "kv_heads": 4, "ffn": 512,
            "vocab": 1000, "seq_len": 256, "mla": {"q_lora": 64, "kv_lora": 32, "qk_nope": 32, "qk_rope": 16,
            "v_head": 32}}"#,
    ];
    models
        .iter()
        .map(|m| {
            let doc = format!(
                r#"{{"model": {m}, "plan": {plan}, "accelerator": {acc}, "network": {net},
                    "flash_attention": true, "allow_oom": true}}"#
            );
            serde_json::from_str(&doc).unwrap()
        })
        .collect()
}

const TRAINING_WORDS: &[&str] =
    &["gpt", "llama", "ddp", "distributed", "none", "full", "selective", "moe", "mla", "vpp", "layers", "heads"];

/// A training input: refused with one plain line, or run to a finite, positive time.
fn training(text: &str) -> Verdict {
    let Ok(input) = serde_json::from_str::<TrainingInput>(text) else {
        // The front end builds this document; its own checks name the user's file.
        return Ok(Outcome::Refused);
    };
    if input.plan.gpus > 64 || input.plan.gbs > 256 || input.model.layers > 64 {
        return Ok(Outcome::Refused); // big runs are slow, not wrong
    }
    match run_training(&input, &mut |_| true) {
        Err(e) => {
            let file = e.file.clone();
            refused(&file, &e, |_| true)
        }
        Ok(r) if r.iteration_s.is_finite() && r.iteration_s > 0.0 && r.mfu.is_finite() => Ok(Outcome::Accepted),
        Ok(r) => Err(format!("ran to {} s, MFU {}", r.iteration_s, r.mfu)),
    }
}

#[test]
fn training_inputs() {
    let seeds = training_seeds();
    campaign(
        "training input",
        |rng: &mut Rng| {
            let seed = rng_pick(rng, &seeds);
            mutate_json(rng, seed, TRAINING_WORDS)
        },
        training,
    );
}

/// Platform graph documents (node-link JSON with HCSim's Table 2 attributes; YAML, GraphML and
/// NetworkX graphs reach the engine as these): a hand-written one with every kind and attribute
/// form, and a one-server HCSim Fig. 6b system of 4 XPUs as the engine writes it.
fn graph_seeds() -> Vec<Value> {
    let hand = r#"{"graph": {"name": "hand"}, "directed": false,
      "nodes": [{"id": "x0", "kind": "xpu", "type": "h100"},
                {"id": 7, "kind": "xpu", "fp16_flops": 4e14, "fp32_flops": "1e14", "memory": "64GB", "memory_bandwidth": "1TB/s"},
                {"id": "sw", "kind": "xpu_switch", "reduction": true},
                {"id": "m0", "kind": "memory", "memory_kind": "cxl", "memory": "inf", "latency": "250ns", "bandwidth": 6.4e10},
                {"id": "c", "kind": "cpu", "forward": "yes"}, {"id": "d", "kind": "memory", "memory": 1e12},
                {"id": "csw", "kind": "cxl_switch"}, {"id": "n", "kind": "nic"}, {"id": "p", "kind": "pcie_switch"},
                {"id": "tor", "kind": "switch", "tier": "tor"}],
      "links": [{"source": "x0", "target": "sw", "bandwidth": 9e11, "latency": 1e-7},
                {"source": 7, "target": "sw", "bandwidth": "900GB/s", "latency": "100ns"},
                {"source": "x0", "target": "csw", "bandwidth": 1.28e11, "latency": 2e-7},
                {"source": "m0", "target": "csw", "bandwidth": 1.28e11, "latency": 2e-7, "directed": true},
                {"source": "c", "target": "d", "bandwidth": "400Gbps", "latency": 0},
                {"source": "p", "target": "c", "bandwidth": 5e11, "latency": 2.5e-7},
                {"source": 7, "target": "p", "bandwidth": 1.28e11, "latency": 2.5e-7},
                {"source": "p", "target": "n", "bandwidth": 1.28e11, "latency": 2.5e-7},
                {"source": "n", "target": "tor", "bandwidth": 1.25e10, "latency": 5e-6}],
      "ranks": [7, "x0"]}"#;
    let mut params = HcsimParams::paper(true, "H100", 4);
    params.xpus_per_server = 4;
    let built = Platform::hcsim("t", &params).unwrap().to_graph_json("hcsim-cxl");
    [hand, built.as_str()].iter().map(|t| serde_json::from_str(t).unwrap()).collect()
}

const GRAPH_WORDS: &[&str] = &[
    "xpu",
    "gpu",
    "xpu_switch",
    "nvswitch",
    "switch",
    "cpu",
    "nic",
    "memory",
    "pcie_switch",
    "cxl_switch",
    "id",
    "kind",
    "type",
    "fp16_flops",
    "fp32_flops",
    "bf16_flops",
    "memory_bandwidth",
    "memory_kind",
    "dram",
    "cxl",
    "tier",
    "tor",
    "core",
    "reduction",
    "forward",
    "source",
    "target",
    "bandwidth",
    "latency",
    "directed",
    "ranks",
    "links",
    "edges",
    "nodes",
    "inf",
    "64GB",
    "1e40",
    "128GB/s",
    "200ns",
    "-1",
    "0",
    "nan",
];

/// Whether two platforms agree up to the rounding of a write and read (rates and times go
/// through bytes/s and s in the document).
fn same_platform(a: &Platform, b: &Platform) -> bool {
    let close = |x: f64, y: f64| x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs());
    a.kinds == b.kinds
        && a.placement == b.placement
        && a.links.len() == b.links.len()
        && a.links.iter().zip(&b.links).all(|(x, y)| {
            (x.src, x.dst) == (y.src, y.dst) && close(x.bandwidth, y.bandwidth) && close(x.latency_ns, y.latency_ns)
        })
        && (0..a.node_count())
            .all(|v| a.node_name(v) == b.node_name(v) && a.accelerator_type(v) == b.accelerator_type(v))
}

/// A graph document: refused with the node or link and the field named, or written back and
/// read again to the same platform.
fn platform_graph(text: &str) -> Verdict {
    match Platform::parse_graph_json(FILE, text) {
        // Only a JSON syntax error has a line: the others name the node or link instead.
        Err(e) => refused(FILE, &e, |e| e.field.as_deref() != Some("JSON")),
        Ok(p) => {
            let written = p.to_graph_json("fuzz");
            let again =
                Platform::parse_graph_json(FILE, &written).map_err(|e| format!("written back, refused: {e}"))?;
            if !same_platform(&p, &again) {
                return Err("written back, read as another platform".into());
            }
            Ok(Outcome::Accepted)
        }
    }
}

#[test]
fn platform_graph_documents() {
    let seeds = graph_seeds();
    campaign(
        "platform graph JSON",
        |rng: &mut Rng| {
            let seed = rng_pick(rng, &seeds);
            mutate_json(rng, seed, GRAPH_WORDS)
        },
        platform_graph,
    );
}
