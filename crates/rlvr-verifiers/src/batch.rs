//! Parallel batch scoring with a per-item wall-clock limit that a slow item cannot stall.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{Outcome, Reference, Verdict, Verifier};

/// Worker threads per logical CPU. A code check is two processes taking turns (the checker
/// waits on the program and back), so one worker per CPU leaves CPUs idle; two keep them busy.
const WORKERS_PER_CPU: usize = 2;

/// How often the watcher looks for items that ran past their limit.
const WATCH_TICK: Duration = Duration::from_millis(5);

/// Scores `items` on two worker threads per logical CPU, each item limited to `timeout`.
///
/// Pass [`crate::VerifierConfig::item_time_limit`] as `timeout`: for code that is the sandbox's
/// wall-clock limit plus its kill grace, so a worker is only abandoned when its sandbox has
/// overrun its own limit (a run that the sandbox already kills).
///
/// An item still running when its time is up gets [`Outcome::Timeout`] (reward 0) and its worker
/// is abandoned: a fresh worker takes over the queue, so a hostile item never stalls the batch.
/// The abandoned thread finishes its item in the background and exits (the math verifier bounds
/// its own work; the code verifier kills its processes at the sandbox's limit). A replacement
/// never adds a sandbox beyond the cap: each [`crate::sandbox::Sandbox`] runs at most
/// [`crate::sandbox::Sandbox::max_live`] checks at once and makes the next one wait for a slot.
/// Once the batch is done, abandoned workers take no further item. Output is in input order.
pub fn verify_batch(
    verifier: Arc<dyn Verifier>,
    items: &[(String, Reference)],
    timeout: Duration,
) -> Vec<Verdict> {
    let n = items.len();
    if n == 0 {
        return Vec::new();
    }
    let shared = Arc::new(Shared {
        items: items.to_vec(),
        next: AtomicUsize::new(0),
        started: Mutex::new(vec![None; n]),
        stop: AtomicBool::new(false),
    });
    let (tx, rx) = mpsc::channel::<(usize, Verdict)>();
    let workers =
        (WORKERS_PER_CPU * std::thread::available_parallelism().map_or(2, |p| p.get())).min(n);
    for _ in 0..workers {
        spawn_worker(&shared, &verifier, &tx);
    }
    let mut out: Vec<Option<Verdict>> = vec![None; n];
    let mut done = 0;
    while done < n {
        match rx.recv_timeout(WATCH_TICK) {
            Ok((i, verdict)) => {
                if out[i].is_none() {
                    out[i] = Some(verdict);
                    done += 1;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now = Instant::now();
        let mut late = Vec::new();
        if let Ok(started) = shared.started.lock() {
            for (i, s) in started.iter().enumerate() {
                if out[i].is_none() && s.is_some_and(|t| now.duration_since(t) > timeout) {
                    late.push(i);
                }
            }
        }
        for i in late {
            out[i] = Some(Verdict::zero(
                Outcome::Timeout,
                format!(
                    "item ran past the batch limit of {:.1} s",
                    timeout.as_secs_f64()
                ),
            ));
            done += 1;
            // The worker holding item i is stuck; replace it so the queue keeps moving.
            spawn_worker(&shared, &verifier, &tx);
        }
    }
    shared.stop.store(true, Ordering::Relaxed);
    out.into_iter()
        .map(|v| v.unwrap_or_else(|| Verdict::zero(Outcome::Error, "worker thread died")))
        .collect()
}

struct Shared {
    items: Vec<(String, Reference)>,
    next: AtomicUsize,
    started: Mutex<Vec<Option<Instant>>>,
    stop: AtomicBool,
}

fn spawn_worker(
    shared: &Arc<Shared>,
    verifier: &Arc<dyn Verifier>,
    tx: &mpsc::Sender<(usize, Verdict)>,
) {
    let (shared, verifier, tx) = (Arc::clone(shared), Arc::clone(verifier), tx.clone());
    std::thread::spawn(move || {
        while !shared.stop.load(Ordering::Relaxed) {
            let i = shared.next.fetch_add(1, Ordering::Relaxed);
            let Some((response, reference)) = shared.items.get(i) else {
                return;
            };
            if let Ok(mut started) = shared.started.lock() {
                started[i] = Some(Instant::now());
            }
            let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                verifier.verify(response, reference)
            }))
            .unwrap_or_else(|_| Verdict::zero(Outcome::Error, "verifier panicked"));
            if tx.send((i, verdict)).is_err() {
                return;
            }
        }
    });
}
