//! What the commands share: loading an input with a progress bar (and the global `--stages` and
//! `--depth`), picture sizes, the view options and backends, one-line clap errors.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use exaviz_compute::BackendChoice;
use exaviz_views::contract::Entry;

/// An INPUT argument's help: the formats' names from the table of formats.
pub(crate) fn input_help() -> String {
    let names: Vec<&str> = exaviz_formats::FORMATS.iter().map(|f| f.title).collect();
    format!(
        "A trace, profile, topology or store ({}: exaviz --help lists them), or a generator gen:NAME?key=value, e.g. gen:wrf",
        names.join(", ")
    )
}

/// The built-in default input of `exaviz render` when none is given.
pub const DEFAULT_INPUT: &str = "gen:torus-sim?dims=4x4x4x4x4&steps=30&seed=1";

/// The inclusive rank ranges of `--stages`, one per stage.
#[derive(Clone, Debug)]
pub(crate) struct StageRanges(pub(crate) Vec<(u32, u32)>);

/// `--stages`: comma-separated ranks or inclusive rank ranges, one per stage.
pub(crate) fn parse_stages(s: &str) -> Result<StageRanges, String> {
    s.split(',')
        .map(|part| {
            let num = |x: &str| x.trim().parse::<u32>().map_err(|_| format!("'{part}' is not a rank or a range A-B"));
            match part.split_once('-') {
                Some((a, z)) => {
                    let (a, z) = (num(a)?, num(z)?);
                    if a > z { Err(format!("'{part}' ends before it begins")) } else { Ok((a, z)) }
                }
                None => num(part).map(|r| (r, r)),
            }
        })
        .collect::<Result<_, _>>()
        .map(StageRanges)
}

/// The stages given with `--stages`, applied by [`load`] to every training run.
pub(crate) static STAGES: std::sync::OnceLock<Vec<(u32, u32)>> = std::sync::OnceLock::new();

/// The depth given with `--depth`, applied by [`load`] to an HPCToolkit database.
pub(crate) static DEPTH: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// Whether `--strict` was given: a run of profiles with a file that does not read is refused.
pub(crate) static STRICT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
/// `--rank N`: the rank whose execution trace a run of one per rank draws.
pub(crate) static RANK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// `input` with the global options that belong to it: `DB?depth=N` for an HPCToolkit database
/// given `--depth` without a depth of its own (an error for any other input), `RUN?strict=1`
/// for a run's folder of profiles given `--strict` (other inputs are strict already), `RUN?rank=N`
/// for a run of execution traces given `--rank N` (an error for any other input).
pub(crate) fn with_options(input: &str) -> Result<String> {
    let path = input.split_once('?').map_or(input, |(p, _)| p);
    let add = |out: &str, key: &str, value: String| {
        if out.contains('?') { format!("{out}&{key}={value}") } else { format!("{out}?{key}={value}") }
    };
    let has = |key: &str| {
        input.split_once('?').is_some_and(|(_, q)| q.split('&').any(|kv| kv.starts_with(&format!("{key}="))))
    };
    // The input's format, detected once where an option needs it.
    let format = std::cell::OnceCell::new();
    let format_is = |names: &[&str]| {
        let f = format.get_or_init(|| {
            let probe = exaviz_formats::Probe::new(input, std::path::Path::new(path), None);
            exaviz_formats::detect(&probe).map(|f| f.name)
        });
        f.is_some_and(|n| names.contains(&n))
    };
    let mut out = input.to_string();
    if let Some(depth) = DEPTH.get() {
        if !exaviz_formats::hpctoolkit::is_database(std::path::Path::new(path)) {
            anyhow::bail!("{input}: --depth applies to HPCToolkit databases (their call paths' depth)");
        }
        if !input.contains('?') {
            out = add(&out, "depth", depth.to_string());
        }
    }
    if let Some(rank) = RANK.get()
        && !has("rank")
    {
        if !format_is(&["profiles", "chakra"]) {
            anyhow::bail!("{input}: --rank applies to runs of execution traces (a folder of one per rank)");
        }
        out = add(&out, "rank", rank.to_string());
    }
    if STRICT.get() == Some(&true) && !has("strict") && format_is(&["profiles"]) {
        out = add(&out, "strict", "1".into());
    }
    Ok(out)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendArg {
    Auto,
    Gpu,
    Cpu,
}

impl From<BackendArg> for BackendChoice {
    fn from(b: BackendArg) -> Self {
        match b {
            BackendArg::Auto => Self::Auto,
            BackendArg::Gpu => Self::Gpu,
            BackendArg::Cpu => Self::Cpu,
        }
    }
}

/// The options every view command shares: which view, and where it computes. The view's own
/// options come from its entry in the registry (`exaviz render --view V --help` lists them).
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct ViewArgs {
    /// Which view to draw; each has options of its own, listed by `--view V --help`. Without
    /// it, an input the ring view cannot draw gets the view that can (an HLO module strategy,
    /// a training run marey, a fat tree fattree, a trace timeline), said in one line.
    #[arg(long, default_value = exaviz_views::REGISTRY[0].name, value_parser = view_names())]
    pub(crate) view: String,
    /// Compute and render path: a GPU adapter if any (else the CPU, with a warning), a GPU or a clear error, or the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) backend: BackendArg,
    /// The view's options as given, one word each (`--mix`, `alpha`), read after parsing.
    #[arg(skip)]
    pub(crate) options: Vec<String>,
    /// Whether `--view` was given on the command line (else the default may give way to a view
    /// that can draw the input, [`ViewArgs::suit`]).
    #[arg(skip)]
    pub(crate) named: bool,
    /// The run the view compares with (`--against B`), once [`open_against`] has opened it;
    /// every view built from these options gets it ([`ViewArgs::built`]).
    #[arg(skip)]
    pub(crate) against: Option<Arc<exaviz_model::dataset::Dataset>>,
}

impl ViewArgs {
    /// The view's entry in the registry (the parser accepts no other name).
    pub(crate) fn entry(&self) -> &'static Entry {
        Entry::find(&self.view).unwrap_or(&exaviz_views::REGISTRY[0])
    }

    /// Without `--view` (and without a view's options), where the default view cannot draw
    /// `dataset`, the first view that can, in the order a user expects from the input: an
    /// operator graph's strategies, a training run's Marey graph, a fat tree, a trace's
    /// timeline, then the registry's order. Says so in one line on stderr.
    pub(crate) fn suit(&mut self, dataset: &exaviz_model::dataset::Dataset) {
        if self.named
            || !self.options.is_empty()
            || self.entry().parse::<&str>(&[]).is_ok_and(|b| b.view.check(dataset).is_ok())
        {
            return;
        }
        let preferred = ["strategy", "marey", "fattree", "timeline"];
        let registry = exaviz_views::REGISTRY.iter().map(|e| e.name);
        let fits = preferred.into_iter().chain(registry).find(|name| {
            Entry::find(name).and_then(|e| e.parse::<&str>(&[]).ok()).is_some_and(|b| b.view.check(dataset).is_ok())
        });
        if let Some(name) = fits {
            eprintln!("no --view given: drawing the {name} view (the {} view cannot draw this input)", self.view);
            self.view = name.to_string();
        }
    }

    /// The view and the selection its options ask for; a view that compares with another run
    /// gets it where [`open_against`] opened it.
    pub(crate) fn built(&self) -> Result<exaviz_views::contract::Built> {
        let built = self.entry().parse(&self.options).map_err(|e| anyhow::anyhow!("{}", clap_line(&e)))?;
        if let Some(b) = &self.against {
            built.view.compare_with(b.clone());
        }
        Ok(built)
    }

    /// The view's options given in `matches` (parsed with [`augment`]), as words.
    pub(crate) fn read_options(&mut self, matches: &clap::ArgMatches) {
        self.named = matches.value_source("view") == Some(clap::parser::ValueSource::CommandLine);
        self.options.clear();
        for arg in self.entry().command().get_arguments() {
            let (id, Some(long)) = (arg.get_id().as_str(), arg.get_long()) else { continue };
            if matches.value_source(id) != Some(clap::parser::ValueSource::CommandLine) {
                continue;
            }
            self.options.push(format!("--{long}"));
            if arg.get_action().takes_values() {
                let raw = matches.get_raw(id).into_iter().flatten();
                self.options.extend(raw.map(|v| v.to_string_lossy().into_owned()));
            }
        }
    }
}

/// The registry's views as the values of `--view`, with their help.
pub(crate) fn view_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        exaviz_views::REGISTRY.iter().map(|e| clap::builder::PossibleValue::new(e.name).help(e.about)),
    )
}

/// A clap error as one line (the engine's wording, shared with Python's errors).
pub(crate) fn clap_line(e: &clap::Error) -> String {
    exaviz_views::contract::error_line(e)
}

/// Largest side and area accepted for a picture.
pub(crate) const MAX_SIDE: u32 = 32_768;

pub(crate) const MAX_PIXELS: u64 = 1 << 28;

pub(crate) fn parse_size(s: &str) -> Result<(u32, u32)> {
    let malformed = || anyhow::anyhow!("size '{s}' is not WIDTHxHEIGHT in whole pixels, e.g. 1024x768");
    let (w, h) = s.split_once('x').ok_or_else(malformed)?;
    let (Ok(w), Ok(h)) = (w.trim().parse::<u64>(), h.trim().parse::<u64>()) else { return Err(malformed()) };
    let side = |v: u64| (16..=u64::from(MAX_SIDE)).contains(&v);
    if !side(w) || !side(h) {
        bail!("size '{s}' is out of range: each side must be 16 to {MAX_SIDE} pixels");
    }
    let (w, h) = (w as u32, h as u32);
    if u64::from(w) * u64::from(h) > MAX_PIXELS {
        bail!("size '{s}' is out of range: more than {MAX_PIXELS} pixels");
    }
    Ok((w, h))
}

pub(crate) fn spinner(msg: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// Runs `work` with a spinner that turns into a progress bar (`template`) once `work` reports
/// `(done, total)`.
pub(crate) fn with_progress<T>(msg: &str, template: &str, work: impl FnOnce(&dyn Fn(u64, u64)) -> T) -> T {
    let pb = spinner(msg);
    let style = indicatif::ProgressStyle::with_template(template).map(|s| s.progress_chars("=> "));
    let progress = |done: u64, total: u64| {
        if pb.length().is_none()
            && let Ok(style) = &style
        {
            pb.set_style(style.clone());
        }
        pb.set_length(total);
        pb.set_position(done);
    };
    let out = work(&progress);
    pb.finish_and_clear();
    out
}

/// Loads an input with a spinner, turned into a progress bar (bytes) by formats that report it.
pub(crate) fn load(input: &str) -> Result<exaviz_model::dataset::Dataset> {
    let template = "{msg} [{bar:32}] {bytes}/{total_bytes} ({eta} left)";
    if exaviz_remote::is_remote(input) {
        let pb = spinner(&format!("opening {input}"));
        let d = exaviz_remote::open(input, &|bytes, _| pb.set_message(format!("opening {input}: {} MB", bytes >> 20)));
        pb.finish_and_clear();
        return Ok(d?);
    }
    let opened = with_options(input)?;
    let mut d =
        with_progress(&format!("loading {input}"), template, |p| exaviz_datasets::open_with_progress(&opened, p))?;
    if let Some(ranges) = STAGES.get() {
        let t = d.training.as_ref().with_context(|| format!("{input}: --stages: not a training run"))?;
        let t = t.restaged(ranges).map_err(|e| anyhow::anyhow!("{input}: {e}"))?;
        d.training = Some(Arc::new(t));
    }
    // What the reader repaired, one counted line per kind, as the trusted peers repair it.
    for w in &d.warnings {
        eprintln!("warning: {w}");
    }
    Ok(d)
}

/// Opens the run the view of `args` compares with (`--against B`, the diff view) into `args`,
/// so that every view built from them compares with it; nothing for other views.
pub(crate) fn open_against(args: &mut ViewArgs) -> Result<()> {
    if let Some(b) = args.built()?.view.against() {
        args.against = Some(Arc::new(load(b)?));
    }
    Ok(())
}

/// A time window of a trace on the command line (`exaviz summary`, `exaviz critical-path`).
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct WindowArgs {
    /// Start of the window, seconds since the trace's start (default: the start).
    #[arg(long)]
    pub from: Option<f64>,
    /// End of the window, seconds since the trace's start (default: the end).
    #[arg(long)]
    pub to: Option<f64>,
}

/// Reads and checks a `wall.toml`; an error is one line naming the file and the field.
pub(crate) fn read_wall(path: &std::path::Path) -> Result<exaviz_render::wall::Wall> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let spec: exaviz_render::wall::WallSpec = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let at = line.map_or(String::new(), |l| format!("line {l}: "));
        anyhow::anyhow!("{}: {at}{}", path.display(), e.message().trim().replace('\n', " "))
    })?;
    exaviz_render::wall::Wall::new(spec).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}
