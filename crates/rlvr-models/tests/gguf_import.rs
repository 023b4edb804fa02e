//! `import_gguf` on the tiny Llama and Qwen2 checkpoints written as GGUF by llama.cpp's `gguf`
//! package (`scripts/make_gguf_fixtures.py`, Llama q/k rows permuted as llama.cpp's converter
//! does): the import gives back the original HF tensors exactly, hence the logits recorded with
//! transformers; the tokenizer built from the GGUF vocabulary gives transformers' ids.

mod parity_fixture;

use parity_fixture::{Record, fixture};

use burn::tensor::{Device, Int, Tensor, TensorData};
use rlvr_models::gguf::{
    GgufFile, ImportOptions, hf_tensor_name, import_gguf, import_gguf_with, model_config,
    permute_qk_rows, unpermute_qk_rows,
};
use rlvr_models::{ChatMessage, Error, Tokenizer, hf_tensors, load_pretrained};

/// Imports `tests/fixtures/gguf/<name>.gguf`, checks tensors against `tests/fixtures/<name>`
/// and logits against its `parity.json`; returns the imported directory.
fn import_and_compare(name: &str) -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    let summary = import_gguf(&fixture(&format!("gguf/{name}.gguf")), out.path()).unwrap();
    assert_eq!(summary.source_types.keys().collect::<Vec<_>>(), vec!["F32"]);
    let device = Device::flex();
    let (ours, config) = load_pretrained(out.path(), &device).unwrap();
    let (reference, ref_config) = load_pretrained(&fixture(name), &device).unwrap();
    assert_eq!(
        config.architecture().unwrap(),
        ref_config.architecture().unwrap()
    );
    assert_eq!(config.num_kv_heads(), ref_config.num_kv_heads());
    assert_eq!(config.rope_theta(), ref_config.rope_theta());
    assert_eq!(config.rms_norm_eps, ref_config.rms_norm_eps);
    assert_eq!(config.tie_word_embeddings, ref_config.tie_word_embeddings);
    let (a, b) = (hf_tensors(&ours), hf_tensors(&reference));
    assert_eq!(a.len(), b.len());
    for ((na, sa, da), (nb, sb, db)) in a.iter().zip(&b) {
        assert_eq!((na, sa), (nb, sb));
        assert!(da == db, "{na} differs from the original");
    }
    let record: Record =
        serde_json::from_str(&std::fs::read_to_string(fixture(name).join("parity.json")).unwrap())
            .unwrap();
    for case in &record.cases {
        let t = case.input_ids.len();
        let ids =
            Tensor::<2, Int>::from_data(TensorData::new(case.input_ids.clone(), [1, t]), &device);
        let logits = ours.forward(ids).into_data().try_into_vec::<f32>().unwrap();
        for (pos, row) in case.logits.iter().enumerate() {
            for (v, &e) in row.iter().enumerate() {
                let got = logits[pos * config.vocab_size + v];
                assert!(
                    (got - e).abs() <= 1e-4,
                    "{name} logit [{pos}, {v}]: {got} vs {e}"
                );
            }
        }
    }
    out
}

#[test]
fn llama_import_undoes_the_qk_permutation() {
    import_and_compare("tiny-llama");
}

#[test]
fn qwen2_import_keeps_biases_and_row_order() {
    import_and_compare("tiny-qwen2");
}

#[test]
fn skipping_the_unpermutation_changes_q_and_k_only() {
    let out = tempfile::tempdir().unwrap();
    let options = ImportOptions {
        undo_qk_permutation: false,
    };
    import_gguf_with(&fixture("gguf/tiny-llama.gguf"), out.path(), &options).unwrap();
    let device = Device::flex();
    let (wrong, _) = load_pretrained(out.path(), &device).unwrap();
    let (right, _) = load_pretrained(&fixture("tiny-llama"), &device).unwrap();
    for ((name, shape, a), (_, _, b)) in hf_tensors(&wrong).iter().zip(&hf_tensors(&right)) {
        let qk = name.contains("q_proj") || name.contains("k_proj");
        assert_eq!(a != b, qk, "{name}");
        if qk {
            // Rows are only reordered: the GGUF rows are llama.cpp's permutation of HF's.
            let heads = if name.contains("q_proj") { 4 } else { 2 };
            assert!(permute_qk_rows(b, shape[0], heads).unwrap() == *a, "{name}");
        }
    }
}

#[test]
fn qk_permutation_by_hand() {
    // One head, head_dim 4, one column: HF rows [r0, r1, r2, r3] = (first half r0 r1, second
    // half r2 r3). llama.cpp interleaves the halves: [r0, r2, r1, r3].
    let hf = [0.0f32, 1.0, 2.0, 3.0];
    assert_eq!(
        permute_qk_rows(&hf, 4, 1).unwrap(),
        vec![0.0, 2.0, 1.0, 3.0]
    );
    assert_eq!(
        unpermute_qk_rows(&[0.0, 2.0, 1.0, 3.0], 4, 1).unwrap(),
        hf.to_vec()
    );
    // Two heads of head_dim 4, two columns: each head is permuted on its own.
    let hf: Vec<f32> = (0..16).map(|x| x as f32).collect(); // row r = [2r, 2r+1]
    let gguf = permute_qk_rows(&hf, 8, 2).unwrap();
    let rows: Vec<f32> = gguf.chunks(2).map(|r| r[0] / 2.0).collect();
    assert_eq!(rows, vec![0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0]);
    assert_eq!(unpermute_qk_rows(&gguf, 8, 2).unwrap(), hf);
    assert_eq!(permute_qk_rows(&hf, 8, 3), None); // 8 rows do not split into 3 heads
}

#[test]
fn tensor_names_map_to_hf() {
    let cases = [
        ("token_embd.weight", Some("model.embed_tokens.weight")),
        ("output_norm.weight", Some("model.norm.weight")),
        ("output.weight", Some("lm_head.weight")),
        (
            "blk.12.attn_q.bias",
            Some("model.layers.12.self_attn.q_proj.bias"),
        ),
        (
            "blk.0.attn_output.weight",
            Some("model.layers.0.self_attn.o_proj.weight"),
        ),
        (
            "blk.3.ffn_down.weight",
            Some("model.layers.3.mlp.down_proj.weight"),
        ),
        (
            "blk.3.ffn_norm.weight",
            Some("model.layers.3.post_attention_layernorm.weight"),
        ),
        ("rope_freqs.weight", None),
        ("blk.x.attn_q.weight", None),
        ("blk.0.attn_q.scale", None),
    ];
    for (gguf, hf) in cases {
        assert_eq!(hf_tensor_name(gguf).as_deref(), hf, "{gguf}");
    }
}

#[derive(serde::Deserialize)]
struct Encode {
    text: String,
    ids: Vec<u32>,
}

#[derive(serde::Deserialize)]
struct Expected {
    messages: Vec<ChatMessage>,
    rendered_with_generation_prompt: String,
    encode: Vec<Encode>,
}

#[test]
fn tokenizer_from_gguf_matches_transformers() {
    // The GGUF holds the vocabulary and merges of tests/fixtures/tokenizer, whose ids and chat
    // rendering transformers recorded in expected.json.
    let out = tempfile::tempdir().unwrap();
    import_gguf(&fixture("gguf/tiny-llama.gguf"), out.path()).unwrap();
    let tok = Tokenizer::from_dir(out.path()).unwrap();
    let expected: Expected =
        serde_json::from_str(&std::fs::read_to_string(fixture("tokenizer/expected.json")).unwrap())
            .unwrap();
    assert!(!expected.encode.is_empty());
    for case in &expected.encode {
        assert_eq!(tok.encode(&case.text).unwrap(), case.ids, "{:?}", case.text);
        assert_eq!(tok.decode(&case.ids).unwrap(), case.text);
    }
    assert_eq!(
        tok.apply_chat_template(&expected.messages, true).unwrap(),
        expected.rendered_with_generation_prompt
    );
    assert_eq!(tok.eos_token_ids(), vec![2]); // <|im_end|>
    assert_eq!(tok.pad_token_id(), Some(0));
    assert_eq!(tok.special_token_id("bos_token"), Some(1));
    // Control tokens are special: skipped when decoding for a verifier.
    assert_eq!(
        tok.decode_skip_special(&[1, 71, 2]).unwrap(),
        tok.decode(&[71]).unwrap()
    );
}

/// The fixture's bytes with the value of `general.architecture` ("llama") replaced.
fn with_architecture(arch: &str) -> Vec<u8> {
    assert_eq!(arch.len(), 5);
    let mut bytes = std::fs::read(fixture("gguf/tiny-llama.gguf")).unwrap();
    let key = b"general.architecture";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap();
    let value = at + key.len() + 4 + 8; // u32 type, u64 length
    assert_eq!(&bytes[value..value + 5], b"llama");
    bytes[value..value + 5].copy_from_slice(arch.as_bytes());
    bytes
}

#[test]
fn unsupported_architecture_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gemma.gguf");
    std::fs::write(&path, with_architecture("gemma")).unwrap();
    let err = import_gguf(&path, &dir.path().join("out")).unwrap_err();
    assert!(matches!(err, Error::Gguf { .. }));
    assert!(
        err.to_string()
            .contains("`general.architecture` = \"gemma\""),
        "{err}"
    );
    assert!(!dir.path().join("out/config.json").exists());
}

#[test]
fn config_comes_from_metadata() {
    let file = GgufFile::open(fixture("gguf/tiny-llama.gguf")).unwrap();
    let config = model_config(&file).unwrap();
    assert_eq!(config.model_type, "llama");
    assert_eq!(config.architectures, vec!["LlamaForCausalLM"]);
    assert_eq!((config.hidden_size, config.intermediate_size), (64, 128));
    assert_eq!(
        (
            config.num_hidden_layers,
            config.num_attention_heads,
            config.num_kv_heads()
        ),
        (2, 4, 2)
    );
    assert_eq!(
        (config.vocab_size, config.max_position_embeddings),
        (256, 128)
    );
    assert_eq!(config.rope_theta(), 500_000.0);
    assert_eq!(config.rms_norm_eps, 1e-6); // stored as f32, written back as the short decimal
    assert!(config.tie_word_embeddings);
    assert_eq!(config.eos_token_ids(), vec![2]);
}
