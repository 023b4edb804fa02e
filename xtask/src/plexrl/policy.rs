//! The scheduler policies the PlexRL simulator compares (arXiv 2605.20863, methods-extra §22):
//! each is a model placement plus a queue order; the paper's own policy is not available, so
//! these are [PROPOSED] stand-ins that bracket it.

use super::cost::{Costs, account};
use super::job::Job;
use super::placement::{Placement, PlacementError, place};
use super::scheduler::{Order, Trace, simulate};

/// A cluster policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// The baseline: every job holds its own slot for its whole life.
    Dedicated,
    /// Round-robin placement, first-queued function first.
    Fifo,
    /// Round-robin placement, shortest queued function first.
    ShortestFirst,
    /// Anti-correlated placement (jobs whose GPU time overlaps least share a slot), FIFO order.
    AntiCorrelated,
}

impl Policy {
    /// Every policy, in report order.
    pub(crate) const ALL: [Policy; 4] = [
        Policy::Dedicated,
        Policy::Fifo,
        Policy::ShortestFirst,
        Policy::AntiCorrelated,
    ];

    /// The name on the command line and in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Policy::Dedicated => "dedicated",
            Policy::Fifo => "fifo",
            Policy::ShortestFirst => "sff",
            Policy::AntiCorrelated => "anti",
        }
    }

    /// The policy called `name`.
    pub(crate) fn parse(name: &str) -> Option<Policy> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    fn placement(self) -> Placement {
        match self {
            Policy::Dedicated => Placement::Dedicated,
            Policy::Fifo | Policy::ShortestFirst => Placement::RoundRobin,
            Policy::AntiCorrelated => Placement::AntiCorrelated,
        }
    }

    fn order(self) -> Order {
        match self {
            Policy::ShortestFirst => Order::ShortestFirst,
            _ => Order::Fifo,
        }
    }
}

/// The dedicated-allocation run of `jobs`: each on its own slot.
pub(crate) fn alone(jobs: &[Job]) -> Trace {
    let n = jobs.len();
    simulate(jobs, &(0..n).collect::<Vec<_>>(), n, Order::Fifo, 0.0)
}

/// Simulates `jobs` under `policy` on `slots` slots (dedicated: one per job) with `switch_s`
/// seconds per switch between jobs, and accounts it against dedicated allocation.
pub(crate) fn evaluate(
    jobs: &[Job],
    slots: usize,
    policy: Policy,
    switch_s: f64,
) -> Result<Costs, PlacementError> {
    let baseline = alone(jobs);
    let (slots, slot_of) = place(jobs, slots, policy.placement())?;
    let trace = simulate(jobs, &slot_of, slots, policy.order(), switch_s);
    Ok(account(
        jobs,
        &trace,
        &slot_of,
        slots,
        policy == Policy::Dedicated,
        &baseline,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::job::toy;
    use super::*;

    #[test]
    fn plexrl_policies_on_four_jobs_two_slots() {
        // a, c: GPU 2 then host 2; b, d: host 2 then GPU 2. Dedicated: 4 lives of 4 s = 16.
        // fifo (round-robin: a, c on slot 0; b, d on slot 1): slot 0 runs a 0–2, c 2–4 (c's
        // host phase ends at 6); slot 1 runs b 2–4, d 4–6 → both held 0–6: makespan 6, cluster
        // 12 (saving 1/4), utilization 8/12; c and d take 6 s instead of 4.
        // anti ({a, d}, {b, c}): every function runs as soon as it is ready → makespan 4,
        // cluster 8 (saving 1/2), utilization 1.
        let early = [(true, 2.0), (false, 2.0)];
        let late = [(false, 2.0), (true, 2.0)];
        let jobs = [
            toy("a", 0.0, &early),
            toy("b", 0.0, &late),
            toy("c", 0.0, &early),
            toy("d", 0.0, &late),
        ];
        let ded = evaluate(&jobs, 2, Policy::Dedicated, 0.0).unwrap();
        assert_eq!(
            (ded.slots, ded.cluster_slot_s, ded.utilization),
            (4, 16.0, 0.5)
        );
        let fifo = evaluate(&jobs, 2, Policy::Fifo, 0.0).unwrap();
        assert_eq!((fifo.makespan_s, fifo.cluster_slot_s), (6.0, 12.0));
        assert_eq!((fifo.cluster_saving, fifo.billed_saving), (0.25, 0.5));
        assert!((fifo.utilization - 8.0 / 12.0).abs() < 1e-12);
        assert_eq!(fifo.max_slowdown, 1.5);
        let anti = evaluate(&jobs, 2, Policy::AntiCorrelated, 0.0).unwrap();
        assert_eq!(
            (anti.makespan_s, anti.cluster_slot_s, anti.utilization),
            (4.0, 8.0, 1.0)
        );
        assert_eq!((anti.cluster_saving, anti.max_slowdown), (0.5, 1.0));
        assert_eq!(Policy::parse("sff"), Some(Policy::ShortestFirst));
        assert_eq!(Policy::parse("lifo"), None);
    }
}
