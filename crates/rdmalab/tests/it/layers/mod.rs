//! The crate's layers, checked on its source: walks `src/`, reads every path that starts
//! at the crate root (`crate::x`, `crate::{x, y}`, or `super::` climbing to the root) in
//! each file, and fails on an import that goes up the layer list below, or on a cycle
//! among the crate's top-level modules.
//!
//! The point is that a mechanism can be understood (and changed) from its layer down:
//! nothing below `sim` knows the simulator, `sim` runs a validated `config::Scenario`
//! without knowing how it was parsed, and `config` is a leaf that both read.

mod files;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules of `src/`, bottom to top. A module may import the modules of its
/// own layer and of the layers below; a new module must be placed here.
const LAYERS: &[&[&str]] = &[
    // Vocabulary: quantities, typed ids, the error type.
    &["units", "ids", "error"],
    // The event queue and random streams.
    &["engine"],
    // The graph and its routes.
    &["topology"],
    // Packets, ports, switch buffers, ECN, INT.
    &["fabric"],
    // Traffic: flow specs, size CDFs and generators (what an application or a run asks for).
    &["workload"],
    // The RNIC, congestion control, tenants; DRUM's solver (independent of the fabric).
    &["rnic", "cc", "tenancy", "drum"],
    // Applications (verbs, closed loops, DRUM agents).
    &["app"],
    // Multipath connections (applications on the verbs).
    &["multipath"],
    // A run's records and counters.
    &["stats"],
    // Readers and writers of file formats.
    &["formats"],
    // What a run is asked to do (the validated scenario and its settings).
    &["config"],
    // The world and its event loop.
    &["sim"],
    // What builds a `config::Scenario` from a file: the native scenario and the reference's config.
    &["scenario", "hpcc_compat"],
];

/// Imports that must never appear whatever the list says: the parser and the
/// simulator meet only in `config`.
const FORBIDDEN: &[(&str, &str)] = &[("sim", "scenario"), ("config", "sim"), ("config", "scenario")];

/// Known upward imports, each with why it is tolerated for now. An entry that no longer
/// matches any import fails the test, so that it is removed with the import.
const ALLOWED: &[(&str, &str, &str)] = &[];

/// One import of a top-level module by a file of another.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Import {
    /// The file, relative to `src/` (`fabric/port.rs`).
    file: String,
    /// The importing top-level module (`fabric`).
    from: String,
    /// The imported top-level module (`stats`).
    to: String,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted, relative to `dir` with `/` separators.
fn rust_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read src dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(dir).expect("under src").to_string_lossy().replace('\\', "/");
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// The module path of a file: `sim/parallel/mod.rs` is `[sim, parallel]`, `lib.rs` is `[]`.
fn module_path(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let mut parts: Vec<String> = stem.split('/').map(String::from).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The source with comments, string literals and char literals blanked out, so that only
/// code is searched for paths (a doc comment naming `crate::sim` is not an import).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let skip = match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => Some(line_end(b, i)),
            b'/' if b.get(i + 1) == Some(&b'*') => Some(block_comment_end(b, i)),
            b'"' => Some(string_end(b, i + 1)),
            b'r' => raw_string_end(b, i),
            b'\'' => char_literal_end(src, i),
            _ => None,
        };
        match skip {
            Some(end) => {
                out.push(' ');
                i = end;
            }
            None => {
                out.push(b[i] as char);
                i += 1;
            }
        }
    }
    out
}

fn line_end(b: &[u8], i: usize) -> usize {
    b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p)
}

fn block_comment_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// The end of a `"..."` literal whose body starts at `i`.
fn string_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return (i + 1).min(b.len()),
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of a raw string `r"..."`, `r#"..."#` (or `br...`) starting at `i`; `None` when
/// the `r` at `i` does not start one (it ends an identifier, or no quote follows).
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let before = |k: usize| i >= k && is_ident(b[i - k]);
    // An `r` that ends an identifier (`for`) starts nothing, unless it follows the lone `b`
    // of a raw byte string (`br"..."`).
    let raw_bytes = before(1) && b[i - 1] == b'b' && !before(2);
    if before(1) && !raw_bytes {
        return None;
    }
    let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
    if b.get(i + 1 + hashes) != Some(&b'"') {
        return None;
    }
    let close = format!("\"{}", "#".repeat(hashes)).into_bytes();
    let body = i + 2 + hashes;
    let p = b[body..].windows(close.len()).position(|w| w == close.as_slice());
    Some(p.map_or(b.len(), |p| body + p + close.len()))
}

/// The end of `'x'` or `'\n'` at `i`; `None` for a lifetime (`'a`), which stays.
fn char_literal_end(src: &str, i: usize) -> Option<usize> {
    let rest = &src[i + 1..];
    if rest.starts_with('\\') {
        // Skip the escaped character itself, which may be a quote (`'\''`).
        let close = rest.get(2..)?.find('\'')?;
        return Some(i + 1 + 2 + close + 1);
    }
    let len = rest.chars().next()?.len_utf8();
    rest[len..].starts_with('\'').then_some(i + 1 + len + 1)
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier starting at `i` (after spaces), and where it ends.
fn ident_at(b: &[u8], mut i: usize) -> (String, usize) {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    let start = i;
    while i < b.len() && is_ident(b[i]) {
        i += 1;
    }
    (String::from_utf8_lossy(&b[start..i]).into_owned(), i)
}

/// After `::` at `i`: the first segment of the path, or of every item of a `{...}` group.
fn first_segments(b: &[u8], i: usize) -> Vec<String> {
    let mut j = i;
    while j < b.len() && b[j].is_ascii_whitespace() {
        j += 1;
    }
    if b.get(j) != Some(&b'{') {
        return vec![ident_at(b, j).0];
    }
    let mut out = Vec::new();
    let (mut depth, mut item_start) = (0usize, true);
    for k in j..b.len() {
        match b[k] {
            b'{' => {
                depth += 1;
                item_start = depth == 1;
            }
            b'}' if depth == 1 => break,
            b'}' => depth -= 1,
            b',' if depth == 1 => item_start = true,
            c if item_start && depth == 1 && is_ident(c) => {
                out.push(ident_at(b, k).0);
                item_start = false;
            }
            _ => {}
        }
    }
    out
}

/// The top-level modules a file's code names through the crate root.
fn targets(file: &str, code: &str) -> BTreeSet<String> {
    let b = code.as_bytes();
    let depth = module_path(file).len();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b'$')) {
            i += 1;
            continue;
        }
        let (word, end) = ident_at(b, i);
        i = end;
        let after_root = match word.as_str() {
            "crate" if b[end..].starts_with(b"::") => Some(end + 2),
            "super" => climb_to_root(b, i, depth),
            _ => None,
        };
        if let Some(at) = after_root {
            out.extend(first_segments(b, at));
        }
    }
    out
}

/// `super::super::...` starting at the first `super` (whose end is `i`): where the path
/// continues when it climbs exactly to the crate root from a module `depth` deep.
fn climb_to_root(b: &[u8], mut i: usize, depth: usize) -> Option<usize> {
    let mut climbed = 1;
    loop {
        if !b[i..].starts_with(b"::") {
            return None;
        }
        let (next, end) = ident_at(b, i + 2);
        if next != "super" {
            return (climbed == depth).then_some(i + 2);
        }
        climbed += 1;
        i = end;
    }
}

/// The top-level module a file belongs to (`None` for `lib.rs`).
fn top_module(file: &str) -> Option<String> {
    module_path(file).into_iter().next()
}

/// Every import of one top-level module by a file of another, in file order.
fn imports() -> Vec<Import> {
    let dir = src_dir();
    let modules = top_level_modules();
    let mut out = Vec::new();
    for file in rust_files(&dir) {
        let Some(from) = top_module(&file) else { continue };
        let src = std::fs::read_to_string(dir.join(&file)).expect("read source");
        for to in targets(&file, &code_only(&src)) {
            if to != from && modules.contains(&to) {
                out.push(Import { file: file.clone(), from: from.clone(), to });
            }
        }
    }
    out
}

/// The crate's top-level modules, as `lib.rs` declares them.
fn top_level_modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).expect("read lib.rs");
    code_only(&lib)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ").or_else(|| l.trim().strip_prefix("mod ")))
        .map(|l| l.trim_end_matches(';').trim().to_string())
        .collect()
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// A module's layer for messages (0 is the bottom).
fn layer_name(module: &str) -> String {
    layer_of(module).map_or_else(|| "unlisted".into(), |l| l.to_string())
}

fn allowed(i: &Import) -> bool {
    ALLOWED.iter().any(|&(file, to, _)| file == i.file && to == i.to)
}

#[test]
fn every_module_is_in_the_layer_list() {
    let missing: Vec<_> = top_level_modules().into_iter().filter(|m| layer_of(m).is_none()).collect();
    assert!(missing.is_empty(), "modules not in LAYERS (place them in tests/layers.rs): {missing:?}");
    let modules = top_level_modules();
    let stale: Vec<_> = LAYERS.iter().flat_map(|l| l.iter()).filter(|m| !modules.contains(**m)).collect();
    assert!(stale.is_empty(), "LAYERS names modules that lib.rs does not declare: {stale:?}");
}

#[test]
fn every_import_goes_down_the_layer_list() {
    let bad: Vec<String> = imports()
        .iter()
        .filter(|i| layer_of(&i.to) > layer_of(&i.from) && !allowed(i))
        .map(|i| {
            let (to, from) = (layer_name(&i.to), layer_name(&i.from));
            format!("{} imports `{}` (layer {to}) from `{}` (layer {from})", i.file, i.to, i.from)
        })
        .collect();
    assert!(bad.is_empty(), "imports against the layer list:\n  {}", bad.join("\n  "));
}

#[test]
fn sim_never_imports_scenario_and_config_imports_neither() {
    let bad: Vec<String> = imports()
        .iter()
        .filter(|i| FORBIDDEN.contains(&(i.from.as_str(), i.to.as_str())))
        .map(|i| format!("{} ({}) imports `{}`", i.file, i.from, i.to))
        .collect();
    assert!(bad.is_empty(), "forbidden imports:\n  {}", bad.join("\n  "));
}

#[test]
fn nothing_below_sim_imports_sim() {
    let sim = layer_of("sim").expect("sim is in LAYERS");
    let bad: Vec<String> = imports()
        .iter()
        .filter(|i| i.to == "sim" && layer_of(&i.from).is_some_and(|l| l < sim))
        .map(|i| i.file.clone())
        .collect();
    assert!(bad.is_empty(), "files below `sim` that import it: {bad:?}");
}

#[test]
fn allow_list_names_only_imports_that_exist() {
    let all = imports();
    let stale: Vec<_> =
        ALLOWED.iter().filter(|&&(file, to, _)| !all.iter().any(|i| i.file == file && i.to == to)).collect();
    assert!(stale.is_empty(), "ALLOWED entries with no such import any more (remove them): {stale:?}");
}

#[test]
fn no_import_cycle_among_top_level_modules() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for i in imports() {
        graph.entry(i.from).or_default().insert(i.to);
    }
    if let Some(cycle) = find_cycle(&graph) {
        let files: Vec<String> = cycle
            .windows(2)
            .flat_map(|w| imports().into_iter().filter(|i| i.from == w[0] && i.to == w[1]).map(|i| i.file).take(1))
            .collect();
        panic!("import cycle: {} (through {files:?})", cycle.join(" -> "));
    }
}

/// A cycle of the graph as a closed walk (`[a, b, a]`), by depth-first search.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        OnPath,
        Done,
    }
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(n.to_string(), Mark::OnPath);
        path.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            match marks.get(m) {
                Some(Mark::OnPath) => {
                    let start = path.iter().position(|p| p == m).expect("on path");
                    let mut cycle = path[start..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                Some(Mark::Done) => {}
                None => {
                    if let Some(c) = visit(m, graph, marks, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        marks.insert(n.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for n in graph.keys() {
        if !marks.contains_key(n) {
            if let Some(c) = visit(n, graph, &mut marks, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

// The reader itself, on small inputs: a check that reads nothing would pass everything.

#[test]
fn reader_finds_plain_grouped_and_climbing_paths() {
    let code = "use crate::fabric::Packet;\nuse crate::{ids::NodeId, units::{Rate, Time}};\n\
                fn f() -> crate::stats::FlowRecord { todo!() }\nuse super::super::engine::Rng;\n";
    let found = targets("sim/parallel/x.rs", &code_only(code));
    let want: BTreeSet<String> = ["fabric", "ids", "units", "stats"].map(String::from).into();
    assert_eq!(found, want, "`super::super` from sim/parallel/x.rs stays in sim");
    let found = targets("sim/parallel/mod.rs", &code_only(code));
    assert!(found.contains("engine"), "`super::super` from sim/parallel/mod.rs reaches the root");
}

#[test]
fn reader_skips_comments_strings_and_chars() {
    let code = "//! see `crate::sim`\n/* crate::sim /* nested */ crate::sim */\nlet s = \"crate::sim\";\n\
                let r = r#\"crate::sim \" crate::sim\"#;\nlet q = '\"'; let t = crate::topology::Topology::new(0, &[]);\n\
                fn g<'a>(x: &'a str) -> crate::ids::NodeId { todo!() }\n";
    let found = targets("fabric/x.rs", &code_only(code));
    let want: BTreeSet<String> = ["topology", "ids"].map(String::from).into();
    assert_eq!(found, want);
}

#[test]
fn cycle_finder_finds_a_cycle_and_accepts_a_dag() {
    let edges = |list: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in list {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    assert_eq!(find_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    let c = find_cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])).expect("a cycle");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
}
