//! The server under load and faults: many more clients than batch rows, clients that go away
//! mid-stream, oversized requests, a weight update while requests are generating, and the
//! engine's own accounting after rounds of load. Every answer is checked against the same
//! request sent alone or against `rlvr_models::generate`, never against itself.

mod common;

use std::sync::Barrier;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use burn::module::Module;
use common::{TestServer, fixture, ids, sse_data};
use rlvr_models::{CausalLm, GenerationConfig, generate};
use rlvr_serve::EngineStats;
use serde_json::{Value, json};

/// Sampling as the server does it at temperature 1 with no truncation.
fn sampling(max_new_tokens: usize, ignore_eos: bool) -> GenerationConfig {
    GenerationConfig {
        max_new_tokens,
        temperature: 1.0,
        top_k: None,
        top_p: None,
        stop_token_ids: if ignore_eos {
            Vec::new()
        } else {
            vec![fixture::EOS_ID]
        },
        pad_token_id: 0,
    }
}

/// A seeded completions request at temperature 1 with token ids and log-probs.
fn request(prompt: &str, max_tokens: usize, seed: u64) -> Value {
    json!({"prompt": prompt, "max_tokens": max_tokens, "temperature": 1.0, "seed": seed,
           "return_token_ids": true, "logprobs": 0})
}

/// Asserts that two answers to the same request carry the same tokens, finish reasons and
/// (up to float rounding of batched logits) log-probs.
fn assert_same_answer(got: &Value, alone: &Value, what: &str) {
    let (a, b) = (
        got["choices"].as_array().unwrap(),
        alone["choices"].as_array().unwrap(),
    );
    assert_eq!(a.len(), b.len(), "{what}: choice count");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(
            ids(&x["token_ids"]),
            ids(&y["token_ids"]),
            "{what} choice {i}"
        );
        assert_eq!(x["finish_reason"], y["finish_reason"], "{what} choice {i}");
        let lx = x["logprobs"]["token_logprobs"].as_array().unwrap();
        let ly = y["logprobs"]["token_logprobs"].as_array().unwrap();
        for (p, q) in lx.iter().zip(ly) {
            let (p, q) = (p.as_f64().unwrap(), q.as_f64().unwrap());
            assert!(
                (p - q).abs() <= 1e-4,
                "{what} choice {i}: log-prob {p} vs {q}"
            );
        }
    }
}

/// Polls the engine until `done` holds for its stats (panics with the last stats after
/// `timeout`).
fn wait_for(s: &TestServer, timeout: Duration, done: impl Fn(&EngineStats) -> bool) {
    let start = Instant::now();
    loop {
        let stats = s.server.stats();
        if done(&stats) {
            return;
        }
        assert!(start.elapsed() < timeout, "engine stuck at {stats:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Status, `x-weights-version` header and body of one answer.
type Answer = (u16, Option<u64>, String);

/// One client thread per body, each posting to `/v1/completions` once `start` opens.
fn post_all<'scope>(
    scope: &'scope Scope<'scope, '_>,
    s: &'scope TestServer,
    bodies: &'scope [Value],
    start: &'scope Barrier,
) -> Vec<ScopedJoinHandle<'scope, Answer>> {
    bodies
        .iter()
        .map(|body| {
            scope.spawn(move || {
                start.wait();
                s.post("/v1/completions", body)
            })
        })
        .collect()
}

/// Every client's answer, in order.
fn join(handles: Vec<ScopedJoinHandle<'_, Answer>>) -> Vec<Answer> {
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// No row decoding, no request queued, no KV cache held.
fn idle(stats: &EngineStats) -> bool {
    stats.active_rows == 0
        && stats.queued_requests == 0
        && stats.kv_cache_rows == 0
        && stats.kv_cache_len == 0
}

/// The token ids a streamed completion (`return_token_ids`, one choice) delivered, and
/// whether it ended with `[DONE]`.
fn streamed_ids(body: &str) -> (Vec<u32>, bool) {
    let data = sse_data(body);
    let done = data.last().is_some_and(|d| d == "[DONE]");
    let mut tokens = Vec::new();
    for chunk in data.iter().filter(|d| *d != "[DONE]") {
        let v: Value = serde_json::from_str(chunk).unwrap();
        if let Some(t) = v["choices"][0].get("token_ids") {
            tokens.extend(ids(t));
        }
    }
    (tokens, done)
}

#[test]
fn sixty_four_clients_over_sixteen_rows_are_all_answered_as_if_alone() {
    let max_batch = 16;
    let s = TestServer::start(31, |c| c.max_batch = max_batch);
    let clients = 64;
    let requests: Vec<Value> = (0..clients)
        .map(|i| {
            let prompt = format!("load {i} {}", "z".repeat(i % 5));
            request(&prompt, 4 + i % 5, 1000 + i as u64)
        })
        .collect();
    let start = Barrier::new(clients);
    let answers = std::thread::scope(|scope| join(post_all(scope, &s, &requests, &start)));
    assert_eq!(answers.len(), clients);
    let stats = s.server.stats();
    assert!(
        stats.peak_batch_rows <= max_batch,
        "the batch grew to {} rows, above max_batch {max_batch}",
        stats.peak_batch_rows
    );
    // 64 clients at once keep more than 16 rows waiting: the batch was full at its peak.
    assert_eq!(
        stats.peak_batch_rows, max_batch,
        "the load never filled the batch"
    );
    wait_for(&s, Duration::from_secs(10), idle);
    // The same requests, one at a time.
    for (i, ((status, version, text), r)) in answers.iter().zip(&requests).enumerate() {
        assert_eq!(*status, 200, "client {i}: {text}");
        assert_eq!(*version, Some(0), "client {i}");
        let got: Value = serde_json::from_str(text).unwrap();
        let alone = s.post_ok("/v1/completions", r);
        assert_same_answer(&got, &alone, &format!("client {i}"));
    }
}

#[test]
fn clients_that_go_away_mid_stream_free_their_rows_while_others_finish() {
    let s = TestServer::start(32, |c| {
        c.max_batch = 16;
        c.max_tokens_limit = 4000;
    });
    let leavers = 4;
    let stayers = 8;
    let streamers = 2;
    let endless = |i: usize| {
        json!({"prompt": format!("endless {i}"), "max_tokens": 3000, "stream": true,
               "temperature": 1.0, "ignore_eos": true, "seed": i})
    };
    let finite = |i: usize| request(&format!("stay {i}"), 24, 500 + i as u64);
    // The others: plain requests, then streamed ones.
    let others: Vec<Value> = (0..stayers + streamers)
        .map(|i| {
            let mut r = finite(i);
            r["stream"] = json!(i >= stayers);
            r
        })
        .collect();
    let in_batch = Barrier::new(leavers + others.len());
    let answers: Vec<_> = std::thread::scope(|scope| {
        for i in 0..leavers {
            let (s, in_batch, body) = (&s, &in_batch, endless(i));
            scope.spawn(move || {
                let stream = s.open_stream(&body, 3);
                in_batch.wait();
                // Stay a little while the others decode beside this row, then go away.
                std::thread::sleep(Duration::from_millis(20 * (i as u64 + 1)));
                stream.shutdown(std::net::Shutdown::Both).unwrap();
            });
        }
        join(post_all(scope, &s, &others, &in_batch))
    });
    let (plain, streamed) = answers.split_at(stayers);
    wait_for(&s, Duration::from_secs(30), idle);
    // The leavers' rows left long before their 3000 tokens each.
    let generated = s.server.stats().generated_tokens;
    assert!(
        generated < (leavers * 3000 / 2) as u64,
        "{generated} tokens generated"
    );
    for (i, (status, _, text)) in plain.iter().enumerate() {
        assert_eq!(*status, 200, "stayer {i}: {text}");
        let got: Value = serde_json::from_str(text).unwrap();
        let alone = s.post_ok("/v1/completions", &finite(i));
        assert_same_answer(&got, &alone, &format!("stayer {i}"));
    }
    for (i, (status, _, text)) in streamed.iter().enumerate() {
        assert_eq!(*status, 200, "streamer {i}: {text}");
        let (tokens, done) = streamed_ids(text);
        assert!(done, "streamer {i} ended without [DONE]");
        let alone = s.post_ok("/v1/completions", &finite(stayers + i));
        assert_eq!(
            tokens,
            ids(&alone["choices"][0]["token_ids"]),
            "streamer {i}"
        );
    }
}

/// Asserts a 4xx OpenAI-shaped error with `code` and `param`.
fn assert_error(answer: (u16, Option<u64>, String), status: u16, code: &str, param: Value) {
    let (got, version, text) = answer;
    assert_eq!(got, status, "{text}");
    assert_eq!(version, Some(0), "the weights version header");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    let e = &v["error"];
    assert_eq!(e["code"], code, "{v}");
    assert_eq!(e["param"], param, "{v}");
    assert_eq!(e["type"], "invalid_request_error", "{v}");
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
}

#[test]
fn oversized_requests_are_refused_with_the_field_named() {
    let s = TestServer::start(33, |c| {
        c.max_body_bytes = 16 << 10;
        c.max_tokens_limit = 4096;
    });
    // The tiny model's context: 4096 positions; one character is one token.
    let context = 4096;
    let chat = |content: String, extra: Value| {
        let mut body = json!({"messages": [{"role": "user", "content": content}]});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        s.post("/v1/chat/completions", &body)
    };
    // Bodies over the limit, on every POST endpoint.
    let big = "a".repeat(17 << 10);
    assert_error(
        chat(big.clone(), json!({})),
        413,
        "body_too_large",
        Value::Null,
    );
    let weights = s.post("/update_weights_from_disk", &json!({"model_path": big}));
    assert_eq!(weights.0, 413, "{}", weights.2);
    let reply: Value = serde_json::from_str(&weights.2).unwrap();
    assert_eq!(reply["success"], false);
    assert_eq!(reply["error"]["code"], "body_too_large");
    // A prompt that alone fills the context: the prompt field is named.
    let full = "a".repeat(context);
    assert_error(
        s.post("/v1/completions", &json!({"prompt": full, "max_tokens": 1})),
        400,
        "context_length_exceeded",
        json!("prompt"),
    );
    assert_error(
        s.post("/v1/completions", &json!({"prompt": vec![7; context + 1]})),
        400,
        "context_length_exceeded",
        json!("prompt"),
    );
    assert_error(
        chat(full, json!({})),
        400,
        "context_length_exceeded",
        json!("messages"),
    );
    // A prompt that fits, with max_tokens past the rest of the context.
    let long = "a".repeat(context - 100);
    assert_error(
        s.post(
            "/v1/completions",
            &json!({"prompt": long, "max_tokens": 101}),
        ),
        400,
        "context_length_exceeded",
        json!("max_tokens"),
    );
    // max_tokens above the server's limit, under the name the request used.
    assert_error(
        chat("hi".into(), json!({"max_completion_tokens": 4097})),
        400,
        "invalid_value",
        json!("max_completion_tokens"),
    );
    assert_error(
        chat("hi".into(), json!({"max_tokens": 4097})),
        400,
        "invalid_value",
        json!("max_tokens"),
    );
    // Nothing was admitted, and the server still answers.
    assert_eq!(s.server.stats().generated_tokens, 0);
    s.post_ok("/v1/completions", &json!({"prompt": "a", "max_tokens": 2}));
}

/// The reference tokens of a seeded one-choice request.
fn reference(model: &CausalLm, prompt: Vec<u32>, max_tokens: usize, seed: u64) -> Vec<u32> {
    let out = generate(model, &[prompt], &sampling(max_tokens, true), seed);
    out[0].tokens.clone()
}

#[test]
fn a_weight_update_under_load_loses_nothing_and_splits_versions_cleanly() {
    let max_batch = 8;
    let s = TestServer::start(34, |c| c.max_batch = max_batch);
    let old_model = s.model();
    let tok = s.tokenizer();
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other");
    common::write_other_model(&other, 77);
    let new_model = rlvr_models::load_pretrained(&other, &burn::tensor::Device::flex())
        .unwrap()
        .0
        .valid();
    // `ignore_eos`: every choice runs to max_tokens. The first wave fills the batch with long
    // rows; the second wave queues behind it.
    let (long, short) = (400, 12);
    let body = |i: usize, max_tokens: usize| {
        let mut r = request(&format!("wave {i}"), max_tokens, 70 + i as u64);
        r["ignore_eos"] = json!(true);
        r
    };
    let queued = 2 * max_batch;
    let first_bodies: Vec<Value> = (0..max_batch).map(|i| body(i, long)).collect();
    let second_bodies: Vec<Value> = (max_batch..max_batch + queued)
        .map(|i| body(i, short))
        .collect();
    let (open_first, open_second) = (Barrier::new(max_batch), Barrier::new(queued));
    let (first, second, update) = std::thread::scope(|scope| {
        let first = post_all(scope, &s, &first_bodies, &open_first);
        s.wait_for_active_rows(max_batch, Duration::from_secs(30));
        let second = post_all(scope, &s, &second_bodies, &open_second);
        wait_for(&s, Duration::from_secs(30), |st| st.queued_requests > 0);
        let update = s.post(
            "/update_weights_from_disk",
            &json!({"model_path": other.to_str().unwrap()}),
        );
        (join(first), join(second), update)
    });
    let (status, version, text) = update;
    assert_eq!((status, version), (200, Some(1)), "{text}");
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["weights_version"], 1);
    // The running wave was admitted before the update and finishes on the old weights. A
    // queued request runs on the weights current when it is admitted (the new ones, unless
    // the long rows ended before the swap could be scheduled); either way its tokens are the
    // reference sample of the version it reports, so no response mixes two versions.
    let models = [&old_model, &new_model];
    for (i, (status, header, text)) in first.iter().chain(&second).enumerate() {
        assert_eq!(*status, 200, "request {i}: {text}");
        let got: Value = serde_json::from_str(text).unwrap();
        let version = got["weights_version"].as_u64().unwrap();
        assert_eq!(*header, Some(version), "request {i}: header and body");
        if i < max_batch {
            assert_eq!(version, 0, "request {i} was running before the update");
        }
        let max_tokens = if i < max_batch { long } else { short };
        let prompt = tok.encode(&format!("wave {i}")).unwrap();
        let expected = reference(models[version as usize], prompt, max_tokens, 70 + i as u64);
        assert_eq!(
            ids(&got["choices"][0]["token_ids"]),
            expected,
            "request {i}"
        );
    }
    // Requests sent after the update report the new version.
    let (status, header, text) = s.post("/v1/completions", &body(99, 4));
    assert_eq!((status, header), (200, Some(1)), "{text}");
    assert_eq!(s.server.stats().weights_version, 1);
}

#[test]
fn rounds_of_load_leave_no_rows_queue_or_cache_behind() {
    let s = TestServer::start(35, |c| c.max_batch = 16);
    let clients = 64;
    let mut expected_tokens = 0u64;
    for round in 0..3u64 {
        // Plain, streamed and two-choice requests; `ignore_eos`, so each choice produces
        // exactly max_tokens tokens.
        let (bodies, tokens): (Vec<Value>, Vec<u64>) = (0..clients)
            .map(|i| {
                let max_tokens = 3 + (i + round as usize) % 4;
                let n = if i % 4 == 1 { 2 } else { 1 };
                let mut r = json!({"prompt": format!("round {round} client {i}"),
                                   "max_tokens": max_tokens, "n": n, "ignore_eos": true,
                                   "seed": round * 1000 + i as u64});
                if i % 4 == 2 {
                    r["stream"] = json!(true);
                }
                (r, (n * max_tokens) as u64)
            })
            .unzip();
        let start = Barrier::new(clients);
        let answers = std::thread::scope(|scope| join(post_all(scope, &s, &bodies, &start)));
        for (i, (status, _, text)) in answers.iter().enumerate() {
            assert_eq!(*status, 200, "round {round} client {i}: {text}");
        }
        expected_tokens += tokens.iter().sum::<u64>();
        wait_for(&s, Duration::from_secs(10), |st| {
            idle(st) && st.generated_tokens == expected_tokens
        });
        assert!(s.server.stats().peak_batch_rows <= 16);
    }
}
