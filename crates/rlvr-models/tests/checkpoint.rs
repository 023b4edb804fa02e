//! Checkpoints: save → load round trip, sharded loading, and typed errors on bad input.

use std::path::{Path, PathBuf};

use burn::tensor::{Device, Int, Tensor, TensorData};
use rlvr_models::{CausalLm, Error, ModelConfig, hf_tensors, load_pretrained, save_pretrained};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn logits(model: &CausalLm) -> Vec<f32> {
    let ids = Tensor::<2, Int>::from_data(
        TensorData::new(
            vec![3i64, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26],
            [2, 6],
        ),
        &model.device(),
    );
    model
        .forward(ids)
        .into_data()
        .try_into_vec::<f32>()
        .unwrap()
}

/// Copies a fixture directory into a temp dir so a test can damage it.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(fixture(name).join(f), tmp.path().join(f)).unwrap();
    }
    tmp
}

fn edit_config(dir: &Path, edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) {
    let path = dir.join("config.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(v.as_object_mut().unwrap());
    std::fs::write(path, v.to_string()).unwrap();
}

/// Rewrites model.safetensors through `edit(name, shape, data) -> Option<(shape, data)>` (None drops it).
fn edit_weights(
    dir: &Path,
    edit: impl Fn(&str, Vec<usize>, Vec<f32>) -> Option<(Vec<usize>, Vec<f32>)>,
) {
    let path = dir.join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut kept: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, view) in st.tensors() {
        let data: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if let Some((shape, data)) = edit(&name, view.shape().to_vec(), data) {
            kept.push((
                name,
                shape,
                data.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ));
        }
    }
    let views: Vec<_> = kept
        .iter()
        .map(|(n, s, b)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), b)
                    .unwrap(),
            )
        })
        .collect();
    safetensors::serialize_to_file(views, None, &path).unwrap();
}

#[test]
fn save_load_round_trip_gives_identical_logits() {
    let device = Device::flex();
    for name in ["tiny-qwen2", "tiny-llama"] {
        let (model, config) = load_pretrained(&fixture(name), &device).unwrap();
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("saved");
        save_pretrained(&model, &config, &dir).unwrap();
        // Saving again over an existing checkpoint replaces it and keeps foreign files.
        std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
        save_pretrained(&model, &config, &dir).unwrap();
        assert!(dir.join("tokenizer.json").exists());
        let leftovers: Vec<_> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            leftovers.len(),
            1,
            "temporary directories left behind: {leftovers:?}"
        );

        let (reloaded, config2) = load_pretrained(&dir, &device).unwrap();
        assert_eq!(config2.tie_word_embeddings, config.tie_word_embeddings);
        assert_eq!(logits(&model), logits(&reloaded), "{name}");
        // Same tensor names and bytes as the transformers-written file.
        let ours = safetensors::SafeTensors::deserialize(
            &std::fs::read(dir.join("model.safetensors")).unwrap(),
        )
        .unwrap()
        .names()
        .len();
        let theirs = safetensors::SafeTensors::deserialize(
            &std::fs::read(fixture(name).join("model.safetensors")).unwrap(),
        )
        .unwrap()
        .names()
        .len();
        assert_eq!(ours, theirs, "{name}: tensor count");
    }
}

#[test]
fn random_model_round_trip_and_param_count() {
    let device = Device::flex();
    device.seed(3);
    let config = ModelConfig::tiny(300, 128, 2);
    let model = CausalLm::new(&config, &device);
    // embed + lm_head (untied) + per layer: q,k,v (+bias), o, 3 MLP, 2 norms; + final norm.
    let (d, f, v, kvd) = (
        128,
        config.intermediate_size,
        300,
        config.num_kv_heads() * config.head_dim(),
    );
    let layer = d * d + d + 2 * (d * kvd + kvd) + d * d + 3 * d * f + 2 * d;
    assert_eq!(model.num_params(), 2 * v * d + 2 * layer + d);
    let expected_names = 2 + 2 * 12 + 1;
    assert_eq!(hf_tensors(&model).len(), expected_names);
    let dir = tempfile::tempdir().unwrap();
    save_pretrained(&model, &config, dir.path()).unwrap();
    let (reloaded, _) = load_pretrained(dir.path(), &device).unwrap();
    assert_eq!(logits(&model), logits(&reloaded));
}

#[test]
fn sharded_checkpoint_loads() {
    let device = Device::flex();
    let src = fixture("tiny-qwen2");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(src.join("config.json"), dir.path().join("config.json")).unwrap();
    let bytes = std::fs::read(src.join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut weight_map = serde_json::Map::new();
    let tensors = st.tensors();
    for (shard, part) in tensors.chunks(tensors.len().div_ceil(2)).enumerate() {
        let file = format!("model-{:05}-of-00002.safetensors", shard + 1);
        for (name, _) in part {
            weight_map.insert(name.clone(), file.clone().into());
        }
        safetensors::serialize_to_file(
            part.iter().map(|(n, v)| (n.clone(), v.clone())),
            None,
            &dir.path().join(&file),
        )
        .unwrap();
    }
    let index = serde_json::json!({"metadata": {}, "weight_map": weight_map});
    std::fs::write(
        dir.path().join("model.safetensors.index.json"),
        index.to_string(),
    )
    .unwrap();
    let (sharded, _) = load_pretrained(dir.path(), &device).unwrap();
    let (single, _) = load_pretrained(&src, &device).unwrap();
    assert_eq!(logits(&sharded), logits(&single));
}

#[test]
fn missing_tensor_is_named() {
    let dir = copy_fixture("tiny-qwen2");
    edit_weights(dir.path(), |name, s, d| {
        (name != "model.layers.1.self_attn.k_proj.bias").then_some((s, d))
    });
    match load_pretrained(dir.path(), &Device::flex()) {
        Err(Error::MissingTensor { name, .. }) => {
            assert_eq!(name, "model.layers.1.self_attn.k_proj.bias")
        }
        other => panic!("expected MissingTensor, got {other:?}"),
    }
}

#[test]
fn wrong_shape_is_named() {
    let dir = copy_fixture("tiny-llama");
    edit_weights(dir.path(), |name, s, d| {
        if name == "model.layers.0.mlp.up_proj.weight" {
            Some((vec![s[1], s[0]], d))
        } else {
            Some((s, d))
        }
    });
    let err = load_pretrained(dir.path(), &Device::flex()).unwrap_err();
    match &err {
        Error::ShapeMismatch {
            name,
            expected,
            found,
        } => {
            assert_eq!(name, "model.layers.0.mlp.up_proj.weight");
            assert_eq!(expected, &vec![128, 64]);
            assert_eq!(found, &vec![64, 128]);
        }
        other => panic!("expected ShapeMismatch, got {other:?}"),
    }
    assert!(
        err.to_string()
            .contains("model.layers.0.mlp.up_proj.weight")
    );
}

#[test]
fn unexpected_tensor_is_named() {
    let dir = copy_fixture("tiny-qwen2");
    edit_config(dir.path(), |c| {
        c.insert("num_hidden_layers".into(), 1.into());
    });
    match load_pretrained(dir.path(), &Device::flex()) {
        Err(Error::UnexpectedTensor { name, .. }) => {
            assert!(name.starts_with("model.layers.1."), "{name}")
        }
        other => panic!("expected UnexpectedTensor, got {other:?}"),
    }
}

#[test]
fn unknown_architecture_is_named() {
    let dir = copy_fixture("tiny-qwen2");
    edit_config(dir.path(), |c| {
        c.insert(
            "architectures".into(),
            serde_json::json!(["MistralForCausalLM"]),
        );
        c.insert("model_type".into(), "mistral".into());
    });
    let err = load_pretrained(dir.path(), &Device::flex()).unwrap_err();
    assert!(matches!(err, Error::UnknownArchitecture { .. }), "{err:?}");
    assert!(err.to_string().contains("MistralForCausalLM"), "{err}");
}

#[test]
fn missing_config_field_is_named() {
    let dir = copy_fixture("tiny-llama");
    edit_config(dir.path(), |c| {
        c.remove("hidden_size");
    });
    let err = load_pretrained(dir.path(), &Device::flex()).unwrap_err();
    assert!(matches!(err, Error::Json { .. }), "{err:?}");
    assert!(
        err.to_string().contains("missing field `hidden_size`"),
        "{err}"
    );
}

#[test]
fn invalid_config_values_are_named() {
    let dir = copy_fixture("tiny-llama");
    edit_config(dir.path(), |c| {
        c.insert("num_key_value_heads".into(), 3.into());
    });
    match load_pretrained(dir.path(), &Device::flex()) {
        Err(Error::InvalidConfig { field, .. }) => assert_eq!(field, "num_key_value_heads"),
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
    edit_config(dir.path(), |c| {
        c.insert("num_key_value_heads".into(), 2.into());
        c.insert(
            "rope_parameters".into(),
            serde_json::json!({"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0}),
        );
    });
    match load_pretrained(dir.path(), &Device::flex()) {
        Err(Error::InvalidConfig { field, .. }) => assert_eq!(field, "rope_parameters"),
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}

#[test]
fn missing_weights_file_is_an_io_error_naming_the_file() {
    let dir = copy_fixture("tiny-qwen2");
    std::fs::remove_file(dir.path().join("model.safetensors")).unwrap();
    let err = load_pretrained(dir.path(), &Device::flex()).unwrap_err();
    assert!(
        matches!(err, Error::Io { .. }) && err.to_string().contains("model.safetensors"),
        "{err}"
    );
}

#[test]
fn bf16_weights_are_converted() {
    // bf16 keeps the top 16 bits of an f32; logits move by rounding only.
    let dir = copy_fixture("tiny-qwen2");
    let device = Device::flex();
    let (reference, _) = load_pretrained(dir.path(), &device).unwrap();
    let path = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let converted: Vec<(String, Vec<usize>, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .map(|(n, v)| {
            let b: Vec<u8> = v
                .data()
                .chunks_exact(4)
                .flat_map(|c| [c[2], c[3]])
                .collect(); // truncate to bf16
            (n, v.shape().to_vec(), b)
        })
        .collect();
    let views: Vec<_> = converted
        .iter()
        .map(|(n, s, b)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::BF16, s.clone(), b)
                    .unwrap(),
            )
        })
        .collect();
    safetensors::serialize_to_file(views, None, &path).unwrap();
    let (model, _) = load_pretrained(dir.path(), &device).unwrap();
    let worst = logits(&model)
        .iter()
        .zip(logits(&reference))
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst > 0.0 && worst < 0.5, "bf16 logit drift {worst}");
}
