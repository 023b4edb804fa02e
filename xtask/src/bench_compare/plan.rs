//! The cases a `bench-compare` run measures: workloads, shapes, and each side's command line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::{Options, TchWorker, check};

/// One program invocation of one side.
#[derive(Debug, Clone)]
pub(crate) struct Side {
    pub(crate) label: &'static str,
    pub(crate) argv: Vec<OsString>,
    /// Extra environment (the libtorch side's `LD_LIBRARY_PATH`).
    pub(crate) env: Vec<(OsString, OsString)>,
}

/// One workload instance (e.g. train step on `d512l8`), with its sides in run order.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) workload: &'static str,
    pub(crate) name: String,
    pub(crate) sides: Vec<Side>,
}

pub(crate) fn argv<I, S>(items: I) -> Vec<OsString>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    items.into_iter().map(Into::into).collect()
}

/// Writes `config.json` of a named shape (from the worker) into `dir`, for both sides to read.
fn shape_dir(worker: &Path, out: &Path, name: &str) -> Result<PathBuf> {
    let dir = out.join("shapes").join(name);
    std::fs::create_dir_all(&dir)?;
    let printed = Command::new(worker)
        .args(["print-config", name])
        .output()
        .context("running bench_worker print-config")?;
    if !printed.status.success() {
        bail!(
            "bench_worker print-config {name}: {}",
            String::from_utf8_lossy(&printed.stderr)
        );
    }
    std::fs::write(dir.join("config.json"), &printed.stdout)?;
    Ok(dir)
}

/// The list of cases, from the options.
pub(crate) fn plan(
    opts: &Options,
    root: &Path,
    out: &Path,
    worker: &Path,
    tch: Option<&TchWorker>,
    python: &Path,
) -> Result<Vec<Case>> {
    let script = |name: &str| root.join("benches/compare").join(name).into_os_string();
    let threads = opts.threads.to_string();
    let rs = |args: Vec<OsString>| Side {
        label: "rlvr-rs",
        argv: [vec![worker.as_os_str().to_owned()], args].concat(),
        env: Vec::new(),
    };
    let py = |label: &'static str, name: &str, args: Vec<OsString>| Side {
        label,
        argv: [vec![python.as_os_str().to_owned(), script(name)], args].concat(),
        env: Vec::new(),
    };
    let mut cases = Vec::new();

    if opts.wants("gemm") {
        let sizes = if opts.quick {
            "1024,2048"
        } else {
            "2048,3072,4096"
        };
        cases.push(Case {
            workload: "gemm",
            name: "numpy f32 GEMM".into(),
            sides: vec![py("numpy", "gemm_peak.py", argv(["--sizes", sizes]))],
        });
    }
    if opts.wants("train") {
        // (shape, batch, seq, iters)
        let shapes: &[(&str, usize, usize, usize)] = if opts.quick {
            &[("d256l4", 4, 64, 2)]
        } else {
            &[
                ("bundled", 64, 32, 5),
                ("d256l4", 8, 128, 5),
                ("d512l8", 8, 128, 3),
                ("smollm2", 4, 128, 2),
            ]
        };
        for &(shape, b, t, iters) in shapes {
            let dir = shape_dir(worker, out, shape)?;
            let cfg = dir.join("config.json");
            let common = |c: &Path| {
                argv([
                    "--config".into(),
                    c.as_os_str().to_owned(),
                    "--batch".into(),
                    b.to_string().into(),
                    "--seq".into(),
                    t.to_string().into(),
                    "--warmup".into(),
                    "1".into(),
                    "--iters".into(),
                    OsString::from(iters.to_string()),
                ])
            };
            let mut sides = vec![
                rs([argv(["train-step"]), common(&cfg)].concat()),
                py(
                    "PyTorch eager",
                    "train_step.py",
                    [common(&dir), argv(["--threads", &threads])].concat(),
                ),
            ];
            if let Some(tch) = tch {
                let args = [
                    argv(["train-step"]),
                    common(&cfg),
                    argv(["--backend", "tch"]),
                ];
                sides.push(Side {
                    label: "rlvr-rs tch",
                    argv: [vec![tch.exe.clone().into_os_string()], args.concat()].concat(),
                    env: vec![(
                        "LD_LIBRARY_PATH".into(),
                        tch.lib_dir.clone().into_os_string(),
                    )],
                });
            }
            cases.push(Case {
                workload: "train",
                name: format!("{shape} B{b}×T{t}"),
                sides,
            });
        }
    }
    if opts.wants("generate") {
        let default_model = std::env::var_os("RLVR_CACHE_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/rlvr-rs")))
            .map(|d| d.join("smollm2-135m-instruct"));
        // (label, rlvr-rs model arguments, Python model arguments)
        let random = |shape: &str, label: &str| -> Result<(String, Vec<OsString>, Vec<OsString>)> {
            let dir = shape_dir(worker, out, shape)?;
            Ok((
                label.to_owned(),
                argv([OsString::from("--config"), dir.join("config.json").into()]),
                argv([OsString::from("--config"), dir.into()]),
            ))
        };
        let (label, rs_model, py_model) = if opts.quick {
            random("d256l4", "d256l4 (random init)")?
        } else {
            match opts
                .model
                .clone()
                .or(default_model.filter(|d| d.join("config.json").exists()))
            {
                Some(dir) => {
                    let args = argv([OsString::from("--model"), dir.clone().into()]);
                    let name = dir.file_name().unwrap_or_default().to_string_lossy();
                    (format!("{name} (weights)"), args.clone(), args)
                }
                None => random("smollm2", "smollm2 shape (random init)")?,
            }
        };
        let (batches, new_tokens): (&[usize], usize) = if opts.quick {
            (&[4], 16)
        } else {
            (&[16, 32], 128)
        };
        for &b in batches {
            let common = argv([
                "--batch".to_string(),
                b.to_string(),
                "--prompt-len".into(),
                "32".into(),
                "--new-tokens".into(),
                new_tokens.to_string(),
                "--iters".into(),
                "1".into(),
            ]);
            let py_args = |mode: &str| {
                [
                    py_model.clone(),
                    common.clone(),
                    argv(["--mode", mode, "--threads", &threads]),
                ]
                .concat()
            };
            cases.push(Case {
                workload: "generate",
                name: format!("{label}, batch {b}, {new_tokens} new tokens"),
                sides: vec![
                    rs([argv(["generate"]), rs_model.clone(), common.clone()].concat()),
                    py("transformers generate", "generate.py", py_args("generate")),
                    py(
                        "PyTorch loop + DynamicCache",
                        "generate.py",
                        py_args("loop"),
                    ),
                ],
            });
        }
    }
    if opts.wants("optim") {
        let shapes: &[[usize; 2]] = if opts.quick {
            &[[256, 256], [512, 512]]
        } else {
            &[[1024, 1024], [2048, 512], [576, 1536]]
        };
        let iters = if opts.quick { "3" } else { "5" };
        for kind in ["muon", "pion"] {
            for &[r, c] in shapes {
                let common = argv([
                    "--kind".to_string(),
                    kind.into(),
                    "--rows".into(),
                    r.to_string(),
                    "--cols".into(),
                    c.to_string(),
                    "--warmup".into(),
                    "2".into(),
                    "--iters".into(),
                    iters.into(),
                ]);
                cases.push(Case {
                    workload: "optim",
                    name: format!("{kind} {r}×{c}"),
                    sides: vec![
                        rs([argv(["optim"]), common.clone()].concat()),
                        py(
                            "PyTorch",
                            "optim.py",
                            [common, argv(["--threads", &threads])].concat(),
                        ),
                    ],
                });
            }
        }
    }
    let limit = if opts.quick { "50" } else { "0" };
    if opts.wants("math") {
        let pairs = out.join("math_pairs.jsonl");
        let data = opts.data.as_os_str().to_owned();
        check(
            Command::new(worker)
                .args(["math-pairs", "--limit", limit, "--out"])
                .arg(&pairs)
                .arg("--data")
                .arg(&data)
                .stdout(Stdio::null()),
        )?;
        cases.push(Case {
            workload: "math",
            name: "GSM8K test + MATH-500".into(),
            sides: vec![
                rs(argv([
                    OsString::from("math"),
                    "--data".into(),
                    data,
                    "--limit".into(),
                    limit.into(),
                ])),
                py(
                    "math-verify",
                    "verify_math.py",
                    argv([OsString::from("--pairs"), pairs.into()]),
                ),
            ],
        });
    }
    if opts.wants("mbpp") {
        let limit = if opts.quick { "40" } else { "0" };
        cases.push(Case {
            workload: "mbpp",
            name: if opts.quick {
                "first 40 MBPP tasks".into()
            } else {
                "MBPP, 974 canonical solutions".into()
            },
            sides: vec![rs(argv([
                OsString::from("mbpp"),
                "--data".into(),
                opts.data.as_os_str().to_owned(),
                "--limit".into(),
                limit.into(),
            ]))],
        });
    }
    Ok(cases)
}
