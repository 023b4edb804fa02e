//! Model placement for the PlexRL simulator (arXiv 2605.20863, methods-extra §22: "model
//! placement ... under strict affinity constraints"): which slot holds each job's model. A job's
//! GPU functions run only on that slot for its whole life (no model movement); a slot holds
//! models up to its memory (1.0). The rules are [PROPOSED] (the paper's are not available).

use super::job::Job;

/// How models are placed on slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Every job on its own slot (the dedicated-allocation baseline): one slot per job.
    Dedicated,
    /// Job i on the first slot from i mod N on that has memory left.
    RoundRobin,
    /// [PROPOSED] Jobs in order of GPU time (largest first), each on the slot where its GPU
    /// intervals (running alone) overlap least with the jobs already there; ties go to the slot
    /// with the least GPU time, then the lowest index. Pairs jobs whose idle is anti-correlated.
    AntiCorrelated,
}

/// A placement that cannot be made.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum PlacementError {
    /// A job's model fits on no slot with what is already placed.
    #[error(
        "job `{job}` needs memory {memory} of a slot and none of the {slots} slots has that much \
         left (affinity: a model stays where it is placed, so jobs cannot take turns on a slot \
         whose memory they do not fit in); add slots or lower the job's memory"
    )]
    NoRoom {
        job: String,
        memory: f64,
        slots: usize,
    },
    /// A job's model is bigger than a slot.
    #[error("job `{job}`: memory {memory} is not in (0, 1] (the share of one slot's memory)")]
    BadMemory { job: String, memory: f64 },
}

/// The slot of each job's model under `how` with `slots` slots (ignored by `Dedicated`, which
/// uses one slot per job); returns the slot count used with the assignment.
pub(crate) fn place(
    jobs: &[Job],
    slots: usize,
    how: Placement,
) -> Result<(usize, Vec<usize>), PlacementError> {
    for j in jobs {
        if !(j.memory > 0.0 && j.memory <= 1.0) {
            return Err(PlacementError::BadMemory {
                job: j.name.clone(),
                memory: j.memory,
            });
        }
    }
    if how == Placement::Dedicated {
        return Ok((jobs.len(), (0..jobs.len()).collect()));
    }
    let mut free = vec![1.0f64; slots];
    let mut slot_of = vec![usize::MAX; jobs.len()];
    let fits = |free: &[f64], s: usize, j: &Job| free[s] + 1e-12 >= j.memory;
    let no_room = |j: &Job| PlacementError::NoRoom {
        job: j.name.clone(),
        memory: j.memory,
        slots,
    };
    match how {
        Placement::Dedicated => unreachable!(),
        Placement::RoundRobin => {
            for (i, j) in jobs.iter().enumerate() {
                let s = (0..slots)
                    .map(|k| (i + k) % slots)
                    .find(|&s| fits(&free, s, j))
                    .ok_or_else(|| no_room(j))?;
                free[s] -= j.memory;
                slot_of[i] = s;
            }
        }
        Placement::AntiCorrelated => {
            let intervals: Vec<Vec<(f64, f64)>> = jobs.iter().map(Job::gpu_intervals).collect();
            let mut order: Vec<usize> = (0..jobs.len()).collect();
            order.sort_by(|&a, &b| jobs[b].gpu_s().total_cmp(&jobs[a].gpu_s()).then(a.cmp(&b)));
            let mut load = vec![0.0f64; slots];
            for i in order {
                let j = &jobs[i];
                let overlap_on = |s: usize| -> f64 {
                    (0..jobs.len())
                        .filter(|&k| slot_of[k] == s)
                        .map(|k| overlap(&intervals[i], &intervals[k]))
                        .sum()
                };
                let s = (0..slots)
                    .filter(|&s| fits(&free, s, j))
                    .min_by(|&a, &b| {
                        overlap_on(a)
                            .total_cmp(&overlap_on(b))
                            .then(load[a].total_cmp(&load[b]))
                            .then(a.cmp(&b))
                    })
                    .ok_or_else(|| no_room(j))?;
                free[s] -= j.memory;
                load[s] += j.gpu_s();
                slot_of[i] = s;
            }
        }
    }
    Ok((slots, slot_of))
}

/// Total length of the intersection of two sorted lists of disjoint intervals.
pub(crate) fn overlap(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let (mut i, mut k, mut total) = (0, 0, 0.0);
    while i < a.len() && k < b.len() {
        let lo = a[i].0.max(b[k].0);
        let hi = a[i].1.min(b[k].1);
        if hi > lo {
            total += hi - lo;
        }
        if a[i].1 < b[k].1 {
            i += 1;
        } else {
            k += 1;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::super::job::toy;
    use super::*;

    fn job(name: &str, memory: f64, phases: &[(bool, f64)]) -> Job {
        Job {
            memory,
            ..toy(name, 0.0, phases)
        }
    }

    #[test]
    fn plexrl_overlap_of_interval_lists() {
        assert_eq!(overlap(&[(0.0, 2.0), (4.0, 6.0)], &[(1.0, 5.0)]), 2.0);
        assert_eq!(overlap(&[(0.0, 2.0)], &[(2.0, 4.0)]), 0.0);
    }

    #[test]
    fn plexrl_affinity_refuses_a_placement_that_does_not_fit() {
        let jobs = [job("a", 0.6, &[(true, 1.0)]), job("b", 0.6, &[(true, 1.0)])];
        for how in [Placement::RoundRobin, Placement::AntiCorrelated] {
            let err = place(&jobs, 1, how).unwrap_err();
            assert_eq!(
                err,
                PlacementError::NoRoom {
                    job: "b".into(),
                    memory: 0.6,
                    slots: 1
                }
            );
            assert!(err.to_string().contains("job `b` needs memory 0.6"));
        }
        assert_eq!(
            place(&jobs, 2, Placement::RoundRobin).unwrap(),
            (2, vec![0, 1])
        );
        let big = [job("c", 1.5, &[(true, 1.0)])];
        assert!(matches!(
            place(&big, 1, Placement::RoundRobin),
            Err(PlacementError::BadMemory { .. })
        ));
    }

    #[test]
    fn plexrl_anti_correlated_placement_pairs_complementary_jobs() {
        // a, c: GPU then idle; b, d: idle then GPU. Round-robin pairs a with c (correlated).
        let early = [(true, 2.0), (false, 2.0)];
        let late = [(false, 2.0), (true, 2.0)];
        let jobs = [
            job("a", 0.5, &early),
            job("b", 0.5, &late),
            job("c", 0.5, &early),
            job("d", 0.5, &late),
        ];
        assert_eq!(
            place(&jobs, 2, Placement::RoundRobin).unwrap().1,
            vec![0, 1, 0, 1]
        );
        // By hand: a → 0; b: no overlap anywhere, slot 1 has less load → 1; c overlaps a by 2,
        // b by 0 → 1; d: slot 1 is full → 0.
        assert_eq!(
            place(&jobs, 2, Placement::AntiCorrelated).unwrap().1,
            vec![0, 1, 1, 0]
        );
        assert_eq!(
            place(&jobs, 2, Placement::Dedicated).unwrap(),
            (4, vec![0, 1, 2, 3])
        );
    }
}
