//! Shared code one floor down, never sideways: read from the sources and the manifests.
//!
//! - Between crates, the layers of `docs/architecture.md`: a crate depends only on crates of
//!   lower layers (cargo forbids circles; this forbids a dependency pointing up), and the model,
//!   the store, the formats, the generators and the analyses depend on nothing of the GPU or the
//!   window (no wgpu, winit, egui, lyon), through any crate of the workspace.
//! - Inside every crate, no import circle between its modules (a file each): the `use` paths
//!   and the paths in code (`crate::`, `super::`, `self::`, groups `crate::{a::X, b::{c, D}}`
//!   included) are resolved against the crate's own module tree, each to the deepest module it
//!   names, so an item (`summary::window_asked`) is its module's, not a module of its own. A
//!   module and its ancestors may name each other (a parent declares and re-exports its
//!   children).
//! - A view (`views/src/NAME/`) imports the contract and the shared floor (`views/src/*.rs`,
//!   `views/src/torus/`), never another view, but for the composite views (`diff`, `linked`,
//!   `mpi`).
//! - Each compute stage is one name across its WGSL, its recording and its CPU mirror.
//!
//! Test modules (from `#[cfg(test)]` on) and comments are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Views made of other views.
const COMPOSITE: &[&str] = &["diff", "linked", "mpi"];

/// The crates of the workspace by layer, lowest first: a crate may depend on crates of lower
/// layers only.
const LAYERS: &[&[&str]] = &[
    &["model", "shaders"],
    &["store", "gen", "analysis", "compute"],
    &["formats", "render"],
    &["datasets", "views", "query"],
    &["remote", "aggregate"],
    &["viewer", "python"],
    &["tests", "benches"],
];

/// Crates that must not reach the GPU or the window, and what they must not reach.
const NO_GPU: &[&str] = &["model", "store", "formats", "gen", "analysis", "datasets"];
const GPU_OR_WINDOW: &[&str] = &["wgpu", "winit", "egui", "egui-winit", "egui-wgpu", "lyon_tessellation", "softbuffer"];

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

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

/// The code of a file without its tests, line comments and string literals' contents.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let lines: Vec<&str> = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect();
    let joined = lines.join("\n");
    // Blank out string literals, so a path in a message is not an import.
    let mut out = String::with_capacity(joined.len());
    let mut in_str = false;
    let mut prev = ' ';
    for c in joined.chars() {
        if c == '"' && prev != '\\' && prev != '\'' {
            in_str = !in_str;
            out.push('"');
        } else if !in_str {
            out.push(c);
        }
        prev = if prev == '\\' && c == '\\' { ' ' } else { c };
    }
    out
}

fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Expands a `use` tree (`a::{b, c::{d, e as f}}`) into its paths.
fn expand(tree: &str) -> Vec<Vec<String>> {
    // `x as y` keeps x; then whitespace goes.
    let words: Vec<&str> = tree.split_whitespace().collect();
    let mut t = String::new();
    let mut k = 0;
    while k < words.len() {
        if words[k] == "as" {
            k += 2;
            continue;
        }
        t.push_str(words[k]);
        k += 1;
    }
    fn go(t: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
        // Split at top-level commas.
        let (mut depth, mut start, mut parts) = (0, 0, Vec::new());
        for (i, c) in t.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&t[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&t[start..]);
        for p in parts.into_iter().filter(|p| !p.is_empty()) {
            let mut next = prefix.to_vec();
            match p.find('{') {
                Some(brace) if p.ends_with('}') => {
                    next.extend(p[..brace].split("::").filter(|s| !s.is_empty()).map(String::from));
                    go(&p[brace + 1..p.len() - 1], &next, out);
                }
                _ => {
                    next.extend(p.split("::").filter(|s| !s.is_empty() && *s != "self" && *s != "*").map(String::from));
                    out.push(next);
                }
            }
        }
    }
    let mut out = Vec::new();
    go(&t, &[], &mut out);
    out
}

/// Every path a file's code names from `crate`, `super` or `self`, made absolute from the
/// crate's root (`me` is the file's module): the trees of `use` items and the paths in code.
fn paths_of(text: &str, me: &[String]) -> Vec<Vec<String>> {
    let mut raw: Vec<Vec<String>> = Vec::new();
    let mut rest = text;
    // `use` items, groups expanded.
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at + 4..];
        rest = tail;
        if before.is_some_and(ident) {
            continue;
        }
        let Some(end) = tail.find(';') else { break };
        raw.extend(expand(&tail[..end]));
    }
    // Paths in code: `crate::a::b`, `super::a`, `self::a` (a group only in `use`).
    for prefix in ["crate::", "super::", "self::"] {
        for (at, _) in text.match_indices(prefix) {
            if text[..at].chars().next_back().is_some_and(|c| ident(c) || c == ':') {
                continue;
            }
            let mut path = vec![prefix.trim_end_matches(':').to_string()];
            for seg in text[at + prefix.len()..].split("::") {
                let id: String = seg.chars().take_while(|c| ident(*c)).collect();
                if id.is_empty() {
                    break;
                }
                let whole = id.len() == seg.len();
                path.push(id);
                if !whole {
                    break;
                }
            }
            raw.push(path);
        }
    }
    let mut out = Vec::new();
    for p in raw {
        let mut base: Vec<String> = match p.first().map(String::as_str) {
            Some("crate") => Vec::new(),
            Some("super") | Some("self") => me.to_vec(),
            _ => continue,
        };
        let mut k = 0;
        if p[0] == "crate" {
            k = 1;
        }
        while p.get(k).is_some_and(|s| s == "super" || s == "self") {
            if p[k] == "super" {
                base.pop();
            }
            k += 1;
        }
        base.extend(p[k..].iter().cloned());
        out.push(base);
    }
    out
}

/// Each module's imports of other modules of its crate, every path resolved to the deepest
/// module of the crate that it names.
fn graph_of(files: &[(Vec<String>, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let name = |m: &[String]| if m.is_empty() { "crate".to_string() } else { m.join("::") };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (me, text) in files {
        for path in paths_of(&code(text), me) {
            let Some(n) = (0..=path.len()).rev().find(|&n| modules.contains(&path[..n])) else { continue };
            let target = &path[..n];
            // A module and its ancestors may name each other.
            if target.len() <= me.len() && me[..target.len()] == *target
                || target.len() > me.len() && target[..me.len()] == **me
            {
                continue;
            }
            edges.entry(name(me)).or_default().insert(name(target));
        }
    }
    edges
}

fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(root, &mut files);
    let files: Vec<(Vec<String>, String)> =
        files.iter().map(|f| (module_of(root, f), std::fs::read_to_string(f).unwrap())).collect();
    graph_of(&files)
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

/// The workspace's crates: folder name, package name and the packages it depends on (normal
/// and build dependencies; dev-dependencies may point up, as a test of a lower crate opens
/// inputs through a higher one).
fn manifests() -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for layer in LAYERS {
        for dir in *layer {
            let text = std::fs::read_to_string(here().join(dir).join("Cargo.toml")).unwrap();
            let mut section = String::new();
            let (mut package, mut deps) = (String::new(), Vec::new());
            for line in text.lines().map(str::trim) {
                if line.starts_with('[') {
                    section = line.to_string();
                    continue;
                }
                let Some((key, value)) = line.split_once('=') else { continue };
                let key = key.trim().trim_matches('"');
                match section.as_str() {
                    "[package]" if key == "name" => package = value.trim().trim_matches('"').to_string(),
                    s if s == "[dependencies]"
                        || s == "[build-dependencies]"
                        || s.starts_with("[target.") && s.ends_with(".dependencies]") =>
                    {
                        deps.push(key.to_string())
                    }
                    _ => {}
                }
            }
            out.push((dir.to_string(), package, deps));
        }
    }
    out
}

#[test]
fn crates_depend_only_on_lower_layers_and_the_core_on_no_gpu() {
    let all = manifests();
    let layer_of = |package: &str| {
        let dir = all.iter().find(|(_, p, _)| p == package).map(|(d, _, _)| d.as_str())?;
        LAYERS.iter().position(|l| l.contains(&dir))
    };
    let mut wrong = Vec::new();
    for (dir, package, deps) in &all {
        let mine = layer_of(package).unwrap();
        for d in deps.iter().filter(|d| d.starts_with("exaviz")) {
            match layer_of(d) {
                Some(l) if l < mine => {}
                Some(_) => wrong.push(format!("{dir} ({package}) depends on {d}, which is not below it")),
                None => wrong.push(format!("{dir}: {d} is no crate of the layers")),
            }
        }
    }
    // What the core crates reach through the workspace's crates.
    for dir in NO_GPU {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut todo: Vec<String> = vec![all.iter().find(|(d, _, _)| d == dir).unwrap().1.clone()];
        while let Some(p) = todo.pop() {
            if !seen.insert(p.clone()) {
                continue;
            }
            if let Some((_, _, deps)) = all.iter().find(|(_, q, _)| *q == p) {
                todo.extend(deps.iter().cloned());
            }
        }
        for bad in GPU_OR_WINDOW.iter().filter(|b| seen.contains(**b)) {
            wrong.push(format!("{dir} reaches {bad}"));
        }
    }
    assert!(wrong.is_empty(), "layers broken:\n{}", wrong.join("\n"));
}

#[test]
fn no_import_circles_in_any_crate() {
    let mut found = Vec::new();
    for layer in LAYERS {
        for dir in *layer {
            let root = here().join(dir);
            let root = if root.join("src").is_dir() { root.join("src") } else { root };
            for c in circles(&graph(&root)) {
                found.push(format!("{dir}: {c:?}"));
            }
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn views_import_the_floor_not_each_other() {
    let views = here().join("views/src");
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(&views).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    let names: BTreeSet<String> = dirs.iter().map(|d| d.file_name().unwrap().to_string_lossy().into_owned()).collect();
    let mut found = Vec::new();
    let mut files = Vec::new();
    sources(&views, &mut files);
    for f in files {
        let me = module_of(&views, &f);
        let Some(view) = me.first().filter(|v| names.contains(*v)) else { continue };
        if COMPOSITE.contains(&view.as_str()) || view == "torus" {
            continue;
        }
        for path in paths_of(&code(&std::fs::read_to_string(&f).unwrap()), &me) {
            if let Some(other) = path.first().filter(|o| *o != view && *o != "torus" && names.contains(*o)) {
                found.push(format!("{}: imports the view {other}", f.display()));
            }
        }
    }
    found.sort();
    found.dedup();
    assert!(
        found.is_empty(),
        "views used as libraries by their siblings (move what they share into views/src/*.rs):\n{}",
        found.join("\n")
    );
}

fn file(module: &str, text: &str) -> (Vec<String>, String) {
    (module.split("::").filter(|s| !s.is_empty()).map(String::from).collect(), text.to_string())
}

/// The reader of paths: groups and nested groups, items told from modules, `super` and
/// `self` resolved from the file's module, strings and comments left out.
#[test]
fn paths_are_read_as_the_compiler_reads_them() {
    let me: Vec<String> = vec!["views".into(), "timeline".into(), "scene".into()];
    let text = code(
        "use crate::{dataset::Dataset, model::{Trace, Messages}};\nuse super::axis::{self, MARGIN};\n\
         let x = crate::summary::window_asked(d); // crate::ignored::here\nlet s = \"crate::not::code\";\n\
         use self::inner::Thing as Other;",
    );
    let mut got = paths_of(&text, &me);
    got.sort();
    got.dedup();
    let want: Vec<Vec<String>> = [
        "dataset::Dataset",
        "model::Messages",
        "model::Trace",
        "summary::window_asked",
        "views::timeline::axis",
        "views::timeline::axis::MARGIN",
        "views::timeline::scene::inner::Thing",
    ]
    .iter()
    .map(|p| p.split("::").map(String::from).collect())
    .collect();
    for w in &want {
        assert!(got.contains(w), "{w:?} not in {got:?}");
    }
    assert!(!got.iter().any(|p| p.contains(&"ignored".to_string()) || p.contains(&"not".to_string())), "{got:?}");
}

/// The circles this guard was written for, planted in a crate of a few files: an analysis
/// naming an item of another that names it back through a group; a loop of files inside a
/// view's folder through `super::`; a loop over three files of a binary. Each is found, and
/// the tree without them has none.
#[test]
fn planted_circles_are_found() {
    let analyses = [
        file("", "pub mod summary; pub mod critical_path;"),
        file("summary", "use crate::critical_path::{CauseRow, Graph, causes};"),
        file("critical_path", "pub fn f() { let w = crate::summary::window_asked(d); }"),
    ];
    assert_eq!(circles(&graph_of(&analyses)).len(), 1, "{:?}", graph_of(&analyses));
    let timeline = [
        file("timeline", "mod scene; mod index; mod axis;"),
        file("timeline::scene", "use super::axis::{row_ticks, rows_title};\nuse super::index::TimelineIndex;"),
        file("timeline::index", "use super::scene::TimelineOptions;"),
        file("timeline::axis", "use super::scene::MARGIN;"),
    ];
    let c = circles(&graph_of(&timeline));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].len(), 3, "{c:?}");
    let viewer = [
        file("", "mod common; mod window; mod choices;"),
        file("common", "pub fn content() -> window::Content {}\nuse crate::window;"),
        file("window", "use crate::{ViewArgs, choices};"),
        file("choices", "use crate::common::ViewArgs;"),
    ];
    assert_eq!(circles(&graph_of(&viewer)).len(), 1, "{:?}", graph_of(&viewer));
    // Without the edges that close them, no circle.
    let fixed = [
        file("", "pub mod summary; pub mod critical_path; pub mod window;"),
        file("summary", "use crate::critical_path::{CauseRow, Graph, causes};\nuse crate::window::window_asked;"),
        file("critical_path", "pub fn f() { let w = crate::window::window_asked(d); }"),
        file("window", "pub fn window_asked() {}"),
    ];
    assert!(circles(&graph_of(&fixed)).is_empty(), "{:?}", graph_of(&fixed));
}

/// One name per stage, as vello names them: every compute shader `NAME.wgsl` lies in
/// `compute/src/NAME/` beside the stage's recording (`mod.rs`) and its CPU mirror
/// (`mirror.rs`), which defines a function for each of the shader's entry points (`ENTRY`, or
/// `ENTRY_all` where the runner walks a whole dispatch at once); the folder's other file is the
/// mirror's fast paths on plain memory (`plain.rs`).
#[test]
fn each_stage_has_one_name_across_wgsl_mirror_and_pipeline() {
    let compute = here().join("compute/src");
    let mut stages = Vec::new();
    for entry in std::fs::read_dir(&compute).unwrap().flatten().filter(|e| e.path().is_dir()) {
        let dir = entry.path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let shader = dir.join(format!("{name}.wgsl"));
        let text =
            std::fs::read_to_string(&shader).unwrap_or_else(|_| panic!("compute/src/{name}/ has no {name}.wgsl"));
        let entries: Vec<String> = text
            .split("@compute")
            .skip(1)
            .filter_map(|rest| rest.split("fn ").nth(1))
            .map(|f| f.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
            .collect();
        assert!(!entries.is_empty(), "{name}.wgsl has no compute entry point");
        assert!(dir.join("mod.rs").is_file(), "compute/src/{name}/ has no mod.rs (the recording)");
        let mirror = std::fs::read_to_string(dir.join("mirror.rs"))
            .unwrap_or_else(|_| panic!("compute/src/{name}/ has no mirror.rs"));
        for e in &entries {
            assert!(
                mirror.contains(&format!("fn {e}(")) || mirror.contains(&format!("fn {e}_all(")),
                "compute/src/{name}/mirror.rs mirrors no entry point {e} of {name}.wgsl"
            );
        }
        for other in std::fs::read_dir(&dir).unwrap().flatten() {
            let f = other.file_name().to_string_lossy().into_owned();
            assert!(
                [format!("{name}.wgsl"), "mod.rs".into(), "mirror.rs".into(), "plain.rs".into()].contains(&f),
                "compute/src/{name}/{f} is neither the stage's shader, recording, mirror nor plain paths"
            );
        }
        stages.push(name);
    }
    assert!(stages.len() >= 6, "stages found: {stages:?}");
}
