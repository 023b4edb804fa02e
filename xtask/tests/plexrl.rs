//! `cargo xtask plexrl` end to end on the committed timelines (xtask/fixtures/plexrl): the
//! command reads real `metrics.jsonl` files, and each option changes what it reports.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/plexrl")
        .join(name)
}

/// Runs `xtask plexrl ARGS --json FILE` and returns the JSON report.
fn plexrl(tag: &str, args: &[&str]) -> Value {
    let out = std::env::temp_dir().join(format!("plexrl-{}-{tag}.json", std::process::id()));
    let status = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("plexrl")
        .args(args)
        .arg("--json")
        .arg(&out)
        .output()
        .expect("xtask runs");
    assert!(
        status.status.success(),
        "xtask plexrl {args:?} failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let text = std::fs::read_to_string(&out).expect("the JSON report");
    std::fs::remove_file(&out).ok();
    serde_json::from_str(&text).expect("valid JSON")
}

fn result<'a>(report: &'a Value, scenario: usize, policy: &str) -> &'a Value {
    report["scenarios"][scenario]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["policy"] == policy)
        .unwrap_or_else(|| panic!("no {policy} result"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// The timeline's verify + host share, summed from the fixture independently of the parser.
fn measured_idle_share(name: &str) -> f64 {
    let text = std::fs::read_to_string(fixture(name).join("metrics.jsonl")).unwrap();
    let (mut step, mut busy) = (0.0, 0.0);
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let get = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        step += get("time/step_s");
        busy += get("time/rollout_s")
            + get("time/update_s")
            + get("time/token_credit_s")
            + get("time/weight_sync_s");
    }
    1.0 - busy / step
}

#[test]
fn plexrl_command_on_the_default_mix() {
    let r = plexrl("default", &[]);
    let names: Vec<&str> = r["timelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default-arith", "cepo-arith"]);
    let idle = f(&r["timelines"][0]["idle"]);
    assert!(
        (idle - measured_idle_share("default-arith")).abs() < 1e-9,
        "{idle}"
    );
    assert_eq!(r["scenarios"].as_array().unwrap().len(), 1);
    let ded = result(&r, 0, "dedicated");
    assert_eq!(ded["slots"], 4);
    assert_eq!(f(&ded["cluster_saving"]), 0.0);
    for policy in ["fifo", "sff", "anti"] {
        let m = result(&r, 0, policy);
        assert_eq!(m["slots"], 2, "{policy}");
        // Four jobs on half the slots: every job slows down, and billing by function time can
        // save at most the measured idle (under 1 % on these timelines).
        assert!(f(&m["mean_slowdown"]) > 1.2, "{policy}");
        let saving = f(&m["billed_saving"]);
        assert!(saving > 0.0 && saving < 0.01, "{policy}: {saving}");
    }
}

#[test]
fn plexrl_command_options_change_the_result() {
    let job = fixture("smollm2-arith");
    let job = job.to_str().unwrap();
    let a = format!("{job},repeat=1");
    let b = format!("{job},offset=30,name=second");
    let base = [
        "--job",
        &a,
        "--job",
        &b,
        "--slots",
        "1",
        "--policy",
        "dedicated,fifo",
    ];
    let plain = plexrl("plain", &base);
    let fifo = f(&result(&plain, 0, "fifo")["billed_saving"]);
    // Long tail: SmolLM2's responses average 18.8 of 40 tokens, so about half of each rollout
    // becomes free slot time and billing saves more.
    let tail = plexrl("tail", &[&base[..], &["--long-tail"]].concat());
    let fifo_tail = f(&result(&tail, 0, "fifo")["billed_saving"]);
    assert!(fifo_tail > fifo + 0.05, "{fifo} -> {fifo_tail}");
    // Switch overhead: the shared slot pays it, the job finishes later.
    let switch = plexrl("switch", &[&base[..], &["--switch-s", "1"]].concat());
    let (m0, m1) = (
        f(&result(&plain, 0, "fifo")["makespan_s"]),
        f(&result(&switch, 0, "fifo")["makespan_s"]),
    );
    assert!(m1 > m0, "{m0} -> {m1}");
    assert!(f(&result(&switch, 0, "fifo")["switch_slot_s"]) > 0.0);
    // Idle share: one scenario per value, and more idle makes sharing cheaper.
    let idle = plexrl("idle", &[&base[..], &["--idle-share", "0.2,0.6"]].concat());
    let s = |i: usize| f(&result(&idle, i, "fifo")["cluster_saving"]);
    assert_eq!(idle["scenarios"][1]["idle_share"], 0.6);
    assert!(s(1) > s(0) + 0.2, "{} {}", s(0), s(1));
}

#[test]
fn plexrl_command_refuses_bad_input() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("plexrl")
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let bad = fixture("malformed");
    let err = run(&["--job", bad.to_str().unwrap()]);
    assert!(err.contains("malformed/metrics.jsonl:2:"), "{err}");
    let job = fixture("default-arith");
    let big = format!("{},memory=0.75", job.to_str().unwrap());
    let err = run(&[
        "--job", &big, "--job", &big, "--slots", "1", "--policy", "fifo",
    ]);
    assert!(err.contains("needs memory 0.75"), "{err}");
    let err = run(&["--policy", "lifo"]);
    assert!(err.contains("unknown `lifo`"), "{err}");
}
