//! The workload IR's JSON form: generated workloads survive Rust → JSON → Rust unchanged, bad
//! documents are refused with the file, JSON path and problem, and a hand-written workload runs
//! through the executor to its hand-computed time. Also: engine faults are internal errors.

use std::path::PathBuf;

use clustersim_engine::compute::Device;
use clustersim_engine::error::Kind;
use clustersim_engine::executor::Executor;
use clustersim_engine::network::analytical::{Analytical, CollectiveCost, GroupShape};
use clustersim_engine::network::{Comm, NetworkModel};
use clustersim_engine::platform::Placement;
use clustersim_engine::simai::build::{BuildOptions, Overlap, SimaiWorkload};
use clustersim_engine::simai::file::WorkloadFile;
use clustersim_engine::training::generate::{generate, generate_with};
use clustersim_engine::training::model::Model;
use clustersim_engine::training::overlap::Overlap as Overlaps;
use clustersim_engine::training::plan::Plan;
use clustersim_engine::workload::columns::Columns;
use clustersim_engine::workload::{Collective, OpKind, Workload};
use clustersim_engine::{InputError, Result};

fn round_trip(w: &Workload) {
    let text = w.to_json();
    let back = Workload::from_json("w.json", &text).unwrap();
    assert_eq!(&back, w);
    assert_eq!(back.to_json(), text);
    assert_eq!(&Columns::from(w).to_workload("columns").unwrap(), w);
}

#[test]
fn the_simai_example_round_trips() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/workload_analytical.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let file = WorkloadFile::parse("workload_analytical.txt", &text, false).unwrap();
    let opts = BuildOptions {
        gpus: None,
        gpus_per_server: 8,
        compat: false,
        overlap: Overlap { dp: 0.0, tp: 0.0, ep: 0.0, pp: 1.0 },
    };
    let sw = SimaiWorkload::build(file, &opts).unwrap();
    assert!(sw.workload.programs[0].ops.len() > 1000);
    round_trip(&sw.workload);
}

#[test]
fn a_megatron_plan_round_trips() {
    // MoE with TP, PP (interleaved), EP and sequence parallelism: every group kind, explicit
    // embedding groups, sends and receives, several rank classes.
    let model: Model = serde_json::from_str(
        r#"{"name": "m", "family": "llama", "layers": 8, "hidden": 1024, "heads": 16, "kv_heads": 8,
            "ffn": 4096, "vocab": 32000, "seq_len": 2048,
            "moe": {"experts": 8, "topk": 2, "expert_ffn": 2048}}"#,
    )
    .unwrap();
    let plan: Plan = serde_json::from_str(
        r#"{"gpus": 32, "gpus_per_server": 8, "tp": 2, "pp": 2, "vpp": 2, "ep": 2, "cp": 1, "mbs": 1,
            "gbs": 32, "seq": 2048, "sp": true, "dp": "ddp", "recompute": "none"}"#,
    )
    .unwrap();
    let acc: Device = serde_json::from_str(
        r#"{"name": "a", "matmul_tflops": 300, "vector_tflops": 20, "hbm_gb": 80, "hbm_tbps": 2,
            "sms": 100, "gemm_efficiency": 0.7, "hbm_efficiency": 0.8, "attention_efficiency": 0.5,
            "nvlink_busbw": 300, "nic_busbw": 50}"#,
    )
    .unwrap();
    let w = generate(&model, &plan, &acc, true).unwrap().workload;
    assert_eq!(w.programs.len(), 2);
    round_trip(&w);
    // With --tp-comm-overlap the userbuffers transfers are marked as copies, and stay so.
    let tp_comm = Overlaps { tp_comm: Some(true), ..Overlaps::default() };
    let w = generate_with(&model, &plan, &acc, true, &tp_comm).unwrap().workload;
    let copies = w.programs[0].ops.iter().filter(|op| matches!(op.kind, OpKind::Send { copy: true, .. })).count();
    let json = w.to_json();
    assert!(copies > 0 && json.contains(r#""copy":true"#), "{copies} copies");
    let nccl = w.programs[0].ops.iter().filter(|op| matches!(op.kind, OpKind::Send { copy: false, .. })).count();
    assert!(nccl > 0, "pipeline sends stay NCCL sends");
    round_trip(&w);
}

/// A hand-written workload: two pipeline stages of two ranks each; TP from the layout, PP as
/// explicit member lists.
const TWO_STAGES: &str = r#"{
  "format": "clustersim-workload", "version": 1,
  "layout": [{"axis": "TP", "size": 2}, {"axis": "PP", "size": 2}],
  "groups": [{"name": "TP", "axes": ["TP"]}, {"name": "PP", "instances": [[0, 2], [1, 3]]}],
  "rows": ["layer"],
  "rank_class": [0, 0, 1, 1],
  "class_program": [0, 1],
  "programs": [
    {"ops": [{"kind": "COMP", "ns": 100.0},
             {"kind": "COMM_COLL", "collective": "allreduce", "group": 0, "bytes": 1024, "deps": [0]},
             {"kind": "SEND", "group": 1, "offset": 1, "bytes": 8, "deps": [1]}]},
    {"ops": [{"kind": "RECV", "group": 1, "offset": -1, "bytes": 8},
             {"kind": "COMP", "ns": 30.0, "deps": [0], "phase": "fwd"}]}
  ]
}"#;

/// Every collective takes 50 ns, every transfer 20 ns.
struct Fixed;
impl CollectiveCost for Fixed {
    fn collective_ns(&self, _: Collective, _: &GroupShape, _: u64) -> std::result::Result<f64, InputError> {
        Ok(50.0)
    }
    fn transfer_ns(&self, _: bool, _: u64) -> std::result::Result<f64, InputError> {
        Ok(20.0)
    }
}

#[test]
fn a_hand_written_workload_runs_to_its_hand_computed_time() {
    let w = Workload::from_json("two.json", TWO_STAGES).unwrap();
    let e = Executor::new(&w)
        .unwrap()
        .run(&mut Analytical::new(Box::new(Fixed), Placement::servers(w.world_size(), 8)), &mut |_| true)
        .unwrap();
    // Stage 0: compute 0–100, all-reduce 100–150, send 150–170; stage 1: recv 150–170, compute 170–200.
    assert_eq!(e.timelines[0].end, vec![100.0, 150.0, 170.0]);
    assert_eq!(e.timelines[1].start, vec![150.0, 170.0]);
    assert_eq!(e.end_ns, 200.0);
    round_trip(&w);
}

/// The error for TWO_STAGES with `from` replaced by `to`.
fn error(from: &str, to: &str) -> String {
    assert!(TWO_STAGES.contains(from), "{from}");
    Workload::from_json("bad.json", &TWO_STAGES.replacen(from, to, 1)).unwrap_err().to_string()
}

#[test]
fn bad_documents_name_file_path_and_problem() {
    let cases = [
        (r#""bytes": 1024, "deps": [0]"#, r#""deps": [0]"#, "bad.json: programs[0].ops[1]: missing field `bytes`"),
        (r#""kind": "COMP", "ns": 100.0"#, r#""kind": "MEM_LOAD", "ns": 100.0"#, "unknown variant `MEM_LOAD`"),
        (
            r#""deps": [1]"#,
            r#""deps": [7]"#,
            "bad.json: programs[0].ops[2].deps[0]: depends on op 7, which does not exist (3 ops)",
        ),
        (
            r#"{"kind": "COMP", "ns": 100.0}"#,
            r#"{"kind": "COMP", "ns": 100.0, "deps": [2]}"#,
            "bad.json: programs[0].ops[0].deps: dependency cycle: op 0 -> op 2 -> op 1 -> op 0",
        ),
        (
            "[[0, 2], [1, 3]]",
            "[[0, 2], [1, 4]]",
            "bad.json: groups[1].instances[1][1]: rank 4 is outside the workload's 0..4",
        ),
        ("[[0, 2], [1, 3]]", "[[0, 2], [1, 2]]", "groups[1].instances[1][1]: rank 2 is also in instance 0"),
        (
            r#""group": 0, "bytes""#,
            r#""group": 5, "bytes""#,
            "programs[0].ops[1].group: group 5 does not exist (2 groups)",
        ),
        (
            r#""axes": ["TP"]"#,
            r#""axes": ["XP"]"#,
            "groups[0].axes[0]: unknown axis 'XP' (valid: TP, CP, EP, DP_EP, PP)",
        ),
        (r#""version": 1"#, r#""version": 2"#, "bad.json: version: 2 is not supported (this clustersim reads 1)"),
        ("[0, 0, 1, 1]", "[0, 0, 1, 2]", "bad.json: rank_class[3]: class 2 does not exist (2 classes)"),
        ("[0, 0, 1, 1]", "[0, 0, 0, 0]", "bad.json: class_program[1]: class 1 has no ranks"),
        (r#""ns": 30.0"#, r#""ns": -1"#, "programs[1].ops[1].ns: must be from 0 to 1e18 ns, got -1.0"),
        // Two computes of 1e308 ns would end at infinity: the executor's clock must stay finite.
        (r#""ns": 30.0"#, r#""ns": 1e308"#, "programs[1].ops[1].ns: must be from 0 to 1e18 ns, got 1e308"),
        (
            r#""offset": 1, "bytes": 8"#,
            r#""offset": -2147483648, "bytes": 8"#,
            "programs[0].ops[2].offset: must be from -2147483647 to 2147483647, got -2147483648",
        ),
        // 65537 × 65537 wraps to 131073 in 32 bits; the layout must not pass for 131073 ranks.
        (
            r#""layout": [{"axis": "TP", "size": 2}, {"axis": "PP", "size": 2}]"#,
            r#""layout": [{"axis": "TP", "size": 65537}, {"axis": "PP", "size": 65537}]"#,
            "bad.json: layout: spans 4295098369 ranks but the workload has 131073",
        ),
        (
            r#""bytes": 8, "deps": [1]"#,
            r#""bytes": 8, "deps": [1], "tag": 3"#,
            "programs[0].ops[2]: unknown field `tag`",
        ),
        ("\"rows\": [\"layer\"],", "\"rows\": [\"layer\"]", "bad.json:6: JSON: expected `,` or `}`"),
    ];
    let ranks = format!("[{}]", ["0"; 131073].join(", "));
    for (from, to, want) in cases {
        let got = error(from, to);
        // The wrapped layout needs as many ranks as the wrapped product.
        let got = if want.contains("131073") {
            let doc = TWO_STAGES.replacen(from, to, 1).replacen("[0, 0, 1, 1]", &ranks, 1);
            let doc = doc.replacen("\"class_program\": [0, 1]", "\"class_program\": [0]", 1);
            Workload::from_json("bad.json", &doc).unwrap_err().to_string()
        } else {
            got
        };
        // Every error names its line (of the JSON path); the cases give the rest.
        assert_ne!(without_line(&got), got, "{got} names no line");
        assert!(got.contains(want) || without_line(&got).contains(want), "{got}\n  does not contain\n{want}");
        assert!(got.starts_with("bad.json"), "{got}");
        assert!(!got.contains('\n'), "{got}");
    }
}

/// `file:line: rest` without its `:line`.
fn without_line(e: &str) -> String {
    match e.split_once(':') {
        Some((file, rest)) => match rest.split_once(':') {
            Some((line, rest)) if line.bytes().all(|b| b.is_ascii_digit()) => format!("{file}:{rest}"),
            _ => e.to_string(),
        },
        None => e.to_string(),
    }
}

#[test]
fn a_group_of_no_axes_needs_a_layout_of_every_rank() {
    // Its ranks are found by layout coordinates: with no layout, every rank would be rank 0.
    let doc = TWO_STAGES.replacen(r#"[{"axis": "TP", "size": 2}, {"axis": "PP", "size": 2}]"#, "[]", 1).replacen(
        r#""axes": ["TP"]"#,
        r#""axes": []"#,
        1,
    );
    let e = Workload::from_json("bad.json", &doc).unwrap_err().to_string();
    assert_eq!(e, "bad.json:3: layout: spans 1 ranks but the workload has 4 (groups[0] is defined by it)");
}

#[test]
fn ranks_of_one_class_must_meet_the_same_classes() {
    // The executor runs a class through its first rank: a class whose ranks sit in unlike groups
    // would be timed as if all were like that rank (rank 1 as if it all-reduced with class 1).
    let doc = |instances: &str, ops: &str| {
        format!(
            r#"{{"format": "clustersim-workload", "version": 1, "groups": [{{"name": "G", "instances": {instances}}}],
                "rank_class": [0, 0, 1, 1], "class_program": [0, 0], "programs": [{{"ops": [{ops}]}}]}}"#
        )
    };
    let coll = r#"{"kind": "COMM_COLL", "collective": "allreduce", "group": 0, "bytes": 8}"#;
    let e = Workload::from_json("w.json", &doc("[[0, 2]]", coll)).unwrap_err().to_string();
    assert!(e.starts_with("w.json:1: groups[0]: rank 1's G group spans classes [0] but rank 0's spans [0, 1]"), "{e}");
    let p2p = r#"{"kind": "SEND", "group": 0, "offset": 1, "bytes": 8}, {"kind": "RECV", "group": 0, "offset": -1, "bytes": 8}"#;
    let e = Workload::from_json("w.json", &doc("[[0, 1, 2, 3]]", p2p)).unwrap_err().to_string();
    assert!(
        e.starts_with("w.json:1: groups[0]: rank 1's peer at offset -1 in G is of class 0 but rank 0's is of class 1"),
        "{e}"
    );
    // Alike groups pass: each class's ranks pair with the other class's, in the same places.
    Workload::from_json("w.json", &doc("[[0, 2], [1, 3]]", p2p)).unwrap();
    let end_ns = |text: &str| {
        let w = Workload::from_json("w.json", text).unwrap();
        let e = Executor::new(&w)
            .unwrap()
            .run(&mut Analytical::new(Box::new(Fixed), Placement::servers(w.world_size(), 8)), &mut |_| true)
            .unwrap();
        e.end_ns
    };
    // A ring inside one class is a shift of the class: NCCL sends, 20 ns, send and receive
    // overlapping; marked as a copy (userbuffers) it pays no call latency (20 − 20 ns).
    let ring = doc("[[0, 1], [2, 3]]", p2p).replacen("[0, 0, 1, 1]", "[0, 0, 0, 0]", 1).replacen("[0, 0]", "[0]", 1);
    assert_eq!(end_ns(&ring), 20.0);
    assert_eq!(end_ns(&ring.replace(r#""bytes": 8}"#, r#""bytes": 8, "copy": true}"#)), 0.0);
    // With a class per rank (one program for all) it runs the same: 20 ns.
    let ring =
        doc("[[0, 1], [2, 3]]", p2p).replacen("[0, 0, 1, 1]", "[0, 1, 2, 3]", 1).replacen("[0, 0]", "[0, 0, 0, 0]", 1);
    assert_eq!(end_ns(&ring), 20.0);
    // A copy across classes, or a pair of which only one op is a copy, is refused on reading,
    // naming the op's field.
    let e = Workload::from_json("w.json", &ring.replace(r#""bytes": 8}"#, r#""bytes": 8, "copy": true}"#));
    let e = e.unwrap_err().to_string();
    assert!(e.contains("programs[0].ops[0].copy: a copy to or from rank class 1"), "{e}");
    let one_class =
        doc("[[0, 1], [2, 3]]", p2p).replacen("[0, 0, 1, 1]", "[0, 0, 0, 0]", 1).replacen("[0, 0]", "[0]", 1);
    let half = one_class.replacen(r#""bytes": 8}"#, r#""bytes": 8, "copy": true}"#, 1);
    let e = Workload::from_json("w.json", &half).unwrap_err().to_string();
    assert!(e.contains("programs[0].ops[1].copy: op 0 (send to offset 1 in G) and op 1 (its receive)"), "{e}");
    assert!(e.ends_with("a copy pair marks both ops"), "{e}");
}

#[test]
fn a_cycle_through_stream_order_is_found() {
    // Op 0 (COMP) waits for op 1 (COMP), which follows op 0 on the compute stream.
    let from = r#"{"kind": "RECV", "group": 1, "offset": -1, "bytes": 8},"#;
    let doc = TWO_STAGES.replacen(from, r#"{"kind": "COMP", "ns": 1.0, "deps": [1]},"#, 1).replacen(
        r#""ns": 30.0, "deps": [0]"#,
        r#""ns": 30.0"#,
        1,
    );
    let err = Workload::from_json("s.json", &doc).unwrap_err().to_string();
    assert!(err.contains("programs[1].ops[0].deps: dependency cycle: op 0 -> op 1 -> op 0"), "{err}");
}

/// A model that reports a completion in the past: the executor must blame itself, not the input.
struct Backwards(Option<f64>);
impl NetworkModel for Backwards {
    fn prepare(&mut self, _: &Workload) -> Result<()> {
        Ok(())
    }
    fn start(&mut self, now_ns: f64, _: &Comm, _: u64) -> Result<()> {
        self.0 = Some(now_ns - 1.0);
        Ok(())
    }
    fn next_completion(&self) -> Option<f64> {
        self.0
    }
    fn complete_until(&mut self, _: f64, _: &mut Vec<u64>) -> Result<()> {
        Ok(())
    }
}

#[test]
fn an_engine_fault_is_an_internal_error() {
    let w = Workload::from_json("two.json", TWO_STAGES).unwrap();
    let err = Executor::new(&w).unwrap().run(&mut Backwards(None), &mut |_| true).unwrap_err();
    assert_eq!(err.kind, Kind::Internal);
    assert!(err.to_string().starts_with("internal error in network model: a communication finishes at 99 ns"), "{err}");
    // A workload the user got wrong stays an input error.
    let recv_only = TWO_STAGES.replacen(
        r#"{"kind": "SEND", "group": 1, "offset": 1, "bytes": 8, "deps": [1]}"#,
        r#"{"kind": "COMP", "ns": 1.0}"#,
        1,
    );
    let w = Workload::from_json("two.json", &recv_only).unwrap();
    let err = Executor::new(&w)
        .unwrap()
        .run(&mut Analytical::new(Box::new(Fixed), Placement::servers(w.world_size(), 8)), &mut |_| true)
        .unwrap_err();
    assert_eq!(err.kind, Kind::Input);
    assert!(err.message.contains("deadlock"), "{err}");
}
