//! The statistics of a right-button drag's area in the panel: `exaviz summary`'s numbers in
//! lines narrow enough for it.

use exaviz_analysis::summary::Summary;

use crate::text::{bytes, clip, short};

/// Regions and pairs the panel lists at most.
const PANEL_REGIONS: usize = 8;
const PANEL_PAIRS: usize = 3;

/// The summary in lines narrow enough for the window's panel (about 32 characters): the area,
/// where its time goes (the busiest regions), its messages and pairs, its late-sender waiting;
/// "nothing here" for an area without states or messages.
pub fn panel_lines(s: &Summary) -> Vec<String> {
    let mut o = vec![format!("{} to {}, {} rows", short(s.from_s), short(s.to_s), s.locations.len())];
    if s.regions.is_empty() && s.messages == 0 {
        o.push("nothing here".into());
        return o;
    }
    if !s.regions.is_empty() {
        o.push(format!("{:<12} {:>5} {:>8} {:>4}", "region", "count", "self", "share"));
        for r in s.regions.iter().take(PANEL_REGIONS) {
            o.push(format!(
                "{:<12} {:>5} {:>8} {:>3.0}%",
                clip(&r.name, 12),
                r.count,
                short(r.self_s),
                r.share * 100.0
            ));
        }
        if s.regions.len() > PANEL_REGIONS {
            o.push(format!("+{} regions (exaviz summary)", s.regions.len() - PANEL_REGIONS));
        }
    }
    o.push(format!("{} messages, {}", s.messages, bytes(s.bytes)));
    for p in s.pairs.iter().take(PANEL_PAIRS) {
        o.push(format!("  {} → {}: {} × {}", p.source, p.destination, p.count, bytes(p.bytes)));
    }
    let count: u64 = s.waits_by_location.iter().map(|w| w.count).sum();
    if count > 0 {
        let waits: f64 = s.waits_by_location.iter().map(|w| w.late_sender_s).sum();
        o.push(format!("late sender: {count} waits, {}", short(waits)));
    }
    let count: u64 = s.late_receivers_by_location.iter().map(|w| w.count).sum();
    if count > 0 {
        let waits: f64 = s.late_receivers_by_location.iter().map(|w| w.late_receiver_s).sum();
        o.push(format!("late receiver: {count} waits, {}", short(waits)));
    }
    for c in s.collectives.iter().take(PANEL_PAIRS) {
        o.push(format!("{}: {} ×, {}", clip(&c.name, 14), c.count, short(c.total_s)));
    }
    if !s.root_causes.is_empty() {
        o.push("root causes of the waiting:".into());
        for c in s.root_causes.iter().take(PANEL_PAIRS) {
            let cost = short(c.direct_s + c.propagated_s);
            o.push(format!("  {} {}: {cost}", clip(&c.location, 12), clip(&c.region, 9)));
        }
    }
    if let Some(w) = &s.what_if {
        // `exaviz critical-path --what-if`, for the one process the area holds.
        o.push(format!("what if {} worked", clip(&w.who, 20)));
        o.push(format!("as its peers: saves {}", short(w.saved_s)));
        o.push(format!("of {} ({:.1}%)", short(w.length_s), 100.0 * w.saved_s / w.length_s.max(f64::MIN_POSITIVE)));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_panel_lines_are_narrow_and_say_when_an_area_is_empty() {
        let t = exaviz_model::Trace {
            ticks_per_second: 1000,
            locations: exaviz_model::Locations { name: vec!["a".into(), "b".into()], ..Default::default() },
            region_names: vec!["a_region_with_a_long_name".into()],
            intervals: exaviz_model::Intervals {
                location: vec![0, 1],
                start: vec![0, 100],
                end: vec![900, 950],
                kind: vec![0, 0],
                depth: vec![0, 0],
            },
            ..Default::default()
        };
        let area = exaviz_model::selection::Area { from: 0, to: 1000, first: 0, last: 1 };
        let mut summary = exaviz_analysis::summary::summarize(&t, area, 10);
        summary.root_causes.push(exaviz_analysis::critical_path::CauseRow {
            location: "rank 0 python / thread 22402 (python)".into(),
            region: "aten::addmm".into(),
            direct_s: 0.0412,
            propagated_s: 0.0277,
            waits: 5,
        });
        summary.what_if = Some(exaviz_analysis::critical_path::WhatIf {
            who: "rank 5 python".into(),
            selected: vec!["rank 5 python".into()],
            removed_s: 0.15,
            length_s: 0.384,
            projected_s: 0.313,
            saved_s: 0.071,
            steps: Vec::new(),
        });
        let lines = panel_lines(&summary);
        assert!(lines.iter().all(|l| l.chars().count() <= 34), "{lines:?}");
        let w = lines.iter().position(|l| l == "what if rank 5 python worked").expect("the what-if");
        assert_eq!(lines[w + 1..w + 3], ["as its peers: saves 71.00 ms", "of 384 ms (18.5%)"], "{lines:?}");
        let cause = lines.iter().position(|l| l == "root causes of the waiting:").expect("the causes' title");
        assert!(lines[cause + 1].starts_with("  rank 0 pyth") && lines[cause + 1].ends_with("68.90 ms"), "{lines:?}");
        assert!(lines[0].contains("2 rows") && lines[2].starts_with("a_region_wi…") && lines[2].contains("1.75 s"));
        let empty = exaviz_model::selection::Area { from: 960, to: 1000, first: 0, last: 1 };
        assert_eq!(panel_lines(&exaviz_analysis::summary::summarize(&t, empty, 10))[1], "nothing here");
        assert_eq!(
            (short(12360.078), short(0.0123), bytes(24545)),
            ("12360 s".into(), "12.30 ms".into(), "24.5 kB".into())
        );
    }
}
