//! The HTTP server end to end: a tiny random model served on 127.0.0.1 (port 0) in this
//! process, spoken to over HTTP. Reference values come from `rlvr_models::generate` and a
//! teacher-forced `rlvr_models::token_logprobs` pass, never from the server itself.

mod common;

use std::time::Duration;

use burn::module::Module;
use burn::tensor::{Tensor, TensorData};
use common::{MODEL_NAME, TestServer, fixture, ids, sse_data};
use rlvr_models::{CausalLm, ChatMessage, GenerationConfig, generate, token_logprobs};
use serde_json::{Value, json};

fn sampling(max_new_tokens: usize, temperature: f32, top_p: Option<f32>) -> GenerationConfig {
    GenerationConfig {
        max_new_tokens,
        temperature,
        top_k: None,
        top_p,
        stop_token_ids: vec![fixture::EOS_ID],
        pad_token_id: 0,
    }
}

/// Teacher-forced log-probs of `completion` after `prompt`.
fn teacher_forced(model: &CausalLm, prompt: &[u32], completion: &[u32]) -> Vec<f32> {
    let row: Vec<i64> = prompt
        .iter()
        .chain(completion)
        .map(|&x| i64::from(x))
        .collect();
    let t = row.len();
    let mask: Vec<f32> = (0..t)
        .map(|i| if i >= prompt.len() { 1.0 } else { 0.0 })
        .collect();
    let device = model.device();
    let scores = token_logprobs(
        model,
        Tensor::from_data(TensorData::new(row, [1, t]), &device),
        Tensor::from_data(TensorData::new(mask, [1, t]), &device),
    );
    let logp = scores.logp.into_data().try_into_vec::<f32>().unwrap();
    logp[prompt.len()..].to_vec()
}

fn finish(choice: &Value) -> &str {
    choice["finish_reason"].as_str().unwrap()
}

#[test]
fn completion_of_a_text_prompt_equals_generate() {
    let s = TestServer::start(1, |_| {});
    let tok = s.tokenizer();
    let body = s.post_ok(
        "/v1/completions",
        &json!({"model": MODEL_NAME, "prompt": "hello world", "max_tokens": 12,
                "temperature": 0, "return_token_ids": true}),
    );
    assert_eq!(body["object"], "text_completion");
    assert_eq!(body["model"], MODEL_NAME);
    assert_eq!(body["weights_version"], 0);
    let choice = &body["choices"][0];
    let prompt = tok.encode("hello world").unwrap();
    assert_eq!(prompt.len(), 11); // one token per character
    assert_eq!(ids(&choice["prompt_token_ids"]), prompt);
    let expected = generate(
        &s.model(),
        std::slice::from_ref(&prompt),
        &sampling(12, 0.0, None),
        0,
    );
    let tokens = ids(&choice["token_ids"]);
    assert_eq!(tokens, expected[0].tokens);
    assert_eq!(
        choice["text"].as_str().unwrap(),
        tok.decode_skip_special(&tokens).unwrap()
    );
    let reason = if tokens.last() == Some(&fixture::EOS_ID) {
        "stop"
    } else {
        "length"
    };
    assert_eq!(finish(choice), reason);
    assert_eq!(body["usage"]["prompt_tokens"], 11);
    assert_eq!(body["usage"]["completion_tokens"], tokens.len());
    assert_eq!(body["usage"]["total_tokens"], 11 + tokens.len());
    assert!(choice["logprobs"].is_null());
}

#[test]
fn seeded_sampling_with_n_equals_generate_rows() {
    let s = TestServer::start(2, |_| {});
    let prompt: Vec<u32> = vec![10, 11, 12, 13];
    let (status, version, text) = s.post(
        "/v1/completions",
        &json!({"prompt": prompt, "max_tokens": 20, "n": 3, "temperature": 1.0,
                "top_p": 0.9, "seed": 1234, "return_token_ids": true}),
    );
    assert_eq!(status, 200, "{text}");
    assert_eq!(version, Some(0));
    let body: Value = serde_json::from_str(&text).unwrap();
    let expected = generate(
        &s.model(),
        &vec![prompt.clone(); 3],
        &sampling(20, 1.0, Some(0.9)),
        1234,
    );
    let choices = body["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3);
    for (i, (c, e)) in choices.iter().zip(&expected).enumerate() {
        assert_eq!(c["index"], i);
        assert_eq!(ids(&c["token_ids"]), e.tokens, "choice {i}");
    }
    // Three choices from three RNG streams differ (the chance that 20 uniform-ish draws
    // coincide is nil).
    assert_ne!(expected[0].tokens, expected[1].tokens);
}

#[test]
fn logprobs_equal_teacher_forced_recomputation() {
    let s = TestServer::start(3, |_| {});
    let model = s.model();
    let body = s.post_ok(
        "/v1/completions",
        &json!({"prompt": "abc", "max_tokens": 16, "temperature": 0.8, "top_k": 20,
                "seed": 9, "logprobs": 3, "return_token_ids": true}),
    );
    let choice = &body["choices"][0];
    let tokens = ids(&choice["token_ids"]);
    let prompt = ids(&choice["prompt_token_ids"]);
    let reference = teacher_forced(&model, &prompt, &tokens);
    let lp = &choice["logprobs"];
    let served: Vec<f32> = lp["token_logprobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(served.len(), tokens.len());
    for (a, b) in served.iter().zip(&reference) {
        assert!((a - b).abs() <= 1e-4, "served {a} vs teacher-forced {b}");
    }
    let tok = s.tokenizer();
    let names: Vec<&str> = lp["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for (name, &id) in names.iter().zip(&tokens) {
        assert_eq!(*name, tok.decode(&[id]).unwrap());
    }
    // Three alternatives per position, the best at least as likely as the sampled token.
    for (i, top) in lp["top_logprobs"].as_array().unwrap().iter().enumerate() {
        let top = top.as_object().unwrap();
        assert_eq!(top.len(), 3);
        let best = top
            .values()
            .map(|v| v.as_f64().unwrap())
            .fold(f64::MIN, f64::max);
        assert!(best + 1e-6 >= f64::from(served[i]));
    }

    // Chat shape, and `return_tokens_as_token_ids`.
    let body = s.post_ok(
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
                "seed": 4, "logprobs": true, "top_logprobs": 2,
                "return_token_ids": true, "return_tokens_as_token_ids": true}),
    );
    let prompt = ids(&body["prompt_token_ids"]);
    let choice = &body["choices"][0];
    let tokens = ids(&choice["token_ids"]);
    let reference = teacher_forced(&model, &prompt, &tokens);
    let content = choice["logprobs"]["content"].as_array().unwrap();
    assert_eq!(content.len(), tokens.len());
    for ((entry, &id), r) in content.iter().zip(&tokens).zip(&reference) {
        assert_eq!(entry["token"], format!("token_id:{id}"));
        assert_eq!(entry["bytes"], json!(format!("token_id:{id}").into_bytes()));
        assert!((entry["logprob"].as_f64().unwrap() as f32 - r).abs() <= 1e-4);
        assert_eq!(entry["top_logprobs"].as_array().unwrap().len(), 2);
    }
}

#[test]
fn chat_renders_the_template_and_answers_n_choices() {
    let s = TestServer::start(4, |_| {});
    let tok = s.tokenizer();
    let body = s.post_ok(
        "/v1/chat/completions",
        &json!({"model": MODEL_NAME,
                "messages": [{"role": "system", "content": "be brief"},
                             {"role": "user", "content": [{"type": "text", "text": "2+2?"}]}],
                "max_tokens": 10, "n": 2, "temperature": 0, "return_token_ids": true}),
    );
    assert_eq!(body["object"], "chat.completion");
    // The ChatML rendering, written out by hand.
    let rendered = "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n";
    let prompt = tok.encode(rendered).unwrap();
    assert_eq!(ids(&body["prompt_token_ids"]), prompt);
    assert_eq!(
        tok.apply_chat_template(
            &[
                ChatMessage::new("system", "be brief"),
                ChatMessage::new("user", "2+2?")
            ],
            true
        )
        .unwrap(),
        rendered
    );
    let expected = generate(
        &s.model(),
        std::slice::from_ref(&prompt),
        &sampling(10, 0.0, None),
        0,
    );
    let choices = body["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2);
    for c in choices {
        assert_eq!(c["message"]["role"], "assistant");
        let tokens = ids(&c["token_ids"]);
        assert_eq!(tokens, expected[0].tokens); // greedy: both choices equal
        assert_eq!(
            c["message"]["content"],
            tok.decode_skip_special(&tokens).unwrap()
        );
    }
    assert_eq!(body["usage"]["prompt_tokens"], prompt.len());
}

#[test]
fn stop_strings_end_and_cut_the_text() {
    let s = TestServer::start(5, |_| {});
    let tok = s.tokenizer();
    // Find a greedy continuation, then stop at a piece of it.
    let free = s.post_ok(
        "/v1/completions",
        &json!({"prompt": "the cat", "max_tokens": 30, "temperature": 0, "return_token_ids": true}),
    );
    let full = free["choices"][0]["text"].as_str().unwrap().to_owned();
    let full_ids = ids(&free["choices"][0]["token_ids"]);
    // The model and greedy decoding are deterministic: this holds for this seed.
    assert!(
        full_ids.len() >= 6,
        "greedy continuation too short: {full:?}"
    );
    let stop: String = full.chars().skip(3).take(2).collect();
    let at = full.find(&stop).unwrap();
    let body = s.post_ok(
        "/v1/completions",
        &json!({"prompt": "the cat", "max_tokens": 30, "temperature": 0, "stop": [stop, "zzzz"],
                "return_token_ids": true}),
    );
    let c = &body["choices"][0];
    assert_eq!(c["text"].as_str().unwrap(), &full[..at]);
    assert_eq!(finish(c), "stop");
    // Generation stopped at the token that completed the stop string.
    let got = ids(&c["token_ids"]);
    assert_eq!(got, full_ids[..got.len()]);
    assert!(tok.decode(&got).unwrap().ends_with(&full[at..at + 2]));
}

#[test]
fn streaming_matches_the_plain_response() {
    let s = TestServer::start(6, |_| {});
    let request = json!({"prompt": "stream me", "max_tokens": 15, "n": 2, "seed": 21,
                         "temperature": 1.0, "logprobs": 0, "return_token_ids": true});
    let plain = s.post_ok("/v1/completions", &request);
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let (status, version, text) = s.post("/v1/completions", &streamed);
    assert_eq!(status, 200, "{text}");
    assert_eq!(version, Some(0));
    let data = sse_data(&text);
    assert_eq!(data.last().unwrap(), "[DONE]");
    let mut texts = [String::new(), String::new()];
    let mut tokens: [Vec<u32>; 2] = [vec![], vec![]];
    let mut logprobs: [Vec<f64>; 2] = [vec![], vec![]];
    let mut reasons = [None, None];
    let mut usage = None;
    for d in &data[..data.len() - 1] {
        let chunk: Value = serde_json::from_str(d).unwrap();
        assert_eq!(chunk["object"], "text_completion");
        assert_eq!(chunk["weights_version"], 0);
        if let Some(u) = chunk.get("usage") {
            usage = Some(u.clone());
            assert!(chunk["choices"].as_array().unwrap().is_empty());
            continue;
        }
        let c = &chunk["choices"][0];
        let i = c["index"].as_u64().unwrap() as usize;
        assert!(reasons[i].is_none(), "chunk after finish");
        texts[i].push_str(c["text"].as_str().unwrap());
        tokens[i].extend(ids(&c["token_ids"]));
        for lp in c["logprobs"]["token_logprobs"].as_array().unwrap() {
            logprobs[i].push(lp.as_f64().unwrap());
        }
        reasons[i] = c["finish_reason"].as_str().map(str::to_owned);
    }
    let mut completion_tokens = 0;
    for i in 0..2 {
        let p = &plain["choices"][i];
        assert_eq!(texts[i], p["text"].as_str().unwrap());
        assert_eq!(tokens[i], ids(&p["token_ids"]));
        completion_tokens += tokens[i].len();
        let plain_lp: Vec<f64> = p["logprobs"]["token_logprobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(logprobs[i], plain_lp);
        assert_eq!(reasons[i].as_deref(), p["finish_reason"].as_str());
    }
    assert_eq!(usage.unwrap()["completion_tokens"], completion_tokens);

    // Chat: a role chunk first, then content.
    let (status, _, text) = s.post(
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "hey"}], "max_tokens": 6,
                "temperature": 0, "stream": true}),
    );
    assert_eq!(status, 200);
    let plain = s.post_ok(
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "hey"}], "max_tokens": 6, "temperature": 0}),
    );
    let data = sse_data(&text);
    assert_eq!(data.last().unwrap(), "[DONE]");
    let first: Value = serde_json::from_str(&data[0]).unwrap();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    let mut content = String::new();
    let mut reason = None;
    for d in &data[1..data.len() - 1] {
        let chunk: Value = serde_json::from_str(d).unwrap();
        let c = &chunk["choices"][0];
        if let Some(t) = c["delta"]["content"].as_str() {
            content.push_str(t);
        }
        if let Some(r) = c["finish_reason"].as_str() {
            reason = Some(r.to_owned());
        }
    }
    assert_eq!(
        content,
        plain["choices"][0]["message"]["content"].as_str().unwrap()
    );
    assert_eq!(
        reason.as_deref(),
        plain["choices"][0]["finish_reason"].as_str()
    );
}

#[test]
fn seeded_request_gives_the_same_tokens_alone_and_batched() {
    let s = TestServer::start(7, |c| c.max_batch = 64);
    let request = json!({"prompt": "same seed", "max_tokens": 24, "temperature": 1.0,
                         "seed": 555, "n": 2, "return_token_ids": true, "logprobs": 0});
    let alone = s.post_ok("/v1/completions", &request);
    let together = std::thread::scope(|scope| {
        // Other clients with longer and shorter prompts keep the batch busy and padded.
        let others: Vec<_> = (0..8)
            .map(|i| {
                let s = &s;
                scope.spawn(move || {
                    let prompt = "x".repeat(1 + 5 * i);
                    s.post_ok(
                        "/v1/completions",
                        &json!({"prompt": prompt, "max_tokens": 300, "seed": i,
                                "temperature": 1.0, "ignore_eos": true}),
                    )
                })
            })
            .collect();
        s.wait_for_active_rows(8, Duration::from_secs(30));
        let mine = s.post_ok("/v1/completions", &request);
        for o in others {
            o.join().unwrap();
        }
        mine
    });
    for i in 0..2 {
        let (a, b) = (&alone["choices"][i], &together["choices"][i]);
        assert_eq!(ids(&a["token_ids"]), ids(&b["token_ids"]), "choice {i}");
        let la = a["logprobs"]["token_logprobs"].as_array().unwrap();
        let lb = b["logprobs"]["token_logprobs"].as_array().unwrap();
        for (x, y) in la.iter().zip(lb) {
            assert!((x.as_f64().unwrap() - y.as_f64().unwrap()).abs() <= 1e-4);
        }
    }
}

#[test]
fn sixteen_concurrent_clients_are_all_answered_in_one_batch() {
    let s = TestServer::start(8, |c| c.max_batch = 32);
    let model = s.model();
    let tok = s.tokenizer();
    let clients = 20;
    let peak = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    let answers: Vec<Value> = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                peak.fetch_max(
                    s.server.stats().active_rows,
                    std::sync::atomic::Ordering::SeqCst,
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let handles: Vec<_> = (0..clients)
            .map(|i| {
                let s = &s;
                scope.spawn(move || {
                    let prompt = format!("client {i}: {}", "a".repeat(i % 7));
                    s.post_ok(
                        "/v1/completions",
                        &json!({"prompt": prompt, "max_tokens": 32, "temperature": 1.0,
                                "seed": 100 + i, "return_token_ids": true}),
                    )
                })
            })
            .collect();
        let answers = handles.into_iter().map(|h| h.join().unwrap()).collect();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        answers
    });
    for (i, body) in answers.iter().enumerate() {
        let prompt = tok
            .encode(&format!("client {i}: {}", "a".repeat(i % 7)))
            .unwrap();
        let expected = generate(&model, &[prompt], &sampling(32, 1.0, None), 100 + i as u64);
        assert_eq!(
            ids(&body["choices"][0]["token_ids"]),
            expected[0].tokens,
            "client {i}"
        );
    }
    let peak = peak.load(std::sync::atomic::Ordering::SeqCst);
    assert!(peak > 1, "requests never shared a batch (peak {peak} rows)");
    s.wait_for_active_rows(0, Duration::from_secs(5));
}

#[test]
fn weight_update_changes_outputs_and_bumps_the_version() {
    let s = TestServer::start(9, |_| {});
    let request = json!({"prompt": "weights", "max_tokens": 16, "temperature": 0,
                         "return_token_ids": true});
    let before = s.post_ok("/v1/completions", &request);
    assert_eq!(before["weights_version"], 0);

    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other");
    common::write_other_model(&other, 99);
    let (status, version, text) = s.post(
        "/update_weights_from_disk",
        &json!({"model_path": other.to_str().unwrap()}),
    );
    assert_eq!(status, 200, "{text}");
    assert_eq!(version, Some(1));
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["success"], true);
    assert_eq!(reply["weights_version"], 1);
    assert_eq!(s.server.stats().weights_version, 1);

    let (status, version, text) = s.post("/v1/completions", &request);
    assert_eq!((status, version), (200, Some(1)));
    let after: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(after["weights_version"], 1);
    let new_model = rlvr_models::load_pretrained(&other, &burn::tensor::Device::flex())
        .unwrap()
        .0
        .valid();
    let prompt = ids(&after["choices"][0]["prompt_token_ids"]);
    let expected = generate(&new_model, &[prompt], &sampling(16, 0.0, None), 0);
    assert_eq!(ids(&after["choices"][0]["token_ids"]), expected[0].tokens);
    assert_ne!(
        ids(&after["choices"][0]["token_ids"]),
        ids(&before["choices"][0]["token_ids"])
    );

    // A bad path: an error, and the new weights keep serving under version 1.
    let (status, version, text) = s.post(
        "/update_weights_from_disk",
        &json!({"model_path": tmp.path().join("missing").to_str().unwrap()}),
    );
    assert_eq!(status, 400, "{text}");
    assert_eq!(version, Some(1));
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["success"], false);
    assert!(reply["message"].as_str().unwrap().contains("missing"));
    // A directory that is not a model.
    let (status, _, text) = s.post(
        "/update_weights_from_disk",
        &json!({"model_path": tmp.path().to_str().unwrap()}),
    );
    assert_eq!(status, 400, "{text}");
    let again = s.post_ok("/v1/completions", &request);
    assert_eq!(again["weights_version"], 1);
    assert_eq!(
        again["choices"][0]["token_ids"],
        after["choices"][0]["token_ids"]
    );
}

#[test]
fn models_and_health() {
    let s = TestServer::start(10, |_| {});
    let (status, version, text) = s.get("/v1/models");
    assert_eq!((status, version), (200, Some(0)));
    let models: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], MODEL_NAME);
    assert_eq!(models["weights_version"], 0);
    let (status, _, text) = s.get("/health");
    assert_eq!(status, 200);
    let health: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["active_rows"], 0);
}

/// Asserts an OpenAI-shaped error; returns it.
fn error(s: &TestServer, path: &str, body: Vec<u8>, status: u16) -> Value {
    let (got, version, text) = s.post_raw(path, body);
    assert_eq!(got, status, "{text}");
    assert_eq!(version, Some(0), "every response names the weights version");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    let e = &v["error"];
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    assert!(e["type"].is_string() && e["code"].is_string(), "{v}");
    v
}

#[test]
fn malformed_requests_get_openai_errors() {
    let s = TestServer::start(11, |c| {
        c.max_tokens_limit = 100;
        c.max_body_bytes = 4096;
        c.max_batch = 8;
    });
    let post =
        |body: Value, status| error(&s, "/v1/completions", body.to_string().into_bytes(), status);
    let e = error(&s, "/v1/completions", b"{\"prompt\": \"a\",".to_vec(), 400);
    assert_eq!(e["error"]["code"], "invalid_json");
    let e = post(json!({"prompt": "a", "max_tokens": "many"}), 400);
    assert_eq!(e["error"]["param"], "max_tokens");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_tokens")
    );
    let e = post(json!({"prompt": "a", "n": 0}), 400);
    assert_eq!(e["error"]["param"], "n");
    let e = post(json!({"prompt": "a", "n": 9}), 400);
    assert_eq!(e["error"]["param"], "n");
    let e = post(json!({"prompt": "a", "max_tokens": 101}), 400);
    assert_eq!(e["error"]["param"], "max_tokens");
    let e = post(json!({"prompt": "a", "max_tokens": 0}), 400);
    assert_eq!(e["error"]["param"], "max_tokens");
    let e = post(json!({"prompt": "a", "temperature": -1}), 400);
    assert_eq!(e["error"]["param"], "temperature");
    let e = post(json!({"prompt": "a", "top_p": 0}), 400);
    assert_eq!(e["error"]["param"], "top_p");
    let e = post(json!({"prompt": [1, 2, 100000]}), 400);
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("prompt[2]")
    );
    post(json!({"prompt": ""}), 400);
    post(json!({"prompt": ["a", "b"]}), 400);
    post(json!({"prompt": "a", "stop": 3}), 400);
    post(json!({"prompt": "a", "logprobs": 21}), 400);
    post(json!({"max_tokens": 3}), 400); // no prompt
    let e = post(json!({"prompt": "a", "model": "gpt-4"}), 404);
    assert_eq!(e["error"]["code"], "model_not_found");
    let big = json!({"prompt": "a".repeat(5000)}).to_string().into_bytes();
    let e = error(&s, "/v1/completions", big, 413);
    assert_eq!(e["error"]["code"], "body_too_large");
    let chat = |body: Value, status| {
        error(
            &s,
            "/v1/chat/completions",
            body.to_string().into_bytes(),
            status,
        )
    };
    chat(json!({"messages": []}), 400);
    chat(json!({"messages": [{"role": "user", "content": 5}]}), 400);
    chat(
        json!({"messages": [{"role": "user", "content": "a"}], "top_logprobs": 2}),
        400,
    );
    error(&s, "/v1/nothing", b"{}".to_vec(), 404);
    error(
        &s,
        "/update_weights_from_disk",
        b"{\"path\": 1}".to_vec(),
        400,
    );
    // The server still answers after all of that.
    s.post_ok("/v1/completions", &json!({"prompt": "a", "max_tokens": 2}));
}

#[test]
fn a_client_that_disconnects_mid_stream_frees_its_slot() {
    let s = TestServer::start(12, |c| c.max_tokens_limit = 4000);
    // `ignore_eos`: only max_tokens could end these rows (3 × 3900 tokens).
    let body = json!({"prompt": "never ending", "max_tokens": 3900, "n": 3, "stream": true,
                      "temperature": 1.0, "ignore_eos": true});
    let stream = s.open_stream(&body, 5);
    assert_eq!(
        s.server.stats().active_rows,
        3,
        "the request's 3 rows are decoding"
    );
    stream.shutdown(std::net::Shutdown::Both).unwrap();
    drop(stream);
    s.wait_for_active_rows(0, Duration::from_secs(30));
    // The rows left because the client did, long before their 3 × 3900 tokens.
    let generated = s.server.stats().generated_tokens;
    assert!(generated < 3 * 3900 / 2, "{generated} tokens generated");
    // And the slot is usable again.
    s.post_ok("/v1/completions", &json!({"prompt": "a", "max_tokens": 2}));
}
