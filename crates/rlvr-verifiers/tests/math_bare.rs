//! The hand-labelled equivalence set `tests/math_table/bare_answers.tsv`, checked through the
//! public `Verifier` API in two forms: the answer alone (a bare response) and inside a response.
//!
//! The labels are a grader's judgement written by hand, not the verifier's output. The test
//! asserts at least 97 % agreement on the unambiguous rows in each form, no wrong answer rewarded
//! among the adversarial rows (`negative`), and false passes no more common than false fails.
//! `cargo test -p rlvr-verifiers --test math_bare -- --nocapture` prints the table and every
//! disagreement.

use rlvr_verifiers::{MathConfig, Reference, Verifier};

/// One labelled row.
struct Case {
    line: usize,
    category: String,
    gold: String,
    answer: String,
    /// `Some(true)` accept, `Some(false)` reject, `None` ambiguous.
    label: Option<bool>,
    response: String,
}

/// The in-response templates, by row number mod 3 (the same as in the data file's header and
/// in `math_verify_agreement.py`).
fn template(row: usize, answer: &str) -> String {
    match row % 3 {
        0 => format!(
            "Let me work through this carefully.\n\nTherefore, the final answer is $\\boxed{{{answer}}}$."
        ),
        1 => format!("We simplify step by step. So the answer is ${answer}$."),
        _ => format!("Putting the pieces together, we obtain ${answer}$."),
    }
}

fn cases() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/math_table/bare_answers.tsv"
    );
    let text = std::fs::read_to_string(path).expect("data file");
    let mut out = Vec::new();
    for (k, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert!(
            (4..=5).contains(&cols.len()),
            "line {}: {} columns",
            k + 1,
            cols.len()
        );
        let label = match cols[3] {
            "y" => Some(true),
            "n" => Some(false),
            "?" => None,
            other => panic!("line {}: label {other:?}", k + 1),
        };
        let row = out.len();
        let response = cols
            .get(4)
            .map_or_else(|| template(row, cols[2]), |r| r.replace("<br>", "\n"));
        out.push(Case {
            line: k + 1,
            category: cols[0].to_string(),
            gold: cols[1].to_string(),
            answer: cols[2].to_string(),
            label,
            response,
        });
    }
    out
}

#[derive(Default)]
struct Tally {
    agree: usize,
    false_pass: usize,
    false_fail: usize,
    ambiguous_pass: usize,
    ambiguous: usize,
}

impl Tally {
    fn unambiguous(&self) -> usize {
        self.agree + self.false_pass + self.false_fail
    }
    fn rate(&self) -> f64 {
        self.agree as f64 / self.unambiguous() as f64
    }
}

#[test]
fn hand_labelled_set_bare_and_in_response() {
    let v = MathConfig::default().init().expect("default config");
    let cases = cases();
    assert!(cases.len() >= 300, "{} cases", cases.len());
    let mut tallies = [Tally::default(), Tally::default()];
    let mut misses = Vec::new();
    let mut negative_false_passes = 0;
    for c in &cases {
        let reference = Reference::Math {
            answer: c.gold.clone(),
        };
        for (form, response) in [("bare", c.answer.as_str()), ("response", &c.response)]
            .into_iter()
            .enumerate()
        {
            let verdict = v.verify(response.1, &reference);
            let t = &mut tallies[form];
            match c.label {
                None => {
                    t.ambiguous += 1;
                    t.ambiguous_pass += usize::from(verdict.passed);
                }
                Some(want) if want == verdict.passed => t.agree += 1,
                Some(want) => {
                    if want {
                        t.false_fail += 1;
                    } else {
                        t.false_pass += 1;
                        negative_false_passes += usize::from(c.category == "negative");
                    }
                    misses.push(format!(
                        "line {} [{}] {}: {:?} vs gold {:?}: want {want}, got {:?} {}",
                        c.line,
                        c.category,
                        response.0,
                        response.1,
                        c.gold,
                        verdict.outcome,
                        verdict.details
                    ));
                }
            }
        }
    }
    for (name, t) in ["bare", "in a response"].iter().zip(&tallies) {
        println!(
            "{name:>14}: {}/{} agree ({:.1} %), {} false passes, {} false fails; ambiguous {}/{} passed",
            t.agree,
            t.unambiguous(),
            100.0 * t.rate(),
            t.false_pass,
            t.false_fail,
            t.ambiguous_pass,
            t.ambiguous
        );
    }
    for m in &misses {
        println!("{m}");
    }
    for (name, t) in ["bare", "in a response"].iter().zip(&tallies) {
        assert!(
            t.rate() >= 0.97,
            "{name}: agreement {:.3} < 0.97\n{}",
            t.rate(),
            misses.join("\n")
        );
        assert!(
            t.false_pass <= t.false_fail,
            "{name}: {} false passes > {} false fails\n{}",
            t.false_pass,
            t.false_fail,
            misses.join("\n")
        );
    }
    assert_eq!(
        negative_false_passes,
        0,
        "adversarial rows rewarded:\n{}",
        misses.join("\n")
    );
}

/// A bare response is read whole; it passes when it states the gold, and an unevaluated form of
/// a numeral gold (`10^3` for 1000) is read but refused (math/final_form.rs).
#[test]
fn bare_answers_are_read_whole() {
    let v = MathConfig::default().init().expect("default config");
    for (response, gold, pass) in [
        ("\\frac{1}{2}", "\\frac{1}{2}", true),
        ("1 234 567", "1234567", true),
        ("10^3", "1000", false),
        ("\\sqrt{25}", "5", false),
        ("10^3", "10^3", true),
        ("\\sqrt{8}", "2\\sqrt{2}", true),
    ] {
        let verdict = v.verify(
            response,
            &Reference::Math {
                answer: gold.into(),
            },
        );
        assert_eq!(verdict.passed, pass, "{response:?}: {}", verdict.details);
        assert_eq!(verdict.details["source"], "bare", "{response:?}");
    }
}

#[test]
fn floods_of_alternatives_are_not_rewarded() {
    let v = MathConfig::default().init().expect("default config");
    let gold = Reference::Math {
        answer: "100".into(),
    };
    let numbers: Vec<String> = (1..=100).map(|n| n.to_string()).collect();
    for response in [
        numbers.join(" "),
        numbers.join(", "),
        numbers.join("\n"),
        numbers.join(" or "),
        format!("It is one of {}", numbers.join(", ")),
        numbers
            .iter()
            .map(|n| format!("${n}$"))
            .collect::<Vec<_>>()
            .join(" or "),
        numbers
            .iter()
            .map(|n| format!("\\boxed{{{n}}}"))
            .collect::<Vec<_>>()
            .join(", "),
        format!("{} 100", "1 or ".repeat(3_000)),
    ] {
        let verdict = v.verify(&response, &gold);
        assert!(
            !verdict.passed,
            "rewarded: {:?}… {}",
            &response[..60.min(response.len())],
            verdict.details
        );
    }
    // The same answer alone still passes.
    assert!(v.verify("100", &gold).passed);
}
