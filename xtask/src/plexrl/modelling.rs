//! [PROPOSED] modelling on top of the measured timelines (PlexRL, arXiv 2605.20863,
//! methods-extra §22; the paper's scheduler internals are not available): the long tail of a
//! synchronous rollout, and idle time added to a step to ask how much idle a saving needs.
//!
//! Measured: every phase duration, `response/length_mean`, `response/truncated_frac`,
//! `rollout.max_new_tokens`. Modelled: the GPU occupancy of the rollout over time, and any idle
//! beyond what the runs had.

use super::timeline::StepTimes;

/// Which [PROPOSED] modelling applies to the measured phases.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct PhaseModel {
    /// Split each rollout into its dense part and its long tail ([`split_rollout`]).
    pub(crate) long_tail: bool,
    /// Pad each step with host idle until idle is this share of the step ([`added_idle`]).
    pub(crate) idle_share: Option<f64>,
}

/// [PROPOSED] The long-tail model of a synchronous batched rollout: `(dense_s, tail_s)`.
///
/// With every response of the batch decoded in lock step, the rollout lasts as long as its
/// longest response; response i holds its row of the batch for `len_i` of the `max_len` decode
/// steps, so the batch's mean occupancy is `mean_len / max_len`. The model charges the rollout
/// that share of its wall time as GPU (`dense_s = rollout_s · mean_len / max_len`) and counts the
/// rest (`tail_s`) as time the slot could serve another job. `max_len` is known only when some
/// response hit `rollout.max_new_tokens` (`response/truncated_frac > 0`: then the longest is the
/// cap); otherwise, or when lengths were not logged, the whole rollout stays GPU time.
pub(crate) fn split_rollout(step: &StepTimes, max_new_tokens: Option<usize>) -> (f64, f64) {
    match (step.length_mean, step.truncated_frac, max_new_tokens) {
        (Some(mean), Some(truncated), Some(max)) if truncated > 0.0 && max > 0 => {
            let busy = (mean / max as f64).clamp(0.0, 1.0);
            let dense = step.rollout_s * busy;
            (dense, step.rollout_s - dense)
        }
        _ => (step.rollout_s, 0.0),
    }
}

/// [PROPOSED] Host idle to add to a step so that its CPU-side time (verify, host overhead and the
/// added idle) is `share` of the step: `share · gpu / (1 − share) − cpu`, or 0 when the step
/// already idles that much. Stands for tool calls, sandboxes and reward-model stalls that the
/// measured runs did not have.
pub(crate) fn added_idle(step: &StepTimes, share: f64) -> f64 {
    let gpu = step.gpu_s();
    let cpu = step.verify_s + step.rest_s;
    if share <= 0.0 || share >= 1.0 {
        return 0.0;
    }
    (share * gpu / (1.0 - share) - cpu).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(length_mean: Option<f64>, truncated_frac: Option<f64>) -> StepTimes {
        StepTimes {
            rollout_s: 8.0,
            verify_s: 1.0,
            logprob_s: 0.0,
            sync_s: 0.0,
            update_s: 4.0,
            rest_s: 0.0,
            length_mean,
            truncated_frac,
        }
    }

    #[test]
    fn plexrl_long_tail_share_is_mean_over_max_length() {
        // 3 of 12 tokens on average: a quarter of the 8 s rollout is GPU work.
        assert_eq!(
            split_rollout(&step(Some(3.0), Some(0.5)), Some(12)),
            (2.0, 6.0)
        );
        // No response reached the cap: the longest is unknown, no tail is claimed.
        assert_eq!(
            split_rollout(&step(Some(3.0), Some(0.0)), Some(12)),
            (8.0, 0.0)
        );
        assert_eq!(split_rollout(&step(None, None), Some(12)), (8.0, 0.0));
        assert_eq!(split_rollout(&step(Some(3.0), Some(0.5)), None), (8.0, 0.0));
    }

    #[test]
    fn plexrl_added_idle_reaches_the_share() {
        // GPU 12 s, CPU 1 s. Half the step idle: CPU 12 s, so 11 s added.
        assert_eq!(added_idle(&step(None, None), 0.5), 11.0);
        // 0.25: CPU 4 s of 16 s, 3 s added.
        assert_eq!(added_idle(&step(None, None), 0.25), 3.0);
        // The step already idles 1/13 > 0.05: nothing added.
        assert_eq!(added_idle(&step(None, None), 0.05), 0.0);
    }
}
