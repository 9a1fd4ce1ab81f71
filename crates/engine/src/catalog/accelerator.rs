//! An accelerator, in the one schema every part of the engine reads: peaks per data type, HBM,
//! the per-kernel compute model's constants ([`crate::compute`]), the generation, and the
//! scale-up and scale-out figures the analytical model prices collectives with.
//!
//! Peaks are written once, as a `tflops` table per data type; the compute model's GEMM peak
//! (`matmul_tflops`) is bf16's, fp16's where there is no bf16 (V100), and its vector peak fp32's.
//! An older file may give those two instead of the table. The NIC is a name of the NIC catalog
//! (`nic`) or its bus bandwidth (`nic_busbw`).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::{json, Map, Value};

use super::{Arch, Catalog, Nic};
use crate::error::{InputError, Result};

/// Floating-point data types an accelerator may have a peak rate for (written as their lower-case
/// names in files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    Fp64,
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
}

impl Dtype {
    pub const ALL: [Dtype; 6] = [Dtype::Fp64, Dtype::Fp32, Dtype::Tf32, Dtype::Bf16, Dtype::Fp16, Dtype::Fp8];

    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp64 => "fp64",
            Dtype::Fp32 => "fp32",
            Dtype::Tf32 => "tf32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
        }
    }

    pub fn parse(text: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name().eq_ignore_ascii_case(text))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Accelerator {
    pub name: String,
    /// Generation; None where NCCL has no figures for it.
    pub arch: Option<Arch>,
    /// Dense peak TFLOP/s per data type ([`Dtype::ALL`] order); None where it has no figure.
    pub tflops: [Option<f64>; 6],
    /// The compute model's GEMM peak: bf16's, else fp16's (TFLOP/s).
    pub matmul_tflops: f64,
    /// Non-tensor FP32 peak, TFLOP/s (element-wise ops are HBM-bound).
    pub vector_tflops: f64,
    /// HBM capacity, GB (10⁹ B).
    pub hbm_gb: f64,
    /// HBM bandwidth, TB/s (10¹² B/s).
    pub hbm_tbps: f64,
    /// Streaming multiprocessors (compute units): GEMM tiles run in waves of this many.
    pub sms: u32,
    /// Output tile of a bf16 GEMM, rows × columns.
    pub gemm_tile: [u32; 2],
    /// Fraction of the peak a full wave of GEMM tiles sustains.
    pub gemm_efficiency: f64,
    /// Fraction of the HBM bandwidth streaming kernels sustain.
    pub hbm_efficiency: f64,
    /// Fraction of the peak fused (flash) attention sustains (forward; backward too unless
    /// `attention_bwd_efficiency` is given).
    pub attention_efficiency: f64,
    /// Fraction of the peak the fused attention backward sustains, where measured apart.
    pub attention_bwd_efficiency: Option<f64>,
    /// Fixed cost of launching one kernel, ns.
    pub kernel_overhead_ns: f64,
    /// A GEMM tile's pipeline fill and drain, ns, once per wave of tiles.
    pub gemm_fill_drain_ns: f64,
    /// Scale-up (NVLink) bus bandwidth per GPU as NCCL achieves it, GB/s.
    pub nvlink_busbw: f64,
    /// NVLinks per GPU, where the catalog counts them (SimAI's profile prices per link).
    pub nvlink_links: Option<u32>,
    /// NVLS all-reduce bus bandwidth, GB/s, where the scale-up switch reduces in-network.
    pub nvls_busbw: Option<f64>,
    /// The NIC paired with each GPU, a name of the NIC catalog, where given by name.
    pub nic: Option<String>,
    /// Bus bandwidth of the GPU's NIC, GB/s.
    pub nic_busbw: f64,
    pub source: Option<String>,
}

/// Smallest rate or efficiency accepted: any positive bound keeps op times finite.
const MIN_RATE: f64 = 1e-6;
/// Largest rate accepted (TFLOP/s, TB/s, GB).
const MAX_RATE: f64 = 1e9;
/// Most SMs and largest tile side accepted.
const MAX_UNITS: u32 = 1 << 20;
/// Fields every entry gives, after its peaks.
const REQUIRED: [&str; 8] = [
    "hbm_gb",
    "hbm_tbps",
    "nvlink_busbw",
    "nic_busbw",
    "sms",
    "gemm_efficiency",
    "hbm_efficiency",
    "attention_efficiency",
];
/// Optional fields that are finite numbers where given (besides the peaks and [`REQUIRED`]).
const OPTIONAL_NUMBERS: [&str; 4] =
    ["nvls_busbw", "kernel_overhead_ns", "gemm_fill_drain_ns", "attention_bwd_efficiency"];

/// A problem with an entry: (field, what is wrong).
pub type Problem = (String, String);

fn problem(field: &str, message: String) -> Problem {
    (field.to_string(), message)
}

impl Accelerator {
    /// The entry `name` from its mapping `v` (a catalog file's or a user's), NIC names resolved
    /// in `nics`; every field checked, in the order a reader reports them.
    pub fn from_value(name: &str, v: &Value, nics: &[Nic]) -> std::result::Result<Accelerator, Problem> {
        let Value::Object(map) = v else {
            return Err(problem(name, "expected a mapping of fields".into()));
        };
        let get = |field: &str| map.get(field).filter(|v| !(field == "nvls_busbw" && v.is_null()));
        let given_peaks: Vec<&str> =
            ["matmul_tflops", "vector_tflops"].into_iter().filter(|k| map.contains_key(*k)).collect();
        let peak_keys: &[&str] = if map.contains_key("tflops") || given_peaks.is_empty() {
            &["tflops"]
        } else {
            &["matmul_tflops", "vector_tflops"]
        };
        for key in peak_keys.iter().chain(&REQUIRED) {
            let present = map.contains_key(*key) || (*key == "nic_busbw" && map.contains_key("nic"));
            if !present {
                return Err(problem(key, format!("missing in accelerator '{name}'")));
            }
        }
        let tflops = match map.get("tflops") {
            Some(table) => Some(tflops_table(table)?),
            None => None,
        };
        let derived = tflops.map(|t| (t[Dtype::Bf16 as usize].or(t[Dtype::Fp16 as usize]), t[Dtype::Fp32 as usize]));
        if let Some((matmul, vector)) = derived {
            for (key, table_value) in [("matmul_tflops", matmul), ("vector_tflops", vector)] {
                if let Some(given) = map.get(key) {
                    if given.as_f64() != table_value {
                        let written = ["bf16", "fp16", "fp32"].map(|d| map["tflops"].get(d));
                        let own = if key == "matmul_tflops" { written[0].or(written[1]) } else { written[2] };
                        let table_text = own.map_or("None".into(), py_repr);
                        let m =
                            format!("{} is not the tflops table's {table_text} (give the table alone)", py_repr(given));
                        return Err(problem(key, m));
                    }
                }
            }
        }
        let nic = match map.get("nic") {
            None => None,
            Some(Value::String(n)) => Some(nics.iter().find(|x| x.name.eq_ignore_ascii_case(n)).ok_or_else(|| {
                let valid = nics.iter().map(|x| x.name.as_str()).collect::<Vec<_>>().join(", ");
                problem("nic", format!("unknown NIC '{n}' (valid: {valid})"))
            })?),
            Some(other) => return Err(problem("nic", format!("must be a NIC's name, got {}", py_repr(other)))),
        };
        let numbers = ["matmul_tflops", "vector_tflops"].into_iter().chain(REQUIRED).chain(OPTIONAL_NUMBERS);
        for key in numbers {
            let value = match (key, derived) {
                ("matmul_tflops", Some((m, _))) => m.map_or(Value::Null, |x| json!(x)),
                ("vector_tflops", Some((_, v))) => v.map_or(Value::Null, |x| json!(x)),
                ("nic_busbw", _) if !map.contains_key(key) => nic.map_or(json!(0), |n| json!(n.busbw)),
                _ => get(key).cloned().unwrap_or(json!(0)),
            };
            if !(value.as_f64().is_some_and(f64::is_finite)
                || (key == "nvls_busbw" && map.get(key).is_some_and(Value::is_null)))
            {
                return Err(problem(key, format!("must be a finite number, got {}", py_repr(&value))));
            }
        }
        let number = |key: &str| get(key).and_then(Value::as_f64);
        for key in ["nvlink_busbw", "nic_busbw", "nvls_busbw"] {
            if number(key).is_some_and(|x| !(0.0 < x && x <= 1e9)) {
                return Err(problem(
                    key,
                    format!("must be a bandwidth from 0 to 1e9 GB/s, got {}", py_repr(&map[key])),
                ));
            }
        }
        let nic_busbw = match (nic, number("nic_busbw")) {
            (Some(n), Some(x)) if x != n.busbw => {
                return Err(problem("nic_busbw", format!("{x} is not NIC {}'s {} (give one)", n.name, n.busbw)));
            }
            (Some(n), _) => n.busbw,
            (None, x) => x.unwrap_or_default(),
        };
        let count = |v: &Value| v.as_u64().filter(|c| *c < 1 << 31 && !v.is_f64()).map(|c| c as u32);
        let sms = count(&map["sms"])
            .ok_or_else(|| problem("sms", format!("must be a whole number, got {}", py_repr(&map["sms"]))))?;
        let gemm_tile = match map.get("gemm_tile") {
            None => [128, 128],
            Some(t) => match t.as_array().map(|a| a.iter().map(count).collect::<Option<Vec<u32>>>()) {
                Some(Some(sides)) if sides.len() == 2 => [sides[0], sides[1]],
                _ => {
                    return Err(problem(
                        "gemm_tile",
                        format!("must be [rows, columns] in whole numbers, got {}", py_repr(t)),
                    ))
                }
            },
        };
        let nvlink_links =
            match map.get("nvlink_links") {
                None | Some(Value::Null) => None,
                Some(v) => Some(count(v).filter(|c| *c > 0).ok_or_else(|| {
                    problem("nvlink_links", format!("must be a whole number ≥ 1, got {}", py_repr(v)))
                })?),
            };
        let arch = match map.get("arch") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(Arch::parse)
                    .ok_or_else(|| problem("arch", format!("must be one of {}, got {}", Arch::NAMES, py_repr(v))))?,
            ),
        };
        let (matmul, vector) = match derived {
            Some((m, v)) => (m.unwrap_or_default(), v.unwrap_or_default()),
            None => (number("matmul_tflops").unwrap_or_default(), number("vector_tflops").unwrap_or_default()),
        };
        let acc = Accelerator {
            name: map.get("name").and_then(Value::as_str).unwrap_or(name).to_string(),
            arch,
            tflops: tflops.unwrap_or_else(|| {
                let mut t = [None; 6];
                t[Dtype::Bf16 as usize] = Some(matmul);
                t[Dtype::Fp32 as usize] = Some(vector);
                t
            }),
            matmul_tflops: matmul,
            vector_tflops: vector,
            hbm_gb: number("hbm_gb").unwrap_or_default(),
            hbm_tbps: number("hbm_tbps").unwrap_or_default(),
            sms,
            gemm_tile,
            gemm_efficiency: number("gemm_efficiency").unwrap_or_default(),
            hbm_efficiency: number("hbm_efficiency").unwrap_or_default(),
            attention_efficiency: number("attention_efficiency").unwrap_or_default(),
            attention_bwd_efficiency: number("attention_bwd_efficiency"),
            kernel_overhead_ns: number("kernel_overhead_ns").unwrap_or_default(),
            gemm_fill_drain_ns: number("gemm_fill_drain_ns").unwrap_or_default(),
            nvlink_busbw: number("nvlink_busbw").unwrap_or_default(),
            nvlink_links,
            nvls_busbw: number("nvls_busbw"),
            nic: nic.map(|n| n.name.clone()),
            nic_busbw,
            source: map.get("source").and_then(Value::as_str).map(str::to_string),
        };
        acc.check().map_err(|e| (e.field.unwrap_or_default(), e.message))?;
        Ok(acc)
    }

    /// The entry as a mapping of this schema (reads back to the same accelerator).
    pub fn to_value(&self) -> Value {
        let tflops: Map<String, Value> = Dtype::ALL
            .iter()
            .filter_map(|d| self.tflops[*d as usize].map(|t| (d.name().to_string(), number(t))))
            .collect();
        let mut v = json!({
            "name": self.name,
            "arch": self.arch.map(Arch::name),
            "tflops": tflops,
            "matmul_tflops": number(self.matmul_tflops),
            "vector_tflops": number(self.vector_tflops),
            "hbm_gb": number(self.hbm_gb),
            "hbm_tbps": number(self.hbm_tbps),
            "sms": self.sms,
            "gemm_tile": self.gemm_tile,
            "gemm_efficiency": number(self.gemm_efficiency),
            "hbm_efficiency": number(self.hbm_efficiency),
            "attention_efficiency": number(self.attention_efficiency),
            "kernel_overhead_ns": number(self.kernel_overhead_ns),
            "gemm_fill_drain_ns": number(self.gemm_fill_drain_ns),
            "nvlink_busbw": number(self.nvlink_busbw),
            "nvls_busbw": self.nvls_busbw.map(number),
            "nic_busbw": number(self.nic_busbw),
        });
        let extra = [
            ("attention_bwd_efficiency", self.attention_bwd_efficiency.map(number)),
            ("nvlink_links", self.nvlink_links.map(|x| json!(x))),
            ("nic", self.nic.as_ref().map(|x| json!(x))),
            ("source", self.source.as_ref().map(|x| json!(x))),
        ];
        for (key, value) in extra {
            if let Some(value) = value {
                v[key] = value;
            }
        }
        v
    }

    /// Peak FLOP/s in data type `dtype`, if the accelerator has a figure for it.
    pub fn flops(&self, dtype: Dtype) -> Option<f64> {
        self.tflops[dtype as usize].map(|t| t * 1e12)
    }

    /// Check the values: rates and capacity positive and bounded, efficiencies in (0, 1], SMs and
    /// tile sides whole and positive, overheads finite. Errors name `accelerator` and the field.
    pub fn check(&self) -> Result<()> {
        let bad = |field: &str, msg: String| Err(InputError::field("accelerator", field, msg));
        for (field, v) in [
            ("matmul_tflops", self.matmul_tflops),
            ("vector_tflops", self.vector_tflops),
            ("hbm_gb", self.hbm_gb),
            ("hbm_tbps", self.hbm_tbps),
        ] {
            if !(MIN_RATE..=MAX_RATE).contains(&v) {
                return bad(field, format!("must be from {MIN_RATE:e} to {MAX_RATE:e}, got {v}"));
            }
        }
        for (field, v) in [
            ("gemm_efficiency", self.gemm_efficiency),
            ("hbm_efficiency", self.hbm_efficiency),
            ("attention_efficiency", self.attention_efficiency),
            ("attention_bwd_efficiency", self.attention_bwd()),
        ] {
            if !(MIN_RATE..=1.0).contains(&v) {
                return bad(field, format!("must be from {MIN_RATE:e} to 1, got {v}"));
            }
        }
        if !(1..=MAX_UNITS).contains(&self.sms) {
            return bad("sms", format!("must be from 1 to {MAX_UNITS}, got {}", self.sms));
        }
        if self.gemm_tile.iter().any(|t| !(1..=MAX_UNITS).contains(t)) {
            return bad("gemm_tile", format!("sides must be from 1 to {MAX_UNITS}, got {:?}", self.gemm_tile));
        }
        for (field, v) in
            [("kernel_overhead_ns", self.kernel_overhead_ns), ("gemm_fill_drain_ns", self.gemm_fill_drain_ns)]
        {
            if !(0.0..=1e12).contains(&v) {
                return bad(field, format!("must be from 0 to 1e12 ns, got {v}"));
            }
        }
        Ok(())
    }

    /// Fraction of the peak the fused attention backward sustains.
    pub fn attention_bwd(&self) -> f64 {
        self.attention_bwd_efficiency.unwrap_or(self.attention_efficiency)
    }

    /// A GPU that runs every op at its peak (300 TFLOP/s on 100 SMs, 2 TB/s, 1×1 tiles, no
    /// launch or fill/drain cost), for tests of the schedule.
    #[cfg(test)]
    pub fn ideal() -> Accelerator {
        let mut tflops = [None; 6];
        tflops[Dtype::Bf16 as usize] = Some(300.0);
        tflops[Dtype::Fp32 as usize] = Some(20.0);
        Accelerator {
            name: "ideal".into(),
            arch: None,
            tflops,
            matmul_tflops: 300.0,
            vector_tflops: 20.0,
            hbm_gb: 80.0,
            hbm_tbps: 2.0,
            sms: 100,
            gemm_tile: [1, 1],
            gemm_efficiency: 1.0,
            hbm_efficiency: 1.0,
            attention_efficiency: 1.0,
            attention_bwd_efficiency: None,
            kernel_overhead_ns: 0.0,
            gemm_fill_drain_ns: 0.0,
            nvlink_busbw: 300.0,
            nvlink_links: None,
            nvls_busbw: None,
            nic: None,
            nic_busbw: 50.0,
            source: None,
        }
    }
}

/// A figure as the catalog writes it: a whole number as an integer (80, not 80.0).
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// A `tflops` table: positive TFLOP/s by data type, fp32 and bf16 or fp16 among them.
fn tflops_table(table: &Value) -> std::result::Result<[Option<f64>; 6], Problem> {
    let names = || Dtype::ALL.map(Dtype::name).join(", ");
    let Value::Object(map) = table else {
        return Err(problem("tflops", format!("must map data types ({}) to TFLOP/s, got {}", names(), py_repr(table))));
    };
    let mut out = [None; 6];
    for (dtype, v) in map {
        let d = Dtype::ALL
            .into_iter()
            .find(|d| d.name() == dtype)
            .ok_or_else(|| problem("tflops", format!("unknown data type '{dtype}' (valid: {})", names())))?;
        match v.as_f64().filter(|x| x.is_finite() && *x > 0.0 && !v.is_boolean()) {
            Some(x) => out[d as usize] = Some(x),
            None => {
                return Err(problem(
                    "tflops",
                    format!("{dtype}: must be a positive number of TFLOP/s, got {}", py_repr(v)),
                ))
            }
        }
    }
    for need in [&[Dtype::Fp32][..], &[Dtype::Bf16, Dtype::Fp16]] {
        if need.iter().all(|d| out[*d as usize].is_none()) {
            let names = need.iter().map(|d| d.name()).collect::<Vec<_>>().join(" or ");
            return Err(problem("tflops", format!("needs {names} (the compute model's peaks)")));
        }
    }
    Ok(out)
}

/// A value as Python writes it (`repr`): the user's file is read in Python, and messages quote
/// its values the way its other messages do.
fn py_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Number(n) if n.is_f64() => format!("{:?}", n.as_f64().unwrap_or_default()),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("'{s}'"),
        Value::Array(a) => format!("[{}]", a.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => {
            format!("{{{}}}", m.iter().map(|(k, v)| format!("'{k}': {}", py_repr(v))).collect::<Vec<_>>().join(", "))
        }
    }
}

/// Read from a mapping of this schema (a run's input document), NICs from the shipped catalog.
impl<'de> Deserialize<'de> for Accelerator {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let name = v.get("name").and_then(Value::as_str).unwrap_or("accelerator").to_string();
        Accelerator::from_value(&name, &v, &Catalog::shipped().nics)
            .map_err(|(f, p)| D::Error::custom(format!("{f}: {p}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Value {
        let shipped = Catalog::shipped().accelerator("a100").unwrap().to_value();
        assert_eq!(
            Accelerator::from_value("a100", &shipped, &Catalog::shipped().nics).as_ref(),
            Ok(Catalog::shipped().accelerator("a100").unwrap())
        );
        shipped
    }

    fn problem_of(v: Value) -> Problem {
        Accelerator::from_value("mygpu", &v, &Catalog::shipped().nics).unwrap_err()
    }

    #[test]
    fn check_refuses_rates_and_constants_a_run_cannot_use() {
        // Found by fuzzing: a rate of 0 made op times infinite (an internal error downstream).
        let mut a = Accelerator::ideal();
        assert_eq!(a.check(), Ok(()));
        a.vector_tflops = 0.0;
        assert_eq!(a.check().unwrap_err().to_string(), "accelerator: vector_tflops: must be from 1e-6 to 1e9, got 0");
        a.vector_tflops = 19.5;
        a.gemm_efficiency = 1.5;
        assert_eq!(a.check().unwrap_err().to_string(), "accelerator: gemm_efficiency: must be from 1e-6 to 1, got 1.5");
        a.gemm_efficiency = 0.8;
        a.sms = 0;
        assert_eq!(a.check().unwrap_err().to_string(), "accelerator: sms: must be from 1 to 1048576, got 0");
        a.sms = 108;
        a.gemm_tile = [128, 0];
        assert_eq!(
            a.check().unwrap_err().to_string(),
            "accelerator: gemm_tile: sides must be from 1 to 1048576, got [128, 0]"
        );
        a.gemm_tile = [128, 128];
        a.attention_bwd_efficiency = Some(0.0);
        assert_eq!(
            a.check().unwrap_err().to_string(),
            "accelerator: attention_bwd_efficiency: must be from 1e-6 to 1, got 0"
        );
        a.attention_bwd_efficiency = None;
        a.gemm_fill_drain_ns = f64::NAN;
        assert_eq!(
            a.check().unwrap_err().to_string(),
            "accelerator: gemm_fill_drain_ns: must be from 0 to 1e12 ns, got NaN"
        );
    }

    #[test]
    fn an_entry_names_the_field_that_is_wrong() {
        let mut v = entry();
        v.as_object_mut().unwrap().remove("sms");
        assert_eq!(problem_of(v), ("sms".into(), "missing in accelerator 'mygpu'".into()));
        let mut v = entry();
        v["tflops"] = json!({"fp32": 30, "bf17": 500});
        assert_eq!(problem_of(v).1, "unknown data type 'bf17' (valid: fp64, fp32, tf32, bf16, fp16, fp8)");
        let mut v = entry();
        v["matmul_tflops"] = json!(400);
        assert_eq!(
            problem_of(v),
            ("matmul_tflops".into(), "400 is not the tflops table's 312 (give the table alone)".into())
        );
        let mut v = entry();
        v["hbm_tbps"] = Value::Null;
        assert_eq!(problem_of(v), ("hbm_tbps".into(), "must be a finite number, got None".into()));
        let mut v = entry();
        v["gemm_tile"] = json!([128, "x"]);
        assert_eq!(problem_of(v).1, "must be [rows, columns] in whole numbers, got [128, 'x']");
        let mut v = entry();
        v["nic"] = json!("cx9");
        assert_eq!(problem_of(v).1, "unknown NIC 'cx9' (valid: cx5, cx6, cx7, bf3, cx8)");
        let mut v = entry();
        v["nic_busbw"] = json!(40.0);
        assert_eq!(problem_of(v).1, "40 is not NIC cx6's 23.5 (give one)");
        let mut v = entry();
        v["arch"] = json!("kepler");
        assert_eq!(problem_of(v).1, "must be one of volta, ampere, hopper, blackwell, got 'kepler'");
    }

    #[test]
    fn the_nic_is_named_or_given_by_its_figure() {
        let mut v = entry();
        let m = v.as_object_mut().unwrap();
        m.remove("nic");
        m.insert("nic_busbw".into(), json!(11.0));
        let a = Accelerator::from_value("x", &v, &Catalog::shipped().nics).unwrap();
        assert_eq!((a.nic, a.nic_busbw), (None, 11.0));
    }
}
