//! SimAI's EndToEnd report: a summary of where the time goes, then one line per workload row.
//!
//! `compat` reproduces SimAI-Analytical's accounting: every collective counted fully exposed
//! except a fixed overlap ratio per group, the pipeline bubble as
//! (p−1)/(ga·vpp) × Σ (compute + fwd/ig comm) over rows other than `embedding_layer`, and
//! PP comm as 2·vpp·ga·(pp_comm/pp_o)·(1−pp_o) (0 with the default pp_o = 1; SimAI 1.6/1.7), or
//! with a busbw file 2·vpp·ga·(pp_comm/PP.busbw)·(1−pp_o) (SimAI at d44c48b), GiB/s and µs.
//! The default accounting takes exposed communication from the simulated schedule (idle compute
//! while a collective is in flight), classifies each collective by its own group, and corrects
//! the bubble to (p−1)/ga (AICB's `vpp` is layers per stage, not interleaving) and the PP
//! time to 2·ga point-to-point transfers of pp_comm bytes at the PP link's bandwidth.

use super::build::{SimaiWorkload, DP, DP_EP, EP};
use super::file::{CommType, Scope};
use crate::executor::Execution;
use crate::exposure::exposure;
use crate::workload::{Collective, OpKind};
use std::fmt::Write;

pub const SUMMARY_COLUMNS: [&str; 9] = [
    "Expose DP comm",
    "Expose DP_EP comm",
    "Expose TP comm",
    "Expose_EP_comm",
    "Expose_PP_comm",
    "bubble time",
    "total comp",
    "total exposed comm",
    "Total time",
];

pub const LAYER_COLUMNS: [&str; 15] = [
    "fwd compute",
    "wg compute",
    "ig compute",
    "fwd exposed comm",
    "wg exposed comm",
    "ig exposed comm",
    "fwd total comm",
    "fwd algbw",
    "fwd busbw",
    "wg total comm",
    "wg algbw",
    "wg busbw",
    "ig total comm",
    "ig algbw",
    "ig busbw",
];

/// Times in µs, bandwidths in GB/s (GiB/s in compat mode, as SimAI).
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub run_name: String,
    pub compat: bool,
    pub summary: [f64; 9],
    pub layer_names: Vec<String>,
    pub layers: Vec<[f64; 15]>,
}

/// Settings of the report that the schedule does not carry.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    pub run_name: String,
    pub compat: bool,
    pub dp_o: f64,
    pub tp_o: f64,
    pub ep_o: f64,
    pub pp_o: f64,
    /// Compat with a busbw file: its PP.busbw (GB/s), which prices pp_comm there.
    pub pp_busbw: Option<f64>,
    /// ns of one pp_comm transfer between neighbouring stages (default mode).
    pub pp_transfer_ns: f64,
}

/// Phase order of [`SimaiWorkload::row_ops`]: fwd, ig, wg.
const FWD: usize = 0;
const IG: usize = 1;
const WG: usize = 2;

/// nccl-tests bandwidths of a phase as SimAI computes them (f32, GiB/s).
fn simai_bw(kind: CommType, bytes: u64, n: u32, total_ns: f64) -> (f64, f64) {
    let algbw = (bytes as f64 / (total_ns / 1000.0) * 1_000_000.0 * (1.0 / 1073741824.0)) as f32;
    let (nf, steps) =
        (n as f32, if matches!(kind, CommType::Collective(Collective::AllReduce, _)) { 2.0 } else { 1.0 });
    let busbw = match kind {
        CommType::Collective(
            Collective::AllReduce | Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll,
            _,
        ) => ((algbw * steps * (nf - 1.0)) as f64 / n as f64) as f32,
        _ => 0.0,
    };
    (algbw as f64, busbw as f64)
}

/// SimAI stores an exposed time as integer ns and scales it by (1 − ratio) in f32.
fn simai_discount(ns: f64, ratio: f64) -> f64 {
    if ratio == 0.0 {
        ns
    } else {
        ((ns as f32) * (1.0 - ratio as f32)) as u64 as f64
    }
}

impl Report {
    pub fn build(sw: &SimaiWorkload, exec: &Execution, opt: &ReportOptions) -> Report {
        let w = &sw.workload;
        let prog = &w.programs[0];
        let tl = &exec.timelines[0];
        let dur = |i: u32| tl.end[i as usize] - tl.start[i as usize];
        let h = &sw.file.header;
        let (t, e, dp) = (sw.tp, sw.ep, sw.dp);
        let mut summary = [0.0f64; 9];
        let mut layers = Vec::with_capacity(sw.file.rows.len());
        let ex = if opt.compat { None } else { Some(exposure(prog, tl, exec.end_ns)) };
        let mut pre_bubble = 0.0;
        for (i, row) in sw.file.rows.iter().enumerate() {
            let ops = &sw.row_ops[i];
            let comp = |ph: usize| dur(ops[ph].compute);
            // fold from +0.0: an empty f64 sum is -0.0, which would print as "-0".
            let total = |ph: usize| ops[ph].comms.iter().fold(0.0, |a, &o| a + dur(o));
            let comms = [&row.fwd, &row.ig, &row.wg];
            let mut v = [0.0f64; 15];
            v[0] = comp(FWD) / 1000.0;
            v[1] = comp(WG) / 1000.0;
            v[2] = comp(IG) / 1000.0;
            let mut exposed = [0.0f64; 3];
            if let Some(ex) = &ex {
                for ph in [FWD, IG, WG] {
                    exposed[ph] = ops[ph].comms.iter().fold(0.0, |a, &o| a + ex.exposed[o as usize]);
                    for &o in &ops[ph].comms {
                        if let OpKind::Collective { group, .. } = prog.ops[o as usize].kind {
                            summary[match group {
                                DP => 0,
                                DP_EP => 1,
                                EP => 3,
                                _ => 2,
                            }] += ex.exposed[o as usize] / 1000.0;
                        }
                    }
                }
            } else {
                // SimAI: fwd/ig discounted by the EP ratio when the *fwd* collective is EP.
                let fwd_ep = matches!(row.fwd.kind, CommType::Collective(_, Scope::Ep));
                let o_fi = if fwd_ep { opt.ep_o } else { opt.tp_o };
                exposed[FWD] = simai_discount(total(FWD), o_fi);
                exposed[IG] = simai_discount(total(IG), o_fi);
                exposed[WG] = simai_discount(total(WG), opt.dp_o);
                let wg_dpep = matches!(row.wg.kind, CommType::Collective(_, Scope::DpEp));
                summary[if wg_dpep { 1 } else { 0 }] += exposed[WG] / 1000.0;
                summary[if fwd_ep { 3 } else { 2 }] += (exposed[FWD] + exposed[IG]) / 1000.0;
            }
            if row.name != "embedding_layer" {
                let comm = if opt.compat { total(FWD) + total(IG) } else { exposed[FWD] + exposed[IG] };
                pre_bubble += (comm + comp(FWD) + comp(WG) + comp(IG)) / 1000.0;
            }
            v[3] = exposed[FWD] / 1000.0;
            v[4] = exposed[WG] / 1000.0;
            v[5] = exposed[IG] / 1000.0;
            for (k, ph) in [FWD, WG, IG].into_iter().enumerate() {
                let tot = total(ph);
                let c = comms[ph];
                let bytes: u64 = ops[ph]
                    .comms
                    .iter()
                    .map(|&o| match prog.ops[o as usize].kind {
                        OpKind::Collective { bytes, .. } => bytes,
                        _ => 0,
                    })
                    .sum::<u64>()
                    .max(if ops[ph].comms.is_empty() { c.bytes } else { 0 });
                let (alg, bus) = if opt.compat {
                    // SimAI's group size for the bandwidth columns: EP size for _EP fwd/ig,
                    // TP size for every other fwd/ig, DP or DP/EP for wg.
                    let n = match (ph, c.kind) {
                        (WG, CommType::Collective(_, Scope::DpEp)) => dp / e,
                        (WG, _) => dp,
                        (_, CommType::Collective(_, Scope::Ep)) => e,
                        _ => t,
                    };
                    let kind = if ops[ph].comms.is_empty() { CommType::None } else { c.kind };
                    simai_bw(kind, bytes, n, tot)
                } else {
                    match ops[ph].comms.first().map(|&o| &prog.ops[o as usize].kind) {
                        Some(OpKind::Collective { collective, group, .. }) if tot > 0.0 => {
                            let alg = bytes as f64 / tot;
                            (alg, alg * collective.busbw_factor(w.group_size(*group)))
                        }
                        _ => (f64::NAN, f64::NAN),
                    }
                };
                v[6 + 3 * k] = tot / 1000.0;
                v[7 + 3 * k] = alg;
                v[8 + 3 * k] = bus;
            }
            summary[6] += v[0] + v[1] + v[2];
            summary[7] += v[3] + v[4] + v[5];
            layers.push(v);
        }
        let (p, ga) = (h.pp as f64, h.ga as f64);
        if opt.compat {
            let vpp = h.vpp as f64;
            // SimAI truncates the PP term to whole µs twice (it is stored as a Tick).
            let pp_o = opt.pp_o as f32;
            let divisor = opt.pp_busbw.map_or(pp_o as f64, |b| b as f32 as f64);
            let pp_us = (2.0 * vpp * ga * (h.pp_comm as f64 * (1.0 / 1073741824.0) / divisor * 1e9) / 1000.0) as u64;
            summary[4] = ((pp_us as f32) * (1.0 - pp_o)) as u64 as f64;
            summary[5] = pre_bubble * (p - 1.0) / (ga * vpp);
        } else {
            summary[4] = if p > 1.0 { 2.0 * ga * opt.pp_transfer_ns * (1.0 - opt.pp_o) / 1000.0 } else { 0.0 };
            summary[5] = pre_bubble * (p - 1.0) / ga;
            // The schedule's own idle time (none for a single class) belongs to the bubble too.
            if let Some(ex) = &ex {
                summary[5] += ex.idle_ns / 1000.0;
            }
        }
        summary[8] = summary[6] + summary[7] + summary[5] + summary[4];
        Report {
            run_name: opt.run_name.clone(),
            compat: opt.compat,
            summary,
            layer_names: sw.file.rows.iter().map(|r| r.name.clone()).collect(),
            layers,
        }
    }

    /// The EndToEnd CSV, in SimAI's layout (µs with 0 decimals; bandwidths with 2).
    pub fn to_csv(&self) -> String {
        let total = self.summary[8];
        let mut out = String::with_capacity(64 + self.layers.len() * 120);
        out.push_str("File name, ");
        out.push_str(&SUMMARY_COLUMNS.join(", "));
        out.push('\n');
        out.push_str(&self.run_name);
        for (k, v) in self.summary.iter().enumerate() {
            out.push_str(", ");
            write_time(&mut out, *v);
            if k < 8 {
                let _ = write!(out, " ({:.2}%)", v / total * 100.0);
            }
        }
        out.push('\n');
        out.push_str("layer_name,Analytical_test,fwd compute,wg compute,ig compute,fwd exposed comm,wg exposed comm,ig exposed comm,fwd total comm,algbw,busbw,wg total comm,algbw,busbw,ig total comm,algbw,busbw\n");
        for (name, v) in self.layer_names.iter().zip(&self.layers) {
            out.push_str(name);
            out.push_str(",Analytical_test");
            for (k, x) in v.iter().enumerate() {
                out.push(',');
                let is_bw = k >= 7 && (k - 7) % 3 != 2;
                if is_bw {
                    self.write_bw(&mut out, *x);
                } else {
                    write_time(&mut out, *x);
                }
            }
            out.push('\n');
        }
        out
    }

    /// A bandwidth cell (written in place: a run's CSV has tens of thousands of cells).
    fn write_bw(&self, out: &mut String, x: f64) {
        if x.is_finite() {
            write_fixed(out, x, 2);
        } else if self.compat {
            out.push_str(if x.is_nan() {
                "-nan" // glibc prints x86's 0/0 this way
            } else if x > 0.0 {
                "inf"
            } else {
                "-inf"
            });
        }
    }
}

/// `x` with `decimals` (at most 4) digits after the point, exactly as `format!("{x:.N}")` writes it
/// (the binary value rounded to nearest), at a fraction of its cost: a run's CSV has tens of
/// thousands of cells. Where the scaled value is within 2⁻¹² of a tie (its rounding error could
/// cross it) or too large to be exact, `format!`'s own algorithm writes it.
fn write_fixed(out: &mut String, x: f64, decimals: u32) {
    let scale = 10u64.pow(decimals);
    let y = x.abs() * scale as f64; // error < 2⁻¹³ below 2⁴⁰
    let whole = y.floor();
    let frac = y - whole;
    if y < (1u64 << 40) as f64 && (frac - 0.5).abs() > 1.0 / 4096.0 {
        let n = whole as u64 + u64::from(frac > 0.5);
        if x.is_sign_negative() {
            out.push('-');
        }
        // Digits from the last, into a buffer: `write!` of an integer costs more than the rest.
        let mut digits = [0u8; 24];
        let mut at = digits.len();
        let mut rest = n;
        for place in 0.. {
            if place == decimals && decimals > 0 {
                at -= 1;
                digits[at] = b'.';
            }
            if place > decimals && rest == 0 {
                break;
            }
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        out.push_str(std::str::from_utf8(&digits[at..]).expect("ASCII digits"));
    } else {
        let _ = write!(out, "{x:.prec$}", prec = decimals as usize);
    }
}

fn write_time(out: &mut String, x: f64) {
    if x.is_finite() {
        write_fixed(out, x, 0);
    } else {
        out.push_str("NaN or Inf");
    }
}

#[cfg(test)]
mod tests {
    use super::write_fixed;
    use crate::random::Stream;

    fn fixed(x: f64, decimals: u32) -> String {
        let mut out = String::new();
        write_fixed(&mut out, x, decimals);
        out
    }

    #[test]
    fn fixed_point_cells_are_written_as_format_writes_them() {
        let mut cases = vec![0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.125, 0.005, 1.005, 2.675, 1e12, 1.1e12 + 0.5];
        cases.extend([0.499_999_999, 0.500_000_001, 99.995, 1234.565, -0.001, (1u64 << 40) as f64 / 100.0]);
        let mut draw = Stream::new(7, 0);
        for _ in 0..200_000 {
            let magnitude = 10f64.powi((draw.next() % 16) as i32 - 4);
            let sign = if draw.next().is_multiple_of(2) { 1.0 } else { -1.0 };
            cases.push(sign * draw.uniform() * magnitude);
            // Values on a tie of two decimals, as a bandwidth of whole bytes per µs often is.
            cases.push((draw.next() % 1_000_000) as f64 / 200.0);
        }
        for x in cases {
            assert_eq!(fixed(x, 0), format!("{x:.0}"), "{x:e} with 0 decimals");
            assert_eq!(fixed(x, 2), format!("{x:.2}"), "{x:e} with 2 decimals");
        }
    }
}
