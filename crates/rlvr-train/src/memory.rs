//! The process's peak resident memory, for the `memory/peak_rss_mb` metric of every step.

/// Peak resident set size of this process in MiB (Linux `VmHWM` in `/proc/self/status`);
/// `None` where the kernel does not report it.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With 256 MiB touched, the peak is at least that (other tests share the process, so
    /// only the lower bound is exact) and below the machine's memory (a kB/MiB mix-up or the
    /// virtual `VmPeak` would break that).
    #[test]
    #[cfg(target_os = "linux")]
    fn the_peak_covers_touched_memory() {
        let block = vec![1u8; 256 << 20];
        assert!(
            std::hint::black_box(&block)
                .iter()
                .step_by(4096)
                .all(|&b| b == 1)
        );
        let peak = peak_rss_mb().expect("Linux reports VmHWM");
        assert!((256.0..65536.0).contains(&peak), "peak {peak} MiB");
    }
}
