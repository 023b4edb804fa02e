//! `verify_batch`: order, parallelism and the per-item time limit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rlvr_verifiers::{Outcome, Reference, Verdict, Verifier, verify_batch};

/// Sleeps for the number of milliseconds in the response, then echoes it as a correct verdict.
struct Sleepy;

impl Verifier for Sleepy {
    fn verify(&self, response: &str, _: &Reference) -> Verdict {
        let ms: u64 = response.parse().unwrap_or(0);
        std::thread::sleep(Duration::from_millis(ms));
        Verdict::new(
            1.0,
            Outcome::Correct,
            Some(response.to_string()),
            serde_json::Value::Null,
        )
    }
    fn name(&self) -> &'static str {
        "sleepy"
    }
}

fn items(ms: &[u64]) -> Vec<(String, Reference)> {
    ms.iter()
        .map(|m| {
            (
                m.to_string(),
                Reference::Math {
                    answer: String::new(),
                },
            )
        })
        .collect()
}

#[test]
fn slow_items_time_out_without_stalling_the_batch() {
    // Four items that would hang for 60 s among twenty quick ones; limit 300 ms.
    let mut ms = vec![5u64; 20];
    for k in [0, 1, 7, 19] {
        ms[k] = 60_000;
    }
    let start = Instant::now();
    let out = verify_batch(Arc::new(Sleepy), &items(&ms), Duration::from_millis(300));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "batch stalled: {:?}",
        start.elapsed()
    );
    for (k, v) in out.iter().enumerate() {
        if ms[k] > 1000 {
            assert_eq!((v.outcome, v.reward), (Outcome::Timeout, 0.0), "item {k}");
        } else {
            assert_eq!(v.extracted.as_deref(), Some("5"), "item {k} out of order");
            assert!(v.passed);
        }
    }
}

#[test]
fn empty_batch_and_order() {
    assert!(verify_batch(Arc::new(Sleepy), &[], Duration::from_secs(1)).is_empty());
    let ms: Vec<u64> = (0..30).map(|k| (30 - k) % 7).collect();
    let out = verify_batch(Arc::new(Sleepy), &items(&ms), Duration::from_secs(5));
    let got: Vec<u64> = out
        .iter()
        .map(|v| v.extracted.as_deref().unwrap().parse().unwrap())
        .collect();
    assert_eq!(got, ms);
    // The trait's provided rayon batch keeps order too.
    let out = Sleepy.verify_batch(&items(&ms));
    assert_eq!(out.len(), ms.len());
    assert!(
        out.iter()
            .zip(&ms)
            .all(|(v, m)| v.extracted.as_deref() == Some(&*m.to_string()))
    );
}
