//! GeoX-style self-play in the run (`[geox]`, `step/geox.rs`, methods-extra §21): on a tiny
//! grid-program task, one real step's proposers are rewarded by the learnability of their
//! tasks, recomputed here from the batch with this file's own interpreter; the answers to the
//! proposed tasks join the batch with group advantages; every knob reaches the run; refused
//! combinations name the key; and the bundled task fits the bundled model.
//!
//! The run-level task: the first 16 solver lines and 8 proposer lines of
//! `datasets/geox/train.jsonl`, all in every step (`rollout.prompts_per_step = 24`).

mod common;

use common::{assert_live, get};

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rlvr_train::RunConfig;
use rlvr_train::metrics::Metrics;
use rlvr_train::model::char_tokenizer::ALPHABET;
use rlvr_train::step::rl_step_with_batch;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// 16 solver lines and 8 proposer lines of the bundled training split.
fn data() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let all = std::fs::read_to_string(repo().join("datasets/geox/train.jsonl")).unwrap();
        let (proposers, solvers): (Vec<&str>, Vec<&str>) =
            all.lines().partition(|l| l.contains("\"propose_"));
        let lines: Vec<&str> = solvers[..16]
            .iter()
            .chain(&proposers[..8])
            .copied()
            .collect();
        let dir = common::shared_cache()
            .join("geox-head")
            .join(std::process::id().to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("train24.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    })
}

fn sets(extra: &[&str]) -> Vec<String> {
    common::bundled_task_sets(
        data(),
        &[
            "rollout.prompts_per_step=24",
            "rollout.group_size=4",
            "verifier={ kind = \"grid_program\" }",
        ],
        extra,
    )
}

/// The tiny model's config of a run in `run_dir` (as `common::run_history` builds it).
fn config(run_dir: &Path, extra: &[&str]) -> RunConfig {
    let all = sets(extra);
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    common::tiny_config(run_dir, &refs)
}

fn run(extra: &[&str]) -> Vec<Metrics> {
    common::run_history(&sets(extra))
}

// This file's own grid interpreter (independent of rlvr_verifiers::grid_program).

/// Runs moves from `xy`; `None` when a move leaves the 10 × 10 grid or the text is no program.
fn exec(program: &str, from: &str) -> Option<String> {
    let d: Vec<i32> = from
        .chars()
        .map(|c| c.to_digit(10).map(|v| v as i32))
        .collect::<Option<_>>()?;
    if d.len() != 2 || program.is_empty() || program.len() > 6 {
        return None;
    }
    let (mut x, mut y) = (d[0], d[1]);
    for c in program.chars() {
        match c {
            'U' => y += 1,
            'D' => y -= 1,
            'R' => x += 1,
            'L' => x -= 1,
            _ => return None,
        }
        if !(0..10).contains(&x) || !(0..10).contains(&y) {
            return None;
        }
    }
    Some(format!("{x}{y}"))
}

/// The solver prompt of proposal `text` for proposer prompt `prompt` (`P D=`...), if it runs.
fn task_prompt(prompt: &str, text: &str) -> Option<String> {
    let proposal = text.split_once(';')?.0.trim();
    let words: Vec<&str> = proposal.split(' ').collect();
    match (prompt.trim(), words.as_slice()) {
        ("P D=", [p, i]) => Some(format!("D {p} {i}=")).filter(|_| exec(p, i).is_some()),
        ("P A=", [p, i]) => exec(p, i).map(|o| format!("A {p} {o}=")),
        ("P I=", [p, a, b]) if a != b => {
            let (oa, ob) = (exec(p, a)?, exec(p, b)?);
            Some(format!("I {a} {oa} {b} {ob}="))
        }
        _ => None,
    }
}

/// Whether `text` answers the solver prompt `prompt`, by execution.
fn solves(prompt: &str, text: &str) -> bool {
    let Some((answer, _)) = text.split_once(';') else {
        return false;
    };
    let answer = answer.trim();
    let w: Vec<&str> = prompt.trim_end_matches('=').split(' ').collect();
    match w.as_slice() {
        ["D", p, i] => exec(p, i).as_deref() == Some(answer),
        ["A", p, o] => exec(p, answer).as_deref() == Some(*o),
        ["I", a, oa, b, ob] => {
            exec(answer, a).as_deref() == Some(*oa) && exec(answer, b).as_deref() == Some(*ob)
        }
        _ => panic!("not a solver prompt: {prompt}"),
    }
}

/// One real step: each proposer's reward is the learnability of its task (1 − s̄ for
/// 0 < s̄ < 1, else 0; −0.5 when it does not run), with s̄ recomputed from the appended
/// answers by this file's interpreter; the answers' prompts are the proposals' tasks, their
/// rewards the interpreter's verdicts, and their advantages centred within each task's group.
#[test]
fn proposers_earn_the_learnability_of_their_tasks() {
    let tmp = tempfile::tempdir().unwrap();
    let c = config(&tmp.path().join("run"), &["geox={ solver_samples = 4 }"]);
    let (mut tr, _) = common::trainer(&c);
    let (m, batch) = rl_step_with_batch(&mut tr, 0).unwrap();
    let n = 4;
    let decode = |ids: &[u32]| tr.tokenizer.decode_skip_special(ids).unwrap();
    let answers_from = batch.samples.len() - get(&m, "geox/solver_samples") as usize;
    let (rollout, answers) = batch.samples.split_at(answers_from);
    let mut next = answers.chunks(n);
    let (mut valid, mut invalid, mut learnable) = (0, 0, 0);
    for s in rollout {
        let prompt = decode(&s.prompt);
        if !prompt.starts_with("P ") {
            continue;
        }
        match task_prompt(&prompt, &s.text) {
            None => {
                invalid += 1;
                assert_eq!(s.reward, -0.5, "{prompt}{}", s.text);
            }
            Some(task) => {
                valid += 1;
                let group = next.next().expect("n answers per valid proposal");
                let mut solved = 0;
                for a in group {
                    assert_eq!(decode(&a.prompt), task, "the answers follow the proposals");
                    let ok = solves(&task, &a.text);
                    assert_eq!(a.reward, f32::from(u8::from(ok)), "{task}{}", a.text);
                    solved += usize::from(ok);
                }
                let rate = solved as f32 / n as f32;
                let want = if solved > 0 && solved < n {
                    1.0 - rate
                } else {
                    0.0
                };
                learnable += usize::from(want > 0.0);
                assert_eq!(s.reward, want, "{task}: {solved}/{n} solved");
                let adv_sum: f32 = group.iter().map(|a| a.advantage).sum();
                assert!(adv_sum.abs() < 1e-4, "{task}: advantages sum to {adv_sum}");
                if solved > 0 && solved < n {
                    assert!(group.iter().any(|a| a.advantage != 0.0));
                }
            }
        }
    }
    assert!(next.next().is_none(), "answers left over");
    assert!(
        valid > 0 && invalid + valid == 8 * 4,
        "{valid} valid, {invalid} invalid"
    );
    assert_eq!(get(&m, "geox/proposals"), (valid + invalid) as f64);
    assert_eq!(get(&m, "geox/solver_samples"), (valid * n) as f64);
    assert!((get(&m, "geox/learnable_frac") - learnable as f64 / valid as f64).abs() < 1e-9);
}

/// `[geox]` and each knob change the update over the same first rollout; `solver_samples`
/// sets how many answers each valid proposal gets, and `invalid_reward` moves the proposers'
/// mean reward by exactly its change times the invalid share.
#[test]
fn geox_and_its_knobs_are_live() {
    let plain = run(&[]);
    let base = run(&["geox={}"]);
    assert_live(&base, &plain, "[geox]");
    let (b, valid) = (&base[0], get(&base[0], "geox/valid_frac"));
    let proposals = get(b, "geox/proposals");
    assert_eq!(get(b, "geox/solver_samples"), valid * proposals * 4.0);
    let two = run(&["geox={ solver_samples = 2 }"]);
    assert_eq!(get(&two[0], "geox/solver_samples"), valid * proposals * 2.0);
    assert_live(&two, &base, "geox.solver_samples");
    assert!(
        valid < 1.0,
        "every proposal valid: invalid_reward cannot be seen"
    );
    let harsh = run(&["geox={ invalid_reward = -1.0 }"]);
    let moved = get(&harsh[0], "geox/proposer_reward_mean") - get(b, "geox/proposer_reward_mean");
    assert!((moved - (-0.5) * (1.0 - valid)).abs() < 1e-6, "{moved}");
    assert_live(&harsh, &base, "geox.invalid_reward");
}

/// Combinations `[geox]` cannot serve, and bad knobs, stop the run at load, naming the key.
#[test]
fn bad_geox_configs_are_refused_at_load() {
    let refused = |extra: &[&str], key: &str| {
        let err = RunConfig::load(None, &sets(extra)).unwrap_err().to_string();
        assert!(err.contains(key), "{extra:?}: {err}");
    };
    refused(&["geox={ solver_samples = 1 }"], "geox.solver_samples");
    refused(&["geox={ invalid_reward = 0.5 }"], "geox.invalid_reward");
    refused(&["geox={ proposals = 3 }"], "proposals");
    refused(&["geox={}", "verifier={ kind = \"math\" }"], "grid_program");
    refused(
        &["geox={}", "rollout.dynamic_sampling=true"],
        "rollout.dynamic_sampling",
    );
    refused(
        &["geox={}", "rollout.max_staleness=1"],
        "rollout.max_staleness",
    );
    refused(&["geox={}", "binac={}"], "[binac]");
}

/// `configs/geox.toml` and its plain arm load; every prompt and completion of the bundled task
/// is in the bundled model's alphabet and fits its 64 positions with `rollout.max_new_tokens`;
/// every solver line's `answer` and every proposer line's completion passes the verifier.
#[test]
fn the_bundled_geox_task_fits_the_bundled_model() {
    for name in ["configs/geox.toml", "configs/ablations/geox-plain.toml"] {
        let c = RunConfig::load(Some(&repo().join(name)), &[]).unwrap();
        assert_eq!(
            c.verifier.kind(),
            rlvr_verifiers::Kind::GridProgram,
            "{name}"
        );
        assert_eq!(c.geox.is_some(), name == "configs/geox.toml");
        let verifier = c.verifier.build().unwrap();
        let mut longest = 0;
        for split in ["train", "test"] {
            let text = std::fs::read_to_string(repo().join(format!("datasets/geox/{split}.jsonl")))
                .unwrap();
            for l in text.lines() {
                let r: serde_json::Value = serde_json::from_str(l).unwrap();
                let p = r["prompt"].as_str().unwrap();
                let completion = r["completion"].as_str().unwrap_or("");
                for ch in p.chars().chain(completion.chars()) {
                    assert!(ALPHABET.contains(ch), "{ch:?} in {l}");
                }
                longest = longest.max(p.chars().count());
                let reference = c.verifier.reference(&r).unwrap();
                verifier.check_reference(&reference).unwrap();
                let shown = if p.starts_with("P ") {
                    completion
                } else {
                    r["answer"].as_str().unwrap()
                };
                assert!(verifier.verify(shown, &reference).passed, "{l}");
            }
        }
        assert!(longest + c.rollout.max_new_tokens <= 64, "{longest}");
    }
}
