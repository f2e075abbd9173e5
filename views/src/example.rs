//! The example view of `docs/architecture.md` ("Views: a folder each"), compiled and drawn by its test.

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use exaviz_render::{Anchor, Scene};

use crate::contract::{Class, Drawn, Frame, NoPick, Prepared, View};
use crate::{BACKGROUND, TEXT, ViewError};

/// `--view count`: how many messages the trace holds, in words.
pub struct Count;

#[derive(clap::Args, Clone, Debug)]
pub struct CountArgs {}

impl Class for Count {
    const NAME: &'static str = "count";
    const ABOUT: &'static str = "The number of messages, in words.";
    type Args = CountArgs;

    fn new(_: &CountArgs) -> Self {
        Count
    }
}

impl View for Count {
    fn depends_on(&self) -> Parts {
        Parts::NONE
    }

    fn prepare(&self, d: &Dataset, _: &Selection, f: Frame, _: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let mut scene = Scene::new(f.width, f.height, BACKGROUND);
        let text = format!("{} messages", d.trace.messages.source.len());
        scene.text(&text, [16.0, 32.0], 15.0, Anchor::Left, TEXT);
        Ok(Box::new(Drawn { scene, picker: NoPick }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Entry, render_view};

    /// The example registers as one line would, parses its (no) options and draws its words.
    #[test]
    fn the_readme_example_registers_and_draws() {
        let entry = Entry::of::<Count>();
        assert_eq!((entry.name, entry.about), ("count", "The number of messages, in words."));
        let built = entry.parse::<&str>(&[]).expect("no options");
        assert_eq!(built.view.name(), "count");
        let mut d = Dataset::default();
        d.trace.messages.source = vec![0; 3];
        let frame = Frame { width: 200, height: 60 };
        let image = render_view(built.view.as_ref(), &d, &built.selection, frame, &Backend::Cpu).expect("drawn");
        assert!(image.distinct_colours() > 2, "the words are drawn");
        assert!(entry.parse(&["--node", "1"]).is_err(), "options of other views are refused");
    }

    /// `docs/architecture.md` shows this file's view as it is, from `use exaviz_compute::Backend;` to
    /// the end of the `View` implementation.
    #[test]
    fn the_architecture_page_shows_this_code() {
        let readme = include_str!("../../docs/architecture.md");
        let code = include_str!("example.rs");
        let start = code.find("use exaviz_compute::Backend;").expect("start");
        let end = code.find("#[cfg(test)]").expect("end");
        let shown = code[start..end].trim_end();
        assert!(readme.contains(shown), "docs/architecture.md's example view differs from views/src/example.rs");
    }
}
