//! Cost accounting of the PlexRL simulator (arXiv 2605.20863, methods-extra §22: "user GPU-hour
//! cost" against dedicated allocation).
//!
//! Two costs, because the paper's abstract does not say which it means:
//! - **billed** (a user's GPU-hours under serviceized execution): the slot time of the job's own
//!   functions plus the switch overhead paid before them. Under dedicated allocation a job is
//!   billed its slot for its whole life, from arrival to finish.
//! - **cluster** (the operator's GPU-hours): each slot is held from the first arrival of the jobs
//!   placed on it to their last finish (and released then, as a dedicated job's slot is when
//!   the job ends); under dedicated allocation this is the sum of the jobs' lives.
//!
//! Savings are `1 − cost / dedicated cost`; utilization is the slot time running functions
//! (switches excluded) over the cluster slot time.

use super::job::Job;
use super::scheduler::Trace;

/// One job's numbers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JobCost {
    /// The job's name.
    pub(crate) name: String,
    /// Finish minus arrival.
    pub(crate) wall_s: f64,
    /// `wall_s` over the job's wall time under dedicated allocation.
    pub(crate) slowdown: f64,
    /// Slot seconds billed to the job.
    pub(crate) billed_slot_s: f64,
    /// Slot seconds the job would hold under dedicated allocation.
    pub(crate) dedicated_slot_s: f64,
    /// Switch overhead paid before its functions.
    pub(crate) switch_s: f64,
}

/// A policy's numbers for a job mix.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Costs {
    /// Slots of the cluster (dedicated: one per job).
    pub(crate) slots: usize,
    /// When the last job finished.
    pub(crate) makespan_s: f64,
    /// Function slot time over cluster slot time.
    pub(crate) utilization: f64,
    /// Slot seconds spent switching between jobs.
    pub(crate) switch_slot_s: f64,
    /// Per job.
    pub(crate) jobs: Vec<JobCost>,
    /// Σ billed slot seconds.
    pub(crate) billed_slot_s: f64,
    /// The cluster's slot seconds: Σ over slots of the span from their jobs' first arrival to
    /// their last finish.
    pub(crate) cluster_slot_s: f64,
    /// Σ slot seconds under dedicated allocation.
    pub(crate) dedicated_slot_s: f64,
    /// `1 − billed / dedicated`.
    pub(crate) billed_saving: f64,
    /// `1 − cluster / dedicated`.
    pub(crate) cluster_saving: f64,
    /// Mean of the per-job slowdowns.
    pub(crate) mean_slowdown: f64,
    /// Largest per-job slowdown.
    pub(crate) max_slowdown: f64,
}

/// The costs of `trace` (job i's model on slot `slot_of[i]` of `slots`; `dedicated` when each
/// job held its own slot) given the dedicated-allocation run `alone` of the same jobs.
pub(crate) fn account(
    jobs: &[Job],
    trace: &Trace,
    slot_of: &[usize],
    slots: usize,
    dedicated: bool,
    alone: &Trace,
) -> Costs {
    let n = jobs.len();
    let mut gpu = vec![0.0; n];
    let mut switch = vec![0.0; n];
    for r in &trace.ran {
        gpu[r.job] += r.end_s - r.start_s - r.switch_s;
        switch[r.job] += r.switch_s;
    }
    let costs: Vec<JobCost> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let wall_s = trace.finish_s[i] - j.arrival_s;
            let dedicated_slot_s = alone.finish_s[i] - j.arrival_s;
            JobCost {
                name: j.name.clone(),
                wall_s,
                slowdown: ratio(wall_s, dedicated_slot_s),
                billed_slot_s: if dedicated {
                    wall_s
                } else {
                    gpu[i] + switch[i]
                },
                dedicated_slot_s,
                switch_s: switch[i],
            }
        })
        .collect();
    let billed_slot_s: f64 = costs.iter().map(|c| c.billed_slot_s).sum();
    let dedicated_slot_s: f64 = costs.iter().map(|c| c.dedicated_slot_s).sum();
    let cluster_slot_s: f64 = (0..slots)
        .map(|s| {
            let on: Vec<usize> = (0..n).filter(|&i| slot_of[i] == s).collect();
            let first = on
                .iter()
                .map(|&i| jobs[i].arrival_s)
                .fold(f64::INFINITY, f64::min);
            let last = on.iter().map(|&i| trace.finish_s[i]).fold(0.0, f64::max);
            if on.is_empty() { 0.0 } else { last - first }
        })
        .sum();
    let busy: f64 = gpu.iter().sum();
    let slowdowns: Vec<f64> = costs.iter().map(|c| c.slowdown).collect();
    Costs {
        slots,
        makespan_s: trace.makespan_s,
        utilization: ratio(busy, cluster_slot_s),
        switch_slot_s: switch.iter().sum(),
        billed_slot_s,
        cluster_slot_s,
        dedicated_slot_s,
        billed_saving: 1.0 - ratio(billed_slot_s, dedicated_slot_s),
        cluster_saving: 1.0 - ratio(cluster_slot_s, dedicated_slot_s),
        mean_slowdown: slowdowns.iter().sum::<f64>() / n.max(1) as f64,
        max_slowdown: slowdowns.iter().copied().fold(0.0, f64::max),
        jobs: costs,
    }
}

/// `a / b`, 0 when `b` is 0 (an empty job).
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::super::job::toy;
    use super::super::scheduler::{Order, simulate};
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    fn complementary() -> Vec<Job> {
        vec![
            toy("a", 0.0, &[(true, 2.0), (false, 2.0), (true, 2.0)]),
            toy("b", 0.0, &[(false, 2.0), (true, 2.0), (false, 2.0)]),
        ]
    }

    #[test]
    fn plexrl_dedicated_baseline_costs_each_job_its_life() {
        // a: GPU 1, host 1 (life 2); b arrives at 3: GPU 2 (life 2). Held 4 slot-s, busy 3.
        let jobs = [
            toy("a", 0.0, &[(true, 1.0), (false, 1.0)]),
            toy("b", 3.0, &[(true, 2.0)]),
        ];
        let alone = simulate(&jobs, &[0, 1], 2, Order::Fifo, 0.0);
        let c = account(&jobs, &alone, &[0, 1], 2, true, &alone);
        assert_eq!(c.makespan_s, 5.0);
        assert_eq!(c.cluster_slot_s, 4.0);
        assert_eq!(c.billed_slot_s, 4.0);
        assert_eq!(c.dedicated_slot_s, 4.0);
        assert_eq!(c.utilization, 0.75);
        assert_eq!((c.billed_saving, c.cluster_saving), (0.0, 0.0));
        assert_eq!((c.mean_slowdown, c.max_slowdown), (1.0, 1.0));
    }

    #[test]
    fn plexrl_complementary_jobs_halve_the_cost() {
        // Dedicated: two lives of 6 s = 12 slot-s with 6 s of functions (utilization 0.5).
        // Shared slot: makespan 6, 6 slot-s, utilization 1; billed a 4 + b 2 = 6.
        let jobs = complementary();
        let alone = simulate(&jobs, &[0, 1], 2, Order::Fifo, 0.0);
        let ded = account(&jobs, &alone, &[0, 1], 2, true, &alone);
        assert_eq!((ded.cluster_slot_s, ded.utilization), (12.0, 0.5));
        let shared = simulate(&jobs, &[0, 0], 1, Order::Fifo, 0.0);
        let c = account(&jobs, &shared, &[0, 0], 1, false, &alone);
        assert_eq!(
            (c.makespan_s, c.cluster_slot_s, c.utilization),
            (6.0, 6.0, 1.0)
        );
        let billed: Vec<f64> = c.jobs.iter().map(|j| j.billed_slot_s).collect();
        assert_eq!(billed, vec![4.0, 2.0]);
        assert_eq!((c.billed_saving, c.cluster_saving), (0.5, 0.5));
        assert_eq!(c.max_slowdown, 1.0);
    }

    #[test]
    fn plexrl_switch_overhead_is_billed_and_slows_jobs() {
        // 0.5 s per switch (schedule in scheduler.rs): makespan 7, a billed 4 + 0.5, b 2 + 0.5.
        let jobs = complementary();
        let alone = simulate(&jobs, &[0, 1], 2, Order::Fifo, 0.5);
        let shared = simulate(&jobs, &[0, 0], 1, Order::Fifo, 0.5);
        let c = account(&jobs, &shared, &[0, 0], 1, false, &alone);
        assert_eq!(c.cluster_slot_s, 7.0);
        assert_eq!(c.switch_slot_s, 1.0);
        close(c.utilization, 6.0 / 7.0);
        let billed: Vec<f64> = c.jobs.iter().map(|j| j.billed_slot_s).collect();
        assert_eq!(billed, vec![4.5, 2.5]);
        close(c.billed_saving, 5.0 / 12.0);
        close(c.cluster_saving, 5.0 / 12.0);
        let slow: Vec<f64> = c.jobs.iter().map(|j| j.slowdown).collect();
        assert_eq!(slow, vec![7.0 / 6.0, 6.5 / 6.0]);
    }
}
