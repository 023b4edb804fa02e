//! A character-level `tokenizer.json` for the bundled task's small model.
//!
//! One token per character of a fixed alphabet plus three special tokens (`<pad>` = 0,
//! `<eos>` = 1, `<unk>` = 2). It is an ordinary HuggingFace tokenizer (WordLevel model, a
//! one-character Split pre-tokenizer, a Fuse decoder), so the saved model directory opens in
//! `transformers` like any other.

use serde_json::json;

/// Id of the padding token.
pub const PAD_ID: u32 = 0;
/// Id of the end-of-sequence token.
pub const EOS_ID: u32 = 1;
/// Id of the unknown-character token.
pub const UNK_ID: u32 = 2;
/// The special tokens, in id order.
pub const SPECIALS: [&str; 3] = ["<pad>", "<eos>", "<unk>"];
/// The characters of the bundled arithmetic task (and a few more, so variants need no new vocab).
pub const ALPHABET: &str = "0123456789+-*/=() .,:?ABCDEFGHIJKLMNOPQRSTUVWXYZ;";

/// The `tokenizer.json` text for `alphabet`.
pub fn tokenizer_json(alphabet: &str) -> String {
    let mut vocab = serde_json::Map::new();
    for (i, s) in SPECIALS.iter().enumerate() {
        vocab.insert((*s).to_string(), json!(i));
    }
    for c in alphabet.chars() {
        let next = vocab.len();
        vocab.entry(c.to_string()).or_insert(json!(next));
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
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated", "invert": false},
        "post_processor": null,
        "decoder": {"type": "Fuse"},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
    })
    .to_string()
}

/// The vocabulary size of [`tokenizer_json`] for `alphabet`.
pub fn vocab_size(alphabet: &str) -> usize {
    let mut seen = std::collections::HashSet::new();
    SPECIALS.len() + alphabet.chars().filter(|c| seen.insert(*c)).count()
}

/// `tokenizer_config.json` for the bundled model: names the special tokens, no chat template.
pub fn tokenizer_config_json() -> String {
    json!({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "pad_token": "<pad>",
        "eos_token": "<eos>",
        "unk_token": "<unk>",
        "model_max_length": 64
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_one_token_per_character_and_decodes_back() {
        let tok: tokenizers::Tokenizer = tokenizer_json(ALPHABET).parse().unwrap();
        let enc = tok.encode("347+85=432", false).unwrap();
        // '3' is the 4th alphabet character: id 3 + 3 specials = 6; '+' is the 11th: id 13.
        assert_eq!(&enc.get_ids()[..4], &[6, 7, 10, 13]);
        assert_eq!(enc.get_ids().len(), 10);
        assert_eq!(tok.decode(enc.get_ids(), true).unwrap(), "347+85=432");
        assert_eq!(tok.decode(&[6, EOS_ID], true).unwrap(), "3");
        assert_eq!(tok.get_vocab_size(true), vocab_size(ALPHABET));
    }
}
