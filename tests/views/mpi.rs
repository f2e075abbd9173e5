//! `--view mpi`: timeline, matrix and chord diagram in one scene. A selected pair is highlighted
//! in all three panels; a time window restricts the matrix and the chord diagram to the messages
//! sent in it.

use exaviz_views::contract::{Entry, Frame};
use exaviz_views::mpi::panels;

use super::{both, cpu, golden, open};

#[test]
fn mpi_view_matches_golden_on_both_backends() {
    let d = open("gen:wrf?iterations=3");
    let size = (800, 480);
    let picture = both("mpi", &["--pair", "3,7"], &d, size);
    assert!(picture.distinct_colours() > 50, "the picture looks blank");
    golden("mpi_wrf_pair_3_7.png", &picture);
    // The highlight shows in each panel.
    let plain = cpu("mpi", &[], &d, size);
    let changed_in = |r: [u32; 4], other: &exaviz_render::Image| {
        (r[1]..r[1] + r[3])
            .flat_map(|y| (r[0]..r[0] + r[2]).map(move |x| (x, y)))
            .filter(|&(x, y)| plain.pixel(x, y) != other.pixel(x, y))
            .count()
    };
    for (k, r) in panels(size.0, size.1).into_iter().enumerate() {
        let changed = changed_in(r, &picture);
        assert!(changed > 20, "panel {k}: the pair is not highlighted ({changed} pixels changed)");
    }
    // A window of the first second: fewer messages in the matrix and chord panels, so they change.
    let windowed = cpu("mpi", &["--from", "0", "--to", "1"], &d, size);
    let changed = changed_in(panels(size.0, size.1)[1], &windowed);
    assert!(changed > 100, "the time window does not restrict the matrix ({changed})");
    let built = Entry::find("mpi").unwrap().parse::<&str>(&[]).unwrap();
    assert!(built.view.time_axis(Frame { width: size.0, height: size.1 }).is_some());
}
