use super::*;
use crate::platform::hcsim::HcsimParams;

const DOC: &str = r#"{
  "graph": {"name": "two XPUs"},
  "nodes": [
    {"id": "x0", "kind": "xpu", "type": "h100"},
    {"id": 7, "kind": "xpu", "type": "asic", "fp16_flops": 4e14, "fp32_flops": "1e14", "memory": "64GB"},
    {"id": "sw", "kind": "xpu_switch", "reduction": true},
    {"id": "m0", "kind": "memory", "memory_kind": "cxl", "memory": "inf", "latency": "250ns"},
    {"id": "csw", "kind": "cxl_switch"},
    {"id": "tor", "kind": "switch", "tier": "tor"}
  ],
  "links": [
    {"source": "x0", "target": "sw", "bandwidth": 9e11, "latency": 1e-7},
    {"source": 7, "target": "sw", "bandwidth": "900GB/s", "latency": "100ns"},
    {"source": "x0", "target": "csw", "bandwidth": 1.28e11, "latency": 2e-7},
    {"source": "m0", "target": "csw", "bandwidth": 1.28e11, "latency": 2e-7, "directed": true}
  ],
  "ranks": [7, "x0"]
}"#;

fn parse(text: &str) -> Result<Platform> {
    Platform::parse_graph_json("p.json", text)
}

#[test]
fn a_graph_document_gives_typed_nodes_specs_and_ranks() {
    let p = parse(DOC).unwrap();
    assert_eq!(p.node_count(), 6);
    assert_eq!(p.links.len(), 7);
    assert_eq!((p.node_name(p.placement.device(0)), p.node_name(p.placement.device(1))), ("7".into(), "x0".into()));
    assert_eq!((p.accelerator_type(0), p.accelerator_type(1)), ("H100", "asic"));
    let asic = p.attrs[1].xpu.clone().unwrap();
    assert_eq!((asic.flops(Dtype::Fp16), asic.flops(Dtype::Fp32), asic.memory_bytes), (Some(4e14), Some(1e14), 64e9));
    let h100 = p.attrs[0].xpu.clone().unwrap();
    assert_eq!((h100.flops(Dtype::Fp32), h100.memory_bandwidth), (Some(67e12), Some(3350.0)));
    let m = p.attrs[3].memory.unwrap();
    assert_eq!((m.kind, m.capacity_bytes, m.latency_ns), (MemoryKind::Cxl, f64::INFINITY, 250.0));
    assert!(p.reduces_in_switch(0));
    assert_eq!(p.placement.domains(), 1);
    assert_eq!((p.links[2].bandwidth, p.links[2].latency_ns), (900.0, 100.0));
}

#[test]
fn written_documents_read_back_to_the_same_platform() {
    let p = parse(DOC).unwrap();
    let again = parse(&p.to_graph_json("two XPUs")).unwrap();
    assert_eq!(again, p);
    let mut params = HcsimParams::paper(true, "H100", 32);
    params.servers_per_tor = 2;
    params.dram_bytes = 1.5e12;
    let h = Platform::hcsim("t", &params).unwrap();
    let text = h.to_graph_json("hcsim-cxl");
    let back = Platform::parse_graph_json("t", &text).unwrap();
    assert_eq!(back, h);
}

/// (replace this text of DOC with that, expected field, text in the message)
fn bad(from: &str, to: &str, field: &str, says: &str) {
    assert!(DOC.contains(from), "{from}");
    let Err(e) = parse(&DOC.replacen(from, to, 1)) else { panic!("accepted: {to}") };
    assert_eq!(e.field.as_deref(), Some(field), "{e}");
    assert!(e.message.contains(says), "{e}");
    assert!(e.to_string().starts_with("p.json: "), "{e}");
    assert_eq!(e.to_string().lines().count(), 1, "{e}");
}

#[test]
fn bad_documents_name_the_node_or_link_and_the_field() {
    bad(r#""kind": "cxl_switch""#, r#""kind": "router""#, "node 'csw': kind", "unknown kind 'router'");
    bad(r#""type": "h100""#, r#""type": "tpu""#, "node 'x0': type", "unknown XPU type 'tpu'");
    bad(
        r#""target": "csw", "bandwidth": 1.28e11, "latency": 2e-7}"#,
        r#""target": "nope", "bandwidth": 1.28e11, "latency": 2e-7}"#,
        "link 2: target",
        "no node 'nope'",
    );
    bad(r#""bandwidth": 9e11"#, r#""bandwidth": -9e11"#, "link 0 (x0 -> sw): bandwidth", "must be positive");
    bad(r#""bandwidth": 9e11"#, r#""bandwidth": 0"#, "link 0 (x0 -> sw): bandwidth", "must be positive");
    bad(r#""fp16_flops": 4e14"#, r#""fp16_flops": true"#, "node '7': fp16_flops", "got a boolean");
    bad(r#""latency": 1e-7"#, r#""latency": [1]"#, "link 0 (x0 -> sw): latency", "got a list");
    bad(r#""memory": "64GB""#, r#""memory": "64 parsecs""#, "node '7': memory", "not a capacity");
    bad(r#""memory": "inf""#, r#""memory": 1e40"#, "node 'm0': memory", "more than any memory device holds");
    bad(r#""memory": "64GB""#, r#""memory": 5e18, "x": 1"#, "node '7': memory", "more than any memory device holds");
    bad(r#""latency": "250ns""#, r#""latency": "250ns", "window": 0"#, "node 'm0': window", "must be positive");
    bad(r#""latency": "250ns""#, r#""latency": "250ns", "window": -64"#, "node 'm0': window", "must be positive");
    bad(r#""latency": "250ns""#, r#""latency": "250ns", "window": true"#, "node 'm0': window", "got a boolean");
    bad(r#""latency": "250ns""#, r#""latency": "250ns", "window": "wide""#, "node 'm0': window", "not a read window");
    bad(r#""tier": "tor""#, r#""tier": "tor", "colour": "red""#, "node 'tor': colour", "no attribute \"colour\"");
    bad(r#""tier": "tor""#, r#""tier": "tor", "\u00a0tier": 1"#, "node 'tor'", "no attribute");
    bad(r#""fp32_flops": "1e14""#, r#""fp99_flops": 1"#, "node '7': fp99_flops", "unknown data type");
    bad(r#""ranks": [7, "x0"]"#, r#""ranks": [7, "tor"]"#, "ranks[1]", "not an XPU");
    bad(r#"{"id": "sw""#, r#"{"id": "x0""#, "node 'x0'", "two nodes have this id");
    bad(r#""kind": "xpu", "type": "h100""#, r#""kind": "xpu""#, "node 'x0': type", "an XPU needs a type");
    bad(r#"  "ranks""#, r#"  "rank""#, "(top level)", "unknown key 'rank'");
    bad(r#"{"id": "csw""#, r#"{"id": "c:sw""#, "link 2: target", "no node 'csw'");
    bad(
        r#"{"id": "csw", "kind": "cxl_switch"}"#,
        r#"{"id": "c:sw", "kind": "router"}"#,
        "node #4: kind",
        "unknown kind",
    );
    // JSON syntax errors carry the line.
    let e = parse(&DOC.replace("\"tier\": \"tor\"}", "\"tier\": \"tor\"")).unwrap_err();
    assert_eq!((e.line, e.field.as_deref()), (Some(10), Some("JSON")), "{e}");
    // The graph is connected through switches only.
    let e = parse(&DOC.replace(r#"{"source": 7, "target": "sw", "bandwidth": "900GB/s", "latency": "100ns"},"#, ""))
        .unwrap_err();
    assert!(e.message.contains("cannot reach"), "{e}");
}
