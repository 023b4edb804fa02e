//! SCRL (`[stages.scrl]`, methods-extra §11) in the trainer: hand-made groups of the bundled
//! chain task get the advantages of the spec's formula, computed by hand, on every token (both
//! segment readings); the curriculum drops a mastered prompt's subproblems; a tiny run logs the
//! stage and saves the curriculum; a record without subproblems is refused at load by line.
//!
//! The task: the first 32 problems of `datasets/chain/train.jsonl`; the first is `50-0-96=`
//! with subproblems 50-0 → 50 and the original → -46.

mod common;

use common::get;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rlvr_models::FinishReason;
use rlvr_train::RunConfig;
use rlvr_train::batch::Sample;
use rlvr_train::metrics::Metrics;
use rlvr_train::model::char_tokenizer::ALPHABET;
use rlvr_train::step::advantage;
use rlvr_train::step::rollout::Rollouts;
use rlvr_train::trainer::Trainer;

fn data() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = common::dataset_head("datasets/chain/train.jsonl", 32);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(r#"{"id":"chain-train-00000","prompt":"50-0-96=""#));
        path
    })
}

fn sets(extra: &[&str]) -> Vec<String> {
    let data = data().display().to_string();
    let mut all = vec![
        format!("data.train=\"{data}\""),
        format!("data.eval=\"{data}\""),
        "data.eval_limit=8".into(),
        "sft.steps=100".into(),
        "train.steps=2".into(),
        "train.warmup_steps=0".into(),
        "eval.every=0".into(),
        "checkpoint.every=1".into(),
        "rollout.prompts_per_step=8".into(),
        "rollout.group_size=4".into(),
        "rollout.max_new_tokens=10".into(),
        "objective.overlong_max_len=10".into(),
        "objective.overlong_penalty=0".into(),
        "eval.max_new_tokens=10".into(),
    ];
    all.extend(extra.iter().map(|s| s.to_string()));
    all
}

/// A trainer on the tiny model warm-started on the chain task, with `extra` settings.
fn trainer(extra: &[&str]) -> Trainer {
    let dir = common::shared_cache().join("scrl-trainer");
    let all = sets(extra);
    let config = common::tiny_config(&dir, &all.iter().map(String::as_str).collect::<Vec<_>>());
    common::trainer(&config).0
}

const SCRL: &str = "stages.scrl={answers=\"separated\"}";

/// A group of example 0 (`50-0-96=`, answers 50 and -46) with these responses, scored the way
/// the run scores them (1 when the final answer, the last field or tag, is -46).
fn group(tr: &Trainer, texts: &[&str]) -> Rollouts {
    let eos = tr.tokenizer.eos_token_ids()[0];
    let samples = texts
        .iter()
        .map(|t| {
            let mut ids = tr.tokenizer.encode(t).unwrap();
            ids.push(eos);
            let mut s = Sample::unscored(
                0,
                vec![1],
                ids.clone(),
                vec![0.0; ids.len()],
                FinishReason::Stop,
            );
            s.text = (*t).to_string();
            s.passed = t.trim_end_matches("</sub 2>").ends_with("-46");
            s.reward = f32::from(u8::from(s.passed));
            s
        })
        .collect();
    Rollouts {
        samples,
        sampler_logp: None,
    }
}

fn token_advantages(batch: &Rollouts) -> Vec<Vec<f32>> {
    batch
        .samples
        .iter()
        .map(|s| {
            (0..s.response.len())
                .map(|t| s.advantage + s.token_offsets.get(t).copied().unwrap_or(0.0))
                .collect()
        })
        .collect()
}

fn close(got: &[Vec<f32>], want: &[Vec<f32>]) {
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.len(), w.len(), "{got:?} vs {want:?}");
        for (a, b) in g.iter().zip(w) {
            assert!((a - b).abs() < 1e-4, "{got:?} vs {want:?}");
        }
    }
}

/// Responses " 50;-46", "50;-36", "40;-56", "40;-46": step 1 right, right, wrong, wrong; final
/// right, wrong, wrong, right. Prefix rewards: step 1 [1, 1, 0, 0] → mean 1/2, unbiased std
/// √(1/3) → ±√3/2 = ±0.8660; final [1, 0, 0, 0] (the fourth's right final follows a wrong step,
/// so it earns nothing) → mean 1/4, std 1/2 → [1.5, −0.5, −0.5, −0.5]. Segment 1 is the first
/// field (with the leading space, unless answer_span_only), the rest and <eos> get the final's.
#[test]
fn hand_made_groups_get_the_formulas_advantages() {
    let texts = [" 50;-46", "50;-36", "40;-56", "40;-46"];
    let (a, b) = (0.866_025_4_f32, [1.5f32, -0.5, -0.5, -0.5]);
    let row = |first: &[f32], rest: usize, fin: f32| {
        let mut v = first.to_vec();
        v.extend(std::iter::repeat_n(fin, rest + 1));
        v
    };
    let want_segment = vec![
        row(&[a, a, a], 4, b[0]),
        row(&[a, a], 4, b[1]),
        row(&[-a, -a], 4, b[2]),
        row(&[-a, -a], 4, b[3]),
    ];
    let mut tr = trainer(&["stages.scrl={answers=\"separated\", curriculum=false}"]);
    let mut batch = group(&tr, &texts);
    let mut m = Metrics::new();
    advantage::assign(&mut tr, &mut batch, &mut m).unwrap();
    close(&token_advantages(&batch), &want_segment);
    assert_eq!(get(&m, "stages/shaping/scrl_subproblems_mean"), 2.0);
    assert_eq!(
        get(&m, "stages/shaping/scrl_intermediate_correct_frac"),
        0.5
    );
    assert_eq!(get(&m, "scrl/answered_frac"), 1.0);

    // answer_span_only: the leading space is outside answer 1 and gets the final's advantage.
    let mut want_span = want_segment.clone();
    want_span[0][0] = b[0];
    let mut tr =
        trainer(&["stages.scrl={answers=\"separated\", curriculum=false, answer_span_only=true}"]);
    let mut batch = group(&tr, &texts);
    advantage::assign(&mut tr, &mut batch, &mut Metrics::new()).unwrap();
    close(&token_advantages(&batch), &want_span);

    // Without the stage: GRPO on the final reward [1, 0, 0, 1], one value per response.
    let mut tr = trainer(&[]);
    let mut batch = group(&tr, &texts);
    advantage::assign(&mut tr, &mut batch, &mut Metrics::new()).unwrap();
    let g = 0.866_025_4;
    let plain: Vec<Vec<f32>> = [g, -g, -g, g]
        .iter()
        .zip(&batch.samples)
        .map(|(&v, s)| vec![v; s.response.len()])
        .collect();
    close(&token_advantages(&batch), &plain);
}

/// Two visits that pass 3/4 of the time (mean 0.75 > 0.5) drop the prompt's subproblems: the
/// third visit is credited on the final answer alone (no segment offsets; before, step 1's
/// advantage is 0 and the final's is not, so segment 1 has an offset); a visit with no pass
/// brings them back. With `curriculum = false` they are never dropped.
#[test]
fn the_curriculum_drops_mastered_prompts() {
    let mastered = ["50;-46", "50;-46", "50;-46", "50;-36"];
    let failed = ["50;-36", "40;-56", "50;-36", "40;-56"];
    let offsets = |tr: &mut Trainer, texts: &[&str]| {
        let mut batch = group(tr, texts);
        let mut m = Metrics::new();
        advantage::assign(tr, &mut batch, &mut m).unwrap();
        let any = batch
            .samples
            .iter()
            .any(|s| s.token_offsets.iter().any(|&o| o != 0.0));
        (any, get(&m, "scrl/dropped_prompts"))
    };
    let mut tr = trainer(&[SCRL]);
    assert_eq!(offsets(&mut tr, &mastered), (true, 0.0));
    assert_eq!(offsets(&mut tr, &mastered), (true, 1.0));
    assert!(
        !offsets(&mut tr, &mastered).0,
        "credited on the final alone"
    );
    assert!(!tr.state.scrl.uses_subproblems(0));
    offsets(&mut tr, &failed);
    assert!(tr.state.scrl.uses_subproblems(0));
    assert!(offsets(&mut tr, &mastered).0);

    let mut tr = trainer(&["stages.scrl={answers=\"separated\", curriculum=false}"]);
    for _ in 0..3 {
        assert_eq!(offsets(&mut tr, &mastered), (true, 0.0));
    }
}

/// A real tiny run: the stage's metrics are logged every step, its offsets reach the tokens
/// and the curriculum's memory is in the checkpoint.
#[test]
fn a_run_logs_the_stage_and_saves_the_curriculum() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let all = sets(&[SCRL]);
    common::train_quiet(&dir, &all.iter().map(String::as_str).collect::<Vec<_>>());
    let history = common::history(&dir);
    assert_eq!(history.len(), 2);
    for m in &history {
        assert_eq!(get(m, "stages/shaping/scrl_subproblems_mean"), 2.0);
        assert!(get(m, "scrl/answered_frac") > 0.5, "{m:?}");
        assert!(m.contains_key("advantage/token_offset_abs_mean"));
        assert!(m.contains_key("time/scrl_token_map_s"));
    }
    let state =
        std::fs::read_to_string(dir.join("checkpoints/step-000002/trainer_state.json")).unwrap();
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(
        state["scrl"]["prompts"].as_object().unwrap().len(),
        16,
        "{state}"
    );
}

/// A training record without the subproblems field is named by file and line when the run
/// loads its data.
#[test]
fn a_record_without_subproblems_is_refused_by_line() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("chain.jsonl");
    let text = std::fs::read_to_string(data()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[2] = r#"{"id":"x","prompt":"1+2+3=","answer":"6"}"#.into();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let mut all = sets(&[SCRL]);
    all.push(format!("data.train=\"{}\"", path.display()));
    let config = RunConfig::load(None, &all).unwrap();
    let err = rlvr_train::run::load::load_data(&config)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("chain.jsonl:3") && err.contains("subproblems"),
        "{err}"
    );
}

/// The hand-made group's segment-credited token advantages (see
/// [`hand_made_groups_get_the_formulas_advantages`]) for responses whose first answer ends at
/// character `ends[i]` and that have `lens[i]` tokens: step 1's ±√3/2 up to there, the final's
/// [1.5, −0.5, −0.5, −0.5] after.
fn segment_credit(ends: [usize; 4], lens: [usize; 4]) -> Vec<Vec<f32>> {
    let (a, b) = (0.866_025_4_f32, [1.5f32, -0.5, -0.5, -0.5]);
    let sign = [1.0, 1.0, -1.0, -1.0];
    (0..4)
        .map(|i| {
            let mut v = vec![a * sign[i]; ends[i]];
            v.resize(lens[i], b[i]);
            v
        })
        .collect()
}

fn assigned(tr: &mut Trainer, texts: &[&str]) -> (Rollouts, Metrics) {
    let mut batch = group(tr, texts);
    let mut m = Metrics::new();
    advantage::assign(tr, &mut batch, &mut m).unwrap();
    (batch, m)
}

/// Restating the subproblem (`50-0`, which the math verifier reads as 50) is not answering it:
/// only the two responses that write the numeral 50 are credited with step 1.
#[test]
fn a_restated_subproblem_is_not_an_answer() {
    let mut tr = trainer(&["stages.scrl={answers=\"separated\", curriculum=false}"]);
    let (_, m) = assigned(&mut tr, &["50-0;-46", "50;-46", "50;-46", "50 - 0;-46"]);
    assert_eq!(
        get(&m, "stages/shaping/scrl_intermediate_correct_frac"),
        0.5
    );
}

/// Every other `[stages.scrl]` key changes what a step gets: `answers = "tagged"` and
/// `separator` find the same verdicts in other spellings (the tags move where segment 1 ends),
/// `annotations_field` reads the chain from a GSM8K-style solution instead of
/// `subproblems_field`, `max_subproblems = 1` leaves the original problem alone (the plain
/// estimator), and `curriculum_threshold = 0.8` keeps a prompt passing 3/4 of the time.
#[test]
fn every_scrl_key_is_live_in_the_trainer() {
    let alphabet = format!("model.alphabet=\"{ALPHABET}<>|sub\"");
    let base = "curriculum=false";
    // Tagged: segment 1 is "<sub 1>50" or "<sub 1>40" (9 characters).
    let mut tr = trainer(&[
        &alphabet,
        &format!("stages.scrl={{answers=\"tagged\", {base}}}"),
    ]);
    let tagged = [
        "<sub 1>50</sub 1><sub 2>-46</sub 2>",
        "<sub 1>50</sub 1><sub 2>-36</sub 2>",
        "<sub 1>40</sub 1><sub 2>-56</sub 2>",
        "<sub 1>40</sub 1><sub 2>-46</sub 2>",
    ];
    let (batch, _) = assigned(&mut tr, &tagged);
    close(&token_advantages(&batch), &segment_credit([9; 4], [36; 4]));

    let separated = ["50|-46", "50|-36", "40|-56", "40|-46"];
    let mut tr = trainer(&[
        &alphabet,
        &format!("stages.scrl={{answers=\"separated\", separator=\"|\", {base}}}"),
    ]);
    let (batch, _) = assigned(&mut tr, &separated);
    close(&token_advantages(&batch), &segment_credit([2; 4], [7; 4]));

    // The chain from annotations; the subproblems field named does not exist.
    let dir = common::shared_cache()
        .join("scrl-annotated")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let annotated: String = std::fs::read_to_string(data())
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let (q, a) = (
                &v["subproblems"][0]["question"],
                &v["subproblems"][0]["answer"],
            );
            let solution = format!(
                "so <<{}={}>>\n#### {}",
                q.as_str().unwrap(),
                a.as_str().unwrap(),
                v["answer"].as_str().unwrap()
            );
            v["solution"] = solution.into();
            v.as_object_mut().unwrap().remove("subproblems");
            format!("{v}\n")
        })
        .collect();
    let path = dir.join("annotated.jsonl");
    std::fs::write(&path, annotated).unwrap();
    let plain = ["50;-46", "50;-36", "40;-56", "40;-46"];
    let mut tr = trainer(&[
        &format!("data.train=\"{}\"", path.display()),
        &format!(
            "stages.scrl={{answers=\"separated\", annotations_field=\"solution\", subproblems_field=\"none\", {base}}}"
        ),
    ]);
    let (batch, _) = assigned(&mut tr, &plain);
    close(&token_advantages(&batch), &segment_credit([2; 4], [7; 4]));

    // One subproblem: GRPO on the final rewards [1, 0, 0, 1].
    let mut tr = trainer(&[&format!(
        "stages.scrl={{answers=\"separated\", max_subproblems=1, {base}}}"
    )]);
    let (batch, m) = assigned(&mut tr, &plain);
    let g = 0.866_025_4;
    let want: Vec<Vec<f32>> = [g, -g, -g, g].iter().map(|&v| vec![v; 7]).collect();
    close(&token_advantages(&batch), &want);
    assert_eq!(get(&m, "stages/shaping/scrl_subproblems_mean"), 1.0);

    // A higher threshold keeps a prompt that passes 3/4 of the time.
    let mut tr = trainer(&["stages.scrl={answers=\"separated\", curriculum_threshold=0.8}"]);
    let mastered = ["50;-46", "50;-46", "50;-46", "50;-36"];
    for _ in 0..3 {
        let (_, m) = assigned(&mut tr, &mastered);
        assert_eq!(get(&m, "scrl/dropped_prompts"), 0.0);
    }
}
