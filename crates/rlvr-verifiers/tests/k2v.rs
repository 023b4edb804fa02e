//! The K2V reward (methods-extra §17) on hand-checked cases: every branch of the answer match,
//! the gate, each tag count, the trailing-text penalty, a bad format, the knobs, and ways a
//! policy could try to score without giving the answer.
//!
//! Every expected value is worked out by hand in the comment beside it, from the spec's rule:
//! score = 6·match + checklist·match + format, format = 0.25 + 0.125 per tag appearing once,
//! − 0.001·n (opening answer tag once) − 0.001·(n − 1) (closing tag once), n = characters after
//! the last closing tag; the verdict's reward is score / 7.751 (6 + 1 + 0.751).

use rlvr_verifiers::k2v::checklist::mentions;
use rlvr_verifiers::{Outcome, Reference, Verdict, Verifier, VerifierConfig};

const MAX: f64 = 7.751;

fn verifier(extra: &str) -> Box<dyn Verifier> {
    let config: VerifierConfig = toml::from_str(&format!("kind = \"k2v\"\n{extra}")).unwrap();
    config.build().unwrap()
}

fn gold() -> Reference {
    Reference::K2v {
        answer: "ZAR".into(),
        adjacent: vec!["VEL".into(), "TUM".into()],
    }
}

fn score(v: &Verdict) -> f64 {
    v.details["k2v"]["score"].as_f64().unwrap()
}

fn term(v: &Verdict, name: &str) -> f64 {
    v.details["k2v"][name].as_f64().unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[track_caller]
fn check(extra: &str, response: &str, want_score: f64, want_max: f64) -> Verdict {
    let v = verifier(extra).verify(response, &gold());
    assert!(
        close(score(&v), want_score),
        "{response:?}: score {} != {want_score}",
        score(&v)
    );
    let want_reward = (want_score / want_max).clamp(0.0, 1.0);
    assert!(
        (f64::from(v.reward) - want_reward).abs() < 1e-6,
        "{response:?}: reward {} != {want_reward}",
        v.reward
    );
    v
}

#[test]
fn a_correct_answer_with_every_criterion_and_a_clean_format_scores_the_maximum() {
    // match 6 + checklist 3/3 = 1 + format 0.25 + 4·0.125 − 0 − 0.001·(0 − 1) = 0.751.
    let v = check(
        "",
        "<think>KOV was born in ZAR, near VEL</think><answer>ZAR</answer>",
        7.751,
        MAX,
    );
    assert_eq!(v.outcome, Outcome::Correct);
    assert!(v.passed);
    assert_eq!(v.extracted.as_deref(), Some("ZAR"));
    assert!(close(term(&v, "format"), 0.751));
    assert_eq!(v.reward, 1.0);
    let parts: Vec<(&str, f32)> = v
        .parts
        .iter()
        .map(|p| (p.name.as_str(), p.reward))
        .collect();
    assert_eq!(
        parts,
        [("answer", 1.0), ("checklist", 1.0), ("format", 1.0)]
    );
}

#[test]
fn the_checklist_counts_each_rule_and_whitespace_between_blocks_is_allowed() {
    // Reasoning "KOV": nonempty yes, adjacent (VEL/TUM) no, answer no → 1/3.
    // 6 + 1/3 + 0.751 = 7.084333...
    let v = check(
        "",
        "<think>KOV</think>\n <answer>ZAR</answer>",
        6.0 + 1.0 / 3.0 + 0.751,
        MAX,
    );
    assert!(close(term(&v, "checklist"), 1.0 / 3.0));
    // "tum" names TUM (case-insensitive, whole word) but "ZARO" does not name ZAR: 2/3.
    let v = check(
        "",
        "<think>ZARO, tum</think><answer>ZAR</answer>",
        6.0 + 2.0 / 3.0 + 0.751,
        MAX,
    );
    assert!(close(term(&v, "checklist"), 2.0 / 3.0));
    // An empty reasoning satisfies nothing: 6 + 0 + 0.751.
    check("", "<think> </think><answer>ZAR</answer>", 6.751, MAX);
}

#[test]
fn a_wrong_answer_gets_no_answer_weight_and_no_checklist_the_gate() {
    // The reasoning satisfies all three rules, but the answer is wrong: only the format 0.751.
    let v = check("", "<think>ZAR VEL</think><answer>BOB</answer>", 0.751, MAX);
    assert_eq!(v.outcome, Outcome::Wrong);
    assert_eq!(term(&v, "checklist"), 0.0);
    assert!(!v.passed);
    // Case counts: "zar" is not "ZAR".
    let v = check("", "<think>x</think><answer>zar</answer>", 0.751, MAX);
    assert_eq!(v.outcome, Outcome::Wrong);
    // Surrounding whitespace inside the block is trimmed: a match (think "x" → 1/3).
    check(
        "",
        "<think>x</think><answer> ZAR </answer>",
        6.0 + 1.0 / 3.0 + 0.751,
        MAX,
    );
}

#[test]
fn each_tag_counts_once_and_only_when_it_appears_exactly_once() {
    // Two <think> blocks: the pattern still matches from the start; think tags twice → no
    // 0.125 for either: 0.25 + 0.125 + 0.125 + 0.001 = 0.501; match, think "a" → 1/3.
    let v = check(
        "",
        "<think>a</think><think>b</think><answer>ZAR</answer>",
        6.0 + 1.0 / 3.0 + 0.501,
        MAX,
    );
    assert!(close(term(&v, "format"), 0.501));
    // A second <think> inside the reasoning only: <think> twice, </think> once:
    // 0.25 + 0.125·3 + 0.001 = 0.626; think "a<think>b" names nothing → 1/3.
    let v = check(
        "",
        "<think>a<think>b</think><answer>ZAR</answer>",
        6.0 + 1.0 / 3.0 + 0.626,
        MAX,
    );
    assert!(close(term(&v, "format"), 0.626));
    // A stray </answer> after the answer: <answer> once (−0.001·n), </answer> twice (no term);
    // n = 0 (nothing after the last </answer>): 0.25 + 0.125·3 − 0 = 0.625; the answer does
    // not count (closing tag twice), so no match and no checklist.
    let v = check(
        "",
        "<think>x</think><answer>ZAR</answer></answer>",
        0.625,
        MAX,
    );
    assert_eq!(v.outcome, Outcome::Unparseable);
}

#[test]
fn text_after_the_answer_is_penalized_twice_as_the_paper_does() {
    // n = 3: 0.75 − 0.001·3 − 0.001·2 = 0.745; think "x" → 1/3.
    let v = check(
        "",
        "<think>x</think><answer>ZAR</answer>abc",
        6.0 + 1.0 / 3.0 + 0.745,
        MAX,
    );
    assert!(close(term(&v, "format"), 0.745));
    // n = 1: 0.75 − 0.001 − 0 = 0.749.
    let v = verifier("").verify("<think>x</think><answer>ZAR</answer>\n", &gold());
    assert!(close(term(&v, "format"), 0.749));
    // Characters, not bytes: "éé" is n = 2 → 0.75 − 0.002 − 0.001 = 0.747.
    let v = verifier("").verify("<think>x</think><answer>ZAR</answer>éé", &gold());
    assert!(close(term(&v, "format"), 0.747));
    // A 400-character tail drives the format negative: 0.75 − 0.4 − 0.399 = −0.049; the score
    // keeps it (6 + 1/3 − 0.049), the format part of the verdict is clamped at 0.
    let tail = "y".repeat(400);
    let v = check(
        "",
        &format!("<think>x</think><answer>ZAR</answer>{tail}"),
        6.0 + 1.0 / 3.0 - 0.049,
        MAX,
    );
    assert!(close(term(&v, "format"), -0.049));
    assert_eq!(v.parts[2].reward, 0.0);
}

#[test]
fn a_bad_format_gets_no_format_term() {
    // Not from the start: text before <think>. Match, think "x" → 1/3, format 0.
    check(
        "",
        "so <think>x</think><answer>ZAR</answer>",
        6.0 + 1.0 / 3.0,
        MAX,
    );
    // No reasoning block: the answer still counts (the hard match does not need the format),
    // the checklist finds no reasoning (0/3), the format is 0.
    let v = check("", "<answer>ZAR</answer>", 6.0, MAX);
    assert_eq!(v.outcome, Outcome::Correct);
    // Answer before reasoning: the pattern fails; the answer opens before </think>: no match.
    let v = check("", "<answer>ZAR</answer><think>ZAR</think>", 0.0, MAX);
    assert_eq!(v.outcome, Outcome::Unparseable);
    // No tags at all.
    let v = check("", "ZAR", 0.0, MAX);
    assert_eq!(v.outcome, Outcome::Unparseable);
    assert_eq!(v.reward, 0.0);
}

/// Ways a policy could try to earn the answer weight without giving the answer.
#[test]
fn adversarial_responses_never_earn_the_answer_weight() {
    let cases = [
        // Two answer blocks, the right one first, then the right one twice.
        "<think>x</think><answer>ZAR</answer><answer>BOB</answer>",
        "<think>x</think><answer>ZAR</answer><answer>ZAR</answer>",
        // An empty or blank answer.
        "<think>ZAR</think><answer></answer>",
        "<think>ZAR</think><answer>  </answer>",
        // The answer only in the reasoning, as text and as an answer block.
        "<think>ZAR</think><answer>BOB</answer>",
        "<think><answer>ZAR</answer></think>",
        "<think><answer>ZAR</answer></think><answer>BOB</answer>",
        // Every candidate at once.
        "<think>x</think><answer>ZAR VEL TUM BOB</answer>",
        "<think>x</think><answer>ZAR;VEL;TUM</answer>",
    ];
    for response in cases {
        let v = verifier("").verify(response, &gold());
        let s = score(&v);
        let matched = v.details["k2v"]["match"].as_bool().unwrap();
        assert!(!matched && s < 1.0 && !v.passed, "{response:?}: score {s}");
        assert_eq!(term(&v, "checklist"), 0.0, "{response:?}");
    }
    // The other candidates after a single answer block: the answer was given, and the tail
    // (n = 12) costs 0.001·12 + 0.001·11: 6 + 1/3 + 0.75 − 0.023.
    check(
        "",
        "<think>x</think><answer>ZAR</answer> VEL TUM BOB",
        6.0 + 1.0 / 3.0 + 0.727,
        MAX,
    );
}

#[test]
fn every_knob_moves_the_score_by_hand() {
    let resp = "<think>KOV</think><answer>ZAR</answer>";
    // answer_weight = 2: 2 + 1/3 + 0.751; max 2 + 1 + 0.751 = 3.751.
    check("answer_weight = 2.0", resp, 2.0 + 1.0 / 3.0 + 0.751, 3.751);
    // checklist_weight = 0.5: 6 + 0.5/3 + 0.751; max 6 + 0.5 + 0.751 = 7.251.
    check(
        "checklist_weight = 0.5",
        resp,
        6.0 + 0.5 / 3.0 + 0.751,
        7.251,
    );
    // format_weight = 0 (the exact-match baseline): a wrong answer scores 0; max 7.
    check(
        "format_weight = 0.0",
        "<think>ZAR</think><answer>BOB</answer>",
        0.0,
        7.0,
    );
    // trailing_penalty = 0.01, n = 3: 0.75 − 0.03 − 0.02 = 0.70; max 6 + 1 + 0.76 = 7.76.
    check(
        "trailing_penalty = 0.01",
        "<think>x</think><answer>ZAR</answer>abc",
        6.0 + 1.0 / 3.0 + 0.70,
        7.76,
    );
    // criteria = ["nonempty"]: "KOV" satisfies the one rule → 1.
    check("criteria = [\"nonempty\"]", resp, 7.751, MAX);
    // criteria = ["adjacent", "answer"]: neither → 0.
    check("criteria = [\"adjacent\", \"answer\"]", resp, 6.751, MAX);
    // checklist = "rules" is the default source.
    check("checklist = \"rules\"", resp, 6.0 + 1.0 / 3.0 + 0.751, MAX);
}

#[test]
fn the_compact_tags_follow_the_same_rules() {
    // "(VEL)=ZAR;": nonempty and adjacent (VEL) hold, answer not → 2/3; format 0.751.
    let v = check(
        "tags = \"compact\"",
        "(VEL)=ZAR;",
        6.0 + 2.0 / 3.0 + 0.751,
        MAX,
    );
    assert_eq!(v.outcome, Outcome::Correct);
    // Two answers; a tail of 2 ("XY": 0.75 − 0.002 − 0.001); the answer inside the reasoning.
    check("tags = \"compact\"", "(X)=ZAR;=BOB;", 0.5, MAX);
    check(
        "tags = \"compact\"",
        "(X)=ZAR;XY",
        6.0 + 1.0 / 3.0 + 0.747,
        MAX,
    );
    check("tags = \"compact\"", "(=ZAR;)", 0.0, MAX);
    // The xml tags mean nothing to the compact verifier (no "(" at the start): 0.
    check(
        "tags = \"compact\"",
        "<think>x</think><answer>ZAR</answer>",
        0.0,
        MAX,
    );
}

#[test]
fn whole_word_mentions() {
    assert!(mentions("born in zar.", "ZAR"));
    assert!(mentions("ZAR", "zar"));
    assert!(!mentions("ZARO", "ZAR"));
    assert!(!mentions("KZAR", "ZAR"));
    assert!(mentions("NEW YORK CITY", "new york"));
    assert!(!mentions("anything", ""));
}

#[test]
fn bad_knobs_are_refused_naming_the_key() {
    for (extra, key) in [
        ("answer_weight = -1.0", "verifier.answer_weight"),
        ("checklist_weight = -0.5", "verifier.checklist_weight"),
        ("format_weight = nan", "verifier.format_weight"),
        ("trailing_penalty = -0.001", "verifier.trailing_penalty"),
        (
            "answer_weight = 0.0\nchecklist_weight = 0.0\nformat_weight = 0.0",
            "verifier.answer_weight",
        ),
        ("criteria = [\"answer\", \"answer\"]", "verifier.criteria"),
        ("criteria = []", "verifier.criteria"),
    ] {
        let config: VerifierConfig = toml::from_str(&format!("kind = \"k2v\"\n{extra}")).unwrap();
        let err = config
            .build()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains(key), "{extra}: {err}");
    }
    // No checklist at all is fine when its weight is 0.
    let config: VerifierConfig =
        toml::from_str("kind = \"k2v\"\ncriteria = []\nchecklist_weight = 0.0").unwrap();
    assert!(config.build().is_ok());
    for extra in [
        "tags = \"html\"",
        "checklist = \"llm\"",
        "criteria = [\"long\"]",
        "weight = 1",
    ] {
        assert!(
            toml::from_str::<VerifierConfig>(&format!("kind = \"k2v\"\n{extra}")).is_err(),
            "{extra}"
        );
    }
}

#[test]
fn references_from_records() {
    let config: VerifierConfig = toml::from_str("kind = \"k2v\"").unwrap();
    let r = config
        .reference(&serde_json::json!({"answer": "ZAR", "adjacent": ["VEL"]}))
        .unwrap();
    assert_eq!(
        r,
        Reference::K2v {
            answer: "ZAR".into(),
            adjacent: vec!["VEL".into()]
        }
    );
    let r = config
        .reference(&serde_json::json!({"answer": "ZAR"}))
        .unwrap();
    assert!(matches!(r, Reference::K2v { adjacent, .. } if adjacent.is_empty()));
    assert!(
        config
            .reference(&serde_json::json!({"adjacent": []}))
            .is_err()
    );
    assert!(
        config
            .reference(&serde_json::json!({"answer": "ZAR", "adjacent": "VEL"}))
            .is_err()
    );
    let v = config.build().unwrap();
    assert!(
        v.check_reference(&Reference::Math { answer: "1".into() })
            .is_err()
    );
    assert!(
        v.check_reference(&Reference::K2v {
            answer: " ".into(),
            adjacent: vec![]
        })
        .is_err()
    );
    assert_eq!(
        v.verify("x", &Reference::Math { answer: "1".into() })
            .outcome,
        Outcome::Error
    );
}
