//! Arrow arrays over a trace's own columns: no copy of a trace that may hold billions of rows,
//! for the tables handed to Python and to the query engine. Each array keeps the dataset alive.

use std::ptr::NonNull;
use std::sync::Arc;

use arrow_array::PrimitiveArray;
use arrow_array::types::{ArrowPrimitiveType, Float64Type, UInt32Type, UInt64Type};
use arrow_buffer::{Buffer, ScalarBuffer};
use exaviz_model::dataset::Dataset;

/// Keeps the dataset alive while Arrow buffers point into its columns.
struct Owner(#[expect(dead_code, reason = "held, never read: it keeps the columns alive")] Arc<Dataset>);

// The buffers are read only; nothing in the dataset is left half-changed by a panic while they
// live.
impl std::panic::RefUnwindSafe for Owner {}

/// The column `pick` borrows from `dataset` as an Arrow array sharing its memory.
// The one unsafe call of the crate: an Arrow buffer over the dataset's own column. `pick` can
// only return memory that lives as long as the dataset it borrows (or longer), and the array
// holds the dataset.
#[allow(unsafe_code)]
fn shared<T: ArrowPrimitiveType>(
    dataset: &Arc<Dataset>,
    pick: impl for<'a> Fn(&'a Dataset) -> &'a [T::Native],
) -> PrimitiveArray<T> {
    let column = pick(dataset);
    let bytes = std::mem::size_of_val(column);
    let buffer = match NonNull::new(column.as_ptr() as *mut u8) {
        // SAFETY: `column` lies in `dataset` (borrowed from it by `pick`), which the buffer's
        // owner keeps alive; a dataset behind an `Arc` is never changed while shared; the memory
        // is aligned for its type (a Vec's).
        Some(ptr) if bytes > 0 => unsafe {
            Buffer::from_custom_allocation(ptr, bytes, Arc::new(Owner(dataset.clone())))
        },
        _ => Buffer::from_vec(Vec::<T::Native>::new()),
    };
    PrimitiveArray::<T>::new(ScalarBuffer::new(buffer, 0, column.len()), None)
}

/// A `u32` column of `dataset`, shared.
pub fn u32s(dataset: &Arc<Dataset>, pick: impl for<'a> Fn(&'a Dataset) -> &'a [u32]) -> PrimitiveArray<UInt32Type> {
    shared::<UInt32Type>(dataset, pick)
}

/// A `u64` column of `dataset`, shared.
pub fn u64s(dataset: &Arc<Dataset>, pick: impl for<'a> Fn(&'a Dataset) -> &'a [u64]) -> PrimitiveArray<UInt64Type> {
    shared::<UInt64Type>(dataset, pick)
}

/// An `f64` column of `dataset`, shared.
pub fn f64s(dataset: &Arc<Dataset>, pick: impl for<'a> Fn(&'a Dataset) -> &'a [f64]) -> PrimitiveArray<Float64Type> {
    shared::<Float64Type>(dataset, pick)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_column_reads_the_datasets_values_and_outlives_its_handle() {
        let mut d = Dataset::default();
        d.trace.intervals.push(3, 10, 20, 1, 0);
        d.trace.intervals.push(4, 11, 25, 2, 1);
        let d = Arc::new(d);
        let start = u64s(&d, |d| &d.trace.intervals.start);
        let loc = u32s(&d, |d| &d.trace.intervals.location);
        let empty = f64s(&d, |d| &d.trace.metrics.value);
        drop(d);
        assert_eq!(start.values().as_ref(), &[10, 11]);
        assert_eq!(loc.values().as_ref(), &[3, 4]);
        assert_eq!(empty.len(), 0);
    }
}
