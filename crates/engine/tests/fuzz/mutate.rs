//! Structure-aware input generation: valid seed files mutated the way real files go wrong.
//!
//! Text inputs are mutated by lines and tokens (a token is a run of characters between
//! whitespace, `,` and `:`): tokens replaced by interesting values (limits of every integer
//! width, ±0, NaN, ±inf, huge and tiny floats, Unicode digits and line separators, keywords of
//! the format), deleted, duplicated, swapped, spliced from elsewhere in the file or nudged
//! arithmetically; lines dropped, duplicated, swapped, truncated; the file truncated, emptied,
//! given CRLF or stray characters. JSON inputs are mutated as a tree (values replaced by ones of
//! other types and ranges, keys dropped or added, array items dropped, duplicated, swapped,
//! subtrees copied elsewhere) and then, now and then, as text too (syntax errors).
//! Deterministic: a case is a seed number.

use serde_json::{Map, Value};

/// SplitMix64: small, fast and good enough to pick mutations.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability 1/n.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Values that break readers: integer-width limits, float specials, odd spellings of numbers,
/// Unicode that looks like digits or like line breaks.
pub const INTERESTING: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "8",
    "-0",
    "+1",
    "00",
    "007",
    "0x10",
    "1_000",
    "127",
    "128",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999999999999",
    "1e308",
    "1e309",
    "-1e309",
    "1e400",
    "1.7976931348623157e308",
    "5e-324",
    "1e-320",
    "3.4e38",
    "3.5e38",
    "1e-45",
    "NaN",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "1.5",
    "0.5",
    "-0.5",
    "0.0",
    "-0.0",
    "1e3",
    "1E3",
    ".5",
    "5.",
    "1.0",
    "6291456.0",
    "2.5e-7",
    "null",
    "true",
    "x",
    "",
    "é",
    "٣",
    "²",
    "①",
    "１",
    "\u{2028}",
    "\u{2029}",
    "\u{85}",
    "\u{b}",
    "\u{c}",
    "\u{0}",
    "\u{feff}",
    "\u{1b}[31m",
    "\"",
    "\\",
    "#",
    "{}",
    "[",
];

/// Characters dropped into text at random: separators, signs, Unicode look-alikes.
const CHARS: &[char] = &[
    ' ',
    '\t',
    '\n',
    '\r',
    ',',
    ':',
    '.',
    '-',
    '+',
    'e',
    'E',
    '#',
    '0',
    '9',
    '"',
    '\\',
    '{',
    '}',
    '[',
    ']',
    'é',
    '٣',
    '²',
    '\u{0}',
    '\u{85}',
    '\u{a0}',
    '\u{2028}',
    '\u{feff}',
    '\u{1f600}',
];

fn is_sep(c: char) -> bool {
    c.is_whitespace() || c == ',' || c == ':'
}

/// Byte ranges of the tokens of `s`.
fn tokens(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (is_sep(c), start) {
            (true, Some(b)) => {
                out.push((b, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(b) = start {
        out.push((b, s.len()));
    }
    out
}

/// A char boundary of `s` at or below `i`.
fn floor(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A token nudged: ±1, doubled, scaled, negated, made a float.
fn nudge(rng: &mut Rng, t: &str) -> String {
    if let Ok(v) = t.parse::<i128>() {
        let w = match rng.below(6) {
            0 => v.saturating_add(1),
            1 => v.saturating_sub(1),
            2 => v.saturating_mul(2),
            3 => v.saturating_mul(1000),
            4 => v.saturating_neg(),
            _ => v / 2,
        };
        return w.to_string();
    }
    if let Ok(v) = t.parse::<f64>() {
        let w = match rng.below(5) {
            0 => v * 1e6,
            1 => -v,
            2 => v / 3.0,
            3 => v + 0.5,
            _ => v * 1e300,
        };
        return w.to_string();
    }
    match rng.below(3) {
        0 => format!("{t}.0"),
        1 => format!("{t}e5"),
        _ => format!("-{t}"),
    }
}

/// One mutation of `text`; `dict` adds the format's own words (keywords, units, field names).
fn mutate_once(rng: &mut Rng, text: &str, dict: &[&str]) -> String {
    let toks = tokens(text);
    let word = |rng: &mut Rng| -> String {
        if !dict.is_empty() && rng.one_in(2) {
            rng.pick(dict).to_string()
        } else {
            rng.pick(INTERESTING).to_string()
        }
    };
    let splice = |s: &str, (a, b): (usize, usize), with: &str| format!("{}{with}{}", &s[..a], &s[b..]);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    match rng.below(20) {
        // Token-level (most mutations: they keep the file's shape).
        0..=4 if !toks.is_empty() => {
            let t = *rng.pick(&toks);
            splice(text, t, &word(rng))
        }
        5 if !toks.is_empty() => {
            let t = *rng.pick(&toks);
            splice(text, t, "")
        }
        6 if !toks.is_empty() => {
            let t = *rng.pick(&toks);
            let dup = format!("{0} {0}", &text[t.0..t.1]);
            splice(text, t, &dup)
        }
        7 if toks.len() >= 2 => {
            let (mut a, mut b) = (*rng.pick(&toks), *rng.pick(&toks));
            if a.0 > b.0 {
                std::mem::swap(&mut a, &mut b);
            }
            if a == b || a.1 > b.0 {
                return text.to_string();
            }
            format!("{}{}{}{}{}", &text[..a.0], &text[b.0..b.1], &text[a.1..b.0], &text[a.0..a.1], &text[b.1..])
        }
        8 if !toks.is_empty() => {
            let (t, from) = (*rng.pick(&toks), *rng.pick(&toks));
            splice(text, t, &text[from.0..from.1])
        }
        9 | 10 if !toks.is_empty() => {
            let t = *rng.pick(&toks);
            let n = nudge(rng, &text[t.0..t.1]);
            splice(text, t, &n)
        }
        // Line-level.
        11 if !lines.is_empty() => {
            let i = rng.below(lines.len());
            lines.iter().enumerate().filter(|(k, _)| *k != i).map(|(_, l)| *l).collect()
        }
        12 if !lines.is_empty() => {
            let i = rng.below(lines.len());
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            let copy = if lines[i].ends_with('\n') { lines[i].to_string() } else { format!("{}\n", lines[i]) };
            out.insert(i, copy);
            out.concat()
        }
        13 if lines.len() >= 2 => {
            let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
            let mut out: Vec<String> = lines.iter().map(|l| l.trim_end_matches('\n').to_string()).collect();
            out.swap(i, j);
            out.join("\n") + "\n"
        }
        14 if !lines.is_empty() => {
            let i = rng.below(lines.len());
            let l = lines[i];
            let cut = floor(l, rng.below(l.len() + 1));
            let mut out: Vec<&str> = lines.clone();
            out[i] = &l[..cut];
            out.join(if rng.one_in(2) { "\n" } else { "" })
        }
        15 => {
            let at = floor(text, rng.below(text.len() + 1));
            let extra = match rng.below(4) {
                0 => "\n".to_string(),
                1 => " \t \n".to_string(),
                2 => format!("{}\n", word(rng)),
                _ => format!("# {}\n", word(rng)),
            };
            format!("{}{extra}{}", &text[..at], &text[at..])
        }
        16 => {
            let at = floor(text, rng.below(text.len() + 1));
            text[..at].to_string()
        }
        17 if !text.is_empty() => {
            let at = floor(text, rng.below(text.len()));
            let c = *rng.pick(CHARS);
            let len = text[at..].chars().next().map_or(0, char::len_utf8);
            let keep = if rng.one_in(2) { len } else { 0 };
            format!("{}{c}{}", &text[..at], &text[at + keep..])
        }
        18 => match rng.below(4) {
            0 => text.replace('\n', "\r\n"),
            1 => text.replace('\n', "\r"),
            2 => text.replace('\t', " ").replace(' ', "\t"),
            _ => format!("\u{feff}{text}"),
        },
        _ => match rng.below(8) {
            0 => String::new(),
            1 => "\n\n".to_string(),
            2 => word(rng),
            3 => text.repeat(2),
            _ => text.to_string(),
        },
    }
}

/// `seed` with one to four mutations (sometimes none).
pub fn mutate_text(rng: &mut Rng, seed: &str, dict: &[&str]) -> String {
    let mut s = seed.to_string();
    for _ in 0..rng.below(5) {
        s = mutate_once(rng, &s, dict);
    }
    s
}

/// JSON values of every type, at and beyond the limits of the fields they replace.
fn interesting_json(rng: &mut Rng, dict: &[&str]) -> Value {
    match rng.below(24) {
        0 => Value::Null,
        1 => Value::Bool(rng.one_in(2)),
        2 => 0.into(),
        3 => 1.into(),
        4 => (-1).into(),
        5 => 2.into(),
        6 => (rng.below(10) as u64).into(),
        7 => 1.5.into(),
        8 => (-0.5).into(),
        9 => 1e308.into(),
        10 => 5e-324.into(),
        11 => u64::MAX.into(),
        12 => i64::MIN.into(),
        13 => (u32::MAX as u64 + 1).into(),
        14 => (u16::MAX as u64 + 1).into(),
        15 => (i32::MIN as i64).into(),
        16 => 1e18.into(),
        17 => "".into(),
        18 => Value::String(rng.pick(INTERESTING).to_string()),
        19 if !dict.is_empty() => Value::String(rng.pick(dict).to_string()),
        20 => Value::Array(vec![]),
        21 => Value::Object(Map::new()),
        22 => Value::Array(vec![0.into(), 1.into()]),
        _ => serde_json::json!({"x": 1}),
    }
}

/// Number of nodes in the tree of `v`.
fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count).sum(),
        Value::Object(o) => o.values().map(count).sum(),
        _ => 0,
    }
}

/// The `k`-th node of `v` in pre-order (`k` counts down to it).
fn nth<'a>(v: &'a mut Value, k: &mut usize) -> Option<&'a mut Value> {
    if *k == 0 {
        return Some(v);
    }
    *k -= 1;
    match v {
        Value::Array(a) => a.iter_mut().find_map(|x| nth(x, k)),
        Value::Object(o) => o.values_mut().find_map(|x| nth(x, k)),
        _ => None,
    }
}

fn node(v: &mut Value, k: usize) -> &mut Value {
    let mut k = k;
    nth(v, &mut k).expect("k < count(v)")
}

/// One tree mutation of `doc`.
fn mutate_json_once(rng: &mut Rng, doc: &mut Value, dict: &[&str]) {
    let n = count(doc);
    let k = rng.below(n);
    let donor = node(doc, rng.below(n)).clone();
    let target = node(doc, k);
    match rng.below(10) {
        0..=3 => *target = interesting_json(rng, dict),
        4 => *target = donor,
        5 => match target {
            Value::Object(o) if !o.is_empty() => {
                let key = o.keys().nth(rng.below(o.len())).cloned().unwrap_or_default();
                o.remove(&key);
            }
            Value::Array(a) if !a.is_empty() => {
                a.remove(rng.below(a.len()));
            }
            _ => *target = interesting_json(rng, dict),
        },
        6 => match target {
            Value::Object(o) => {
                let key = if dict.is_empty() || rng.one_in(2) { "unknown" } else { rng.pick(dict) };
                o.insert(key.to_string(), interesting_json(rng, dict));
            }
            Value::Array(a) if !a.is_empty() => {
                let i = rng.below(a.len());
                let x = a[i].clone();
                a.insert(i, x);
            }
            _ => *target = donor,
        },
        7 => {
            if let Value::Array(a) = target {
                if a.len() >= 2 {
                    let (i, j) = (rng.below(a.len()), rng.below(a.len()));
                    a.swap(i, j);
                }
            }
        }
        8 => {
            if let Some(x) = target.as_i64() {
                *target = x.saturating_add(if rng.one_in(2) { 1 } else { -1 }).into();
            } else if let Some(x) = target.as_f64() {
                *target = (x * 1e6).into();
            }
        }
        _ => {
            if let Value::Array(a) = target {
                a.clear();
            }
        }
    }
}

/// `seed` (a JSON document) mutated as a tree and, one time in eight, as text too.
pub fn mutate_json(rng: &mut Rng, seed: &Value, dict: &[&str]) -> String {
    let mut doc = seed.clone();
    for _ in 0..rng.below(4) {
        mutate_json_once(rng, &mut doc, dict);
    }
    let text = if rng.one_in(2) {
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    } else {
        serde_json::to_string(&doc).unwrap_or_default()
    };
    if rng.one_in(8) {
        mutate_text(rng, &text, dict)
    } else {
        text
    }
}
