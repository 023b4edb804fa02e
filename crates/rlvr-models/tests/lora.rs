//! LoRA adapters: the forward pass against the merged weights and the base, gradients only on
//! the adapters (and equal to `scale · Aᵀ · ∂W` of the full model), PEFT's file layout, loading
//! it back, and the refusals. `peft_loads_our_adapter` checks the files with PyPI's `peft`.

mod common;

use std::path::Path;

use burn::tensor::{Device, Tensor, TensorData};
use common::{IDS, base, fixture, ids, logits, max_diff, randomize_b};
use rlvr_models::lora::{ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, load_adapter, save_adapter};
use rlvr_models::{CausalLm, LoraConfig, load_pretrained, save_pretrained, token_logprobs};

fn config(rank: usize, targets: &[&str]) -> LoraConfig {
    LoraConfig {
        rank,
        alpha: 2.0 * rank as f64,
        target_modules: targets.iter().map(|s| s.to_string()).collect(),
        ..LoraConfig::default()
    }
}

#[test]
fn a_fresh_adapter_leaves_the_model_unchanged() {
    let device = Device::flex();
    device.seed(1);
    let plain = base(&device);
    let lora = base(&device).with_lora(&LoraConfig::default()).unwrap();
    assert!(lora.has_lora());
    // 2 layers × (q 64·4 + 4·64, k 64·4 + 4·32, v same, o 64·4 + 4·64, gate 64·4 + 4·128,
    // up same, down 128·4 + 4·64) at r = 16 → per layer 16·(128 + 96 + 96 + 128 + 192·3) = 16 384.
    assert_eq!(
        lora.num_lora_params(),
        2 * 16 * (128 + 96 + 96 + 128 + 3 * 192)
    );
    assert_eq!(
        max_diff(&logits(&plain, &device), &logits(&lora, &device)),
        0.0
    );
}

#[test]
fn adapted_forward_equals_the_merged_model_and_without_lora_the_base() {
    let device = Device::flex();
    device.seed(2);
    let plain = logits(&base(&device), &device);
    let model = randomize_b(
        base(&device)
            .with_lora(&config(4, &["all-linear"]))
            .unwrap(),
    );
    let adapted = logits(&model, &device);
    assert!(
        max_diff(&adapted, &plain) > 1e-3,
        "the adapters must change the output"
    );
    let base_again = logits(&model.without_lora(), &device);
    assert_eq!(max_diff(&base_again, &plain), 0.0);
    let merged = model.clone().merge_lora();
    assert!(!merged.has_lora());
    assert!(max_diff(&logits(&merged, &device), &adapted) < 1e-4);

    // save_pretrained writes the merged model: a full HF directory with the adapters folded in.
    let dir = tempfile::tempdir().unwrap();
    let (_, hf_config) = load_pretrained(&fixture(), &device).unwrap();
    save_pretrained(&model, &hf_config, dir.path()).unwrap();
    let (reloaded, _) = load_pretrained(dir.path(), &device).unwrap();
    assert!(max_diff(&logits(&reloaded, &device), &adapted) < 1e-4);
}

/// One projection by hand: `y = x W + b + s · x A B` on host vectors.
#[test]
fn one_projection_matches_a_host_computation() {
    let device = Device::flex();
    device.seed(3);
    let model = randomize_b(base(&device).with_lora(&config(2, &["q_proj"])).unwrap());
    let proj = &model.model.layers[1].self_attn.q_proj;
    let lora = proj.lora.as_ref().unwrap();
    let host = |t: Tensor<2>| t.into_data().try_to_vec::<f32>().unwrap();
    let (w, a, b) = (
        host(proj.weight.val()),
        host(lora.lora_a.val()),
        host(lora.lora_b.val()),
    );
    let bias = proj
        .bias
        .as_ref()
        .unwrap()
        .val()
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
    let (d_in, d_out, r) = (64, 64, 2);
    let x: Vec<f32> = (0..3 * d_in)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 60.0)
        .collect();
    let y = proj
        .forward(Tensor::from_data(
            TensorData::new(x.clone(), [1, 3, d_in]),
            &device,
        ))
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
    let scale = 2.0 * r as f32 / r as f32;
    for row in 0..3 {
        let xr = &x[row * d_in..(row + 1) * d_in];
        let xa: Vec<f32> = (0..r)
            .map(|k| (0..d_in).map(|i| xr[i] * a[i * r + k]).sum())
            .collect();
        for o in 0..d_out {
            let base: f32 = (0..d_in).map(|i| xr[i] * w[i * d_out + o]).sum::<f32>() + bias[o];
            let delta: f32 = (0..r).map(|k| xa[k] * b[k * d_out + o]).sum();
            let want = base + scale * delta;
            let got = y[row * d_out + o];
            assert!(
                (got - want).abs() < 1e-4,
                "row {row} col {o}: {got} vs {want}"
            );
        }
    }
}

/// Only the adapters train, and their gradients follow from the full model's: with `y = x(W +
/// s·A·B)`, `∂L/∂B = s·Aᵀ·∂L/∂W` and `∂L/∂A = s·∂L/∂W·Bᵀ` where `∂L/∂W` is the gradient of the
/// merged weight in a full fine-tune of the same function.
#[test]
fn gradients_reach_only_the_adapters_and_match_the_full_weight_gradient() {
    let device = Device::flex().autodiff();
    device.seed(4);
    let targets = ["self_attn.v_proj", "mlp.down_proj"];
    let model = randomize_b(base(&device).with_lora(&config(3, &targets)).unwrap());
    let merged = model.clone().merge_lora(); // a full model computing the same function
    let mask = Tensor::<2>::ones([2, 6], &device);
    let loss = |m: &CausalLm| {
        token_logprobs(m, ids(&device), mask.clone())
            .logp
            .sum()
            .neg()
    };
    let lora_grads = loss(&model).backward();
    let full_grads = loss(&merged).backward();

    let layer = &model.model.layers[0];
    assert!(layer.self_attn.q_proj.weight.grad(&lora_grads).is_none());
    assert!(layer.mlp.down_proj.weight.grad(&lora_grads).is_none());
    assert!(model.model.embed_tokens.weight.grad(&lora_grads).is_none());
    assert!(layer.input_layernorm.weight.grad(&lora_grads).is_none());
    assert!(layer.self_attn.q_proj.lora.is_none());

    for (i, (layer, full_layer)) in model
        .model
        .layers
        .iter()
        .zip(&merged.model.layers)
        .enumerate()
    {
        for (name, proj) in [
            (
                "v_proj",
                (&layer.self_attn.v_proj, &full_layer.self_attn.v_proj),
            ),
            (
                "down_proj",
                (&layer.mlp.down_proj, &full_layer.mlp.down_proj),
            ),
        ] {
            let (adapted, full) = proj;
            let lora = adapted.lora.as_ref().unwrap();
            let g_w = full.weight.grad(&full_grads).unwrap(); // [in, out]
            let g_w = Tensor::<2>::from_data(g_w.into_data(), &Device::flex());
            let a = Tensor::<2>::from_data(lora.lora_a.val().into_data(), &Device::flex());
            let b = Tensor::<2>::from_data(lora.lora_b.val().into_data(), &Device::flex());
            let s = lora.scale;
            let want_b = a.transpose().matmul(g_w.clone()).mul_scalar(s);
            let want_a = g_w.matmul(b.transpose()).mul_scalar(s);
            let got_b = lora
                .lora_b
                .grad(&lora_grads)
                .unwrap()
                .into_data()
                .try_to_vec::<f32>()
                .unwrap();
            let got_a = lora
                .lora_a
                .grad(&lora_grads)
                .unwrap()
                .into_data()
                .try_to_vec::<f32>()
                .unwrap();
            let (want_a, want_b) = (
                want_a.into_data().try_to_vec::<f32>().unwrap(),
                want_b.into_data().try_to_vec::<f32>().unwrap(),
            );
            let tol = |w: &[f32]| 1e-4 * w.iter().fold(1.0f32, |m, x| m.max(x.abs()));
            assert!(
                max_diff(&got_b, &want_b) < tol(&want_b),
                "layer {i} {name}: ∂B"
            );
            assert!(
                max_diff(&got_a, &want_a) < tol(&want_a),
                "layer {i} {name}: ∂A"
            );
            assert!(got_b.iter().any(|&x| x != 0.0));
        }
    }
}

#[test]
fn target_modules_match_whole_module_names_only() {
    let device = Device::flex();
    let with = |targets: &[&str]| base(&device).with_lora(&config(2, targets));
    let count = |m: &CausalLm| {
        m.model
            .layers
            .iter()
            .flat_map(|l| l.projections())
            .filter(|(_, p)| p.lora.is_some())
            .count()
    };
    assert_eq!(count(&with(&["q_proj", "v_proj"]).unwrap()), 4);
    assert_eq!(count(&with(&["all-linear"]).unwrap()), 14);
    assert_eq!(count(&with(&["model.layers.1.mlp.up_proj"]).unwrap()), 1);
    // "proj" is a suffix of every name but not a module name: no match, an error.
    for bad in [&["proj"][..], &["q_proj", "attn"], &["lm_head"]] {
        let err = with(bad).unwrap_err().to_string();
        assert!(err.contains("target_modules"), "{err}");
    }
    let err = base(&device)
        .with_lora(&LoraConfig {
            rank: 0,
            ..LoraConfig::default()
        })
        .unwrap_err();
    assert!(err.to_string().contains("`rank`"), "{err}");
    let twice = with(&["q_proj"])
        .unwrap()
        .with_lora(&config(2, &["k_proj"]));
    assert!(twice.is_err());
}

#[test]
fn adapter_files_have_peft_names_and_shapes_and_load_back() {
    let device = Device::flex();
    device.seed(5);
    let cfg = config(4, &["q_proj", "mlp.down_proj"]);
    let model = randomize_b(base(&device).with_lora(&cfg).unwrap());
    let dir = tempfile::tempdir().unwrap();
    save_adapter(&model, &cfg, Some("tiny-qwen2"), dir.path()).unwrap();

    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(ADAPTER_CONFIG_FILE)).unwrap(),
    )
    .unwrap();
    assert_eq!(json["peft_type"], "LORA");
    assert_eq!(json["r"], 4);
    assert_eq!(json["lora_alpha"], 8.0);
    assert_eq!(
        json["target_modules"],
        serde_json::json!(["q_proj", "mlp.down_proj"])
    );
    let bytes = std::fs::read(dir.path().join(ADAPTER_WEIGHTS_FILE)).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let names = st.names();
    assert_eq!(names.len(), 8);
    let q_a = st
        .tensor("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight")
        .unwrap();
    assert_eq!(q_a.shape(), [4, 64]); // [r, in]
    let down_b = st
        .tensor("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight")
        .unwrap();
    assert_eq!(down_b.shape(), [64, 4]); // [out, r]

    let (loaded, loaded_cfg) = load_adapter(base(&device), dir.path()).unwrap();
    assert_eq!(loaded_cfg, cfg);
    assert_eq!(loaded.num_lora_params(), model.num_lora_params());
    assert!(max_diff(&logits(&loaded, &device), &logits(&model, &device)) < 1e-6);
}

#[test]
fn adapters_this_loader_cannot_represent_are_refused_by_field() {
    let device = Device::flex();
    let cfg = config(2, &["q_proj"]);
    let model = base(&device).with_lora(&cfg).unwrap();
    let dir = tempfile::tempdir().unwrap();
    save_adapter(&model, &cfg, None, dir.path()).unwrap();
    let path = dir.path().join(ADAPTER_CONFIG_FILE);
    let original: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for (key, value, expect) in [
        ("use_dora", serde_json::json!(true), "use_dora"),
        (
            "modules_to_save",
            serde_json::json!(["lm_head"]),
            "modules_to_save",
        ),
        (
            "target_modules",
            serde_json::json!(".*q_proj"),
            "regular expression",
        ),
        ("bias", serde_json::json!("all"), "bias"),
        ("peft_type", serde_json::json!("IA3"), "peft_type"),
        (
            "rank_pattern",
            serde_json::json!({"q_proj": 8}),
            "rank_pattern",
        ),
        (
            "target_modules",
            serde_json::json!(["k_proj"]),
            "missing tensor",
        ),
    ] {
        let mut edited = original.clone();
        edited[key] = value;
        std::fs::write(&path, edited.to_string()).unwrap();
        let err = load_adapter(base(&device), dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains(expect), "{key}: {err}");
    }
}

/// PyPI's `peft` reads our adapter onto the HF fixture and computes the same logits, and its
/// `merge_and_unload` gives the weights our `merge_lora` gives.
///
/// Needs a Python with torch, transformers and peft: `RLVR_PEFT_PYTHON=/path/to/python cargo
/// test -p rlvr-models --test lora -- --ignored` (see `.ci/peft-check`).
#[test]
#[ignore = "needs Python with torch + transformers + peft in RLVR_PEFT_PYTHON (.ci/peft-check)"]
fn peft_loads_our_adapter() {
    let python = std::env::var("RLVR_PEFT_PYTHON").expect("RLVR_PEFT_PYTHON");
    let device = Device::flex();
    device.seed(6);
    let cfg = LoraConfig {
        use_rslora: true,
        ..config(
            4,
            &[
                "q_proj",
                "k_proj",
                "v_proj",
                "o_proj",
                "mlp.gate_proj",
                "up_proj",
                "down_proj",
            ],
        )
    };
    let model = randomize_b(base(&device).with_lora(&cfg).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let adapter = dir.path().join("adapter");
    save_adapter(&model, &cfg, Some(&fixture().to_string_lossy()), &adapter).unwrap();
    let merged = dir.path().join("merged");
    let (_, hf_config) = load_pretrained(&fixture(), &device).unwrap();
    save_pretrained(&model.clone().merge_lora(), &hf_config, &merged).unwrap();
    let expected = serde_json::json!({
        "ids": IDS.chunks(6).collect::<Vec<_>>(),
        "logits": logits(&model, &device),
    });
    let expected_path = dir.path().join("expected.json");
    std::fs::write(&expected_path, expected.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peft_check.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .args([fixture(), adapter, merged, expected_path])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("peft check: ok"), "{stdout}");
    println!("{stdout}");
}

/// `with_lora_seeded` draws `A` from its seed alone: the same seed gives the same adapter file
/// whatever the device RNG did in between (other code in the process seeds and draws from it),
/// and another seed gives another adapter.
#[test]
fn a_seeded_adapter_ignores_the_device_rng() {
    let device = Device::flex();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(4, &["q_proj", "v_proj"]);
    let adapter_bytes = |seed: u64, device_seed: u64, name: &str| {
        device.seed(device_seed);
        let _ = Tensor::<2>::random(
            [8, 8],
            burn::tensor::Distribution::Normal(0.0, 1.0),
            &device,
        );
        let model = base(&device).with_lora_seeded(&cfg, seed).unwrap();
        let dir = tmp.path().join(name);
        save_adapter(&model, &cfg, None, &dir).unwrap();
        std::fs::read(dir.join(ADAPTER_WEIGHTS_FILE)).unwrap()
    };
    let first = adapter_bytes(7, 1, "a");
    assert_eq!(
        first,
        adapter_bytes(7, 2, "b"),
        "same seed, other device RNG"
    );
    assert_ne!(first, adapter_bytes(8, 1, "c"), "another seed");
}
