//! The PlexRL simulator's report (arXiv 2605.20863, methods-extra §22): the measured phase shares
//! of each timeline, and per scenario and policy the utilization, makespan, slowdowns and
//! GPU-hour costs against dedicated allocation, as Markdown tables and as JSON.

use serde_json::{Value, json};

use super::cost::Costs;
use super::modelling;
use super::timeline::Timeline;

/// A timeline's measured phase shares (of the summed `time/step_s`), and the [PROPOSED] long-tail
/// share of its steps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shares {
    /// The timeline's name.
    pub(crate) name: String,
    /// Steps read.
    pub(crate) steps: usize,
    /// Mean `time/step_s`.
    pub(crate) step_mean_s: f64,
    /// Share of `time/rollout_s`.
    pub(crate) rollout: f64,
    /// Share of `time/verify_s`.
    pub(crate) verify: f64,
    /// Share of `time/token_credit_s` (extra log-prob passes).
    pub(crate) logprob: f64,
    /// Share of `time/weight_sync_s`.
    pub(crate) sync: f64,
    /// Share of `time/update_s`.
    pub(crate) update: f64,
    /// Share of host overhead (the rest of `time/step_s`).
    pub(crate) rest: f64,
    /// [PROPOSED] share of the step that is rollout tail under the long-tail model.
    pub(crate) tail: f64,
}

impl Shares {
    /// The measured share during which the GPU idles (verify and host overhead).
    pub(crate) fn idle(&self) -> f64 {
        self.verify + self.rest
    }
}

/// The shares of `t`.
pub(crate) fn shares(t: &Timeline) -> Shares {
    let total: f64 = t.steps.iter().map(|s| s.step_s()).sum();
    let share = |f: &dyn Fn(&super::timeline::StepTimes) -> f64| {
        if total > 0.0 {
            t.steps.iter().map(f).sum::<f64>() / total
        } else {
            0.0
        }
    };
    Shares {
        name: t.name.clone(),
        steps: t.steps.len(),
        step_mean_s: total / t.steps.len().max(1) as f64,
        rollout: share(&|s| s.rollout_s),
        verify: share(&|s| s.verify_s),
        logprob: share(&|s| s.logprob_s),
        sync: share(&|s| s.sync_s),
        update: share(&|s| s.update_s),
        rest: share(&|s| s.rest_s),
        tail: share(&|s| modelling::split_rollout(s, t.max_new_tokens).1),
    }
}

/// One simulated scenario: its conditions and every policy's costs.
#[derive(Debug, Clone)]
pub(crate) struct Scenario {
    /// [PROPOSED] idle share the steps were padded to, if any.
    pub(crate) idle_share: Option<f64>,
    /// Whether the long-tail model was on.
    pub(crate) long_tail: bool,
    /// Seconds per switch between jobs.
    pub(crate) switch_s: f64,
    /// The jobs' names.
    pub(crate) jobs: Vec<String>,
    /// `(policy name, costs)`.
    pub(crate) results: Vec<(String, Costs)>,
}

fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

/// The timelines' shares as a Markdown table.
pub(crate) fn shares_table(all: &[Shares]) -> String {
    let mut out = String::from(
        "| timeline | steps | step (s, mean) | rollout | verify | log-prob | sync | update | host | \
         GPU idle (verify + host) | rollout tail [PROPOSED] |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in all {
        out.push_str(&format!(
            "| {} | {} | {:.3} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            s.name,
            s.steps,
            s.step_mean_s,
            pct(s.rollout),
            pct(s.verify),
            pct(s.logprob),
            pct(s.sync),
            pct(s.update),
            pct(s.rest),
            pct(s.idle()),
            pct(s.tail),
        ));
    }
    out
}

/// A scenario as a heading line and a Markdown table.
pub(crate) fn scenario_table(s: &Scenario, per_job: bool) -> String {
    let idle = s.idle_share.map_or_else(|| "as measured".to_string(), pct);
    let mut out = format!(
        "jobs: {}; idle share: {idle}; long tail: {}; switch: {} s\n\n",
        s.jobs.join(", "),
        if s.long_tail { "on" } else { "off" },
        s.switch_s
    );
    out.push_str(
        "| policy | slots | makespan (s) | utilization | slowdown mean / max | billed (slot-s) | \
         billed saving | cluster (slot-s) | cluster saving |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (name, c) in &s.results {
        out.push_str(&format!(
            "| {name} | {} | {:.2} | {} | {:.3} / {:.3} | {:.2} | {} | {:.2} | {} |\n",
            c.slots,
            c.makespan_s,
            pct(c.utilization),
            c.mean_slowdown,
            c.max_slowdown,
            c.billed_slot_s,
            pct(c.billed_saving),
            c.cluster_slot_s,
            pct(c.cluster_saving),
        ));
    }
    if per_job {
        out.push_str("\n| policy | job | wall (s) | slowdown | billed (slot-s) | dedicated (slot-s) | switch (s) |\n|---|---|---|---|---|---|---|\n");
        for (name, c) in &s.results {
            for j in &c.jobs {
                out.push_str(&format!(
                    "| {name} | {} | {:.2} | {:.3} | {:.2} | {:.2} | {:.2} |\n",
                    j.name, j.wall_s, j.slowdown, j.billed_slot_s, j.dedicated_slot_s, j.switch_s
                ));
            }
        }
    }
    out
}

/// Everything as JSON.
pub(crate) fn to_json(shares: &[Shares], scenarios: &[Scenario]) -> Value {
    let timelines: Vec<Value> = shares
        .iter()
        .map(|s| {
            json!({
                "name": s.name, "steps": s.steps, "step_mean_s": s.step_mean_s,
                "rollout": s.rollout, "verify": s.verify, "logprob": s.logprob, "sync": s.sync,
                "update": s.update, "rest": s.rest, "idle": s.idle(), "tail": s.tail,
            })
        })
        .collect();
    let scenarios: Vec<Value> = scenarios
        .iter()
        .map(|s| {
            let results: Vec<Value> = s
                .results
                .iter()
                .map(|(name, c)| {
                    let jobs: Vec<Value> = c
                        .jobs
                        .iter()
                        .map(|j| {
                            json!({
                                "name": j.name, "wall_s": j.wall_s, "slowdown": j.slowdown,
                                "billed_slot_s": j.billed_slot_s,
                                "dedicated_slot_s": j.dedicated_slot_s, "switch_s": j.switch_s,
                            })
                        })
                        .collect();
                    json!({
                        "policy": name, "slots": c.slots, "makespan_s": c.makespan_s,
                        "utilization": c.utilization, "switch_slot_s": c.switch_slot_s,
                        "billed_slot_s": c.billed_slot_s, "cluster_slot_s": c.cluster_slot_s,
                        "dedicated_slot_s": c.dedicated_slot_s,
                        "billed_saving": c.billed_saving, "cluster_saving": c.cluster_saving,
                        "mean_slowdown": c.mean_slowdown, "max_slowdown": c.max_slowdown,
                        "jobs": jobs,
                    })
                })
                .collect();
            json!({
                "idle_share": s.idle_share, "long_tail": s.long_tail, "switch_s": s.switch_s,
                "jobs": s.jobs, "results": results,
            })
        })
        .collect();
    json!({ "timelines": timelines, "scenarios": scenarios })
}

#[cfg(test)]
mod tests {
    use super::super::timeline::StepTimes;
    use super::*;

    #[test]
    fn plexrl_shares_of_a_timeline() {
        let step = |rollout_s, rest_s| StepTimes {
            rollout_s,
            verify_s: 1.0,
            logprob_s: 0.0,
            sync_s: 0.0,
            update_s: 4.0,
            rest_s,
            length_mean: Some(2.0),
            truncated_frac: Some(0.5),
        };
        let t = Timeline {
            name: "t".into(),
            steps: vec![step(4.0, 1.0), step(2.0, 0.0)],
            max_new_tokens: Some(8),
        };
        // Steps of 10 s and 7 s: rollout 6/17, idle (2 verify + 1 host) 3/17, tail
        // (3 + 1.5) / 17 (2 of 8 tokens: three quarters of each rollout).
        let s = shares(&t);
        assert_eq!(s.step_mean_s, 8.5);
        assert_eq!(s.rollout, 6.0 / 17.0);
        assert!((s.idle() - 3.0 / 17.0).abs() < 1e-12);
        assert_eq!(s.tail, 4.5 / 17.0);
        assert!(shares_table(&[s]).contains("| t | 2 | 8.500 | 35.3 % |"));
    }
}
