//! Runs the cases: every side once per round, alternating, each a fresh process with the same
//! thread settings; records its JSON line and how busy the rest of the machine was.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::Options;
use super::plan::{Case, Side};

/// Runs every side of `case` `opts.rounds` times, alternating; a failed run is recorded, not fatal.
pub(crate) fn run_case(case: &Case, opts: &Options) -> Result<Value> {
    let mut runs: Vec<Vec<Value>> = vec![Vec::new(); case.sides.len()];
    let mut errors: Vec<Vec<String>> = vec![Vec::new(); case.sides.len()];
    for round in 0..opts.rounds {
        for (k, side) in case.sides.iter().enumerate() {
            let before = CpuTicks::now();
            let start = Instant::now();
            let tag = format!("{}-{}-{}", case.workload, case.name, side.label);
            let result = run_side(side, opts, &tag);
            let other = CpuTicks::now().others_since(&before, start.elapsed().as_secs_f64());
            match result {
                Ok(mut v) => {
                    v["other_cpus"] = other.into();
                    eprintln!(
                        "[{} {}] round {}/{} {}: {:.4} {} ({:.1} s)",
                        case.workload,
                        case.name,
                        round + 1,
                        opts.rounds,
                        side.label,
                        v["value"].as_f64().unwrap_or(f64::NAN),
                        v["unit"].as_str().unwrap_or(""),
                        start.elapsed().as_secs_f64()
                    );
                    runs[k].push(v);
                }
                Err(e) => {
                    eprintln!(
                        "[{} {}] {} FAILED: {e:#}",
                        case.workload, case.name, side.label
                    );
                    errors[k].push(format!("{e:#}"));
                }
            }
        }
    }
    let sides: Vec<Value> = case
        .sides
        .iter()
        .zip(runs.into_iter().zip(errors))
        .map(|(s, (runs, errors))| {
            json!({
                "label": s.label,
                "command": s.argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
                "runs": runs,
                "errors": errors,
            })
        })
        .collect();
    Ok(json!({"workload": case.workload, "name": case.name, "sides": sides}))
}

/// Busy CPU time of the whole machine and of this process's finished children (Linux `/proc`,
/// in clock ticks of 1/100 s), to tell how much CPU other processes used during a run.
pub(crate) struct CpuTicks {
    busy: Option<u64>,
    children: Option<u64>,
}

impl CpuTicks {
    pub(crate) fn now() -> Self {
        let busy = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            let f: Vec<u64> = s
                .lines()
                .next()?
                .split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect();
            // user nice system idle iowait irq softirq steal ...: all but idle and iowait.
            (f.len() >= 8).then(|| f.iter().take(8).sum::<u64>() - f[3] - f[4])
        });
        let children = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| {
                // Fields after the `(comm)`: state is field 3, cutime and cstime are fields 16, 17.
                let rest = &s[s.rfind(')')? + 2..];
                let f: Vec<&str> = rest.split_whitespace().collect();
                Some(f.get(13)?.parse::<u64>().ok()? + f.get(14)?.parse::<u64>().ok()?)
            });
        Self { busy, children }
    }

    /// Average number of CPUs kept busy by other processes since `before`, over `wall_s`.
    pub(crate) fn others_since(&self, before: &Self, wall_s: f64) -> f64 {
        match (self.busy, before.busy, self.children, before.children) {
            (Some(b1), Some(b0), Some(c1), Some(c0)) if wall_s > 0.0 => {
                let others = b1.saturating_sub(b0) as f64 - c1.saturating_sub(c0) as f64;
                (others / 100.0 / wall_s).max(0.0)
            }
            _ => f64::NAN,
        }
    }
}

/// One subprocess with the thread settings, killed after `opts.timeout_s`; returns its last JSON
/// line. Its output goes to files under `target/bench-compare/logs/` (the last run of each kind).
fn run_side(side: &Side, opts: &Options, tag: &str) -> Result<Value> {
    let n = opts.threads.to_string();
    let logs = opts.out.join("logs");
    std::fs::create_dir_all(&logs)?;
    let stem: String = tag
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let (out_path, err_path) = (
        logs.join(format!("{stem}.out")),
        logs.join(format!("{stem}.err")),
    );
    // With fewer threads than CPUs, both sides run on the same first CPUs (also limiting the
    // sandbox workers of the code verifier, which use every CPU the process may run on).
    let mut cmd = if opts.pin {
        let mut c = Command::new("taskset");
        c.arg("-c")
            .arg(format!("0-{}", opts.threads - 1))
            .args(&side.argv);
        c
    } else {
        let mut c = Command::new(&side.argv[0]);
        c.args(&side.argv[1..]);
        c
    };
    let mut child = cmd
        .envs(side.env.iter().map(|(k, v)| (k, v)))
        .env("RAYON_NUM_THREADS", &n)
        .env("OMP_NUM_THREADS", &n)
        .env("MKL_NUM_THREADS", &n)
        .env("OPENBLAS_NUM_THREADS", &n)
        .env("RLVR_DATA_DIR", &opts.data)
        .env("TOKENIZERS_PARALLELISM", "false")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .spawn()
        .with_context(|| format!("could not start {:?}", side.argv[0]))?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed().as_secs_f64() > opts.timeout_s {
            child.kill()?;
            child.wait()?;
            bail!(
                "killed after {:.0} s (--timeout-s); output in {}",
                opts.timeout_s,
                err_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    if !status.success() {
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        bail!(
            "exit {status}: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .context("no JSON line on stdout")?;
    serde_json::from_str(line).with_context(|| format!("bad JSON line: {line}"))
}
