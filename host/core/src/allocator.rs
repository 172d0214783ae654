//! The one setting proem gives the system allocator.
//!
//! A build allocates and frees strings the size of the prompt (~90 KB on
//! the reference workload) many times. glibc's malloc gives the top of its
//! heap back to the system whenever more than 128 KiB of it is free, so
//! consecutive builds shrink and regrow the heap: a turn with a new clock
//! measured 146 µs p50 in some runs and 118 µs in others, and a steady 121
//! µs with the threshold raised (docs/PERFORMANCE.md). The `proem` binary
//! calls [`tune`] first thing; a program embedding proem on glibc may too.
//!
//! Measured and not taken: mimalloc as the global allocator made that build
//! 86 µs, but every one-shot `proem build` process 0.45 ms slower and 1 MB
//! bigger (its start-up and arena), and most callers run one process per
//! turn.

/// Free memory kept at the top of the heap before any is returned: a few
/// builds' worth.
pub const TRIM_THRESHOLD_BYTES: i32 = 16 * 1024 * 1024;

/// Raises glibc's trim threshold to [`TRIM_THRESHOLD_BYTES`]. A no-op on
/// other C libraries and systems. Call it before the process's threads start.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes a malloc parameter; M_TRIM_THRESHOLD
    // takes any non-negative byte count.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES);
    }
}

/// Returns the free memory of every malloc arena to the system now
/// (`malloc_trim(0)`), whatever [`TRIM_THRESHOLD_BYTES`] keeps: `proem
/// serve` calls it when many connections have closed, so that the memory
/// they held (their buffers, freed in the arenas of the threads that served
/// them) goes back. A no-op on other C libraries and systems. Takes a few
/// milliseconds: call it off the request path.
pub fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free pages of malloc's own arenas;
    // it takes any pad and locks each arena while it works.
    unsafe {
        libc::malloc_trim(0);
    }
}
