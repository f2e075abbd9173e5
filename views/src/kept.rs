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

/// What a trace's message columns are known by: their addresses and lengths, and a hash of a
/// sample of their values.
type ColumnsKey = ([usize; 4], usize, u64);

/// The owner under which a GPU device keeps `t`'s message columns (send ticks, senders,
/// receivers, sizes) for a view that bins them there ([`exaviz_compute::matrix_cells`]): one
/// per trace, found again by the columns' addresses, length and a sample of their values (a
/// trace's columns do not change while it lives); the last four traces' kept.
pub(crate) fn messages_owner(t: &exaviz_model::Trace) -> exaviz_compute::Owner {
    use std::hash::{Hash, Hasher};
    static OWNERS: std::sync::Mutex<Vec<(ColumnsKey, exaviz_compute::Owner)>> = std::sync::Mutex::new(Vec::new());
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
    let mut owners = OWNERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(k) = owners.iter().position(|(k, _)| *k == key) {
        let kept = owners.remove(k);
        let owner = kept.1.clone();
        owners.push(kept);
        return owner;
    }
    let owner: exaviz_compute::Owner = std::sync::Arc::new(key);
    owners.push((key, owner.clone()));
    if owners.len() > 4 {
        owners.remove(0);
    }
    owner
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
