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
