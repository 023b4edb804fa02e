//! Bi-NAC in the run (`[binac]`, `step/binac.rs`): tiny runs of the bundled model on the sums
//! task show that the revisions train every step and the feedbacks on the critic's steps only,
//! that the knobs reach the run (group counts, and the penalties' exact effect on the critic's
//! reward over identical rollouts), and that combinations it cannot serve are refused by key.

mod common;

use common::{assert_live, get};

use rlvr_train::RunConfig;
use rlvr_train::metrics::Metrics;

fn run(extra: &[&str]) -> Vec<Metrics> {
    let sets = common::sums_sets(extra);
    common::run_history(&sets)
}

/// K_a = 2: step 0 trains drafts and revisions only, step 1 the feedbacks too; the counts are
/// groups × drafts_per_group × M (× G'); the update differs from the plain run's while the
/// drafts are the same.
#[test]
fn revisions_train_every_step_and_feedbacks_on_critic_steps() {
    let h = run(&[
        "binac.actor_steps_per_critic_step=2",
        "binac.feedbacks=3",
        "binac.revisions=2",
        "binac.drafts_per_group=2",
    ]);
    let groups = get(&h[0], "rollout/kept_groups");
    assert!(groups >= 1.0);
    assert_eq!(get(&h[0], "binac/critic_step"), 0.0);
    assert_eq!(get(&h[0], "binac/trained_feedbacks"), 0.0);
    assert_eq!(
        get(&h[0], "binac/trained_revisions"),
        groups * 2.0 * 3.0 * 2.0
    );
    assert_eq!(get(&h[1], "binac/critic_step"), 1.0);
    let groups1 = get(&h[1], "rollout/kept_groups");
    assert_eq!(get(&h[1], "binac/trained_feedbacks"), groups1 * 2.0 * 3.0);
    for m in &h {
        assert!(get(m, "binac/feedback_tokens_mean") <= 32.0);
        let r = get(m, "binac/revision_reward_mean");
        assert!((0.0..=1.0).contains(&r), "{r}");
    }
    let plain = run(&[]);
    assert_live(&h, &plain, "[binac]");
}

/// Over identical rollouts (same seed, same policy), λ_len moves the critic's mean reward by
/// exactly −λ_len · mean|f| / L_max and λ_leak by −λ_leak · leak_frac; the improvement does not
/// move.
#[test]
fn the_penalties_reach_the_critic_reward_exactly() {
    let base = ["binac.length_penalty=0.0", "binac.leak_penalty=0.0"];
    let free = run(&base);
    let long = run(&["binac.length_penalty=0.5", "binac.leak_penalty=0.0"]);
    let leak = run(&["binac.length_penalty=0.0", "binac.leak_penalty=2.0"]);
    let (f, l, k) = (&free[0], &long[0], &leak[0]);
    assert_eq!(
        get(f, "binac/improvement_mean"),
        get(l, "binac/improvement_mean")
    );
    let tokens = get(f, "binac/feedback_tokens_mean");
    assert!(tokens > 0.0);
    let want = get(f, "binac/critic_reward_mean") - 0.5 * tokens / 32.0;
    assert!((get(l, "binac/critic_reward_mean") - want).abs() < 1e-5);
    let want = get(f, "binac/critic_reward_mean") - 2.0 * get(f, "binac/leak_frac");
    assert!((get(k, "binac/critic_reward_mean") - want).abs() < 1e-5);
}

/// Groups of one, an [env], remote rollouts and stale rollouts are refused, naming the key.
#[test]
fn combinations_it_cannot_serve_are_refused() {
    let openai = [
        "rollout.engine=\"openai\"",
        "rollout.endpoints=[\"http://127.0.0.1:9\"]",
    ];
    let cases: [(&[&str], &str); 4] = [
        (&["binac.feedbacks=1"], "binac.feedbacks"),
        (&["env.kind=\"single_turn\""], "[env]"),
        (
            &["rollout.max_staleness=1", "objective.tis=\"truncate\""],
            "rollout.max_staleness",
        ),
        (&openai, "rollout.engine"),
    ];
    for (extra, key) in cases {
        let mut all = vec!["binac.feedbacks=4"];
        all.extend_from_slice(extra);
        let sets = common::sums_sets(&all);
        let err = RunConfig::load(None, &sets).expect_err(key).to_string();
        assert!(
            err.contains(key) && err.contains("binac"),
            "{extra:?}: {err}"
        );
    }
}
