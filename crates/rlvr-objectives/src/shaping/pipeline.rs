//! `StagesConfig::apply`: the stages of one step, in order, over host-side values.

use std::collections::BTreeMap;

use super::acr::advantage_collapse;
use super::amr_sd::amr_sd;
use super::cepo::cepo;
use super::curve_rl::{CurveAdvantage, curve_rl};
use super::delta::delta;
use super::edas::edas;
use super::lampo::{lampo_advantages, rouge_l_f1};
use super::oppo::oppo;
use super::pow3r::pow3r;
use super::rebel::rebel;
use super::scrl::scrl;
use super::srar::{format_reward, srar_offsets};
use super::stats::{finite, need};
use super::tmn::tmn;
use super::{ShapingState, StageInput, StageOutput, StagesConfig, avspo_group};
use crate::advantage::{AdvantageConfig, compute_advantages};
use crate::error::{Error, Result, ensure};

impl StagesConfig {
    /// Runs the enabled stages on one step's rollouts and returns the rewards, advantages,
    /// weights, SRaR and SCRL offsets and `shaping/...` metrics; `base` is the objective's own estimator
    /// (used unless a stage replaces it, and its `std_eps` is every stage's ε). `state` is read
    /// and advanced (one call per step).
    ///
    /// # Errors
    /// An invalid config, ragged groups, non-finite rewards, or an input a stage needs that is
    /// missing or has the wrong length (each error names the field).
    pub fn apply(
        &self,
        input: &StageInput,
        base: &AdvantageConfig,
        state: &mut ShapingState,
    ) -> Result<StageOutput> {
        self.validate()?;
        let g = input.group_size;
        let n = input.rewards.len();
        ensure(g >= 1, "group_size", g, "must be >= 1")?;
        if !n.is_multiple_of(g) {
            return Err(Error::RaggedGroups {
                len: n,
                group_size: g,
            });
        }
        finite("rewards", input.rewards)?;
        let eps = f64::from(base.std_eps);
        let mut m = BTreeMap::new();
        let mut rewards = input.rewards.to_vec();

        // 1. Reward composition.
        if let Some(cfg) = &self.pow3r {
            let scores = input.rubric_scores.unwrap_or(&[]);
            need("rubric_scores", scores.len(), n, "pow3r")?;
            if let Some(r) = input.rubrics {
                need("rubrics", r.len(), n / g, "pow3r")?;
            }
            let out = pow3r(&rewards, scores, input.rubrics, g, cfg)?;
            let mean = |v: &[f32]| v.iter().map(|&x| f64::from(x)).sum::<f64>() / n.max(1) as f64;
            m.insert("shaping/pow3r_reward_mean".into(), mean(&out.rewards));
            m.insert(
                "shaping/pow3r_human_reward_mean".into(),
                mean(&out.human_rewards),
            );
            m.insert(
                "shaping/pow3r_strict_frac".into(),
                out.strict.iter().filter(|&&s| s).count() as f64 / n.max(1) as f64,
            );
            m.insert(
                "shaping/pow3r_empty_rubric_groups".into(),
                out.empty_groups as f64,
            );
            rewards = out.rewards;
        }
        if let Some(cfg) = &self.srar {
            need("response_texts", input.response_texts.len(), n, "srar")?;
            let mut fmt = 0.0;
            for (r, text) in rewards.iter_mut().zip(input.response_texts) {
                let f = format_reward(text);
                fmt += f64::from(f);
                *r = (1.0 - cfg.format_weight) * *r + cfg.format_weight * f;
            }
            m.insert("shaping/srar_format_rate".into(), fmt / n.max(1) as f64);
        }
        if let Some(cfg) = self.lampo.filter(|c| c.rouge_beta > 0.0) {
            need("response_texts", input.response_texts.len(), n, "lampo")?;
            need(
                "reference_solutions",
                input.reference_solutions.len(),
                n,
                "lampo",
            )?;
            let (mut sum, mut count) = (0.0, 0usize);
            for (i, r) in rewards.iter_mut().enumerate() {
                if let Some(reference) = &input.reference_solutions[i] {
                    let f = rouge_l_f1(&input.response_texts[i], reference, cfg.rouge_max_tokens);
                    *r += cfg.rouge_beta * f;
                    sum += f64::from(f);
                    count += 1;
                }
            }
            m.insert("shaping/lampo_rouge_mean".into(), sum / count.max(1) as f64);
        }

        // 2. ACR (always), then one sequence estimator.
        let passed = if input.passed.len() == n {
            input.passed
        } else {
            &[]
        };
        let acr = advantage_collapse(&rewards, g, passed, &self.acr);
        let ema = match state.acr_ema {
            Some(prev) => self.acr.ema_beta * prev + (1.0 - self.acr.ema_beta) * acr.acr,
            None => acr.acr,
        };
        state.acr_ema = Some(ema);
        m.insert("shaping/acr".into(), acr.acr);
        m.insert("shaping/acr_ema".into(), ema);
        if let (Some(c), Some(w)) = (acr.all_correct, acr.all_wrong) {
            m.insert("shaping/acr_all_correct".into(), c);
            m.insert("shaping/acr_all_wrong".into(), w);
        }
        let mut weights = vec![1.0f32; n];
        let curve = self
            .curve_rl
            .as_ref()
            .map(|cfg| (cfg, curve_rl(&rewards, g, &mut state.curve_rl_pool, cfg)));
        let mut rebel_offsets = None;
        let mut segment_offsets = vec![Vec::new(); n];
        let mut advantages = if let Some(cfg) = &self.scrl {
            let answers = input.subproblems.unwrap_or(&[]);
            need("subproblems", answers.len(), n, "scrl")?;
            let (a, off, s) = scrl(answers, &rewards, g, base, cfg)?;
            m.insert("shaping/scrl_subproblems_mean".into(), s.subproblems_mean);
            m.insert(
                "shaping/scrl_intermediate_correct_frac".into(),
                s.intermediate_correct_frac,
            );
            m.insert("shaping/scrl_final_prefix_mean".into(), s.final_prefix_mean);
            m.insert(
                "shaping/scrl_rescued_groups".into(),
                s.rescued_groups as f64,
            );
            m.insert("shaping/scrl_offset_abs_mean".into(), s.offset_abs_mean);
            segment_offsets = off;
            a
        } else if let Some(cfg) = &self.rebel {
            let episodes = input.episodes.unwrap_or(&[]);
            let ids = input.response_tokens.unwrap_or(&[]);
            need("episodes", episodes.len(), n, "rebel")?;
            need("response_tokens", ids.len(), n, "rebel")?;
            let lens: Vec<usize> = ids.iter().map(Vec::len).collect();
            let (a, off, s) = rebel(&rewards, episodes, &lens, g, cfg)?;
            m.insert(
                "shaping/rebel_belief_reward_mean".into(),
                s.belief_reward_mean,
            );
            m.insert("shaping/rebel_state_mean".into(), s.state_mean);
            m.insert("shaping/rebel_task_mean".into(), s.task_mean);
            m.insert("shaping/rebel_format_ok_frac".into(), s.format_ok_frac);
            m.insert("shaping/rebel_singleton_frac".into(), s.singleton_frac);
            m.insert(
                "shaping/rebel_step_adv_abs_mean".into(),
                s.step_adv_abs_mean,
            );
            rebel_offsets = Some(off);
            a
        } else if let Some(cfg) = &self.tmn {
            need("task_ids", input.task_ids.len(), n, "tmn")?;
            let out = tmn(&rewards, input.task_ids, g, cfg, eps)?;
            weights = out.weights;
            m.insert("shaping/tmn_mean_pass_rate".into(), out.mean_pass_rate);
            out.advantages
        } else if let Some(cfg) = self.lampo.filter(|c| c.pairwise) {
            need("seq_logp_mean", input.seq_logp_mean.len(), n, "lampo")?;
            finite("seq_logp_mean", input.seq_logp_mean)?;
            let (a, w) = lampo_advantages(&rewards, input.seq_logp_mean, g, &cfg, eps);
            m.insert("shaping/lampo_pair_weight_mean".into(), w);
            a
        } else if let Some((_, out)) = curve
            .as_ref()
            .filter(|(c, _)| c.advantage == CurveAdvantage::Centered)
        {
            out.centered.clone()
        } else {
            compute_advantages(base, &rewards, g)?.values
        };

        // AVSPO: virtual samples in the statistics of collapsed groups.
        if let Some(cfg) = &self.avspo {
            let tau = cfg.threshold(state.step);
            let active = !cfg.adaptive || ema > tau;
            m.insert("shaping/avspo_threshold".into(), tau);
            m.insert("shaping/avspo_active".into(), f64::from(u8::from(active)));
            let mut groups = 0usize;
            if active {
                let (virt, mut alpha) = cfg.virtual_rewards(state.step);
                if cfg.scale_alpha && tau > 0.0 {
                    alpha *= (ema / tau).min(1.0);
                }
                for (gi, _) in acr.collapsed.iter().enumerate().filter(|(_, c)| **c) {
                    let rows = gi * g..(gi + 1) * g;
                    let a = avspo_group(&rewards[rows.clone()], &virt, alpha, eps);
                    advantages[rows].copy_from_slice(&a);
                    groups += 1;
                }
            }
            m.insert("shaping/avspo_groups".into(), groups as f64);
        }

        // CurveRL prompt weights (0 for all-pass / all-fail prompts, so they also cancel AVSPO).
        if let Some((_, out)) = &curve {
            for (i, w) in weights.iter_mut().enumerate() {
                *w *= out.prompt_weights[i / g] as f32;
            }
            let pw = &out.prompt_weights;
            m.insert(
                "shaping/curve_rl_weight_mean".into(),
                pw.iter().sum::<f64>() / pw.len().max(1) as f64,
            );
            m.insert(
                "shaping/curve_rl_weight_max".into(),
                pw.iter().copied().fold(0.0, f64::max),
            );
            m.insert(
                "shaping/curve_rl_nonempty_bins".into(),
                out.bin_weights.iter().filter(|&&w| w > 0.0).count() as f64,
            );
            m.insert(
                "shaping/curve_rl_pool_size".into(),
                state.curve_rl_pool.iter().map(Vec::len).sum::<usize>() as f64,
            );
        }

        // 3. Post-hoc shapers.
        if let Some(cfg) = &self.edas {
            need("passed", input.passed.len(), n, "edas")?;
            need(
                "extracted_answers",
                input.extracted_answers.len(),
                n,
                "edas",
            )?;
            let s = edas(
                &mut advantages,
                g,
                input.passed,
                input.extracted_answers,
                cfg,
            );
            m.insert("shaping/edas_groups".into(), s.groups_shaped as f64);
            m.insert("shaping/edas_distinct_mean".into(), s.distinct_mean);
            m.insert("shaping/edas_entropy_mean".into(), s.entropy_mean);
            m.insert("shaping/edas_weight_mean".into(), s.weight_mean);
        }
        let step_offsets = match &self.srar {
            Some(cfg) => {
                let j = input.step_judgments.unwrap_or(&[]);
                need("step_judgments", j.len(), n, "srar")?;
                let off = srar_offsets(input.response_texts, j, g, cfg, eps);
                let count = off.iter().map(Vec::len).sum::<usize>();
                let mag: f64 = off
                    .iter()
                    .flatten()
                    .map(|o| f64::from(o.offset.abs()))
                    .sum();
                m.insert(
                    "shaping/srar_offset_abs_mean".into(),
                    mag / count.max(1) as f64,
                );
                m.insert(
                    "shaping/srar_outcome_abs_mean".into(),
                    advantages.iter().map(|a| f64::from(a.abs())).sum::<f64>() / n.max(1) as f64,
                );
                off
            }
            None => vec![Vec::new(); n],
        };

        // 4. Token credit.
        let mut token_offsets = rebel_offsets.unwrap_or_else(|| vec![Vec::new(); n]);
        if let Some(cfg) = &self.cepo {
            let lambda = cfg.lambda(state.step);
            m.insert("shaping/cepo_lambda".into(), lambda);
            if lambda > 0.0 {
                let deltas = input.cepo_delta.unwrap_or(&[]);
                need("cepo_delta", deltas.len(), n, "cepo")?;
                token_lengths("cepo_delta", deltas, input.token_logp)?;
                let (off, s) = cepo(deltas, &advantages, lambda, cfg);
                m.insert("shaping/cepo_delta_pos_mean".into(), s.delta_pos_mean);
                m.insert("shaping/cepo_delta_neg_mean".into(), s.delta_neg_mean);
                m.insert("shaping/cepo_wrong_pos_frac".into(), s.wrong_pos_frac);
                m.insert("shaping/cepo_wrong_neg_frac".into(), s.wrong_neg_frac);
                m.insert("shaping/cepo_adv_abs_before".into(), s.adv_abs_before);
                m.insert("shaping/cepo_adv_abs_after".into(), s.adv_abs_after);
                token_offsets = off;
            }
        }
        if let Some(cfg) = &self.amr_sd {
            ensure(
                cfg.anneal_steps.is_some() || input.run_steps > 0,
                "run_steps",
                input.run_steps,
                "amr_sd needs StageInput::run_steps (K_anneal = half of it) or anneal_steps",
            )?;
            let lambda = cfg.lambda(state.step, input.run_steps);
            m.insert("shaping/amr_sd_lambda".into(), lambda);
            if lambda > 0.0 {
                let logp = input.token_logp.unwrap_or(&[]);
                let hint = input.hint_logp.unwrap_or(&[]);
                need("token_logp", logp.len(), n, "amr_sd")?;
                need("hint_logp", hint.len(), n, "amr_sd")?;
                hint_lengths(hint, logp)?;
                let (off, s) = amr_sd(hint, logp, &advantages, lambda, cfg);
                m.insert("shaping/amr_sd_hint_rows".into(), s.hint_rows as f64);
                m.insert("shaping/amr_sd_gated_frac".into(), s.gated_frac);
                m.insert("shaping/amr_sd_m_mean".into(), s.m_mean);
                m.insert("shaping/amr_sd_cig_pos_mean".into(), s.cig_pos_mean);
                m.insert("shaping/amr_sd_cig_neg_mean".into(), s.cig_neg_mean);
                for ((t, o), len) in token_offsets
                    .iter_mut()
                    .zip(off)
                    .zip(logp.iter().map(Vec::len))
                {
                    if o.is_empty() {
                        continue;
                    }
                    if t.is_empty() {
                        *t = vec![0.0; len];
                    }
                    t.iter_mut().zip(o).for_each(|(a, b)| *a += b);
                }
            }
        }
        if let Some(cfg) = &self.oppo {
            need("passed", input.passed.len(), n, "oppo")?;
            let logp = input.token_logp.unwrap_or(&[]);
            let oracle = input.oracle_logp.unwrap_or(&[]);
            need("token_logp", logp.len(), n, "oppo")?;
            need("oracle_logp", oracle.len(), n, "oppo")?;
            token_lengths("oracle_logp", oracle, Some(logp))?;
            let (a, s) = oppo(logp, oracle, &rewards, input.passed, g, cfg, eps);
            m.insert("shaping/oppo_p0_mean".into(), s.p0_mean);
            m.insert("shaping/oppo_delta_abs_mean".into(), s.delta_abs_mean);
            m.insert("shaping/oppo_clip_frac".into(), s.clip_frac);
            m.insert("shaping/oppo_saturated_frac".into(), s.saturated_frac);
            m.insert("shaping/oppo_adv_abs_mean".into(), s.adv_abs_mean);
            advantages.iter_mut().for_each(|a| *a = 0.0);
            token_offsets = a;
        }
        // 5. Token loss coefficients (DelTA), on the final sequence advantages · weights.
        let token_weights = match &self.delta {
            Some(cfg) => {
                let ids = input.response_tokens.unwrap_or(&[]);
                need("response_tokens", ids.len(), n, "delta")?;
                let a: Vec<f32> = advantages
                    .iter()
                    .zip(&weights)
                    .map(|(a, w)| a * w)
                    .collect();
                let (c, s) = delta(ids, &a, g, cfg);
                m.insert("shaping/delta_coef_mean".into(), s.coef_mean);
                m.insert("shaping/delta_coef_min".into(), s.coef_min);
                m.insert("shaping/delta_coef_max".into(), s.coef_max);
                m.insert("shaping/delta_clip_low_frac".into(), s.clip_low_frac);
                m.insert("shaping/delta_clip_high_frac".into(), s.clip_high_frac);
                m.insert("shaping/delta_scored_pools".into(), s.scored_pools as f64);
                c
            }
            None => vec![Vec::new(); n],
        };
        state.step += 1;
        Ok(StageOutput {
            rewards,
            advantages,
            weights,
            step_offsets,
            segment_offsets,
            token_offsets,
            token_weights,
            metrics: m,
        })
    }
}

/// Fails with [`Error::BadInput`] at the first sequence whose per-token values in `values` do
/// not match `reference`'s length (when the caller gave a reference).
fn token_lengths(
    field: &'static str,
    values: &[Vec<f32>],
    reference: Option<&[Vec<f32>]>,
) -> Result<()> {
    for (index, v) in values.iter().enumerate() {
        if let Some(j) = v.iter().position(|x| !x.is_finite()) {
            return Err(Error::NonFinite {
                field,
                index,
                value: v[j],
            });
        }
        if let Some(r) = reference.and_then(|r| r.get(index))
            && r.len() != v.len()
        {
            return Err(Error::BadInput {
                field,
                index,
                reason: format!("{} token values, expected {}", v.len(), r.len()),
            });
        }
    }
    Ok(())
}

/// AMR-SD's `hint_logp`: an empty row has no hint; the others hold one finite value per
/// response token of `logp`.
fn hint_lengths(hint: &[Vec<f32>], logp: &[Vec<f32>]) -> Result<()> {
    for (index, (h, l)) in hint.iter().zip(logp).enumerate() {
        if h.is_empty() {
            continue;
        }
        if let Some(j) = h.iter().position(|x| !x.is_finite()) {
            return Err(Error::NonFinite {
                field: "hint_logp",
                index,
                value: h[j],
            });
        }
        if h.len() != l.len() {
            return Err(Error::BadInput {
                field: "hint_logp",
                index,
                reason: format!("{} token values, expected {} (or none)", h.len(), l.len()),
            });
        }
    }
    Ok(())
}
