//! The execution-aware dense code reward (`[verifier.dense]`, methods-extra §9) in the real
//! loop, and its token mapping on real tokenizers.
//!
//! The run-level task: one-digit sums answered as a program, `TOKEN=<a+b>`, checked by
//! `assert TOKEN == <a+b>`. The tiny model half-learns it, so its programs are often broken
//! (syntax errors, `TOKEN=+`), and every program that compiles has an E225 (no spaces around
//! `=`) and a B105 (a hard-coded `TOKEN`): every component and knob is exercised.

mod common;

use common::get;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rlvr_models::Tokenizer;
use rlvr_objectives::shaping::{StepOffset, span_token_offsets};
use rlvr_train::RunConfig;
use rlvr_train::metrics::Metrics;
use rlvr_train::model::char_tokenizer::{ALPHABET, tokenizer_json};
use rlvr_train::step::exec_credit::token_char_bounds;

fn data() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = common::shared_cache()
            .join("dense-data")
            .join(std::process::id().to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let lines: String = (0..10)
            .flat_map(|a| (0..10 - a).map(move |b| (a, b)))
            .map(|(a, b)| {
                serde_json::json!({"id": format!("t{a}{b}"), "prompt": format!("{a}+{b}="),
                    "completion": format!("TOKEN={}", a + b),
                    "tests": [format!("assert TOKEN == {}", a + b)]})
                .to_string()
                    + "\n"
            })
            .collect();
        let path = dir.join("token_sums.jsonl");
        std::fs::write(&path, lines).unwrap();
        path
    })
}

fn sets(extra: &[&str]) -> Vec<String> {
    let data = data().display().to_string();
    let mut all = vec![
        format!("data.train=\"{data}\""),
        format!("data.eval=\"{data}\""),
        "data.eval_limit=4".into(),
        "sft.steps=300".into(),
        "train.steps=1".into(),
        "train.warmup_steps=0".into(),
        "eval.every=0".into(),
        "checkpoint.every=0".into(),
        "rollout.max_new_tokens=9".into(),
        "objective.overlong_max_len=9".into(),
        "eval.max_new_tokens=9".into(),
        "verifier.kind=\"code\"".into(),
        "verifier.timeout_s=10".into(),
    ];
    all.extend(extra.iter().map(|s| s.to_string()));
    all
}

fn run(extra: &[&str]) -> Vec<Metrics> {
    common::run_history(&sets(extra))
}

fn dense_base() -> &'static [Metrics] {
    static BASE: OnceLock<Vec<Metrics>> = OnceLock::new();
    BASE.get_or_init(|| run(&["verifier.dense={}"]))
}

/// The dense reward replaces the plain test fraction, logs every component and its costs,
/// and its line penalties (syntax errors among them) reach the token advantages: the same
/// first rollout with κ = 0 gives another update.
#[test]
fn dense_reward_reaches_the_tokens() {
    let dense = &dense_base()[0];
    let plain = &run(&[])[0];
    assert_ne!(get(dense, "reward/mean"), get(plain, "reward/mean"));
    for c in ["syntax", "func", "style", "security", "exec"] {
        let v = get(dense, &format!("reward/part/{c}"));
        assert!((0.0..=1.0).contains(&v), "{c} = {v}");
    }
    let syntax = get(dense, "reward/part/syntax");
    assert!(
        syntax < 1.0,
        "no broken program in the batch: syntax = {syntax}"
    );
    assert!(
        get(dense, "reward/part/style") < syntax,
        "E225 lowers style"
    );
    assert!(get(dense, "dense/findings") > 0.0);
    assert!(get(dense, "time/dense_analyze_s") > 0.0);
    assert!(get(dense, "time/dense_token_map_s") > 0.0);
    assert!(get(dense, "dense/penalty_abs_mean") > 0.0);
    assert!(get(dense, "advantage/token_offset_abs_mean") > 0.0);
    assert!(!plain.contains_key("dense/findings"));
    // Broken programs are the responses' failures (`verify/crashed`), not the verifier's.
    assert!(get(plain, "verify/crashed") > 0.0);
    assert_eq!(get(plain, "verify/errors"), 0.0);
    let no_tokens = &run(&["verifier.dense={ kappa = 0 }"])[0];
    assert_eq!(get(no_tokens, "reward/mean"), get(dense, "reward/mean"));
    assert!(!no_tokens.contains_key("dense/penalty_abs_mean"));
    assert_ne!(
        get(no_tokens, "optim/grad_norm"),
        get(dense, "optim/grad_norm")
    );
}

/// Every knob of `[verifier.dense]` changes the first step (same rollout, other rewards or
/// penalties, so another update).
#[test]
fn dense_knobs_are_live() {
    let base = &dense_base()[0];
    for knob in [
        "verifier.dense={ w_syntax = 0.5 }",
        "verifier.dense={ w_func = 0.9 }",
        "verifier.dense={ w_style = 0.3 }",
        "verifier.dense={ w_security = 0.3 }",
        "verifier.dense={ w_exec = 0.6 }",
        "verifier.dense={ lint_scale = 1 }",
        "verifier.dense={ sec_scale = 1 }",
        "verifier.dense={ kappa = 3 }",
        "verifier.dense={ max_line_length = 4 }",
        "verifier.dense={ require_pass = false }",
    ] {
        let m = &run(&[knob])[0];
        assert_ne!(
            get(m, "optim/grad_norm"),
            get(base, "optim/grad_norm"),
            "{knob} is inert"
        );
    }
}

/// Bad values and combinations stop the run at load, naming the key.
#[test]
fn bad_dense_configs_are_refused_at_load() {
    let refused = |extra: &[&str], key: &str| {
        let err = RunConfig::load(None, &sets(extra)).unwrap_err().to_string();
        assert!(err.contains(key), "{extra:?}: {err}");
    };
    refused(
        &["verifier.dense={ w_style = -1 }"],
        "verifier.dense.w_style",
    );
    refused(
        &["verifier.dense={ sec_scale = 0 }"],
        "verifier.dense.sec_scale",
    );
    refused(&["verifier.dense={ kappa = -1 }"], "verifier.dense.kappa");
    refused(
        &["verifier.dense={}", "verifier.reward=\"all_or_nothing\""],
        "verifier.dense",
    );
    refused(&["verifier.dense={ gamma = 1 }"], "gamma");
    refused(
        &[
            "verifier={ kind = \"composite\", parts = [{ name = \"c\", weight = 1, kind = \"code\", dense = {} }] }",
        ],
        "verifier.parts[0].dense",
    );
}

/// Checks `token_char_bounds` and the even split on `text` with `tokenizer`: the boundaries
/// end at the text's length, each ASCII token's characters are its own decoding, and a span
/// on line 2 of the program gives −0.1 / n to exactly the n tokens that overlap it.
fn check_mapping(tokenizer: &Tokenizer, text: &str) {
    let ids = tokenizer.encode(text).unwrap();
    let bounds = token_char_bounds(tokenizer, &ids).unwrap();
    let chars: Vec<char> = text.chars().collect();
    assert_eq!(bounds.len(), ids.len() + 1);
    assert_eq!(*bounds.last().unwrap(), chars.len());
    // Independent check against the tokenizer's own character offsets: the token this
    // mapping gives each character is one whose offsets contain that character (byte tokens
    // of one character share its offsets there; here the last of them holds it).
    let enc = tokenizer.inner().encode_char_offsets(text, false).unwrap();
    let offsets = enc.get_offsets();
    assert_eq!(offsets.len(), ids.len());
    assert!(bounds.windows(2).all(|w| w[0] <= w[1]));
    for c in 0..chars.len() {
        let k = (0..ids.len())
            .find(|&k| bounds[k] <= c && c < bounds[k + 1])
            .unwrap_or_else(|| panic!("character {c} of {text:?} has no token"));
        let (start, end) = offsets[k];
        assert!(
            start <= c && c < end,
            "character {c} in token {k} {:?}",
            offsets[k]
        );
    }
    let line2_start = text.find("    return").unwrap();
    let line2_end = line2_start + text[line2_start..].find('\n').unwrap();
    let span = StepOffset {
        char_start: text[..line2_start].chars().count(),
        char_end: text[..line2_end].chars().count(),
        offset: -0.1,
    };
    let o = span_token_offsets(&[span], &bounds);
    let hit: Vec<usize> = (0..ids.len()).filter(|&k| o[k] != 0.0).collect();
    let want: Vec<usize> = (0..ids.len())
        .filter(|&k| bounds[k] < span.char_end && bounds[k + 1] > span.char_start)
        .collect();
    assert_eq!(hit, want);
    assert!(!hit.is_empty());
    for &k in &hit {
        assert!((o[k] + 0.1 / hit.len() as f32).abs() < 1e-7);
    }
    assert!((o.iter().sum::<f32>() + 0.1).abs() < 1e-6);
}

/// The bundled model's character tokenizer (one token per character: the line's tokens are
/// its characters) and a byte-level BPE `tokenizer.json` (rlvr-models' fixture), including a
/// non-ASCII character split over byte tokens.
#[test]
fn line_to_token_mapping_on_real_tokenizers() {
    let inner: tokenizers::Tokenizer = tokenizer_json(ALPHABET).parse().unwrap();
    let chars = Tokenizer::from_tokenizer(inner, None);
    let text = "X=1\n    return 2+3\nY=4";
    let ids = chars.encode(text).unwrap();
    let bounds = token_char_bounds(&chars, &ids).unwrap();
    // The alphabet has no newline or lowercase: those are <unk>, decoded as nothing, so
    // characters and tokens still line up one to one only on known characters.
    assert_eq!(bounds.len(), ids.len() + 1);
    let bpe_dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rlvr-models/tests/fixtures/tokenizer"
    );
    let bpe = Tokenizer::from_dir(Path::new(bpe_dir)).unwrap();
    check_mapping(
        &bpe,
        "Here:\n```python\ndef f(x):\n    return x==None\n```\n",
    );
    check_mapping(&bpe, "Voilà:\n```python\ndef f(é):\n    return é\n```\n");
}
