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

#[test]
fn the_batch_limit_is_the_sandbox_limit_plus_its_kill_grace() {
    use rlvr_verifiers::{CodeConfig, CodeReference, VerifierConfig, sandbox::KILL_GRACE};
    let config = CodeConfig {
        timeout_s: 1.5,
        ..CodeConfig::default()
    };
    let limit = VerifierConfig::Code(config.clone()).item_time_limit();
    assert_eq!(limit, Duration::from_secs_f64(1.5) + KILL_GRACE);
    assert_eq!(
        VerifierConfig::default_for(rlvr_verifiers::Kind::Math).item_time_limit(),
        VerifierConfig::DEFAULT_ITEM_TIME_LIMIT
    );
    // An endless program is stopped by the sandbox itself (its own timeout fired), not
    // abandoned by the batch: the batch's limit leaves room for the kill.
    let verifier: Arc<dyn Verifier> = Arc::new(config.init().expect("sandbox starts"));
    let reference = Reference::Code(CodeReference {
        tests: vec!["assert f() == 1".into()],
        ..CodeReference::default()
    });
    let items = vec![
        (
            "def f():\n    while True:\n        pass\n".to_string(),
            reference.clone(),
        ),
        ("def f():\n    return 1\n".to_string(), reference),
    ];
    let start = Instant::now();
    let out = verify_batch(verifier, &items, limit);
    assert!(start.elapsed() < limit + Duration::from_secs(1));
    assert_eq!(out[0].outcome, Outcome::Timeout);
    assert_eq!(out[0].details["timed_out"], true, "{}", out[0].details);
    assert!(out[1].passed, "{}", out[1].details);
}

#[test]
fn live_sandboxes_are_capped() {
    use rlvr_verifiers::sandbox::{Sandbox, SandboxConfig};
    let sb = Sandbox::new(&SandboxConfig {
        max_live: 2,
        ..SandboxConfig::default()
    })
    .expect("sandbox starts");
    assert_eq!(sb.max_live(), 2);
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (sb, peak, stop) = (sb.clone(), Arc::clone(&peak), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                peak.fetch_max(sb.live(), std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let start = Instant::now();
    let runs: Vec<_> = (0..6)
        .map(|_| {
            let sb = sb.clone();
            std::thread::spawn(move || {
                sb.run("import time\ntime.sleep(0.4)", b"", Duration::from_secs(10))
                    .expect("run")
            })
        })
        .collect();
    for r in runs {
        assert_eq!(r.join().expect("thread").code, Some(0));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    watcher.join().expect("watcher");
    // Six 0.4 s runs, two at a time: three waves.
    assert!(
        start.elapsed() >= Duration::from_millis(1200),
        "{:?}",
        start.elapsed()
    );
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    assert!((1..=2).contains(&peak), "peak {peak}");
    assert_eq!(sb.live(), 0);
}
