//! The whole KDE bundling on the CPU in plain memory: the steps of the recording that
//! `stages::kde_bundle::record` makes, run with the mirror's own arithmetic (`kde_bundle`'s row
//! and lane functions), but without its buffers. Its results equal the mirror's run of that
//! recording bit for bit (tested), which the GPU is compared with.
//!
//! What it saves over running the recording, kernel by kernel:
//! - the points stay in lanes (eight edges' x, then their y, point by point) from the first
//!   iteration to the last, instead of being copied into lanes and back per iteration;
//! - the per-task density grids are summed straight into blur-x's rows, not first into the
//!   64-bit splat buffer that blur-x then reads;
//! - every grid is plain memory: no copy of the blurred grids out of atomic words.
//!
//! The edges of the last group short of `LANES` are padded with NaN points of weight 0: NaN
//! points splat nothing, and what their lanes compute is dropped.

use rayon::prelude::*;

use super::mirror::{
    Cell, LANES, LaneWork, Lanes, PairedWords, Params, advect_group, blur_x_row, blur_y_row, density_f32, gradient_row,
    init_point, splat_lanes, splat_tasks, sums_fit_u32, taps,
};
use crate::io::BundleParams;

/// Bundles `edges` (unit square) of weights `weights` (1 each without) with `bp`; returns the
/// points, edge `e`'s `bp.samples` of them at `e * samples`. `bp` must be valid, and `weights`
/// one per edge (`kde_bundle::run_each` checks both).
pub fn bundle(edges: &[[f32; 4]], weights: Option<&[u32]>, bp: &BundleParams) -> Vec<[f32; 2]> {
    let total: u64 = weights.map_or(edges.len() as u64, |w| w.iter().map(|&w| u64::from(w)).sum());
    // On one of rayon's threads, as the CPU runner runs a recording: every parallel loop then
    // starts from a worker, not by handing a job across threads and sleeping until it ends.
    rayon::scope(|_| {
        if sums_fit_u32(total, bp.samples) {
            bundle_in::<u32>(edges, weights, bp)
        } else {
            bundle_in::<u64>(edges, weights, bp)
        }
    })
}

/// [`bundle`] with per-task density grids of `T`, which no cell's sum overflows.
fn bundle_in<T: Cell>(edges: &[[f32; 4]], weights: Option<&[u32]>, bp: &BundleParams) -> Vec<[f32; 2]> {
    let (n, s, g) = (edges.len(), bp.samples as usize, bp.grid as usize);
    let groups = n.div_ceil(LANES);
    // Point `k` of group `i`'s lanes is `points[i * s + k]`.
    let mut points: Vec<[Lanes; 2]> = vec![[[f32::NAN; LANES]; 2]; groups * s];
    points.par_chunks_mut(s).enumerate().for_each(|(i, group)| {
        for (l, &edge) in edges.iter().skip(i * LANES).take(LANES).enumerate() {
            for (k, p) in group.iter_mut().enumerate() {
                [p[0][l], p[1][l]] = init_point(edge, k as u32, bp.samples);
            }
        }
    });
    let w: Vec<[u32; LANES]> =
        (0..groups).map(|i| std::array::from_fn(|l| weight(weights, i * LANES + l, edges.len()))).collect();
    // One task per thread, each with a run of groups and its own grid (as `with_task_grids`).
    let tasks = splat_tasks(n * s);
    let per = groups.div_ceil(tasks).max(1);
    let mut grids: Vec<Vec<T>> = (0..groups.div_ceil(per)).map(|_| vec![T::default(); g * g]).collect();
    let params = |it: u32| {
        let step = bp.step * bp.kernel * bp.decay.powi(it as i32);
        let splat_next = u32::from(it + 1 < bp.iterations);
        Params {
            n: n as u32,
            samples: bp.samples,
            grid: bp.grid,
            radius: bp.radius_cells(it),
            step,
            smoothing: bp.smoothing,
            splat_next,
            _pad1: 0,
        }
    };
    // The first splat.
    let first = params(0);
    points.par_chunks(per * s).zip(grids.par_iter_mut()).enumerate().for_each(|(t, (pts, grid))| {
        for (i, group) in pts.chunks(s).enumerate() {
            splat_lanes(&first, group, &w[t * per + i], grid);
        }
    });
    let (mut blur, mut density, mut gradient) = (vec![0f32; g * g], vec![0f32; g * g], vec![0u64; g * g]);
    for it in 0..bp.iterations {
        let p = params(it);
        let (r, w_taps) = (p.radius as usize, taps(p.radius));
        // blur-x, each row's cells first summed over the task grids.
        blur.par_chunks_mut(g).enumerate().for_each_init(
            || (vec![0f32; g + 2 * r], vec![0u64; g]),
            |(row, sums), (y, out)| {
                sums.fill(0);
                for grid in &grids {
                    for (a, v) in sums.iter_mut().zip(&grid[y * g..(y + 1) * g]) {
                        *a = a.wrapping_add(v.get());
                    }
                }
                for (v, &sum) in row[r..r + g].iter_mut().zip(sums.iter()) {
                    *v = density_f32(sum);
                }
                blur_x_row(&w_taps, row, out);
            },
        );
        density.par_chunks_mut(g).enumerate().for_each(|(y, out)| blur_y_row(&w_taps, &blur, y, out));
        // Each cell's gradient paired with its right-hand neighbour's, for advection's lookups.
        gradient.par_chunks_mut(g).enumerate().for_each_init(
            || (vec![0f32; g + 2], vec![0u32; g]),
            |(mid, row), (y, out)| {
                gradient_row(&density, y, mid, row);
                for (x, pair) in out.iter_mut().enumerate() {
                    *pair = PairedWords::pair(row[x], row[(x + 1).min(g - 1)]);
                }
            },
        );
        points.par_chunks_mut(per * s).zip(grids.par_iter_mut()).enumerate().for_each(|(t, (pts, grid))| {
            let mut work = LaneWork::new();
            if p.splat_next != 0 {
                grid.fill(T::default());
            }
            for (i, group) in pts.chunks_mut(s).enumerate() {
                advect_group(&p, &PairedWords(&gradient), group, &mut work);
                if p.splat_next != 0 {
                    splat_lanes(&p, group, &w[t * per + i], grid);
                }
            }
        });
    }
    // Each group's lanes to edge after edge, in place: a group holds the same floats either way.
    let mut flat: Vec<f32> =
        bytemuck::allocation::try_cast_vec(points).unwrap_or_else(|(_, p)| bytemuck::cast_slice(&p).to_vec());
    flat.par_chunks_mut(s * 2 * LANES).for_each(|group| {
        let lanes = group.to_vec();
        for l in 0..LANES {
            for k in 0..s {
                for c in 0..2 {
                    group[(l * s + k) * 2 + c] = lanes[(k * 2 + c) * LANES + l];
                }
            }
        }
    });
    flat.truncate(n * s * 2);
    bytemuck::allocation::try_cast_vec(flat).unwrap_or_else(|(_, flat)| bytemuck::cast_slice(&flat).to_vec())
}

/// Edge `e`'s weight (1 without a weight column), or 0 for a lane past the last edge `n - 1`.
fn weight(weights: Option<&[u32]>, e: usize, n: usize) -> u32 {
    match weights {
        _ if e >= n => 0,
        Some(w) => w[e],
        None => 1,
    }
}
