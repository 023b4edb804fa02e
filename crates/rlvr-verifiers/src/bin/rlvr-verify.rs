//! `rlvr-verify`: scores a JSONL file of responses with a verifier (`cargo xtask verify`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use rlvr_verifiers::{Kind, Reference, Verifier, VerifierConfig, verify_batch};
use serde_json::{Value, json};

/// Score model responses in a JSONL file.
///
/// Input lines: math `{"id", "response", "answer"}`; code `{"id", "response", "tests": [..],
/// "setup_code"?, "timeout_s"?}` or `{"id", "response", "test", "entry_point"}`; rubric
/// `{"id", "response", "rubric": [..]}`; command and http the whole line (a `--config` gives the
/// program or URL); composite each part's fields. Output lines `{"id", "reward", "passed", "outcome",
/// "details"}` in input order; a summary goes to stderr.
///
/// `rlvr-verify serve --help`: the verifiers as an HTTP server (`/health`, `/verify`,
/// SandboxFusion's `/run_code`).
#[derive(Debug, Parser)]
#[command(name = "rlvr-verify", version)]
struct Args {
    /// Which verifier.
    #[arg(long, value_enum)]
    kind: Kind,
    /// Input JSONL file.
    #[arg(long)]
    input: PathBuf,
    /// Output JSONL file (default: stdout).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Stop at the first malformed line instead of reporting and skipping it.
    #[arg(long)]
    strict: bool,
    /// Verifier config TOML (`kind = ...` plus knobs, at top level or under `[verifier]`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Field holding the response (e.g. `code` to score MBPP's reference solutions).
    #[arg(long, default_value = "response")]
    response_field: String,
    /// Field holding the id (e.g. `task_id` for MBPP).
    #[arg(long, default_value = "id")]
    id_field: String,
    /// Per-item time limit in seconds (default: 10 for math and rubric, the code timeout + 10
    /// for code, the verifier's own limit for command, http and composite).
    #[arg(long)]
    item_timeout_s: Option<f64>,
}

fn main() -> std::process::ExitCode {
    // `rlvr-verify serve ...` is the HTTP server; everything else scores a file.
    let serving = std::env::args_os().nth(1).is_some_and(|a| a == "serve");
    let result = if serving { serve() } else { run() };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rlvr-verify: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn load_config(args: &Args) -> Result<VerifierConfig> {
    let Some(path) = &args.config else {
        return Ok(VerifierConfig::default_for(args.kind));
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let table: toml::Table =
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let section = match table.get("verifier") {
        Some(toml::Value::Table(t)) => t.clone(),
        _ => table,
    };
    let config: VerifierConfig = section
        .try_into()
        .with_context(|| format!("{}: invalid verifier config", path.display()))?;
    let kind = config.kind();
    if kind != args.kind {
        bail!(
            "{}: config kind `{}` does not match --kind {}",
            path.display(),
            kind.name(),
            args.kind.name()
        );
    }
    Ok(config)
}

fn run() -> Result<()> {
    let args = Args::parse();
    let config = load_config(&args)?;
    let verifier: Arc<dyn Verifier> = Arc::from(config.build().context("building the verifier")?);
    if let VerifierConfig::Code(c) = &config
        && let Some(url) = c.sandbox_url.as_deref()
        && c.backend == rlvr_verifiers::CodeBackend::SandboxFusion
    {
        eprintln!("rlvr-verify: programs run on the SandboxFusion server at {url}");
    } else if let VerifierConfig::Code(c) = &config {
        let sandbox = rlvr_verifiers::sandbox::Sandbox::new(&c.sandbox)?;
        eprintln!(
            "rlvr-verify: sandbox runs {} with {}",
            sandbox.python().display(),
            sandbox.isolation().describe()
        );
    }
    let item_timeout = args.item_timeout_s.unwrap_or(match &config {
        VerifierConfig::Code(c) => c.timeout_s + 10.0,
        other => other.item_time_limit().as_secs_f64(),
    });
    if !(item_timeout.is_finite() && item_timeout > 0.0 && item_timeout <= 86_400.0) {
        bail!("--item-timeout-s must be in (0, 86400]");
    }
    let file = std::fs::File::open(&args.input)
        .with_context(|| format!("opening {}", args.input.display()))?;
    // Each input line becomes either a scorable item or an error record, in input order.
    let mut rows: Vec<std::result::Result<Value, (Value, usize, String)>> = Vec::new();
    let mut items: Vec<(String, Reference)> = Vec::new();
    for (k, line) in std::io::BufReader::new(file).lines().enumerate() {
        let lineno = k + 1;
        let line =
            line.with_context(|| format!("{}:{lineno}: read error", args.input.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = parse_line(&line, &args, &config);
        match parsed {
            Ok((id, response, reference)) => {
                rows.push(Ok(id));
                items.push((response, reference));
            }
            Err((id, reason)) => {
                let msg = format!("{}:{lineno}: {reason}", args.input.display());
                if args.strict {
                    bail!("{msg}");
                }
                eprintln!("rlvr-verify: skipped {msg}");
                rows.push(Err((id, lineno, reason)));
            }
        }
    }
    let start = Instant::now();
    let verdicts = verify_batch(
        Arc::clone(&verifier),
        &items,
        Duration::from_secs_f64(item_timeout),
    );
    let elapsed = start.elapsed().as_secs_f64();

    let mut out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    };
    let (mut passed, mut errors, mut reward_sum) = (0usize, 0usize, 0.0f64);
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut verdicts = verdicts.into_iter();
    for row in rows {
        let record = match row {
            Ok(id) => {
                let v = verdicts
                    .next()
                    .context("internal: verdict count mismatch")?;
                passed += usize::from(v.passed);
                reward_sum += f64::from(v.reward);
                let outcome = serde_json::to_value(v.outcome)?;
                *outcomes
                    .entry(outcome.as_str().unwrap_or_default().to_string())
                    .or_default() += 1;
                json!({ "id": id, "reward": v.reward, "passed": v.passed, "outcome": outcome,
                        "extracted": v.extracted, "details": v.details })
            }
            Err((id, line, reason)) => {
                errors += 1;
                json!({ "id": id, "line": line, "error": reason })
            }
        };
        writeln!(out, "{record}")?;
    }
    out.flush()?;
    let n = items.len();
    eprintln!(
        "rlvr-verify: {n} scored, {passed} passed ({:.1}%), mean reward {:.4}, {errors} malformed line(s); {:.1} items/s ({elapsed:.2} s); outcomes {}",
        if n == 0 {
            0.0
        } else {
            100.0 * passed as f64 / n as f64
        },
        if n == 0 { 0.0 } else { reward_sum / n as f64 },
        if elapsed > 0.0 {
            n as f64 / elapsed
        } else {
            0.0
        },
        serde_json::to_string(&outcomes)?,
    );
    Ok(())
}

/// `(id, response, reference)` of one line, or `(id, reason)`.
fn parse_line(
    line: &str,
    args: &Args,
    config: &VerifierConfig,
) -> std::result::Result<(Value, String, Reference), (Value, String)> {
    let v: Value =
        serde_json::from_str(line).map_err(|e| (Value::Null, format!("not JSON: {e}")))?;
    let id = v.get(&args.id_field).cloned().unwrap_or(Value::Null);
    if !v.is_object() {
        return Err((id, "not a JSON object".into()));
    }
    let field = &args.response_field;
    let response = match v.get(field) {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err((id, format!("field `{field}` must be a string"))),
        None => return Err((id, format!("missing field `{field}`"))),
    };
    let reference = config.reference(&v).map_err(|e| (id.clone(), e))?;
    Ok((id, response, reference))
}

/// Serve the verifiers over HTTP: `GET /health`, `POST /verify` (`{"kind", "items": [input
/// lines]}` → `{"results": [output lines]}`), `POST /run_code` (SandboxFusion's request and
/// reply, run in the local sandbox).
#[derive(Debug, Parser)]
#[command(name = "rlvr-verify serve", version)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port (0 picks a free one; the address is printed on stderr).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Verifier config TOML replacing the default of its kind (`kind = ...` plus knobs, at top
    /// level or under `[verifier]`); a `code` config's timeout and sandbox also bound /run_code.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Worker threads answering requests (0 = two per CPU).
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// Largest accepted request body in MiB (larger gets 413).
    #[arg(long, default_value_t = 16)]
    max_body_mb: usize,
}

fn serve() -> Result<()> {
    let args = ServeArgs::parse_from(std::env::args_os().skip(1));
    let verifier = match &args.config {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let table: toml::Table =
                toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
            let section = match table.get("verifier") {
                Some(toml::Value::Table(t)) => t.clone(),
                _ => table,
            };
            Some(
                section
                    .try_into()
                    .with_context(|| format!("{}: invalid verifier config", path.display()))?,
            )
        }
    };
    let config = rlvr_verifiers::serve::ServeConfig {
        host: args.host,
        port: args.port,
        workers: args.workers,
        max_body_bytes: args.max_body_mb.saturating_mul(1 << 20),
        verifier,
    };
    let server = rlvr_verifiers::serve::Server::bind(&config).context("starting the server")?;
    let addr = server.local_addr().map_or_else(
        || format!("{}:{}", config.host, config.port),
        |a| a.to_string(),
    );
    eprintln!(
        "rlvr-verify: serving on http://{addr} (run_code: {} with {})",
        server.sandbox().python().display(),
        server.sandbox().isolation().describe()
    );
    server.run();
    Ok(())
}
