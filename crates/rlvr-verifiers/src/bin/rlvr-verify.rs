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
/// `{"id", "response", "rubric": [..]}`. Output lines `{"id", "reward", "passed", "outcome",
/// "details"}` in input order; a summary goes to stderr.
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
    /// for code).
    #[arg(long)]
    item_timeout_s: Option<f64>,
}

fn main() -> std::process::ExitCode {
    match run() {
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
    let kind = match &config {
        VerifierConfig::Math(_) => Kind::Math,
        VerifierConfig::Code(_) => Kind::Code,
        VerifierConfig::Rubric(_) => Kind::Rubric,
    };
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
    if let VerifierConfig::Code(c) = &config {
        let sandbox = rlvr_verifiers::sandbox::Sandbox::new(&c.sandbox)?;
        eprintln!(
            "rlvr-verify: sandbox runs {} with {}",
            sandbox.python().display(),
            sandbox.isolation().describe()
        );
    }
    let item_timeout = args.item_timeout_s.unwrap_or(match &config {
        VerifierConfig::Code(c) => c.timeout_s + 10.0,
        _ => 10.0,
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
        let parsed = parse_line(&line, &args);
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
    let reference = Reference::from_record(args.kind, &v).map_err(|e| (id.clone(), e))?;
    Ok((id, response, reference))
}
