//! `rlvr-serve`: the OpenAI-compatible server over a HuggingFace model directory.
//!
//! ```text
//! rlvr-serve --model DIR [--host 127.0.0.1] [--port 8000] [--max-batch N]
//!            [--served-model-name NAME] [--max-tokens-limit N]
//! ```
//!
//! Logs go to stderr; `RLVR_LOG` filters them (a level and/or `target=level` pairs; default
//! `info`). SIGINT/SIGTERM stop accepting connections and finish open requests.

use std::path::PathBuf;

use anyhow::{Context, Result};
use burn::tensor::Device;
use clap::Parser;
use rlvr_serve::{Server, ServerConfig};

/// OpenAI-compatible inference server (completions, chat, streaming, weight updates).
#[derive(Debug, Parser)]
#[command(name = "rlvr-serve", version)]
struct Args {
    /// HuggingFace model directory (config.json, safetensors, tokenizer.json).
    #[arg(long)]
    model: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on (0: any free port; the chosen one is logged).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Most choices decoded together (and the largest `n`).
    #[arg(long, default_value_t = 32)]
    max_batch: usize,
    /// Name clients pass as `model` (default: the directory's name).
    #[arg(long)]
    served_model_name: Option<String>,
    /// Largest `max_tokens` a request may ask for.
    #[arg(long, default_value_t = 4096)]
    max_tokens_limit: usize,
}

fn main() -> Result<()> {
    init_logging()?;
    rlvr_models::retain_freed_memory();
    let args = Args::parse();
    let name = match &args.served_model_name {
        Some(name) => name.clone(),
        None => args
            .model
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "model".to_owned()),
    };
    let mut config = ServerConfig::new(name);
    config.max_batch = args.max_batch;
    config.max_tokens_limit = args.max_tokens_limit;
    tracing::info!(model = %args.model.display(), "loading");
    let server = Server::from_dir(&args.model, config, &Device::flex())
        .with_context(|| format!("starting the server on {}", args.model.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let address = format!("{}:{}", args.host, args.port);
        let listener = tokio::net::TcpListener::bind(&address)
            .await
            .with_context(|| format!("binding {address}"))?;
        let local = listener.local_addr()?;
        tracing::info!(
            address = %local,
            served_model_name = %server.config().served_model_name,
            max_batch = server.config().max_batch,
            "rlvr-serve listening on http://{local}"
        );
        server.serve(listener, shutdown_signal()).await?;
        tracing::info!("stopped");
        Ok(())
    })
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
    tracing::info!("shutting down: finishing open requests");
}

/// Logs to stderr, filtered by `RLVR_LOG` (default `info`).
fn init_logging() -> Result<()> {
    use std::io::IsTerminal;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = match std::env::var("RLVR_LOG") {
        Ok(spec) if !spec.trim().is_empty() => spec.trim().parse::<Targets>().with_context(|| {
            format!(
                "RLVR_LOG=`{spec}`: expected a level (error, warn, info, debug, trace, off) and/or \
                 target=level pairs, comma-separated"
            )
        })?,
        _ => Targets::new().with_default(LevelFilter::INFO),
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    tracing_subscriber::registry()
        .with(fmt)
        .with(filter)
        .try_init()
        .context("installing the log subscriber")
}
