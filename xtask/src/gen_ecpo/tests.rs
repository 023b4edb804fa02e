//! Properties of the generated ECPO task, checked on the records as written (an independent
//! reading of the JSONL: relevance and certificates re-derived from `spans` and `intent`).

use std::collections::HashSet;

use serde_json::Value;

use super::example::{ATTRIBUTES, Example, Item, MAX_PROMPT_CHARS, Span, render};
use super::teacher::{Branch, HARD_NEGATIVE, IDEAL, INCOMPLETE, RATIONALIZED, SWAPPED, items};
use super::*;

/// The bundled model's alphabet.
const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:?;";

/// One record as written.
struct Record {
    prompt: String,
    intent: Vec<String>,
    /// `(subject, attribute)`, span `j` at `j - 1`.
    spans: Vec<(String, String)>,
    k: usize,
    answer: String,
    completion: Option<String>,
}

impl Record {
    fn parse(line: &str) -> Record {
        let v: Value = serde_json::from_str(line).unwrap();
        let s = |x: &Value| x.as_str().unwrap().to_string();
        Record {
            prompt: s(&v["prompt"]),
            intent: v["intent"].as_array().unwrap().iter().map(s).collect(),
            spans: v["spans"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (s(&p[0]), s(&p[1])))
                .collect(),
            k: v["k"].as_u64().unwrap() as usize,
            answer: s(&v["answer"]),
            completion: v.get("completion").map(s),
        }
    }

    /// The candidates, each once, in order of first span.
    fn roster(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (c, _) in &self.spans {
            if !out.contains(c) {
                out.push(c.clone());
            }
        }
        out
    }

    /// The distinct intent attributes some span gives `c`.
    fn relevance(&self, c: &str) -> usize {
        self.intent
            .iter()
            .filter(|a| self.spans.iter().any(|(s, b)| s == c && b == *a))
            .count()
    }

    /// Numbers of `c`'s spans with an intent attribute.
    fn certificate(&self, c: &str) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, (s, a)) in self.spans.iter().enumerate() {
            if s == c && self.intent.contains(a) {
                out.push(i + 1);
            }
        }
        out
    }

    /// Numbers of all of `c`'s spans.
    fn own(&self, c: &str) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, (s, _)) in self.spans.iter().enumerate() {
            if s == c {
                out.push(i + 1);
            }
        }
        out
    }

    fn first_span(&self, c: &str) -> usize {
        self.own(c)[0]
    }
}

/// Reads `"KA13 MO2;"` into `[("KA", [1, 3]), ("MO", [2])]`.
fn parse_items(text: &str) -> Vec<(String, Vec<usize>)> {
    let body = text.strip_suffix(';').unwrap_or_else(|| panic!("{text:?}"));
    body.split(' ')
        .map(|item| {
            assert!(item.len() >= 3, "{text:?}");
            let (id, digits) = item.split_at(2);
            assert!(id.chars().all(|c| c.is_ascii_uppercase()), "{text:?}");
            let cited = digits
                .chars()
                .map(|d| d.to_digit(10).unwrap_or_else(|| panic!("{text:?}")) as usize)
                .collect();
            (id.to_string(), cited)
        })
        .collect()
}

fn records(text: &str) -> Vec<Record> {
    text.lines().map(Record::parse).collect()
}

fn dataset() -> &'static (Vec<Record>, Vec<Record>) {
    static D: std::sync::OnceLock<(Vec<Record>, Vec<Record>)> = std::sync::OnceLock::new();
    D.get_or_init(|| {
        let (train, test) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
        (
            records(&to_jsonl("train", &train, true)),
            records(&to_jsonl("test", &test, false)),
        )
    })
}

fn by_hand() -> Example {
    let span = |subject: &str, attribute| Span {
        subject: subject.to_string(),
        attribute,
    };
    Example {
        intent: ['R', 'B'],
        spans: vec![
            span("KA", 'R'),
            span("MO", 'B'),
            span("KA", 'B'),
            span("LU", 'R'),
            span("ZE", 'G'),
        ],
    }
}

/// KA has R (1) and B (3): 2; MO has B (2) and LU has R (4): 1 each, MO first; ZE only G: 0.
#[test]
fn the_ideal_answer_by_hand() {
    let ex = by_hand();
    assert_eq!(ex.prompt(), "R B? 1 KA R. 2 MO B. 3 KA B. 4 LU R. 5 ZE G.");
    assert_eq!(ex.prompt().len(), 44);
    assert_eq!(ex.ideal_answer(), "KA13 MO2;");
    assert_eq!(ex.hard_negatives(), ["ZE"]);
    assert!(ex.is_valid());
    let line = to_jsonl("test", &[ex], false);
    let v: Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(v["answer"], "KA13 MO2;");
    assert_eq!(v["spans"][2], serde_json::json!(["KA", "B"]));
    assert_eq!(v["intent"], serde_json::json!(["R", "B"]));
    assert_eq!(v["k"], 2);
    assert!(v.get("completion").is_none());
}

/// Each of the teacher's branches on the hand example, worked by hand.
#[test]
fn the_teachers_branches_by_hand() {
    let ex = by_hand();
    let mut rng = SplitMix64(1);
    let mut outputs = |branch| -> HashSet<String> {
        (0..200)
            .map(|_| render(&items(&ex, branch, &mut rng)))
            .collect()
    };
    let set = |xs: &[&str]| xs.iter().map(ToString::to_string).collect::<HashSet<_>>();
    assert_eq!(outputs(Branch::Ideal), set(&["KA13 MO2;"]));
    assert_eq!(outputs(Branch::Incomplete), set(&["KA1 MO2;", "KA3 MO2;"]));
    assert_eq!(outputs(Branch::Swapped), set(&["MO2 KA13;"]));
    assert_eq!(outputs(Branch::HardNegative), set(&["KA13 ZE5;"]));
    let rationalized = outputs(Branch::Rationalized);
    assert_eq!(rationalized.len(), 25, "{rationalized:?}");
    assert!(rationalized.contains("KA5 MO5;"));

    // No relevance-2 candidate: the second item cites another candidate's span instead.
    let mut ex = by_hand();
    ex.spans[2].attribute = 'S'; // KA S: KA now 1 (span 1), MO 1 (span 2).
    assert_eq!(ex.ideal_answer(), "KA1 MO2;");
    let incomplete: HashSet<String> = (0..200)
        .map(|_| render(&items(&ex, Branch::Incomplete, &mut rng)))
        .collect();
    assert_eq!(
        incomplete,
        set(&["KA1 MO1;", "KA1 MO3;", "KA1 MO4;", "KA1 MO5;"])
    );
    // Equal relevances: nothing to swap.
    let swapped = render(&items(&ex, Branch::Swapped, &mut rng));
    assert_eq!(swapped, "KA1 MO2;");
}

#[test]
fn texts_fit_the_models_alphabet_and_context() {
    let (train, test) = dataset();
    assert_eq!((train.len(), test.len()), (TRAIN_SIZE, TEST_SIZE));
    let in_alphabet = |s: &str| s.chars().all(|c| ALPHABET.contains(c));
    for r in train.iter().chain(test) {
        assert!(r.prompt.len() <= MAX_PROMPT_CHARS, "{}", r.prompt);
        assert!(in_alphabet(&r.prompt), "{}", r.prompt);
        assert!(
            r.answer.len() <= 15 && in_alphabet(&r.answer),
            "{}",
            r.answer
        );
    }
    for r in train {
        let c = r.completion.as_deref().unwrap();
        assert!(c.len() <= 15 && in_alphabet(c), "{c:?}");
    }
    for r in test {
        assert!(r.completion.is_none());
    }
}

/// The prompt is the fields written out, and every task has the shape the module promises.
#[test]
fn prompts_and_shapes_follow_the_fields() {
    let (train, test) = dataset();
    for r in train.iter().chain(test) {
        let mut prompt = format!("{} {}?", r.intent[0], r.intent[1]);
        for (j, (s, a)) in r.spans.iter().enumerate() {
            prompt += &format!(" {} {s} {a}.", j + 1);
        }
        assert_eq!(prompt, r.prompt);
        let attribute =
            |a: &String| a.len() == 1 && ATTRIBUTES.contains(&a.chars().next().unwrap());
        assert!(
            r.intent.len() == 2 && r.intent[0] != r.intent[1],
            "{}",
            r.prompt
        );
        assert!(r.intent.iter().all(attribute), "{}", r.prompt);
        assert!((4..=5).contains(&r.spans.len()), "{}", r.prompt);
        let pairs: HashSet<_> = r.spans.iter().collect();
        assert_eq!(pairs.len(), r.spans.len(), "{}", r.prompt);
        let roster = r.roster();
        assert!((3..=4).contains(&roster.len()), "{}", r.prompt);
        for id in &roster {
            let cs: Vec<char> = id.chars().collect();
            assert!(
                cs.len() == 2 && cs.iter().all(char::is_ascii_uppercase),
                "{id}"
            );
            assert!(!(cs[0] == cs[1] && ATTRIBUTES.contains(&cs[0])), "{id}");
        }
        assert!(r.spans.iter().all(|(_, a)| attribute(a)), "{}", r.prompt);
        let rel: Vec<usize> = roster.iter().map(|c| r.relevance(c)).collect();
        assert!(
            rel.contains(&2) || rel.iter().filter(|&&x| x >= 1).count() >= 2,
            "{}",
            r.prompt
        );
        assert!(rel.contains(&0), "no hard negative: {}", r.prompt);
        assert_eq!(r.k, 2);
    }
}

/// The answer is a Top-k by the re-derived relevance: descending, ties by first span, nothing
/// better left out, only relevant candidates, each with its complete certificate.
#[test]
fn answers_agree_with_the_rederived_relevance() {
    let (train, test) = dataset();
    for r in train.iter().chain(test) {
        let items = parse_items(&r.answer);
        let relevant: Vec<String> = r
            .roster()
            .into_iter()
            .filter(|c| r.relevance(c) > 0)
            .collect();
        assert_eq!(items.len(), relevant.len().min(r.k), "{}", r.prompt);
        for (id, cited) in &items {
            assert!(r.relevance(id) >= 1, "{}", r.prompt);
            assert_eq!(*cited, r.certificate(id), "{}", r.prompt);
        }
        for w in items.windows(2) {
            let (a, b) = (&w[0].0, &w[1].0);
            let key = |c: &str| (std::cmp::Reverse(r.relevance(c)), r.first_span(c));
            assert!(key(a) < key(b), "{}: {}", r.prompt, r.answer);
        }
        let last = r.relevance(&items.last().unwrap().0);
        for c in &relevant {
            if !items.iter().any(|(id, _)| id == c) {
                assert!(r.relevance(c) <= last, "{}: {c} left out", r.prompt);
            }
        }
    }
}

#[test]
fn held_out_prompts_are_not_training_prompts() {
    let (train, test) = dataset();
    let seen: HashSet<&str> = train.iter().map(|r| r.prompt.as_str()).collect();
    assert_eq!(seen.len(), train.len());
    for r in test {
        assert!(!seen.contains(r.prompt.as_str()), "{}", r.prompt);
    }
}

/// What the teacher's completions are, classified from the records alone, against what the
/// constants predict for each line (the branches that can coincide with the ideal answer are
/// counted where they land).
#[test]
fn the_teachers_mix_matches_its_constants() {
    let (train, _) = dataset();
    let p = |percent: u64| percent as f64 / 100.0;
    let (mut seen, mut expected) = ([0usize; 5], [0.0f64; 5]);
    for r in train {
        let ideal = parse_items(&r.answer);
        let ids: Vec<&String> = ideal.iter().map(|(id, _)| id).collect();
        let written = parse_items(r.completion.as_deref().unwrap());
        let written_ids: Vec<&String> = written.iter().map(|(id, _)| id).collect();
        let n = r.spans.len() as f64;
        let tied = ideal.len() < 2 || r.relevance(ids[0]) == r.relevance(ids[1]);
        let has_two = ideal.iter().any(|(_, c)| c.len() == 2);
        // A rationalization's chance of citing within each item's certificate, and of citing it
        // exactly.
        let within: f64 = ideal.iter().map(|(_, c)| c.len() as f64 / n).product();
        let exact: f64 = ideal
            .iter()
            .map(|(_, c)| if c.len() == 1 { 1.0 / n } else { 0.0 })
            .product();
        expected[0] += p(IDEAL) + p(RATIONALIZED) * exact + if tied { p(SWAPPED) } else { 0.0 };
        expected[1] += if tied { 0.0 } else { p(SWAPPED) };
        expected[2] += p(HARD_NEGATIVE);
        expected[3] +=
            p(RATIONALIZED) * (within - exact) + if has_two { p(INCOMPLETE) } else { 0.0 };
        expected[4] += p(RATIONALIZED) * (1.0 - within) + if has_two { 0.0 } else { p(INCOMPLETE) };

        let class = if written == ideal {
            0
        } else if ids.len() == 2 && written_ids == [ids[1], ids[0]] {
            // Swapped: certificates kept.
            assert_eq!(written, [ideal[1].clone(), ideal[0].clone()]);
            1
        } else if written.len() == 2 && r.relevance(&written[1].0) == 0 {
            // A hard negative second, citing all its spans, after the ideal first item.
            assert_eq!(written[0], ideal[0], "{}", r.prompt);
            assert_eq!(written[1].1, r.own(&written[1].0), "{}", r.prompt);
            2
        } else {
            assert_eq!(written_ids, ids, "unexplained: {:?}", r.completion);
            let inside = written
                .iter()
                .zip(&ideal)
                .all(|((_, w), (_, c))| !w.is_empty() && w.iter().all(|j| c.contains(j)));
            // Incomplete or rationalized: one citation somewhere, else all certificates.
            let singles = written.iter().filter(|(_, w)| w.len() == 1).count();
            assert!(singles >= 1, "{:?}", r.completion);
            if inside { 3 } else { 4 }
        };
        seen[class] += 1;
    }
    let n = train.len() as f64;
    let names = [
        "ideal",
        "swapped",
        "hard negative",
        "partial",
        "off-certificate",
    ];
    for ((name, k), e) in names.iter().zip(seen).zip(expected) {
        let (rate, want) = (k as f64 / n, e / n);
        // Three binomial standard deviations of the predicted share (below 3.3 points).
        let tolerance = 3.0 * (want * (1.0 - want) / n).sqrt();
        assert!(
            (rate - want).abs() < tolerance,
            "{name}: {rate:.3} vs {want:.3} ± {tolerance:.3}"
        );
    }
    // The headline: about 45 % plus the coincidences.
    let ideal = seen[0] as f64 / n;
    assert!((0.45..0.60).contains(&ideal), "{ideal}");
}

#[test]
fn deterministic_for_a_seed() {
    let text = |seed| {
        let (train, test) = generate(300, 30, seed);
        to_jsonl("train", &train, true) + &to_jsonl("test", &test, false)
    };
    assert_eq!(text(7), text(7));
    assert_ne!(text(7), text(8));
}

#[test]
fn items_render_compactly() {
    let it = |id: &str, cited: &[usize]| Item {
        id: id.to_string(),
        cited: cited.to_vec(),
    };
    assert_eq!(render(&[it("KA", &[1, 3]), it("MO", &[2])]), "KA13 MO2;");
    assert_eq!(render(&[it("QQ", &[4])]), "QQ4;");
}

/// The committed files are exactly what the generator writes, so they can always be rebuilt.
#[test]
fn committed_dataset_matches_generator() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/ecpo");
    let (train, test) = generate(TRAIN_SIZE, TEST_SIZE, SEED);
    for (name, examples) in [("train", &train), ("test", &test)] {
        let path = dir.join(format!("{name}.jsonl"));
        let committed = std::fs::read_to_string(&path).expect("run `cargo xtask gen-ecpo`");
        let fresh = to_jsonl(name, examples, name == "train");
        assert!(committed == fresh, "{} is stale", path.display());
    }
}
