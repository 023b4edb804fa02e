//! Process-wide allocator tuning for tensor workloads: keep freed memory for reuse.
//!
//! Every burn op allocates its output, and the large ones (logits `[B, T, V]`, activations,
//! gradients) exceed glibc's mmap threshold (at most 32 MiB), so each is a fresh `mmap` whose
//! pages the kernel zeroes on first touch and unmaps on free. On SmolLM2-135M that page work
//! took a third of a forward+backward pass (perf: `clear_page_erms`); serving those blocks from
//! the heap and never trimming it made the pass 1.36× faster (docs/benchmarks.md). The price is
//! that the process keeps its peak heap size until it exits, which is what a training run
//! touches again on its next step anyway.

/// Serves all allocations from the heap and stops returning freed memory to the kernel
/// (glibc `mallopt(M_MMAP_MAX, 0)` and `mallopt(M_TRIM_THRESHOLD, i32::MAX)`).
///
/// Call it first thing in `main`, before threads start. Returns whether the settings were
/// applied: `false` on other C libraries, where it does nothing.
pub fn retain_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes allocator parameters; it is called before other threads
        // allocate, and both values are in the ranges glibc documents.
        unsafe {
            libc::mallopt(libc::M_MMAP_MAX, 0) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}
