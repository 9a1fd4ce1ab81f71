//! Fuzzing of every reader of user files: mutated valid files (see `mutate`) go through each
//! reader, and every input must either be accepted consistently (written back and read again
//! to the same value, or run without fault) or be refused with an input error that names the
//! user's file, the line and the field in one line of text: no panic, no internal error, no
//! message of internal JSON or Rust debug output, no allocation out of proportion to the input.
//!
//! `CLUSTERSIM_FUZZ_CASES` inputs per reader (default 2000, a few seconds: the CI run);
//! `scripts/fuzz.sh` runs the full campaign (10⁶ per reader). `CLUSTERSIM_FUZZ_SEED` shifts
//! the cases. A failure prints its input, shrunk, and the broken property.

mod guard;
mod msccl;
mod mutate;
mod readers;
mod simai_conf;
mod workload_graph;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use clustersim_engine::Error;
use mutate::Rng;

#[global_allocator]
static ALLOC: guard::Guard = guard::Guard;

/// Inputs per reader.
fn cases() -> u64 {
    std::env::var("CLUSTERSIM_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

fn base_seed() -> u64 {
    std::env::var("CLUSTERSIM_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// What a reader did with one input: accepted, refused properly, or broke a property.
pub enum Outcome {
    Accepted,
    Refused,
}

pub type Verdict = Result<Outcome, String>;

/// The largest single allocation an input of `len` bytes may cause: generous (a reader may
/// build tables several times the text), but far below what a count in a header could demand.
fn allocation_limit(len: usize) -> usize {
    (1 << 24) + 256 * len
}

/// Check a refusal: an input error naming `file`, a field and (unless `whole_file` says the
/// error is about the file as a whole) a line, in one line of plain text.
pub fn refused(file: &str, e: &Error, whole_file: impl Fn(&Error) -> bool) -> Verdict {
    let text = e.to_string();
    if e.is_internal() {
        return Err(format!("internal error: {text}"));
    }
    if e.file != file {
        return Err(format!("the error names '{}', not the user's file '{file}': {text}", e.file));
    }
    if e.field.is_none() {
        return Err(format!("the error names no field: {text}"));
    }
    if e.line.is_none() && !whole_file(e) {
        return Err(format!("the error names no line: {text}"));
    }
    if let Some(c) =
        text.chars().find(|c| matches!(c, '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}'))
    {
        return Err(format!("the message breaks the line with {c:?}: {text:?}"));
    }
    for marker in [" at line ", "Some(", "None)", "Error {", "Cow"] {
        if text.contains(marker) {
            return Err(format!("the message has internal text ('{marker}'): {text}"));
        }
    }
    Ok(Outcome::Refused)
}

thread_local! {
    /// Set while a campaign runs on this thread: its panics are caught and reported, not printed.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn install_quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                default(info);
            }
        }));
    });
}

/// Run `input` through `reader`, turning panics and oversized allocations into failures.
fn run_one(reader: &dyn Fn(&str) -> Verdict, input: &str) -> Verdict {
    guard::begin(input);
    let verdict = catch_unwind(AssertUnwindSafe(|| reader(input)));
    let biggest = guard::end();
    let verdict = verdict.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(format!("panic: {msg}"))
    });
    if biggest > allocation_limit(input.len()) && verdict.is_ok() {
        return Err(format!("allocated {biggest} bytes at once for a {}-byte input", input.len()));
    }
    verdict
}

/// The kind of a failure, for de-duplication: its first words, without numbers or quoted text.
fn signature(problem: &str) -> String {
    let mut out = String::new();
    let mut quoted = None;
    for c in problem.chars() {
        match (quoted, c) {
            (None, '\'' | '`' | '"') => quoted = Some(c),
            (Some(q), c) if c == q => quoted = None,
            (None, c) if !c.is_ascii_digit() => out.push(c),
            _ => {}
        }
        if out.len() >= 60 {
            break;
        }
    }
    out
}

/// A smaller input with a failure of the same kind: drop lines, then tokens, then characters.
fn shrink(reader: &dyn Fn(&str) -> Verdict, input: &str, sig: &str) -> String {
    let fails = |s: &str| matches!(run_one(reader, s), Err(p) if signature(&p) == sig);
    let mut best = input.to_string();
    for unit in [0, 1, 2] {
        let mut i = 0;
        loop {
            let pieces: Vec<String> = match unit {
                0 => best.split_inclusive('\n').map(str::to_string).collect(),
                1 => best.split_inclusive(|c: char| c.is_whitespace()).map(str::to_string).collect(),
                _ => best.chars().map(String::from).collect(),
            };
            if i >= pieces.len() || pieces.len() > 4000 {
                break;
            }
            let candidate: String =
                pieces.iter().enumerate().filter(|(k, _)| *k != i).map(|(_, p)| p.as_str()).collect();
            if fails(&candidate) {
                best = candidate;
            } else {
                i += 1;
            }
        }
    }
    best
}

/// Feed `cases()` generated inputs to `reader`; print the counts and fail on any broken property.
pub fn campaign(name: &str, generate: impl Fn(&mut Rng) -> String, reader: impl Fn(&str) -> Verdict) {
    install_quiet_hook();
    QUIET.with(|q| q.set(true));
    let n = cases();
    let start = Instant::now();
    let (mut accepted, mut refusals) = (0u64, 0u64);
    let mut failures: BTreeMap<String, (String, String, u64)> = BTreeMap::new();
    let salt = name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    for case in 0..n {
        let mut rng = Rng::new(base_seed().wrapping_add(case).wrapping_mul(0x2545_f491_4f6c_dd1d) ^ salt);
        let input = generate(&mut rng);
        match run_one(&reader, &input) {
            Ok(Outcome::Accepted) => accepted += 1,
            Ok(Outcome::Refused) => refusals += 1,
            Err(problem) => {
                failures.entry(signature(&problem)).or_insert((input, problem, case)).2 = case;
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let mut report = Vec::new();
    for (sig, (input, problem, _)) in &failures {
        let small = shrink(&reader, input, sig);
        let problem = match run_one(&reader, &small) {
            Err(p) => p,
            Ok(_) => problem.clone(),
        };
        let shown: String = format!("{small:?}").chars().take(600).collect();
        report.push(format!("  input {shown}\n    {problem}"));
        if report.len() == 12 {
            break;
        }
    }
    QUIET.with(|q| q.set(false));
    println!(
        "fuzz {name}: {n} inputs, {accepted} accepted, {refusals} refused, {} kinds of failure, {seconds:.1} s",
        failures.len()
    );
    assert!(failures.is_empty(), "fuzz {name}: {} kinds of failure:\n{}", failures.len(), report.join("\n"));
    // A campaign that never gets past the first checks tests nothing.
    if n >= 1000 {
        assert!(accepted * 50 >= n, "fuzz {name}: only {accepted} of {n} inputs accepted: mutations too coarse");
        assert!(refusals * 50 >= n, "fuzz {name}: only {refusals} of {n} inputs refused: mutations too fine");
    }
}
