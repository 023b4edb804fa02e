//! `StagesConfig::apply` for each shaping stage on 64 prompts × G = 8 (host side, no tensors).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rlvr_objectives::shaping::{
    AvspoConfig, CurveRlConfig, EdasConfig, LampoConfig, Pow3rConfig, RubricItemKind, SrarConfig,
    StepJudgment, TmnConfig,
};
use rlvr_objectives::{AdvantageConfig, ShapingState, StageInput, StagesConfig};

const PROMPTS: usize = 64;
const G: usize = 8;
const N: usize = PROMPTS * G;
/// Whitespace tokens per response (ROUGE-L's LCS is O(tokens²)).
const WORDS: usize = 200;

/// A fixed LCG stream; benchmarks need no statistics.
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    }
}

fn bench_shaping(c: &mut Criterion) {
    let mut r = lcg(7);
    let rewards: Vec<f32> = (0..N).map(|_| (r() % 2) as f32).collect();
    let passed: Vec<bool> = rewards.iter().map(|&x| x > 0.5).collect();
    let answers: Vec<Option<String>> = (0..N).map(|_| Some((r() % 4).to_string())).collect();
    let logp: Vec<f32> = (0..N).map(|_| -((r() % 1000) as f32) / 500.0).collect();
    let text = |r: &mut dyn FnMut() -> u64| {
        let mut t = String::new();
        for w in 0..WORDS {
            if w % 50 == 0 {
                t.push_str(&format!("### Step {}: ", w / 50 + 1));
            }
            t.push_str(&format!("w{} ", r() % 50));
        }
        t + "\\boxed{1}"
    };
    let texts: Vec<String> = (0..N).map(|_| text(&mut r)).collect();
    let references: Vec<Option<String>> = (0..N).map(|_| Some(text(&mut r))).collect();
    let tasks: Vec<String> = (0..N).map(|i| format!("t{}", i / G % 3)).collect();
    let scores: Vec<Vec<f32>> = (0..N)
        .map(|_| (0..8).map(|_| (r() % 3) as f32 / 2.0).collect())
        .collect();
    let judgments: Vec<Vec<StepJudgment>> = (0..N)
        .map(|_| {
            (0..6)
                .map(|k| StepJudgment {
                    kind: [RubricItemKind::Suggest, RubricItemKind::Pitfall][k % 2],
                    satisfied: r().is_multiple_of(2),
                    step: (r() % 5) as i32 - 1,
                })
                .collect()
        })
        .collect();
    let input = StageInput {
        passed: &passed,
        extracted_answers: &answers,
        seq_logp_mean: &logp,
        response_texts: &texts,
        reference_solutions: &references,
        task_ids: &tasks,
        rubric_scores: Some(&scores),
        rubrics: None,
        step_judgments: Some(&judgments),
        ..StageInput::new(&rewards, G)
    };
    let base = AdvantageConfig::default();
    let mut group = c.benchmark_group("shaping_apply_64x8");
    let on = StagesConfig::default;
    for (name, cfg) in [
        ("none", on()),
        (
            "avspo_edas",
            StagesConfig {
                avspo: Some(AvspoConfig {
                    adaptive: false,
                    ..AvspoConfig::default()
                }),
                edas: Some(EdasConfig::default()),
                ..on()
            },
        ),
        (
            "curve_rl",
            StagesConfig {
                curve_rl: Some(CurveRlConfig::default()),
                ..on()
            },
        ),
        (
            "tmn",
            StagesConfig {
                tmn: Some(TmnConfig::default()),
                ..on()
            },
        ),
        (
            "lampo_pairwise",
            StagesConfig {
                lampo: Some(LampoConfig {
                    rouge_beta: 0.0,
                    ..LampoConfig::default()
                }),
                ..on()
            },
        ),
        (
            "lampo_rouge",
            StagesConfig {
                lampo: Some(LampoConfig::default()),
                ..on()
            },
        ),
        (
            "pow3r",
            StagesConfig {
                pow3r: Some(Pow3rConfig::default()),
                ..on()
            },
        ),
        (
            "srar",
            StagesConfig {
                srar: Some(SrarConfig::default()),
                ..on()
            },
        ),
    ] {
        let mut state = ShapingState::default();
        group.bench_function(name, |b| {
            b.iter(|| black_box(cfg.apply(&input, &base, &mut state).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_shaping);
criterion_main!(benches);
