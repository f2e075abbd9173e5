//! What a picture shows, for programs rather than eyes: its view, its title, its rows (or the
//! axis a view reads as rows) and its legend, each with the text drawn and the full name it
//! stands for. `exaviz render --scene-json FILE` writes it; tests and screen readers read it, as
//! Vega and Plotly expose their scene graphs.

use serde::Serialize;

/// A picture's rows and legend as drawn.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Outline {
    /// The view's name (as `--view` takes it).
    pub view: String,
    /// The picture's title, whole (before it was cut to fit).
    pub title: String,
    /// Top to bottom.
    pub rows: Vec<OutlineRow>,
    /// In the legend's order.
    pub legend: Vec<OutlineEntry>,
}

/// One row of a picture: a location's row, a band of locations, a process's header.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OutlineRow {
    /// The text drawn for it ("" where none is).
    pub label: String,
    /// What it is, whole: the location's name, the process's, the band's.
    pub name: String,
    /// Its first pixel row, in picture pixels.
    pub top: u32,
    /// Its pixel rows.
    pub height: u32,
    /// Whether it is a location drawn apart from the group it behaves unlike.
    pub apart: bool,
    /// The locations it holds.
    pub count: usize,
    /// What kind of row: "location", "process" (a header over its threads), "band" (locations
    /// grouped by behaviour), "summary", or a view's own ("stage", "sender").
    pub kind: String,
    /// The label of the process header this row is drawn under ("" where none): with `label`,
    /// what tells the row apart from every other.
    pub process: String,
}

/// One entry of a legend.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OutlineEntry {
    /// The text drawn.
    pub label: String,
    /// What it stands for, whole.
    pub name: String,
}

impl Outline {
    /// As JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_string())
    }
}
