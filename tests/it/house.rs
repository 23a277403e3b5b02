//! The library's module graph, read from the paths in `src/`: no import
//! circles, and no import from a lower layer to a higher one
//! (ARCHITECTURE.md, "Layers").
//!
//! Every `crate::a::b` (and `$crate::`) and `super::b` path in a library
//! source file outside its tests is an edge from the file's module to
//! the module it names. Circles are looked for at two levels: between the
//! top modules (`arc`, `capture`, `engine`, ...), and between the children
//! of one top module (`engine::index` and `engine::stats`); a parent and
//! its own children (`arc` re-exporting `arc::reader`, which uses
//! `super::Record`) are one module there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Format readers: below the capture layer that consumes them.
const READERS: &[&str] = &[
    "input",
    "reader",
    "http",
    "arc",
    "warc",
    "kulturarw3",
    "nedlib",
];
/// The engine owns files, maps and threads; only front ends are above it.
const ENGINE: &str = "engine";
/// Front ends: the binary's modules; nothing in the library may name them.
const FRONT_ENDS: &[&str] = &["cli", "serve"];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/arc/reader.rs` -> `["arc", "reader"]`, `src/arc/mod.rs` ->
/// `["arc"]`; `None` for the crate roots, the binary's front ends and
/// test files.
fn module_of(rel: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    let first = parts.first()?;
    if parts.len() == 1 && (first == "lib" || first == "main") {
        return None;
    }
    if FRONT_ENDS.contains(&first.as_str()) || parts.iter().any(|p| p == "tests") {
        return None;
    }
    Some(parts)
}

fn ident_at(s: &str) -> Option<&str> {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The module paths a line of code names: `crate::a::b::c` gives
/// `[a, b, c]` (items included: they only add nodes without edges).
fn paths_in(line: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for (kw, base) in [
        ("crate::", Vec::new()),
        ("super::", module[..module.len() - 1].to_vec()),
    ] {
        let mut from = 0;
        while let Some(i) = line[from..].find(kw) {
            let at = from + i;
            from = at + kw.len();
            // `super::super::x` is one path, found at its first `super`.
            let before = &line[..at];
            if kw == "super::" && before.ends_with("super::") {
                continue;
            }
            if before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let mut path = base.clone();
            let mut rest = &line[from..];
            while let Some(r) = rest.strip_prefix("super::") {
                path.pop();
                rest = r;
            }
            while let Some(id) = ident_at(rest) {
                path.push(id.to_string());
                match rest[id.len()..].strip_prefix("::") {
                    Some(r) => rest = r,
                    None => break,
                }
            }
            found.push(path);
        }
    }
    found
}

/// Edges between top modules, and between the children of each top
/// module, of every library file outside its tests.
fn graphs() -> (Graph, BTreeMap<String, Graph>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut top = Graph::new();
    let mut inner: BTreeMap<String, Graph> = BTreeMap::new();
    for f in files {
        let Some(module) = module_of(f.strip_prefix(&src).unwrap()) else {
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap();
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("#[cfg(test)]") {
                break; // the unit tests sit at the end of a file
            }
            if code.starts_with("//") {
                continue;
            }
            for target in paths_in(code, &module) {
                let Some(t0) = target.first() else { continue };
                if *t0 != module[0] {
                    top.entry(module[0].clone()).or_default().insert(t0.clone());
                } else if module.len() >= 2 && target.len() >= 2 && module[1] != target[1] {
                    inner
                        .entry(module[0].clone())
                        .or_default()
                        .entry(module[1].clone())
                        .or_default()
                        .insert(target[1].clone());
                }
            }
        }
    }
    (top, inner)
}

/// A circle of `g`, as the nodes along it, if there is one.
fn circle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &Graph,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == n) {
            let mut c = stack[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if !done.insert(n.to_string()) {
            return None;
        }
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, done, stack) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(n, g, &mut done, &mut Vec::new()))
}

#[test]
fn module_graph_has_no_circle() {
    let (top, inner) = graphs();
    assert!(
        top.contains_key("engine") && top.contains_key("capture"),
        "{top:?}"
    );
    if let Some(c) = circle(&top) {
        panic!("import circle between top modules: {}", c.join(" -> "));
    }
    for (parent, g) in &inner {
        if let Some(c) = circle(g) {
            panic!("import circle inside {parent}: {}", c.join(" -> "));
        }
    }
}

#[test]
fn no_module_imports_a_higher_layer() {
    let (top, _) = graphs();
    let mut wrong = Vec::new();
    for (from, tos) in &top {
        for to in tos {
            let upward = FRONT_ENDS.contains(&to.as_str())
                || (to == ENGINE && from != ENGINE)
                || (to == "capture" && READERS.contains(&from.as_str()));
            if upward {
                wrong.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports from a lower layer to a higher one: {wrong:?}"
    );
}

/// The checks find what they look for: a circle, and a path written the
/// ways the sources write them.
#[test]
fn the_graph_reader_sees_circles_and_paths() {
    let m = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let module = m(&["engine", "stats"]);
    assert_eq!(
        paths_in("use super::index::Progress;", &module),
        [m(&["engine", "index", "Progress"])]
    );
    assert_eq!(
        paths_in(
            "let x = crate::capture::sha1(d); $crate::reader::X",
            &module
        ),
        [m(&["capture", "sha1"]), m(&["reader", "X"])]
    );
    assert_eq!(
        paths_in("super::super::surt::key", &m(&["a", "b", "c"])),
        [m(&["a", "surt", "key"])]
    );
    let mut g = Graph::new();
    g.entry("index".into()).or_default().insert("stats".into());
    assert_eq!(circle(&g), None);
    g.entry("stats".into()).or_default().insert("index".into());
    assert!(circle(&g).is_some());
}
