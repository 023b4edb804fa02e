//! The markdown section of `docs/benchmarks.md` written by `cargo xtask bench-compare`: machine,
//! versions, command, one table per workload (medians with min–max, ratios, targets).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::tables;

/// The heading of the section this command owns.
pub(crate) const HEADING: &str = "## Side by side with PyTorch and Math-Verify";

/// rustc, burn (from Cargo.lock) and the reference packages' versions.
pub(crate) fn versions(root: &Path, python: &Path) -> Result<Value> {
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    let burn = lock
        .split("[[package]]")
        .find(|p| p.contains("\nname = \"burn\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
        .map(|v| v.trim_matches('"').to_owned())
        .unwrap_or_default();
    let script = "import json, sys, importlib.metadata as m\n\
        v = {'python': sys.version.split()[0]}\n\
        for p in ['torch', 'transformers', 'numpy', 'math-verify']:\n\
        \x20   try: v[p] = m.version(p)\n\
        \x20   except Exception as e: v[p] = 'missing'\n\
        print(json.dumps(v))";
    let out = Command::new(python)
        .args(["-c", script])
        .output()
        .with_context(|| format!("running {}", python.display()))?;
    let mut py: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("{} did not report versions", python.display()))?;
    if let Some(missing) = py
        .as_object()
        .and_then(|m| m.iter().find(|(_, v)| *v == "missing"))
    {
        anyhow::bail!(
            "{} lacks the package `{}` (pip install torch==2.9.0 transformers numpy math-verify)",
            python.display(),
            missing.0
        );
    }
    py["rustc"] = rustc.into();
    py["burn"] = burn.into();
    Ok(py)
}

/// CPU model, logical CPUs, memory, AVX-512, load average when the run started.
pub(crate) fn machine(threads: usize) -> Value {
    let lscpu = Command::new("lscpu")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let field = |name: &str| {
        lscpu
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim_start_matches(':').trim().to_owned())
            .unwrap_or_default()
    };
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    json!({
        "cpu": field("Model name"),
        "cpus": field("CPU(s)"),
        "avx512": field("Flags").split(' ').any(|f| f == "avx512f"),
        "mem_gib": (mem_gib * 10.0).round() / 10.0,
        "threads": threads,
        "loadavg_at_start": load.split(' ').take(3).collect::<Vec<_>>().join(" "),
    })
}

/// Median, min and max of `key` over the runs of one side.
pub(crate) fn stats(side: &Value, key: &str) -> Option<(f64, f64, f64)> {
    let mut xs: Vec<f64> = side["runs"]
        .as_array()?
        .iter()
        .filter_map(|r| pointer(r, key).as_f64())
        .collect();
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let med = if n % 2 == 1 {
        xs[n / 2]
    } else {
        0.5 * (xs[n / 2 - 1] + xs[n / 2])
    };
    Some((med, xs[0], xs[n - 1]))
}

/// `a/b/c` path lookup.
fn pointer<'a>(v: &'a Value, key: &str) -> &'a Value {
    key.split('/').fold(v, |v, k| &v[k])
}

/// A number with 3 significant digits (thousands grouped).
pub(crate) fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        let s = format!("{:.0}", x);
        let (sign, digits) = s.split_at(usize::from(s.starts_with('-')));
        let grouped: Vec<String> = digits
            .as_bytes()
            .rchunks(3)
            .rev()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        format!("{sign}{}", grouped.join(","))
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

pub(crate) fn cell(s: Option<(f64, f64, f64)>) -> String {
    match s {
        Some((m, lo, hi)) if lo == hi => num(m),
        Some((m, lo, hi)) => format!("{} [{}–{}]", num(m), num(lo), num(hi)),
        None => "failed".into(),
    }
}

fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "–",
    }
}

pub(crate) fn cases<'a>(doc: &'a Value, workload: &str) -> Vec<&'a Value> {
    doc["cases"]
        .as_array()
        .map(|a| a.iter().filter(|c| c["workload"] == workload).collect())
        .unwrap_or_default()
}

pub(crate) fn side<'a>(case: &'a Value, label: &str) -> Option<&'a Value> {
    case["sides"]
        .as_array()?
        .iter()
        .find(|s| s["label"] == label)
}

pub(crate) fn med(case: &Value, label: &str, key: &str) -> Option<f64> {
    side(case, label).and_then(|s| stats(s, key)).map(|s| s.0)
}

pub(crate) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? / b?)
}

pub(crate) fn ratio_cell(r: Option<f64>) -> String {
    r.map_or("–".into(), |r| format!("{r:.2}×"))
}

/// Collects "met"/"missed" for the summary line.
#[derive(Default)]
pub(crate) struct Targets(Vec<(String, Option<bool>)>);

impl Targets {
    pub(crate) fn check(&mut self, what: String, ok: Option<bool>) -> &'static str {
        self.0.push((what, ok));
        verdict(ok)
    }
}

/// The whole section, heading included.
pub(crate) fn section(doc: &Value) -> String {
    let mut s = String::new();
    let mut t = Targets::default();
    let m = &doc["machine"];
    let v = &doc["versions"];
    let _ = writeln!(s, "{HEADING}\n");
    let _ = writeln!(
        s,
        "Measured by `{}` in one run ({} interleaved round{} per workload: rlvr-rs, then the reference, \
         each a fresh process; warm-up excluded on both sides; medians over rounds with [min–max]; \
         total {:.0} s).{}\n",
        doc["command"].as_str().unwrap_or(""),
        doc["rounds"],
        if doc["rounds"] == 1 { "" } else { "s" },
        doc["wall_s"].as_f64().unwrap_or(0.0),
        if doc["quick"] == true {
            " **Quick mode: small shapes and subsets, not the comparison's numbers.**"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "- Machine: {} ({} logical CPUs{}, {} GiB); {} thread{} on both sides \
         (`RAYON_NUM_THREADS`, `OMP_NUM_THREADS`, `torch.set_num_threads`){}; load average at start {}.",
        m["cpu"].as_str().unwrap_or("?"),
        m["cpus"].as_str().unwrap_or("?"),
        if m["avx512"] == true { ", AVX-512" } else { "" },
        m["mem_gib"],
        m["threads"],
        if m["threads"] == 1 { "" } else { "s" },
        if doc["pinned"] == true {
            format!(
                ", every process pinned to CPUs 0–{}",
                m["threads"].as_u64().unwrap_or(1) - 1
            )
        } else {
            String::new()
        },
        m["loadavg_at_start"].as_str().unwrap_or("?"),
    );
    let mut others: Vec<f64> = doc["cases"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["sides"].as_array().into_iter().flatten())
        .flat_map(|side| side["runs"].as_array().into_iter().flatten())
        .filter_map(|r| r["other_cpus"].as_f64())
        .collect();
    others.sort_by(f64::total_cmp);
    if let (Some(max), Some(mid)) = (others.last(), others.get(others.len() / 2)) {
        let _ = writeln!(
            s,
            "- CPUs used by other processes during a run (from `/proc/stat`): median {mid:.2}, max {max:.2}{}.",
            if *max > 0.2 {
                " (**the machine was not idle**: other processes shared the cores, which slows \
                 PyTorch's OpenMP threads far more than rayon's; not a fair comparison)"
            } else {
                ""
            }
        );
    }
    let vs = |k: &str| v[k].as_str().unwrap_or("?").to_owned();
    let _ = writeln!(
        s,
        "- Versions: {}, burn {} (flex CPU backend, f32, release); Python {}, torch {}, transformers {}, \
         numpy {}, math-verify {}.",
        vs("rustc"),
        vs("burn"),
        vs("python"),
        vs("torch"),
        vs("transformers"),
        vs("numpy"),
        vs("math-verify")
    );
    let _ = writeln!(
        s,
        "- Raw results: `target/bench-compare/results.json`; workers: `benches/src/bin/bench_worker/`, \
         `benches/compare/*.py`.\n"
    );

    let mut body = String::new();
    let peak = tables::gemm(&mut body, doc);
    tables::train(&mut body, doc, peak, &mut t);
    tables::generate(&mut body, doc, &mut t);
    tables::optim(&mut body, doc, &mut t);
    tables::math(&mut body, doc, &mut t);
    tables::mbpp(&mut body, doc, &mut t);

    let met = t.0.iter().filter(|(_, ok)| *ok == Some(true)).count();
    let missed: Vec<&str> =
        t.0.iter()
            .filter(|(_, ok)| *ok == Some(false))
            .map(|(w, _)| w.as_str())
            .collect();
    let _ = writeln!(
        s,
        "Targets: {met} of {} met{}.\n",
        t.0.len(),
        if missed.is_empty() {
            String::new()
        } else {
            format!("; missed: {}", missed.join("; "))
        }
    );
    let failures: Vec<String> = doc["cases"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| {
            c["sides"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(move |side| {
                    side["errors"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(move |e| {
                            let first = e.as_str().unwrap_or("").lines().next().unwrap_or("");
                            format!(
                                "- {} {}, {}: {first}",
                                c["workload"].as_str().unwrap_or(""),
                                c["name"].as_str().unwrap_or(""),
                                side["label"].as_str().unwrap_or("")
                            )
                        })
                })
        })
        .collect();
    if !failures.is_empty() {
        body.push_str("Failed runs (details in `target/bench-compare/results.json`):\n\n");
        body.push_str(&failures.join("\n"));
        body.push_str("\n\n");
    }
    s + &body
}

/// Replaces the section under [`HEADING`] (up to the next `## ` heading) in `path`, or appends it.
pub(crate) fn replace_section(path: &Path, section: &str) -> Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let new = match lines.iter().position(|l| l.trim_end() == HEADING) {
        Some(start) => {
            let end = lines[start + 1..]
                .iter()
                .position(|l| l.starts_with("## "))
                .map_or(lines.len(), |k| start + 1 + k);
            let mut out = lines[..start].join("\n");
            out.push('\n');
            out.push_str(section.trim_end());
            out.push('\n');
            if end < lines.len() {
                out.push('\n');
                out.push_str(&lines[end..].join("\n"));
                out.push('\n');
            }
            out
        }
        None => format!("{}\n\n{}\n", text.trim_end(), section.trim_end()),
    };
    std::fs::write(path, new).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_section_keeps_the_other_sections() {
        let dir = std::env::temp_dir().join(format!("bench-compare-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("benchmarks.md");
        let before = format!("# B\n\nintro\n\n## A\n\na\n\n{HEADING}\n\nold\n\n## C\n\nc\n");
        std::fs::write(&path, &before).unwrap();
        replace_section(&path, &format!("{HEADING}\n\nnew\n")).unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            after,
            format!("# B\n\nintro\n\n## A\n\na\n\n{HEADING}\n\nnew\n\n## C\n\nc\n")
        );
        // Absent heading: appended at the end.
        std::fs::write(&path, "# B\n\n## A\n\na\n").unwrap();
        replace_section(&path, &format!("{HEADING}\n\nx\n")).unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert_eq!(after, format!("# B\n\n## A\n\na\n\n{HEADING}\n\nx\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn numbers_have_three_significant_digits_and_grouping() {
        assert_eq!(num(152_849.8), "152,850");
        assert_eq!(num(1234.4), "1,234");
        assert_eq!(num(307.4), "307");
        assert_eq!(num(30.34), "30.3");
        assert_eq!(num(2.013), "2.01");
        assert_eq!(num(0.5312), "0.531");
    }

    #[test]
    fn stats_are_median_min_max_over_runs() {
        let side = json!({"runs": [{"value": 3.0}, {"value": 1.0}, {"value": 2.0}, {"x": 0}]});
        assert_eq!(stats(&side, "value"), Some((2.0, 1.0, 3.0)));
        let even = json!({"runs": [{"a": {"b": 1.0}}, {"a": {"b": 4.0}}]});
        assert_eq!(stats(&even, "a/b"), Some((2.5, 1.0, 4.0)));
        assert_eq!(stats(&even, "missing"), None);
    }
}
