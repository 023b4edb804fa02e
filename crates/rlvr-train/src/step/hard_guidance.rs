//! SMEPO on hard prompts only (`[smepo] prompts = "hard"`, **\[PROPOSED]**; methods-extra §10,
//! arXiv 2605.25198): the paper guides every prompt of a training set chosen to be hard; here a
//! prompt is hard for the policy when its plain group of G samples has no passing one this
//! step. Such a group is drawn again, G new samples, with the masked expert trace after its
//! prompt (`data/guidance.rs`), and the guided group takes the plain group's place in the
//! batch. Prompts the policy already solves are trained on plain, so guidance goes where the
//! gradient is otherwise zero. A prompt whose trace is missing or withheld keeps its plain
//! group.

use rlvr_models::{CausalLm, GenerationConfig};

use crate::batch::Sample;
use crate::data::guidance::Guidance;
use crate::env::groups::EpisodeStats;
use crate::error::Result;
use crate::metrics::Metrics;
use crate::rollout_engine::RemoteEngine;
use crate::step::rollout::{draw, score_drawn};
use crate::trainer::Trainer;

/// Mixed into a round's seed for its guided redraws, so that they do not repeat the plain
/// draw's random stream.
const GUIDED_SEED_SALT: u64 = 0x534D_4550_4F48_4152;

/// What [`redraw_hard_groups`] did.
#[derive(Debug, Default)]
pub struct HardGuidance {
    /// Per prompt of the round, what became of its guidance: `Unneeded` for a prompt with a
    /// passing plain sample, else what [`crate::data::guidance::SmepoConfig::guide`] did.
    pub guidance: Vec<Guidance>,
    /// Response tokens of the guided redraws.
    pub sampled_tokens: usize,
    /// Groups with no passing plain sample.
    pub hard: usize,
    /// Hard groups whose guided redraw has a passing sample.
    pub rescued: usize,
}

impl HardGuidance {
    /// Adds another round's counts.
    pub fn add(&mut self, round: HardGuidance) {
        self.guidance.extend(round.guidance);
        self.sampled_tokens += round.sampled_tokens;
        self.hard += round.hard;
        self.rescued += round.rescued;
    }

    /// `smepo/hard_frac` (hard groups per prompt drawn this step) and `smepo/rescued_frac`
    /// (rescued per hard group; 0 without hard groups).
    pub fn insert_into(&self, m: &mut Metrics) {
        let prompts = self.guidance.len().max(1) as f64;
        m.insert("smepo/hard_frac".into(), self.hard as f64 / prompts);
        m.insert(
            "smepo/rescued_frac".into(),
            self.rescued as f64 / self.hard.max(1) as f64,
        );
    }
}

/// Replaces, in the verified round `samples` (G per prompt of `examples`, rewards filled), each
/// group with no passing sample by a verified group drawn with the prompt's guidance (`m` gets
/// the verifier's metrics of the redraw).
///
/// # Errors
/// Encoding, sampling and the remote engine's errors.
pub fn redraw_hard_groups(
    tr: &Trainer,
    policy: &CausalLm,
    remote: Option<&RemoteEngine>,
    gen_cfg: &GenerationConfig,
    examples: &[usize],
    samples: &mut [Sample],
    step: usize,
    round_seed: u64,
    episodes: &mut EpisodeStats,
    answers: &mut Vec<f32>,
    m: &mut Metrics,
) -> Result<HardGuidance> {
    let g = tr.config.rollout.group_size;
    debug_assert_eq!(samples.len(), examples.len() * g);
    let hard: Vec<usize> = samples
        .chunks(g)
        .enumerate()
        .filter(|(_, group)| group.iter().all(|s| !s.passed))
        .map(|(i, _)| i)
        .collect();
    let hard_examples: Vec<usize> = hard.iter().map(|&i| examples[i]).collect();
    let (ids, what) = tr.encode_rollout_prompts(&hard_examples)?;
    let mut guidance = vec![Guidance::Unneeded; examples.len()];
    let (mut shown, mut shown_ids) = (Vec::new(), Vec::new());
    for ((&i, ids), what) in hard.iter().zip(ids).zip(what) {
        let what = what.expect("encode_rollout_prompts guides with [smepo]");
        guidance[i] = what;
        if matches!(what, Guidance::Shown(_)) {
            shown.push(i);
            shown_ids.push(ids);
        }
    }
    let mut out = HardGuidance {
        guidance,
        hard: hard.len(),
        ..HardGuidance::default()
    };
    if shown.is_empty() {
        return Ok(out);
    }
    let shown_examples: Vec<usize> = shown.iter().map(|&i| examples[i]).collect();
    let (drawn, terms) = draw(
        tr,
        policy,
        remote,
        gen_cfg,
        &shown_examples,
        &shown_ids,
        step,
        round_seed ^ GUIDED_SEED_SALT,
        episodes,
    )?;
    let mut guided = drawn.into_versioned(remote)?;
    out.sampled_tokens = guided.iter().map(Sample::policy_tokens).sum();
    score_drawn(tr, &mut guided, terms, answers, m);
    for (&i, group) in shown.iter().zip(guided.chunks(g)) {
        out.rescued += usize::from(group.iter().any(|s| s.passed));
        samples[i * g..(i + 1) * g].clone_from_slice(group);
    }
    Ok(out)
}
