//! SimAI's ns-3 configuration file (`SimAI.conf`, formats.md §6) read into a [`PacketConfig`].
//!
//! One `KEY value…` per line; blank lines are skipped. The keys are those of SimAI 1.6's shipped
//! file (the set in `tests/data/ns3/*/SimAI.conf`); an unknown key, a bad value, a repeated key, or
//! a setting the packet model does not simulate yet (HPCC-PINT, links going down, a lossy link) is
//! a one-line error naming the file, line and key. Keys absent from the file keep
//! SimAI's shipped values ([`PacketConfig::default`]). Output paths and monitor intervals are
//! accepted and not used (the packet backend writes no ns-3 trace files). Units as SimAI reads
//! them: rates with a unit (`50Mb/s`), `BUFFER_SIZE` in MB, DCQCN timers in µs, the RED maps as a
//! count then (rate in bit/s, value) pairs, thresholds in kilobytes of 1000 bytes.

use super::config::{CcMode, PacketConfig, PfcThreshold, Red};
use crate::error::{InputError, Result};

/// Keys read and not used by this model (paths, monitors, trace switches; `GLOBAL_T`, which
/// SimAI sets to 1 whatever the file says; `INT_MULTI`, the unit of ns-3's INT fields, which this
/// model keeps exact; `RATE_BOUND`, which ns-3 only turns off for tests; HPCC-PINT's constants;
/// `DATA_RATE` and `LINK_DELAY`, which every link of SimAI's topology file overrides;
/// `NIC_TOTAL_PAUSE_TIME`, which SimAI 1.6's ns-3 stores and never reads).
const ACCEPTED: &[&str] = &[
    "DATA_RATE",
    "LINK_DELAY",
    "NIC_TOTAL_PAUSE_TIME",
    "FLOW_FILE",
    "TRACE_FILE",
    "TRACE_OUTPUT_FILE",
    "FCT_OUTPUT_FILE",
    "PFC_OUTPUT_FILE",
    "SIMULATOR_STOP_TIME",
    "L2_CHUNK_SIZE",
    "L2_BACK_TO_ZERO",
    "GLOBAL_T",
    "INT_MULTI",
    "PINT_LOG_BASE",
    "PINT_PROB",
    "RATE_BOUND",
    "ACK_HIGH_PRIO",
    "ENABLE_TRACE",
    "QLEN_MON_FILE",
    "BW_MON_FILE",
    "RATE_MON_FILE",
    "CNP_MON_FILE",
    "MON_START",
    "MON_END",
    "QP_MON_INTERVAL",
    "QLEN_MON_INTERVAL",
    "BW_MON_INTERVAL",
];

/// A rate as ns-3 writes one (`100Mb/s`, `400Gbps`, bare bit/s), positive, in bytes/ns: the
/// platform reader's ns-3 DataRate parser.
fn rate(text: &str) -> Option<f64> {
    crate::platform::simai::parse_rate(text.trim()).filter(|r| r.is_finite() && *r > 0.0)
}

fn both(x: f64) -> (f64, f64) {
    (x, x)
}

fn three(x: f64) -> (f64, f64, f64) {
    (x, x, x)
}

/// Read `text` (the file `path`) over SimAI's shipped settings.
pub fn parse(path: &str, text: &str) -> Result<PacketConfig> {
    let mut cfg = PacketConfig::default();
    let mut seen: Vec<&str> = Vec::new();
    type Map = Option<Vec<(f64, f64)>>;
    let (mut kmin, mut kmax, mut pmax): (Map, Map, Map) = (None, None, None);
    // The line and key of the last RED map given: where the maps' agreement is checked.
    let (mut map_line, mut map_key) = (0, "KMIN_MAP");
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else { continue };
        let values: Vec<&str> = words.collect();
        let bad = |why: String| InputError::at(path, n, key, why);
        if seen.contains(&key) {
            return Err(bad("given twice".into()));
        }
        seen.push(key);
        let one = || -> Result<&str> {
            match values.as_slice() {
                [v] => Ok(v),
                _ => Err(bad(format!("expected one value, got {}", values.len()))),
            }
        };
        let number = |lo: f64, hi: f64| -> Result<f64> {
            let v = one()?;
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() && (lo..=hi).contains(&x) => Ok(x),
                _ => Err(bad(format!("expected a number from {lo} to {hi}, got {v:?}"))),
            }
        };
        // A count: a fraction is refused, not truncated (SimAI reads these as integers).
        let integer = |lo: f64, hi: f64| -> Result<u32> {
            let x = number(lo, hi)?;
            if x.fract() != 0.0 {
                return Err(bad(format!("expected a whole number, got {x}")));
            }
            Ok(x as u32)
        };
        let flag = || -> Result<bool> {
            match one()? {
                "0" => Ok(false),
                "1" => Ok(true),
                v => Err(bad(format!("expected 0 or 1, got {v:?}"))),
            }
        };
        let a_rate = || -> Result<f64> {
            let v = one()?;
            rate(v).ok_or_else(|| bad(format!("expected a positive rate such as 100Mb/s, got {v:?}")))
        };
        let map = || -> Result<Vec<(f64, f64)>> {
            let count: usize = values
                .first()
                .and_then(|c| c.parse().ok())
                .ok_or_else(|| bad("expected a count, then that many (rate in bit/s, value) pairs".into()))?;
            if values.len() != 1 + 2 * count || count == 0 {
                return Err(bad(format!(
                    "count {count} needs {} numbers after it, got {}",
                    2 * count,
                    values.len() - 1
                )));
            }
            let mut out = Vec::with_capacity(count);
            for pair in values[1..].chunks(2) {
                let r: f64 = pair[0]
                    .parse()
                    .ok()
                    .filter(|r: &f64| r.is_finite() && *r > 0.0)
                    .ok_or_else(|| bad(format!("rate {:?} is not a positive number of bit/s", pair[0])))?;
                let v: f64 = pair[1]
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| bad(format!("value {:?} is not a non-negative number", pair[1])))?;
                out.push((r / 8e9, v));
            }
            out.sort_by(|a, b| a.0.total_cmp(&b.0));
            Ok(out)
        };
        match key {
            "ENABLE_QCN" => cfg.ecn = flag()?,
            "USE_DYNAMIC_PFC_THRESHOLD" => {
                if !flag()? {
                    return Err(bad(
                        "static PFC thresholds from SimAI.conf are not read yet (SimAI's own default is dynamic, 1)"
                            .into(),
                    ));
                }
            }
            "PACKET_PAYLOAD_SIZE" => cfg.payload_bytes = integer(1.0, 65_000.0)?,
            "CC_MODE" => {
                let v = one()?;
                cfg.cc = match v.parse::<u32>().ok().and_then(CcMode::from_simai) {
                    Some(mode) => mode,
                    None if v == "10" => return Err(bad("10 (HPCC-PINT) is not simulated yet".into())),
                    None => {
                        return Err(bad(format!(
                            "expected 0 (none), 1 (DCQCN), 3 (HPCC), 7 (TIMELY) or 8 (DCTCP), got {v:?}"
                        )))
                    }
                }
            }
            "ALPHA_RESUME_INTERVAL" => cfg.dcqcn.alpha_interval_ns = number(1e-3, 1e9)? * 1e3,
            "RATE_DECREASE_INTERVAL" => cfg.dcqcn.decrease_interval_ns = number(0.0, 1e9)? * 1e3,
            "CLAMP_TARGET_RATE" => cfg.dcqcn.clamp_target = flag()?,
            "RP_TIMER" => cfg.dcqcn.timer_ns = number(1e-3, 1e9)? * 1e3,
            "EWMA_GAIN" => (cfg.dcqcn.gain, cfg.dctcp.gain) = both(number(0.0, 1.0)?),
            "FAST_RECOVERY_TIMES" => cfg.dcqcn.fast_recovery = integer(0.0, 1e6)?,
            // SimAI's ns-3 has one R_AI, R_HAI and minimum rate for every algorithm.
            "RATE_AI" => (cfg.dcqcn.rate_ai, cfg.hpcc.rate_ai, cfg.timely.rate_ai) = three(a_rate()?),
            "RATE_HAI" => (cfg.dcqcn.rate_hai, cfg.timely.rate_hai) = both(a_rate()?),
            "MIN_RATE" => {
                let r = a_rate()?;
                (cfg.dcqcn.min_rate, cfg.hpcc.min_rate, cfg.timely.min_rate, cfg.dctcp.min_rate) = (r, r, r, r);
            }
            "DCTCP_RATE_AI" => cfg.dctcp.rate_ai = a_rate()?,
            "U_TARGET" => cfg.hpcc.target_util = number(1e-3, 1.0)?,
            "MI_THRESH" => cfg.hpcc.mi_thresh = integer(0.0, 1e6)?,
            "FAST_REACT" => cfg.hpcc.fast_react = flag()?,
            "MULTI_RATE" => cfg.hpcc.multi_rate = flag()?,
            "SAMPLE_FEEDBACK" => cfg.hpcc.sample_feedback = flag()?,
            "VAR_WIN" => cfg.var_window = flag()?,
            "ERROR_RATE_PER_LINK" => {
                if number(0.0, 1.0)? != 0.0 {
                    return Err(bad("lossy links are not simulated yet; 0 is".into()));
                }
            }
            "L2_ACK_INTERVAL" => cfg.ack_interval = integer(1.0, 1e6)?,
            "HAS_WIN" => cfg.window = flag()?,
            "LINK_DOWN" => {
                if values.as_slice() != ["0", "0", "0"] {
                    return Err(bad("links going down are not simulated yet; 0 0 0 is".into()));
                }
            }
            "KMIN_MAP" => (kmin, map_line, map_key) = (Some(map()?), n, key),
            "KMAX_MAP" => (kmax, map_line, map_key) = (Some(map()?), n, key),
            "PMAX_MAP" => (pmax, map_line, map_key) = (Some(map()?), n, key),
            // SimAI multiplies it by 1024 · 1024 (common.h): MiB.
            "BUFFER_SIZE" => cfg.buffer_bytes = (number(1e-3, 1e6)? * (1u64 << 20) as f64) as u64,
            "PAUSE_TIME" => return Err(bad("not simulated yet: a pause here lasts until its resume frame".into())),
            k if ACCEPTED.contains(&k) => {}
            _ => return Err(bad("unknown key (SimAI 1.6's SimAI.conf has no such key)".into())),
        }
    }
    if kmin.is_some() || kmax.is_some() || pmax.is_some() {
        let keep = |m: Option<Vec<(f64, f64)>>, get: fn(&Red) -> f64| {
            m.unwrap_or_else(|| cfg.red.iter().map(|(r, red)| (*r, get(red))).collect())
        };
        let (kmin, kmax, pmax) =
            (keep(kmin, |r| r.kmin as f64 / 1e3), keep(kmax, |r| r.kmax as f64 / 1e3), keep(pmax, |r| r.pmax));
        let rates: Vec<f64> = kmin.iter().map(|x| x.0).collect();
        if kmax.iter().map(|x| x.0).collect::<Vec<_>>() != rates
            || pmax.iter().map(|x| x.0).collect::<Vec<_>>() != rates
        {
            return Err(InputError::at(
                path,
                map_line,
                map_key,
                "KMIN_MAP, KMAX_MAP and PMAX_MAP must list the same rates",
            ));
        }
        cfg.red = (0..rates.len())
            .map(|i| {
                let red =
                    Red { kmin: (kmin[i].1 * 1e3) as u64, kmax: (kmax[i].1 * 1e3) as u64, pmax: pmax[i].1.min(1.0) };
                (rates[i], red)
            })
            .collect();
        if let Some((_, r)) = cfg.red.iter().find(|(_, r)| r.kmax <= r.kmin) {
            return Err(InputError::at(
                path,
                map_line,
                map_key,
                format!("KMAX {} KB must exceed KMIN {} KB", r.kmax / 1000, r.kmin / 1000),
            ));
        }
    }
    if let PfcThreshold::Dynamic { alpha, .. } = cfg.pfc_threshold {
        cfg.pfc_threshold =
            PfcThreshold::Dynamic { alpha, hysteresis: 2 * u64::from(cfg.transport.wire_bytes(cfg.payload_bytes)) };
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_file_gives_the_defaults() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/ns3/spx16_ar_16m/SimAI.conf"
        ))
        .unwrap();
        let cfg = parse("SimAI.conf", &text).unwrap();
        assert_eq!(cfg, PacketConfig::default());
    }

    #[test]
    fn bad_lines_are_one_line_errors_naming_the_line() {
        for (text, want) in [
            ("ENABLE_QCN 1\nKMIN 3\n", "SimAI.conf:2: KMIN: unknown key"),
            ("RATE_AI 50Mbit\n", "SimAI.conf:1: RATE_AI: expected a positive rate"),
            ("CC_MODE 10\n", "SimAI.conf:1: CC_MODE: 10 (HPCC-PINT) is not simulated"),
            ("\nCC_MODE 2\n", "SimAI.conf:2: CC_MODE: expected 0 (none), 1 (DCQCN), 3 (HPCC)"),
            ("U_TARGET 1.5\n", "SimAI.conf:1: U_TARGET: expected a number from 0.001 to 1"),
            ("EWMA_GAIN 2\n", "SimAI.conf:1: EWMA_GAIN: expected a number from 0 to 1"),
            ("\nBUFFER_SIZE 32\nBUFFER_SIZE 16\n", "SimAI.conf:3: BUFFER_SIZE: given twice"),
            ("KMIN_MAP 2 1 2\n", "SimAI.conf:1: KMIN_MAP: count 2 needs 4 numbers"),
        ] {
            let e = parse("SimAI.conf", text).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e} (wanted {want})");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn values_land_in_their_units() {
        let cfg =
            parse("c", "RATE_AI 8Gb/s\nRP_TIMER 55\nBUFFER_SIZE 4\nCC_MODE 0\nPACKET_PAYLOAD_SIZE 1000\n").unwrap();
        assert_eq!(
            (cfg.dcqcn.rate_ai, cfg.dcqcn.timer_ns, cfg.buffer_bytes, cfg.cc, cfg.payload_bytes),
            (1.0, 55e3, 4 << 20, CcMode::None, 1000)
        );
        assert!(!cfg.dcqcn.clamp_target);
        assert!(parse("c", "CLAMP_TARGET_RATE 1\n").unwrap().dcqcn.clamp_target);
        assert!(parse("c", "CLAMP_TARGET_RATE 2\n").is_err());
    }

    #[test]
    fn cc_modes_by_simai_number_and_their_keys() {
        for (n, mode) in [
            ("0", CcMode::None),
            ("1", CcMode::Dcqcn),
            ("3", CcMode::Hpcc),
            ("7", CcMode::Timely),
            ("8", CcMode::Dctcp),
        ] {
            assert_eq!(parse("c", &format!("CC_MODE {n}\n")).unwrap().cc, mode);
        }
        let cfg = parse(
            "c",
            "U_TARGET 0.9\nMI_THRESH 5\nFAST_REACT 0\nMULTI_RATE 1\nSAMPLE_FEEDBACK 1\nVAR_WIN 0\n\
             RATE_AI 8Gb/s\nRATE_HAI 16Gb/s\nMIN_RATE 800Mb/s\nDCTCP_RATE_AI 80Gb/s\nEWMA_GAIN 0.0625\n",
        )
        .unwrap();
        let h = cfg.hpcc;
        assert_eq!(
            (h.target_util, h.mi_thresh, h.fast_react, h.multi_rate, h.sample_feedback),
            (0.9, 5, false, true, true)
        );
        assert!(!cfg.var_window);
        assert_eq!((h.rate_ai, h.min_rate), (1.0, 0.1));
        assert_eq!((cfg.timely.rate_ai, cfg.timely.rate_hai, cfg.timely.min_rate), (1.0, 2.0, 0.1));
        assert_eq!((cfg.dctcp.rate_ai, cfg.dctcp.gain, cfg.dctcp.min_rate), (10.0, 0.0625, 0.1));
        assert_eq!((cfg.dcqcn.rate_ai, cfg.dcqcn.gain), (1.0, 0.0625));
    }

    #[test]
    fn buffer_size_is_in_mebibytes_as_simai_reads_it() {
        // SimAI's common.h: ConfigBufferSize(buffer_size * 1024 * 1024).
        assert_eq!(parse("SimAI.conf", "BUFFER_SIZE 32\n").unwrap().buffer_bytes, 32 << 20);
        assert_eq!(PacketConfig::default().buffer_bytes, 32 << 20);
    }

    #[test]
    fn every_key_simai_reads_is_taken_or_named_as_not_simulated() {
        // SimAI's common.h also reads these; the topology file overrides the first two, and
        // SimAI 1.6's ns-3 never reads what it stores for the third.
        for line in ["DATA_RATE 100Gb/s", "LINK_DELAY 0.001ms", "NIC_TOTAL_PAUSE_TIME 0"] {
            assert!(parse("SimAI.conf", &format!("{line}\n")).is_ok(), "{line}");
        }
        let e = parse("SimAI.conf", "PAUSE_TIME 5\n").unwrap_err().to_string();
        assert!(e.starts_with("SimAI.conf:1: PAUSE_TIME: not simulated"), "{e}");
    }

    #[test]
    fn integer_keys_refuse_fractions() {
        for line in ["MI_THRESH 2.5", "FAST_RECOVERY_TIMES 1.5", "L2_ACK_INTERVAL 1.5", "PACKET_PAYLOAD_SIZE 1000.5"] {
            let e = parse("SimAI.conf", &format!("{line}\n")).unwrap_err().to_string();
            assert!(e.contains("expected a whole number"), "{line}: {e}");
        }
        assert_eq!(parse("SimAI.conf", "MI_THRESH 5\n").unwrap().hpcc.mi_thresh, 5);
    }
}
