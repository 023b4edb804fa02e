//! Properties of the generated K2V task, checked on the records as written (an independent
//! reading of the JSONL, not the generator's own structures where it matters).

use std::collections::HashSet;

use serde_json::Value;

use super::synth::{MASK, mask_mentions, traverse};
use super::*;

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The graph as written to `triples.jsonl`: `(head, relation, tail)` names.
fn graph(world: &World) -> HashSet<(String, String, String)> {
    lines(&world.to_jsonl())
        .iter()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap().to_string();
            (s("head"), s("relation"), s("tail"))
        })
        .collect()
}

/// Reads `"KOV BORN ZAR."`-style sentences back into `(head, relation, tail)`.
fn parse_sentences(text: &str) -> Vec<(String, String, String)> {
    text.split_terminator('.')
        .map(|s| {
            let w: Vec<&str> = s.split_whitespace().collect();
            assert_eq!(w.len(), 3, "{s:?}");
            let rel = match w[1] {
                "BORN" => "born_in",
                "WORKS" => "works_in",
                "IN" => "in_country",
                "SPEAKS" => "speaks",
                other => panic!("unknown verb {other}"),
            };
            (w[0].to_string(), rel.to_string(), w[2].to_string())
        })
        .collect()
}

fn dataset() -> &'static (Dataset, Vec<Value>, Vec<Value>) {
    static D: std::sync::OnceLock<(Dataset, Vec<Value>, Vec<Value>)> = std::sync::OnceLock::new();
    D.get_or_init(|| {
        let d = generate(SEED);
        let train = lines(&to_jsonl("train", &d.train, &d.world, true));
        let test = lines(&to_jsonl("test", &d.test, &d.world, false));
        (d, train, test)
    })
}

#[test]
fn sizes_are_reasonable() {
    let (d, train, test) = dataset();
    assert_eq!(d.world.names.len(), 64);
    assert_eq!(d.world.triples.len(), 6 + 18 + 2 * 36);
    assert!(
        train.len() > 1_000 && test.len() > 100,
        "{} {}",
        train.len(),
        test.len()
    );
}

#[test]
fn deterministic_for_a_seed() {
    let a = generate(7);
    let b = generate(7);
    let c = generate(8);
    let text = |d: &Dataset| to_jsonl("train", &d.train, &d.world, true) + &d.world.to_jsonl();
    assert_eq!(text(&a), text(&b));
    assert_ne!(text(&a), text(&c));
}

#[test]
fn no_question_contains_its_answer() {
    let (_, train, test) = dataset();
    for r in train.iter().chain(test) {
        let (p, a) = (r["prompt"].as_str().unwrap(), r["answer"].as_str().unwrap());
        assert!(!p.to_uppercase().contains(a), "{r}");
        assert!(p.contains(MASK), "{r}");
    }
}

/// Putting the answer back into the blank gives facts of the graph, and no other entity
/// does: the answer is recoverable from the graph, and only it.
#[test]
fn every_answer_is_recoverable_from_the_graph_alone() {
    let (d, train, test) = dataset();
    let facts = graph(&d.world);
    let names: HashSet<&str> = d.world.names.iter().map(String::as_str).collect();
    for r in train.iter().chain(test) {
        let (p, a) = (r["prompt"].as_str().unwrap(), r["answer"].as_str().unwrap());
        let fills = |x: &str| {
            parse_sentences(&p.replace(MASK, x))
                .iter()
                .all(|f| facts.contains(f))
        };
        assert!(fills(a), "{r}");
        let others: Vec<&&str> = names.iter().filter(|x| **x != a && fills(x)).collect();
        assert!(others.is_empty(), "{r}: also {others:?}");
        // The stored subgraph is the context's facts.
        let sub: Vec<(String, String, String)> = r["subgraph"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let t = strs(t);
                (t[0].clone(), t[1].clone(), t[2].clone())
            })
            .collect();
        assert_eq!(sub, parse_sentences(&p.replace(MASK, a)), "{r}");
        assert!((1..=3).contains(&sub.len()), "{r}");
    }
}

#[test]
fn distractors_are_adjacent_entities_outside_the_question() {
    let (d, train, test) = dataset();
    let index = |n: &str| d.world.names.iter().position(|x| x == n).unwrap();
    for r in train.iter().chain(test) {
        let (p, a) = (r["prompt"].as_str().unwrap(), r["answer"].as_str().unwrap());
        let adjacent = strs(&r["adjacent"]);
        assert!(adjacent.len() >= 4, "{r}");
        let context = p.replace(MASK, a);
        for e in &adjacent {
            assert!(e != a && !context.contains(e.as_str()), "{r}");
        }
        // Breadth-first: the first one is a direct neighbour of the answer when it has one
        // outside the question.
        let direct: Vec<String> = d
            .world
            .neighbours(index(a))
            .into_iter()
            .map(|n| d.world.names[n].clone())
            .filter(|n| !context.contains(n.as_str()))
            .collect();
        if !direct.is_empty() {
            assert!(direct.contains(&adjacent[0]), "{r}");
        }
    }
}

#[test]
fn splits_are_disjoint_by_subgraph() {
    let (_, train, test) = dataset();
    let key = |r: &Value| {
        let mut s: Vec<String> = r["subgraph"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| strs(t).join(" "))
            .collect();
        s.sort();
        s
    };
    let train_sets: HashSet<Vec<String>> = train.iter().map(key).collect();
    let train_prompts: HashSet<&str> = train
        .iter()
        .map(|r| r["prompt"].as_str().unwrap())
        .collect();
    for r in test {
        assert!(!train_sets.contains(&key(r)), "{r}");
        assert!(
            !train_prompts.contains(r["prompt"].as_str().unwrap()),
            "{r}"
        );
        assert!(r.get("completion").is_none());
    }
}

#[test]
fn the_teacher_slips_and_skips_at_its_rates() {
    let (_, train, _) = dataset();
    let (mut skipped, mut slipped) = (0usize, 0usize);
    for r in train {
        let c = r["completion"].as_str().unwrap();
        let a = r["answer"].as_str().unwrap();
        let (think, rest) = match c.strip_prefix('(') {
            Some(x) => {
                let (t, rest) = x.split_once(')').unwrap();
                (Some(t), rest)
            }
            None => (None, c),
        };
        let given = rest.strip_prefix('=').unwrap().strip_suffix(';').unwrap();
        match think {
            None => skipped += 1,
            Some(t) => assert!(strs(&r["adjacent"]).iter().any(|e| e == t), "{r}"),
        }
        if given != a {
            slipped += 1;
            assert_eq!(given.len(), 3);
        }
    }
    // 30 % each (binomial sd < 1.5 % at n > 1,000).
    let n = train.len() as f64;
    for (what, k) in [("skipped", skipped), ("slipped", slipped)] {
        let rate = k as f64 / n;
        assert!((0.25..0.35).contains(&rate), "{what}: {rate}");
    }
}

#[test]
fn masking_by_hand() {
    assert_eq!(
        mask_mentions("zar ZAR. ZARO xZAR Zar", "ZAR", "*"),
        "* *. ZARO xZAR *"
    );
    assert_eq!(mask_mentions("KOV BORN ZAR.", "BOR", "*"), "KOV BORN ZAR.");
}

#[test]
fn traversal_is_depth_one_with_at_most_two_extra_edges() {
    let (d, _, _) = dataset();
    let mut rng = SplitMix64(3);
    for _ in 0..500 {
        let e = traverse(&d.world, &mut rng);
        assert!((1..=3).contains(&e.len()));
        let seed = d.world.triples[e[0]];
        for &x in &e[1..] {
            let t = d.world.triples[x];
            assert!(
                [t.head, t.tail]
                    .iter()
                    .any(|n| *n == seed.head || *n == seed.tail)
            );
        }
        let distinct: HashSet<_> = e.iter().collect();
        assert_eq!(distinct.len(), e.len());
    }
}

/// The committed files are exactly what the generator writes.
#[test]
fn committed_dataset_matches_generator() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/k2v");
    let d = generate(SEED);
    for (name, fresh) in [
        ("triples", d.world.to_jsonl()),
        ("train", to_jsonl("train", &d.train, &d.world, true)),
        ("test", to_jsonl("test", &d.test, &d.world, false)),
    ] {
        let path = dir.join(format!("{name}.jsonl"));
        let committed = std::fs::read_to_string(&path).expect("run `cargo xtask gen-k2v`");
        assert!(committed == fresh, "{} is stale", path.display());
    }
}
