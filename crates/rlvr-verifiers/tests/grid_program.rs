//! The grid-program verifier through the public API: records in each mode, answers checked by
//! execution (hand-computed), proposals by validity, and inconsistent records refused.

use rlvr_verifiers::{Kind, Outcome, Reference, VerifierConfig};
use serde_json::{Value, json};

fn verdict(record: &Value, response: &str) -> (bool, Outcome) {
    let v = VerifierConfig::default_for(Kind::GridProgram)
        .build()
        .unwrap();
    let r = Reference::from_record(Kind::GridProgram, record).unwrap();
    v.check_reference(&r).unwrap();
    let out = v.verify(response, &r);
    (out.passed, out.outcome)
}

#[test]
fn answers_are_checked_by_running_the_program() {
    // DRR from 55: 54, 64, 74.
    let d = json!({"mode": "deduction", "program": "DRR", "inputs": ["55"], "outputs": ["74"]});
    assert_eq!(verdict(&d, "74;"), (true, Outcome::Correct));
    assert_eq!(verdict(&d, " 74 ; more"), (true, Outcome::Correct));
    assert_eq!(verdict(&d, "64;"), (false, Outcome::Wrong));
    assert_eq!(verdict(&d, "74"), (false, Outcome::Unparseable));
    let a = json!({"mode": "abduction", "program": "DRR", "inputs": ["55"], "outputs": ["74"]});
    assert!(verdict(&a, "55;").0);
    assert!(!verdict(&a, "74;").0);
    // RRD: 11 → 21, 31, 30 and 55 → 65, 75, 74. Any program mapping both pairs counts; RRDD
    // leaves the grid from 11 (y = −1).
    let i = json!({"mode": "induction", "program": "RRD", "inputs": ["11", "55"],
        "outputs": ["30", "74"]});
    for ok in ["RRD;", "DRR;", "RDR;", "RRDLR;"] {
        assert!(verdict(&i, ok).0, "{ok}");
    }
    for bad in ["RR;", "RRDD;", "RRDX;", "RRDRRRR;"] {
        assert!(!verdict(&i, bad).0, "{bad}");
    }
}

#[test]
fn proposals_are_scored_by_validity() {
    let p = json!({"mode": "propose_induction"});
    assert!(verdict(&p, "RRU 23 51;").0);
    assert!(!verdict(&p, "RRU 23 23;").0, "the inputs must differ");
    assert!(!verdict(&p, "RRU 23;").0, "induction needs two inputs");
    let p = json!({"mode": "propose_deduction"});
    assert!(verdict(&p, "UUU 06;").0);
    assert!(!verdict(&p, "UUUU 06;").0, "leaves the grid at y = 10");
}

#[test]
fn inconsistent_records_are_refused() {
    let v = VerifierConfig::default_for(Kind::GridProgram)
        .build()
        .unwrap();
    for (record, needle) in [
        (
            json!({"mode": "deduction", "program": "RRU", "inputs": ["23"], "outputs": ["43"]}),
            "does not map",
        ),
        (
            json!({"mode": "induction", "program": "RRU", "inputs": ["23"], "outputs": ["44"]}),
            "2 input",
        ),
        (
            json!({"mode": "deduction", "program": "RRU", "inputs": ["2"], "outputs": ["44"]}),
            "not a point",
        ),
    ] {
        let r = Reference::from_record(Kind::GridProgram, &record).unwrap();
        let err = v.check_reference(&r).unwrap_err();
        assert!(err.contains(needle), "{record}: {err}");
    }
    let err = Reference::from_record(Kind::GridProgram, &json!({"mode": "guess"})).unwrap_err();
    assert!(err.contains("mode"), "{err}");
    let err = Reference::from_record(Kind::GridProgram, &json!({"program": "R"})).unwrap_err();
    assert!(err.contains("mode"), "{err}");
}
