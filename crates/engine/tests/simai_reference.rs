//! SimAI's own outputs for the bundled example (tests/data/simai/reference) are reproduced
//! with `--compat simai`: every number of the summary and per-layer rows within 0.5%.

use std::path::PathBuf;

use clustersim_engine::catalog::simai::{GpuType, NicType};
use clustersim_engine::network::analytical::busbw_file::BusbwTable;
use clustersim_engine::network::analytical::ratio::RatioTables;
use clustersim_engine::network::analytical::server_spec::ServerSpec;
use clustersim_engine::simai::build::Overlap;
use clustersim_engine::simai::run::{run_analytical, RunConfig};

fn in_repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

fn config(nv: Option<f32>, nic: Option<f32>, busbw: Option<BusbwTable>, run_name: &str) -> RunConfig {
    RunConfig {
        compat: true,
        gpus: Some(9216),
        platform: ServerSpec {
            gpus_per_server: 8,
            nics_per_server: 8,
            gpu: GpuType::parse("H100").unwrap(),
            nic: NicType::parse("cx7").unwrap(),
            nvlink_busbw: nv,
            nic_busbw: nic,
        },
        busbw,
        ratios: RatioTables::builtin(),
        overlap: Overlap { dp: 0.0, tp: 0.0, ep: 0.0, pp: 1.0 },
        run_name: run_name.into(),
        lenient: false,
        flow: None,
    }
}

/// Compare two CSV texts number by number (within `rel`), text cells exactly.
fn assert_close(ours: &str, theirs: &str, rel: f64) {
    let ol: Vec<&str> = ours.lines().collect();
    let tl: Vec<&str> = theirs.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(ol.len(), tl.len(), "line count");
    let mut checked = 0;
    for (n, (a, b)) in ol.iter().zip(&tl).enumerate() {
        let ca: Vec<&str> = a.split(',').collect();
        let cb: Vec<&str> = b.split(',').collect();
        assert_eq!(ca.len(), cb.len(), "line {}: cell count", n + 1);
        for (x, y) in ca.iter().zip(&cb) {
            let num = |s: &str| s.trim().split(' ').next().unwrap_or("").parse::<f64>().ok().filter(|v| v.is_finite());
            match (num(x), num(y)) {
                (Some(p), Some(q)) => {
                    let tol = rel * q.abs().max(1.0);
                    assert!((p - q).abs() <= tol, "line {}: {x} vs {y}", n + 1);
                    checked += 1;
                }
                _ => assert_eq!(x.trim(), y.trim(), "line {}", n + 1),
            }
        }
    }
    assert!(checked > 20000);
}

#[test]
fn builtin_bandwidths_match_simai() {
    let path = in_repo("examples/workload_analytical.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let cfg = config(Some(360.0), Some(48.5), None, "example-");
    let run = run_analytical(path.to_str().unwrap(), &text, &cfg, &mut |_| true).unwrap();
    let reference = std::fs::read_to_string(in_repo("tests/data/simai/reference/auto-9216-EndToEnd.csv")).unwrap();
    assert_close(&run.report.to_csv(), &reference, 0.005);
}

#[test]
fn busbw_file_matches_simai() {
    let path = in_repo("examples/workload_analytical.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let yaml = std::fs::read_to_string(in_repo("examples/busbw.yaml")).unwrap();
    let table = BusbwTable::parse("busbw.yaml", &yaml).unwrap();
    let cfg = config(None, None, Some(table), "test-");
    let run = run_analytical(path.to_str().unwrap(), &text, &cfg, &mut |_| true).unwrap();
    let reference = std::fs::read_to_string(in_repo("tests/data/simai/reference/busbw-9216-EndToEnd.csv")).unwrap();
    assert_close(&run.report.to_csv(), &reference, 0.005);
}
