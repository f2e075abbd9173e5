//! Shared code one floor down, never sideways: read from the `use` paths of the sources.
//!
//! - No import circle between the modules of `engine`, `datasets` and `viewer` (two levels
//!   deep: `formats::paraver`, `store`, `stages::cpu`).
//! - A view (`engine/src/views/NAME/`) imports the contract and the shared floor
//!   (`views/*.rs`, `views/torus/`), never another view, but for the composite views (`linked`,
//!   `mpi`).
//!
//! Test modules (from `#[cfg(test)]` on) and comments are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Views made of other views.
const COMPOSITE: &[&str] = &["diff", "linked", "mpi"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// A file's module path below its crate's root (`views/ring/mod.rs` is `["views", "ring"]`).
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "lib" || l == "main") {
        parts.pop();
    }
    parts
}

/// The code of a file without its tests and line comments.
fn code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The identifiers after each `prefix` in `text` (`crate::a::b` gives `[a, b]`).
fn paths_after(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(prefix) {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        let mut parts = Vec::new();
        for seg in rest.split("::") {
            let id: String = seg.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if id.is_empty() || id.starts_with(char::is_uppercase) {
                break;
            }
            parts.push(id.clone());
            if id.len() != seg.len() {
                break;
            }
        }
        out.push(parts);
    }
    out
}

/// Each module's imports of other modules, two levels deep, within one crate.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(root, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let me_path = module_of(root, f);
        let me = me_path.iter().take(2).cloned().collect::<Vec<_>>().join("::");
        let text = code(f);
        let mut targets: Vec<Vec<String>> = paths_after(&text, "crate::");
        // `super::x` from a file names its parent's module x.
        let parent: Vec<String> = me_path.iter().take(me_path.len().saturating_sub(1)).cloned().collect();
        for p in paths_after(&text, "super::") {
            targets.push(parent.iter().cloned().chain(p).collect());
        }
        for t in targets {
            let target = t.iter().take(2).cloned().collect::<Vec<_>>().join("::");
            let related = target.is_empty()
                || target == me
                || me.starts_with(&format!("{target}::"))
                || target.starts_with(&format!("{me}::"));
            if !related {
                edges.entry(me.clone()).or_default().insert(target);
            }
        }
    }
    edges
}

/// The strongly connected components of more than one module (Tarjan's, iteratively).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let nodes: BTreeSet<&String> = edges.keys().chain(edges.values().flatten()).collect();
    let nodes: Vec<&String> = nodes.into_iter().collect();
    let at: BTreeMap<&String, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let succ: Vec<Vec<usize>> =
        nodes.iter().map(|n| edges.get(*n).map_or(Vec::new(), |s| s.iter().map(|t| at[t]).collect())).collect();
    let n = nodes.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut out, mut next) = (Vec::new(), Vec::new(), 0);
    for start in 0..n {
        if index[start] != usize::MAX {
            continue;
        }
        let mut work = vec![(start, 0usize)];
        while let Some(&mut (v, ref mut k)) = work.last_mut() {
            if *k == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = succ[v].get(*k) {
                *k += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = BTreeSet::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    comp.insert(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    out.push(comp);
                }
            }
        }
    }
    out
}

fn root(krate: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(krate).join("src")
}

#[test]
fn no_import_circles() {
    for krate in ["engine", "datasets", "viewer"] {
        let found = circles(&graph(&root(krate)));
        assert!(found.is_empty(), "{krate}: import circles {found:?}");
    }
}

#[test]
fn views_import_the_floor_not_each_other() {
    let views = root("engine").join("views");
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(&views).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    let names: BTreeSet<String> = dirs.iter().map(|d| d.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for dir in &dirs {
        let me = dir.file_name().unwrap().to_string_lossy().into_owned();
        if COMPOSITE.contains(&me.as_str()) {
            continue;
        }
        let mut files = Vec::new();
        sources(dir, &mut files);
        for f in files {
            let text = code(&f);
            let mut used: Vec<String> =
                paths_after(&text, "crate::views::").into_iter().filter_map(|p| p.first().cloned()).collect();
            // From a view's mod.rs, `super::x` names views::x; from its other files,
            // `super::super::x` does.
            let up = if f.file_name().is_some_and(|n| n == "mod.rs") { "super::" } else { "super::super::" };
            used.extend(paths_after(&text, up).into_iter().filter_map(|p| p.first().cloned()));
            for other in used {
                let view = names.contains(&other) && other != me && other != "torus";
                if view {
                    found.push(format!("{}: imports the view {other}", f.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "views used as libraries by their siblings (move what they share into views/*.rs):\n{}",
        found.join("\n")
    );
}

/// The reader of paths and the circle finder themselves.
#[test]
fn paths_and_circles_are_found() {
    assert_eq!(
        paths_after("use crate::views::ring::Ring; x = crate::model::Trace", "crate::"),
        vec![vec!["views".to_string(), "ring".into()], vec!["model".into()]]
    );
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    g.entry("c".into()).or_default().insert("d".into());
    let c = circles(&g);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0], ["a", "b", "c"].iter().map(|s| (*s).to_string()).collect());
}

/// One name per stage, as vello names them: every compute shader `NAME.wgsl` has its recording
/// in `engine/src/stages/NAME.rs` and its CPU mirror in `stages/cpu/NAME.rs`, which defines a
/// function for each of the shader's entry points (`ENTRY`, or `ENTRY_all` where the runner
/// walks a whole dispatch at once); every other file of `stages/cpu/` is a mirror's fast paths on
/// plain memory, `NAME_plain.rs`.
#[test]
fn each_stage_has_one_name_across_wgsl_mirror_and_pipeline() {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let (wgsl, stages) = (here.join("shaders/wgsl"), here.join("engine/src/stages"));
    let mut compute = Vec::new();
    for entry in std::fs::read_dir(&wgsl).unwrap().flatten() {
        let (path, text) = (entry.path(), std::fs::read_to_string(entry.path()).unwrap());
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let entries: Vec<String> = text
            .split("@compute")
            .skip(1)
            .filter_map(|rest| rest.split("fn ").nth(1))
            .map(|f| f.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
            .collect();
        if entries.is_empty() {
            continue;
        }
        assert!(stages.join(format!("{name}.rs")).is_file(), "{name}.wgsl has no engine/src/stages/{name}.rs");
        let mirror = stages.join(format!("cpu/{name}.rs"));
        let mirror =
            std::fs::read_to_string(&mirror).unwrap_or_else(|_| panic!("{name}.wgsl has no stages/cpu/{name}.rs"));
        for e in &entries {
            assert!(
                mirror.contains(&format!("fn {e}(")) || mirror.contains(&format!("fn {e}_all(")),
                "stages/cpu/{name}.rs mirrors no entry point {e} of {name}.wgsl"
            );
        }
        compute.push(name);
    }
    assert!(compute.len() >= 6, "compute shaders found: {compute:?}");
    for entry in std::fs::read_dir(stages.join("cpu")).unwrap().flatten() {
        let stem = entry.path().file_stem().unwrap().to_string_lossy().into_owned();
        let stage = stem.strip_suffix("_plain").unwrap_or(&stem);
        assert!(
            stem == "mod" || compute.iter().any(|c| c == stage),
            "stages/cpu/{stem}.rs is neither a shader's mirror nor a mirror's plain paths"
        );
    }
}
