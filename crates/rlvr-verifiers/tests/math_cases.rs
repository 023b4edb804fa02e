//! Data-driven cases for the math verifier: one line per case, all through `check`.
//!
//! Each row is `(response, gold, expected)`. Gold answers in the "MATH-500 forms" block are
//! copied from `math500_test.jsonl`; the responses are equivalent (or deliberately wrong)
//! rewritings derived by hand.

mod math_table;

use math_table::run;

#[test]
fn extraction_forms() {
    run(&[
        ("so the total is #### 1234", "1234", true),
        ("... #### 1,234", "1234", true),
        ("#### 1234\n", "1,234", true),
        ("The answer is 1234.", "1234", true),
        ("The answer is -56.", "-56", true),
        ("The answer is −56.", "-56", true),
        ("the answer is: 7", "7", true),
        ("Final answer: 12", "12", true),
        ("The final answer is $\\boxed{12}$.", "12", true),
        ("Therefore the answer is **42**.", "42", true),
        ("I think it's 41, no wait, 42", "42", true),
        ("I think it's 42, no wait, 41", "42", false),
        ("\\boxed{3} but actually \\boxed{4}", "4", true),
        ("\\boxed{3} but actually \\boxed{4}", "3", false),
        ("\\fbox{5}", "5", true),
        ("\\boxed 5", "5", true),
        ("$\\boxed{\\frac{1}{2}}$", "\\frac12", true),
        ("answer: \\boxed{\\{1, 2\\}}", "\\{2,1\\}", true),
        ("#### 72\nThe answer is 72", "72", true),
        ("no answer here", "3", false),
        ("", "3", false),
        ("The answer is 3. Then 4 more.", "3", true),
        ("The answer is $3.5$.", "3.5", true),
        ("The answer is 3.5.", "7/2", true),
        ("The answer is 1,000,000.", "1000000", true),
        ("We get 18 apples and 12 pears so 30 fruits", "30", true),
        ("#### $18", "18", true),
        ("#### 18 dollars", "18", true),
        ("#### 5%", "5", true),
        ("The answer is 10 cm.", "10", true),
    ]);
}

#[test]
fn gold_may_be_a_full_solution() {
    run(&[
        (
            "#### 18",
            "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 eggs.\n#### 18",
            true,
        ),
        ("#### 17", "Janet sells 9 eggs.\n#### 18", false),
        (
            "\\boxed{\\frac{14}{3}}",
            "So $x = \\boxed{\\frac{14}{3}}$.",
            true,
        ),
        ("14/3", "So $x = \\boxed{\\frac{14}{3}}$.", true),
        ("\\boxed{5}", "First \\boxed{3}, finally \\boxed{5}", true),
    ]);
}

#[test]
fn numbers_fractions_decimals() {
    run(&[
        ("\\boxed{0.5}", "\\frac{1}{2}", true),
        ("\\boxed{.5}", "\\frac{1}{2}", true),
        ("\\boxed{1/2}", "\\dfrac{1}{2}", true),
        ("\\boxed{2/4}", "\\tfrac{1}{2}", true),
        ("\\boxed{\\frac{2}{4}}", "0.5", true),
        ("\\boxed{0.50}", "0.5", true),
        ("\\boxed{0.51}", "0.5", false),
        ("\\boxed{0.333}", "\\frac{1}{3}", false),
        ("\\boxed{0.3333333333333}", "\\frac{1}{3}", true),
        ("\\boxed{-\\frac{35}{9}}", "-\\frac{35}{9}", true),
        ("\\boxed{\\frac{-35}{9}}", "-\\frac{35}{9}", true),
        ("\\boxed{\\frac{35}{-9}}", "-\\frac{35}{9}", true),
        ("\\boxed{\\frac{35}{9}}", "-\\frac{35}{9}", false),
        ("\\boxed{1.25}", "\\frac{5}{4}", true),
        ("\\boxed{1\\frac{1}{4}}", "\\frac{5}{4}", true),
        ("\\boxed{1\\frac{4}{5}}", "1.8", true),
        ("\\boxed{137.5}", "137 \\frac{1}{2}", true),
        ("\\boxed{3.21}", "3.21", true),
        ("\\boxed{3.2}", "3.21", false),
        ("\\boxed{.0000672}", "6.72\\times 10^{-5}", true),
        ("\\boxed{6.72e-5}", ".0000672", true),
        ("\\boxed{1e3}", "1000", true),
        // A numeral gold needs a numeral: an unevaluated power is not an answer (final_form.rs).
        ("\\boxed{10^3}", "1000", false),
        ("\\boxed{2^{10}}", "1024", false),
        ("\\boxed{6.72\\times 10^{-5}}", ".0000672", true),
        ("\\boxed{1025}", "2^{10}", false),
        (
            "\\boxed{12345678901234567890}",
            "12345678901234567890",
            true,
        ),
        (
            "\\boxed{12345678901234567891}",
            "12345678901234567890",
            false,
        ),
        (
            "\\boxed{100000000000000000000000000000000000001}",
            "100000000000000000000000000000000000000",
            false,
        ),
        ("\\boxed{0}", "-0", true),
        ("\\boxed{0}", "0.0", true),
        ("\\boxed{007}", "7", true),
        ("\\boxed{5!}", "120", false),
        ("\\boxed{\\frac{3}{56}}", "\\frac{3}{56}", true),
        ("\\boxed{\\frac{3}{57}}", "\\frac{3}{56}", false),
        ("\\boxed{\\frac{243}{625}}", "0.3888", true),
        ("\\boxed{0.389}", "\\frac{243}{625}", false),
        ("\\boxed{2125}", "2,125", true),
        ("\\boxed{2,125}", "2125", true),
        ("\\boxed{114,200}", "114200", true),
        ("\\boxed{2880000}", "2,880,000", true),
        ("\\boxed{10080}", "10,\\!080", true),
        ("\\boxed{11111111100}", "11,\\! 111,\\! 111,\\! 100", true),
        ("\\boxed{58500}", "58,500", true),
        ("\\boxed{58501}", "58,500", false),
    ]);
}

#[test]
fn units_currency_percent_degrees() {
    run(&[
        ("\\boxed{90}", "90^\\circ", true),
        ("\\boxed{90^{\\circ}}", "90", true),
        ("\\boxed{90°}", "90^\\circ", true),
        ("\\boxed{90 degrees}", "90^\\circ", true),
        ("\\boxed{91^\\circ}", "90^\\circ", false),
        (
            "\\boxed{\\frac{270}{7}}",
            "\\frac{270}7\\text{ degrees}",
            true,
        ),
        ("\\boxed{32348}", "\\$32,\\!348", true),
        ("\\boxed{\\$32,348}", "32348", true),
        ("\\boxed{18.90}", "\\$18.90", true),
        ("\\boxed{18.9}", "\\$18.90", true),
        ("\\boxed{\\$36}", "\\$36", true),
        ("\\boxed{36 dollars}", "\\$36", true),
        ("\\boxed{864}", "864 \\mbox{ inches}^2", true),
        ("\\boxed{864 \\text{ square inches}}", "864", true),
        ("\\boxed{15}", "15\\mbox{ cm}^2", true),
        ("\\boxed{5.4}", "5.4 \\text{ cents}", true),
        ("\\boxed{5.4 cents}", "5.4", true),
        ("\\boxed{25\\%}", "25", true),
        ("\\boxed{25%}", "25", true),
        ("\\boxed{26\\%}", "25", false),
        ("\\boxed{\\text{5 hours}}", "5", true),
    ]);
}

/// The echo attack: a policy that restates its prompt's arithmetic (`37+45`) instead of doing it
/// must not be scored correct for the gold 82, however it wraps the expression. A worked equation
/// that ends on the number still is.
#[test]
fn unevaluated_arithmetic_is_not_an_answer() {
    run(&[
        ("37+45", "82", false),
        ("\\boxed{37+45}", "82", false),
        ("The answer is 37+45.", "82", false),
        ("#### 37 + 45", "82", false),
        ("So we get $37+45-20$.", "62", false),
        ("\\boxed{2 \\cdot 41}", "82", false),
        ("\\boxed{x = 37+45}", "82", false),
        ("\\boxed{\\sqrt{25}}", "5", false),
        ("\\boxed{\\frac{164}{2}}", "82", true),
        ("37+45=82", "82", true),
        ("\\boxed{37+45=82}", "82", true),
        ("\\boxed{37+45=83}", "82", false),
        ("\\boxed{x = 82}", "82", true),
        ("\\boxed{(37+45, 2)}", "(82, 2)", false),
        ("\\boxed{(82, 2)}", "(82, 2)", true),
        // Golds that are not numerals are compared by equivalence alone.
        ("\\boxed{\\sqrt{12}}", "2\\sqrt{3}", true),
        ("\\boxed{1+1}", "1+1", true),
    ]);
}

/// Hedges after "the answer is": a policy that lists several numbers (in one sentence, or in one
/// claim a sentence) to cover the gold must not be scored correct. A list reads as a list and
/// matches only a list gold; of several claims the last one is the answer.
#[test]
fn hedged_answers_are_not_correct() {
    run(&[
        ("the answer is 12 13 14", "13", false),
        ("the answer is 13 12", "13", false),
        ("the answer is 12, 13, 14", "13", false),
        ("the answer is 12 or 13", "13", false),
        ("the answer is 13 and 12", "13", false),
        ("the answer is 13 13", "13", false),
        ("the answer is 12 13 14 15 16 17 18 19 20", "13", false),
        ("the answer is 13 or more", "13", false),
        ("the answer is between 12 and 14", "13", false),
        ("the answer is 13 (or 12)", "13", false),
        ("the answer is 13 cm or 12 cm", "13", false),
        ("the answer is not 13", "13", false),
        ("the answer is at most 13", "13", false),
        ("the answer is 13. the answer is 12", "13", false),
        ("the answer is 13 the answer is 12", "13", false),
        ("the answer is 12. the answer is 13", "13", true),
        ("the answer is 13.\nthe answer is 12", "13", false),
        ("the answer is 12, 13", "12, 13", true),
    ]);
}
