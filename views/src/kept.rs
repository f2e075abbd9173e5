//! One value kept with the key it was made for: what a view computes once per trace (an index,
//! a graph, a path) and reuses while the key holds.

/// One value kept with the key it was made for.
pub(crate) type Kept<K, V> = std::sync::Mutex<Option<(K, V)>>;

/// The value kept in `slot` for `key`, made by `make` (and kept) where the slot holds another.
pub(crate) fn kept<K: PartialEq, V: Clone>(slot: &Kept<K, V>, key: K, make: impl FnOnce() -> V) -> V {
    let mut cached = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match cached.as_ref() {
        Some((k, v)) if *k == key => v.clone(),
        _ => {
            let v = make();
            *cached = Some((key, v.clone()));
            v
        }
    }
}

/// The last few values kept with their keys, most recently used last.
pub(crate) type Recent<K, V> = std::sync::Mutex<Vec<(K, V)>>;

/// The value kept in `slot` for `key`, made by `make` (and kept, the least recently used
/// dropped past `most`) where none is.
pub(crate) fn recent<K: PartialEq, V: Clone>(slot: &Recent<K, V>, key: K, most: usize, make: impl FnOnce() -> V) -> V {
    let mut kept = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let found = match kept.iter().position(|(k, _)| *k == key) {
        Some(k) => kept.remove(k),
        None => (key, make()),
    };
    let value = found.1.clone();
    kept.push(found);
    if kept.len() > most {
        kept.remove(0);
    }
    value
}

/// What a trace's message columns are known by: their addresses and lengths, and a hash of a
/// sample of their values.
type ColumnsKey = ([usize; 4], usize, u64);

/// The owner under which a GPU device keeps `t`'s message columns (send ticks, senders,
/// receivers, sizes) for a view that bins them there ([`exaviz_compute::matrix_cells`]): one
/// per trace, found again by the columns' addresses, length and a sample of their values (a
/// trace's columns do not change while it lives); the last four traces' kept.
pub(crate) fn messages_owner(t: &exaviz_model::Trace) -> exaviz_compute::Owner {
    use std::hash::{Hash, Hasher};
    static OWNERS: Recent<ColumnsKey, exaviz_compute::Owner> = std::sync::Mutex::new(Vec::new());
    let m = &t.messages;
    let n = m.source.len();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for i in (0..n).step_by((n / 64).max(1)) {
        (m.send_time[i], m.source[i], m.destination.get(i), m.bytes.get(i)).hash(&mut h);
    }
    let addresses = [
        m.send_time.as_ptr() as usize,
        m.source.as_ptr() as usize,
        m.destination.as_ptr() as usize,
        m.bytes.as_ptr() as usize,
    ];
    let key = (addresses, n, h.finish());
    recent(&OWNERS, key, 4, || std::sync::Arc::new(key) as exaviz_compute::Owner)
}

/// Whether a trace's rows are kept on `backend`'s device where they fit: on a GPU whose kernels
/// do not share the CPU's cores, or as `EXAVIZ_GPU_ROWS` asks (`1` on any GPU adapter, `0`
/// never).
pub(crate) fn rows_wanted(backend: &exaviz_compute::Backend) -> bool {
    let exaviz_compute::Backend::Gpu(ctx) = backend else { return false };
    let asked = std::env::var("EXAVIZ_GPU_ROWS").ok();
    match asked.as_deref().map(str::trim) {
        Some("1") => true,
        Some("0") => false,
        _ => !ctx.on_cpu_cores(),
    }
}
