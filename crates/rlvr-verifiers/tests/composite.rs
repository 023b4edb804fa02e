//! `kind = "composite"` (weights, gates, per-part rewards against hand-computed numbers) and the
//! TOML of the three external kinds, with errors naming the field.

use std::path::Path;

use rlvr_verifiers::{Outcome, Verdict, VerifierConfig};
use serde_json::json;

/// A format check (a bare integer, weight 1) and correctness (weight 3, the gate).
const FORMAT_AND_MATH: &str = r#"
kind = "composite"

[[parts]]
name = "format"
weight = 1.0
kind = "rubric"
fields = { rubric = [{ id = "bare", kind = "regex", pattern = '^-?\d+$' }] }

[[parts]]
name = "correct"
weight = 3.0
gate = true
kind = "math"
fallback = "last_number"
"#;

fn score(toml_text: &str, response: &str, answer: &str) -> Verdict {
    let config: VerifierConfig = toml::from_str(toml_text).unwrap();
    let record = json!({"id": "a", "prompt": "40+9=", "answer": answer});
    let reference = config.reference(&record).unwrap();
    config.build().unwrap().verify(response, &reference)
}

fn parts(v: &Verdict) -> Vec<(String, f32, bool)> {
    v.parts
        .iter()
        .map(|p| (p.name.clone(), p.reward, p.passed))
        .collect()
}

#[test]
fn weighted_sum_gate_and_part_rewards() {
    // (response, format reward, math reward, composite = (1·f + 3·m) / 4, passed = math passed)
    let cases = [
        ("49", 1.0, 1.0, 1.0, true),
        ("48", 1.0, 0.0, 0.25, false),
        ("49;", 0.0, 1.0, 0.75, true),
        ("49;3", 0.0, 0.0, 0.0, false),
    ];
    for (response, f, m, want, passed) in cases {
        let v = score(FORMAT_AND_MATH, response, "49");
        assert_eq!(v.reward, want, "{response}: {v:?}");
        assert_eq!(v.passed, passed, "{response}");
        assert_eq!(
            parts(&v),
            vec![
                ("format".to_string(), f, f == 1.0),
                ("correct".to_string(), m, m == 1.0)
            ],
            "{response}"
        );
        let outcome = if passed {
            Outcome::Correct
        } else if want == 0.0 {
            Outcome::Wrong
        } else {
            Outcome::Partial
        };
        assert_eq!(v.outcome, outcome, "{response}");
        assert_eq!(v.details["parts"][1]["details"]["gold"], "49");
    }
    // Without a gate every part must pass: "49;" is no longer a pass.
    let no_gate = FORMAT_AND_MATH.replace("gate = true\n", "");
    let v = score(&no_gate, "49;", "49");
    assert_eq!(
        (v.reward, v.passed, v.outcome),
        (0.75, false, Outcome::Partial)
    );
    // A weight-0 part is scored and logged but adds nothing.
    let zero = FORMAT_AND_MATH.replace("weight = 1.0", "weight = 0.0");
    let v = score(&zero, "49;", "49");
    assert_eq!(v.reward, 1.0);
    assert_eq!(v.parts[0].reward, 0.0);
}

#[test]
fn a_part_of_each_external_kind_combines_too() {
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/reward_program.py");
    let text = format!(
        r#"
kind = "composite"
[[parts]]
name = "program"
weight = 1
kind = "command"
command = ["python3", "{}"]
fields = {{ answer = "fixed" }}
[[parts]]
name = "math"
weight = 4
kind = "math"
"#,
        peer.display()
    );
    // The program part sees the overridden answer "fixed"; the math part the record's "49".
    let v = score(&text, "fixed", "49");
    assert_eq!(v.reward, 0.2);
    let v = score(&text, "49", "49");
    assert_eq!(v.reward, 0.8);
    assert_eq!(v.parts[0].outcome, Outcome::Wrong);
}

#[test]
fn composite_config_errors_name_the_part_and_field() {
    let build_err = |text: &str| {
        toml::from_str::<VerifierConfig>(text)
            .unwrap()
            .build()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let e = build_err(&FORMAT_AND_MATH.replace("weight = 3.0", "weight = -3.0"));
    assert!(e.contains("`verifier.parts[1].weight`"), "{e}");
    let e = build_err(&FORMAT_AND_MATH.replace("name = \"correct\"", "name = \"format\""));
    assert!(
        e.contains("`verifier.parts[1].name`") && e.contains("twice"),
        "{e}"
    );
    let e = build_err(&FORMAT_AND_MATH.replace("name = \"correct\"", "name = \"a b\""));
    assert!(e.contains("`verifier.parts[1].name`"), "{e}");
    let e = build_err(&FORMAT_AND_MATH.replace("fallback = \"last_number\"", "rel_tol = -1"));
    assert!(e.contains("`verifier.parts[1].math.rel_tol`"), "{e}");
    let e = build_err("kind = \"composite\"\nparts = []");
    assert!(e.contains("`verifier.parts`"), "{e}");
    let e = build_err(
        "kind = \"composite\"\n[[parts]]\nname = \"a\"\nkind = \"command\"\ncommand = []",
    );
    assert!(e.contains("`verifier.parts[0].command`"), "{e}");
    let e = build_err(
        "kind = \"composite\"\n[[parts]]\nname = \"a\"\nkind = \"composite\"\nparts = []",
    );
    assert!(e.contains("`verifier.parts[0].kind`"), "{e}");
    // Unknown knobs of a part's kind are refused by name.
    let e = toml::from_str::<VerifierConfig>(&FORMAT_AND_MATH.replace("fallback", "fallbacks"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("fallbacks"), "{e}");
    // A record without the part's field names the part.
    let config: VerifierConfig = toml::from_str(FORMAT_AND_MATH).unwrap();
    let e = config.reference(&json!({"prompt": "1+1="})).unwrap_err();
    assert!(e.contains("part `correct`") && e.contains("answer"), "{e}");
}

#[test]
fn the_external_kinds_parse_from_toml_and_name_bad_fields() {
    let c: VerifierConfig =
        toml::from_str("kind = \"command\"\ncommand = [\"python3\", \"r.py\"]\ntimeout_s = 2")
            .unwrap();
    assert!(
        matches!(&c, VerifierConfig::Command(c) if c.command == ["python3", "r.py"] && c.timeout_s == 2.0 && c.processes == 0)
    );
    assert_eq!(c.item_time_limit(), std::time::Duration::from_secs(12));
    let c: VerifierConfig = toml::from_str(
        "kind = \"http\"\nurl = \"http://127.0.0.1:5000/get_reward\"\nbatch_size = 8",
    )
    .unwrap();
    assert!(
        matches!(&c, VerifierConfig::Http(h) if h.batch_size == 8 && h.retries == 2 && h.label_field == "answer")
    );
    for (text, needle) in [
        ("kind = \"command\"", "command"),
        (
            "kind = \"command\"\ncommand = [\"x\"]\ntimeout = 1",
            "timeout",
        ),
        ("kind = \"command\"\ncommand = \"python3 r.py\"", "command"),
        ("kind = \"http\"", "url"),
        ("kind = \"http\"\nurl = \"http://h/\"\nbatch = 3", "batch"),
        ("kind = \"composite\"", "parts"),
        ("kind = \"composite\"\n[[parts]]\nkind = \"math\"", "name"),
        ("kind = \"commands\"", "command"),
    ] {
        let e = toml::from_str::<VerifierConfig>(text)
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{text}: {e}");
    }
    let e = toml::from_str::<VerifierConfig>("kind = \"nope\"")
        .unwrap_err()
        .to_string();
    for kind in ["command", "http", "composite"] {
        assert!(e.contains(kind), "{e}");
    }
    for (text, field) in [
        (
            "kind = \"command\"\ncommand = [\"python3\"]\ntimeout_s = 0",
            "verifier.timeout_s",
        ),
        (
            "kind = \"http\"\nurl = \"http://h/x\"\nbatch_size = 0",
            "verifier.batch_size",
        ),
        ("kind = \"http\"\nurl = \"h/x\"", "verifier.url"),
    ] {
        let e = toml::from_str::<VerifierConfig>(text)
            .unwrap()
            .build()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(&format!("`{field}`")), "{text}: {e}");
    }
}

#[test]
fn composite_configs_round_trip_through_toml() {
    let config: VerifierConfig = toml::from_str(FORMAT_AND_MATH).unwrap();
    let text = toml::to_string(&config).unwrap();
    let back: VerifierConfig = toml::from_str(&text).unwrap();
    assert_eq!(back, config, "{text}");
}
