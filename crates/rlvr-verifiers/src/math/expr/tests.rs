//! Unit tests of the expression parser and evaluator.
use super::*;

fn value(s: &str) -> f64 {
    parse(s)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .eval(&BTreeMap::new())
        .re
}

#[test]
fn latex_and_plain_forms_evaluate() {
    // Hand values: 3/4, 2*sqrt(3), 2^(3^2) = 512, 5! = 120, pi/2.
    let cases = [
        ("\\frac{3}{4}", 0.75),
        ("\\frac34", 0.75),
        ("2\\sqrt{3}", 2.0 * 3f64.sqrt()),
        ("2^3^2", 512.0),
        ("5!", 120.0),
        ("\\frac{\\pi}{2}", std::f64::consts::FRAC_PI_2),
        ("pi/2", std::f64::consts::FRAC_PI_2),
        ("\\sqrt[3]{8}", 2.0),
        ("-2^2", -4.0),
        ("(1+2)(3+4)", 21.0),
        ("2^{-1}", 0.5),
        ("sqrt(16)", 4.0),
    ];
    for (s, want) in cases {
        assert!(
            (value(s) - want).abs() < 1e-12,
            "{s}: {} != {want}",
            value(s)
        );
    }
}

#[test]
fn bombs_are_parse_errors() {
    let deep = "(".repeat(500) + "1" + &")".repeat(500);
    assert!(parse(&deep).is_err());
    assert!(parse(&"1+".repeat(5000)).is_err());
    assert!(parse("\\frac{1}{").is_err());
}
