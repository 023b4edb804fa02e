//! The job/phase model of the PlexRL simulator (arXiv 2605.20863, methods-extra §22): an RLVR
//! job is a sequence of phases, each either a GPU function (it must run on the slot where the
//! job's model is placed) or host-side time during which the job's slot is free for others.

use super::modelling::{self, PhaseModel};
use super::timeline::Timeline;

/// What a phase of a step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PhaseKind {
    /// Generation on the GPU (with the long-tail model: its dense part).
    Rollout,
    /// [PROPOSED] the long tail of a synchronous rollout: the few unfinished responses keep the
    /// step waiting while they occupy a small share of the GPU, counted here as a free slot.
    RolloutTail,
    /// Reward programs (CPU only).
    Verify,
    /// Extra no-grad log-prob passes of the policy (GPU).
    Logprob,
    /// The weight push to a remote engine (GPU).
    Sync,
    /// The policy update (GPU).
    Update,
    /// Host overhead, or idle time added by the modelling (CPU).
    Idle,
}

impl PhaseKind {
    /// Whether the phase is a GPU function that needs the job's slot.
    pub(crate) fn on_gpu(self) -> bool {
        matches!(
            self,
            Self::Rollout | Self::Logprob | Self::Sync | Self::Update
        )
    }
}

/// One phase: its kind and how long it runs when it has the GPU to itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Phase {
    /// What the phase is.
    pub(crate) kind: PhaseKind,
    /// Seconds.
    pub(crate) duration_s: f64,
}

impl Phase {
    /// A phase of `kind` lasting `duration_s`.
    pub(crate) fn new(kind: PhaseKind, duration_s: f64) -> Self {
        Self { kind, duration_s }
    }
}

/// An RLVR job for the simulator.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Job {
    /// Its name in reports.
    pub(crate) name: String,
    /// When it starts, seconds after the simulation's start.
    pub(crate) arrival_s: f64,
    /// The share of one slot's memory its model (with optimizer state) takes, in (0, 1].
    pub(crate) memory: f64,
    /// Its phases in order.
    pub(crate) phases: Vec<Phase>,
}

impl Job {
    /// Seconds of GPU functions.
    pub(crate) fn gpu_s(&self) -> f64 {
        self.phases
            .iter()
            .filter(|p| p.kind.on_gpu())
            .map(|p| p.duration_s)
            .sum()
    }

    /// The GPU intervals `[start, end)` when the job runs alone from its arrival (adjacent GPU
    /// phases merged).
    pub(crate) fn gpu_intervals(&self) -> Vec<(f64, f64)> {
        let mut t = self.arrival_s;
        let mut out = Vec::new();
        for p in &self.phases {
            if p.kind.on_gpu() && p.duration_s > 0.0 {
                match out.last_mut() {
                    Some((_, end)) if *end == t => *end = t + p.duration_s,
                    _ => out.push((t, t + p.duration_s)),
                }
            }
            t += p.duration_s;
        }
        out
    }
}

/// How a job is made from a measured timeline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JobSpec {
    /// The name in reports (default: the timeline's).
    pub(crate) name: Option<String>,
    /// Times the timeline runs back to back.
    pub(crate) repeat: usize,
    /// Factor on every duration (a bigger or faster model with the same shape).
    pub(crate) scale: f64,
    /// Start offset in seconds.
    pub(crate) offset_s: f64,
    /// The share of a slot's memory the job's model takes.
    pub(crate) memory: f64,
}

impl Default for JobSpec {
    fn default() -> Self {
        Self {
            name: None,
            repeat: 1,
            scale: 1.0,
            offset_s: 0.0,
            memory: 0.5,
        }
    }
}

/// Builds a job from a timeline: per step sync, rollout (dense, then tail under the long-tail
/// model), verify, log-prob passes, update, host overhead (plus any idle the modelling adds);
/// zero-length phases dropped.
pub(crate) fn build(timeline: &Timeline, spec: &JobSpec, model: &PhaseModel) -> Job {
    let mut phases = Vec::new();
    for _ in 0..spec.repeat {
        for step in &timeline.steps {
            let (dense, tail) = if model.long_tail {
                modelling::split_rollout(step, timeline.max_new_tokens)
            } else {
                (step.rollout_s, 0.0)
            };
            let extra = model
                .idle_share
                .map_or(0.0, |share| modelling::added_idle(step, share));
            let step_phases = [
                Phase::new(PhaseKind::Sync, step.sync_s),
                Phase::new(PhaseKind::Rollout, dense),
                Phase::new(PhaseKind::RolloutTail, tail),
                Phase::new(PhaseKind::Verify, step.verify_s),
                Phase::new(PhaseKind::Logprob, step.logprob_s),
                Phase::new(PhaseKind::Update, step.update_s),
                Phase::new(PhaseKind::Idle, step.rest_s + extra),
            ];
            phases.extend(
                step_phases
                    .into_iter()
                    .filter(|p| p.duration_s > 0.0)
                    .map(|p| Phase::new(p.kind, p.duration_s * spec.scale)),
            );
        }
    }
    Job {
        name: spec.name.clone().unwrap_or_else(|| timeline.name.clone()),
        arrival_s: spec.offset_s,
        memory: spec.memory,
        phases,
    }
}

/// A test job: `(on_gpu, seconds)` phases (GPU as updates, host as idle), arriving at
/// `arrival_s`, memory 0.5.
#[cfg(test)]
pub(crate) fn toy(name: &str, arrival_s: f64, phases: &[(bool, f64)]) -> Job {
    Job {
        name: name.into(),
        arrival_s,
        memory: 0.5,
        phases: phases
            .iter()
            .map(|&(gpu, d)| {
                Phase::new(
                    if gpu {
                        PhaseKind::Update
                    } else {
                        PhaseKind::Idle
                    },
                    d,
                )
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::timeline::StepTimes;
    use super::*;

    fn timeline() -> Timeline {
        Timeline {
            name: "t".into(),
            steps: vec![StepTimes {
                rollout_s: 4.0,
                verify_s: 1.0,
                logprob_s: 0.0,
                sync_s: 0.5,
                update_s: 2.0,
                rest_s: 0.5,
                length_mean: Some(2.0),
                truncated_frac: Some(0.25),
            }],
            max_new_tokens: Some(8),
        }
    }

    #[test]
    fn plexrl_job_from_timeline_repeat_scale_offset() {
        let spec = JobSpec {
            repeat: 2,
            scale: 2.0,
            offset_s: 3.0,
            ..JobSpec::default()
        };
        let job = build(&timeline(), &spec, &PhaseModel::default());
        use PhaseKind::*;
        let one = [
            (Sync, 1.0),
            (Rollout, 8.0),
            (Verify, 2.0),
            (Update, 4.0),
            (Idle, 1.0),
        ];
        let want: Vec<Phase> = one
            .iter()
            .chain(one.iter())
            .map(|&(k, d)| Phase::new(k, d))
            .collect();
        assert_eq!(job.phases, want);
        assert_eq!(job.arrival_s, 3.0);
        assert_eq!(job.gpu_s(), 26.0);
        assert_eq!(job.phases.iter().map(|p| p.duration_s).sum::<f64>(), 32.0);
        assert_eq!(job.gpu_intervals()[..2], [(3.0, 12.0), (14.0, 18.0)]);
    }

    #[test]
    fn plexrl_job_long_tail_splits_the_rollout() {
        let model = PhaseModel {
            long_tail: true,
            idle_share: None,
        };
        let job = build(&timeline(), &JobSpec::default(), &model);
        // 2 of 8 tokens on average: 1 s of the 4 s rollout holds the GPU, 3 s are the tail.
        assert_eq!(job.phases[1], Phase::new(PhaseKind::Rollout, 1.0));
        assert_eq!(job.phases[2], Phase::new(PhaseKind::RolloutTail, 3.0));
        assert_eq!(job.gpu_s(), 3.5);
        assert_eq!(job.phases.iter().map(|p| p.duration_s).sum::<f64>(), 8.0);
    }
}
