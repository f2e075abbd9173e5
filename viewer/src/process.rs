//! What the process sets up before any thread exists: a private runtime folder for the Vulkan
//! loaders, and glibc's malloc kept from returning every freed block to the system. The only
//! unsafe code of the workspace, each block with its reason.

/// Mesa's Vulkan drivers print "XDG_RUNTIME_DIR is invalid or not set" twice on every run where
/// the variable is missing (headless machines, CI). Give them a private folder instead, before
/// any thread exists.
#[cfg(unix)]
pub(crate) fn ensure_runtime_dir() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if std::env::var_os("XDG_RUNTIME_DIR").is_some() {
        return;
    }
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("exaviz-runtime-{uid}"));
    let ok = std::fs::create_dir_all(&dir).is_ok()
        && std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).is_ok();
    if ok {
        #[expect(unsafe_code, reason = "set_var is unsafe in edition 2024; main is still single-threaded here")]
        // SAFETY: no other thread exists yet, so nothing reads the environment concurrently.
        unsafe {
            std::env::set_var("XDG_RUNTIME_DIR", dir);
        }
    }
}

#[cfg(not(unix))]
pub(crate) fn ensure_runtime_dir() {}

/// glibc's malloc hands freed blocks of 128 KiB and more straight back to the system, so every
/// row group decoded and every window read faults its pages in afresh (1.6 us per 4 KiB page
/// here). Keep blocks under 32 MiB in the heap, and up to 256 MiB of freed memory for reuse:
/// a store's pyramid pass spent a third of its time in the kernel before (see docs/benchmarks/store.md,
/// "The pyramid pass without copies or page faults"). Larger blocks still go back at once.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn keep_freed_memory() {
    #[expect(unsafe_code, reason = "mallopt is a C function; main is still single-threaded here")]
    // SAFETY: mallopt only sets two of the allocator's parameters, before any thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn keep_freed_memory() {}
