//! Imports between source files, not only between top-level modules: a circle of two files
//! that name each other (`a.rs` uses `b.rs`, which uses `a.rs`) means a file was cut at a
//! line count rather than at a seam, and neither can be read without the other.
//!
//! A path is resolved to the file that defines its deepest module (`crate::sim::switch::X`
//! is `sim/switch.rs`). A folder's `mod.rs` (and `lib.rs`) is the folder's door: it declares
//! the files and re-exports their names, so edges into or out of it are left out. The same
//! check runs on the engine and on the bindings.
//!
//! The second guard: no file under `sim/mech/` is `impl Simulation`. A mechanism's hook is a
//! free function over the state it reads (a view) and the actions it appends; only the
//! simulator's own files carry them out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{code_only, find_cycle, is_ident, rust_files};

/// One `src/` folder: its files, and which of them exist (to resolve a path to a file).
struct Crate {
    files: BTreeSet<String>,
}

impl Crate {
    fn read(dir: &Path) -> Crate {
        Crate { files: rust_files(dir).into_iter().collect() }
    }

    /// The file that defines module `path` (`["sim", "switch"]`): `sim/switch.rs` or
    /// `sim/switch/mod.rs`; the root is `lib.rs`.
    fn file_of(&self, path: &[String]) -> Option<String> {
        if path.is_empty() {
            return Some("lib.rs".into());
        }
        let joined = path.join("/");
        [format!("{joined}.rs"), format!("{joined}/mod.rs")].into_iter().find(|f| self.files.contains(f))
    }

    /// The deepest module named by a path from `base` (a module path): the file that
    /// defines it. `crate::sim::switch::admit` is `sim/switch.rs`; a path that names no
    /// module below `base` resolves to `base`'s own file.
    fn resolve(&self, base: &[String], rest: &[String]) -> Option<String> {
        let mut module = base.to_vec();
        let mut file = self.file_of(&module)?;
        for seg in rest {
            module.push(seg.clone());
            match self.file_of(&module) {
                Some(f) => file = f,
                None => break,
            }
        }
        Some(file)
    }
}

/// The module path of a file: `sim/parallel/mod.rs` is `[sim, parallel]`, `lib.rs` is `[]`.
fn module_of(file: &str) -> Vec<String> {
    super::module_path(file)
}

/// A door: a folder's `mod.rs`, or the crate root.
fn is_door(file: &str) -> bool {
    file == "lib.rs" || file == "main.rs" || file.ends_with("/mod.rs")
}

/// Every path a use tree or an expression names after `::` at `i`, as its segments:
/// `a::{b, c::{d, e}}` is `[a, b]`, `[a, c, d]`, `[a, c, e]`.
fn paths_at(b: &[u8], i: usize) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    tree(b, i, Vec::new(), &mut out);
    out
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Reads `seg (:: seg)* (:: { tree, ... })?` at `i` under `prefix`; returns where it ends.
fn tree(b: &[u8], i: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut i = skip_ws(b, i);
    loop {
        if b.get(i) == Some(&b'{') {
            i += 1;
            loop {
                i = skip_ws(b, i);
                match b.get(i) {
                    None => return i,
                    Some(b'}') => return i + 1,
                    Some(b',') => i += 1,
                    _ => {
                        let end = tree(b, i, prefix.clone(), out);
                        // A tree that reads nothing (a `*`, `self`'s `as` tail) moves one on.
                        i = if end > i { end } else { i + 1 };
                    }
                }
            }
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if i == start {
            out.push(prefix);
            return i;
        }
        let seg = String::from_utf8_lossy(&b[start..i]).into_owned();
        if seg != "self" {
            prefix.push(seg);
        }
        let j = skip_ws(b, i);
        if b[j..].starts_with(b"::") {
            i = skip_ws(b, j + 2);
        } else {
            out.push(prefix);
            return i;
        }
    }
}

/// The files a file's code names through `crate::`, `super::` and `self::` paths.
fn file_targets(krate: &Crate, file: &str, code: &str) -> BTreeSet<String> {
    let b = code.as_bytes();
    let here = module_of(file);
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b'$' || b[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let word = &code[start..i];
        if !matches!(word, "crate" | "super" | "self") {
            continue;
        }
        // Climb: each further `super::` goes one module up.
        let mut base: Vec<String> = match word {
            "crate" => Vec::new(),
            "self" => here.clone(),
            _ => here[..here.len().saturating_sub(1)].to_vec(),
        };
        let mut j = skip_ws(b, i);
        if !b[j..].starts_with(b"::") {
            continue;
        }
        j = skip_ws(b, j + 2);
        while word == "super" && b[j..].starts_with(b"super") && !b.get(j + 5).is_some_and(|&c| is_ident(c)) {
            base.pop();
            j = skip_ws(b, j + 5);
            if !b[j..].starts_with(b"::") {
                break;
            }
            j = skip_ws(b, j + 2);
        }
        for path in paths_at(b, j) {
            if let Some(target) = krate.resolve(&base, &path) {
                out.insert(target);
            }
        }
    }
    out
}

/// The graph of imports between the files of one `src/` folder, doors left out.
fn file_graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let krate = Crate::read(dir);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in krate.files.iter().filter(|f| !is_door(f)) {
        let src = std::fs::read_to_string(dir.join(file)).expect("read source");
        let to: BTreeSet<String> =
            file_targets(&krate, file, &code_only(&src)).into_iter().filter(|t| t != file && !is_door(t)).collect();
        graph.insert(file.clone(), to);
    }
    graph
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name).join("src")
}

fn assert_no_file_circle(dir: &Path) {
    let graph = file_graph(dir);
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import circle between files of {}: {}", dir.display(), cycle.join(" -> "));
    }
}

#[test]
fn no_import_circle_between_engine_files() {
    assert_no_file_circle(&crate_src("rdmalab"));
}

#[test]
fn no_import_circle_between_binding_files() {
    assert_no_file_circle(&crate_src("rdmalab-py"));
}

#[test]
fn no_file_under_sim_mech_is_impl_simulation() {
    // A mechanism's hooks are free functions over views that append actions; the carry-outs
    // (sim/switch/carry_out.rs, sim/host/completions.rs) are the only way back.
    let dir = crate_src("rdmalab").join("sim").join("mech");
    let with: Vec<String> = rust_files(&dir)
        .into_iter()
        .filter(|f| has_impl_simulation(&code_only(&std::fs::read_to_string(dir.join(f)).expect("read source"))))
        .collect();
    assert!(
        with.is_empty(),
        "files under sim/mech/ with `impl Simulation` (make them free functions over views): {with:?}"
    );
}

/// `impl Simulation` or `impl<..> Simulation` (with or without a path) in code.
fn has_impl_simulation(code: &str) -> bool {
    code.split("impl").skip(1).any(|rest| {
        let rest = rest.trim_start();
        let rest = if rest.starts_with('<') { rest.split_once('>').map_or("", |(_, r)| r) } else { rest };
        let name =
            rest.trim_start().split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).next().unwrap_or("");
        name.rsplit("::").next() == Some("Simulation")
    })
}

// The reader on small inputs: a guard that resolves nothing would pass everything.

fn fake_crate(files: &[&str]) -> Crate {
    Crate { files: files.iter().map(|f| f.to_string()).collect() }
}

#[test]
fn paths_resolve_to_the_deepest_module_file() {
    let k = fake_crate(&["lib.rs", "sim/mod.rs", "sim/switch.rs", "sim/mech/mod.rs", "sim/mech/iofd.rs", "fabric.rs"]);
    let code = code_only(
        "use crate::sim::{switch::admit, mech::{iofd::Iofd, Mechanisms}};\n\
         use super::super::super::fabric::Port;\nfn f() { super::super::switch::g(); }\n\
         // crate::sim::wire in a comment\n",
    );
    let found = file_targets(&k, "sim/mech/conweave.rs", &code);
    let want: BTreeSet<String> =
        ["sim/switch.rs", "sim/mech/iofd.rs", "sim/mech/mod.rs", "fabric.rs"].map(String::from).into();
    assert_eq!(found, want);
}

#[test]
fn a_two_file_circle_is_found_and_doors_are_left_out() {
    let dir = std::env::temp_dir().join(format!("rdmalab-layers-{}", std::process::id()));
    let write = |f: &str, s: &str| {
        let p = dir.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\n");
    write("a/mod.rs", "mod qp;\nmod transport;\npub use qp::Qp;\n");
    write("a/qp.rs", "use super::transport::Kind;\n");
    write("a/transport.rs", "use crate::a::Qp;\n");
    // Through the door only: no circle.
    let graph = file_graph(&dir);
    assert_eq!(find_cycle(&graph), None, "{graph:?}");
    write("a/transport.rs", "use crate::a::qp::Qp;\n");
    let cycle = find_cycle(&file_graph(&dir)).expect("qp.rs <-> transport.rs");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(cycle.len(), 3, "{cycle:?}");
    assert!(cycle.contains(&"a/qp.rs".to_string()) && cycle.contains(&"a/transport.rs".to_string()));
}

#[test]
fn impl_simulation_is_recognised() {
    assert!(has_impl_simulation("impl Simulation {\n fn f() {} }"));
    assert!(has_impl_simulation("impl<'a> crate::sim::Simulation { }"));
    assert!(!has_impl_simulation("impl SimulationView<'_> { }"));
    assert!(!has_impl_simulation("fn f(sim: &mut Simulation) {}"));
}
