//! Data-driven cases for the math verifier (algebra, structures, outcomes): one line per case,
//! all through `check`.
//!
//! Each row is `(response, gold, expected)`. Gold answers in the "MATH-500 forms" block are
//! copied from `math500_test.jsonl`; the responses are equivalent (or deliberately wrong)
//! rewritings derived by hand.

mod math_table;

use math_table::{run, verifier};
use rlvr_verifiers::{MathConfig, Outcome, Reference, Verifier};

#[test]
fn radicals_pi_and_algebra() {
    run(&[
        ("\\boxed{3\\sqrt{13}}", "3\\sqrt{13}", true),
        ("\\boxed{\\sqrt{117}}", "3\\sqrt{13}", true),
        ("\\boxed{3 \\sqrt{13}}", "3\\sqrt{13}", true),
        ("\\boxed{3\\sqrt{12}}", "3\\sqrt{13}", false),
        ("\\boxed{11\\sqrt{2}}", "11\\sqrt2", true),
        ("\\boxed{\\sqrt{242}}", "11\\sqrt2", true),
        (
            "\\boxed{\\frac{\\sqrt{3}}{3}}",
            "\\frac{1}{\\sqrt{3}}",
            true,
        ),
        (
            "\\boxed{\\frac{\\sqrt{3}}{2}}",
            "\\frac{1}{\\sqrt{3}}",
            false,
        ),
        (
            "\\boxed{\\frac{3\\sqrt{3}}{4}}",
            "\\frac{3\\sqrt{3}}{4}",
            true,
        ),
        ("\\boxed{0.75\\sqrt{3}}", "\\frac{3\\sqrt{3}}{4}", true),
        ("\\boxed{2\\sqrt{5}}", "\\sqrt{20}", true),
        // A numeral gold needs a numeral (final_form.rs); the identity is tested the other way.
        ("\\boxed{\\sqrt[3]{27}}", "3", false),
        ("\\boxed{3}", "\\sqrt[3]{27}", true),
        ("\\boxed{\\pi}", "\\pi", true),
        ("\\boxed{3.1416}", "\\pi", false),
        ("\\boxed{3.14}", "\\pi", false),
        ("\\boxed{3.14159265358979}", "\\pi", true),
        ("\\boxed{7\\pi}", "7\\pi", true),
        ("\\boxed{\\pi \\cdot 7}", "7\\pi", true),
        ("\\boxed{\\frac{20000}{\\pi}}", "\\frac{20000}{\\pi}", true),
        ("\\boxed{20000/\\pi}", "\\frac{20000}{\\pi}", true),
        ("\\boxed{-\\frac{\\pi}{6}}", "-\\frac{\\pi}{6}", true),
        ("\\boxed{\\frac{\\pi}{6}}", "-\\frac{\\pi}{6}", false),
        ("\\boxed{18+2\\pi}", "18+2\\pi", true),
        ("\\boxed{2\\pi+18}", "18+2\\pi", true),
        ("\\boxed{288\\pi}", "288 \\pi", true),
        ("\\boxed{\\frac{\\pi^2}{8}}", "\\frac{\\pi^{2}}{8}", true),
        ("\\boxed{11 \\sqrt{5} + 11}", "11+11\\sqrt{5}", true),
        ("\\boxed{11(\\sqrt{5}+1)}", "11 \\sqrt{5} + 11", true),
        ("\\boxed{1+2\\sqrt{3}}", "1+2\\sqrt{3}", true),
        ("\\boxed{1+3\\sqrt{2}}", "1+2\\sqrt{3}", false),
        ("\\boxed{p - q}", "p - q", true),
        ("\\boxed{-q + p}", "p - q", true),
        ("\\boxed{q - p}", "p - q", false),
        (
            "\\boxed{x^5 - x^4 + x^3 - x^2 + x - 1}",
            "x^5 - x^4 + x^3 - x^2 + x - 1",
            true,
        ),
        (
            "\\boxed{(x-1)(x^4+x^2+1)}",
            "x^5 - x^4 + x^3 - x^2 + x - 1",
            true,
        ),
        (
            "\\boxed{(x-1)(x^4+x^2)}",
            "x^5 - x^4 + x^3 - x^2 + x - 1",
            false,
        ),
        ("\\boxed{x^3+3x-6}", "x^3+3x-6", true),
        ("\\boxed{x^3+3x-5}", "x^3+3x-6", false),
        ("\\boxed{2k+2}", "2k+2", true),
        ("\\boxed{2(k+1)}", "2k+2", true),
        ("\\boxed{2k+1}", "2k+2", false),
        ("\\boxed{(a+5)(b+2)}", "(a+5)(b+2)", true),
        ("\\boxed{ab+2a+5b+10}", "(a+5)(b+2)", true),
        ("\\boxed{ab+2a+5b+11}", "(a+5)(b+2)", false),
        ("\\boxed{6r^2-4r-24}", "6r^2-4r-24", true),
        ("\\boxed{2(3r^2-2r-12)}", "6r^2-4r-24", true),
        ("\\boxed{\\frac{11+9a}{20}}", "\\frac{11+9a}{20}", true),
        ("\\boxed{0.55+0.45a}", "\\frac{11+9a}{20}", true),
        ("\\boxed{8n^2 + 4n + 1}", "8n^2 + 4n + 1", true),
        ("\\boxed{4n(2n+1)+1}", "8n^2 + 4n + 1", true),
        ("\\boxed{5r^5}", "5r^5", true),
        ("\\boxed{5r^4}", "5r^5", false),
        ("\\boxed{3R^2}", "3R^2", true),
        ("\\boxed{\\cot x}", "\\cot x", true),
        ("\\boxed{\\frac{\\cos x}{\\sin x}}", "\\cot x", true),
        ("\\boxed{\\tan x}", "\\cot x", false),
        ("\\boxed{-13x+3}", "-13x+3", true),
        ("\\boxed{3-13x}", "-13x+3", true),
        ("\\boxed{15x - 80}", "15x - 80", true),
        ("\\boxed{5(3x-16)}", "15x - 80", true),
        ("\\boxed{x^2}", "x*x", true),
        ("\\boxed{x^2+2x+1}", "(x+1)^2", true),
        ("\\boxed{x^2+1}", "(x+1)^2", false),
        ("\\boxed{1}", "\\sin^2 x + \\cos^2 x", true),
        ("\\boxed{-1}", "e^{i\\pi}", true),
        ("\\boxed{2}", "\\ln(e^2)", true),
        ("\\boxed{\\ln(e^2)}", "2", false),
        ("\\boxed{3}", "|{-3}|", true),
        ("\\boxed{x + y}", "y + x", true),
        ("\\boxed{xy}", "yx", true),
        ("\\boxed{x_1 + x_2}", "x_2 + x_1", true),
        ("\\boxed{\\alpha + 1}", "1 + \\alpha", true),
        ("\\boxed{\\alpha + 1}", "1 + \\beta", false),
    ]);
}

#[test]
fn complex_numbers() {
    run(&[
        ("\\boxed{6 - 5i}", "6 - 5i", true),
        ("\\boxed{-5i + 6}", "6 - 5i", true),
        ("\\boxed{6 + 5i}", "6 - 5i", false),
        ("\\boxed{6+9i}", "6+9i", true),
        ("\\boxed{-2 + 7i}", "-2 + 7i", true),
        ("\\boxed{1+274i}", "1+274i", true),
        ("\\boxed{1 - 12i}", "1 - 12i", true),
        ("\\boxed{1 + 12i}", "1 - 12i", false),
        ("\\boxed{-1}", "i^2", true),
        ("\\boxed{\\sqrt{-4}}", "2i", true),
        ("\\boxed{1+2i}", "1+2i", true),
    ]);
}

#[test]
fn equations_and_values() {
    run(&[
        ("\\boxed{x=5}", "x=5", true),
        ("\\boxed{5}", "x=5", true),
        ("\\boxed{x = 5}", "5", true),
        ("\\boxed{x=6}", "x=5", false),
        ("\\boxed{y = 2x + 3}", "y = 2x + 3", true),
        ("\\boxed{y = 3 + 2x}", "y = 2x + 3", true),
        ("\\boxed{2x - y + 3 = 0}", "y = 2x + 3", true),
        ("\\boxed{y = 2x + 4}", "y = 2x + 3", false),
        ("\\boxed{y = -2x}", "y = -2x", true),
        ("\\boxed{2x + y = 0}", "y = -2x", true),
        (
            "\\boxed{5x - 7y + 11z + 4 = 0}",
            "5x - 7y + 11z + 4 = 0",
            true,
        ),
        (
            "\\boxed{-5x + 7y - 11z - 4 = 0}",
            "5x - 7y + 11z + 4 = 0",
            true,
        ),
        (
            "\\boxed{10x - 14y + 22z + 8 = 0}",
            "5x - 7y + 11z + 4 = 0",
            true,
        ),
        (
            "\\boxed{5x - 7y + 11z + 5 = 0}",
            "5x - 7y + 11z + 4 = 0",
            false,
        ),
        ("\\boxed{k = 3}", "3", true),
    ]);
}

#[test]
fn intervals_tuples_sets() {
    run(&[
        ("\\boxed{(3,4]}", "(3,4]", true),
        ("\\boxed{(3, 4]}", "(3,4]", true),
        ("\\boxed{[3,4]}", "(3,4]", false),
        ("\\boxed{(3,4)}", "(3,4]", false),
        ("\\boxed{(2,\\infty)}", "(2,\\infty)", true),
        ("\\boxed{(2, \\infty)}", "(2,\\infty)", true),
        ("\\boxed{[2,\\infty)}", "(2,\\infty)", false),
        ("\\boxed{(-\\infty, 0]}", "(-\\infty, 0]", true),
        ("\\boxed{(-\\infty, 0)}", "(-\\infty, 0]", false),
        (
            "\\boxed{(-\\infty, 2) \\cup (3, \\infty)}",
            "(-\\infty, 2) \\cup (3, \\infty)",
            true,
        ),
        (
            "\\boxed{(3, \\infty) \\cup (-\\infty, 2)}",
            "(-\\infty, 2) \\cup (3, \\infty)",
            true,
        ),
        (
            "\\boxed{(-\\infty, 2] \\cup (3, \\infty)}",
            "(-\\infty, 2) \\cup (3, \\infty)",
            false,
        ),
        ("\\boxed{(0,9) \\cup (9,36)}", "(0,9) \\cup (9,36)", true),
        ("\\boxed{(0,36)}", "(0,9) \\cup (9,36)", false),
        ("\\boxed{[-2,7]}", "x \\in [-2,7]", true),
        ("\\boxed{x \\in [-2,7]}", "[-2,7]", true),
        ("\\boxed{[-2,8]}", "x \\in [-2,7]", false),
        (
            "\\boxed{\\left(\\frac{3}{5},\\frac{8}{3}\\right]}",
            "\\left(\\frac{3}{5},\\frac{8}{3}\\right]",
            true,
        ),
        (
            "\\boxed{(0.6, 8/3]}",
            "\\left(\\frac{3}{5},\\frac{8}{3}\\right]",
            true,
        ),
        (
            "\\boxed{\\left[ \\frac{\\pi^2}{8}, \\frac{5 \\pi^2}{4} \\right]}",
            "\\left[ \\frac{\\pi^2}{8}, \\frac{5 \\pi^2}{4} \\right]",
            true,
        ),
        (
            "\\boxed{(-\\sqrt{3}, \\sqrt{3})}",
            "(-\\sqrt{3}, \\sqrt{3})",
            true,
        ),
        ("\\boxed{(6,31,-1)}", "(6,31,-1)", true),
        ("\\boxed{(6, 31, -1)}", "(6,31,-1)", true),
        ("\\boxed{(31,6,-1)}", "(6,31,-1)", false),
        ("\\boxed{(6,31)}", "(6,31,-1)", false),
        ("\\boxed{(1,-16,-4,43)}", "(1,-16,-4,43)", true),
        (
            "\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}",
            "\\left( 3, \\frac{\\pi}{2} \\right)",
            true,
        ),
        (
            "\\boxed{(3, \\pi/2)}",
            "\\left( 3, \\frac{\\pi}{2} \\right)",
            true,
        ),
        (
            "\\boxed{(3, \\pi)}",
            "\\left( 3, \\frac{\\pi}{2} \\right)",
            false,
        ),
        (
            "\\boxed{\\left( \\frac{3}{2}, -13 \\right)}",
            "\\left( \\frac{3}{2}, -13 \\right)",
            true,
        ),
        (
            "\\boxed{(1.5, -13)}",
            "\\left( \\frac{3}{2}, -13 \\right)",
            true,
        ),
        ("\\boxed{(-2,1)}", "(-2,1)", true),
        ("\\boxed{(1,-2)}", "(-2,1)", false),
        ("\\boxed{(15,-29)}", "(15,-29)", true),
        ("\\boxed{1,-2}", "1,-2", true),
        ("\\boxed{-2, 1}", "1,-2", true),
        ("\\boxed{-2, 2}", "1,-2", false),
        ("\\boxed{1}", "1,-2", false),
        ("\\boxed{1,-2,3}", "1,-2", false),
        ("\\boxed{3, 5, 7}", "3, 5, 7", true),
        ("\\boxed{7, 5, 3}", "3, 5, 7", true),
        ("\\boxed{\\{3, 5, 7\\}}", "3, 5, 7", true),
        ("\\boxed{-2,1}", "-2,1", true),
        ("\\boxed{1 \\pm \\sqrt{19}}", "1 \\pm \\sqrt{19}", true),
        (
            "\\boxed{1 + \\sqrt{19}, 1 - \\sqrt{19}}",
            "1 \\pm \\sqrt{19}",
            true,
        ),
        ("\\boxed{1 + \\sqrt{19}}", "1 \\pm \\sqrt{19}", false),
        ("\\boxed{3 \\pm 2 \\sqrt{2}}", "3 \\pm 2 \\sqrt{2}", true),
        (
            "\\boxed{3-2\\sqrt2, 3+2\\sqrt2}",
            "3 \\pm 2 \\sqrt{2}",
            true,
        ),
        (
            "\\boxed{\\{1\\pm\\sqrt{5},-2\\}}",
            "\\{1\\pm\\sqrt{5},-2\\}",
            true,
        ),
        (
            "\\boxed{-2, 1+\\sqrt5, 1-\\sqrt5}",
            "\\{1\\pm\\sqrt{5},-2\\}",
            false,
        ),
        ("\\boxed{x=1, x=2}", "1, 2", true),
        ("\\boxed{x=1, x=3}", "1, 2", false),
    ]);
}

#[test]
fn matrices() {
    run(&[
        (
            "\\boxed{\\begin{pmatrix} -1/3 \\\\ 2/3 \\\\ 5/3 \\end{pmatrix}}",
            "\\begin{pmatrix} -1/3 \\\\ 2/3 \\\\ 5/3 \\end{pmatrix}",
            true,
        ),
        (
            "\\boxed{\\begin{pmatrix} -\\frac{1}{3} \\\\ \\frac{2}{3} \\\\ \\frac{5}{3} \\end{pmatrix}}",
            "\\begin{pmatrix} -1/3 \\\\ 2/3 \\\\ 5/3 \\end{pmatrix}",
            true,
        ),
        (
            "\\boxed{\\begin{pmatrix} 1/3 \\\\ 2/3 \\\\ 5/3 \\end{pmatrix}}",
            "\\begin{pmatrix} -1/3 \\\\ 2/3 \\\\ 5/3 \\end{pmatrix}",
            false,
        ),
        (
            "\\boxed{\\begin{pmatrix} -1 & 0 \\\\ 0 & -1 \\end{pmatrix}}",
            "\\begin{pmatrix} -1 & 0 \\\\ 0 & -1 \\end{pmatrix}",
            true,
        ),
        (
            "\\boxed{\\begin{bmatrix} -1 & 0 \\\\ 0 & -1 \\end{bmatrix}}",
            "\\begin{pmatrix} -1 & 0 \\\\ 0 & -1 \\end{pmatrix}",
            true,
        ),
        (
            "\\boxed{\\begin{pmatrix} -1 & 0 \\\\ 0 & 1 \\end{pmatrix}}",
            "\\begin{pmatrix} -1 & 0 \\\\ 0 & -1 \\end{pmatrix}",
            false,
        ),
        (
            "\\boxed{\\begin{pmatrix} 0 & -1 \\\\ -1 & 0 \\end{pmatrix}}",
            "\\begin{pmatrix} -1 & 0 \\\\ 0 & -1 \\end{pmatrix}",
            false,
        ),
        (
            "\\boxed{\\begin{pmatrix} -2 \\\\ -14 \\\\ -7 \\end{pmatrix}}",
            "\\begin{pmatrix} -2 \\\\ -14 \\\\ -7 \\end{pmatrix}",
            true,
        ),
        (
            "\\boxed{\\begin{pmatrix} 16/49 \\\\ 48/49 \\\\ 24/49 \\end{pmatrix}}",
            "\\begin{pmatrix} 16/49 \\\\ 48/49 \\\\ 24/49 \\end{pmatrix}",
            true,
        ),
    ]);
}

#[test]
fn text_choices_and_bases() {
    run(&[
        ("\\boxed{\\text{Evelyn}}", "\\text{Evelyn}", true),
        ("\\boxed{Evelyn}", "\\text{Evelyn}", true),
        ("\\boxed{evelyn}", "\\text{Evelyn}", true),
        ("\\boxed{Navin}", "\\text{Evelyn}", false),
        ("\\boxed{\\text{east}}", "\\text{east}", true),
        ("\\boxed{\\text{west}}", "\\text{east}", false),
        ("\\boxed{\\text{even}}", "\\text{even}", true),
        ("\\boxed{\\text{odd}}", "\\text{even}", false),
        ("\\boxed{\\text{ellipse}}", "\\text{ellipse}", true),
        ("\\boxed{\\text{(C)}}", "\\text{(C)}", true),
        ("\\boxed{C}", "\\text{(C)}", true),
        ("\\boxed{(C)}", "\\text{(C)}", true),
        ("\\boxed{B}", "\\text{(C)}", false),
        ("\\boxed{\\text{(E)}}", "\\text{(E)}", true),
        ("\\boxed{52_8}", "52_8", true),
        ("\\boxed{52_{8}}", "52_8", true),
        ("\\boxed{53_8}", "52_8", false),
        ("\\boxed{4210_{5}}", "4210_{5}", true),
        ("\\boxed{4210_5}", "4210_{5}", true),
        ("\\boxed{2516_8}", "2516_8", true),
    ]);
}

#[test]
fn outcomes_and_rewards() {
    let v = verifier();
    let gold = Reference::Math { answer: "3".into() };
    let r = v.verify("no idea", &gold);
    assert_eq!((r.outcome, r.reward), (Outcome::Unparseable, 0.0));
    let r = v.verify("#### 4", &gold);
    assert_eq!(
        (r.outcome, r.reward, r.extracted.as_deref()),
        (Outcome::Wrong, 0.0, Some("4"))
    );
    let r = v.verify("#### 3", &gold);
    assert_eq!(
        (r.outcome, r.reward, r.passed),
        (Outcome::Correct, 1.0, true)
    );
    let strict = MathConfig {
        fallback: rlvr_verifiers::math::Fallback::None,
        ..MathConfig::default()
    }
    .init()
    .unwrap();
    assert_eq!(
        strict.verify("it is 3", &gold).outcome,
        Outcome::Unparseable
    );
    let code = Reference::Code(Default::default());
    assert_eq!(v.verify("3", &code).outcome, Outcome::Error);
}

#[test]
fn hostile_answers_finish_fast() {
    let v = verifier();
    let start = std::time::Instant::now();
    let bombs = [
        format!("\\boxed{{{}}}", "(".repeat(100_000)),
        format!(
            "\\boxed{{{}1{}}}",
            "\\frac{1}{".repeat(5_000),
            "}".repeat(5_000)
        ),
        format!("\\boxed{{{}}}", "x^".repeat(10_000) + "2"),
        format!("\\boxed{{{}}}", "9^9^9^9^9^9^9^9"),
        format!(
            "\\boxed{{{}}}",
            (0..5000)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        format!("\\boxed{{{}}}", "\\sqrt{".repeat(3000) + &"}".repeat(3000)),
        "#### ".to_string() + &"9".repeat(100_000),
        "{".repeat(200_000),
        format!("\\boxed{{{}}}", "1+".repeat(600) + "1"),
    ];
    for b in &bombs {
        let one = std::time::Instant::now();
        let _ = v.verify(
            b,
            &Reference::Math {
                answer: "x^2+1".into(),
            },
        );
        let _ = v.verify(b, &Reference::Math { answer: b.clone() });
        assert!(
            one.elapsed().as_millis() < 500,
            "{} chars took {:?}",
            b.len(),
            one.elapsed()
        );
    }
    assert!(start.elapsed().as_secs() < 3);
}
