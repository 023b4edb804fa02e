//! The run report: `report.md` with SVG plots of the metrics curves, made with plotters.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::checkpoint::TrainerState;
use crate::error::{Error, Result};
use crate::metrics::Metrics;

/// The curves the report plots: (metric key, title).
const CURVES: &[(&str, &str)] = &[
    ("reward/mean", "mean reward"),
    ("eval/accuracy", "held-out accuracy"),
    ("response/length_mean", "mean response length (tokens)"),
    ("objective/kl_ref", "KL to reference"),
    (
        "objective/approx_kl_old",
        "approx. KL to the sampling policy",
    ),
    ("objective/entropy", "entropy"),
];

/// Writes `report.md` and one SVG per available curve into `run_dir`.
pub fn write_report(
    run_dir: &Path,
    history: &[(usize, Metrics)],
    state: &TrainerState,
) -> Result<()> {
    let mut md = String::from("# Run report\n\n");
    if let (Some(base), Some(&(_, last))) = (state.base_accuracy, state.evals.last()) {
        let _ = writeln!(
            md,
            "held-out accuracy: base {:.1}% -> trained {:.1}%\n",
            100.0 * base,
            100.0 * last
        );
    }
    if !state.base_eval.is_empty() {
        md += &episode_table(&state.base_eval, history);
    }
    let _ = writeln!(
        md,
        "steps: {}, skipped updates: {}\n",
        state.step, state.skipped_updates
    );
    for (key, title) in CURVES {
        let points: Vec<(f64, f64)> = history
            .iter()
            .filter_map(|(step, m)| {
                m.get(*key)
                    .filter(|v| v.is_finite())
                    .map(|v| (*step as f64, *v))
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        let file = format!("{}.svg", key.replace('/', "_"));
        plot_series(&run_dir.join(&file), title, &[("", points)])?;
        let _ = writeln!(md, "## {title}\n\n![{title}]({file})\n");
    }
    let path = run_dir.join("report.md");
    std::fs::write(&path, md).map_err(|e| Error::io(&path, e))
}

/// The held-out episode metrics (`eval/env/*`) of the base evaluation beside those of the last
/// evaluation in `history` (a Markdown table; `-` where the run has not evaluated yet).
fn episode_table(base: &Metrics, history: &[(usize, Metrics)]) -> String {
    let last = history
        .iter()
        .rev()
        .find(|(_, m)| m.contains_key("eval/accuracy"))
        .map(|(_, m)| m);
    let mut md = String::from("| held-out episodes | base | last evaluation |\n|---|---|---|\n");
    for (key, value) in base {
        let now = last
            .and_then(|m| m.get(key))
            .map_or("-".to_string(), |v| format!("{v:.3}"));
        let _ = writeln!(md, "| `{key}` | {value:.3} | {now} |");
    }
    md + "\n"
}

/// Plots one or more named series (x = step) into an SVG file.
pub fn plot_series(path: &Path, title: &str, series: &[(&str, Vec<(f64, f64)>)]) -> Result<()> {
    let all = series.iter().flat_map(|(_, pts)| pts.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x0 > x1 {
        return Ok(());
    }
    let pad = ((y1 - y0) * 0.05).max(1e-6);
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::new(path, (640, 400)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(x0..x1.max(x0 + 1.0), (y0 - pad)..(y1 + pad))?;
        chart.configure_mesh().x_desc("step").draw()?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let line =
                chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?;
            if !name.is_empty() {
                line.label(*name)
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
            }
        }
        if series.iter().any(|(n, _)| !n.is_empty()) {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| Error::Checkpoint(format!("plotting {}: {e}", path.display())))
}
