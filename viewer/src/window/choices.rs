//! The window panel's view switcher and options, from the views' own command-line options (the
//! `Args` struct of each registry entry): the values and help the panel offers are those
//! `exaviz render --view V --help` prints, and a view's options are parsed by that view's parser.

use anyhow::{Result, anyhow};
use exaviz_model::dataset::Dataset;
use exaviz_views::REGISTRY;
use exaviz_views::contract::Entry;

use super::panel::{Choice, ViewEntry};
use crate::common::ViewArgs;

/// The values the panel offers for `--message-opacity` (a number, not a list).
const OPACITIES: [&str; 5] = ["0", "0.3", "0.6", "0.8", "1"];

/// The value `args` gives option `long`, else its default.
fn current(args: &ViewArgs, arg: &clap::Arg) -> Option<String> {
    let long = format!("--{}", arg.get_long()?);
    match args.options.iter().position(|o| *o == long) {
        Some(k) => args.options.get(k + 1).cloned(),
        None => arg.get_default_values().first().map(|v| v.to_string_lossy().into_owned()),
    }
}

/// `args` with option `long` (`--mix`) set to `value`, checked by the view's parser.
fn set(args: &ViewArgs, long: &str, value: &str) -> Result<ViewArgs> {
    let mut next = args.clone();
    match next.options.iter().position(|o| o == long) {
        Some(k) if k + 1 < next.options.len() => next.options[k + 1] = value.to_string(),
        _ => next.options.extend([long.to_string(), value.to_string()]),
    }
    next.built()?;
    Ok(next)
}

/// The panel's first value of `--namespaces`: the most common namespaces, as without the option.
const MOST_COMMON: &str = "(the most common)";

/// The options of the current view the panel can change (those with a list of values), with
/// their values and help; the strategy view's namespace selector lists the dataset's most common
/// namespaces (choosing one gives it alone a disc).
pub(crate) fn choices(args: &ViewArgs, dataset: &Dataset) -> Vec<Choice> {
    let command = args.entry().command();
    let mut out = Vec::new();
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if !arg.get_action().takes_values() {
            continue;
        }
        let values: Vec<(String, String)> = if long == "message-opacity" {
            OPACITIES.iter().map(|v| ((*v).to_string(), String::new())).collect()
        } else if long == "namespaces" {
            let Some(g) = dataset.opgraph.as_deref() else { continue };
            let spaces = exaviz_views::strategy::namespaces(g, |_| true);
            std::iter::once(MOST_COMMON.to_string())
                .chain(spaces.iter().map(|ns| ns.split_once('/').map_or(ns.as_str(), |(_, r)| r).to_string()))
                .map(|v| (v, String::new()))
                .collect()
        } else {
            arg.get_possible_values()
                .iter()
                .map(|p| (p.get_name().to_string(), p.get_help().map(ToString::to_string).unwrap_or_default()))
                .collect()
        };
        if values.len() < 2 {
            continue;
        }
        let now = current(args, arg);
        let current = values.iter().position(|v| Some(&v.0) == now.as_ref()).unwrap_or(0);
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        out.push(Choice { flag: format!("--{long}"), help, values, current });
    }
    out
}

/// `args` with the option `label` (`--value`, ...) set to its `index`-th offered value, and
/// that value's name.
pub(crate) fn with_choice(args: &ViewArgs, dataset: &Dataset, label: &str, index: usize) -> Result<(ViewArgs, String)> {
    let c = choices(args, dataset)
        .into_iter()
        .find(|c| c.flag == label)
        .ok_or_else(|| anyhow!("{label} is not an option of the {} view", args.view))?;
    let (value, _) = c.values.get(index).ok_or_else(|| anyhow!("{label}: no value number {index}"))?;
    if value == MOST_COMMON {
        let mut next = args.clone();
        if let Some(k) = next.options.iter().position(|o| o == label) {
            next.options.drain(k..(k + 2).min(next.options.len()));
        }
        return Ok((next, value.clone()));
    }
    Ok((set(args, label, value)?, value.clone()))
}

/// Every view, with its `--help` line and, where the dataset cannot show it, why.
pub(crate) fn views(dataset: &Dataset) -> Vec<ViewEntry> {
    REGISTRY
        .iter()
        .map(|entry| {
            let unavailable = match entry.parse::<&str>(&[]) {
                Ok(built) => built.view.check(dataset).err().map(|e| e.to_string()),
                Err(e) => Some(crate::common::clap_line(&e)),
            };
            ViewEntry { name: entry.name.to_string(), help: entry.about.to_string(), unavailable }
        })
        .collect()
}

/// `args` for the view `name`: the options given that it takes (with the same value) kept, the
/// others left out.
pub(crate) fn switched(args: &ViewArgs, name: &str) -> Result<ViewArgs> {
    let entry = Entry::find(name).ok_or_else(|| anyhow!("no view {name}"))?;
    let mut next = ViewArgs {
        view: entry.name.to_string(),
        backend: args.backend,
        options: Vec::new(),
        named: true,
        against: args.against.clone(),
    };
    let command = entry.command();
    let mut k = 0;
    while k < args.options.len() {
        let long = &args.options[k];
        let arg = command.get_arguments().find(|a| a.get_long().is_some_and(|l| format!("--{l}") == *long));
        let takes = arg.is_some_and(|a| a.get_action().takes_values());
        let words = &args.options[k..(k + 1 + usize::from(takes)).min(args.options.len())];
        k += words.len();
        if arg.is_some() {
            let mut tried = next.clone();
            tried.options.extend(words.iter().cloned());
            if tried.built().is_ok() {
                next = tried;
            }
        }
    }
    next.built()?;
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(view: &str, options: &[&str]) -> ViewArgs {
        ViewArgs {
            view: view.to_string(),
            backend: crate::common::BackendArg::Cpu,
            options: options.iter().map(ToString::to_string).collect(),
            named: true,
            against: None,
        }
    }

    /// The strategy view's namespace selector lists the module's most common namespaces; one
    /// chosen gives it alone a disc, the first value goes back to the most common.
    #[test]
    fn the_namespace_selector_lists_the_modules_namespaces() {
        let module = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/data/jax-data-parallel/xla_dump/module_0034.jit_train_step.0001.spmd-partitioner.after_shardy-xla.before_spmd-partitioning.txt"
        );
        let d = exaviz_datasets::open(module).expect("the module opens");
        let strategy = args("strategy", &[]);
        let c = choices(&strategy, &d).into_iter().find(|c| c.flag == "--namespaces").expect("a namespace selector");
        let names: Vec<&str> = c.values.iter().map(|v| v.0.as_str()).collect();
        assert_eq!(names[..3], [MOST_COMMON, "transpose(jvp())", "jvp()"]);
        let (one, name) = with_choice(&strategy, &d, "--namespaces", 2).expect("a namespace");
        assert_eq!(
            (one.options.as_slice(), name.as_str()),
            (&["--namespaces".to_string(), "jvp()".into()][..], "jvp()")
        );
        assert_eq!(choices(&one, &d).into_iter().find(|c| c.flag == "--namespaces").unwrap().current, 2);
        let (back, _) = with_choice(&one, &d, "--namespaces", 0).expect("the most common");
        assert!(back.options.is_empty(), "{:?}", back.options);
        assert!(choices(&strategy, &Dataset::default()).iter().all(|c| c.flag != "--namespaces"), "no module, no list");
    }

    #[test]
    fn options_come_from_the_view_and_fit_it() {
        let matrix = args("matrix", &[]);
        let flags: Vec<String> = choices(&matrix, &Dataset::default()).iter().map(|c| c.flag.clone()).collect();
        assert_eq!(flags, ["--value", "--colormap", "--rows"]);
        let value = &choices(&matrix, &Dataset::default())[0];
        let names: Vec<&str> = value.values.iter().map(|v| v.0.as_str()).collect();
        assert_eq!(names, ["messages", "bytes", "bandwidth"]);
        let (bytes, name) =
            with_choice(&matrix, &Dataset::default(), "--value", 1).expect("bytes is a value of --value");
        assert_eq!((bytes.options.as_slice(), name.as_str()), (&["--value".to_string(), "bytes".into()][..], "bytes"));
        assert_eq!(choices(&bytes, &Dataset::default())[0].current, 1, "the panel shows the value chosen");
        assert!(with_choice(&matrix, &Dataset::default(), "--bundle", 0).is_err(), "the matrix has no --bundle");
        // The timeline's --bundle offers only what the timeline takes (no blocks).
        let timeline = args("timeline", &[]);
        let bundle = choices(&timeline, &Dataset::default())
            .into_iter()
            .find(|c| c.flag == "--bundle")
            .expect("the timeline bundles");
        let names: Vec<&str> = bundle.values.iter().map(|v| v.0.as_str()).collect();
        assert_eq!(names, ["none", "kde", "hierarchical", "grid"]);
        assert!(!bundle.values[3].1.is_empty(), "each value has its --help line");
        let opacity = choices(&timeline, &Dataset::default())
            .into_iter()
            .find(|c| c.flag == "--message-opacity")
            .expect("opacity");
        assert_eq!(opacity.values[opacity.current].0, "0.6", "the default is shown");
    }

    #[test]
    fn switching_keeps_what_fits_and_drops_what_does_not() {
        let timeline = args("timeline", &["--bundle", "grid", "--states", "stacked", "--pair", "1,2"]);
        let ring = switched(&timeline, "ring").expect("the ring takes its defaults");
        assert!(ring.options.is_empty(), "grid bundling, states and pairs are not the ring's: {:?}", ring.options);
        let mpi = switched(&timeline, "mpi").expect("mpi looks as the timeline does");
        assert_eq!(mpi.options, timeline.options);
        let matrix = switched(&args("ring", &["--colormap", "cividis", "--no-traffic-marks"]), "matrix").unwrap();
        assert_eq!(matrix.options, ["--colormap", "cividis"], "the colour map is kept");
        assert!(switched(&timeline, "nope").is_err());
    }

    #[test]
    fn views_the_dataset_cannot_show_say_why() {
        let dataset = exaviz_datasets::open("gen:wrf?iterations=2").expect("the generator runs");
        let entries = views(&dataset);
        let ring = entries.iter().find(|v| v.name == "ring").expect("the ring is listed");
        assert!(ring.unavailable.is_some(), "an MPI trace has no torus to draw");
        let timeline = entries.iter().find(|v| v.name == "timeline").expect("the timeline is listed");
        assert!(timeline.unavailable.is_none() && timeline.help.contains("processes"), "{}", timeline.help);
        assert_eq!(entries.len(), REGISTRY.len());
    }
}
