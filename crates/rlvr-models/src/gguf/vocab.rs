//! A Hugging Face `tokenizer.json` (byte-level BPE) and `tokenizer_config.json` built from
//! GGUF tokenizer metadata (`tokenizer.ggml.*`, `tokenizer.chat_template`).
//!
//! GGUF stores a `gpt2`-model vocabulary already in byte-level form (`Ġ` for a space), its merges
//! as `"a b"` strings, a token type per id (1 normal, 2 unknown, 3 control, 4 user-defined,
//! 5 unused, 6 byte) and the pre-tokenizer as a name (`tokenizer.ggml.pre`). The pre-tokenizer
//! regexes are llama.cpp's (`llama-vocab.cpp`, `llm_tokenizer_bpe`): e.g. `smollm` and
//! `starcoder` split every digit first, then apply the GPT-2 regex, which is HF's
//! `Sequence[Digits(individual_digits), ByteLevel(use_regex)]`.

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::gguf::reader::GgufFile;

/// Token type of a control token (special in HF terms).
const TOKEN_TYPE_CONTROL: i64 = 3;
/// Token type of a user-defined added token.
const TOKEN_TYPE_USER_DEFINED: i64 = 4;

/// llama-3 pre-tokenizer regex (llama.cpp `LLAMA_VOCAB_PRE_TYPE_LLAMA3`; HF writes it with `(?i:`).
const LLAMA3_REGEX: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2 pre-tokenizer regex (as llama-3 but one digit per piece).
const QWEN2_REGEX: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn byte_level(use_regex: bool) -> Value {
    json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": use_regex})
}

fn split(regex: &str) -> Value {
    json!({"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": false})
}

/// The HF pre-tokenizer for llama.cpp pre-tokenizer name `pre` (`None`: GPT-2's).
fn pre_tokenizer(pre: Option<&str>) -> Option<Value> {
    Some(match pre.unwrap_or("default") {
        "default" | "gpt2" | "gpt-2" | "mpt" | "olmo" | "jais" => byte_level(true),
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva" => {
            json!({
                "type": "Sequence",
                "pretokenizers": [{"type": "Digits", "individual_digits": true}, byte_level(true)],
            })
        }
        "llama3" | "llama-v3" | "llama-bpe" | "smaug-bpe" | "dbrx" => json!({
            "type": "Sequence", "pretokenizers": [split(LLAMA3_REGEX), byte_level(false)],
        }),
        "qwen2" | "stablelm2" => json!({
            "type": "Sequence", "pretokenizers": [split(QWEN2_REGEX), byte_level(false)],
        }),
        _ => return None,
    })
}

/// Vocabulary, merges, token types and special ids read from the metadata.
struct GgufVocab<'a> {
    tokens: Vec<&'a str>,
    types: Vec<i64>,
    merges: Vec<(&'a str, &'a str)>,
}

fn read_vocab(file: &GgufFile) -> Result<GgufVocab<'_>> {
    let err = |message: String| Error::Gguf {
        path: file.path().to_owned(),
        message,
    };
    let model = file.get_str("tokenizer.ggml.model")?.unwrap_or("(absent)");
    if model != "gpt2" {
        return Err(err(format!(
            "metadata `tokenizer.ggml.model` = {model:?}: only \"gpt2\" (byte-level BPE) is supported"
        )));
    }
    let strings = |key: &str| -> Result<Vec<&str>> {
        let Some(v) = file.get(key) else {
            return Ok(Vec::new());
        };
        let arr = v
            .as_array()
            .ok_or_else(|| err(format!("metadata `{key}` is not an array")))?;
        arr.iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str()
                    .ok_or_else(|| err(format!("metadata `{key}`[{i}] is not a string")))
            })
            .collect()
    };
    let tokens = strings("tokenizer.ggml.tokens")?;
    if tokens.is_empty() {
        return Err(err("missing metadata key `tokenizer.ggml.tokens`".into()));
    }
    let types = match file.get("tokenizer.ggml.token_type") {
        None => vec![1; tokens.len()],
        Some(v) => {
            let arr = v.as_array().ok_or_else(|| {
                err("metadata `tokenizer.ggml.token_type` is not an array".into())
            })?;
            let types: Vec<i64> = arr.iter().map(|t| t.as_i64().unwrap_or(1)).collect();
            if types.len() != tokens.len() {
                return Err(err(format!(
                    "metadata `tokenizer.ggml.token_type` has {} entries, `tokenizer.ggml.tokens` {}",
                    types.len(),
                    tokens.len()
                )));
            }
            types
        }
    };
    let merges = strings("tokenizer.ggml.merges")?
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            m.split_once(' ').ok_or_else(|| {
                err(format!(
                    "metadata `tokenizer.ggml.merges`[{i}] = {m:?} is not \"a b\""
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(GgufVocab {
        tokens,
        types,
        merges,
    })
}

/// The id stored under `tokenizer.ggml.<name>_token_id`, if present and in range.
fn special_id(file: &GgufFile, name: &str, n_tokens: usize) -> Result<Option<u32>> {
    let key = format!("tokenizer.ggml.{name}_token_id");
    match file.get(&key) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(id) if (id as usize) < n_tokens => Ok(Some(id as u32)),
            _ => Err(Error::Gguf {
                path: file.path().to_owned(),
                message: format!("metadata `{key}` = {v:?} is not a token id below {n_tokens}"),
            }),
        },
    }
}

/// The contents of a HF `tokenizer.json` for the GGUF vocabulary: byte-level BPE with the GGUF
/// merges, control tokens as special added tokens, user-defined tokens as added tokens, the
/// pre-tokenizer named by `tokenizer.ggml.pre`, a byte-level decoder, and BOS prepended by the
/// post-processor when `tokenizer.ggml.add_bos_token` is true.
///
/// # Errors
/// [`Error::Gguf`] naming the key when the model is not `gpt2`, the pre-tokenizer is unknown,
/// or the vocabulary metadata is malformed.
pub fn tokenizer_json(file: &GgufFile) -> Result<Value> {
    let vocab = read_vocab(file)?;
    let pre_name = file.get_str("tokenizer.ggml.pre")?;
    let pre = pre_tokenizer(pre_name).ok_or_else(|| Error::Gguf {
        path: file.path().to_owned(),
        message: format!(
            "metadata `tokenizer.ggml.pre` = {pre_name:?}: unknown pre-tokenizer (supported: gpt2, \
             smollm, starcoder, refact, command-r, codeshell, exaone, minerva, mpt, olmo, jais, \
             llama-bpe, smaug-bpe, dbrx, qwen2, stablelm2)"
        ),
    })?;
    let mut vocab_map = serde_json::Map::new();
    let mut added = Vec::new();
    for (id, (&tok, &ty)) in vocab.tokens.iter().zip(&vocab.types).enumerate() {
        vocab_map.insert(tok.to_owned(), id.into());
        if ty == TOKEN_TYPE_CONTROL || ty == TOKEN_TYPE_USER_DEFINED {
            added.push(json!({
                "id": id, "content": tok, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": ty == TOKEN_TYPE_CONTROL,
            }));
        }
    }
    if vocab_map.len() != vocab.tokens.len() {
        return Err(Error::Gguf {
            path: file.path().to_owned(),
            message: "metadata `tokenizer.ggml.tokens` holds duplicate tokens".into(),
        });
    }
    let merges: Vec<Value> = vocab.merges.iter().map(|(a, b)| json!([a, b])).collect();
    let add_bos = file
        .get("tokenizer.ggml.add_bos_token")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let bos = special_id(file, "bos", vocab.tokens.len())?;
    let post = match (add_bos, bos) {
        (true, Some(id)) => {
            let t = vocab.tokens[id as usize];
            json!({
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": t, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": t, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": t, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {t: {"id": t, "ids": [id], "tokens": [t]}},
            })
        }
        _ => {
            json!({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true})
        }
    };
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": pre,
        "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {
            "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
            "ignore_merges": false, "vocab": vocab_map, "merges": merges,
        },
    }))
}

/// A `tokenizers` tokenizer built from the GGUF vocabulary (see [`tokenizer_json`]).
///
/// # Errors
/// As [`tokenizer_json`]; [`Error::Tokenizer`] when the `tokenizers` crate rejects the result.
pub fn build_tokenizer(file: &GgufFile) -> Result<tokenizers::Tokenizer> {
    let text = tokenizer_json(file)?.to_string();
    text.parse::<tokenizers::Tokenizer>()
        .map_err(|e| Error::Tokenizer {
            path: Some(file.path().to_owned()),
            message: format!("building the tokenizer from GGUF metadata: {e}"),
        })
}

/// The contents of a HF `tokenizer_config.json`: `bos_token`, `eos_token`, `pad_token` and
/// `unk_token` from `tokenizer.ggml.*_token_id`, `add_bos_token` / `add_eos_token`,
/// `chat_template` from `tokenizer.chat_template`, and `model_max_length` = `context_length`.
///
/// # Errors
/// [`Error::Gguf`] naming the key when metadata is malformed.
pub fn tokenizer_config(
    file: &GgufFile,
    context_length: Option<u64>,
) -> Result<serde_json::Map<String, Value>> {
    let vocab = read_vocab(file)?;
    let n = vocab.tokens.len();
    let mut config = serde_json::Map::new();
    for flag in ["add_bos_token", "add_eos_token"] {
        let v = file
            .get(&format!("tokenizer.ggml.{flag}"))
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        config.insert(flag.into(), v.into());
    }
    for (name, key) in [
        ("bos", "bos_token"),
        ("eos", "eos_token"),
        ("padding", "pad_token"),
        ("unknown", "unk_token"),
    ] {
        if let Some(id) = special_id(file, name, n)? {
            config.insert(key.into(), vocab.tokens[id as usize].into());
        }
    }
    if let Some(t) = file.get_str("tokenizer.chat_template")? {
        config.insert("chat_template".into(), t.into());
    }
    config.insert("clean_up_tokenization_spaces".into(), false.into());
    if let Some(len) = context_length {
        config.insert("model_max_length".into(), len.into());
    }
    config.insert("tokenizer_class".into(), "PreTrainedTokenizerFast".into());
    Ok(config)
}
