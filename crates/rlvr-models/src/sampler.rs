//! Host-side next-token sampling from one row of logits: greedy, temperature, top-k, top-p.
//!
//! As in candle's `LogitsProcessor`: a temperature of 0 means argmax; otherwise the logits are
//! divided by the temperature, restricted to the `top_k` largest, then to the smallest prefix of
//! the sorted distribution whose mass reaches `top_p` (Holtzman et al. 2020, "The Curious Case
//! of Neural Text Degeneration", §3.1), renormalised, and sampled.

use rand::Rng;

/// Candidates sorted first when looking for the top-p nucleus (see [`Sampler::sample`]).
const NUCLEUS_PREFIX: usize = 1024;

/// How the next token is drawn from a row of logits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    /// Softmax temperature; `0` (or below) means greedy argmax.
    pub temperature: f32,
    /// Keep only the `k` most likely tokens (`None` or `k >= V`: all).
    pub top_k: Option<usize>,
    /// Keep the smallest set of most likely tokens whose probability reaches `p` (`None` or `p >= 1`: all).
    pub top_p: Option<f32>,
}

impl Sampler {
    /// Greedy argmax decoding.
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            top_k: None,
            top_p: None,
        }
    }

    /// Draws a token id from `logits` (`[V]`). NaN logits are treated as −∞. Ties under greedy
    /// decoding go to the lowest id.
    ///
    /// # Panics
    /// If `logits` is empty.
    pub fn sample<R: Rng + ?Sized>(&self, logits: &[f32], rng: &mut R) -> u32 {
        assert!(!logits.is_empty(), "Sampler::sample: empty logits");
        let clean = |x: f32| if x.is_nan() { f32::NEG_INFINITY } else { x };
        if self.temperature <= 0.0 {
            let mut best = 0;
            for (i, &x) in logits.iter().enumerate() {
                if clean(x) > clean(logits[best]) {
                    best = i;
                }
            }
            return best as u32;
        }
        let inv_t = 1.0 / f64::from(self.temperature);
        let mut cand: Vec<(u32, f64)> = logits
            .iter()
            .enumerate()
            .map(|(i, &x)| (i as u32, f64::from(clean(x)) * inv_t))
            .collect();
        let by_logit_desc =
            |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if let Some(k) = self.top_k.filter(|&k| k > 0 && k < cand.len()) {
            cand.select_nth_unstable_by(k - 1, by_logit_desc);
            cand.truncate(k);
        }
        // Softmax over the candidates (max-shifted).
        let max = cand.iter().map(|c| c.1).fold(f64::NEG_INFINITY, f64::max);
        if max == f64::NEG_INFINITY {
            return cand[0].0; // every logit is −∞: no information, return the first candidate
        }
        let weight = |c: &(u32, f64)| (c.1 - max).exp();
        if let Some(p) = self.top_p.filter(|&p| p < 1.0) {
            let target = f64::from(p.max(0.0)) * cand.iter().map(weight).sum::<f64>();
            // The nucleus is a prefix of the candidates sorted by logit. Sorting a 150k vocab
            // for every row and step is slow, so first sort only the NUCLEUS_PREFIX largest
            // (selected in O(V)); sort everything only when they hold less than the target mass.
            let mut sorted = cand.len();
            if cand.len() > NUCLEUS_PREFIX {
                cand.select_nth_unstable_by(NUCLEUS_PREFIX - 1, by_logit_desc);
                cand[..NUCLEUS_PREFIX].sort_unstable_by(by_logit_desc);
                if cand[..NUCLEUS_PREFIX].iter().map(weight).sum::<f64>() >= target {
                    sorted = NUCLEUS_PREFIX;
                } else {
                    cand.sort_unstable_by(by_logit_desc);
                }
            } else {
                cand.sort_unstable_by(by_logit_desc);
            }
            let mut cum = 0.0;
            let mut keep = sorted;
            for (i, c) in cand[..sorted].iter().enumerate() {
                cum += weight(c);
                if cum >= target {
                    keep = i + 1;
                    break;
                }
            }
            cand.truncate(keep);
        }
        let probs: Vec<f64> = cand.iter().map(weight).collect();
        let total: f64 = probs.iter().sum();
        let mut u = rng.random::<f64>() * total;
        for (i, &q) in probs.iter().enumerate() {
            if u < q {
                return cand[i].0;
            }
            u -= q;
        }
        // Rounding left `u` just above the last bucket: take the last token with mass.
        let last = probs.iter().rposition(|&q| q > 0.0).unwrap_or(0);
        cand[last].0
    }
}

/// `log softmax(logits)[token]` in f64, cast to f32: the log-probability of `token` under the
/// raw (temperature 1, unfiltered) distribution.
pub fn log_softmax_at(logits: &[f32], token: u32) -> f32 {
    let max = logits
        .iter()
        .copied()
        .filter(|x| !x.is_nan())
        .fold(f32::NEG_INFINITY, f32::max);
    let max = f64::from(max);
    let sum: f64 = logits
        .iter()
        .filter(|x| !x.is_nan())
        .map(|&x| (f64::from(x) - max).exp())
        .sum();
    (f64::from(logits[token as usize]) - max - sum.ln()) as f32
}

/// SplitMix64 finaliser (Steele et al. 2014): a stable, well-mixed 64-bit hash.
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The RNG seed of batch row `row` under run seed `seed`: `splitmix64(seed ^ splitmix64(row))`.
/// A row's samples depend only on `(seed, row)`, not on the other rows of the batch.
pub fn row_seed(seed: u64, row: u64) -> u64 {
    splitmix64(seed ^ splitmix64(row))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn greedy_takes_first_max_and_ignores_nan() {
        let mut rng = StdRng::seed_from_u64(0);
        assert_eq!(
            Sampler::greedy().sample(&[0.0, 3.0, f32::NAN, 3.0], &mut rng),
            1
        );
    }

    #[test]
    fn top_k_one_is_greedy() {
        let mut rng = StdRng::seed_from_u64(1);
        let s = Sampler {
            temperature: 5.0,
            top_k: Some(1),
            top_p: None,
        };
        for _ in 0..50 {
            assert_eq!(s.sample(&[0.1, 0.3, 0.2], &mut rng), 1);
        }
    }

    #[test]
    fn top_p_keeps_the_smallest_nucleus() {
        // probs ∝ e^[ln .5, ln .3, ln .2] = [.5, .3, .2]; p = 0.7 keeps {0, 1} (cumulative .5, .8).
        let logits = [0.5f32.ln(), 0.3f32.ln(), 0.2f32.ln()];
        let s = Sampler {
            temperature: 1.0,
            top_k: None,
            top_p: Some(0.7),
        };
        let mut rng = StdRng::seed_from_u64(2);
        let mut counts = [0usize; 3];
        for _ in 0..4000 {
            counts[s.sample(&logits, &mut rng) as usize] += 1;
        }
        assert_eq!(counts[2], 0);
        // Renormalised: P(0) = .5/.8 = .625.
        let f0 = counts[0] as f64 / 4000.0;
        assert!((f0 - 0.625).abs() < 0.03, "P(0) = {f0}");
    }

    #[test]
    fn temperature_sampling_matches_softmax_frequencies() {
        // logits [0, ln 3] at T = 1 → probs [.25, .75].
        let s = Sampler {
            temperature: 1.0,
            top_k: None,
            top_p: None,
        };
        let mut rng = StdRng::seed_from_u64(3);
        let ones = (0..8000)
            .filter(|_| s.sample(&[0.0, 3f32.ln()], &mut rng) == 1)
            .count();
        assert!((ones as f64 / 8000.0 - 0.75).abs() < 0.02);
    }

    #[test]
    fn nucleus_beyond_the_sorted_prefix_is_found() {
        // 3000 equal logits: a p = 0.9 nucleus holds 2700 tokens, more than the 1024 sorted
        // first, so the full sort must run; token ids >= 2700 are never drawn (ties by id).
        let s = Sampler {
            temperature: 1.0,
            top_k: None,
            top_p: Some(0.9),
        };
        let mut rng = StdRng::seed_from_u64(4);
        let draws: Vec<u32> = (0..3000)
            .map(|_| s.sample(&[0.0; 3000], &mut rng))
            .collect();
        assert!(draws.iter().all(|&t| t < 2700));
        assert!(draws.iter().any(|&t| t >= 1024));
        // A peaked row: the nucleus is inside the prefix.
        let mut logits = vec![0.0f32; 5000];
        logits[4321] = 20.0;
        assert_eq!(s.sample(&logits, &mut rng), 4321);
    }

    #[test]
    fn log_softmax_at_matches_hand_value() {
        // log(e^1 / (e^0 + e^1 + e^2)) = 1 - ln(1 + e + e²) = -1.4076059644...
        assert!((log_softmax_at(&[0.0, 1.0, 2.0], 1) - (-1.407_606)).abs() < 1e-6);
    }

    #[test]
    fn row_seeds_differ() {
        assert_ne!(row_seed(7, 0), row_seed(7, 1));
        assert_ne!(row_seed(7, 0), row_seed(8, 0));
        assert_eq!(row_seed(7, 3), row_seed(7, 3));
    }
}
