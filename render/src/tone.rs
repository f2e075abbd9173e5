//! Tone mapping of accumulation images (counts or weight sums) to `[0, 1]` before a colour map.

/// How accumulated values map to brightness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ToneMap {
    Linear,
    /// `ln(1 + v) / ln(1 + max)`: the usual choice for heavy-tailed densities.
    #[default]
    Log,
    /// Histogram equalisation over the non-zero values: equal areas get equal shares of the map.
    Equalize,
}

impl std::str::FromStr for ToneMap {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "linear" => Ok(Self::Linear),
            "log" => Ok(Self::Log),
            "eq" | "equalize" => Ok(Self::Equalize),
            _ => Err(format!("unknown tone map '{s}' (expected linear, log or eq)")),
        }
    }
}

impl ToneMap {
    pub fn name(self) -> &'static str {
        match self {
            Self::Linear => "linear",
            Self::Log => "log",
            Self::Equalize => "histogram equalised",
        }
    }

    /// `t` in `[0, 1]` for every value (`None` for zero: nothing there). For `Equalize`, the
    /// value's rank among the distinct non-zero values.
    pub fn apply(self, values: &[u64]) -> Vec<Option<f32>> {
        let max = values.iter().copied().max().unwrap_or(0);
        match self {
            Self::Linear => values.iter().map(|&v| (v > 0).then(|| v as f32 / max as f32)).collect(),
            Self::Log => {
                let l = ((max as f64) + 1.0).ln();
                values.iter().map(|&v| (v > 0).then(|| (((v as f64) + 1.0).ln() / l) as f32)).collect()
            }
            Self::Equalize => {
                let mut sorted: Vec<u64> = values.iter().copied().filter(|&v| v > 0).collect();
                sorted.sort_unstable();
                let n = sorted.len().max(1) as f32;
                values
                    .iter()
                    .map(|&v| {
                        (v > 0).then(|| {
                            // Fraction of non-zero values at or below v.
                            let rank = sorted.partition_point(|&x| x <= v);
                            rank as f32 / n
                        })
                    })
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tone_maps_span_zero_to_one() {
        let v = [0, 1, 10, 100, 1000];
        for t in [ToneMap::Linear, ToneMap::Log, ToneMap::Equalize] {
            let m = t.apply(&v);
            assert_eq!(m[0], None);
            assert_eq!(m[4], Some(1.0), "{t:?}");
            assert!(m.windows(2).skip(1).all(|w| w[0] < w[1]), "{t:?} is monotonic");
        }
        assert_eq!(ToneMap::Equalize.apply(&v)[1], Some(0.25));
    }
}
