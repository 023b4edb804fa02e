//! Rubric verifier: each criterion kind, weighting, and the LLM judge against a local HTTP server
//! started by the test.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

use rlvr_verifiers::rubric::JudgeConfig;
use rlvr_verifiers::{Criterion, Outcome, Reference, RubricConfig, Verifier};
use serde_json::json;

fn rubric(criteria: serde_json::Value) -> Reference {
    Reference::from_record(rlvr_verifiers::Kind::Rubric, &json!({ "rubric": criteria }))
        .expect("rubric parses")
}

fn score(response: &str, criteria: serde_json::Value) -> rlvr_verifiers::Verdict {
    RubricConfig::default()
        .init()
        .unwrap()
        .verify(response, &rubric(criteria))
}

#[test]
fn each_kind_scores_one_or_zero() {
    // (response, criterion, expected score)
    let cases = [
        (
            "see [1] and [2]",
            json!({"id": "r", "kind": "regex", "pattern": "\\[\\d+\\]"}),
            1.0,
        ),
        (
            "no refs",
            json!({"id": "r", "kind": "regex", "pattern": "\\[\\d+\\]"}),
            0.0,
        ),
        (
            "Hello World",
            json!({"id": "c", "kind": "contains", "text": "world", "case_insensitive": true}),
            1.0,
        ),
        (
            "Hello World",
            json!({"id": "c", "kind": "contains", "text": "world"}),
            0.0,
        ),
        (
            "polite text",
            json!({"id": "n", "kind": "not_contains", "text": "idiot"}),
            1.0,
        ),
        (
            "you IDIOT",
            json!({"id": "n", "kind": "not_contains", "text": "idiot", "case_insensitive": true}),
            0.0,
        ),
        (
            "The answer is 4.255.",
            json!({"id": "x", "kind": "numeric", "value": 4.25, "tolerance": 0.01}),
            1.0,
        ),
        (
            "The answer is 4.3.",
            json!({"id": "x", "kind": "numeric", "value": 4.25, "tolerance": 0.01}),
            0.0,
        ),
        (
            "#### 1,234",
            json!({"id": "x", "kind": "numeric", "value": 1234}),
            1.0,
        ),
        (
            "\\boxed{\\frac{1}{4}}",
            json!({"id": "x", "kind": "numeric", "value": 0.25}),
            1.0,
        ),
        (
            "no number",
            json!({"id": "x", "kind": "numeric", "value": 1}),
            0.0,
        ),
        (
            "one two three",
            json!({"id": "l", "kind": "length", "min": 2, "max": 3, "unit": "words"}),
            1.0,
        ),
        (
            "one two three four",
            json!({"id": "l", "kind": "length", "max": 3, "unit": "words"}),
            0.0,
        ),
        ("abc", json!({"id": "l", "kind": "length", "min": 4}), 0.0),
        (
            "```json\n{\"a\": 1}\n```",
            json!({"id": "j", "kind": "json_schema", "schema": {"type": "object", "required": ["a"]}}),
            1.0,
        ),
        (
            "Result: {\"a\": \"x\"} done",
            json!({"id": "j", "kind": "json_schema", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}),
            0.0,
        ),
        (
            "not json",
            json!({"id": "j", "kind": "json_schema", "schema": {}}),
            0.0,
        ),
    ];
    for (response, criterion, want) in cases {
        let v = score(response, json!([criterion.clone()]));
        assert_eq!(
            f64::from(v.reward),
            want,
            "{response:?} {criterion}: {}",
            v.details
        );
    }
}

#[test]
fn weighted_sum_is_normalized() {
    // Weights 3 (holds) and 1 (fails): reward = 3 / (3 + 1) = 0.75.
    let v = score(
        "alpha",
        json!([
            {"id": "a", "weight": 3, "kind": "contains", "text": "alpha"},
            {"id": "b", "weight": 1, "kind": "contains", "text": "beta"},
        ]),
    );
    assert_eq!((v.reward, v.outcome), (0.75, Outcome::Partial));
    assert_eq!(v.details["criteria"][1]["score"], 0.0);
    let v = score(
        "alpha beta",
        json!([
            {"id": "a", "weight": 3, "kind": "contains", "text": "alpha"},
            {"id": "b", "kind": "contains", "text": "beta"},
        ]),
    );
    assert_eq!((v.reward, v.outcome), (1.0, Outcome::Correct));
    let v = score(
        "gamma",
        json!([{"id": "a", "kind": "contains", "text": "alpha"}]),
    );
    assert_eq!((v.reward, v.outcome), (0.0, Outcome::Wrong));
}

#[test]
fn invalid_rubrics_are_errors_not_panics() {
    assert_eq!(score("x", json!([])).outcome, Outcome::Error);
    assert_eq!(
        score(
            "x",
            json!([{"id": "w", "weight": 0, "kind": "contains", "text": "x"}])
        )
        .outcome,
        Outcome::Error
    );
    let bad = score("x", json!([{"id": "r", "kind": "regex", "pattern": "("}]));
    assert_eq!(bad.outcome, Outcome::Error);
    assert!(
        bad.details["criteria"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("bad regex")
    );
    let err = Reference::from_record(
        rlvr_verifiers::Kind::Rubric,
        &json!({"rubric": [{"id": "x", "kind": "telepathy"}]}),
    )
    .unwrap_err();
    assert!(err.contains("telepathy") && err.contains("regex"), "{err}");
    let no_judge = score(
        "x",
        json!([{"id": "j", "kind": "llm_judge", "question": "ok?"}]),
    );
    assert_eq!(no_judge.outcome, Outcome::Error);
}

/// Serves one chat-completions request with `reply` as the assistant message; sends the raw
/// request text back over the channel.
fn one_shot_server(reply: &'static str) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("accept");
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        // Read headers, then the body by Content-Length.
        loop {
            let n = conn.read(&mut chunk).expect("read");
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if body.len() >= len {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        let body =
            json!({"choices": [{"message": {"role": "assistant", "content": reply}}]}).to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        conn.write_all(response.as_bytes()).expect("write");
        tx.send(String::from_utf8_lossy(&buf).to_string())
            .expect("send");
    });
    (url, rx)
}

#[test]
fn llm_judge_calls_the_configured_endpoint() {
    let (url, rx) = one_shot_server("0.8");
    let config = RubricConfig {
        judge: Some(JudgeConfig {
            base_url: url,
            model: "judge-mini".into(),
            api_key: Some("sk-test".into()),
            api_key_env: None,
            timeout_s: 10.0,
        }),
    };
    let v = config.init().unwrap();
    let verdict = v.verify("The sky is blue because of Rayleigh scattering.", &rubric(json!([
        {"id": "judge", "weight": 1, "kind": "llm_judge", "question": "Is the explanation correct?"},
        {"id": "short", "weight": 1, "kind": "length", "max": 1000},
    ])));
    // (0.8 * 1 + 1 * 1) / 2 = 0.9.
    assert!((verdict.reward - 0.9).abs() < 1e-6, "{}", verdict.details);
    let request = rx.recv().expect("request seen");
    assert!(
        request.starts_with("POST /v1/chat/completions HTTP/1.1"),
        "{request}"
    );
    assert!(request.contains("Authorization: Bearer sk-test"));
    assert!(request.contains("\"model\":\"judge-mini\""));
    assert!(request.contains("Rayleigh scattering"));
    assert!(request.contains("Is the explanation correct?"));
}

#[test]
fn unreachable_judge_is_an_error_detail() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let config = RubricConfig {
        judge: Some(JudgeConfig {
            base_url: url,
            model: "m".into(),
            api_key: None,
            api_key_env: None,
            timeout_s: 2.0,
        }),
    };
    let verdict = config.init().unwrap().verify(
        "x",
        &rubric(json!([
            {"id": "judge", "kind": "llm_judge", "question": "ok?"},
            {"id": "c", "kind": "contains", "text": "x"},
        ])),
    );
    assert_eq!(verdict.reward, 0.5);
    assert!(
        verdict.details["criteria"][0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("error:")
    );
    let bad = RubricConfig {
        judge: Some(JudgeConfig {
            base_url: "https://x".into(),
            model: "m".into(),
            api_key: None,
            api_key_env: None,
            timeout_s: 1.0,
        }),
    };
    assert!(
        bad.init()
            .unwrap_err()
            .to_string()
            .contains("rubric.judge.base_url")
    );
}

#[test]
fn criteria_roundtrip_through_serde() {
    let c: Criterion =
        serde_json::from_value(json!({"id": "a", "kind": "contains", "text": "x"})).unwrap();
    assert_eq!(c.weight, 1.0);
    let back = serde_json::to_value(&c).unwrap();
    assert_eq!(back["kind"], "contains");
}
