//! Held-out evaluation: greedy accuracy (pass@1), and for `rlvr eval` the unbiased pass@k
//! estimator and majority vote maj@k over k samples per prompt.

use std::collections::HashMap;
use std::sync::Arc;

use rlvr_models::{CausalLm, GenerationConfig, Tokenizer, generate};
use rlvr_verifiers::{Verdict, Verifier};

use crate::data::Example;
use crate::error::Result;
use crate::verify::{reference_of, verify_texts};

/// The outcome of evaluating one prompt with k samples.
#[derive(Debug, Clone)]
pub struct PromptEval {
    /// Example id.
    pub id: String,
    /// Verdicts of the k samples, in sample order.
    pub verdicts: Vec<Verdict>,
    /// Decoded samples.
    pub texts: Vec<String>,
}

/// Summary numbers of an evaluation.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EvalSummary {
    /// Prompts evaluated.
    pub prompts: usize,
    /// Samples per prompt.
    pub k: usize,
    /// Mean fraction of correct samples (pass@1 estimated from k samples).
    pub pass_at_1: f64,
    /// Unbiased pass@k (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", Eq. 1).
    pub pass_at_k: f64,
    /// Majority vote over the k extracted answers is correct.
    pub maj_at_k: f64,
}

/// Samples `k` responses for each example and verifies them.
pub fn evaluate(
    policy: &CausalLm,
    tokenizer: &Tokenizer,
    verifier: &Arc<dyn Verifier>,
    verifier_config: &rlvr_verifiers::VerifierConfig,
    examples: &[Example],
    prompt_ids: &[Vec<u32>],
    gen_cfg: &GenerationConfig,
    k: usize,
    batch_size: usize,
    seed: u64,
) -> Result<Vec<PromptEval>> {
    let batches = EvalBatches {
        k,
        batch_size,
        seed,
    };
    batches.run(
        verifier,
        verifier_config,
        examples,
        prompt_ids,
        |_, ids, seed| {
            let rows: Vec<Vec<u32>> = ids
                .iter()
                .flat_map(|p| std::iter::repeat_n(p.clone(), k))
                .collect();
            generate(policy, &rows, gen_cfg, seed)
                .iter()
                .map(|g| Ok(tokenizer.decode_skip_special(&g.tokens)?))
                .collect()
        },
    )
}

/// How an evaluation batches its prompts: `k` responses each, `batch_size / k` prompts per
/// batch, batch `i` sampled with seed `seed + i`.
#[derive(Debug, Clone, Copy)]
pub struct EvalBatches {
    /// Responses per prompt.
    pub k: usize,
    /// Rows per batch.
    pub batch_size: usize,
    /// The first batch's seed.
    pub seed: u64,
}

impl EvalBatches {
    /// Has `respond` write the `k` responses of every prompt of a batch (its examples, their
    /// prompt ids, its seed → rows in prompt order, a prompt's `k` together), verifies them,
    /// and returns the per-prompt results.
    pub fn run(
        &self,
        verifier: &Arc<dyn Verifier>,
        verifier_config: &rlvr_verifiers::VerifierConfig,
        examples: &[Example],
        prompt_ids: &[Vec<u32>],
        mut respond: impl FnMut(&[Example], &[Vec<u32>], u64) -> Result<Vec<String>>,
    ) -> Result<Vec<PromptEval>> {
        let k = self.k;
        let mut out = Vec::with_capacity(examples.len());
        let per_batch = (self.batch_size / k.max(1)).max(1);
        for (chunk_idx, (exs, ids)) in examples
            .chunks(per_batch)
            .zip(prompt_ids.chunks(per_batch))
            .enumerate()
        {
            let texts = respond(exs, ids, self.seed.wrapping_add(chunk_idx as u64))?;
            let refs = exs
                .iter()
                .flat_map(|e| std::iter::repeat_n(e, k))
                .map(|e| reference_of(verifier_config, e))
                .collect::<Result<Vec<_>>>()?;
            let verdicts = verify_texts(verifier, verifier_config, &texts, &refs);
            for (i, ex) in exs.iter().enumerate() {
                out.push(PromptEval {
                    id: ex.id.clone(),
                    verdicts: verdicts[i * k..(i + 1) * k].to_vec(),
                    texts: texts[i * k..(i + 1) * k].to_vec(),
                });
            }
        }
        Ok(out)
    }
}

/// pass@1, unbiased pass@k and maj@k over per-prompt results.
pub fn summarize(results: &[PromptEval]) -> EvalSummary {
    let k = results.first().map_or(0, |r| r.verdicts.len());
    let n = results.len().max(1) as f64;
    let mut s = EvalSummary {
        prompts: results.len(),
        k,
        ..Default::default()
    };
    for r in results {
        let c = r.verdicts.iter().filter(|v| v.passed).count();
        s.pass_at_1 += c as f64 / r.verdicts.len().max(1) as f64 / n;
        s.pass_at_k += pass_at_k(r.verdicts.len(), c, r.verdicts.len()) / n;
        s.maj_at_k += f64::from(u8::from(majority_correct(&r.verdicts))) / n;
    }
    s
}

/// Unbiased pass@k from n samples with c correct: `1 - C(n-c, k) / C(n, k)`.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> f64 {
    if n == 0 || k == 0 {
        return 0.0;
    }
    if n - c < k {
        return 1.0;
    }
    // Product form, numerically stable: prod_{i=n-c+1}^{n} (1 - k / i).
    1.0 - ((n - c + 1)..=n)
        .map(|i| 1.0 - k as f64 / i as f64)
        .product::<f64>()
}

/// Whether the most frequent extracted answer (ties: the first to reach the count) is correct.
pub fn majority_correct(verdicts: &[Verdict]) -> bool {
    let mut counts: HashMap<&str, (usize, usize, bool)> = HashMap::new();
    for (i, v) in verdicts.iter().enumerate() {
        if let Some(ans) = v.extracted.as_deref() {
            let e = counts.entry(ans).or_insert((0, i, v.passed));
            e.0 += 1;
        }
    }
    counts
        .values()
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        .is_some_and(|&(_, _, passed)| passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_at_k_matches_hand_values() {
        // n = 4, c = 1, k = 2: 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5.
        assert!((pass_at_k(4, 1, 2) - 0.5).abs() < 1e-12);
        // k = 1 is the plain fraction c/n.
        assert!((pass_at_k(10, 3, 1) - 0.3).abs() < 1e-12);
        assert_eq!(pass_at_k(5, 0, 3), 0.0);
        assert_eq!(pass_at_k(5, 3, 3), 1.0);
    }
}
