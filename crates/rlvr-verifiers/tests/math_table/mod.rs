//! The table runner shared by the math-verifier case files: each case is one line
//! `(response, gold, expected)`, checked through the public `Verifier` API.

use rlvr_verifiers::{MathConfig, MathVerifier, Reference, Verifier};

pub fn verifier() -> MathVerifier {
    MathConfig::default().init().expect("default config")
}

pub fn check(v: &MathVerifier, response: &str, gold: &str, expected: bool) -> Option<String> {
    let verdict = v.verify(
        response,
        &Reference::Math {
            answer: gold.to_string(),
        },
    );
    (verdict.passed != expected).then(|| {
        format!(
            "response {response:?} vs gold {gold:?}: expected {expected}, got {:?} {}",
            verdict.outcome, verdict.details
        )
    })
}

pub fn run(table: &[(&str, &str, bool)]) {
    let v = verifier();
    let failures: Vec<String> = table
        .iter()
        .filter_map(|(r, g, e)| check(&v, r, g, *e))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}
