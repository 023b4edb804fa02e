//! `rollout.engine = "openai"`: rollouts sampled by an rlvr-serve server running in this
//! process on the run's starting policy, with the weights synced to it before every rollout.
//! The remote rollouts equal the local engine's for the same seed, the trainer's log-probs
//! agree with the server's, the run trains, and a dead endpoint or a bad config is refused with
//! the endpoint or key named.

mod common;

use std::path::Path;

use burn::tensor::Device;
use common::{history, tiny_config, trainer};
use rlvr_serve::{BackgroundServer, Server, ServerConfig};
use rlvr_train::rollout_engine::RemoteEngine;
use rlvr_train::step::rl_step_with_batch;
use rlvr_train::{RunConfig, RunOptions, train};

/// An rlvr-serve server on 127.0.0.1 (port 0) in this process; stops when dropped.
struct LocalServer {
    base: String,
    running: BackgroundServer,
}

impl LocalServer {
    fn start(model_dir: &Path) -> Self {
        let server =
            Server::from_dir(model_dir, ServerConfig::new("policy"), &Device::flex()).unwrap();
        let running = BackgroundServer::start(server, "127.0.0.1:0".parse().unwrap(), 2).unwrap();
        Self {
            base: running.base_url().to_string(),
            running,
        }
    }

    fn version(&self) -> u64 {
        self.running.server().stats().weights_version
    }
}

/// The settings of a short remote run against `endpoint`, then `extra`.
fn remote_config(run_dir: &Path, endpoint: &str, extra: &[&str]) -> RunConfig {
    let endpoints = format!("rollout.endpoints=[\"{endpoint}\"]");
    let mut sets = vec![
        "rollout.engine=\"openai\"",
        endpoints.as_str(),
        "rollout.concurrency=4",
        "train.steps=3",
        "train.warmup_steps=0",
        "eval.every=0",
        "checkpoint.every=0",
    ];
    sets.extend_from_slice(extra);
    tiny_config(run_dir, &sets)
}

/// A finished remote run: its server (still up), its per-step metrics, its directory.
struct RemoteRun {
    server: LocalServer,
    steps: Vec<rlvr_train::metrics::Metrics>,
    _tmp: tempfile::TempDir,
}

/// Serves the (cached) starting policy in process and trains [`remote_config`] with `extra`
/// against it to the end.
fn run_remote(extra: &[&str]) -> RemoteRun {
    let tmp = tempfile::tempdir().unwrap();
    let (_, base_dir) = trainer(&tiny_config(&tmp.path().join("warm"), &[]));
    let server = LocalServer::start(&base_dir);
    let run_dir = tmp.path().join("run");
    let config = remote_config(&run_dir, &server.base, extra);
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    train(config, &options).expect("the remote run trains");
    RemoteRun {
        server,
        steps: history(&run_dir),
        _tmp: tmp,
    }
}

/// Steps 1 and 2 of the same run on the local engine and on the server: the same prompts and
/// the same response tokens (the server samples row r with the local row's seed, and at step 2
/// from the weights synced after step 1's update), near-equal old log-probs, and mismatch
/// metrics near 0; the server's weights version goes up once per step.
#[test]
fn remote_rollouts_match_the_local_engine_and_sync_every_step() {
    let tmp = tempfile::tempdir().unwrap();
    // The local trainer first: it warm-starts the shared base policy the server then serves.
    let local_cfg = tiny_config(
        &tmp.path().join("local"),
        &["train.warmup_steps=0", "eval.every=0"],
    );
    let (mut local, base_dir) = trainer(&local_cfg);
    let server = LocalServer::start(&base_dir);
    assert_eq!(server.version(), 0);
    let remote_dir = tmp.path().join("remote");
    let remote_cfg = remote_config(&remote_dir, &server.base, &[]);
    let (mut remote, _) = trainer(&remote_cfg);
    remote.remote = RemoteEngine::from_config(&remote_cfg.rollout, &remote_dir);
    assert!(remote.remote.is_some());

    for step in 0..2 {
        let (lm, lb) = rl_step_with_batch(&mut local, step).unwrap();
        let (rm, rb) = rl_step_with_batch(&mut remote, step).unwrap();
        assert_eq!(server.version(), step as u64 + 1, "one sync per step");
        assert_eq!(rm["rollout/weights_version"], (step + 1) as f64);
        assert!(rm["time/weight_sync_s"] > 0.0);
        assert_eq!(lb.samples.len(), 16);
        assert_eq!(lb.samples.len(), rb.samples.len());
        for (i, (l, r)) in lb.samples.iter().zip(&rb.samples).enumerate() {
            assert_eq!(l.prompt, r.prompt, "step {step} row {i}: prompt");
            assert_eq!(l.response, r.response, "step {step} row {i}: response");
            assert_eq!(l.finish, r.finish, "step {step} row {i}: finish");
            assert_eq!(l.text, r.text);
            for (a, b) in l.old_logp.iter().zip(&r.old_logp) {
                assert!((a - b).abs() < 1e-4, "step {step} row {i}: {a} vs {b}");
            }
        }
        assert!(
            rm["rollout/logp_mismatch_mean"] < 1e-3,
            "{}",
            rm["rollout/logp_mismatch_mean"]
        );
        assert!(rm["rollout/logp_mismatch_max"] < 1e-2);
        assert!((rm["rollout/is_ratio_mean"] - 1.0).abs() < 1e-3);
        assert!(rm["rollout/sampler_kl"].abs() < 1e-3);
        assert!(!lm.contains_key("rollout/logp_mismatch_mean"));
        assert!(rm["optim/grad_norm"] > 0.0);
        assert_eq!(lm["reward/mean"], rm["reward/mean"]);
    }
    // The synced policy is the trainer's after its two updates (the last sync followed the
    // first update; the server answers with the weights of that sync).
    assert!(remote_dir.join("sync/policy/model.safetensors").exists());
    assert!(remote_dir.join("sync/policy/tokenizer.json").exists());
}

/// Multi-turn episodes on the server (`[env] kind = "calculator"`, the tiny model warm-started
/// on the calculator task so that it calls the tool): each turn is one request per row with the
/// row's token ids so far, and for two steps every episode equals the local engine's token for
/// token: the same policy turns and tool observations, loss mask, answer and reward; the
/// trainer's log-probs of the server's turns agree with the server's on the policy's tokens.
#[test]
fn remote_episodes_match_the_local_engine_token_for_token() {
    let tmp = tempfile::tempdir().unwrap();
    let data = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../datasets/agent-calculator"
    );
    let sets = [
        "model.alphabet=\"0123456789+-*/=() .,:?<>{}\\\"_abcdefghijklmnopqrstuvwxyz\"".to_string(),
        format!("data.train=\"{data}/train.jsonl\""),
        format!("data.eval=\"{data}/test.jsonl\""),
        "sft.steps=300".into(),
        "rollout.max_new_tokens=96".into(),
        "objective.overlong_penalty=0.0".into(),
        "env={ kind = \"calculator\", max_tokens = 256, max_turns = 3, \
         observation_template = \"{{ observation }}\" }"
            .into(),
        "train.warmup_steps=0".into(),
        "eval.every=0".into(),
    ];
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (mut local, base_dir) = trainer(&tiny_config(&tmp.path().join("local"), &sets));
    let server = LocalServer::start(&base_dir);
    let remote_dir = tmp.path().join("remote");
    let remote_cfg = remote_config(&remote_dir, &server.base, &sets);
    let (mut remote, _) = trainer(&remote_cfg);
    remote.remote = RemoteEngine::from_config(&remote_cfg.rollout, &remote_dir);
    let mut observations = 0;
    for step in 0..2 {
        let (lm, lb) = rl_step_with_batch(&mut local, step).unwrap();
        let (rm, rb) = rl_step_with_batch(&mut remote, step).unwrap();
        assert_eq!(server.version(), step as u64 + 1, "one sync per step");
        assert_eq!(lb.samples.len(), rb.samples.len());
        for (i, (l, r)) in lb.samples.iter().zip(&rb.samples).enumerate() {
            assert_eq!(l.prompt, r.prompt, "step {step} row {i}: prompt");
            assert_eq!(l.response, r.response, "step {step} row {i}: trajectory");
            assert_eq!(l.loss_mask, r.loss_mask, "step {step} row {i}: loss mask");
            assert_eq!((&l.text, l.reward), (&r.text, r.reward));
            observations += l.loss_mask.iter().filter(|&&own| !own).count();
            for ((a, b), own) in l.old_logp.iter().zip(&r.old_logp).zip(&r.loss_mask) {
                if *own {
                    assert!((a - b).abs() < 1e-4, "step {step} row {i}: {a} vs {b}");
                }
            }
        }
        assert!(lm["env/tool_calls_mean"] > 0.0, "{lm:?}");
        for key in ["env/turns_mean", "env/tool_calls_mean", "reward/mean"] {
            assert_eq!(lm[key], rm[key], "{key}");
        }
        assert!(rm["rollout/logp_mismatch_mean"] < 1e-3, "{rm:?}");
    }
    assert!(
        observations > 0,
        "no tool response: the episodes had one turn"
    );
}

/// A whole run on the server through `rlvr_train::train`: every step syncs (the server's
/// version goes up by one per step), trains (grad norm > 0), and logs the mismatch metrics.
#[test]
fn a_remote_run_trains_and_logs_the_mismatch() {
    let RemoteRun { server, steps, .. } = run_remote(&[]);
    assert_eq!(steps.len(), 3);
    assert_eq!(server.version(), 3);
    for (i, m) in steps.iter().enumerate() {
        assert_eq!(
            m["rollout/weights_version"],
            (i + 1) as f64,
            "step {}",
            i + 1
        );
        assert!(m["optim/grad_norm"] > 0.0, "step {}", i + 1);
        assert!(m["time/weight_sync_s"] > 0.0);
        assert!(m["rollout/logp_mismatch_mean"] < 1e-3, "{m:?}");
        for key in [
            "rollout/logp_mismatch_max",
            "rollout/is_ratio_max",
            "rollout/is_ratio_mean",
            "rollout/sampler_kl",
        ] {
            assert!(m[key].is_finite(), "{key}");
        }
        assert!(m["rollout/is_ratio_max"] >= m["rollout/is_ratio_mean"]);
    }
}

/// `rollout.sync_every = 2` with one optimizer step per RL step: syncs before steps 1 and 3
/// only, so step 2 samples from the step-1 weights while the trainer has moved on.
#[test]
fn sync_every_two_skips_every_other_sync() {
    let RemoteRun { server, steps, .. } = run_remote(&["rollout.sync_every=2"]);
    let versions: Vec<f64> = steps.iter().map(|m| m["rollout/weights_version"]).collect();
    assert_eq!(versions, vec![1.0, 1.0, 2.0]);
    assert_eq!(server.version(), 2);
}

/// Asynchronous rollouts on the server (`rollout.max_staleness = 1`): step t+1's requests go
/// out during step t's update, so they are answered by the weights synced before step t or,
/// once the next sync lands, by those synced before step t+1. Every reply is mapped to the step
/// of its weights: step 1 (nothing prefetched) is fresh, later steps hold samples one step old
/// and none older; the server still gets one sync per step.
#[test]
fn async_rollouts_on_the_server_are_at_most_one_step_stale() {
    let RemoteRun { server, steps, .. } = run_remote(&[
        "rollout.max_staleness=1",
        "objective.tis=\"truncate\"",
        "train.steps=4",
        "train.lr=1e-2",
    ]);
    assert_eq!(steps.len(), 4);
    assert_eq!(server.version(), 4, "one sync per step");
    assert_eq!(steps[0]["rollout/staleness_max"], 0.0);
    let mut stale = 0.0;
    for (i, m) in steps.iter().enumerate().skip(1) {
        assert!(m["rollout/staleness_max"] <= 1.0, "step {}: {m:?}", i + 1);
        assert_eq!(m["rollout/stale_dropped_groups"], 0.0);
        assert!(m["optim/grad_norm"] > 0.0);
        stale += m["rollout/staleness_mean"];
    }
    assert!(stale > 0.0, "no prefetched sample came from older weights");
}

/// `rollout.concurrency` bounds the requests in flight: with 1 the server never decodes more
/// than one row at a time, with 4 it batches several (and never more than 4).
#[test]
fn rollout_concurrency_bounds_the_servers_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, base_dir) = trainer(&tiny_config(&tmp.path().join("warm"), &[]));
    let mut peaks = Vec::new();
    for concurrency in [1, 4] {
        let server = LocalServer::start(&base_dir);
        let run_dir = tmp.path().join(format!("run-{concurrency}"));
        let set = format!("rollout.concurrency={concurrency}");
        let config = remote_config(&run_dir, &server.base, &[set.as_str(), "train.steps=2"]);
        let options = RunOptions {
            quiet: true,
            ..Default::default()
        };
        train(config, &options).expect("the remote run trains");
        peaks.push(server.running.server().stats().peak_batch_rows);
    }
    assert_eq!(peaks[0], 1, "one request in flight: {peaks:?}");
    assert!((2..=4).contains(&peaks[1]), "{peaks:?}");
}

/// `rollout.server = "sglang"`: the SGLang sync request and no reliance on the server's
/// versions (the client counts its syncs), run against rlvr-serve, which answers that request
/// too; the count matches the server's own version after every step.
#[test]
fn an_sglang_shaped_server_is_synced_and_counted_by_the_client() {
    let RemoteRun { server, steps, .. } = run_remote(&["rollout.server=\"sglang\""]);
    let versions: Vec<f64> = steps.iter().map(|m| m["rollout/weights_version"]).collect();
    assert_eq!(versions, vec![1.0, 2.0, 3.0]);
    assert_eq!(server.version(), 3);
}

/// An endpoint nobody listens on fails the run after the retries, naming the endpoint.
#[test]
fn an_unreachable_endpoint_fails_naming_it() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }; // closed again: connections are refused
    let endpoint = format!("http://127.0.0.1:{port}");
    let tmp = tempfile::tempdir().unwrap();
    let config = remote_config(&tmp.path().join("run"), &endpoint, &["rollout.retries=2"]);
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let Err(err) = train(config, &options) else {
        panic!("no server: the run must fail");
    };
    let msg = err.to_string();
    assert!(msg.contains(&endpoint), "{msg}");
    assert!(msg.contains("after 3 attempt(s)"), "{msg}");
}

/// A server that accepts the connection and never answers is given up after
/// `rollout.request_timeout_s` (here 0.5 s, no retries), naming it.
#[test]
fn a_silent_endpoint_times_out_naming_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        // Accept and hold every connection without a reply.
        let held: Vec<_> = listener.incoming().collect();
        drop(held);
    });
    let tmp = tempfile::tempdir().unwrap();
    let config = remote_config(
        &tmp.path().join("run"),
        &endpoint,
        &["rollout.retries=0", "rollout.request_timeout_s=0.5"],
    );
    let options = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let start = std::time::Instant::now();
    let Err(err) = train(config, &options) else {
        panic!("a silent server: the run must fail");
    };
    let msg = err.to_string();
    assert!(msg.contains(&endpoint), "{msg}");
    assert!(msg.contains("after 1 attempt(s)"), "{msg}");
    assert!(
        msg.to_lowercase().contains("timeout") || msg.to_lowercase().contains("timed out"),
        "{msg}"
    );
    // The warm start is cached by the other tests' first use; the request itself gave up fast.
    assert!(start.elapsed().as_secs_f64() < 60.0);
}

/// Configurations that cannot work are refused at load, naming the key.
#[test]
fn bad_engine_configs_are_refused_naming_the_key() {
    let load = |sets: &[&str]| {
        RunConfig::load(
            None,
            &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    };
    let refused = |sets: &[&str], key: &str| {
        let e = load(sets)
            .err()
            .unwrap_or_else(|| panic!("{sets:?} was accepted"));
        assert!(e.to_string().contains(key), "{sets:?}: {e}");
    };
    let ok = "rollout.endpoints=[\"http://127.0.0.1:8000\"]";
    refused(&["rollout.engine=\"openai\""], "rollout.endpoints");
    refused(&[ok], "rollout.endpoints");
    refused(
        &[
            "rollout.engine=\"openai\"",
            "rollout.endpoints=[\"https://h:1\"]",
        ],
        "rollout.endpoints[0]",
    );
    refused(
        &[
            "rollout.engine=\"openai\"",
            "rollout.endpoints=[\"http://h:1/v1\"]",
        ],
        "rollout.endpoints[0]",
    );
    refused(
        &["rollout.engine=\"openai\"", ok, "rollout.concurrency=0"],
        "rollout.concurrency",
    );
    refused(
        &["rollout.engine=\"openai\"", ok, "rollout.sync_every=0"],
        "rollout.sync_every",
    );
    refused(
        &[
            "rollout.engine=\"openai\"",
            ok,
            "rollout.request_timeout_s=0",
        ],
        "rollout.request_timeout_s",
    );
    refused(&["rollout.engine=\"vllm\""], "engine");
    // TIS without truncation: the server's log-probs are the sampler's at T = 1 only.
    assert!(
        load(&[
            "rollout.engine=\"openai\"",
            ok,
            "objective.tis=\"truncate\""
        ])
        .is_ok()
    );
    refused(
        &[
            "rollout.engine=\"openai\"",
            ok,
            "objective.tis=\"truncate\"",
            "rollout.temperature=0.7",
        ],
        "objective.tis",
    );
    refused(&["objective.tis=\"truncate\""], "objective.tis");
    let c = load(&["rollout.engine=\"openai\"", ok]).unwrap();
    assert_eq!(
        (
            c.rollout.concurrency,
            c.rollout.retries,
            c.rollout.sync_every
        ),
        (8, 3, 1)
    );
    assert_eq!(c.rollout.request_timeout_s, 600.0);
}
