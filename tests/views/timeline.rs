//! `--view timeline` (Brendel et al., 2016): the generated MPI cases plain, hierarchically
//! bundled and grid-routed with additive mixing, and the real ping-pong OTF2 trace.

use exaviz_tests::shared_data_or_skip;

use super::{MPI_CASES, both, differ, golden, open};

#[test]
fn timelines_match_golden_on_both_backends() {
    for case in MPI_CASES {
        let d = open(&format!("gen:{case}?iterations=3"));
        let plain = both("timeline", &[], &d, (480, 320));
        assert!(plain.distinct_colours() > 20, "{case}: the picture looks blank");
        golden(&format!("timeline_{case}.png"), &plain);
        let bundled: [(&str, &[&str]); 2] = [
            ("hierarchical", &["--bundle", "hierarchical", "--beta", "0.85"]),
            ("grid_additive", &["--bundle", "grid", "--beta", "0.85", "--mix", "additive"]),
        ];
        for (name, options) in bundled {
            let picture = both("timeline", options, &d, (480, 320));
            let moved = differ(&plain, &picture);
            assert!(moved > 0.01, "{name} {case}: bundled like the plain timeline ({moved})");
            golden(&format!("timeline_{name}_{case}.png"), &picture);
        }
    }
}

/// The real ping-pong trace's timeline, zoomed on the exchange.
#[test]
fn otf2_timeline_matches_golden() {
    let Some(data) = shared_data_or_skip("otf2 timeline golden") else { return };
    let mut d = open(data.join("otf2-pingpong/ping-pong-otf2/traces.otf2").to_str().unwrap());
    d.name = "ping-pong-otf2".into();
    let picture = both("timeline", &["--from", "0.1948", "--to", "0.1985"], &d, (480, 240));
    golden("timeline_pingpong_otf2.png", &picture);
}
