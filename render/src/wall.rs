//! Powerwalls: one virtual canvas over a grid of tiles (monitors), with mullions (the bezels
//! between them) as gaps, so that lines stay straight across tiles. A wall is described by a
//! `wall.toml` ([`WallSpec`]) and checked into a [`Wall`], which gives the canvas size and each
//! tile's rectangle in it.

use serde::Deserialize;

/// A `wall.toml`, as written: `columns`, `rows`, `tile = [W, H]` (pixels), `mullion = [X, Y]`
/// (pixels) or `bezel_mm = [X, Y]` with `pixel_pitch_mm`, and optional `[[tiles]]` entries.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WallSpec {
    pub columns: u32,
    pub rows: u32,
    pub tile: [u32; 2],
    #[serde(default)]
    pub mullion: Option<[u32; 2]>,
    #[serde(default)]
    pub bezel_mm: Option<[f64; 2]>,
    #[serde(default)]
    pub pixel_pitch_mm: Option<f64>,
    #[serde(default)]
    pub tiles: Vec<TileSpec>,
}

/// Which monitor or host shows the tile at (`column`, `row`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TileSpec {
    pub column: u32,
    pub row: u32,
    #[serde(default)]
    pub monitor: Option<u32>,
    #[serde(default)]
    pub host: Option<String>,
}

/// A checked wall.
#[derive(Clone, Debug, PartialEq)]
pub struct Wall {
    pub columns: u32,
    pub rows: u32,
    pub tile: [u32; 2],
    pub mullion: [u32; 2],
    pub tiles: Vec<TileSpec>,
}

/// Largest tile side and mullion, in pixels.
pub const MAX_TILE_SIDE: u32 = 16_384;
/// Most columns or rows.
pub const MAX_TILES_ACROSS: u32 = 64;
/// Most pixels of a whole canvas (16 x 4K is 0.53G).
pub const MAX_CANVAS_PIXELS: u64 = 1 << 32;

impl Wall {
    /// Checks `spec`; an error names the field (`tile`, `tiles[2].column`, ...).
    pub fn new(spec: WallSpec) -> Result<Self, String> {
        let across = |name: &str, v: u32| {
            if (1..=MAX_TILES_ACROSS).contains(&v) {
                Ok(v)
            } else {
                Err(format!("{name} = {v}: must be 1 to {MAX_TILES_ACROSS}"))
            }
        };
        let (columns, rows) = (across("columns", spec.columns)?, across("rows", spec.rows)?);
        let [w, h] = spec.tile;
        if !(16..=MAX_TILE_SIDE).contains(&w) || !(16..=MAX_TILE_SIDE).contains(&h) {
            return Err(format!("tile = [{w}, {h}]: each side must be 16 to {MAX_TILE_SIDE} pixels"));
        }
        let mullion = match (spec.mullion, spec.bezel_mm, spec.pixel_pitch_mm) {
            (Some(_), Some(_), _) => return Err("mullion and bezel_mm: give one of the two".into()),
            (Some(m), None, _) => m,
            (None, Some([x, y]), Some(p)) if p > 0.0 && p.is_finite() && x >= 0.0 && y >= 0.0 => {
                let px = |mm: f64| (mm / p).round().min(f64::from(MAX_TILE_SIDE) + 1.0) as u32;
                [px(x), px(y)]
            }
            (None, Some(_), Some(p)) => {
                return Err(format!(
                    "pixel_pitch_mm = {p} with bezel_mm: needs a positive pitch and bezels of 0 or more"
                ));
            }
            (None, Some(_), None) => return Err("bezel_mm needs pixel_pitch_mm".into()),
            (None, None, _) => [0, 0],
        };
        if mullion.iter().any(|&m| m > MAX_TILE_SIDE) {
            return Err(format!("mullion = [{}, {}]: at most {MAX_TILE_SIDE} pixels", mullion[0], mullion[1]));
        }
        let wall = Self { columns, rows, tile: spec.tile, mullion, tiles: Vec::new() };
        let [cw, ch] = wall.canvas();
        if u64::from(cw) * u64::from(ch) > MAX_CANVAS_PIXELS {
            return Err(format!("the canvas of {cw}x{ch} pixels is above the limit of {MAX_CANVAS_PIXELS}"));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, t) in spec.tiles.iter().enumerate() {
            if t.column >= columns {
                return Err(format!("tiles[{i}].column = {}: the wall has columns 0 to {}", t.column, columns - 1));
            }
            if t.row >= rows {
                return Err(format!("tiles[{i}].row = {}: the wall has rows 0 to {}", t.row, rows - 1));
            }
            if !seen.insert((t.column, t.row)) {
                return Err(format!("tiles[{i}]: tile ({}, {}) is given twice (tiles overlap)", t.column, t.row));
            }
            if t.monitor.is_some() && t.host.is_some() {
                return Err(format!("tiles[{i}]: give monitor or host, not both"));
            }
        }
        Ok(Self { tiles: spec.tiles, ..wall })
    }

    /// The virtual canvas: `columns * w + (columns - 1) * mullion_x` by the same down.
    pub fn canvas(&self) -> [u32; 2] {
        let side = |n: u32, t: u32, m: u32| n * t + (n - 1) * m;
        [side(self.columns, self.tile[0], self.mullion[0]), side(self.rows, self.tile[1], self.mullion[1])]
    }

    /// Tile (`column`, `row`)'s top-left corner on the canvas.
    pub fn origin(&self, column: u32, row: u32) -> [u32; 2] {
        [column * (self.tile[0] + self.mullion[0]), row * (self.tile[1] + self.mullion[1])]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> WallSpec {
        WallSpec { columns: 2, rows: 2, tile: [100, 60], mullion: Some([10, 4]), ..Default::default() }
    }

    #[test]
    fn the_canvas_includes_the_mullions() {
        let w = Wall::new(spec()).unwrap();
        assert_eq!(w.canvas(), [210, 124]);
        assert_eq!(w.origin(1, 1), [110, 64]);
        let b = Wall::new(WallSpec { mullion: None, bezel_mm: Some([5.0, 2.5]), pixel_pitch_mm: Some(0.25), ..spec() });
        assert_eq!(b.unwrap().mullion, [20, 10]);
        let sixteen_4k = WallSpec { columns: 16, rows: 1, tile: [3840, 2160], ..Default::default() };
        assert_eq!(Wall::new(sixteen_4k).unwrap().canvas(), [61_440, 2160]);
    }

    #[test]
    fn bad_walls_name_the_field() {
        let err = |s: WallSpec| Wall::new(s).unwrap_err();
        assert!(err(WallSpec { columns: 0, ..spec() }).starts_with("columns = 0"));
        assert!(err(WallSpec { tile: [0, 60], ..spec() }).starts_with("tile = [0, 60]"));
        let twice = vec![TileSpec { column: 1, row: 0, ..Default::default() }; 2];
        assert!(err(WallSpec { tiles: twice, ..spec() }).starts_with("tiles[1]: tile (1, 0) is given twice"));
        let outside = vec![TileSpec { column: 2, row: 0, ..Default::default() }];
        assert!(err(WallSpec { tiles: outside, ..spec() }).starts_with("tiles[0].column = 2"));
        assert!(err(WallSpec { bezel_mm: Some([1.0, 1.0]), ..spec() }).contains("give one of the two"));
        assert!(err(WallSpec { mullion: None, bezel_mm: Some([1.0, 1.0]), ..spec() }).contains("needs pixel_pitch_mm"));
        let huge = WallSpec { columns: 64, rows: 64, tile: [16_384, 16_384], ..spec() };
        assert!(err(huge).contains("above the limit"));
    }
}
