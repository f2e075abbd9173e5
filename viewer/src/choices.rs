//! The window panel's view switcher and options, from the command line's own definitions: the
//! views and option values are clap's value enums, with the names and help `--help` prints,
//! and an option is offered for a view only where `check_view_args` accepts it there.

use anyhow::{Result, anyhow};
use clap::{Args, ValueEnum};
use exaviz_engine::model::Dataset;

use crate::panel::{Choice, ViewEntry};
use crate::{
    BundleArg, ColourArg, MapArg, MixArg, OrderArg, ScopeArg, StatesArg, ValueArg, ViewArgs, ViewKind, check_view_args,
};

/// The options the panel can change, by long flag name.
const FLAGS: &[&str] = &["value", "colormap", "order", "color", "bundle", "mix", "states", "message-opacity", "scope"];

/// The values the panel offers for `--message-opacity`.
const OPACITIES: [&str; 5] = ["0", "0.3", "0.6", "0.8", "1"];

/// The name clap gives a value.
fn name_of<T: ValueEnum>(v: &T) -> String {
    v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
}

/// The value of `flag` in `args`, as clap names it.
fn get(args: &ViewArgs, flag: &str) -> Option<String> {
    Some(match flag {
        "value" => name_of(&args.value),
        "colormap" => name_of(&args.colormap),
        "order" => name_of(&args.order),
        "color" => name_of(&args.color),
        "bundle" => name_of(&args.bundle),
        "mix" => name_of(&args.mix.unwrap_or(match args.view {
            ViewKind::Chord | ViewKind::Sendrecv => MixArg::Additive,
            _ => MixArg::Alpha,
        })),
        "scope" => name_of(&args.scope),
        "states" => name_of(&args.states),
        "message-opacity" => args.message_opacity.to_string(),
        _ => return None,
    })
}

/// `args` with `flag` set to `value`.
fn set(args: &ViewArgs, flag: &str, value: &str) -> Result<ViewArgs> {
    let mut a = args.clone();
    let bad = |e: String| anyhow!("--{flag} {value}: {e}");
    match flag {
        "value" => a.value = ValueArg::from_str(value, false).map_err(bad)?,
        "colormap" => a.colormap = MapArg::from_str(value, false).map_err(bad)?,
        "order" => a.order = OrderArg::from_str(value, false).map_err(bad)?,
        "color" => a.color = ColourArg::from_str(value, false).map_err(bad)?,
        "bundle" => a.bundle = BundleArg::from_str(value, false).map_err(bad)?,
        "mix" => a.mix = Some(MixArg::from_str(value, false).map_err(bad)?),
        "scope" => a.scope = ScopeArg::from_str(value, false).map_err(bad)?,
        "states" => a.states = StatesArg::from_str(value, false).map_err(bad)?,
        "message-opacity" => a.message_opacity = crate::parse_opacity(value).map_err(bad)?,
        _ => return Err(anyhow!("--{flag} cannot be changed in the window")),
    }
    Ok(a)
}

/// Which views an option changes (`check_view_args` refuses only some of the others).
fn applies(flag: &str, view: ViewKind) -> bool {
    use ViewKind::*;
    match flag {
        "value" => matches!(view, Matrix),
        "colormap" => matches!(view, Ring | Matrix | Mds | Radviz | Parcoords | Linked | Mpi),
        "order" | "color" => matches!(view, Ring | Linked),
        "bundle" => matches!(view, Ring | Linked | Timeline | Mpi),
        "mix" => matches!(view, Timeline | Chord | Sendrecv | Mpi),
        "states" | "message-opacity" => matches!(view, Timeline | Mpi),
        "scope" => matches!(view, Mds),
        _ => false,
    }
}

/// The options of the current view with their values and help.
pub(crate) fn choices(args: &ViewArgs) -> Vec<Choice> {
    let command = ViewArgs::augment_args(clap::Command::new("exaviz"));
    let mut out = Vec::new();
    for (flag, label) in
        FLAGS.iter().zip(["--value", "--colormap", "--order", "--color", "--bundle", "--mix", "--scope"])
    {
        if !applies(flag, args.view) {
            continue;
        }
        let Some(arg) = command.get_arguments().find(|a| a.get_long() == Some(flag)) else { continue };
        let Some(current) = get(args, flag) else { continue };
        let offered: Vec<(String, String)> = if *flag == "message-opacity" {
            OPACITIES.iter().map(|v| ((*v).to_string(), String::new())).collect()
        } else {
            let values = arg.get_possible_values();
            values
                .iter()
                .map(|p| (p.get_name().to_string(), p.get_help().map(ToString::to_string).unwrap_or_default()))
                .collect()
        };
        let values: Vec<(String, String)> = offered
            .into_iter()
            .filter(|(name, _)| set(args, flag, name).is_ok_and(|a| check_view_args(&a).is_ok()))
            .collect();
        if values.len() < 2 {
            continue;
        }
        let current = values.iter().position(|v| v.0 == current).unwrap_or(0);
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        out.push(Choice { flag: label, help, values, current });
    }
    out
}

/// `args` with the option `label` (`--value`, ...) set to its `index`-th offered value, and
/// that value's name.
pub(crate) fn with_choice(args: &ViewArgs, label: &str, index: usize) -> Result<(ViewArgs, String)> {
    let c = choices(args)
        .into_iter()
        .find(|c| c.flag == label)
        .ok_or_else(|| anyhow!("{label} is not an option of this view"))?;
    let (value, _) = c.values.get(index).ok_or_else(|| anyhow!("{label}: no value number {index}"))?;
    let next = set(args, label.trim_start_matches("--"), value)?;
    check_view_args(&next)?;
    Ok((next, value.clone()))
}

/// Every view, with its `--help` line and, where the dataset cannot show it, why.
pub(crate) fn views(dataset: &Dataset) -> Vec<ViewEntry> {
    ViewKind::value_variants()
        .iter()
        .map(|kind| {
            let p = kind.to_possible_value();
            let name = p.as_ref().map(|p| p.get_name().to_string()).unwrap_or_default();
            let help = p.as_ref().and_then(|p| p.get_help()).map(ToString::to_string).unwrap_or_default();
            let unavailable = crate::make_view(&default_args(*kind)).check(dataset).err().map(|e| e.to_string());
            ViewEntry { name, help, unavailable }
        })
        .collect()
}

/// The command line's defaults for `kind`.
fn default_args(kind: ViewKind) -> ViewArgs {
    #[derive(clap::Parser)]
    struct Only {
        #[command(flatten)]
        view: ViewArgs,
    }
    let name = name_of(&kind);
    <Only as clap::Parser>::try_parse_from(["exaviz", "--view", name.as_str()])
        .map(|o| o.view)
        .unwrap_or_else(|e| unreachable!("the defaults of --view {name} parse: {e}"))
}

/// `args` for another view: the options that fit it kept, the others back to their defaults.
pub(crate) fn switched(args: &ViewArgs, kind: ViewKind) -> Result<ViewArgs> {
    let mut next = args.clone();
    next.view = kind;
    if check_view_args(&next).is_ok() {
        return Ok(next);
    }
    let mut fresh = default_args(kind);
    fresh.colormap = args.colormap;
    fresh.backend = args.backend;
    fresh.from = args.from;
    fresh.to = args.to;
    if check_view_args(&fresh).is_err() {
        (fresh.from, fresh.to) = (None, None);
    }
    check_view_args(&fresh)?;
    Ok(fresh)
}

/// The name `--view` gives a view.
pub(crate) fn name(kind: ViewKind) -> String {
    name_of(&kind)
}

/// The view named `name`.
pub(crate) fn kind(name: &str) -> Result<ViewKind> {
    ViewKind::from_str(name, false).map_err(|e| anyhow!("no view {name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_come_from_the_command_line_and_fit_the_view() {
        let matrix = default_args(ViewKind::Matrix);
        let flags: Vec<&str> = choices(&matrix).iter().map(|c| c.flag).collect();
        assert_eq!(flags, ["--value", "--colormap"]);
        let value = &choices(&matrix)[0];
        let names: Vec<&str> = value.values.iter().map(|v| v.0.as_str()).collect();
        assert_eq!(names, ["messages", "bytes", "bandwidth"]);
        let (bytes, _) = with_choice(&matrix, "--value", 1).expect("bytes is a value of --value");
        assert_eq!(bytes.value, ValueArg::Bytes);
        assert!(with_choice(&matrix, "--bundle", 0).is_err(), "the matrix has no --bundle");
        // The timeline's --bundle offers only what the timeline takes (no blocks).
        let timeline = default_args(ViewKind::Timeline);
        let bundle = choices(&timeline).into_iter().find(|c| c.flag == "--bundle").expect("the timeline bundles");
        let names: Vec<&str> = bundle.values.iter().map(|v| v.0.as_str()).collect();
        assert_eq!(names, ["none", "kde", "hierarchical", "grid"]);
        assert!(!bundle.values[3].1.is_empty(), "each value has its --help line");
    }

    #[test]
    fn switching_keeps_what_fits_and_drops_what_does_not() {
        let mut timeline = default_args(ViewKind::Timeline);
        timeline.bundle = BundleArg::Grid;
        timeline.colormap = MapArg::Cividis;
        let ring = switched(&timeline, ViewKind::Ring).expect("the ring takes the defaults");
        assert_eq!(ring.bundle, BundleArg::None, "grid bundling is the timeline's only");
        assert_eq!(ring.colormap, MapArg::Cividis, "the colour map is kept");
        let mpi = switched(&timeline, ViewKind::Mpi).expect("mpi bundles as the timeline does");
        assert_eq!(mpi.bundle, BundleArg::Grid);
        assert!(kind("nope").is_err());
        assert_eq!(kind("sendrecv").ok(), Some(ViewKind::Sendrecv));
    }

    #[test]
    fn views_the_dataset_cannot_show_say_why() {
        let dataset = exaviz_datasets::open("gen:wrf?iterations=2").expect("the generator runs");
        let entries = views(&dataset);
        let ring = entries.iter().find(|v| v.name == "ring").expect("the ring is listed");
        assert!(ring.unavailable.is_some(), "an MPI trace has no torus to draw");
        let timeline = entries.iter().find(|v| v.name == "timeline").expect("the timeline is listed");
        assert!(timeline.unavailable.is_none() && timeline.help.contains("processes"), "{}", timeline.help);
    }
}
