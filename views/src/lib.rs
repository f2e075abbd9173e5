//! The views of exaviz: from a dataset to a [`exaviz_render::Scene`], running compute stages on
//! the backend. One folder per `--view` name, each a [`View`] through [`contract`] and one line
//! in [`REGISTRY`]; the floor they share (time windows, plots, legends, the torus views'
//! helpers, kept results) beside them. A view imports the contract and that floor, never
//! another view, but for the composite views (diff, linked, mpi).
//!
//! Views read the model, the analyses and the renderer; they know no window (the `exaviz`
//! binary owns it) and no file format (sources hand them a dataset).

pub mod contract;
pub mod density;
pub mod error;
#[cfg(test)]
mod example;
pub(crate) mod kept;
pub mod labels;
pub mod legend;
pub mod options;
pub mod pairs;
pub mod plot;
pub mod rows;
pub mod run;
pub mod search;
pub mod torus;
pub mod trace;

pub mod chord;
pub mod diff;
pub mod fattree;
pub mod linked;
pub mod marey;
pub mod matrix;
pub mod mds;
pub mod mpi;
pub mod parcoords;
pub mod radviz;
pub mod ring;
pub mod sendrecv;
pub mod steps;
pub mod strategy;
pub mod themeriver;
pub mod timeline;
pub mod topology;
pub mod training;

pub use contract::{Class, Entry, Frame, Pick, Prepared, View};

/// Every view, in the order `--help` and the window list them: a new view is its folder and
/// one line here (its name and description come from its [`Class`]).
pub const REGISTRY: &[Entry] = &[
    Entry::of::<ring::RingView>(),
    Entry::of::<timeline::TimelineView>(),
    Entry::of::<matrix::MatrixView>(),
    Entry::of::<chord::ChordView>(),
    Entry::of::<sendrecv::SendRecvView>(),
    Entry::of::<mpi::MpiLinkedView>(),
    Entry::of::<mds::MdsView>(),
    Entry::of::<radviz::RadvizView>(),
    Entry::of::<parcoords::ParcoordsView>(),
    Entry::of::<themeriver::ThemeRiverView>(),
    Entry::of::<linked::LinkedView>(),
    Entry::of::<fattree::FatTreeView>(),
    Entry::of::<marey::MareyView>(),
    Entry::of::<training::TrainingView>(),
    Entry::of::<strategy::StrategyView>(),
    Entry::of::<topology::TopologyView>(),
    Entry::of::<diff::DiffView>(),
    Entry::of::<steps::StepsView>(),
];

pub use crate::error::ViewError;

/// Dark background shared by the views (viridis' bright end stands out on it).
pub const BACKGROUND: [f32; 3] = [0.067, 0.075, 0.094];
pub const TEXT: [f32; 4] = [0.92, 0.92, 0.95, 1.0];
pub const TEXT_DIM: [f32; 4] = [0.65, 0.66, 0.72, 1.0];

/// A time slice `[from, to)` must not be empty.
pub(crate) fn check_slice(slice: Option<(u64, u64)>) -> Result<(), ViewError> {
    match slice.filter(|(from, to)| from >= to) {
        Some((from, to)) => {
            Err(ViewError::Unsupported(format!("time slice {from}:{to} is empty (the start must be below the end)")))
        }
        None => Ok(()),
    }
}

/// A dataset's name as titles show it: a generator spec as given, a file by its name (an OTF2
/// anchor with its archive's folder: `ping-pong-otf2/traces.otf2`), several files by the first
/// and how many more.
pub fn title_name(dataset: &exaviz_model::dataset::Dataset) -> String {
    short_name(&dataset.name)
}

fn short_name(name: &str) -> String {
    // A generator's output says so: its name, "simulated", and the parameters given.
    if let Some(generator) = name.strip_prefix("gen:") {
        let (base, query) = generator.split_once('?').unwrap_or((generator, ""));
        let params: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
        return match params.is_empty() {
            true => format!("simulated {base}"),
            false => format!("simulated {base} [{}]", params.join(", ")),
        };
    }
    let parts: Vec<&str> = name.split(',').filter(|p| !p.is_empty()).collect();
    if parts.len() > 1 {
        return format!("{} and {} more", short_name(parts[0]), parts.len() - 1);
    }
    let path = std::path::Path::new(name.trim_end_matches('/'));
    let file = path.file_name().map_or_else(|| name.to_string(), |f| f.to_string_lossy().into_owned());
    match path.parent().and_then(|p| p.file_name()) {
        Some(parent) if file.ends_with(".otf2") => format!("{}/{file}", parent.to_string_lossy()),
        _ => file,
    }
}

/// What the dataset's link counters count, for legends ("packets"; "traffic" when unnamed).
pub(crate) fn traffic_unit(dataset: &exaviz_model::dataset::Dataset) -> &str {
    if dataset.link_counter_unit.is_empty() { "traffic" } else { &dataset.link_counter_unit }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_model::selection::Selection;

    #[test]
    fn titles_name_files_not_paths() {
        assert_eq!(short_name("/data/run/ping-pong-otf2/traces.otf2"), "ping-pong-otf2/traces.otf2");
        assert_eq!(
            short_name("/tmp/x/rank0.pt.trace.json.gz,/tmp/x/rank1.pt.trace.json.gz"),
            "rank0.pt.trace.json.gz and 1 more"
        );
        assert_eq!(short_name("/data/profiles/"), "profiles");
        assert_eq!(short_name("gen:fd4?iterations=3&seed=2"), "simulated fd4 [iterations=3, seed=2]");
        assert_eq!(short_name("gen:wrf"), "simulated wrf");
        assert_eq!(short_name("report.sqlite"), "report.sqlite");
    }

    #[test]
    fn the_registry_names_each_view_once() {
        let mut names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
    }

    #[test]
    fn each_entry_parses_its_own_options_into_its_view() {
        for entry in REGISTRY {
            entry.command().debug_assert();
            let built = entry.parse::<&str>(&[]).unwrap_or_else(|e| panic!("{} defaults: {e}", entry.name));
            assert_eq!(built.view.name(), entry.name);
            assert_eq!(built.selection, Selection::default(), "{} selects nothing by default", entry.name);
        }
        let timeline = Entry::find("timeline").expect("listed");
        let built = timeline.parse(&["--pair", "3,4", "--from", "0.5", "--to", "1.5"]).expect("valid");
        assert_eq!((built.selection.pair, built.selection.window_s), (Some((3, 4)), Some((0.5, 1.5))));
        assert!(timeline.parse(&["--bundle", "blocks"]).is_err(), "blocks bundle the ring only");
        assert!(timeline.parse(&["--beta", "1.5"]).is_err(), "beta is from 0 to 1");
        assert!(Entry::find("mds").expect("listed").parse(&["--hops", "0"]).is_err());
        let ring = Entry::find("ring").expect("listed").parse(&["--node", "5", "--track", "2"]).expect("valid");
        assert_eq!((ring.selection.node, ring.selection.track), (Some(5), Some(2)));
    }
}
