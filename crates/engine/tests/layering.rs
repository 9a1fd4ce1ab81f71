//! The engine's module layering (issue 26; /work/shared/DESIGN.md "Languages and layout"): a
//! module may use only modules of its own layer or below. Layers, bottom to top, are [`LAYERS`].
//!
//! The check reads every `.rs` file under `src/`, drops comments and string literals, and takes
//! each `crate::<module>` path (grouped `crate::{a, b}` imports included) and each `super::` path
//! that leaves its top-level module. `lib.rs` is skipped (it declares and re-exports the modules).
//! Code under `#[cfg(test)]` (an inline test module, or a file declared by a `#[cfg(test)] mod`)
//! is checked too: a test may reach up only where [`ALLOWED`] lists it with why (it checks that
//! two layers agree, and lives beside the lower layer's code it tests).
//! An entry of [`ALLOWED`] that no longer matches anything fails the check as well, so the list
//! stays the list of today's exceptions.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Top-level modules (files or folders directly under `src/`), by layer, bottom first. A module
/// may use its own layer and those below.
const LAYERS: &[&[&str]] = &[
    // utilities
    &["error", "int_hash", "due", "layout", "node_link", "random"],
    // accelerators, NICs, GPU generations: one schema each
    &["catalog"],
    // devices, links, routing, templates
    &["platform"],
    // the IR
    &["workload"],
    // the one compute model
    &["compute"],
    // algorithms, NCCL's tuner and constants
    &["collective"],
    // the NetworkModel contract and the models: analytical/, flow/
    &["network"],
    // the executor, the one driver, and what is read off an execution
    &["executor", "driver", "exposure", "trace"],
    // front ends that build IR and run it
    &["simai", "training", "workload_graph", "nccl_tests"],
    // models on top of an iteration's time: goodput over a long run (failures, checkpoints)
    &["goodput"],
];

/// Upward uses allowed today: (file under `src/`, the path it uses, test code only, why).
/// A path matches itself and anything under it (`network::flow` matches
/// `network::flow::network::Tuning`).
const ALLOWED: &[(&str, &str, bool, &str)] = &[
    // An algorithm's tests sit in its own file (one file per algorithm, tests included, using its
    // private items): they check its closed form against its α–β price and its time on the flow
    // model, run through the executor, the driver or the nccl-tests sweep.
    ("collective/collnet_tests.rs", "driver", true, "CollNet's flow-model times, run through the driver"),
    ("collective/collnet_tests.rs", "network::flow", true, "CollNet's flow-model times (FlowNetwork)"),
    ("collective/collnet_tests.rs", "nccl_tests", true, "CollNet's flow-model times, as nccl-tests sweeps"),
    ("collective/reduction_server_tests.rs", "nccl_tests", true, "reduction servers' flow-model times, as sweeps"),
    ("collective/reduction_server_tests.rs", "network::analytical", true, "reduction servers' α–β price"),
    ("collective/reduction_server_tests.rs", "executor", true, "reduction servers on both models, one workload"),
    (
        "collective/msccl/tests.rs",
        "network::agreement",
        true,
        "MSCCL programs run alike on both models (the agreement fabric)",
    ),
    ("collective/coherent_ring.rs", "network", true, "the coherent ring on both models, and on hcsim-cxl (flow)"),
    ("collective/coherent_ring.rs", "executor", true, "the coherent ring run through the executor on the flow model"),
    // A platform template checked by the times its paths give.
    (
        "platform/templates/hcsim/tests.rs",
        "network::flow",
        true,
        "HCSim's template gives the paper's Table 5 path times, as lone flows on the flow model",
    ),
    // A model's tests run workloads through the executor, as every run does.
    (
        "network/agreement.rs",
        "executor",
        true,
        "the analytical and flow models agree on one workload run through the executor",
    ),
    ("network/flow/tests.rs", "executor", true, "the flow model's tests run workloads through the executor"),
    (
        "network/flow/fault_tests.rs",
        "executor",
        true,
        "faults on the flow model, timed on workloads run through the executor",
    ),
    (
        "network/packet/ns3_tests.rs",
        "executor",
        true,
        "the packet model against ns-3 runs its workload through the executor",
    ),
];

/// One use of a module from a file.
#[derive(Debug, Clone, PartialEq)]
struct Use {
    /// The file, relative to `src/`, with `/` separators.
    file: String,
    line: usize,
    /// The module path used, from the crate root (`network::flow::network::FlowNetwork`).
    path: String,
    /// In test code.
    test: bool,
}

/// A use of a higher layer.
#[derive(Debug, Clone, PartialEq)]
struct Upward {
    r#use: Use,
    from: String,
    to: String,
}

impl std::fmt::Display for Upward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let u = &self.r#use;
        let test = if u.test { " (test code)" } else { "" };
        write!(f, "{}:{}: {} uses {}{test}: `{}` is in a higher layer", u.file, u.line, self.from, self.to, u.path)
    }
}

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The text with comments, string and character literals blanked out (newlines kept).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) && !ident_before(b, i) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            j += 1;
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            let end = (j + close.len()).min(b.len());
            for &x in &b[i..end] {
                blank(&mut out, x);
            }
            i = end;
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                let n = if b[i] == b'\\' { 2 } else { 1 };
                for &x in &b[i..(i + n).min(b.len())] {
                    blank(&mut out, x);
                }
                i += n;
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' {
            // A character literal ('x', '\n', '\''), or a lifetime ('a) kept as it is.
            let len = if b.get(i + 1) == Some(&b'\\') {
                b.get(i + 3..).and_then(|r| r.iter().position(|&x| x == b'\'')).map(|p| p + 4)
            } else {
                let ch = std::str::from_utf8(&b[i + 1..]).ok().and_then(|s| s.chars().next());
                ch.and_then(|ch| (b.get(i + 1 + ch.len_utf8()) == Some(&b'\'')).then(|| ch.len_utf8() + 2))
            };
            match len {
                Some(n) => {
                    out.extend(std::iter::repeat_n(b' ', n));
                    i += n;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII replaced")
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// For each byte of `code`: whether it lies in an item marked `#[cfg(test)]`.
fn test_mask(code: &str) -> Vec<bool> {
    let b = code.as_bytes();
    let mut mask = vec![false; b.len()];
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let start = from + p;
        // The item runs to its first `;` outside braces, or to the brace closing its first `{`.
        let mut i = start;
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                b';' if depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        let end = (i + 1).min(b.len());
        mask[start..end].iter_mut().for_each(|m| *m = true);
        from = end;
    }
    mask
}

/// The modules a file declares under `#[cfg(test)]`: (name, `#[path]` if given).
fn test_children(code: &str, text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let start = from + p + "#[cfg(test)]".len();
        from = start;
        let rest = &code[start..];
        let end = rest.find(['{', ';']).unwrap_or(rest.len());
        if !rest[..end].contains("mod ") || rest.as_bytes().get(end) != Some(&b';') {
            continue;
        }
        let decl = &rest[..end];
        let name = decl.rsplit("mod ").next().unwrap_or("").trim().to_string();
        // `#[path = "…"]` sits in a string literal, blanked in `code`: read it from the text.
        let path =
            text[start..start + end].split("#[path = \"").nth(1).and_then(|s| s.split('"').next()).map(str::to_string);
        out.push((name, path));
    }
    out
}

/// The module path of a file under `src/` (`network/flow/mod.rs` → [network, flow]).
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// Where `mod name;` declared in `file` lives (`#[path]` relative to the file's folder).
fn child_file(file: &str, name: &str, path: Option<&str>, files: &BTreeSet<String>) -> Option<String> {
    let dir = file.rsplit_once('/').map_or("", |(d, _)| d);
    let join = |d: &str, f: &str| if d.is_empty() { f.to_string() } else { format!("{d}/{f}") };
    if let Some(p) = path {
        return Some(join(dir, p));
    }
    let stem = file.rsplit('/').next().unwrap_or(file).trim_end_matches(".rs");
    let base = if matches!(stem, "mod" | "lib") { dir.to_string() } else { join(dir, stem) };
    [join(&base, &format!("{name}.rs")), join(&base, &format!("{name}/mod.rs"))].into_iter().find(|f| files.contains(f))
}

/// The path after `at` in `code` (`a::b::{c, d}` gives `a::b::c` and `a::b::d`), first segment
/// included; for a group, one path per item (nested groups flattened by their first segment).
fn paths_at(code: &str, at: usize) -> Vec<String> {
    let b = code.as_bytes();
    let mut i = at;
    let mut segs = Vec::new();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b.get(i) == Some(&b'{') {
            // A group: one path per item, up to any group nested in it.
            let mut depth = 0;
            let mut close = b.len();
            let mut cuts = vec![i];
            for (j, &c) in b.iter().enumerate().skip(i) {
                match c {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            close = j;
                            break;
                        }
                    }
                    b',' if depth == 1 => cuts.push(j),
                    _ => {}
                }
            }
            cuts.push(close);
            let prefix = segs.join("::");
            return cuts
                .windows(2)
                .map(|w| {
                    let item = code[w[0] + 1..w[1]].split('{').next().unwrap_or("");
                    let item: String = item.split_whitespace().collect();
                    item.trim_end_matches("::").to_string()
                })
                .filter(|item| !item.is_empty())
                .map(|item| match (prefix.is_empty(), item.as_str()) {
                    (_, "self") => prefix.clone(),
                    (true, _) => item,
                    (false, _) => format!("{prefix}::{item}"),
                })
                .collect();
        }
        let s = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if s == i {
            break;
        }
        segs.push(code[s..i].to_string());
        if code[i..].starts_with("::") {
            i += 2;
        } else {
            break;
        }
    }
    vec![segs.join("::")]
}

/// Every module use in the tree, given as (file under `src/`, text).
fn uses(tree: &[(String, String)]) -> Vec<Use> {
    let files: BTreeSet<String> = tree.iter().map(|(f, _)| f.clone()).collect();
    let code: Vec<String> = tree.iter().map(|(_, t)| code_only(t)).collect();
    // Files declared as test modules, and their own children.
    let mut test_files = BTreeSet::new();
    let mut todo: Vec<String> = Vec::new();
    for ((file, text), code) in tree.iter().zip(&code) {
        for (name, path) in test_children(code, text) {
            todo.extend(child_file(file, &name, path.as_deref(), &files));
        }
    }
    while let Some(f) = todo.pop() {
        if test_files.insert(f.clone()) {
            let prefix = match f.strip_suffix("/mod.rs") {
                Some(dir) => format!("{dir}/"),
                None => format!("{}/", f.trim_end_matches(".rs")),
            };
            todo.extend(files.iter().filter(|g| g.starts_with(&prefix)).cloned());
        }
    }
    let mut out = Vec::new();
    for ((file, _), code) in tree.iter().zip(&code) {
        if file == "lib.rs" {
            continue;
        }
        let mask = test_mask(code);
        let module = module_of(file);
        let b = code.as_bytes();
        let line_at = |p: usize| code[..p].matches('\n').count() + 1;
        let mut seen = BTreeSet::new();
        for (p, _) in code.match_indices("crate::") {
            if ident_before(b, p) {
                continue;
            }
            for path in paths_at(code, p + "crate::".len()) {
                seen.insert((p, path));
            }
        }
        for (p, _) in code.match_indices("super::") {
            if ident_before(b, p) || (p >= 2 && &code[p - 2..p] == "::") {
                continue;
            }
            // `super::super::x`: climb once per `super`, from the file's module.
            let mut up = 0;
            let mut q = p;
            while code[q..].starts_with("super::") {
                up += 1;
                q += "super::".len();
            }
            let base = &module[..module.len().saturating_sub(up)];
            for rest in paths_at(code, q) {
                let path = base.iter().cloned().chain(std::iter::once(rest)).collect::<Vec<_>>().join("::");
                seen.insert((p, path));
            }
        }
        for (p, path) in seen {
            if path.is_empty() {
                continue;
            }
            let test = test_files.contains(file) || mask[p];
            out.push(Use { file: file.clone(), line: line_at(p), path, test });
        }
    }
    out
}

/// The top-level module of a file or path (`network/flow/mod.rs`, `network::flow::X` → network).
fn top(path: &str) -> &str {
    path.split(['/', ':']).next().unwrap_or(path).trim_end_matches(".rs")
}

/// Uses of a higher layer, and top-level modules with no layer.
fn check(tree: &[(String, String)]) -> (Vec<Upward>, Vec<String>) {
    let mut unplaced = BTreeSet::new();
    let mut upward = Vec::new();
    for (file, _) in tree {
        if file != "lib.rs" && layer(top(file)).is_none() {
            unplaced.insert(top(file).to_string());
        }
    }
    for u in uses(tree) {
        let (from, to) = (top(&u.file), top(&u.path));
        if let (Some(a), Some(b)) = (layer(from), layer(to)) {
            if b > a {
                upward.push(Upward { from: from.to_string(), to: to.to_string(), r#use: u });
            }
        }
    }
    (upward, unplaced.into_iter().collect())
}

fn is_allowed(u: &Upward, entry: &(&str, &str, bool, &str)) -> bool {
    let (file, path, test_only, _) = *entry;
    let under = u.r#use.path == path || u.r#use.path.starts_with(&format!("{path}::"));
    u.r#use.file == file && under && (u.r#use.test || !test_only)
}

fn read_tree(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_tree(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.push((rel, fs::read_to_string(&p).unwrap()));
        }
    }
}

fn source_tree() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut tree = Vec::new();
    read_tree(&root, &root, &mut tree);
    tree
}

#[test]
fn no_module_uses_a_higher_layer() {
    let tree = source_tree();
    assert!(tree.len() > 50, "read {} files", tree.len());
    let (upward, unplaced) = check(&tree);
    assert!(unplaced.is_empty(), "modules with no place in LAYERS: {unplaced:?}");
    let bad: Vec<String> =
        upward.iter().filter(|u| !ALLOWED.iter().any(|a| is_allowed(u, a))).map(|u| u.to_string()).collect();
    assert!(bad.is_empty(), "upward uses:\n{}", bad.join("\n"));
    let stale: Vec<_> = ALLOWED.iter().filter(|a| !upward.iter().any(|u| is_allowed(u, a))).collect();
    assert!(stale.is_empty(), "ALLOWED entries that no longer match a use (remove them): {stale:?}");
}

#[test]
fn the_tree_is_read_the_way_rustc_reads_it() {
    // Spot checks on the real tree: a network model uses the contract and the collectives
    // below it; a front end's uses are all seen; test files are recognised by their declaration.
    let found = uses(&source_tree());
    let has = |file: &str, path: &str, test: bool| {
        found.iter().any(|u| u.file == file && u.path.starts_with(path) && u.test == test)
    };
    assert!(has("network/flow/network.rs", "network::NetworkModel", false));
    assert!(has("network/flow/network.rs", "collective::choose", false));
    assert!(has("network/analytical/mod.rs", "network::Comm", false));
    assert!(has("nccl_tests.rs", "driver::simulate", false));
    // `#[cfg(test)] #[path = "collnet_tests.rs"] mod tests;` and `#[cfg(test)] mod agreement;`.
    assert!(has("collective/collnet_tests.rs", "driver", true));
    assert!(has("network/agreement.rs", "executor::Executor", true));
    // An inline `#[cfg(test)] mod tests { … }` is test code; what follows it is not.
    assert!(has("executor.rs", "network::analytical", true));
    assert!(!has("executor.rs", "network::analytical", false));
}

/// A small tree: platform below collective below network, a front end on top.
fn synthetic(platform_mod: &str) -> Vec<(String, String)> {
    [
        ("lib.rs", "pub mod platform;\npub mod collective;\npub mod network;\npub use network::flow;\n"),
        ("platform/mod.rs", platform_mod),
        ("platform/routing.rs", "use super::Platform;\nuse crate::error::Result;\n"),
        ("collective/mod.rs", "use crate::platform::{Platform, routing::Router};\n"),
        ("network/mod.rs", "pub mod flow;\n"),
        ("network/flow/mod.rs", "use super::super::collective::Schedule;\nuse crate::platform::Platform;\n"),
        ("nccl_tests.rs", "use crate::{driver::simulate, network::flow::FlowNetwork};\n"),
    ]
    .into_iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect()
}

#[test]
fn a_clean_tree_passes() {
    let (upward, unplaced) = check(&synthetic("pub mod routing;\npub struct Platform;\n"));
    assert_eq!(upward, []);
    assert!(unplaced.is_empty());
}

#[test]
fn an_upward_import_fails_the_check_naming_file_line_and_edge() {
    let platform = "pub mod routing;\n\n/// See crate::network::flow.\npub struct Platform;\n\
                    use crate::network::flow::FlowNetwork;\n";
    let (upward, _) = check(&synthetic(platform));
    assert_eq!(upward.len(), 1, "{upward:?}");
    let u = &upward[0];
    assert_eq!((u.r#use.file.as_str(), u.r#use.line), ("platform/mod.rs", 5));
    assert_eq!((u.from.as_str(), u.to.as_str(), u.r#use.test), ("platform", "network", false));
    assert_eq!(
        u.to_string(),
        "platform/mod.rs:5: platform uses network: `network::flow::FlowNetwork` is in a higher layer"
    );
    // The same use on the real tree: written into platform/routing.rs, the real check fails.
    let mut tree = source_tree();
    let routing = tree.iter_mut().find(|(f, _)| f == "platform/routing.rs").unwrap();
    routing.1.push_str("\nuse crate::driver::Backend;\n");
    let lines = routing.1.lines().count();
    let (upward, _) = check(&tree);
    let added: Vec<_> = upward.iter().filter(|u| u.r#use.file == "platform/routing.rs").collect();
    assert_eq!(added.len(), 1, "{added:?}");
    assert_eq!((added[0].r#use.line, added[0].to.as_str()), (lines, "driver"));
    assert!(!ALLOWED.iter().any(|a| is_allowed(added[0], a)));
}

#[test]
fn every_form_of_an_upward_path_is_seen() {
    let cases = [
        // A grouped import names each module.
        ("use crate::{error::Result, executor::Executor};\n", "executor::Executor"),
        // A path in an expression, across lines.
        ("fn f() {\n    let _ = crate::nccl_tests::\n        sweep;\n}\n", "nccl_tests::sweep"),
        // super:: out of the top-level module.
        ("use super::super::driver::simulate;\n", "driver::simulate"),
    ];
    for (text, path) in cases {
        let tree = vec![("collective/ring/mod.rs".to_string(), text.to_string())];
        let (upward, _) = check(&tree);
        assert_eq!(upward.iter().map(|u| u.r#use.path.as_str()).collect::<Vec<_>>(), [path], "{text}");
    }
}

#[test]
fn comments_and_strings_are_not_uses_and_test_code_is_marked() {
    let text = "//! [`crate::driver`] runs it.\n/* crate::driver */\nconst S: &str = \"crate::driver\";\n\
                const R: &str = r#\"crate::driver \"x\" \"#;\nconst C: char = '\"';\nfn f<'a>(x: &'a u8) {}\n\
                #[cfg(test)]\nmod tests {\n    use crate::driver::simulate;\n    fn g() { if true { } }\n}\n\
                use crate::executor::Executor;\n";
    let tree = vec![("collective/mod.rs".to_string(), text.to_string())];
    let (upward, _) = check(&tree);
    let got: Vec<_> = upward.iter().map(|u| (u.r#use.line, u.r#use.path.as_str(), u.r#use.test)).collect();
    assert_eq!(got, [(9, "driver::simulate", true), (12, "executor::Executor", false)]);
    // A file declared as a test module is test code throughout, `#[path]` or not.
    let tree: Vec<(String, String)> = [
        ("collective/mod.rs", "pub mod ring;\n#[cfg(test)]\nmod tests;\n"),
        ("collective/ring.rs", "#[cfg(test)]\n#[path = \"ring_tests.rs\"]\nmod tests;\n"),
        ("collective/ring_tests.rs", "use crate::driver::simulate;\n"),
        ("collective/tests.rs", "use crate::driver::simulate;\n"),
        ("collective/ring2.rs", "use crate::driver::simulate;\n"),
    ]
    .into_iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect();
    let (upward, _) = check(&tree);
    let got: Vec<_> = upward.iter().map(|u| (u.r#use.file.as_str(), u.r#use.test)).collect();
    assert_eq!(
        got,
        [("collective/ring_tests.rs", true), ("collective/tests.rs", true), ("collective/ring2.rs", false)]
    );
}

#[test]
fn a_module_with_no_layer_is_named() {
    let mut tree = synthetic("pub struct Platform;\n");
    tree.push(("gadgets.rs".into(), "use crate::platform::Platform;\n".into()));
    assert_eq!(check(&tree).1, ["gadgets"]);
}
