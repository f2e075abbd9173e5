//! XLA's HLO modules as text, as `XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text` writes them
//! (JAX, TensorFlow): `module_NNNN.jit_NAME.before_optimizations.txt`, the modules after a pass
//! (`--xla_dump_hlo_pass_re`: after `shardy-xla` every operator carries its propagated sharding)
//! and `..._after_optimizations.txt`. Read into an operator graph
//! ([`exaviz_model::opgraph::OpGraph`]): each instruction's name, opcode, output shape, operands
//! (the data edges), `metadata={op_name=...}` (the namespace), `sharding={...}` (the parallel
//! strategy), `source_target_pairs` of collective-permutes (a pipeline's transfers) and the
//! computations it calls.
//!
//! A line inside a computation that is not an instruction, or an operand naming no instruction,
//! is left out and counted as a warning; a file without the `HloModule` header, or one that ends
//! inside a computation (truncated), is refused in one line naming the file and the line.

use std::collections::HashMap;
use std::path::Path;

use exaviz_model::opgraph::{OpClass, OpGraph, OpNode, Strategy};
use exaviz_model::source::SourceError;

/// Whether a file's first bytes are an HLO text module's.
pub fn looks_like(head: &[u8]) -> bool {
    String::from_utf8_lossy(head).trim_start().starts_with("HloModule ")
}

/// Walks `s`, calling `f(index, char, depth)` for each character outside quoted text, `depth`
/// the brackets open before it; stops where `f` returns false.
fn walk(s: &str, mut f: impl FnMut(usize, char, i32) -> bool) {
    let (mut depth, mut quoted, mut escaped) = (0i32, false, false);
    for (i, c) in s.char_indices() {
        if quoted {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => {}
            }
            continue;
        }
        if c == '"' {
            quoted = true;
            continue;
        }
        if !f(i, c, depth) {
            return;
        }
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
    }
}

/// The index of the bracket closing the one at `open` (`(`, `[` or `{`), skipping quoted text.
fn closing(s: &str, open: usize) -> Option<usize> {
    let mut found = None;
    walk(&s[open..], |i, c, depth| {
        if depth == 1 && matches!(c, ')' | ']' | '}') {
            found = Some(open + i);
            return false;
        }
        true
    });
    found
}

/// `s` split at the commas outside brackets and quotes, each part trimmed.
fn split_top(s: &str) -> Vec<&str> {
    let (mut parts, mut from) = (Vec::new(), 0);
    walk(s, |i, c, depth| {
        if c == ',' && depth == 0 {
            parts.push(s[from..i].trim());
            from = i + 1;
        }
        true
    });
    let last = s[from..].trim();
    if !last.is_empty() {
        parts.push(last);
    }
    parts
}

/// A sharding attribute's value (`{replicated}`, `{maximal device=3}`, `{devices=[8,1]<=[8]}`,
/// `{devices=[2,1,4]<=[8] last_tile_dim_replicate}`, a tuple `{{...}, {...}}`).
pub fn parse_sharding(v: &str) -> Strategy {
    sharding_within(v, 0)
}

/// Nested tuples of shardings deeper than this read as unknown (a line cut short can leave
/// braces that never close).
const MAX_SHARDING_DEPTH: u32 = 32;

/// [`parse_sharding`] of a tuple's member `depth` levels down: each level strips one pair of
/// braces, so the recursion is bounded by the text and by [`MAX_SHARDING_DEPTH`].
fn sharding_within(v: &str, depth: u32) -> Strategy {
    let v = v.trim();
    let stripped = v.strip_prefix('{').and_then(|v| v.strip_suffix('}'));
    let inner = stripped.unwrap_or(v).trim();
    if inner.starts_with('{') {
        // A tuple: only where a pair of braces came off, so every member is shorter.
        if stripped.is_none() || depth >= MAX_SHARDING_DEPTH {
            return Strategy::Unknown;
        }
        return Strategy::Tuple(split_top(inner).into_iter().map(|m| sharding_within(m, depth + 1)).collect());
    }
    if inner.starts_with("replicated") {
        return Strategy::Replicated;
    }
    if let Some(rest) = inner.strip_prefix("maximal device=") {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        return digits.parse().map_or(Strategy::Unknown, Strategy::Maximal);
    }
    if let Some(rest) = inner.strip_prefix("devices=[")
        && let Some(end) = rest.find(']')
    {
        let partitions: Option<Vec<u32>> = rest[..end].split(',').map(|p| p.trim().parse().ok()).collect();
        if let Some(partitions) = partitions.filter(|p| !p.is_empty()) {
            return Strategy::Tiled { partitions, replicated_last: rest.contains("last_tile_dim") };
        }
    }
    Strategy::Unknown
}

/// The text of `key="..."` in `s` (its escapes kept as written but `\"`).
fn quoted_value(s: &str, key: &str) -> Option<String> {
    let at = s.find(&format!("{key}=\""))? + key.len() + 2;
    let mut out = String::new();
    let mut escaped = false;
    for c in s[at..].chars() {
        match c {
            _ if escaped => {
                out.push(c);
                escaped = false;
            }
            '\\' => escaped = true,
            '"' => return Some(out),
            _ => out.push(c),
        }
    }
    None
}

/// `{{0,1},{1,2}}` as pairs (`None`: not pairs of whole numbers).
fn parse_pairs(v: &str) -> Option<Vec<(u32, u32)>> {
    let inner = v.trim().strip_prefix('{')?.strip_suffix('}')?;
    split_top(inner)
        .into_iter()
        .map(|p| {
            let p = p.strip_prefix('{')?.strip_suffix('}')?;
            let (a, b) = p.split_once(',')?;
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
        })
        .collect()
}

/// A shape without its layouts (`{1,0}`) and comments (`/*index=5*/`).
fn plain_shape(shape: &str) -> String {
    let mut text = shape.to_string();
    while let Some(a) = text.find("/*") {
        let Some(b) = text[a..].find("*/") else { break };
        text.replace_range(a..a + b + 2, "");
    }
    let mut depth = 0usize;
    text.chars()
        .filter(|&c| match c {
            '{' => {
                depth += 1;
                false
            }
            '}' => {
                depth = depth.saturating_sub(1);
                false
            }
            _ => depth == 0,
        })
        .collect()
}

/// One instruction line, parsed; operands by name.
struct Line {
    node: OpNode,
    operands: Vec<String>,
}

/// Parses `  [ROOT ]%name = SHAPE opcode(operands), attributes` (`None`: not an instruction).
fn instruction(text: &str, computation: u32) -> Option<Line> {
    let text = text.trim();
    let text = text.strip_prefix("ROOT ").unwrap_or(text);
    let (name, rest) = text.split_once(" = ")?;
    let name = name.trim().trim_start_matches('%');
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim_start();
    let shape_end = if rest.starts_with('(') { closing(rest, 0)? + 1 } else { rest.find(' ')? };
    let shape = &rest[..shape_end];
    let rest = rest[shape_end..].trim_start();
    let open = rest.find('(')?;
    let opcode = &rest[..open];
    if opcode.is_empty() || !opcode.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.') {
        return None;
    }
    let close = closing(rest, open)?;
    let operands: Vec<String> = if matches!(opcode, "constant" | "parameter") {
        Vec::new()
    } else {
        split_top(&rest[open + 1..close])
            .into_iter()
            .filter_map(|o| o.rsplit("*/").next().unwrap_or(o).split_whitespace().last())
            .map(|o| o.trim_start_matches('%').to_string())
            .filter(|o| !o.is_empty())
            .collect()
    };
    let mut node = OpNode {
        name: name.to_string(),
        opcode: opcode.to_string(),
        shape: plain_shape(shape),
        namespace: String::new(),
        strategy: Strategy::Unknown,
        class: OpClass::Other,
        computation,
        pairs: Vec::new(),
        calls: Vec::new(),
    };
    let attributes = rest[close + 1..].trim_start().strip_prefix(',').unwrap_or("");
    for a in split_top(attributes) {
        let Some((key, value)) = a.split_once('=') else { continue };
        match key.trim() {
            "sharding" => node.strategy = parse_sharding(value),
            "metadata" => node.namespace = quoted_value(value, "op_name").unwrap_or_default(),
            "source_target_pairs" => node.pairs = parse_pairs(value).unwrap_or_default(),
            "calls" | "to_apply" | "body" | "condition" | "branch_computations" | "called_computations" => {
                let names = value.trim().trim_start_matches('{').trim_end_matches('}');
                node.calls.extend(
                    names.split(',').map(|n| n.trim().trim_start_matches('%').to_string()).filter(|n| !n.is_empty()),
                );
            }
            _ => {}
        }
    }
    Some(Line { node, operands })
}

/// The HLO text modules directly in `dir` (`*.txt` beginning `HloModule `), the most telling
/// first: a module after sharding propagation (`shardy-xla`), then after optimizations, then
/// the others, each group by name.
pub fn modules_in(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<std::path::PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt") && p.is_file())
        .filter(|p| {
            let mut head = [0u8; 16];
            std::fs::File::open(p)
                .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
                .is_ok_and(|n| looks_like(&head[..n]))
        })
        .collect();
    let rank = |p: &std::path::PathBuf| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        (
            if name.contains("after_shardy-xla") {
                0
            } else if name.contains("after_optimizations") {
                1
            } else {
                2
            },
            name,
        )
    };
    found.sort_by_key(rank);
    found
}

/// Reads one HLO text module: its operator graph and the warnings of what was left out.
pub fn read(input: &str, path: &Path) -> Result<(OpGraph, Vec<String>), SourceError> {
    let text = std::fs::read(path).map_err(|e| SourceError::invalid(input, format!("cannot be read: {e}")))?;
    let text = String::from_utf8_lossy(&text);
    parse(input, &text)
}

/// Parses the text of an HLO module (`input` names it in errors).
pub fn parse(input: &str, text: &str) -> Result<(OpGraph, Vec<String>), SourceError> {
    let mut lines = text.lines().enumerate();
    let header = lines.by_ref().map(|(_, l)| l.trim()).find(|l| !l.is_empty()).unwrap_or_default();
    let Some(header) = header.strip_prefix("HloModule ") else {
        return Err(SourceError::invalid(input, "not an HLO module: it does not start with 'HloModule NAME'"));
    };
    let mut g = OpGraph {
        name: header.split(',').next().unwrap_or_default().trim().to_string(),
        source: "XLA HLO module".into(),
        scheduled: header.contains("is_scheduled=true"),
        partitions: quoted_or_plain(header, "num_partitions").and_then(|v| v.parse().ok()).unwrap_or(1),
        ..OpGraph::default()
    };
    let (mut operands, mut bad_lines, mut first_bad) = (Vec::new(), 0usize, None);
    let mut open: Option<(usize, String)> = None;
    for (n, line) in lines {
        let t = line.trim();
        if let Some((_, computation)) = &open {
            if t == "}" {
                open = None;
                continue;
            }
            if t.is_empty() {
                continue;
            }
            let k = g.computations.len() as u32 - 1;
            match instruction(t, k) {
                Some(l) => {
                    operands.push(l.operands);
                    g.nodes.push(l.node);
                }
                None => {
                    bad_lines += 1;
                    first_bad.get_or_insert_with(|| format!("line {} in {computation}", n + 1));
                }
            }
            continue;
        }
        // A computation's header: `[ENTRY ][%]NAME (params) -> shape {` at the line's start
        // (XLA prints names with or without `%`).
        if t.ends_with('{') && !line.starts_with(char::is_whitespace) && t.len() > 1 {
            let entry = t.starts_with("ENTRY ");
            let name =
                t.trim_start_matches("ENTRY ").split_whitespace().next().unwrap_or_default().trim_start_matches('%');
            if entry {
                g.entry = Some(g.computations.len() as u32);
            }
            g.computations.push(name.to_string());
            open = Some((n + 1, name.to_string()));
        }
    }
    if let Some((line, name)) = open {
        return Err(SourceError::invalid(
            input,
            format!("ends inside computation {name} (begun on line {line}): a truncated HLO module"),
        ));
    }
    let mut warnings = Vec::new();
    if bad_lines > 0 {
        warnings.push(format!(
            "{input}: {bad_lines} line(s) inside computations are not instructions and are left out (first: {})",
            first_bad.unwrap_or_default()
        ));
    }
    let index: HashMap<&str, u32> = g.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i as u32)).collect();
    let mut dangling = 0usize;
    for (user, names) in operands.iter().enumerate() {
        for name in names {
            match index.get(name.as_str()) {
                Some(&from) => g.edges.push((from, user as u32)),
                None => dangling += 1,
            }
        }
    }
    if dangling > 0 {
        warnings.push(format!(
            "{input}: {dangling} operand(s) name no instruction of the module; their edges are left out"
        ));
    }
    g.classify();
    Ok((g, warnings))
}

/// The value of `key=VALUE` in a header (up to the next comma).
fn quoted_or_plain(s: &str, key: &str) -> Option<String> {
    let at = s.find(&format!("{key}="))? + key.len() + 1;
    Some(s[at..].split(',').next().unwrap_or_default().trim().trim_matches('"').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shardings_read_as_xla_writes_them() {
        assert_eq!(parse_sharding("{replicated}"), Strategy::Replicated);
        assert_eq!(parse_sharding("{maximal device=3}"), Strategy::Maximal(3));
        assert_eq!(
            parse_sharding("{devices=[8,1]<=[8]}"),
            Strategy::Tiled { partitions: vec![8, 1], replicated_last: false }
        );
        assert_eq!(
            parse_sharding("{devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}"),
            Strategy::Tiled { partitions: vec![2, 1, 4], replicated_last: true }
        );
        assert_eq!(
            parse_sharding("{{replicated}, {devices=[4]<=[4]}}"),
            Strategy::Tuple(vec![
                Strategy::Replicated,
                Strategy::Tiled { partitions: vec![4], replicated_last: false }
            ])
        );
        assert_eq!(parse_sharding("{manual}"), Strategy::Unknown);
        assert_eq!(parse_sharding("{devices=[x]<=[8]}"), Strategy::Unknown);
    }

    #[test]
    fn instructions_give_operands_namespaces_pairs_and_calls() {
        let text = r#"HloModule jit_step, is_scheduled=true, num_partitions=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

ENTRY %main (p: f32[8,4]) -> (f32[8,4], f32[]) {
  %p = f32[8,4]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}, metadata={op_name="x"}
  %t = f32[8,4]{1,0} tanh(f32[8,4]{1,0} %p), sharding={devices=[4,1]<=[4]}, metadata={op_name="jit(step)/tanh" source_file="a \"b\".py"}
  %cp = f32[8,4]{1,0} collective-permute(%t), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3}}
  %c = f32[] constant(0)
  %r = f32[] reduce(%cp, %c), dimensions={0,1}, to_apply=%add
  ROOT %out = (f32[8,4]{1,0}, f32[]) tuple(%cp, %r)
}
"#;
        let (g, warnings) = parse("t.txt", text).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!((g.name.as_str(), g.scheduled, g.partitions), ("jit_step", true, 4));
        assert_eq!(g.computations, ["add", "main"]);
        assert_eq!(g.entry, Some(1));
        assert_eq!(g.nodes.len(), 9);
        let node = |n: &str| g.nodes.iter().position(|x| x.name == n).unwrap() as u32;
        let t = &g.nodes[node("t") as usize];
        assert_eq!((t.opcode.as_str(), t.shape.as_str(), t.namespace.as_str()), ("tanh", "f32[8,4]", "jit(step)/tanh"));
        assert_eq!(t.class, OpClass::Partitioned);
        assert!(g.edges.contains(&(node("p"), node("t"))) && g.edges.contains(&(node("c"), node("r"))));
        let cp = &g.nodes[node("cp") as usize];
        assert_eq!((cp.pairs.clone(), cp.class), (vec![(0, 1), (1, 2), (2, 3)], OpClass::Communication));
        assert_eq!(g.nodes[node("r") as usize].calls, ["add"]);
        assert_eq!(g.nodes[node("out") as usize].shape, "(f32[8,4], f32[])");
        assert_eq!(plain_shape("(f32[2]{0}, /*index=5*/s32[])"), "(f32[2], s32[])");
        assert_eq!(g.stage_order(), [0, 1, 2, 3]);
    }

    /// XLA also prints names without `%`.
    #[test]
    fn names_without_percent_signs_read_alike() {
        let text = "HloModule m, entry_computation_layout={()->f32[]}\n\nadd.1 {\n  x = f32[] parameter(0)\n  ROOT y = f32[] negate(x)\n}\n\nENTRY main.2 {\n  a = f32[] constant(1)\n  ROOT b = f32[] call(a), to_apply=add.1\n}\n";
        let (g, w) = parse("np.txt", text).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            (g.computations.clone(), g.entry, g.nodes.len(), g.edges.len()),
            (vec!["add.1".to_string(), "main.2".into()], Some(1), 4, 2)
        );
        assert_eq!(g.nodes[3].calls, ["add.1"]);
    }

    #[test]
    fn broken_modules_are_refused_or_repaired_in_counted_lines() {
        let e = parse("x.txt", "Hello\n").unwrap_err().to_string();
        assert!(e.contains("x.txt") && e.contains("HloModule") && !e.contains('\n'), "{e}");
        let e = parse("x.txt", "HloModule m\n\nENTRY %main () -> f32[] {\n  %a = f32[] constant(1)\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("truncated") && e.contains("line 3"), "{e}");
        let text = "HloModule m\nENTRY %main () -> f32[] {\n  garbage here\n  %a = f32[] negate(%nowhere)\n}\n";
        let (g, w) = parse("x.txt", text).unwrap();
        assert_eq!((g.nodes.len(), g.edges.len(), w.len()), (1, 0, 2), "{w:?}");
        assert!(w[0].contains("1 line(s)") && w[0].contains("line 3 in main"), "{w:?}");
    }

    /// A committed recording (`tests/data`, with the script that made it).
    fn fixture(rel: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data").join(rel)
    }

    /// JAX's data-parallel step (8 devices): after sharding propagation every dot over the
    /// batch is cut 8 ways along its first dimension, `[8,1]`; the weights are replicated; after
    /// optimizations the gradients are all-reduced.
    #[test]
    fn a_data_parallel_step_shows_its_dots_partitioned_eight_ways() {
        let dir = "jax-data-parallel/xla_dump/module_0034.jit_train_step";
        let path = fixture(&format!("{dir}.0001.spmd-partitioner.after_shardy-xla.before_spmd-partitioning.txt"));
        let (g, w) = read("dp", &path).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(g.name, "jit_train_step");
        let dots: Vec<_> = g.nodes.iter().filter(|n| n.opcode == "dot").collect();
        let batch: Vec<_> = dots.iter().filter(|n| n.shape.starts_with("f32[128,")).collect();
        assert!(batch.len() >= 5, "{} dots over the batch", batch.len());
        assert!(batch.iter().all(|n| n.strategy.label() == "[8,1]" && n.class == OpClass::Partitioned));
        assert!(batch.iter().all(|n| n.namespace.starts_with("jit(train_step)/")));
        let replicated =
            g.nodes.iter().filter(|n| n.opcode == "parameter" && n.strategy == Strategy::Replicated).count();
        assert_eq!(replicated, 6);
        let (after, w) = read("dp", &fixture(&format!("{dir}.cpu_after_optimizations.txt"))).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert!(after.nodes.iter().any(|n| n.opcode == "all-reduce" && n.class == OpClass::Communication));
        assert!(after.edges.len() > after.nodes.len() / 2);
    }

    /// JAX's 4-stage pipeline: the collective-permutes' pairs give the stages in order.
    #[test]
    fn a_pipeline_gives_its_stages_from_the_permutes_pairs() {
        let path = fixture("jax-cpu-pipeline/xla_dump/module_0008.jit_stage.cpu_after_optimizations.txt");
        let (g, w) = read("pipeline", &path).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert!(g.scheduled && g.partitions == 4);
        assert_eq!(g.stage_order(), [0, 1, 2, 3]);
        assert!(g.nodes.iter().filter(|n| n.opcode.starts_with("collective-permute")).count() >= 4);
    }

    /// The recordings flipped byte by byte and cut short: an operator graph or a one-line
    /// error, never a panic.
    /// A line cut inside its sharding (`sharding={devices=[`) or braces nested without end read
    /// as an unknown strategy, never a recursion without bound (it overflowed the stack).
    #[test]
    fn shardings_cut_short_or_nested_deep_are_unknown() {
        for v in [
            "{devices=[",
            "{{",
            "{",
            "{{devices=[2]0,1}",
            &"{".repeat(100_000),
            &format!("{}{}", "{".repeat(5000), "}".repeat(5000)),
        ] {
            let s = parse_sharding(v);
            assert!(matches!(s, Strategy::Unknown | Strategy::Tuple(_)), "{v:.20}: {s:?}");
        }
        assert_eq!(
            parse_sharding("{{replicated}, {maximal device=1}}"),
            Strategy::Tuple(vec![Strategy::Replicated, Strategy::Maximal(1)])
        );
    }

    #[test]
    fn mutated_modules_never_panic() {
        let mut cases = 0;
        for rel in [
            "jax-cpu-pipeline/xla_dump/module_0008.jit_stage.cpu_after_optimizations.txt",
            "jax-data-parallel/xla_dump/module_0034.jit_train_step.cpu_after_optimizations.txt",
        ] {
            let bytes = std::fs::read(fixture(rel)).unwrap();
            for i in (0..bytes.len()).step_by((bytes.len() / 300).max(1)) {
                for x in [0x01u8, 0x20, 0x80, 0xff] {
                    let mut b = bytes.clone();
                    b[i] ^= x;
                    let r = std::panic::catch_unwind(|| {
                        parse("m", &String::from_utf8_lossy(&b)).map_err(|e| e.to_string())
                    });
                    assert!(r.is_ok(), "{rel}: byte {i} ^ {x:#x} panicked");
                    if let Ok(Err(e)) = r {
                        assert!(!e.contains('\n'), "{e}");
                    }
                    cases += 1;
                }
            }
            for cut in (0..bytes.len()).step_by((bytes.len() / 50).max(1)) {
                let r = std::panic::catch_unwind(|| parse("m", &String::from_utf8_lossy(&bytes[..cut])).is_ok());
                assert!(r.is_ok(), "{rel}: cut at {cut} panicked");
            }
            // One line cut short, at a quarter, half and three quarters of its length (a cut
            // inside a sharding once recursed without bound).
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            for (k, line) in lines.iter().enumerate() {
                for part in [4, 2] {
                    let at = line.char_indices().nth(line.chars().count() / part).map_or(line.len(), |c| c.0);
                    let mut cut: Vec<&str> = lines.clone();
                    cut[k] = &line[..at];
                    let r = std::panic::catch_unwind(|| parse("m", &cut.join("\n")).map_err(|e| e.to_string()));
                    assert!(r.is_ok(), "{rel}: line {k} cut at {at} panicked");
                    cases += 1;
                }
            }
        }
        assert!(cases > 2000, "{cases}");
    }
}
