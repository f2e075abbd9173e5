//! The README's walk-through: every `exaviz` command of README.md runs, in order, as a newcomer
//! would type it, in an empty folder where the files the README names are a user's own (real
//! recordings: `tests/data`, and `../shared/data` where present). `exaviz view` and `exaviz wall`
//! need a display; their commands run as `exaviz render` with the same input and options, which
//! checks both. Whatever a command names with `-o`, `--out` or `--png` must exist afterwards.
//! So the README cannot rot.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The files the README's commands name, as a user would have them: (name in the walk-through
/// folder, where the real recording is: `repo:` in this repository, else in `../shared/data`).
const FILES: &[(&str, &str)] = &[
    ("scorep-run", "otf2-pingpong/ping-pong-otf2"),
    ("pytorch-profiles", "repo:tests/data/torch-gloo-pipeline"),
    ("jax-trace", "repo:tests/data/jax-cpu-pipeline"),
    ("report.sqlite", "nsys-cloverleaf/perlmutter-cloverleaf-cuda.sqlite"),
    ("boxfish", "boxfish"),
    ("extrae-run", "paraver-qsort-4r"),
    ("omnitrace-run.proto", "perfetto-omnitrace-mpi/mpi-binary-rewrite-1.proto"),
    ("hpctoolkit-db", "hpctoolkit-pingpong"),
    ("charm-run", "projections-charm/ping-pong-projections"),
    ("before", "repo:tests/data/torch-gloo-pair/even"),
    ("after", "repo:tests/data/torch-gloo-pair/slow3"),
];

/// The README's commands: lines of its code blocks (indented by four spaces, or fenced) that
/// start with `exaviz `, without their trailing `# comment`.
fn commands(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let code = if fenced { Some(line.trim()) } else { line.strip_prefix("    ").map(str::trim) };
        let Some(code) = code.filter(|c| c.starts_with("exaviz ")) else { continue };
        let code = match code.find(" #") {
            Some(k) if code[..k].matches('\'').count() % 2 == 0 => &code[..k],
            _ => code,
        };
        out.push(code.trim().to_string());
    }
    out
}

/// The command as run here: a window's command becomes the same render, to a PNG.
fn as_run(command: &str, k: usize) -> String {
    for window in ["exaviz view ", "exaviz wall "] {
        if let Some(rest) = command.strip_prefix(window) {
            return format!("exaviz render {rest} -o window-{k}.png");
        }
    }
    command.to_string()
}

/// The files a command says it writes.
fn outputs(command: &str) -> Vec<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut out: Vec<String> = words
        .windows(2)
        .filter(|w| matches!(w[0], "-o" | "--out" | "--png"))
        .map(|w| w[1].trim_matches('\'').to_string())
        .collect();
    // `exaviz gen GEN DIR` and `exaviz convert INPUT STORE` write their last word.
    if matches!(words.get(1), Some(&"gen") | Some(&"convert")) {
        out.extend(words.last().map(|w| w.trim_matches('\'').to_string()));
    }
    out
}

#[test]
fn every_readme_command_runs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(repo.join("README.md")).expect("README.md");
    let all = commands(&readme);
    assert!(all.len() >= 20, "the README's commands were not found: {all:?}");
    let shared = repo.join("../shared/data");
    let required = std::env::var("EXAVIZ_REQUIRE_DATA").as_deref() == Ok("1");
    assert!(shared.exists() || !required, "../shared/data is required (EXAVIZ_REQUIRE_DATA=1)");
    let dir = std::env::temp_dir().join(format!("exaviz-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("walk-through folder");
    let mut missing: Vec<&str> = Vec::new();
    for (name, source) in FILES {
        let target: PathBuf = match source.strip_prefix("repo:") {
            Some(p) => repo.join(p),
            None => shared.join(source),
        };
        let target = match target.canonicalize() {
            Ok(t) => t,
            Err(_) => {
                missing.push(name);
                continue;
            }
        };
        std::os::unix::fs::symlink(&target, dir.join(name)).expect("link");
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_exaviz")).parent().expect("bin dir").to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut failures = Vec::new();
    let mut ran = 0;
    for (k, command) in all.iter().enumerate() {
        if let Some(name) = missing.iter().find(|m| command.contains(*m)) {
            eprintln!("skipped, {name} needs ../shared/data: {command}");
            continue;
        }
        let run = as_run(command, k);
        let out = Command::new("bash")
            .arg("-c")
            .arg(&run)
            .current_dir(&dir)
            .env("PATH", &path)
            .env_remove("XDG_RUNTIME_DIR")
            .output()
            .expect("bash runs");
        ran += 1;
        let err = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() || err.contains("panicked") {
            failures.push(format!("{command}\n  ran: {run}\n  {}", err.trim()));
            continue;
        }
        for o in outputs(&run) {
            let p = dir.join(o.trim_end_matches('/'));
            let written = p.is_dir() || p.metadata().is_ok_and(|m| m.len() > 0);
            if !written {
                failures.push(format!("{command}\n  wrote no {o}"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "README commands that fail:\n{}", failures.join("\n"));
    assert!(ran >= 15, "only {ran} of the README's {} commands ran", all.len());
}

#[test]
fn commands_are_found_with_their_comments_cut() {
    let text = "Intro\n\n    exaviz render x -o a.png   # a comment\n    cargo build\n\n```\nexaviz info 'gen:fd4?x=1#2'\n```\n";
    assert_eq!(commands(text), ["exaviz render x -o a.png", "exaviz info 'gen:fd4?x=1#2'"]);
    assert_eq!(as_run("exaviz view t.otf2 --view matrix", 3), "exaviz render t.otf2 --view matrix -o window-3.png");
    assert_eq!(outputs("exaviz convert in run.exaviz"), ["run.exaviz"]);
    assert_eq!(outputs("exaviz bundle e --out c.csv --png b.png"), ["c.csv", "b.png"]);
}

/// The rows of the first Markdown table after the heading `heading` (or of the file's first
/// table where `heading` is empty), each as its cells.
fn table_after(text: &str, heading: &str) -> Vec<Vec<String>> {
    let start = if heading.is_empty() { 0 } else { text.find(heading).expect("the heading") };
    text[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect())
        .collect()
}

/// The README's "How fast" table is BENCHMARKS.md's, condensed: every figure it shows (a number
/// with its unit or ratio) is in the row of BENCHMARKS.md's first table that holds it, and a
/// goal said met there is not said missed here, nor the other way round.
#[test]
fn the_readme_says_how_fast_as_benchmarks_md_does() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let benches = std::fs::read_to_string(repo.join("BENCHMARKS.md")).unwrap();
    let ours = table_after(&readme, "## How fast");
    let theirs = table_after(&benches, "");
    assert!(ours.len() >= 5, "the README's table has {} rows", ours.len());
    assert!(
        theirs.iter().all(|r| r.len() == 6),
        "BENCHMARKS.md's table has six columns: what, goal, now, met, date, command"
    );
    let figures = |cell: &str| -> Vec<String> {
        cell.split([' ', ';', '(', ')', ','])
            .map(|w| w.trim_matches(|c: char| c == '*' || c == '.'))
            .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
            .map(String::from)
            .collect()
    };
    for row in &ours {
        let [what, goal, now, met] = &row[..] else { panic!("README row {row:?} is not what | goal | now | met") };
        let shown: Vec<String> = figures(goal).into_iter().chain(figures(now)).collect();
        let holds = |r: &Vec<String>, f: &str| r[1].contains(f) || r[2].contains(f);
        for f in &shown {
            assert!(theirs.iter().any(|r| holds(r, f)), "README's \"{what}\": {f} is in no row of BENCHMARKS.md");
        }
        // The row holding most of them says the same of the goal.
        let best = theirs.iter().max_by_key(|r| shown.iter().filter(|f| holds(r, f)).count()).expect("rows");
        let missed = |m: &str| m.contains("no");
        assert_eq!(
            missed(met),
            missed(&best[3]),
            "README's \"{what}\" says {met}, BENCHMARKS.md's \"{}\" {}",
            best[0],
            best[3]
        );
    }
}
