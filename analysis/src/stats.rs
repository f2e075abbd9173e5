//! The statistics the analyses measure peers by, written once: the lower median, the yardstick
//! of the training rules' stages and of the critical path's stragglers. Of two values it is the
//! lesser, so that one straggler among two peers does not move the yardstick it is measured by.

use std::cmp::Ordering;

/// Values with a total order: floats by IEEE 754's total order (NaN sorts last), integers as
/// they are.
pub trait Total: Copy + Default {
    fn total(&self, other: &Self) -> Ordering;
}

impl Total for f64 {
    fn total(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

impl Total for u64 {
    fn total(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
}

/// The lower median of `v` (sorted in place; of an even count, the lesser middle value); the
/// default (0) for none.
pub fn lower_median<T: Total>(v: &mut [T]) -> T {
    v.sort_unstable_by(T::total);
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of_two_peers_the_lesser_is_the_yardstick() {
        assert_eq!(lower_median(&mut [3.0, 1.0]), 1.0);
        assert_eq!(lower_median(&mut [5u64, 9, 1]), 5);
        assert_eq!(lower_median::<f64>(&mut []), 0.0);
        assert_eq!(lower_median(&mut [2.0, f64::NAN, 1.0]), 2.0, "NaN sorts last");
    }
}
