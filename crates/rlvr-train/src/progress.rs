//! Progress bars that share the terminal with log lines.
//!
//! Every bar of the crate is drawn through one `indicatif::MultiProgress`; [`LogWriter`] is a
//! stderr writer that clears the bars, writes a log line and redraws them, so log output (the
//! `rlvr` binary's `tracing` subscriber writes through it) never tears a bar. Off a terminal the
//! bars are hidden and [`LogWriter`] is plain stderr.

use std::io::Write;
use std::sync::LazyLock;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

static BARS: LazyLock<MultiProgress> = LazyLock::new(MultiProgress::new);

/// A bar of `len` steps with the `indicatif` template `template`, drawn on stderr beside the
/// log lines (hidden when stderr is not a terminal). Hand it to [`finish`] when done.
///
/// # Panics
/// If `template` is not a valid `indicatif` template (the templates are literals of this crate).
pub fn bar(len: u64, template: &str) -> ProgressBar {
    let style = ProgressStyle::with_template(template).expect("valid template");
    BARS.add(ProgressBar::new(len).with_style(style))
}

/// Clears `bar` from the terminal and releases it (a summary goes to the log instead).
pub fn finish(bar: &ProgressBar) {
    bar.finish_and_clear();
    BARS.remove(bar);
}

/// stderr, with the progress bars cleared around each write.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        BARS.suspend(|| std::io::stderr().write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        BARS.suspend(|| std::io::stderr().write_all(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
