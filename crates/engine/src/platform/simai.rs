//! SimAI's topology file (written by `gen_Topo_Template.py`, read by its ns-3 backend):
//!
//! ```text
//! <nodes> <gpus_per_server> <nvswitch_count> <switch_count> <link_count> <gpu_type>
//! <NVSwitch ids...> <switch ids...>
//! <src> <dst> <rate> <delay> <error_rate>      (link_count lines, each one full-duplex link)
//! ```
//!
//! Rates are ns-3 DataRate strings in bits per second (`400Gbps` = 50 GB/s), delays ns-3 Time
//! strings (`0.0005ms` = 500 ns). Ids after the header may wrap lines freely, as ns-3's stream
//! reader allows; every node not listed as a switch is a GPU, and GPUs must be `0..G`.

use std::collections::HashMap;

use super::{Link, NodeKind, Platform};
use crate::error::{InputError, Result};

/// Bits per second → bytes per ns.
const BPS_TO_BYTES_PER_NS: f64 = 1.0 / 8e9;

/// `num` × 10^`exp`, correctly rounded (one rounding, so `400Gbps` is exactly 50 B/ns and
/// `0.0005ms` exactly 500 ns, and a shortest decimal written back reads as the same value).
fn scaled(num: &str, exp: i32) -> Option<f64> {
    num.parse::<f64>().ok()?;
    format!("{num}e{exp}").parse().ok()
}

/// An ns-3 DataRate string in bytes/ns. Prefixes k/K/M/G/T are powers of 10, ki/Ki/Mi/Gi/Ti
/// powers of 2; `bps`/`b/s` count bits, `Bps`/`B/s` bytes; a bare number is bits per second.
pub fn parse_rate(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic() || c == '/').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let (bits, rest) = if let Some(p) = unit.strip_suffix("bps").or_else(|| unit.strip_suffix("b/s")) {
        (true, p)
    } else if let Some(p) = unit.strip_suffix("Bps").or_else(|| unit.strip_suffix("B/s")) {
        (false, p)
    } else if unit.is_empty() {
        (true, "")
    } else {
        return None;
    };
    // Bytes (or bits) per ns: decimal prefixes shift the exponent, binary ones multiply.
    let bytes_or_bits = match rest {
        "" => scaled(num, -9),
        "k" | "K" => scaled(num, -6),
        "M" => scaled(num, -3),
        "G" => scaled(num, 0),
        "T" => scaled(num, 3),
        "ki" | "Ki" => scaled(num, -9).map(|v| v * 1024.0),
        "Mi" => scaled(num, -9).map(|v| v * 1024.0 * 1024.0),
        "Gi" => scaled(num, -9).map(|v| v * 1024.0f64.powi(3)),
        "Ti" => scaled(num, -9).map(|v| v * 1024.0f64.powi(4)),
        _ => return None,
    }?;
    let r = if bits { bytes_or_bits / 8.0 } else { bytes_or_bits };
    (r.is_finite() && r > 0.0).then_some(r)
}

/// An ns-3 Time string in ns (`s ms us ns ps fs min h d`; a bare number is seconds).
pub fn parse_time(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let t = match unit {
        "" | "s" => scaled(num, 9),
        "ms" => scaled(num, 6),
        "us" => scaled(num, 3),
        "ns" => scaled(num, 0),
        "ps" => scaled(num, -3),
        "fs" => scaled(num, -6),
        "min" => scaled(num, 9).map(|v| v * 60.0),
        "h" => scaled(num, 9).map(|v| v * 3600.0),
        "d" => scaled(num, 9).map(|v| v * 86400.0),
        _ => return None,
    }?;
    (t.is_finite() && t >= 0.0).then_some(t)
}

/// The shortest plain decimal (no exponent) `d` of `x` for which `reads(d)` holds, if any.
fn shortest_decimal(x: f64, reads: impl Fn(&str) -> bool) -> Option<String> {
    (0..17).find_map(|digits| {
        let v: f64 = format!("{x:.digits$e}").parse().ok()?;
        let d = format!("{v}");
        reads(&d).then_some(d)
    })
}

/// Bytes/ns as an ns-3 DataRate string in Gbps, as gen_Topo_Template.py spells rates: the
/// shortest decimal that [`parse_rate`] reads back to the same value (else exact bits/s).
pub fn format_rate(bytes_per_ns: f64) -> String {
    let exact = |s: &str| parse_rate(s) == Some(bytes_per_ns);
    if let Some(d) = shortest_decimal(bytes_per_ns * 8.0, |d| exact(&format!("{d}Gbps"))) {
        return format!("{d}Gbps");
    }
    // Rounding in bits ↔ bytes/ns: try the neighbours of the bit rate, a few ulps either side.
    let bps = bytes_per_ns * 8e9;
    let (mut up, mut down) = (bps, bps);
    let mut candidates = vec![bps];
    for _ in 0..8 {
        up = up.next_up();
        down = down.next_down();
        candidates.extend([up, down]);
    }
    candidates.into_iter().map(|v| format!("{v}bps")).find(|s| exact(s)).unwrap_or_else(|| format!("{bps}bps"))
}

/// A delay in ns as an ns-3 Time string in ms, as gen_Topo_Template.py spells delays: the
/// shortest decimal that [`parse_time`] reads back to the same value (else exact ns).
pub fn format_time(ns: f64) -> String {
    shortest_decimal(ns / 1e6, |d| parse_time(&format!("{d}ms")) == Some(ns))
        .map_or_else(|| format!("{ns}ns"), |d| format!("{d}ms"))
}

struct Tokens<'a> {
    file: &'a str,
    lines: std::iter::Peekable<Box<dyn Iterator<Item = (usize, &'a str)> + 'a>>,
    last_line: usize,
}

impl<'a> Tokens<'a> {
    fn new(file: &'a str, text: &'a str, skip: usize) -> Tokens<'a> {
        let it: Box<dyn Iterator<Item = (usize, &'a str)>> = Box::new(
            text.lines().enumerate().skip(skip).flat_map(|(i, l)| l.split_whitespace().map(move |t| (i + 1, t))),
        );
        Tokens { file, lines: it.peekable(), last_line: skip }
    }

    fn next(&mut self, field: &str) -> Result<(usize, &'a str)> {
        match self.lines.next() {
            Some((line, t)) => {
                self.last_line = line;
                Ok((line, t))
            }
            None => Err(InputError::at(self.file, self.last_line.max(1), field, "missing: the file ends early")),
        }
    }

    fn number<T: std::str::FromStr>(&mut self, field: &str) -> Result<(usize, T)> {
        let (line, t) = self.next(field)?;
        t.parse()
            .map(|v| (line, v))
            .map_err(|_| InputError::at(self.file, line, field, format!("'{t}' is not a whole number")))
    }
}

impl Platform {
    /// Parse SimAI topology text; `file` names it in errors.
    pub fn parse_simai(file: &str, text: &str) -> Result<Platform> {
        let header: Vec<&str> = text.lines().next().unwrap_or("").split_whitespace().collect();
        const NAMES: [&str; 5] = ["nodes", "gpus_per_server", "nvswitch_count", "switch_count", "link_count"];
        if header.len() < 5 || header.len() > 6 {
            return Err(InputError::at(
                file,
                1,
                "header",
                format!("expected 6 fields (nodes gpus_per_server nvswitch_count switch_count link_count gpu_type), found {}", header.len()),
            ));
        }
        let mut h = [0u32; 5];
        for (i, name) in NAMES.iter().enumerate() {
            h[i] = header[i]
                .parse()
                .map_err(|_| InputError::at(file, 1, name, format!("'{}' is not a whole number", header[i])))?;
        }
        let [nodes, gps, nvs_count, sw_count, link_count] = h;
        let gpu_type = header.get(5).copied().unwrap_or("");
        if nvs_count as u64 + sw_count as u64 > nodes as u64 {
            return Err(InputError::at(
                file,
                1,
                "switch_count",
                format!("{nvs_count} NVSwitches + {sw_count} switches exceed the {nodes} nodes"),
            ));
        }
        if gps == 0 {
            return Err(InputError::at(file, 1, "gpus_per_server", "must be at least 1"));
        }
        if nvs_count as u64 + sw_count as u64 == nodes as u64 {
            return Err(InputError::at(file, 1, "nodes", format!("no GPU: all {nodes} nodes are switches")));
        }
        // A connected topology of n nodes has n − 1 links or more, each five words: bound the
        // node count by the file before allocating for it.
        let words: usize = text.lines().skip(1).map(|l| l.split_whitespace().count()).sum();
        if nodes as usize > words / 5 + 1 {
            return Err(InputError::at(
                file,
                1,
                "nodes",
                format!(
                    "{nodes} nodes need {} links to be connected, but the file holds {} at most",
                    nodes - 1,
                    words / 5
                ),
            ));
        }
        let mut kinds = vec![NodeKind::Gpu; nodes as usize];
        let mut tok = Tokens::new(file, text, 1);
        for i in 0..nvs_count + sw_count {
            let (field, kind) =
                if i < nvs_count { ("NVSwitch id", NodeKind::NvSwitch) } else { ("switch id", NodeKind::Switch) };
            let (line, id): (usize, u32) = tok.number(field)?;
            if id >= nodes {
                return Err(InputError::at(file, line, field, format!("{id} is not a node id (0..{nodes})")));
            }
            if kinds[id as usize] != NodeKind::Gpu {
                return Err(InputError::at(file, line, field, format!("{id} is listed twice")));
            }
            kinds[id as usize] = kind;
        }
        let gpus = nodes - nvs_count - sw_count;
        if let Some(id) = kinds[..gpus as usize].iter().position(|k| *k != NodeKind::Gpu) {
            return Err(InputError::at(
                file,
                2,
                "switch ids",
                format!("switch {id} sits among the GPU ids: GPUs must be 0..{gpus}, switches {gpus}..{nodes}"),
            ));
        }
        let mut links = Vec::with_capacity(2 * (link_count as usize).min(words / 5));
        for i in 0..link_count {
            if tok.lines.peek().is_none() {
                return Err(InputError::at(
                    file,
                    1,
                    "link_count",
                    format!("the header says {link_count} links but the file has {i}"),
                ));
            }
            let (line, src): (usize, u32) = tok.number("link src")?;
            let (_, dst): (usize, u32) = tok.number("link dst")?;
            let (_, rate) = tok.next("link rate")?;
            let bandwidth = parse_rate(rate).ok_or_else(|| {
                InputError::at(file, line, "link rate", format!("'{rate}' is not an ns-3 data rate like 400Gbps"))
            })?;
            let (_, delay) = tok.next("link delay")?;
            let latency_ns = parse_time(delay).ok_or_else(|| {
                InputError::at(file, line, "link delay", format!("'{delay}' is not an ns-3 time like 0.0005ms"))
            })?;
            let (_, er) = tok.next("link error_rate")?;
            let error_rate: f64 =
                er.parse().ok().filter(|e: &f64| (0.0..=1.0).contains(e)).ok_or_else(|| {
                    InputError::at(file, line, "link error_rate", format!("'{er}' is not a probability"))
                })?;
            for (a, field) in [(src, "link src"), (dst, "link dst")] {
                if a >= nodes {
                    return Err(InputError::at(file, line, field, format!("{a} is not a node id (0..{nodes})")));
                }
            }
            if src == dst {
                return Err(InputError::at(file, line, "link dst", format!("a link from node {src} to itself")));
            }
            links.push(Link { src, dst, bandwidth, latency_ns, error_rate });
            links.push(Link { src: dst, dst: src, bandwidth, latency_ns, error_rate });
        }
        if let Ok((line, t)) = tok.next("") {
            return Err(InputError::at(
                file,
                line,
                "link_count",
                format!("'{t}' after the {link_count} links the header announces"),
            ));
        }
        Platform::from_parts(file, kinds, links, gps, gpu_type)
    }

    /// Directed links paired into full-duplex links: the index of the first direction of each
    /// pair, in link order; every link needs a reverse twin with the same rate, delay and error
    /// rate.
    pub fn duplex_links(&self) -> Result<Vec<usize>> {
        let key = |l: &Link| (l.src, l.dst, l.bandwidth.to_bits(), l.latency_ns.to_bits(), l.error_rate.to_bits());
        let mut open: HashMap<(u32, u32, u64, u64, u64), Vec<usize>> = HashMap::new();
        let mut first: Vec<usize> = Vec::with_capacity(self.links.len() / 2);
        for (i, l) in self.links.iter().enumerate() {
            let twin = Link { src: l.dst, dst: l.src, ..*l };
            match open.get_mut(&key(&twin)).and_then(|v| v.pop()) {
                Some(j) => first.push(j),
                None => open.entry(key(l)).or_default().push(i),
            }
        }
        if let Some(&i) = open.values().flatten().min() {
            let l = &self.links[i];
            return Err(InputError::field(
                "topology",
                &format!("link {i} ({} -> {})", l.src, l.dst),
                "has no reverse link with the same rate and delay; a SimAI file holds full-duplex links only",
            ));
        }
        first.sort_unstable();
        Ok(first)
    }

    /// The SimAI text of this topology, as gen_Topo_Template.py writes it: rates in Gbps,
    /// delays in ms, one line per full-duplex link ([`Platform::duplex_links`]).
    pub fn to_simai(&self) -> Result<String> {
        let simai_kind = |k: NodeKind| matches!(k, NodeKind::Gpu | NodeKind::NvSwitch | NodeKind::Switch);
        if let Some(v) = (0..self.node_count()).find(|&v| !simai_kind(self.kinds[v as usize])) {
            return Err(InputError::field(
                "topology",
                "nodes",
                format!(
                    "node '{}' is a {}; a SimAI file holds GPUs, NVSwitches and switches only",
                    self.node_name(v),
                    self.kinds[v as usize].name()
                ),
            ));
        }
        let p = &self.placement;
        let gps = p.largest_domain();
        if let Some(r) = (0..p.ranks()).find(|&r| p.device(r) != r || p.domain(r) != r / gps || p.rail(r) != r % gps) {
            return Err(InputError::field(
                "topology",
                &format!("rank {r}"),
                "a SimAI file runs rank r on GPU r in servers of equally many GPUs; this platform places ranks otherwise",
            ));
        }
        let lines = self.duplex_links()?;
        let nvs = (0..self.kinds.len()).filter(|&i| self.kinds[i] == NodeKind::NvSwitch);
        let sw = (0..self.kinds.len()).filter(|&i| self.kinds[i] == NodeKind::Switch);
        let (nvs_count, sw_count) = (nvs.clone().count(), sw.clone().count());
        let mut out = String::with_capacity(40 * lines.len() + 64);
        out.push_str(&format!("{} {gps} {nvs_count} {sw_count} {} {}\n", self.kinds.len(), lines.len(), self.gpu_type));
        for id in nvs.chain(sw) {
            out.push_str(&format!("{id} "));
        }
        out.push('\n');
        // Links of a fabric mostly share a few rates and delays: spell each once.
        let mut rates: HashMap<u64, String> = HashMap::new();
        let mut delays: HashMap<u64, String> = HashMap::new();
        for i in lines {
            let l = &self.links[i];
            let rate = rates.entry(l.bandwidth.to_bits()).or_insert_with(|| format_rate(l.bandwidth));
            out.push_str(&format!("{} {} {rate} ", l.src, l.dst));
            let delay = delays.entry(l.latency_ns.to_bits()).or_insert_with(|| format_time(l.latency_ns));
            out.push_str(&format!("{delay} {}\n", l.error_rate));
        }
        Ok(out)
    }
}

/// Bits per second of a bytes/ns rate (for reports in the SimAI convention).
pub fn bytes_per_ns_to_bps(bytes_per_ns: f64) -> f64 {
    bytes_per_ns / BPS_TO_BYTES_PER_NS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two servers of 2 GPUs, one NVSwitch each, both on one ToR (SimAI generator layout).
    const SMALL: &str = "7 2 2 1 8 H100\n4 5 6 \n\
        0 4 2880Gbps 0.000025ms 0\n0 6 400Gbps 0.0005ms 0\n1 4 2880Gbps 0.000025ms 0\n1 6 400Gbps 0.0005ms 0\n\
        2 5 2880Gbps 0.000025ms 0\n2 6 400Gbps 0.0005ms 0\n3 5 2880Gbps 0.000025ms 0\n3 6 400Gbps 0.0005ms 0\n";

    #[test]
    fn units_follow_ns3() {
        assert_eq!(parse_rate("400Gbps"), Some(50.0));
        assert_eq!(parse_rate("2880Gbps"), Some(360.0));
        assert_eq!(parse_rate("100Mbps"), Some(0.0125));
        assert_eq!(parse_rate("1GBps"), Some(1.0));
        assert_eq!(parse_rate("8"), Some(1e-9));
        assert_eq!(parse_rate("400Gbit"), None);
        assert_eq!(parse_rate("-1Gbps"), None);
        assert_eq!(parse_time("0.0005ms"), Some(500.0));
        assert_eq!(parse_time("25ns"), Some(25.0));
        assert_eq!(parse_time("1us"), Some(1000.0));
        assert_eq!(parse_time("2"), Some(2e9));
        assert_eq!(parse_time("1parsec"), None);
        // One rounding: the decimal's nearest double, not a product of two rounded numbers.
        assert_eq!(parse_time("0.3ms"), Some(300000.0));
        assert_eq!(parse_rate("0.1Tbps"), Some(12.5));
        assert_eq!((parse_rate("1.Gbps"), parse_time("1.ms"), parse_rate("1e3Gbps")), (Some(0.125), Some(1e6), None));
        assert_eq!(format_rate(50.0), "400Gbps");
        assert_eq!(format_rate(0.0125), "0.1Gbps");
        assert_eq!(
            (format_time(500.0), format_time(25.0), format_time(0.0)),
            ("0.0005ms".into(), "0.000025ms".into(), "0ms".into())
        );
        assert_eq!(bytes_per_ns_to_bps(50.0), 4e11);
    }

    #[test]
    fn parses_the_generator_layout() {
        let t = Platform::parse_simai("t.txt", SMALL).unwrap();
        assert_eq!((t.placement.ranks(), t.placement.largest_domain(), t.node_count(), t.links.len()), (4, 2, 7, 16));
        assert_eq!(t.kinds[4..], [NodeKind::NvSwitch, NodeKind::NvSwitch, NodeKind::Switch]);
        assert_eq!(t.nvswitches(1), &[5]);
        let l = t.links[3];
        assert_eq!((l.src, l.dst, l.bandwidth, l.latency_ns), (6, 0, 50.0, 500.0));
        // Ids may wrap lines, and gpu_type may be missing.
        let wrapped = SMALL.replace("7 2 2 1 8 H100\n4 5 6 \n", "7 2 2 1 8\n4\n5 6\n");
        let w = Platform::parse_simai("t.txt", &wrapped).unwrap();
        assert_eq!((w.links, w.gpu_type.as_str()), (t.links, ""));
    }

    #[test]
    fn write_then_parse_is_the_same_topology() {
        let t = Platform::parse_simai("t.txt", SMALL).unwrap();
        let text = t.to_simai().unwrap();
        assert!(text.starts_with("7 2 2 1 8 H100\n4 5 6 \n0 4 2880Gbps 0.000025ms 0\n"), "{text}");
        assert_eq!(Platform::parse_simai("t2.txt", &text).unwrap(), t);
    }

    #[test]
    fn rates_are_written_to_read_back_exactly() {
        // Found by fuzzing: 1Tbps was written as 1000000000000.0001bps, read back as another rate.
        for text in ["1Tbps", "5Bps", "12.5GBps", "1Kibps", "3bps", "0.1bps", "2880Gbps"] {
            let r = parse_rate(text).unwrap();
            assert_eq!(parse_rate(&format_rate(r)), Some(r), "{text} → {}", format_rate(r));
        }
        for text in ["1d", "0.3ms", "700ns", "1ps", "25ns", "0.0005ms"] {
            let t = parse_time(text).unwrap();
            assert_eq!(parse_time(&format_time(t)), Some(t), "{text} → {}", format_time(t));
        }
        assert_eq!(format_rate(parse_rate("1Tbps").unwrap()), "1000Gbps");
    }

    #[test]
    fn a_one_way_link_cannot_be_written() {
        let mut t = Platform::parse_simai("t.txt", SMALL).unwrap();
        t.links[1].bandwidth = 1.0;
        let e = t.to_simai().unwrap_err();
        assert!(e.to_string().contains("no reverse link"), "{e}");
    }

    #[test]
    fn bad_files_name_line_and_field() {
        let cases = [
            (SMALL.replace("400Gbps 0.0005ms 0\n1 4", "400Gbit 0.0005ms 0\n1 4"), 4, "link rate"),
            (SMALL.replace("0 6 400Gbps 0.0005ms", "0 6 400Gbps 5parsec"), 4, "link delay"),
            (SMALL.replace("0 6 400Gbps 0.0005ms 0", "0 9 400Gbps 0.0005ms 0"), 4, "link dst"),
            (SMALL.replace("4 5 6 \n", "4 4 6 \n"), 2, "NVSwitch id"),
            (SMALL.replace("4 5 6 \n", "1 5 6 \n"), 2, "switch ids"),
            (SMALL.replace("7 2 2 1 8", "7 2 2 1 x"), 1, "link_count"),
            (SMALL.replace("7 2 2 1 8 H100", "7 2 2"), 1, "header"),
            (SMALL.replace("3 6 400Gbps 0.0005ms 0\n", "3 6 400Gbps 0.0005ms 1.5\n"), 10, "link error_rate"),
            (SMALL.replace("7 2 2 1 8", "7 2 2 1 9"), 1, "link_count"),
            (SMALL.replace("7 2 2 1 8", "7 2 2 1 7"), 10, "link_count"),
            (SMALL.replace("7 2 2 1 8", "7 2 5 3 8"), 1, "switch_count"),
            // Found by fuzzing: a header of no nodes was refused without a line.
            ("0 2 0 0 0".into(), 1, "nodes"),
            // Found by fuzzing: 4294967295 nodes were allocated before a link was read.
            ("4294967295 2 0 0 1 A100\n\n0 1 1Gbps 0.000025ms 0\n".into(), 1, "nodes"),
        ];
        for (text, line, field) in cases {
            let e = Platform::parse_simai("t.txt", &text).unwrap_err();
            assert_eq!((e.line, e.field.as_deref()), (Some(line), Some(field)), "{e}");
            assert!(e.to_string().starts_with("t.txt:"), "{e}");
        }
    }
}
