//! The PlexRL simulator's function-level scheduler (arXiv 2605.20863, methods-extra §22:
//! "function-level scheduling ... time-slices execution across jobs without moving models"):
//! a discrete-event simulation of N slots shared by jobs whose models are placed on them.
//!
//! Each job walks its phases in order. A host phase (verify, overhead, rollout tail) runs without
//! a slot. A GPU phase is a function queued at the slot holding the job's model; a free slot
//! starts one queued function, chosen by the [`Order`], and runs it to the end (no preemption).
//! Starting a function of a different job than the slot's last one first costs `switch_s`
//! seconds of the slot (the state transition between resident models; the first function on a
//! slot costs nothing). Deterministic: ties go to the lower job index; nothing is random.

use super::job::Job;

/// Which queued function a free slot starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// The one queued first.
    Fifo,
    /// The shortest one (then the one queued first).
    ShortestFirst,
}

/// One function as it ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ran {
    /// The job's index.
    pub(crate) job: usize,
    /// The slot.
    pub(crate) slot: usize,
    /// When the slot started on it (the switch, if any, comes first).
    pub(crate) start_s: f64,
    /// Switch overhead paid before it.
    pub(crate) switch_s: f64,
    /// When it ended.
    pub(crate) end_s: f64,
}

/// What a simulation produced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Trace {
    /// When each job finished its last phase.
    pub(crate) finish_s: Vec<f64>,
    /// Every function run, in start order.
    pub(crate) ran: Vec<Ran>,
    /// When the last job finished.
    pub(crate) makespan_s: f64,
}

/// Where a job is in its timeline.
#[derive(Debug, Clone, Copy)]
enum State {
    /// Not started, or in a host phase, until the given time.
    Host(f64),
    /// Its GPU function waits at its slot since the given time.
    Queued(f64),
    /// Its GPU function runs until the given time.
    Running(f64),
    /// Finished at the given time.
    Done(f64),
}

/// Runs `jobs` with job i's model on slot `slot_of[i]` of `slots`.
pub(crate) fn simulate(
    jobs: &[Job],
    slot_of: &[usize],
    slots: usize,
    order: Order,
    switch_s: f64,
) -> Trace {
    assert_eq!(jobs.len(), slot_of.len());
    assert!(slot_of.iter().all(|&s| s < slots));
    let n = jobs.len();
    // Index of the phase each job is in (or starts next, while it waits for its arrival).
    let mut next = vec![0usize; n];
    let mut state: Vec<State> = jobs.iter().map(|j| State::Host(j.arrival_s)).collect();
    // Whether the job is still before its first phase.
    let mut arrived = vec![false; n];
    let mut busy = vec![false; slots];
    let mut last = vec![None::<usize>; slots];
    let mut ran = Vec::new();
    let mut now = 0.0f64;
    loop {
        // Finish every phase that ends by now; a job then enters its next phase at its end time.
        for i in 0..n {
            loop {
                let end = match state[i] {
                    State::Host(t) | State::Running(t) if t <= now => t,
                    _ => break,
                };
                if let State::Running(_) = state[i] {
                    busy[slot_of[i]] = false;
                }
                if arrived[i] {
                    next[i] += 1;
                } else {
                    arrived[i] = true;
                }
                state[i] = match jobs[i].phases.get(next[i]) {
                    None => State::Done(end),
                    Some(p) if p.kind.on_gpu() => State::Queued(end),
                    Some(p) => State::Host(end + p.duration_s),
                };
            }
        }
        // Every free slot starts one queued function.
        for s in 0..slots {
            if busy[s] {
                continue;
            }
            let pick = (0..n)
                .filter(|&i| slot_of[i] == s)
                .filter_map(|i| match state[i] {
                    State::Queued(since) => Some((i, since, jobs[i].phases[next[i]].duration_s)),
                    _ => None,
                })
                .min_by(|a, b| match order {
                    Order::Fifo => a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)),
                    Order::ShortestFirst => {
                        a.2.total_cmp(&b.2)
                            .then(a.1.total_cmp(&b.1))
                            .then(a.0.cmp(&b.0))
                    }
                });
            if let Some((i, _, duration)) = pick {
                let switch = match last[s] {
                    Some(prev) if prev != i => switch_s,
                    _ => 0.0,
                };
                let end = now + switch + duration;
                ran.push(Ran {
                    job: i,
                    slot: s,
                    start_s: now,
                    switch_s: switch,
                    end_s: end,
                });
                state[i] = State::Running(end);
                busy[s] = true;
                last[s] = Some(i);
            }
        }
        // The next event: the earliest end of a host phase or a function.
        let upcoming = state
            .iter()
            .filter_map(|s| match *s {
                State::Host(t) | State::Running(t) => Some(t),
                _ => None,
            })
            .min_by(f64::total_cmp);
        match upcoming {
            Some(t) => now = t.max(now),
            None => break,
        }
    }
    let finish_s: Vec<f64> = state
        .iter()
        .map(|s| match *s {
            State::Done(t) => t,
            _ => unreachable!("a job left unfinished: a queued function on an idle slot"),
        })
        .collect();
    let makespan_s = finish_s.iter().copied().fold(0.0, f64::max);
    Trace {
        finish_s,
        ran,
        makespan_s,
    }
}

#[cfg(test)]
mod tests {
    use super::super::job::toy;
    use super::*;

    fn starts(t: &Trace) -> Vec<(usize, f64, f64)> {
        t.ran.iter().map(|r| (r.job, r.start_s, r.end_s)).collect()
    }

    #[test]
    fn plexrl_two_complementary_jobs_share_one_slot() {
        // a: GPU 2, host 2, GPU 2; b: host 2, GPU 2, host 2. By hand: a 0–2, b 2–4, a 4–6.
        let jobs = [
            toy("a", 0.0, &[(true, 2.0), (false, 2.0), (true, 2.0)]),
            toy("b", 0.0, &[(false, 2.0), (true, 2.0), (false, 2.0)]),
        ];
        let t = simulate(&jobs, &[0, 0], 1, Order::Fifo, 0.0);
        assert_eq!(
            starts(&t),
            vec![(0, 0.0, 2.0), (1, 2.0, 4.0), (0, 4.0, 6.0)]
        );
        assert_eq!(t.finish_s, vec![6.0, 6.0]);
        assert_eq!(t.makespan_s, 6.0);
    }

    #[test]
    fn plexrl_switch_overhead_delays_the_other_job() {
        // The same jobs, 0.5 s per switch. By hand: a 0–2; b queued at 2, switch 2–2.5, runs
        // 2.5–4.5; a queued at 4 waits, switch 4.5–5, runs 5–7; b's host phase 4.5–6.5.
        let jobs = [
            toy("a", 0.0, &[(true, 2.0), (false, 2.0), (true, 2.0)]),
            toy("b", 0.0, &[(false, 2.0), (true, 2.0), (false, 2.0)]),
        ];
        let t = simulate(&jobs, &[0, 0], 1, Order::Fifo, 0.5);
        assert_eq!(
            starts(&t),
            vec![(0, 0.0, 2.0), (1, 2.0, 4.5), (0, 4.5, 7.0)]
        );
        let switches: Vec<f64> = t.ran.iter().map(|r| r.switch_s).collect();
        assert_eq!(switches, vec![0.0, 0.5, 0.5]);
        assert_eq!(t.finish_s, vec![7.0, 6.5]);
        // The same job twice in a row on its slot pays no switch.
        let alone = simulate(&jobs[..1], &[0], 1, Order::Fifo, 0.5);
        assert_eq!(alone.makespan_s, 6.0);
    }

    #[test]
    fn plexrl_fifo_and_shortest_first_order_the_queue() {
        // c holds the slot 0–2; a (GPU 3) queues at 0.5, b (GPU 1) at 1.
        let jobs = [
            toy("a", 0.0, &[(false, 0.5), (true, 3.0)]),
            toy("b", 0.0, &[(false, 1.0), (true, 1.0)]),
            toy("c", 0.0, &[(true, 2.0)]),
        ];
        let fifo = simulate(&jobs, &[0, 0, 0], 1, Order::Fifo, 0.0);
        assert_eq!(
            starts(&fifo),
            vec![(2, 0.0, 2.0), (0, 2.0, 5.0), (1, 5.0, 6.0)]
        );
        let sff = simulate(&jobs, &[0, 0, 0], 1, Order::ShortestFirst, 0.0);
        assert_eq!(
            starts(&sff),
            vec![(2, 0.0, 2.0), (1, 2.0, 3.0), (0, 3.0, 6.0)]
        );
        assert_eq!(sff.finish_s, vec![6.0, 3.0, 2.0]);
    }

    #[test]
    fn plexrl_affinity_keeps_a_job_on_its_slot() {
        // a and c on slot 0, b on slot 1: c waits for a although slot 1 is free from t = 1.
        let jobs = [
            toy("a", 0.0, &[(true, 2.0)]),
            toy("b", 0.0, &[(true, 1.0)]),
            toy("c", 0.0, &[(true, 2.0)]),
        ];
        let t = simulate(&jobs, &[0, 1, 0], 2, Order::Fifo, 0.0);
        assert_eq!(t.finish_s, vec![2.0, 1.0, 4.0]);
        assert_eq!(t.ran[2].slot, 0);
        assert_eq!(t.makespan_s, 4.0);
    }

    #[test]
    fn plexrl_arrivals_wait_for_their_offset() {
        let jobs = [
            toy("a", 0.0, &[(true, 1.0), (false, 1.0)]),
            toy("b", 3.0, &[(true, 2.0)]),
        ];
        let t = simulate(&jobs, &[0, 1], 2, Order::Fifo, 0.0);
        assert_eq!(starts(&t), vec![(0, 0.0, 1.0), (1, 3.0, 5.0)]);
        assert_eq!(t.finish_s, vec![2.0, 5.0]);
    }
}
