//! `cargo xtask bench-compare`: the same workloads in rlvr-rs and in PyTorch / math-verify, run
//! alternately on one machine; writes `target/bench-compare/results.json` and the side-by-side
//! section of `docs/benchmarks.md`.
//!
//! The rlvr-rs side is the `bench_worker` binary of `benches/` (release build); the reference
//! side is `benches/compare/*.py` in a virtual environment with pinned PyTorch, transformers,
//! numpy and math-verify (created under `target/bench-compare/venv`, or `BENCH_PYTHON`). Every
//! subprocess prints one JSON line; each round is a fresh process for every side, in the order
//! rlvr-rs, reference, rlvr-rs, reference, ...

mod plan;
mod report;
mod runner;
mod tables;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use runner::{CpuTicks, run_case};

const USAGE: &str = "\
Usage: cargo xtask bench-compare [--rounds N] [--quick] [--only W[,W..]] [--threads N]
                                 [--python PATH] [--model DIR] [--data DIR] [--write-doc]
                                 [--timeout-s S] [--tch]

Workloads: train, generate, optim, math, mbpp, gemm (default: all).
  --rounds N     interleaved rounds per workload (default 3; --quick: 1)
  --quick        small shapes and subsets, for checking the harness (results not written to docs/)
  --threads N    threads for both sides (default: all cores)
  --python PATH  use this Python (with torch, transformers, numpy, math-verify) instead of creating
                 target/bench-compare/venv; also read from BENCH_PYTHON
  --model DIR    HF model for the generation workload (default: ~/.cache/rlvr-rs/smollm2-135m-instruct
                 when present, else a randomly initialised model of SmolLM2-135M's shape)
  --data DIR     datasets (default: $RLVR_DATA_DIR, else ../shared/datasets)
  --write-doc    write docs/benchmarks.md even with --quick or --only
  --timeout-s S  kill a run after S seconds and record it as failed (default 1800)
  --tch          also run the train step on burn's libtorch backend: builds bench_worker with
                 `--features tch` against the reference Python's torch (2.9.0, the version
                 tch 0.22 checks; LIBTORCH_USE_PYTORCH=1) and runs it with that torch's lib/
";

/// Packages the reference venv gets (`pip install`, PyPI only).
const REQUIREMENTS: [&str; 4] = [
    "torch==2.9.0",
    "transformers==5.24.0",
    "numpy==2.4.6",
    "math-verify==0.9.0",
];

/// The command-line options.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) rounds: usize,
    pub(crate) quick: bool,
    pub(crate) only: Option<Vec<String>>,
    pub(crate) threads: usize,
    pub(crate) python: Option<PathBuf>,
    pub(crate) model: Option<PathBuf>,
    pub(crate) data: PathBuf,
    pub(crate) write_doc: bool,
    pub(crate) timeout_s: f64,
    pub(crate) out: PathBuf,
    /// Run every subprocess under `taskset -c 0-(threads-1)` (when `threads` < CPUs).
    pub(crate) pin: bool,
    /// Add a libtorch (`tch`) side to the train step.
    pub(crate) tch: bool,
}

const WORKLOADS: [&str; 6] = ["train", "generate", "optim", "math", "mbpp", "gemm"];

fn parse(args: &[String], root: &Path) -> Result<Options> {
    let mut o = Options {
        rounds: 3,
        quick: false,
        only: None,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        python: std::env::var_os("BENCH_PYTHON")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from),
        model: None,
        data: std::env::var_os("RLVR_DATA_DIR")
            .filter(|p| !p.is_empty())
            .map_or_else(|| root.join("../shared/datasets"), PathBuf::from),
        write_doc: false,
        timeout_s: 1800.0,
        out: root.join("target/bench-compare"),
        pin: false,
        tch: false,
    };
    let mut rounds = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .with_context(|| format!("{a} needs a value\n\n{USAGE}"))
        };
        match a.as_str() {
            "--rounds" => rounds = Some(value()?.parse().context("--rounds")?),
            "--quick" => o.quick = true,
            "--only" => {
                let list: Vec<String> = value()?.split(',').map(str::to_owned).collect();
                if let Some(bad) = list.iter().find(|w| !WORKLOADS.contains(&w.as_str())) {
                    bail!("unknown workload `{bad}` (one of {})", WORKLOADS.join(", "));
                }
                o.only = Some(list);
            }
            "--threads" => o.threads = value()?.parse().context("--threads")?,
            "--python" => o.python = Some(value()?.into()),
            "--model" => o.model = Some(value()?.into()),
            "--data" => o.data = value()?.into(),
            "--write-doc" => o.write_doc = true,
            "--timeout-s" => o.timeout_s = value()?.parse().context("--timeout-s")?,
            "--tch" => o.tch = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}`\n\n{USAGE}"),
        }
    }
    o.rounds = rounds.unwrap_or(if o.quick { 1 } else { 3 });
    if o.rounds == 0 || o.threads == 0 {
        bail!("--rounds and --threads must be at least 1");
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if o.threads < cpus {
        o.pin = Command::new("taskset")
            .arg("-V")
            .output()
            .is_ok_and(|out| out.status.success());
        if !o.pin {
            eprintln!(
                "bench-compare: warning: taskset not found; sides are not pinned to {} CPUs",
                o.threads
            );
        }
    }
    Ok(o)
}

impl Options {
    fn wants(&self, workload: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|l| l.iter().any(|w| w == workload))
    }
}

/// Entry point: `cargo xtask bench-compare ARGS`.
pub fn run(args: &[String]) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()?;
    let opts = parse(args, &root)?;
    let out = opts.out.clone();
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let started = Instant::now();

    let python = match &opts.python {
        Some(p) => p.clone(),
        None => ensure_venv(&out.join("venv"))?,
    };
    // The libtorch worker first: both builds write target/release/bench_worker, so each is
    // copied out under its own name.
    let tch_worker = if opts.tch && opts.wants("train") {
        Some(build_tch_worker(&root, &out, &python)?)
    } else {
        None
    };
    let worker = build_worker(&root, &[], &[], &out.join("bin/bench_worker"))?;
    let before = CpuTicks::now();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let busy = CpuTicks::now().others_since(&before, 1.0);
    if busy > 0.2 {
        eprintln!(
            "bench-compare: warning: other processes keep {busy:.1} CPUs busy; PyTorch's OpenMP \
             threads slow down by up to 100x when they share cores, so compare on an idle machine"
        );
    }
    let versions = report::versions(&root, &python)?;

    let cases = plan::plan(&opts, &root, &out, &worker, tch_worker.as_ref(), &python)?;
    let mut results = Vec::new();
    for case in &cases {
        results.push(run_case(case, &opts)?);
    }

    let command = command_line(args);
    let doc = json!({
        "command": command,
        "machine": report::machine(opts.threads),
        "versions": versions,
        "rounds": opts.rounds,
        "threads": opts.threads,
        "pinned": opts.pin,
        "quick": opts.quick,
        "wall_s": started.elapsed().as_secs_f64(),
        "cases": results,
    });
    let results_path = out.join("results.json");
    std::fs::write(&results_path, serde_json::to_string_pretty(&doc)? + "\n")
        .with_context(|| format!("writing {}", results_path.display()))?;
    let section = report::section(&doc);
    std::fs::write(out.join("section.md"), &section)?;
    print!("{section}");
    eprintln!("bench-compare: wrote {}", results_path.display());
    if (!opts.quick && opts.only.is_none()) || opts.write_doc {
        let path = root.join("docs/benchmarks.md");
        report::replace_section(&path, &section)?;
        eprintln!("bench-compare: wrote {}", path.display());
    } else {
        eprintln!(
            "bench-compare: docs/benchmarks.md left unchanged (--quick/--only; --write-doc forces it); section in {}",
            out.join("section.md").display()
        );
    }
    eprintln!(
        "bench-compare: done in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn command_line(args: &[String]) -> String {
    let mut cmd = String::new();
    if let Ok(p) = std::env::var("BENCH_PYTHON")
        && !p.is_empty()
        && !args.iter().any(|a| a == "--python")
    {
        cmd.push_str(&format!("BENCH_PYTHON={p} "));
    }
    cmd.push_str("cargo xtask bench-compare");
    for a in args {
        cmd.push(' ');
        cmd.push_str(a);
    }
    cmd
}

/// Creates `venv` with the pinned [`REQUIREMENTS`] unless it already has them; returns its python.
fn ensure_venv(venv: &Path) -> Result<PathBuf> {
    let python = venv.join("bin/python");
    let marker = venv.join("bench-compare-requirements.txt");
    let wanted = REQUIREMENTS.join("\n") + "\n";
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) && python.exists() {
        return Ok(python);
    }
    if !python.exists() {
        eprintln!("bench-compare: creating {}", venv.display());
        check(Command::new("python3").arg("-m").arg("venv").arg(venv))?;
    }
    eprintln!(
        "bench-compare: pip install {} (torch from PyPI pulls its CUDA libraries, about 4 GB; set BENCH_PYTHON to reuse an environment)",
        REQUIREMENTS.join(" ")
    );
    check(
        Command::new(&python)
            .args(["-m", "pip", "install"])
            .args(REQUIREMENTS),
    )?;
    std::fs::write(&marker, wanted)?;
    Ok(python)
}

pub(crate) fn check(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("could not start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}

/// Builds `bench_worker` in release mode and returns the executable cargo reports.
/// Builds `bench_worker` (release) with `features` and `env`, and copies it to `copy_to`.
fn build_worker(
    root: &Path,
    features: &[&str],
    env: &[(&str, OsString)],
    copy_to: &Path,
) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root).args([
        "build",
        "--release",
        "-p",
        "rlvr-benches",
        "--bin",
        "bench_worker",
        "--message-format=json-render-diagnostics",
    ]);
    if !features.is_empty() {
        cmd.arg("--features").arg(features.join(","));
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd
        .stderr(Stdio::inherit())
        .output()
        .context("could not start cargo")?;
    if !output.status.success() {
        bail!("building bench_worker failed ({})", output.status);
    }
    let built = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["target"]["name"] == "bench_worker")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .context("cargo did not report the bench_worker executable")?;
    if let Some(dir) = copy_to.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::copy(&built, copy_to)
        .with_context(|| format!("copying {} to {}", built.display(), copy_to.display()))?;
    Ok(copy_to.to_path_buf())
}

/// The libtorch build of `bench_worker` and the directory of the shared libraries it needs.
#[derive(Debug, Clone)]
pub(crate) struct TchWorker {
    pub(crate) exe: PathBuf,
    pub(crate) lib_dir: PathBuf,
}

/// Builds `bench_worker --features tch` against the torch of `python` (torch-sys finds it
/// through `LIBTORCH_USE_PYTORCH=1` and the `python` of the venv on `PATH`).
fn build_tch_worker(root: &Path, out: &Path, python: &Path) -> Result<TchWorker> {
    let probe = Command::new(python)
        .args([
            "-c",
            "import os, sys, torch; print(sys.prefix); print(os.path.join(os.path.dirname(torch.__file__), 'lib')); print(torch.__version__)",
        ])
        .output()
        .with_context(|| format!("could not start {}", python.display()))?;
    let text = String::from_utf8_lossy(&probe.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let [prefix, lib_dir, version] = lines[..] else {
        bail!(
            "{} could not import torch: {}",
            python.display(),
            String::from_utf8_lossy(&probe.stderr)
        );
    };
    if !version.starts_with("2.9.0") {
        bail!("--tch needs torch 2.9.0 (tch 0.22's libtorch), found {version} in {prefix}");
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![Path::new(prefix).join("bin")];
    paths.extend(std::env::split_paths(&path));
    eprintln!("bench-compare: building bench_worker with libtorch from {prefix} (torch {version})");
    let exe = build_worker(
        root,
        &["tch"],
        &[
            ("LIBTORCH_USE_PYTORCH", "1".into()),
            ("VIRTUAL_ENV", prefix.into()),
            ("PATH", std::env::join_paths(paths)?),
        ],
        &out.join("bin/bench_worker-tch"),
    )?;
    Ok(TchWorker {
        exe,
        lib_dir: PathBuf::from(lib_dir),
    })
}
