//! Properties of the generated GeoX task, checked on the records as written: an independent
//! reading of the JSONL with its own interpreter of the grid-program language (on the text,
//! not the generator's `grid` module).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::*;

/// The bundled model's alphabet (`rlvr_train::model::char_tokenizer::ALPHABET`).
const ALPHABET: &str = "0123456789+-*/=() .,:?ABCDEFGHIJKLMNOPQRSTUVWXYZ;";

/// Runs the program text `program` from the point text `input`: the final point's text, or
/// `None` when the program or point is malformed or a move leaves the 10 × 10 grid.
fn exec(program: &str, input: &str) -> Option<String> {
    if !(1..=6).contains(&program.len()) || input.len() != 2 {
        return None;
    }
    let digit = |c: char| c.to_digit(10).map(|d| d as i32);
    let mut chars = input.chars();
    let (mut x, mut y) = (digit(chars.next()?)?, digit(chars.next()?)?);
    for c in program.chars() {
        match c {
            'U' => y += 1,
            'D' => y -= 1,
            'R' => x += 1,
            'L' => x -= 1,
            _ => return None,
        }
        if !(0..10).contains(&x) || !(0..10).contains(&y) {
            return None;
        }
    }
    Some(format!("{x}{y}"))
}

/// All 100 point texts.
fn points() -> Vec<String> {
    (0..100).map(|i| format!("{:02}", i)).collect()
}

/// One record as written.
struct Record {
    id: String,
    prompt: String,
    mode: String,
    program: String,
    inputs: Vec<String>,
    outputs: Vec<String>,
    answer: String,
    completion: Option<String>,
}

impl Record {
    fn parse(line: &str) -> Record {
        let v: Value = serde_json::from_str(line).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = vec![
            "answer", "id", "inputs", "mode", "outputs", "program", "prompt",
        ];
        if v.get("completion").is_some() {
            want.insert(1, "completion");
        }
        assert_eq!(keys, want, "{line}");
        let s = |x: &Value| x.as_str().unwrap().to_string();
        let list = |x: &Value| x.as_array().unwrap().iter().map(s).collect();
        Record {
            id: s(&v["id"]),
            prompt: s(&v["prompt"]),
            mode: s(&v["mode"]),
            program: s(&v["program"]),
            inputs: list(&v["inputs"]),
            outputs: list(&v["outputs"]),
            answer: s(&v["answer"]),
            completion: v.get("completion").map(s),
        }
    }

    fn is_proposer(&self) -> bool {
        self.mode.starts_with("propose_")
    }

    /// Whether `text` is a right answer by re-execution of the record's fields.
    fn is_right(&self, text: &str) -> bool {
        let Some(body) = text.strip_suffix(';') else {
            return false;
        };
        match self.mode.as_str() {
            "deduction" => exec(&self.program, &self.inputs[0]).as_deref() == Some(body),
            "abduction" => exec(&self.program, body).as_deref() == Some(&self.outputs[0]),
            "induction" => self
                .inputs
                .iter()
                .zip(&self.outputs)
                .all(|(i, o)| exec(body, i).as_deref() == Some(o)),
            other => panic!("not a solver mode: {other}"),
        }
    }
}

fn records(text: &str) -> Vec<Record> {
    text.lines().map(Record::parse).collect()
}

fn dataset() -> &'static (Vec<Record>, Vec<Record>) {
    static D: std::sync::OnceLock<(Vec<Record>, Vec<Record>)> = std::sync::OnceLock::new();
    D.get_or_init(|| {
        let (train, test) = generate(SIZES, SEED);
        (
            records(&to_jsonl("train", &train, true)),
            records(&to_jsonl("test", &test, false)),
        )
    })
}

/// The test's own interpreter, on the examples worked by hand (and the brief's `I 23 43 51 71=`
/// is `RR`'s, not `RRU`'s: U moves y).
#[test]
fn the_reference_interpreter_by_hand() {
    assert_eq!(exec("RRU", "23").as_deref(), Some("44"));
    assert_eq!(exec("RR", "23").as_deref(), Some("43"));
    assert_eq!(exec("RR", "51").as_deref(), Some("71"));
    assert_eq!(exec("RRU", "51").as_deref(), Some("72"));
    assert_eq!(exec("L", "05"), None);
    assert_eq!(exec("UUUUUU", "04"), None);
    assert_eq!(exec("UUUUUU", "03").as_deref(), Some("09"));
    assert_eq!(exec("RL", "95"), None);
    assert_eq!(exec("DDL", "55").as_deref(), Some("43"));
    assert_eq!(exec("", "55"), None);
    assert_eq!(exec("RRRRRRR", "00"), None);
    // The generator's interpreter agrees on every program of up to three moves and every point.
    let mut programs = vec![String::new()];
    for _ in 0..3 {
        programs = programs
            .iter()
            .flat_map(|p| "UDLR".chars().map(move |c| format!("{p}{c}")))
            .collect();
        for p in &programs {
            let program = super::grid::tests::prog(p);
            for q in points() {
                let ours = program
                    .run(super::grid::tests::pt(&q))
                    .map(|r| r.to_string());
                assert_eq!(ours, exec(p, &q), "{p} from {q}");
            }
        }
    }
}

#[test]
fn texts_fit_the_models_alphabet_and_lengths() {
    let (train, test) = dataset();
    let in_alphabet = |s: &str| s.chars().all(|c| ALPHABET.contains(c));
    for r in train.iter().chain(test) {
        assert!(r.prompt.len() <= MAX_PROMPT_CHARS, "{}", r.prompt);
        assert!(in_alphabet(&r.prompt), "{}", r.prompt);
        assert!(r.answer.len() <= MAX_COMPLETION_CHARS, "{}", r.answer);
        assert!(in_alphabet(&r.answer), "{}", r.answer);
    }
    for r in train {
        let c = r.completion.as_deref().unwrap();
        assert!(
            !c.is_empty() && c.len() <= MAX_COMPLETION_CHARS && in_alphabet(c),
            "{c:?}"
        );
    }
    assert_eq!(MAX_PROMPT_CHARS, 24);
    assert_eq!(MAX_COMPLETION_CHARS, 14);
}

#[test]
fn splits_have_their_sizes_ids_and_a_mixed_order() {
    let (train, test) = dataset();
    fn count(rs: &[Record]) -> HashMap<&str, usize> {
        let mut m: HashMap<&str, usize> = HashMap::new();
        for r in rs {
            *m.entry(r.mode.as_str()).or_default() += 1;
        }
        m
    }
    let want_train: HashMap<&str, usize> = [
        ("deduction", TRAIN_PER_MODE),
        ("abduction", TRAIN_PER_MODE),
        ("induction", TRAIN_PER_MODE),
        ("propose_deduction", PROPOSALS_PER_MODE),
        ("propose_abduction", PROPOSALS_PER_MODE),
        ("propose_induction", PROPOSALS_PER_MODE),
    ]
    .into();
    let want_test: HashMap<&str, usize> = [
        ("deduction", TEST_PER_MODE),
        ("abduction", TEST_PER_MODE),
        ("induction", TEST_PER_MODE),
    ]
    .into();
    assert_eq!(count(train), want_train);
    assert_eq!(count(test), want_test);
    for (split, rs) in [("train", train), ("test", test)] {
        for (i, r) in rs.iter().enumerate() {
            assert_eq!(r.id, format!("geox-{split}-{i:05}"));
        }
        // Shuffled: the first tenth already has every mode of the split.
        let head = count(&rs[..rs.len() / 10]);
        assert_eq!(head.len(), count(rs).len(), "{split}: {head:?}");
    }
    for r in test {
        assert!(r.completion.is_none(), "{}", r.id);
    }
}

/// Each solver line's prompt is its fields written out, its outputs are its program re-run on
/// its inputs, and its answer is right by that re-execution.
#[test]
fn solver_lines_agree_with_a_reexecution() {
    let (train, test) = dataset();
    for r in train.iter().chain(test).filter(|r| !r.is_proposer()) {
        assert!(
            (1..=6).contains(&r.program.len()) && r.program.chars().all(|c| "UDLR".contains(c)),
            "{}",
            r.program
        );
        let n = if r.mode == "induction" { 2 } else { 1 };
        assert_eq!((r.inputs.len(), r.outputs.len()), (n, n), "{}", r.id);
        for (i, o) in r.inputs.iter().zip(&r.outputs) {
            assert_eq!(exec(&r.program, i).as_deref(), Some(o.as_str()), "{}", r.id);
        }
        let (p, i, o) = (&r.program, &r.inputs, &r.outputs);
        let prompt = match r.mode.as_str() {
            "deduction" => format!("D {p} {}=", i[0]),
            "abduction" => format!("A {p} {}=", o[0]),
            "induction" => {
                assert_ne!(i[0], i[1], "{}", r.id);
                format!("I {} {} {} {}=", i[0], o[0], i[1], o[1])
            }
            other => panic!("{other}"),
        };
        assert_eq!(r.prompt, prompt);
        assert!(r.is_right(&r.answer), "{}: {}", r.prompt, r.answer);
        match r.mode.as_str() {
            "deduction" => assert_eq!(r.answer, format!("{};", o[0])),
            "abduction" => {
                assert_eq!(r.answer, format!("{};", i[0]));
                // The answer is the only input the program maps to the output.
                let sources: Vec<String> = points()
                    .into_iter()
                    .filter(|q| exec(p, q).as_deref() == Some(o[0].as_str()))
                    .collect();
                assert_eq!(sources, [i[0].clone()], "{}", r.prompt);
            }
            _ => assert_eq!(r.answer, format!("{p};")),
        }
    }
}

/// Programs' lengths and moves, as drawn, on every solver line of both splits: each length about a sixth,
/// each move about a quarter.
#[test]
fn solver_programs_are_drawn_uniformly() {
    let (train, test) = dataset();
    let solver: Vec<&Record> = train
        .iter()
        .chain(test)
        .filter(|r| !r.is_proposer())
        .collect();
    let n = solver.len() as f64;
    for len in 1..=6 {
        let share = solver.iter().filter(|r| r.program.len() == len).count() as f64 / n;
        // Distinct prompts cap the one-move programs (4 moves × the points they run from, per
        // mode): they are thinned to about a tenth and the longer lengths share the rest.
        if len == 1 {
            assert!((0.08..1.0 / 6.0).contains(&share), "length 1: {share:.3}");
        } else {
            assert!(
                (share - 1.0 / 6.0).abs() < 0.035,
                "length {len}: {share:.3}"
            );
        }
    }
    let moves: String = solver.iter().map(|r| r.program.as_str()).collect();
    for m in "UDLR".chars() {
        let share = moves.chars().filter(|&c| c == m).count() as f64 / moves.len() as f64;
        assert!((share - 0.25).abs() < 0.015, "{m}: {share:.3}");
    }
}

#[test]
fn held_out_prompts_are_not_training_prompts() {
    let (train, test) = dataset();
    let seen: HashSet<&str> = train
        .iter()
        .filter(|r| !r.is_proposer())
        .map(|r| r.prompt.as_str())
        .collect();
    assert_eq!(
        seen.len(),
        3 * TRAIN_PER_MODE,
        "training solver prompts are distinct"
    );
    let all: HashSet<&str> = train.iter().map(|r| r.prompt.as_str()).collect();
    for r in test {
        assert!(!all.contains(r.prompt.as_str()), "{}", r.prompt);
    }
}

/// Proposer lines: only in training, the fixed prompt of their mode, empty reference fields and
/// a valid proposal as completion, each different from the others of its mode.
#[test]
fn proposer_lines_carry_valid_distinct_proposals() {
    let (train, test) = dataset();
    assert!(test.iter().all(|r| !r.is_proposer()));
    assert!(test.iter().all(|r| !r.prompt.starts_with('P')));
    let mut texts: HashSet<(&str, &str)> = HashSet::new();
    for r in train.iter().filter(|r| r.is_proposer()) {
        let (letter, n) = match r.mode.as_str() {
            "propose_deduction" => ('D', 1),
            "propose_abduction" => ('A', 1),
            "propose_induction" => ('I', 2),
            other => panic!("{other}"),
        };
        assert_eq!(r.prompt, format!("P {letter}="));
        assert!(r.program.is_empty() && r.answer.is_empty(), "{}", r.id);
        assert!(r.inputs.is_empty() && r.outputs.is_empty(), "{}", r.id);
        let c = r.completion.as_deref().unwrap();
        assert!(texts.insert((&r.mode, c)), "repeated proposal {c}");
        let words: Vec<&str> = c.strip_suffix(';').unwrap().split(' ').collect();
        assert_eq!(words.len(), 1 + n, "{c}");
        for input in &words[1..] {
            assert!(exec(words[0], input).is_some(), "{c} fails");
        }
        if n == 2 {
            assert_ne!(words[1], words[2], "{c}");
        }
    }
    assert_eq!(texts.len(), 3 * PROPOSALS_PER_MODE);
}

/// The teacher: right (by re-execution) on 0.60 ± 0.04 of the training solver lines, and every
/// wrong completion is one of the slips the module describes.
#[test]
fn the_teacher_is_right_sixty_percent_of_the_time_and_slips_plausibly() {
    let (train, _) = dataset();
    let solver: Vec<&Record> = train.iter().filter(|r| !r.is_proposer()).collect();
    let mut right = 0;
    for r in &solver {
        let c = r.completion.as_deref().unwrap();
        if r.is_right(c) {
            right += 1;
            continue;
        }
        let body = c.strip_suffix(';').unwrap();
        match r.mode.as_str() {
            "deduction" | "abduction" => {
                let truth = r.answer.strip_suffix(';').unwrap();
                let d: Vec<i32> = body
                    .chars()
                    .zip(truth.chars())
                    .map(|(a, b)| a.to_digit(10).unwrap() as i32 - b.to_digit(10).unwrap() as i32)
                    .collect();
                assert_eq!(body.len(), 2, "{c}");
                assert_eq!(d[0].abs() + d[1].abs(), 1, "{}: {c}", r.prompt);
            }
            _ => {
                let p = &r.program;
                if p.len() == 1 {
                    assert!(body.len() == 2 && body.starts_with(p.as_str()), "{p}: {c}");
                    assert!("UDLR".contains(&body[1..]), "{c}");
                } else {
                    assert_eq!(body, &p[..p.len() - 1], "{}", r.prompt);
                }
            }
        }
    }
    let share = right as f64 / solver.len() as f64;
    assert!((share - 0.60).abs() <= 0.04, "{share:.3}");
    assert_eq!(teacher::RIGHT, 60);
}

#[test]
fn deterministic_for_a_seed() {
    let sizes = Sizes {
        train_per_mode: 100,
        proposals_per_mode: 10,
        test_per_mode: 10,
    };
    let text = |seed| {
        let (train, test) = generate(sizes, seed);
        to_jsonl("train", &train, true) + &to_jsonl("test", &test, false)
    };
    assert_eq!(text(7), text(7));
    assert_ne!(text(7), text(8));
    let (a, b) = (generate(SIZES, SEED), generate(SIZES, SEED));
    assert_eq!(a, b);
}

/// The committed files are exactly what the generator writes, so they can always be rebuilt.
#[test]
fn committed_dataset_matches_generator() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/geox");
    let (train, test) = generate(SIZES, SEED);
    for (name, lines) in [("train", &train), ("test", &test)] {
        let path = dir.join(format!("{name}.jsonl"));
        let committed = std::fs::read_to_string(&path).expect("run `cargo xtask gen-geox`");
        let fresh = to_jsonl(name, lines, name == "train");
        assert!(committed == fresh, "{} is stale", path.display());
    }
}
