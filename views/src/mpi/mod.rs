//! The `mpi` view: the timeline over the communication matrix and the chord diagram, linked
//! (Brendel et al., 2016, show them side by side). One selection drives all three: clicking a
//! matrix cell, a chord curve or a message line selects that pair of ranks and highlights it in
//! every panel; the timeline's time window (wheel and drag over it) restricts the matrix and the
//! chord diagram to the messages sent in it. The panels are placed in one scene.

use exaviz_compute::Backend;
use exaviz_model::dataset::Dataset;
use exaviz_model::selection::{Parts, Selection};
use exaviz_render::{Blend, Scene};

use crate::contract;
use crate::contract::{Class, Frame, Pick, Prepared};
use crate::matrix::MatrixOptions;
use crate::pairs::CurveOptions;
use crate::timeline::{TimelineView, plot_rect};
use crate::{BACKGROUND, ViewError};

/// The smallest picture the three panels fit in.
pub const MIN_SIZE: (u32, u32) = (800, 480);

/// The panels' rectangles `[x, y, width, height]`: the timeline across the top 55%, the matrix
/// and the chord diagram below it, side by side.
pub fn panels(width: u32, height: u32) -> [[u32; 4]; 3] {
    let top = height * 11 / 20;
    let half = width / 2;
    [[0, 0, width, top], [0, top, half, height - top], [half, top, width - half, height - top]]
}

/// The linked MPI views' options.
pub struct MpiLinkedView {
    pub timeline: TimelineView,
    pub matrix: MatrixOptions,
    pub chord: crate::chord::ChordView,
    /// The matrix and chord panels of the last window drawn, kept while only what they do not
    /// draw changes (the search, the folding).
    kept: std::sync::Mutex<Option<KeptPanels>>,
}

/// The matrix and chord panels prepared for a window of a trace with a pyramid.
struct KeptPanels {
    /// The trace's pyramid (held, so that its address names this trace), window, panels and
    /// backend.
    pyramid: std::sync::Arc<exaviz_model::pyramid::Pyramid>,
    key: (Option<(u64, u64)>, [[u32; 4]; 3], String),
    matrix: std::sync::Arc<dyn Prepared>,
    chord: std::sync::Arc<dyn Prepared>,
}

impl contract::View for MpiLinkedView {
    fn check(&self, d: &Dataset) -> Result<(), ViewError> {
        self.timeline.check(d)?;
        super::trace::needs_processes(d, Self::NAME, 2)
    }

    fn depends_on(&self) -> Parts {
        Parts::WINDOW | Parts::SEARCH | Parts::FOLDED
    }

    fn reads(&self) -> Parts {
        Parts::WINDOW | Parts::PAIR | Parts::SEARCH | Parts::MESSAGE | Parts::FOLDED | Parts::FOUND
    }

    fn home(&self, d: &Dataset) -> Option<(f64, f64)> {
        self.timeline.home_of(d).map(|h| h.window_s)
    }

    fn time_axis(&self, f: Frame) -> Option<[f32; 4]> {
        let [x, y, w, h] = panels(f.width, f.height)[0];
        let p = plot_rect(w, h)?;
        Some([(x + p.x0) as f32, (y + p.y0) as f32, (x + p.x0 + p.w) as f32, (y + p.y0 + p.h) as f32])
    }

    /// A store's wide window: each panel from the pyramid, as its own view draws it.
    fn reads_pyramid(&self) -> bool {
        true
    }

    /// A trace in memory: each panel is prepared as its own view would be ([`contract::prepare`]),
    /// the timeline's wide windows from the index, the matrix and chord from it where it loses
    /// nothing they show.
    fn reads_index(&self, _index: &exaviz_model::dataset::OutOfCore) -> bool {
        false
    }

    fn prepare(&self, d: &Dataset, sel: &Selection, f: Frame, b: &Backend) -> Result<Box<dyn Prepared>, ViewError> {
        let (w, h) = (f.width, f.height);
        if w < MIN_SIZE.0 || h < MIN_SIZE.1 {
            return Err(ViewError::Unsupported(format!(
                "{w}x{h} is too small for the mpi view (at least {}x{})",
                MIN_SIZE.0, MIN_SIZE.1
            )));
        }
        self.prepare_panels(d, sel, panels(w, h), b)
    }
}

impl MpiLinkedView {
    /// The three panels, each prepared by its own view (timeline, matrix, chord; a wide window
    /// from the pyramid, or from the index where that view reads it). The matrix and chord
    /// panels of a trace with a pyramid (a store's, or the index of one in memory) are kept for
    /// the next selection in the same window.
    fn prepare_panels(
        &self,
        d: &Dataset,
        sel: &Selection,
        all: [[u32; 4]; 3],
        b: &Backend,
    ) -> Result<Box<dyn Prepared>, ViewError> {
        let frame = |r: [u32; 4]| Frame { width: r[2], height: r[3] };
        // A trace in memory: each panel drawn from the index or the rows as its own view decides
        // ([`contract::prepare`]); a store's window has been read or left on disk for all three.
        let prepare = |view: &dyn contract::View, r: [u32; 4]| {
            if d.out_of_core.is_some() {
                view.prepare(d, sel, frame(r), b)
            } else {
                contract::prepare(view, d, sel, frame(r), b)
            }
        };
        let pyramid = d.out_of_core.as_ref().or(d.index.as_ref()).map(|o| o.pyramid.clone());
        let key = (sel.window_s.map(|(a, b)| (a.to_bits(), b.to_bits())), all, b.describe());
        let same =
            |k: &KeptPanels| pyramid.as_ref().is_some_and(|p| std::sync::Arc::ptr_eq(p, &k.pyramid)) && k.key == key;
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .filter(|k| same(k))
            .map(|k| (k.matrix.clone(), k.chord.clone()));
        let matrix = crate::matrix::MatrixView(self.matrix);
        let (timeline, others) = rayon::join(
            || prepare(&self.timeline, all[0]),
            || -> Result<_, ViewError> {
                if let Some(kept) = kept {
                    return Ok(kept);
                }
                let (matrix, chord) = rayon::join(|| prepare(&matrix, all[1]), || prepare(&self.chord, all[2]));
                let (matrix, chord): (std::sync::Arc<dyn Prepared>, std::sync::Arc<dyn Prepared>) =
                    (matrix?.into(), chord?.into());
                if let Some(pyramid) = pyramid.clone() {
                    let panels = KeptPanels { pyramid, key: key.clone(), matrix: matrix.clone(), chord: chord.clone() };
                    *self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(panels);
                }
                Ok((matrix, chord))
            },
        );
        let (matrix, chord) = others?;
        Ok(Box::new(Panels { panels: all, prepared: [timeline?.into(), matrix, chord] }))
    }
}

/// The three panels' scenes placed in one picture `w` x `h`, with thin dividers between them.
fn compose(w: u32, h: u32, panels: [[u32; 4]; 3], scenes: [&Scene; 3]) -> Scene {
    let mut scene = Scene::new(w, h, BACKGROUND);
    for (panel, r) in scenes.into_iter().zip(panels) {
        scene.place(panel, [r[0] as f32, r[1] as f32]);
    }
    let [_, m, c] = panels;
    let line = [0.27, 0.29, 0.33, 1.0];
    scene.segment(Blend::Alpha, [0.0, m[1] as f32], [w as f32, m[1] as f32], 1.0, line, false);
    scene.segment(Blend::Alpha, [c[0] as f32, c[1] as f32], [c[0] as f32, h as f32], 1.0, line, false);
    scene
}

/// The panels as their views prepared them: each drawn with the selection's highlights and
/// picked in its own rectangle.
struct Panels {
    panels: [[u32; 4]; 3],
    prepared: [std::sync::Arc<dyn Prepared>; 3],
}

impl Prepared for Panels {
    fn draw(&self, dataset: &Dataset, selection: &Selection) -> std::borrow::Cow<'_, Scene> {
        let [a, b, c] = &self.prepared;
        let scenes = [a.draw(dataset, selection), b.draw(dataset, selection), c.draw(dataset, selection)];
        let [w, h] = [self.panels[0][2], self.panels[1][1] + self.panels[1][3]];
        std::borrow::Cow::Owned(compose(w, h, self.panels, [&scenes[0], &scenes[1], &scenes[2]]))
    }

    fn pick(&self, dataset: &Dataset, at: [f32; 2]) -> Option<Pick> {
        self.prepared.iter().zip(self.panels).find_map(|(prepared, r)| {
            let q = [at[0] - r[0] as f32, at[1] - r[1] as f32];
            let inside = q[0] >= 0.0 && q[1] >= 0.0 && q[0] < r[2] as f32 && q[1] < r[3] as f32;
            if inside { prepared.pick(dataset, q) } else { None }
        })
    }
}

/// `exaviz render --view mpi` options.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct MpiArgs {
    #[command(flatten)]
    pub look: crate::timeline::TimelineLook,
    /// How overlapping lines combine (default: alpha on the timeline, additive in the chord
    /// diagram).
    #[arg(long, value_enum)]
    pub mix: Option<crate::options::MixArg>,
    #[command(flatten)]
    pub colormap: crate::options::ColormapArgs,
    #[command(flatten)]
    pub select: crate::options::TraceSelectArgs,
}

impl Class for MpiLinkedView {
    const NAME: &'static str = "mpi";
    const ABOUT: &'static str = "MPI trace: timeline over matrix and chord diagram, linked: a click selects a pair in all three, the timeline's time window restricts the others.";
    type Args = MpiArgs;

    fn new(args: &MpiArgs) -> Self {
        use crate::options::MixArg;
        let (width, height, colormap) = (1024, 768, args.colormap.colormap.into());
        let timeline = args.look.options(args.mix.unwrap_or(MixArg::Alpha).into(), &args.select);
        let chord_mix = args.mix.unwrap_or(MixArg::Additive).into();
        MpiLinkedView {
            timeline: TimelineView::with(timeline),
            matrix: MatrixOptions {
                width,
                height,
                value: crate::matrix::MatrixValue::Messages,
                colormap,
                grouping: crate::rows::Grouping::Behaviour,
                messages: None,
            },
            chord: crate::chord::ChordView::of(CurveOptions { width, height, beta: args.look.beta, mix: chord_mix }),
            kept: Default::default(),
        }
    }

    fn selection(args: &MpiArgs) -> Selection {
        let folded = args.look.collapse.then_some(exaviz_model::selection::Folded::ALL);
        Selection { search: args.look.highlight, folded, ..args.select.selection() }
    }
}
