//! `--view fattree` (TreeScope, Bhatia et al., 2018) of the three systems.

use exaviz_render::Image;

use super::{both, differ, golden, open};

/// The fattree view (TreeScope, Bhatia et al., 2018) of the three systems: a k-ary fat tree,
/// the paper's production system (1,296 nodes, routing changed halfway, the job under the
/// second routing selected, diverging colours) and its simulated system (3,200 nodes, jobs
/// packed into pods, a traffic range and a route between pods), on both backends.
#[test]
fn fattree_views_match_golden_on_both_backends() {
    let cases: [(&str, &str, &[&str]); 4] = [
        ("fattree_k8.png", "gen:fattree?k=8&steps=40", &[]),
        (
            "fattree_production_sar_job.png",
            "gen:fattree?system=production&steps=48&routing=both",
            &["--job", "1000002", "--colours", "diverging"],
        ),
        (
            "fattree_simulated_packed.png",
            "gen:fattree?system=simulated&steps=40&placement=packed",
            &["--time", "10:30"],
        ),
        (
            "fattree_simulated_route_traffic.png",
            "gen:fattree?system=simulated&steps=40",
            &["--traffic", "2e11:4e12", "--route", "0,60", "--stat", "mean"],
        ),
    ];
    let mut first: Option<Image> = None;
    for (name, input, options) in cases {
        let picture = both("fattree", options, &open(input), (960, 640));
        assert!(picture.distinct_colours() > 40, "{name}: the picture looks blank");
        if let Some(f) = &first {
            assert!(differ(f, &picture) > 0.02, "{name}: same as the first");
        }
        golden(name, &picture);
        first.get_or_insert(picture);
    }
}
