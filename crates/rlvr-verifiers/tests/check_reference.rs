//! `Verifier::check_reference`: the math verifier accepts the gold answers of the datasets it
//! serves (bare answers, LaTeX, GSM8K solutions, MATH solutions) and refuses the ones no
//! response could ever match; the other verifiers keep the default (accept).

use rlvr_verifiers::{MathConfig, Reference, Verifier};

fn math(answer: &str) -> Result<(), String> {
    let v = MathConfig::default().init().unwrap();
    v.check_reference(&Reference::Math {
        answer: answer.into(),
    })
}

#[test]
fn math_accepts_the_gold_forms_of_its_datasets() {
    for gold in [
        "42",
        "-3",
        "0.5",
        "\\frac{1}{2}",
        "\\sqrt{2}",
        "(1, 2)",
        "[0, 1)",
        "x^2 + 1",
        "Evelyn",
        "Natalia sold 48/2 = 24 clips in May.\n#### 72",
        "The sum is $\\boxed{\\frac{3}{4}}$.",
        "\\text{(B)}",
    ] {
        assert_eq!(math(gold), Ok(()), "{gold:?}");
    }
}

#[test]
fn math_refuses_gold_answers_no_response_can_match() {
    for (gold, why) in [
        ("", "empty"),
        ("   ", "empty"),
        ("\\boxed{}", "empty"),
        ("\\boxed{2", "not readable"),
        ("{3", "not readable"),
    ] {
        let err = math(gold).expect_err(gold);
        assert!(
            err.contains(why) && err.contains(&format!("{gold:?}")),
            "{gold:?}: {err}"
        );
    }
}

#[test]
fn math_refuses_a_reference_of_another_kind() {
    let v = MathConfig::default().init().unwrap();
    let code = Reference::from_record(
        rlvr_verifiers::Kind::Code,
        &serde_json::json!({"tests": ["assert f() == 1"]}),
    )
    .unwrap();
    assert!(
        v.check_reference(&code)
            .unwrap_err()
            .contains("math reference")
    );
}
