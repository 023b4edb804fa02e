//! A tiny random model directory for tests and the conformance script: a character-level
//! tokenizer (with ChatML special tokens and a chat template) and a random 2-layer Qwen2 model
//! sized to its vocabulary, written with `rlvr_models::save_pretrained`.

use std::path::Path;

use burn::tensor::Device;
use rlvr_models::{CausalLm, ModelConfig, save_pretrained};
use serde_json::json;

/// Special tokens, in id order.
pub const SPECIALS: [&str; 5] = ["<pad>", "<eos>", "<unk>", "<|im_start|>", "<|im_end|>"];
/// Id of `<|im_end|>`, the EOS token.
pub const EOS_ID: u32 = 4;
/// One token per character.
pub const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz0123456789 .,:;?!+-*/=()\n";
/// The chat template (ChatML).
pub const CHAT_TEMPLATE: &str = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// Vocabulary size of the tokenizer (and the model).
pub fn vocab_size() -> usize {
    SPECIALS.len() + ALPHABET.chars().count()
}

/// The `tokenizer.json` text.
pub fn tokenizer_json() -> String {
    let mut vocab = serde_json::Map::new();
    for (i, s) in SPECIALS.iter().enumerate() {
        vocab.insert((*s).to_string(), json!(i));
    }
    for c in ALPHABET.chars() {
        let next = vocab.len();
        vocab.insert(c.to_string(), json!(next));
    }
    let added: Vec<_> = SPECIALS
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({"id": i, "content": s, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "[\\s\\S]"}, "behavior": "Isolated", "invert": false},
        "post_processor": null,
        "decoder": {"type": "Fuse"},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
    })
    .to_string()
}

/// Writes a random tiny model (device RNG seeded with `seed`) and the tokenizer into `dir`.
pub fn write_tiny_model(dir: &Path, seed: u64) -> ModelConfig {
    // The device RNG is shared: seed and draw under a lock (tests run in parallel).
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let device = Device::flex();
    let config = ModelConfig::tiny(vocab_size(), 64, 2);
    let model = {
        let _guard = LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        device.seed(seed);
        CausalLm::new(&config, &device)
    };
    save_pretrained(&model, &config, dir).expect("save the tiny model");
    std::fs::write(dir.join("tokenizer.json"), tokenizer_json()).expect("write tokenizer.json");
    let tokenizer_config = json!({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "pad_token": "<pad>",
        "eos_token": "<|im_end|>",
        "unk_token": "<unk>",
        "chat_template": CHAT_TEMPLATE,
    });
    std::fs::write(
        dir.join("tokenizer_config.json"),
        tokenizer_config.to_string(),
    )
    .expect("write tokenizer_config.json");
    config
}
