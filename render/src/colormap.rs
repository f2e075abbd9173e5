//! Colour maps safe for colour-blind readers: sequential (viridis, cividis) and diverging
//! (blue–white–red after ColorBrewer's RdBu, safe for the common colour-vision deficiencies).

/// Colour of a message line `share` of the way from its sender (0) to its receiver (1). Brendel et al.
/// uses green to red; the views keep its idea with a pair safe for colour-blind readers: pale
/// cyan at the sender, warm yellow at the receiver (bright on dark backgrounds and state bars).
pub fn direction_colour(share: f32) -> [f32; 3] {
    let (a, b) = ([0.7, 0.95, 1.0], [1.0, 0.85, 0.35]);
    [a[0] + (b[0] - a[0]) * share, a[1] + (b[1] - a[1]) * share, a[2] + (b[2] - a[2]) * share]
}

/// A colour map, sampled by linear interpolation between stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ColorMap {
    #[default]
    Viridis,
    Cividis,
    /// Diverging: blue (low) – white (middle) – red (high).
    RdBu,
}

const VIRIDIS: [[u8; 3]; 9] = [
    [68, 1, 84],
    [71, 44, 122],
    [59, 81, 139],
    [44, 113, 142],
    [33, 144, 141],
    [39, 173, 129],
    [92, 200, 99],
    [170, 220, 50],
    [253, 231, 37],
];
const CIVIDIS: [[u8; 3]; 9] = [
    [0, 34, 78],
    [18, 53, 112],
    [59, 73, 108],
    [87, 93, 109],
    [112, 113, 115],
    [138, 134, 120],
    [166, 156, 117],
    [196, 179, 105],
    [254, 232, 56],
];
const RDBU: [[u8; 3]; 9] = [
    [33, 102, 172],
    [67, 147, 195],
    [146, 197, 222],
    [209, 229, 240],
    [247, 247, 247],
    [253, 219, 199],
    [244, 165, 130],
    [214, 96, 77],
    [178, 24, 43],
];

impl ColorMap {
    fn stops(self) -> &'static [[u8; 3]] {
        match self {
            Self::Viridis => &VIRIDIS,
            Self::Cividis => &CIVIDIS,
            Self::RdBu => &RDBU,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Viridis => "viridis",
            Self::Cividis => "cividis",
            Self::RdBu => "rdbu",
        }
    }

    /// The colour at `t` in `[0, 1]` (clamped; NaN gives the low end), opaque RGBA in 0..1.
    pub fn sample(self, t: f32) -> [f32; 4] {
        let stops = self.stops();
        let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
        let x = t * (stops.len() - 1) as f32;
        let i = (x.floor() as usize).min(stops.len() - 2);
        let f = x - i as f32;
        let c = |k: usize| f32::from(stops[i][k]) + (f32::from(stops[i + 1][k]) - f32::from(stops[i][k])) * f;
        [c(0) / 255.0, c(1) / 255.0, c(2) / 255.0, 1.0]
    }
}

impl std::str::FromStr for ColorMap {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "viridis" => Ok(Self::Viridis),
            "cividis" => Ok(Self::Cividis),
            "rdbu" => Ok(Self::RdBu),
            _ => Err(format!("unknown colour map '{s}' (expected viridis, cividis or rdbu)")),
        }
    }
}

/// Maps data values to `[0, 1]`, linearly or logarithmically.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
}

impl Scale {
    /// A log scale when the data spans more than two decades and is positive, else linear.
    pub fn auto(lo: f64, hi: f64) -> Self {
        let log = lo > 0.0 && hi / lo > 100.0;
        Self { lo, hi, log }
    }

    pub fn normalise(&self, v: f64) -> f32 {
        let t = if self.log {
            let (l, h) = (self.lo.max(1e-300).ln(), self.hi.max(1e-300).ln());
            if h > l { (v.max(1e-300).ln() - l) / (h - l) } else { 1.0 }
        } else if self.hi > self.lo {
            (v - self.lo) / (self.hi - self.lo)
        } else {
            1.0
        };
        t.clamp(0.0, 1.0) as f32
    }

    /// The value at `t` in `[0, 1]` (inverse of [`Scale::normalise`]).
    pub fn value_at(&self, t: f64) -> f64 {
        if self.log {
            let (l, h) = (self.lo.max(1e-300).ln(), self.hi.max(1e-300).ln());
            (l + (h - l) * t).exp()
        } else {
            self.lo + (self.hi - self.lo) * t
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_hit_their_end_stops() {
        let lo = ColorMap::Viridis.sample(0.0);
        let hi = ColorMap::Viridis.sample(1.0);
        assert!((lo[0] - 68.0 / 255.0).abs() < 1e-6 && (hi[1] - 231.0 / 255.0).abs() < 1e-6);
        // Sequential maps get brighter monotonically (luminance), which keeps them readable in grey.
        let lum = |c: [f32; 4]| 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
        for m in [ColorMap::Viridis, ColorMap::Cividis] {
            let mut last = -1.0;
            for i in 0..=20 {
                let l = lum(m.sample(i as f32 / 20.0));
                assert!(l > last, "{m:?} at {i}");
                last = l;
            }
        }
    }

    #[test]
    fn log_scale_round_trips() {
        let s = Scale::auto(1.0, 10_000.0);
        assert!(s.log);
        assert!((s.normalise(100.0) - 0.5).abs() < 1e-6);
        assert!((s.value_at(0.5) - 100.0).abs() < 1e-6);
    }
}

/// Colour-vision deficiencies, simulated after Machado, Oliveira and Fernandes, "A
/// physiologically-based model for simulation of color vision deficiency" (IEEE TVCG 2009), at
/// severity 1 (dichromacy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deficiency {
    Protanopia,
    Deuteranopia,
    Tritanopia,
}

fn to_linear(c: f32) -> f32 {
    if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
}

fn to_srgb(c: f32) -> f32 {
    let c = c.clamp(0.0, 1.0);
    if c <= 0.003_130_8 { 12.92 * c } else { 1.055 * c.powf(1.0 / 2.4) - 0.055 }
}

/// What a reader with `d` sees of the sRGB colour `rgb` (in sRGB).
pub fn simulate(rgb: [f32; 3], d: Deficiency) -> [f32; 3] {
    let m: [[f32; 3]; 3] = match d {
        Deficiency::Protanopia => {
            [[0.152_286, 1.052_583, -0.204_868], [0.114_503, 0.786_281, 0.099_216], [-0.003_882, -0.048_116, 1.051_998]]
        }
        Deficiency::Deuteranopia => {
            [[0.367_322, 0.860_646, -0.227_968], [0.280_085, 0.672_501, 0.047_413], [-0.011_820, 0.042_940, 0.968_881]]
        }
        Deficiency::Tritanopia => {
            [[1.255_528, -0.076_749, -0.178_779], [-0.078_411, 0.930_809, 0.147_602], [0.004_733, 0.691_367, 0.303_900]]
        }
    };
    let l = rgb.map(to_linear);
    let row = |r: [f32; 3]| to_srgb(r[0] * l[0] + r[1] * l[1] + r[2] * l[2]);
    [row(m[0]), row(m[1]), row(m[2])]
}

/// CIELAB (D65) of an sRGB colour.
pub fn lab(rgb: [f32; 3]) -> [f32; 3] {
    let [r, g, b] = rgb.map(to_linear);
    let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.950_47;
    let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
    let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.088_83;
    let f = |t: f32| if t > 216.0 / 24389.0 { t.cbrt() } else { (24389.0 / 27.0 * t + 16.0) / 116.0 };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
}

/// Distance between two sRGB colours in CIELAB's a*b* plane: how far apart their hues and
/// chromas are, lightness left out (two colours told apart by lightness alone read as one hue).
pub fn chroma_distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    let (p, q) = (lab(a), lab(b));
    (p[1] - q[1]).hypot(p[2] - q[2])
}
