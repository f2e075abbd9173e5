//! What stages take and give where both a stage's recording and its CPU paths read it: the
//! density image and straight-line input of `line_density`, the line geometry its pieces share
//! with the shader, and the bundling parameters of `kde_bundle`. One floor below the stages and
//! the CPU runner, so that neither imports the other's types.

/// Output of stage (b), row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DensityImage {
    pub width: u32,
    pub height: u32,
    pub counts: Vec<u32>,
    pub sums: Vec<u64>,
}

/// Straight lines `[x0, y0, x1, y1]` in pixels, each cut into `weights.len()` equal pieces,
/// piece `k` weighted `weights[k]` (a gradient along the line). The pieces are [`piece`]'s.
#[derive(Clone, Copy, Debug)]
pub struct StraightInput<'a> {
    pub lines: &'a [[f32; 4]],
    pub weights: &'a [u32],
    pub width: u32,
    pub height: u32,
}

/// The point `f` along `line` (0: its first end, 1: its second).
#[inline(always)]
pub fn point(line: &[f32; 4], f: f32) -> [f32; 2] {
    [line[0] + (line[2] - line[0]) * f, line[1] + (line[3] - line[1]) * f]
}

/// Piece `k` of `pieces` of `line`: from [`point`] `k / pieces` to `(k + 1) / pieces` along it.
#[inline(always)]
pub fn piece(line: &[f32; 4], k: usize, pieces: usize) -> [f32; 4] {
    let (a, b) = (point(line, k as f32 / pieces as f32), point(line, (k + 1) as f32 / pieces as f32));
    [a[0], a[1], b[0], b[1]]
}

/// Bundling parameters, all in unit-square units. Defaults work on rings, timelines and matrices
/// normalised to the unit square.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BundleParams {
    /// Points per edge, endpoints included (2 to 32).
    pub samples: u32,
    /// Density grid side in cells.
    pub grid: u32,
    pub iterations: u32,
    /// Kernel radius of the first iteration, as a fraction of the side.
    pub kernel: f32,
    /// Factor applied to the kernel radius (and step) after each iteration.
    pub decay: f32,
    /// Distance moved per iteration, as a fraction of the current kernel radius.
    pub step: f32,
    /// Laplacian smoothing weight per iteration (0: none, 1: full average of neighbours).
    pub smoothing: f32,
}

impl Default for BundleParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl BundleParams {
    /// The documented defaults (also the CLI's).
    pub const DEFAULT: Self =
        Self { samples: 16, grid: 256, iterations: 10, kernel: 0.06, decay: 0.8, step: 0.4, smoothing: 0.5 };

    /// The defaults of `exaviz bundle` and `exaviz bench`: a wider kernel shrinking more slowly,
    /// so that the ink ratio is at most Datashader's hammer_bundle's (at its defaults) on the
    /// benchmark sets: random, structured and community/hub edges on a circle (BENCHMARKS.md).
    /// The views keep [`BundleParams::DEFAULT`]'s lighter bundling, drawn over other marks.
    pub const STRONG: Self = Self { kernel: 0.15, decay: 0.9, ..Self::DEFAULT };

    pub fn validate(&self) -> Result<(), String> {
        if !(2..=32).contains(&self.samples) {
            return Err(format!("samples must be 2 to 32, not {}", self.samples));
        }
        if !(16..=4096).contains(&self.grid) {
            return Err(format!("grid must be 16 to 4096 cells, not {}", self.grid));
        }
        if self.iterations > 1000 {
            return Err(format!("iterations must be at most 1000, not {}", self.iterations));
        }
        let unit = |name: &str, v: f32, lo: f32, hi: f32| {
            if v.is_finite() && v >= lo && v <= hi {
                Ok(())
            } else {
                Err(format!("{name} must be in [{lo}, {hi}], not {v}"))
            }
        };
        unit("kernel", self.kernel, 0.0, 0.5)?;
        unit("decay", self.decay, 0.0, 1.0)?;
        unit("step", self.step, 0.0, 1.0)?;
        unit("smoothing", self.smoothing, 0.0, 1.0)
    }

    /// Kernel radius in cells at iteration `it` (at least one cell).
    pub fn radius_cells(&self, it: u32) -> u32 {
        let r = self.kernel * self.decay.powi(it as i32) * self.grid as f32;
        (r.round() as u32).clamp(1, self.grid / 2)
    }
}
