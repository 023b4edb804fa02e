//! `rlvr compare`: every (config, seed) pair runs, and the table reports each arm's seeds,
//! accuracy and sampled tokens.

mod common;

use rlvr_train::run::compare::compare;

#[test]
fn two_configs_two_seeds_make_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Both configs are the tiny run of the other loop tests, written out; b changes the objective.
    let base = common::tiny_config(&dir.path().join("unused"), &[]).to_toml();
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::write(&a, &base).unwrap();
    let b_text = base.replace("kind = \"dapo\"", "kind = \"grpo\"");
    assert_ne!(b_text, base, "the tiny config names the dapo objective");
    std::fs::write(&b, b_text).unwrap();
    let arms = compare(&[a, b], &["train.steps=2".into()], 2, &out).unwrap();
    assert_eq!(arms.len(), 2);
    // Sampled response tokens per run: 2 steps x 4 prompts x 4 samples x at most 6 tokens.
    for arm in &arms {
        assert_eq!((arm.accuracy.len(), arm.sampled_tokens.len()), (2, 2));
        assert!(
            arm.sampled_tokens
                .iter()
                .all(|&t| (32.0..=192.0).contains(&t)),
            "{:?}",
            arm.sampled_tokens
        );
    }
    let table = std::fs::read_to_string(out.join("results.md")).unwrap();
    assert!(
        table.contains("| a | 2 |") && table.contains("| b | 2 |"),
        "{table}"
    );
    assert!(table.contains("sampled tokens"), "{table}");
}
