//! Multi-turn environments (`[env]`, `src/env/`): the calculator's oracle solves the bundled
//! held-out split, a one-turn episode is the plain rollout, a multi-turn trajectory's ids are
//! the ids the trainer scores (its log-probs under the trainer's own scoring pass equal the
//! sampler's), TIER's reward equals its reference script's and is what a run optimizes, the
//! guess-the-number game is solvable by bisection within its budget, and in the real loop the
//! `[env]` and `[stages.rebel]` knobs change what a run does.

mod common;

use std::path::{Path, PathBuf};

use burn::tensor::Device;
use rlvr_models::{CausalLm, GenerationConfig, generate};
use rlvr_train::RunConfig;
use rlvr_train::batch::{Sample, group_rows};
use rlvr_train::config::EnvSection;
use rlvr_train::data::guidance::Guidance;
use rlvr_train::data::{Example, load_jsonl};
use rlvr_train::env::bm25::Bm25Index;
use rlvr_train::env::calculator::Calculator;
use rlvr_train::env::groups::{EpisodeStats, sample_episode_groups};
use rlvr_train::env::guess_number::{self, GuessNumber};
use rlvr_train::env::search::{Search, corpus_index};
use rlvr_train::env::single_turn::SingleTurn;
use rlvr_train::env::tier::TierConfig;
use rlvr_train::env::{
    Environment, EpisodeSettings, LocalTurns, Reply, Turn, oracle, run_episodes,
};
use rlvr_train::logprobs::rescore;
use rlvr_train::model::bundled::bundled_model_config;
use rlvr_train::model::char_tokenizer::{ALPHABET, tokenizer_json};

const AGENT_ALPHABET: &str = "0123456789+-*/=() .,:?<>{}\"_abcdefghijklmnopqrstuvwxyz";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn held_out() -> Vec<Example> {
    load_jsonl(&repo().join("datasets/agent-calculator/test.jsonl")).unwrap()
}

fn math_verifier() -> Box<dyn rlvr_verifiers::Verifier> {
    RunConfig::default().verifier.build().unwrap()
}

/// The oracle (a call on the record's expression, then the number the tool returned) passes
/// the math verifier on all 200 held-out problems in two turns; answering without the tool
/// (the expression's first operand) passes none, so the split needs the tool.
#[test]
fn the_calculator_oracle_solves_every_held_out_problem() {
    let verifier = math_verifier();
    let config = RunConfig::default().verifier;
    let examples = held_out();
    assert_eq!(examples.len(), 200);
    let mut passed = 0;
    let mut guessed = 0;
    for ex in &examples {
        let reference = config.reference(&ex.record).unwrap();
        let played = oracle::play(&mut Calculator::new(), ex, 3, oracle::calculator(ex)).unwrap();
        assert_eq!((played.turns, played.tool_errors()), (2, 0), "{}", ex.id);
        let answer = played.final_text.expect("the oracle answers");
        passed += usize::from(verifier.verify(&answer, &reference).passed);
        let guess = ex.record["expression"]
            .as_str()
            .unwrap()
            .split('*')
            .next()
            .unwrap();
        guessed += usize::from(verifier.verify(guess, &reference).passed);
    }
    assert_eq!(passed, 200);
    assert_eq!(guessed, 0);
}

/// A random tiny bundled model over `alphabet`, and its tokenizer.
fn tiny_model(alphabet: &str) -> (CausalLm, rlvr_models::Tokenizer) {
    let config = RunConfig::load(
        None,
        &[
            "model.hidden_size=32".into(),
            "model.num_layers=2".into(),
            "model.num_heads=2".into(),
            "model.num_kv_heads=1".into(),
            "model.intermediate_size=64".into(),
            format!("model.alphabet={}", toml_string(alphabet)),
        ],
    )
    .unwrap();
    let device = Device::flex();
    device.seed(7);
    let model = CausalLm::new(&bundled_model_config(&config).unwrap(), &device);
    let inner: tokenizers::Tokenizer = tokenizer_json(alphabet).parse().unwrap();
    (model, rlvr_models::Tokenizer::from_tokenizer(inner, None))
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.into()).to_string()
}

fn gen_cfg(max_new_tokens: usize) -> GenerationConfig {
    GenerationConfig {
        max_new_tokens,
        temperature: 1.0,
        top_k: None,
        top_p: None,
        stop_token_ids: vec![rlvr_train::model::char_tokenizer::EOS_ID],
        pad_token_id: rlvr_train::model::char_tokenizer::PAD_ID,
    }
}

/// `[env] kind = "single_turn"` samples what the plain rollout samples: the same ids and
/// log-probs per row, every token in the loss.
#[test]
fn a_one_turn_episode_is_the_plain_rollout() {
    let (model, tokenizer) = tiny_model(ALPHABET);
    let prompts: Vec<Vec<u32>> = ["12+5=", "7-30=", "99+99="]
        .iter()
        .map(|p| tokenizer.encode(p).unwrap())
        .collect();
    let rows = group_rows(&prompts, 4);
    let cfg = gen_cfg(6);
    let plain = generate(&model, &rows, &cfg, 11);
    let mut envs: Vec<Box<dyn Environment>> = rows
        .iter()
        .map(|_| Box::new(SingleTurn) as Box<dyn Environment>)
        .collect();
    let settings = EpisodeSettings {
        max_turns: 1,
        max_tokens: 64,
        observation_template: "{{ observation }}".into(),
    };
    let mut local = LocalTurns {
        policy: &model,
        tokenizer: &tokenizer,
    };
    let episodes = run_episodes(
        &mut local, &tokenizer, &mut envs, &rows, &cfg, &settings, 11,
    )
    .unwrap();
    for (p, e) in plain.iter().zip(&episodes) {
        assert_eq!(p.tokens, e.response);
        assert_eq!(p.logprobs, e.logp);
        assert!(e.loss_mask.iter().all(|&m| m));
        assert_eq!(e.turns, 1);
        assert_eq!(
            e.final_text.as_deref(),
            Some(tokenizer.decode_skip_special(&p.tokens).unwrap().as_str())
        );
    }
}

/// A scripted environment: observations `OK1`, `OK2`, ... for `turns - 1` turns, then the end.
struct Scripted {
    turns: usize,
    seen: usize,
}

impl Environment for Scripted {
    fn reset(&mut self, _example: &Example) -> rlvr_train::Result<()> {
        self.seen = 0;
        Ok(())
    }

    fn step(&mut self, _action: &str) -> Turn {
        self.seen += 1;
        if self.seen >= self.turns {
            return Turn::finish();
        }
        Turn {
            reward: 0.25,
            ..Turn::observe(format!("OK{}", self.seen))
        }
    }
}

/// Token-in/token-out: a three-turn trajectory is prompt, turn, observation, turn,
/// observation, turn; each observation's ids (loss mask 0) are the template's rendering
/// encoded on its own, and the trainer's scoring pass over the packed trajectory gives the
/// sampler's log-prob on every policy token: the ids it scores are the ids that were sampled,
/// in the context they were sampled in.
#[test]
fn a_multi_turn_trajectory_is_scored_on_the_ids_it_was_sampled_with() {
    let (model, tokenizer) = tiny_model(ALPHABET);
    let prompts: Vec<Vec<u32>> = ["12+5=", "40-3="]
        .iter()
        .map(|p| tokenizer.encode(p).unwrap())
        .collect();
    let mut envs: Vec<Box<dyn Environment>> = prompts
        .iter()
        .map(|_| Box::new(Scripted { turns: 3, seen: 0 }) as Box<dyn Environment>)
        .collect();
    let settings = EpisodeSettings {
        max_turns: 5,
        max_tokens: 200,
        observation_template: ";{{ observation }}:".into(),
    };
    // No stop token: every turn is exactly 5 sampled tokens, so the layout is known.
    let mut cfg = gen_cfg(5);
    cfg.stop_token_ids.clear();
    let mut local = LocalTurns {
        policy: &model,
        tokenizer: &tokenizer,
    };
    let episodes = run_episodes(
        &mut local, &tokenizer, &mut envs, &prompts, &cfg, &settings, 3,
    )
    .unwrap();
    let mut samples = Vec::new();
    for (prompt, e) in prompts.iter().zip(&episodes) {
        assert_eq!((e.turns, e.env_reward), (3, 0.5));
        let obs1 = tokenizer.encode(";OK1:").unwrap();
        let obs2 = tokenizer.encode(";OK2:").unwrap();
        assert_eq!(e.response.len(), 15 + obs1.len() + obs2.len());
        let mask: Vec<bool> = [
            vec![true; 5],
            vec![false; obs1.len()],
            vec![true; 5],
            vec![false; obs2.len()],
            vec![true; 5],
        ]
        .concat();
        assert_eq!(e.loss_mask, mask);
        assert_eq!(&e.response[5..5 + obs1.len()], obs1.as_slice());
        assert_eq!(
            &e.response[10 + obs1.len()..10 + obs1.len() + obs2.len()],
            obs2.as_slice()
        );
        samples.push(Sample {
            loss_mask: e.loss_mask.clone(),
            ..Sample::unscored(
                0,
                prompt.clone(),
                e.response.clone(),
                e.logp.clone(),
                e.finish,
            )
        });
    }
    let sampled: Vec<Vec<f32>> = samples.iter().map(|s| s.old_logp.clone()).collect();
    let rollout = RunConfig::default().rollout;
    rescore(&model, &mut samples, &rollout, 0);
    for (s, before) in samples.iter().zip(&sampled) {
        for (k, (&a, &b)) in s.old_logp.iter().zip(before).enumerate() {
            if s.trains_on(k) {
                assert!((a - b).abs() < 1e-4, "token {k}: scored {a}, sampled {b}");
            }
        }
    }
}

/// Rollout groups through the calculator: G episodes per prompt as samples whose loss masks
/// cover exactly the policy's turns, and the budget ends episodes that keep calling.
#[test]
fn episode_groups_become_masked_samples() {
    let (model, tokenizer) = tiny_model(AGENT_ALPHABET);
    let examples = held_out()[..2].to_vec();
    let prompt_ids: Vec<Vec<u32>> = examples
        .iter()
        .map(|e| {
            tokenizer
                .encode(e.record["prompt"].as_str().unwrap())
                .unwrap()
        })
        .collect();
    let section = EnvSection {
        kind: rlvr_train::config::EnvKind::Calculator,
        max_turns: 2,
        max_tokens: 40,
        ..EnvSection::default()
    };
    let mut stats = EpisodeStats::default();
    let mut local = LocalTurns {
        policy: &model,
        tokenizer: &tokenizer,
    };
    let (samples, rewards) = sample_episode_groups(
        &mut local,
        &tokenizer,
        &section,
        &examples,
        &[0, 1],
        &prompt_ids,
        3,
        &gen_cfg(12),
        5,
        &mut stats,
    )
    .unwrap();
    assert_eq!((samples.len(), rewards.len()), (6, 6));
    for (i, s) in samples.iter().enumerate() {
        assert_eq!(s.example, i / 3);
        assert_eq!(s.loss_mask.len(), s.response.len());
        assert!(s.response.len() <= 40);
        assert_eq!(s.old_logp.len(), s.response.len());
    }
    let mut m = rlvr_train::metrics::Metrics::new();
    stats.insert_into(&mut m, "");
    assert!(m["env/turns_mean"] >= 1.0);
}

fn agent_run(extra: &[&str]) -> Vec<rlvr_train::metrics::Metrics> {
    common::run_history(&agent_sets(extra))
}

fn agent_sets(extra: &[&str]) -> Vec<String> {
    let data = repo().join("datasets/agent-calculator");
    let mut all: Vec<String> = vec![
        format!("model.alphabet={}", toml_string(AGENT_ALPHABET)),
        format!("data.train=\"{}\"", data.join("train.jsonl").display()),
        format!("data.eval=\"{}\"", data.join("test.jsonl").display()),
        "data.eval_limit=8".into(),
        "sft.steps=300".into(),
        "rollout.max_new_tokens=90".into(),
        "eval.max_new_tokens=90".into(),
        "objective.overlong_penalty=0.0".into(),
        "train.steps=1".into(),
        "eval.every=0".into(),
        "checkpoint.every=0".into(),
        "env={ kind = \"calculator\", max_tokens = 256 }".into(),
    ];
    all.extend(extra.iter().map(|s| s.to_string()));
    all
}

/// The base evaluation keeps its episode counts: the warm-started tiny model calls the tool on
/// held-out problems before any RL step, so the trainer state holds a positive
/// `eval/env/tool_calls_mean` for step 0 and `report.md` lists it beside the final one; a
/// single-turn run has none.
#[test]
fn the_base_evaluation_keeps_its_episode_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let base_eval = |name: &str, sets: Vec<String>| {
        let dir = tmp.path().join(name);
        let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
        common::train_quiet(&dir, &refs);
        let ckpt = rlvr_train::checkpoint::latest(&dir).unwrap().unwrap();
        let state = rlvr_train::checkpoint::read_state(&ckpt).unwrap();
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        (state.base_eval, report)
    };
    let (multi, report) = base_eval("multi", agent_sets(&["env.max_turns=3", "eval.every=1"]));
    assert!(multi["eval/env/tool_calls_mean"] > 0.0, "{multi:?}");
    assert!(multi["eval/env/turns_mean"] > 1.0, "{multi:?}");
    let row = report
        .lines()
        .find(|l| l.starts_with("| `eval/env/tool_calls_mean` |"))
        .unwrap_or_else(|| panic!("no tool-call row in report.md:\n{report}"));
    assert!(
        row.contains(&format!("{:.3}", multi["eval/env/tool_calls_mean"])),
        "{row}"
    );
    let (single, report) = base_eval("single", Vec::new());
    assert!(single.is_empty(), "{single:?}");
    assert!(!report.contains("eval/env/"), "{report}");
}

/// The knobs in a run: the warm-started tiny model calls the tool, so with `max_turns = 3`
/// episodes have several turns and observation tokens, and with `max_turns = 1` exactly one
/// turn and none; `kind = "single_turn"` never calls; `max_tokens = 40` leaves no room for
/// an observation.
#[test]
fn env_knobs_change_the_run() {
    let multi = &agent_run(&["env.max_turns=3"])[0];
    assert!(multi["env/tool_calls_mean"] > 0.0, "{multi:?}");
    assert!(multi["env/turns_mean"] > 1.0);
    assert!(multi["env/observation_tokens_mean"] > 0.0);
    let one = &agent_run(&["env.max_turns=1"])[0];
    assert_eq!(one["env/turns_mean"], 1.0);
    assert_eq!(one["env/observation_tokens_mean"], 0.0);
    let single = &agent_run(&["env.kind=\"single_turn\""])[0];
    assert_eq!(single["env/tool_calls_mean"], 0.0);
    // A 40-token budget cuts every call (81 characters) short: no observation fits after it.
    let short = &agent_run(&["env.max_turns=3", "env.max_tokens=40"])[0];
    assert!(short["response/length_mean"] <= 40.0, "{short:?}");
    assert_eq!(short["env/observation_tokens_mean"], 0.0);
}

/// TIER against its independent reference (`scripts/reference_tier.py`: JSON through Python's
/// json, arithmetic through Python's ast): every episode of the fixture is played through the
/// calculator environment as scripted turns, and its per-call checks, answer score and reward
/// under four weight sets equal the script's.
#[test]
fn the_tier_reward_matches_the_reference_script() {
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("crates/rlvr-train/tests/fixtures/tier_golden.json"))
            .unwrap(),
    )
    .unwrap();
    let weights: std::collections::BTreeMap<String, TierConfig> =
        serde_json::from_value(golden["weights"].clone()).unwrap();
    let max_turns = golden["max_turns"].as_u64().unwrap() as usize;
    let verifier = math_verifier();
    let cases = golden["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 18);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let turns: Vec<String> = serde_json::from_value(case["turns"].clone()).unwrap();
        let example = Example {
            id: name.into(),
            prompt: None,
            messages: None,
            record: serde_json::json!({}),
        };
        let mut next = turns.iter();
        let played = oracle::play(&mut Calculator::new(), &example, max_turns, |_| {
            next.next().cloned().unwrap_or_default()
        })
        .unwrap();
        let checks: Vec<[u8; 3]> = played
            .calls
            .iter()
            .map(|c| [c.parsed, c.valid, c.executed].map(u8::from))
            .collect();
        let want: Vec<[u8; 3]> = serde_json::from_value(case["checks"].clone()).unwrap();
        assert_eq!(checks, want, "{name}: per-call checks");
        let record = serde_json::json!({ "answer": case["reference"] });
        let reference = RunConfig::default().verifier.reference(&record).unwrap();
        let answer = played
            .final_text
            .as_deref()
            .map_or(0.0, |a| verifier.verify(a, &reference).reward);
        assert_eq!(
            answer,
            case["answer_score"].as_f64().unwrap() as f32,
            "{name}"
        );
        for (wname, tier) in &weights {
            let got = tier.reward(&played.calls, answer);
            let want = case["rewards"][wname]["R"].as_f64().unwrap() as f32;
            assert!(
                (got - want).abs() < 1e-6,
                "{name} / {wname}: {got} vs {want}"
            );
        }
    }
}

/// `env.reward = "tier"` in a run: the logged reward is exactly the TIER combination of the
/// logged parts (`w_F·F + w_S·S + w_E·E + w_A·answer − p·failed`, linear, so it holds for the
/// means) under two weight sets, and not the verifier's score alone; the parts are live (the
/// warm-started model calls the tool).
#[test]
fn the_tier_reward_is_what_the_run_optimizes() {
    for (sets, w) in [
        (vec!["env.reward=\"tier\""], [0.1, 0.2, 0.2, 0.5, 0.0]),
        (
            vec![
                "env.reward=\"tier\"",
                "env.tier={ format = 0.3, schema = 0.0, execution = 0.4, answer = 0.3, failed_call_penalty = 0.2 }",
            ],
            [0.3, 0.0, 0.4, 0.3, 0.2],
        ),
    ] {
        let m = &agent_run(&sets)[0];
        let parts = [
            m["env/tier_format_mean"],
            m["env/tier_schema_mean"],
            m["env/tier_execution_mean"],
            m["env/answer_mean"],
            -m["env/failed_calls_mean"],
        ];
        assert!(parts[0] > 0.0 && m["env/tool_calls_mean"] > 0.0, "{m:?}");
        let want: f64 = parts.iter().zip(w).map(|(p, w)| p * w).sum();
        let got = m["reward/mean"];
        assert!(
            (got - want).abs() < 1e-5,
            "{sets:?}: reward/mean {got} vs TIER {want}: {m:?}"
        );
        assert!(
            (got - m["env/answer_mean"]).abs() > 1e-3,
            "the reward is not the verifier's"
        );
    }
    // Without it, the reward is the verifier's score and no TIER parts are logged.
    let plain = &agent_run(&[])[0];
    assert!((plain["reward/mean"] - plain["env/answer_mean"]).abs() < 1e-6);
    assert!(!plain.contains_key("env/tier_format_mean"));
}

/// Combinations that cannot work are refused at load, naming the key.
#[test]
fn env_refusals_name_the_key() {
    for (sets, key) in [
        (vec!["env.max_turns=0"], "env.max_turns"),
        (
            vec!["env.observation_template=\"{{ nope }}\""],
            "env.observation_template",
        ),
        (
            vec!["rollout.max_staleness=1", "objective.tis=\"truncate\""],
            "rollout.max_staleness",
        ),
        (vec!["stages.cepo={}"], "stages.cepo"),
        (vec!["env.tier={ answer = 1.0 }"], "env.reward"),
        (
            vec!["env.reward=\"tier\"", "env.tier={ schema = -0.5 }"],
            "env.tier.schema",
        ),
        (
            vec!["env.reward=\"tier\"", "env.kind=\"single_turn\""],
            "env.kind",
        ),
        (vec!["stages.rebel={}"], "stages.rebel"),
    ] {
        let mut all: Vec<String> = vec!["env={ kind = \"calculator\" }".into()];
        all.extend(sets.iter().map(|s| s.to_string()));
        let err = RunConfig::load(None, &all).unwrap_err().to_string();
        assert!(err.contains(key), "{sets:?}: {err}");
    }
    // ReBel without any [env] at all.
    let err = RunConfig::load(None, &["stages.rebel={}".into()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("stages.rebel"), "{err}");
}

fn guess_held_out() -> Vec<Example> {
    load_jsonl(&repo().join("datasets/guess-number/test.jsonl")).unwrap()
}

/// The bisection oracle wins all 200 held-out games within the configs' four turns (three
/// probes and the answer), stating the tracker's interval every turn (r_state = r_task = 1);
/// a scan from the low end (probes low, low+1, low+2, then answers low+3) wins only the games
/// whose number is low+3, so the budget rewards a strategy.
#[test]
fn the_bisection_oracle_wins_every_held_out_game() {
    let verifier = math_verifier();
    let config = RunConfig::default().verifier;
    let (mut oracle_wins, mut scan_wins) = (0, 0);
    let games = guess_held_out();
    assert_eq!(games.len(), 200);
    for ex in &games {
        let reference = config.reference(&ex.record).unwrap();
        let mut env = GuessNumber::default();
        env.reset(ex).unwrap();
        let mut policy = guess_number::bisect(ex);
        let mut observations = Vec::new();
        let mut answer = None;
        for _ in 0..4 {
            let action = policy(&observations);
            let turn = env.step(&action);
            let b = turn.belief.unwrap();
            assert_eq!(
                (b.state, b.task, b.format_ok),
                (1.0, 1.0, true),
                "{}: {action}",
                ex.id
            );
            match turn.reply {
                Reply::Final => {
                    answer = Some(env.answer_text(&action).to_string());
                    break;
                }
                Reply::Observation(o) => observations.push(o),
            }
        }
        let answer = answer.expect("bisection answers within four turns");
        oracle_wins += usize::from(verifier.verify(&answer, &reference).passed);
        let low = ex.record["low"].as_i64().unwrap();
        let mut k = 0;
        let played = oracle::play(&mut GuessNumber::default(), ex, 4, |_| {
            k += 1;
            if k < 4 {
                format!("{}?", low + k - 1)
            } else {
                (low + 3).to_string()
            }
        })
        .unwrap();
        let scan = played.final_text.unwrap_or_default();
        scan_wins += usize::from(verifier.verify(&scan, &reference).passed);
    }
    assert_eq!(oracle_wins, 200);
    assert!(scan_wins < 100, "{scan_wins}");
}

fn guess_run(extra: &[&str]) -> rlvr_train::metrics::Metrics {
    let data = repo().join("datasets/guess-number");
    let mut all: Vec<String> = vec![
        format!(
            "data.train=\"{}\"",
            data.join("train-belief.jsonl").display()
        ),
        format!("data.eval=\"{}\"", data.join("test.jsonl").display()),
        "data.eval_limit=8".into(),
        "sft.steps=300".into(),
        "rollout.max_new_tokens=12".into(),
        "eval.max_new_tokens=12".into(),
        "objective.overlong_penalty=0.0".into(),
        "train.steps=1".into(),
        "eval.every=0".into(),
        "checkpoint.every=0".into(),
        "env={ kind = \"guess_number\", max_turns = 4, max_tokens = 64 }".into(),
    ];
    all.extend(extra.iter().map(|s| s.to_string()));
    common::run_history(&all).remove(0)
}

/// `[stages.rebel]` in a run of the game: the logged belief reward is the configured
/// combination of the logged checks (`α·state + β·task + δ·(2·format_ok − 1)`) under two weight
/// sets; the step advantages reach the tokens (and vanish with `step_weight = 0`); the discount
/// changes them. Every run draws the same first rollouts (same seed, same warm start).
#[test]
fn rebel_knobs_change_the_run() {
    let mut step_adv = Vec::new();
    for (sets, w) in [
        (vec!["stages.rebel={}"], [0.3, 0.4, 0.1]),
        (
            vec![
                "stages.rebel={ state_weight = 1.0, task_weight = 0.0, format_weight = 0.5, discount = 0.5 }",
            ],
            [1.0, 0.0, 0.5],
        ),
    ] {
        let m = guess_run(&sets);
        let get = |k: &str| m[&format!("stages/shaping/rebel_{k}")];
        let want = w[0] * get("state_mean")
            + w[1] * get("task_mean")
            + w[2] * (2.0 * get("format_ok_frac") - 1.0);
        let got = get("belief_reward_mean");
        assert!(
            (got - want).abs() < 1e-5,
            "{sets:?}: {got} vs {want}: {m:?}"
        );
        assert!(
            get("format_ok_frac") > 0.5,
            "the warm start states beliefs: {m:?}"
        );
        assert!(m["advantage/token_offset_abs_mean"] > 0.0, "{m:?}");
        step_adv.push(get("step_adv_abs_mean"));
    }
    assert!((step_adv[0] - step_adv[1]).abs() > 1e-6, "{step_adv:?}");
    let off = guess_run(&["stages.rebel={ step_weight = 0.0 }"]);
    assert_eq!(off["stages/shaping/rebel_step_adv_abs_mean"], 0.0);
    assert_eq!(off["advantage/token_offset_abs_mean"], 0.0);
}

// ---- The search environment ----

fn search_dir() -> PathBuf {
    repo().join("datasets/agent-search")
}

fn search_env(top_k: usize) -> Search {
    let index = corpus_index(&search_dir().join("corpus.jsonl")).unwrap();
    Search::new(index, top_k)
}

/// BM25 against its independent reference (`scripts/reference_bm25.py`, plain Python dicts
/// and `math.log`): every query's ranked documents and scores, over a corpus of mixed
/// lengths, repeated terms, case, punctuation, underscores and non-ASCII letters.
#[test]
fn bm25_matches_the_reference_script() {
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("crates/rlvr-train/tests/fixtures/bm25_golden.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(golden["k1"].as_f64(), Some(rlvr_train::env::bm25::K1));
    assert_eq!(golden["b"].as_f64(), Some(rlvr_train::env::bm25::B));
    let corpus: Vec<String> = serde_json::from_value(golden["corpus"].clone()).unwrap();
    let index = Bm25Index::new(corpus);
    let cases = golden["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 10);
    for case in cases {
        let query = case["query"].as_str().unwrap();
        let want: Vec<(usize, f64)> = serde_json::from_value(case["ranked"].clone()).unwrap();
        let got = index.rank(query);
        assert_eq!(
            got.iter().map(|r| r.0).collect::<Vec<_>>(),
            want.iter().map(|r| r.0).collect::<Vec<_>>(),
            "{query}"
        );
        for ((_, g), (_, w)) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-9, "{query}: {g} vs {w}");
        }
    }
}

/// The oracle (search the record's entity, read the number after `<entity>:` in the results)
/// passes the math verifier on all 200 held-out questions in two turns; reading the results'
/// last number instead fails on the questions whose results also hold a neighbour's document,
/// which are a good share of them, so the split needs reading the right document.
#[test]
fn the_search_oracle_answers_every_held_out_question() {
    let verifier = math_verifier();
    let config = RunConfig::default().verifier;
    let examples = load_jsonl(&search_dir().join("test.jsonl")).unwrap();
    assert_eq!(examples.len(), 200);
    let (mut passed, mut last_passed) = (0, 0);
    for ex in &examples {
        let reference = config.reference(&ex.record).unwrap();
        let mut env = search_env(2);
        let mut seen = String::new();
        let mut policy = oracle::search(ex);
        let played = oracle::play(&mut env, ex, 3, |obs: &[String]| {
            if let Some(o) = obs.last() {
                seen.clone_from(o);
            }
            policy(obs)
        })
        .unwrap();
        assert_eq!((played.turns, played.tool_errors()), (2, 0), "{}", ex.id);
        passed += usize::from(
            verifier
                .verify(&played.final_text.unwrap(), &reference)
                .passed,
        );
        let last: String = seen
            .rsplit(|c: char| !c.is_ascii_digit())
            .find(|s| s.len() == 3)
            .unwrap_or_default()
            .to_string();
        last_passed += usize::from(verifier.verify(&last, &reference).passed);
    }
    assert_eq!(passed, 200);
    assert!(
        last_passed < 160,
        "{last_passed}: the distractors are too rare"
    );
}

/// Every searching warm-start completion carries, as its tool response, exactly what the
/// environment returns for its call (`top_k = 1`, as `configs/agent-search.toml`): the
/// generator's idea of the ranking is BM25's.
#[test]
fn the_warm_start_transcripts_are_what_the_tool_returns() {
    let train = load_jsonl(&search_dir().join("train.jsonl")).unwrap();
    let mut env = search_env(1);
    let mut checked = 0;
    for ex in &train {
        let c = ex.record["completion"].as_str().unwrap();
        let Some(end) = c.find("</tool_call>") else {
            continue;
        };
        let call = &c[..end + "</tool_call>".len()];
        let rest = &c[call.len()..];
        let Reply::Observation(obs) = env.step(call).reply else {
            panic!("{}: a call is answered", ex.id)
        };
        assert!(rest.starts_with(&obs), "{}: {obs} vs {rest}", ex.id);
        checked += 1;
    }
    assert!(checked > 1000, "{checked}");
}

fn search_run(extra: &[&str]) -> Vec<rlvr_train::metrics::Metrics> {
    common::run_history(&search_sets(extra))
}

/// The run config of [`search_sets`] in `dir`, sharing the tests' warm-start cache.
fn search_config(dir: &Path, extra: &[&str]) -> RunConfig {
    let sets = search_sets(extra);
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    common::tiny_config(dir, &refs)
}

fn search_sets(extra: &[&str]) -> Vec<String> {
    let data = search_dir();
    let mut all: Vec<String> = vec![
        format!("model.alphabet={}", toml_string(AGENT_ALPHABET)),
        format!("data.train=\"{}\"", data.join("train.jsonl").display()),
        format!("data.eval=\"{}\"", data.join("test.jsonl").display()),
        "data.eval_limit=8".into(),
        "sft.steps=300".into(),
        "rollout.max_new_tokens=80".into(),
        "eval.max_new_tokens=80".into(),
        "objective.overlong_penalty=0.0".into(),
        "train.steps=1".into(),
        "eval.every=0".into(),
        "checkpoint.every=0".into(),
        format!(
            "env={{ kind = \"search\", corpus = \"{}\", top_k = 1, max_tokens = 256, max_turns = 3 }}",
            data.join("corpus.jsonl").display()
        ),
    ];
    all.extend(extra.iter().map(|s| s.to_string()));
    all
}

/// In a run the warm-started tiny model searches and reads results back, and `env.top_k`
/// reaches the tool: on the held-out episodes (greedy, so the same calls in both runs: the
/// first turn does not depend on `top_k`) three documents per result make longer observations
/// than one. The warm start here learns from the expert alone (every training completion is
/// the record's search transcript, `solution`): the task's own teacher answers at once more
/// often than it searches, so its greedy policy would not call the tool. The short warm start
/// does not copy the question's town into its query, so the corpus holds every document three
/// times: any query that finds a document finds three.
#[test]
fn search_knobs_change_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let experts = tmp.path().join("train.jsonl");
    let lines: String = load_jsonl(&search_dir().join("train.jsonl"))
        .unwrap()
        .into_iter()
        .map(|ex| {
            let mut record = ex.record;
            record["completion"] = record["solution"].clone();
            record.to_string() + "\n"
        })
        .collect();
    std::fs::write(&experts, lines).unwrap();
    let tripled = tmp.path().join("corpus.jsonl");
    let docs = std::fs::read_to_string(search_dir().join("corpus.jsonl")).unwrap();
    std::fs::write(&tripled, docs.repeat(3)).unwrap();
    let train = format!("data.train=\"{}\"", experts.display());
    let corpus = format!("env.corpus=\"{}\"", tripled.display());
    let one = &search_run(&["env.top_k=1", &train, &corpus])[0];
    assert!(one["env/tool_calls_mean"] > 0.0, "{one:?}");
    assert!(one["env/observation_tokens_mean"] > 0.0);
    assert!(one["eval/env/tool_calls_mean"] > 0.0, "{one:?}");
    let three = &search_run(&["env.top_k=3", &train, &corpus])[0];
    assert_eq!(
        three["eval/env/tool_calls_mean"],
        one["eval/env/tool_calls_mean"]
    );
    assert!(
        three["eval/env/observation_tokens_mean"] > one["eval/env/observation_tokens_mean"],
        "{three:?} vs {one:?}"
    );
}

/// The search environment's keys are refused where they cannot work, naming the key, when the
/// config loads; a corpus line without text is named by file and line when the run starts,
/// before its warm start (the run directory gets no model).
#[test]
fn search_refusals_name_the_key() {
    let corpus = search_dir().join("corpus.jsonl");
    for (env, key) in [
        ("{ kind = \"search\" }".to_string(), "env.corpus"),
        (
            format!(
                "{{ kind = \"search\", corpus = \"{}\", top_k = 0 }}",
                corpus.display()
            ),
            "env.top_k",
        ),
        (
            format!(
                "{{ kind = \"calculator\", corpus = \"{}\" }}",
                corpus.display()
            ),
            "env.corpus",
        ),
    ] {
        let err = RunConfig::load(None, &[format!("env={env}")])
            .unwrap_err()
            .to_string();
        assert!(err.contains(key), "{env}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"text\":\"a\"}\n{\"txt\":\"b\"}\n").unwrap();
    let env = format!(
        "env={{ kind = \"search\", corpus = \"{}\" }}",
        bad.display()
    );
    let run_dir = dir.path().join("run");
    let cache = format!("sft.cache_dir=\"{}\"", dir.path().join("cache").display());
    let config = search_config(&run_dir, &[&env, &cache]);
    let options = rlvr_train::RunOptions {
        quiet: true,
        ..Default::default()
    };
    let err = rlvr_train::train(config, &options).unwrap_err().to_string();
    assert!(err.contains("bad.jsonl:2"), "{err}");
    assert!(!dir.path().join("cache").exists(), "no warm start ran");
}

// ---- SMEPO's guidance on the search task ----

const SMEPO: &str = "smepo={ trace_field = \"solution\", mask = \"math\", intro = \" e.g. \" }";

/// `[smepo]` in a run: every training prompt of the search task carries its masked search
/// transcript (the populations blanked, the call kept), which changes what the run samples;
/// a ratio below 1 shows less of it; the rollout prompt is the plain prompt and then the
/// guidance, with no answer in it (the held-out prompts are the plain ones, `encode_example`).
#[test]
fn smepo_guidance_reaches_the_training_prompts_only() {
    let guided = search_run(&[SMEPO]);
    let plain = search_run(&[]);
    let g = &guided[0];
    assert_eq!(g["smepo/guided_frac"], 1.0, "{g:?}");
    assert_eq!(g["smepo/leaked_frac"], 0.0);
    assert!(g["smepo/guidance_chars_mean"] > 100.0, "{g:?}");
    assert!(!plain[0].contains_key("smepo/guided_frac"));
    // The same seed, other prompts: other samples (the policy's entropy on them differs).
    assert_ne!(
        g["objective/entropy"], plain[0]["objective/entropy"],
        "[smepo] changed nothing the run sampled"
    );
    let half = search_run(&[SMEPO, "smepo.ratio=0.5"]);
    assert!(half[0]["smepo/guidance_chars_mean"] < g["smepo/guidance_chars_mean"]);

    let tmp = tempfile::tempdir().unwrap();
    let (tr, _) = common::trainer(&search_config(tmp.path(), &[SMEPO]));
    let (ids, what) = tr.encode_rollout_prompts(&[0, 1]).unwrap();
    for (k, ex) in tr.train_set[..2].iter().enumerate() {
        let plain_ids = tr.encode_example(ex).unwrap();
        assert!(ids[k].len() > plain_ids.len() + 100);
        assert_eq!(
            ids[k][..plain_ids.len()],
            plain_ids[..],
            "the prompt comes first"
        );
        let answer = ex.record["answer"].as_str().unwrap();
        let text = tr.tokenizer.decode(&ids[k]).unwrap();
        assert!(!text.contains(answer), "{text} holds {answer}");
        assert!(matches!(what[k], Some(Guidance::Shown(_))));
    }
    // The full trace (no mask) holds the answer: withheld by default.
    let full = search_config(tmp.path(), &[SMEPO, "smepo.mask=\"none\""]);
    let (tr, _) = common::trainer(&full);
    let (_, what) = tr.encode_rollout_prompts(&[0]).unwrap();
    assert_eq!(what[0], Some(Guidance::Leaked));
    let err = RunConfig::load(None, &search_sets(&[SMEPO, "smepo.ratio=1.5"]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("smepo.ratio"), "{err}");
}

/// `smepo.prompts = "hard"` in a step (the arithmetic task, its careless completions shown in
/// full as the traces; a warm start that solves some prompts): every prompt is first drawn
/// plain, the same groups as a step without `[smepo]` (same seed, same prompts); exactly the
/// groups with no passing sample are drawn again with the guidance after their prompt, and the
/// others are trained on as drawn; `smepo/rescued_frac` is the share of guided groups with a
/// pass. Refused with asynchronous rollouts, naming the key.
#[test]
fn smepo_on_hard_prompts_guides_only_the_groups_without_a_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let smepo = "smepo={ trace_field = \"completion\", mask = \"none\", drop_leaking = false, \
                 intro = \" \", prompts = \"hard\" }";
    let base = ["sft.steps=3000", "rollout.prompts_per_step=8"];
    let collect = |extra: &[&str]| {
        let sets: Vec<&str> = base.iter().chain(extra).copied().collect();
        let (mut tr, _) = common::trainer(&common::tiny_config(tmp.path(), &sets));
        let mut m = rlvr_train::metrics::Metrics::new();
        let rollouts = rlvr_train::step::rollout::collect(&mut tr, 0, &mut m).unwrap();
        (tr, rollouts.samples, m)
    };
    let (_, plain, _) = collect(&[]);
    let (tr, hard, m) = collect(&[smepo]);
    let g = tr.config.rollout.group_size;
    let texts =
        |group: &[Sample]| -> Vec<String> { group.iter().map(|s| s.text.clone()).collect() };
    let (mut n_hard, mut n_solved, mut n_rescued) = (0, 0, 0);
    for (p, h) in plain.chunks(g).zip(hard.chunks(g)) {
        assert_eq!(p[0].example, h[0].example);
        let prompt = tr.encode_example(&tr.train_set[p[0].example]).unwrap();
        if p.iter().any(|s| s.passed) {
            n_solved += 1;
            assert_eq!(texts(p), texts(h), "a solved group is kept as drawn");
            assert!(h.iter().all(|s| s.prompt == prompt));
        } else {
            n_hard += 1;
            n_rescued += u32::from(h.iter().any(|s| s.passed));
            let ex = &tr.train_set[p[0].example];
            let trace = format!(" {}", ex.record["completion"].as_str().unwrap());
            let text = tr.tokenizer.decode(&h[0].prompt).unwrap();
            assert!(text.ends_with(&trace), "guided: {text}");
            for s in h {
                assert_eq!(
                    s.prompt[..prompt.len()],
                    prompt[..],
                    "the prompt comes first"
                );
            }
        }
    }
    assert!(
        n_hard > 0 && n_solved > 0,
        "{n_hard} hard, {n_solved} solved: shows nothing"
    );
    assert_eq!(hard.len(), plain.len());
    assert_eq!(m["smepo/hard_frac"], f64::from(n_hard) / 8.0, "{m:?}");
    assert_eq!(m["smepo/guided_frac"], m["smepo/hard_frac"]);
    assert_eq!(
        m["smepo/rescued_frac"],
        f64::from(n_rescued) / f64::from(n_hard)
    );
    let err = RunConfig::load(
        None,
        &[
            smepo.to_string(),
            "rollout.max_staleness=1".into(),
            "objective.tis=\"truncate\"".into(),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("smepo.prompts"), "{err}");
}

/// `sft.mask_observations`: the warm start trains on the policy's turns only. On the search
/// task's teacher transcripts the masked tokens are exactly the characters from each
/// `<tool_response>` through its `</tool_response>` (found here by string search; the bundled
/// tokenizer has one token per character), every other target token and the end of sequence
/// trained on; the ids are the whole transcript's. In a run, the masked warm start is another
/// starting policy (the same seeds sample other episodes), and without `[env]` the key is
/// refused.
#[test]
fn mask_observations_leaves_the_tool_responses_out_of_the_warm_start() {
    let tmp = tempfile::tempdir().unwrap();
    let config = search_config(tmp.path(), &["sft.mask_observations=true"]);
    let tokenizer = tiny_model(AGENT_ALPHABET)
        .1
        .with_special_token("eos_token", "<eos>");
    let examples = &load_jsonl(&search_dir().join("train.jsonl")).unwrap()[..60];
    let pairs =
        rlvr_train::sft::encode_pairs(&tokenizer, examples, false, config.env.as_ref()).unwrap();
    let mut masked_examples = 0;
    for (pair, ex) in pairs.iter().zip(examples) {
        let text = ex.record["completion"].as_str().unwrap();
        let mut want = vec![true; text.chars().count() + 1];
        if let Some(open) = text.find("<tool_response>") {
            let close = text.find("</tool_response>").unwrap() + "</tool_response>".len();
            want[open..close].iter_mut().for_each(|m| *m = false);
            masked_examples += 1;
        }
        assert_eq!(pair.loss_mask, want, "{}", ex.id);
        let mut ids = tokenizer.encode(text).unwrap();
        ids.push(rlvr_train::model::char_tokenizer::EOS_ID);
        assert_eq!(pair.response, ids, "{}", ex.id);
    }
    assert!((10..=50).contains(&masked_examples), "{masked_examples}");

    let plain = search_run(&[]);
    let masked = search_run(&["sft.mask_observations=true"]);
    assert_ne!(
        masked[0]["objective/entropy"], plain[0]["objective/entropy"],
        "sft.mask_observations changed nothing the run sampled"
    );
    let err = RunConfig::load(None, &["sft.mask_observations=true".into()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("sft.mask_observations"), "{err}");
}
