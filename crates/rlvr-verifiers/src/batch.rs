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

/// Scores `items` on two worker threads per logical CPU, each call limited to `timeout`.
///
/// Items are handed out in chunks of [`Verifier::chunk_size`] consecutive items (one item for
/// every built-in verifier; a batch of requests for `http`), each scored by one
/// [`Verifier::verify_chunk`] call. The limit applies to each call: one item, or one chunk.
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
    let chunk = verifier.chunk_size().max(1);
    let units = n.div_ceil(chunk);
    let shared = Arc::new(Shared {
        items: items.to_vec(),
        chunk,
        next: AtomicUsize::new(0),
        started: Mutex::new(vec![None; units]),
        stop: AtomicBool::new(false),
    });
    let (tx, rx) = mpsc::channel::<(usize, Verdict)>();
    let workers =
        (WORKERS_PER_CPU * std::thread::available_parallelism().map_or(2, |p| p.get())).min(units);
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
            for (u, s) in started.iter().enumerate() {
                let open = (u * chunk..((u + 1) * chunk).min(n)).any(|i| out[i].is_none());
                if open && s.is_some_and(|t| now.duration_since(t) > timeout) {
                    late.push(u);
                }
            }
        }
        for u in late {
            for slot in &mut out[u * chunk..((u + 1) * chunk).min(n)] {
                if slot.is_none() {
                    *slot = Some(Verdict::zero(
                        Outcome::Timeout,
                        format!(
                            "item ran past the batch limit of {:.1} s",
                            timeout.as_secs_f64()
                        ),
                    ));
                    done += 1;
                }
            }
            // The worker holding unit u is stuck; replace it so the queue keeps moving.
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
    /// Items per unit of work (the verifier's chunk size).
    chunk: usize,
    /// The next unit to hand out.
    next: AtomicUsize,
    /// When each unit started.
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
            let u = shared.next.fetch_add(1, Ordering::Relaxed);
            let first = u.saturating_mul(shared.chunk);
            if first >= shared.items.len() {
                return;
            }
            let end = (first + shared.chunk).min(shared.items.len());
            if let Ok(mut started) = shared.started.lock() {
                started[u] = Some(Instant::now());
            }
            let chunk = &shared.items[first..end];
            let verdicts = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                verifier.verify_chunk(chunk)
            }));
            let verdicts = match verdicts {
                Ok(v) if v.len() == chunk.len() => v,
                Ok(v) => vec![
                    Verdict::zero(
                        Outcome::Error,
                        format!(
                            "verifier returned {} verdicts for a chunk of {} items",
                            v.len(),
                            chunk.len()
                        ),
                    );
                    chunk.len()
                ],
                Err(_) => vec![Verdict::zero(Outcome::Error, "verifier panicked"); chunk.len()],
            };
            for (k, verdict) in verdicts.into_iter().enumerate() {
                if tx.send((first + k, verdict)).is_err() {
                    return;
                }
            }
        }
    });
}
