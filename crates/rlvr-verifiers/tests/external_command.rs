//! `kind = "command"`: a long-lived reward program over JSON Lines, against the peer program
//! `tests/peers/reward_program.py` and the shipped `examples/rewards/exact_answer.py`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rlvr_verifiers::{
    CommandConfig, Error, Kind, MathConfig, Outcome, Reference, Verdict, Verifier, VerifierConfig,
    verify_batch,
};
use serde_json::json;

fn peer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/reward_program.py")
}

fn config(timeout_s: f64, processes: usize) -> CommandConfig {
    CommandConfig {
        command: vec!["python3".into(), peer().display().to_string()],
        timeout_s,
        processes,
    }
}

fn record(answer: &str) -> Reference {
    Reference::from_record(
        Kind::Command,
        &json!({"id": "t-1", "prompt": "2+2=", "answer": answer}),
    )
    .unwrap()
}

fn pid(v: &Verdict) -> u64 {
    v.details["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("no pid in {v:?}"))
}

fn reason(v: &Verdict) -> String {
    v.details["reason"].as_str().unwrap_or_default().to_string()
}

#[test]
fn good_replies_carry_the_record_and_the_response() {
    let v = config(10.0, 2).init().unwrap();
    let right = v.verify("4", &record("4"));
    assert_eq!(
        (right.reward, right.passed, right.outcome),
        (1.0, true, Outcome::Correct)
    );
    // The request is the record's fields plus the response.
    assert_eq!(
        right.details["keys"],
        json!(["answer", "id", "prompt", "response"])
    );
    let wrong = v.verify("5", &record("4"));
    assert_eq!(
        (wrong.reward, wrong.passed, wrong.outcome),
        (0.0, false, Outcome::Wrong)
    );
    // One long-lived process served both.
    assert_eq!(pid(&right), pid(&wrong));
    assert_eq!(v.idle_processes(), 1);
    // A reference of another kind is an error verdict, not a request.
    let other = v.verify("4", &Reference::Math { answer: "4".into() });
    assert_eq!(other.outcome, Outcome::Error);
}

#[test]
fn a_slow_reply_times_out_and_the_pool_recovers() {
    let v = config(0.5, 1).init().unwrap();
    let before = pid(&v.verify("4", &record("4")));
    let started = std::time::Instant::now();
    let slow = v.verify("sleep:30", &record("4"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (slow.reward, slow.outcome),
        (0.0, Outcome::Timeout),
        "{slow:?}"
    );
    assert!(reason(&slow).contains("no reply within 0.5 s"), "{slow:?}");
    let after = v.verify("4", &record("4"));
    assert_eq!(after.outcome, Outcome::Correct, "{after:?}");
    assert_ne!(pid(&after), before, "the timed-out process was replaced");
}

#[test]
fn a_crash_is_a_verdict_with_the_stderr_tail_and_a_restart() {
    let v = config(10.0, 1).init().unwrap();
    let before = pid(&v.verify("4", &record("4")));
    let crash = v.verify("crash", &record("4"));
    assert_eq!(
        (crash.reward, crash.outcome),
        (0.0, Outcome::Crashed),
        "{crash:?}"
    );
    let why = reason(&crash);
    assert!(why.contains("exit status: 3"), "{why}");
    assert!(
        why.contains(&format!("dying words from pid {before}")),
        "{why}"
    );
    assert!(
        crash.details["stderr"]
            .as_str()
            .unwrap()
            .contains("dying words")
    );
    let after = v.verify("4", &record("4"));
    assert_eq!(after.outcome, Outcome::Correct, "{after:?}");
    assert_ne!(pid(&after), before);
}

#[test]
fn garbage_and_out_of_range_replies_are_error_verdicts() {
    let v = config(10.0, 1).init().unwrap();
    let before = pid(&v.verify("4", &record("4")));
    let garbage = v.verify("garbage", &record("4"));
    assert_eq!(
        (garbage.reward, garbage.outcome),
        (0.0, Outcome::Error),
        "{garbage:?}"
    );
    assert!(
        reason(&garbage).contains("not JSON") && reason(&garbage).contains("this is not json"),
        "{garbage:?}"
    );
    let mid = pid(&v.verify("4", &record("4")));
    assert_ne!(mid, before, "a process that broke the protocol is replaced");
    let range = v.verify("range", &record("4"));
    assert_eq!(
        (range.reward, range.outcome),
        (0.0, Outcome::Error),
        "{range:?}"
    );
    assert!(
        reason(&range).contains("2.5 is outside [0, 1]"),
        "{range:?}"
    );
}

#[test]
fn many_items_in_parallel_through_a_small_pool_in_order() {
    let verifier: Arc<dyn Verifier> = Arc::new(config(10.0, 2).init().unwrap());
    let items: Vec<(String, Reference)> = (0..300usize)
        .map(|i| {
            let answer = (i * 7).to_string();
            // Every third response is wrong.
            let response = if i.is_multiple_of(3) {
                format!("{}", i * 7 + 1)
            } else {
                answer.clone()
            };
            (response, record(&answer))
        })
        .collect();
    let verdicts = verify_batch(verifier, &items, Duration::from_secs(30));
    assert_eq!(verdicts.len(), 300);
    for (i, v) in verdicts.iter().enumerate() {
        let want = if i.is_multiple_of(3) { 0.0 } else { 1.0 };
        assert_eq!(v.reward, want, "item {i}: {v:?}");
    }
    let pids: BTreeSet<u64> = verdicts.iter().map(pid).collect();
    let workers = 2 * std::thread::available_parallelism().map_or(2, |p| p.get());
    assert!(
        !pids.is_empty() && pids.len() <= workers,
        "{} processes for {workers} workers",
        pids.len()
    );
}

#[test]
fn a_stuck_item_in_a_batch_does_not_stall_the_others() {
    let verifier: Arc<dyn Verifier> = Arc::new(config(1.0, 4).init().unwrap());
    let mut items: Vec<(String, Reference)> = (0..20).map(|_| ("4".into(), record("4"))).collect();
    items[3].0 = "sleep:30".into();
    items[11].0 = "crash".into();
    let started = std::time::Instant::now();
    let verdicts = verify_batch(verifier, &items, Duration::from_secs(20));
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(verdicts[3].outcome, Outcome::Timeout);
    assert_eq!(verdicts[11].outcome, Outcome::Crashed);
    let good = verdicts
        .iter()
        .filter(|v| v.outcome == Outcome::Correct)
        .count();
    assert_eq!(good, 18);
}

#[test]
fn a_program_that_cannot_start_is_a_config_error() {
    let missing = CommandConfig {
        command: vec!["/nonexistent/reward-program".into()],
        ..config(10.0, 1)
    };
    match missing.init() {
        Err(Error::InvalidConfig { field, reason }) => {
            assert_eq!(field, "verifier.command");
            assert!(reason.contains("cannot start"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let no_script = CommandConfig {
        command: vec!["python3".into(), "/nonexistent/reward.py".into()],
        ..config(10.0, 1)
    };
    match no_script.init() {
        Err(Error::InvalidConfig { field, reason }) => {
            assert_eq!(field, "verifier.command");
            assert!(
                reason.contains("exited at start") && reason.contains("/nonexistent/reward.py"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    let empty = CommandConfig {
        command: vec![],
        ..config(10.0, 1)
    };
    assert!(
        empty
            .init()
            .unwrap_err()
            .to_string()
            .contains("`verifier.command`")
    );
}

/// The shipped example agrees with the math verifier (`fallback = "last_number"`, the default
/// run's) on responses of the kinds the bundled model writes for datasets/arith/test.jsonl: the
/// answer, the answer then `;`, a wrong number, the answer followed by a worked problem the
/// way the training completions continue (cut at 8 characters), and nothing.
#[test]
fn the_python_example_agrees_with_the_math_verifier_on_the_arith_task() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let records = rlvr_verifiers::read_jsonl(&root.join("datasets/arith/test.jsonl")).unwrap();
    assert_eq!(records.len(), 500);
    let example = CommandConfig {
        command: vec![
            "python3".into(),
            root.join("examples/rewards/exact_answer.py")
                .display()
                .to_string(),
        ],
        timeout_s: 10.0,
        processes: 0,
    };
    let command: Arc<dyn Verifier> = Arc::new(example.init().unwrap());
    let math_config = VerifierConfig::Math(MathConfig::default());
    let math: Arc<dyn Verifier> = Arc::from(math_config.build().unwrap());
    let (mut command_items, mut math_items) = (Vec::new(), Vec::new());
    for (k, r) in records.iter().enumerate() {
        let answer = r["answer"].as_str().unwrap();
        let value: i64 = answer.parse().unwrap();
        let next = &records[(k + 1) % records.len()];
        let continued = format!(
            "{answer};{}{}",
            next["prompt"].as_str().unwrap(),
            next["answer"].as_str().unwrap()
        );
        for response in [
            answer.to_string(),
            format!("{answer};"),
            (value + 1).to_string(),
            (value - 10).to_string(),
            continued.chars().take(8).collect::<String>(),
            format!("{answer};{}", value + 3),
            String::new(),
        ] {
            command_items.push((
                response.clone(),
                Reference::from_record(Kind::Command, r).unwrap(),
            ));
            math_items.push((response, Reference::from_record(Kind::Math, r).unwrap()));
        }
    }
    let by_command = verify_batch(command, &command_items, Duration::from_secs(20));
    let by_math = verify_batch(math, &math_items, Duration::from_secs(20));
    let mut correct = 0;
    for ((c, m), (response, _)) in by_command.iter().zip(&by_math).zip(&command_items) {
        assert_eq!(
            (c.reward, c.passed, c.outcome),
            (m.reward, m.passed, m.outcome),
            "response {response:?}: python {c:?}, math {m:?}"
        );
        correct += usize::from(c.passed);
    }
    // Both read the bare answers, `answer;` and the cut continuations whose last number is the
    // answer as correct; a sanity floor that fails if everything were scored 0.
    assert!(correct >= 1000, "{correct}");
}
