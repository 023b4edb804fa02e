//! Log-prob blocks of the responses: the legacy completions shape and the chat shape.

use rlvr_models::Tokenizer;
use serde_json::Value;

use crate::openai_types::{ChatLogprob, ChatLogprobs, ChatTopLogprob, CompletionLogprobs};
use crate::text::token_string;

/// What the engine reported for one sampled token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SampledToken {
    pub token: u32,
    pub logprob: f32,
    pub top: Vec<(u32, f32)>,
}

/// The completions block for `tokens`; offsets count characters from `offset` on.
pub(crate) fn completion_logprobs(
    tokenizer: &Tokenizer,
    tokens: &[SampledToken],
    top_k: usize,
    as_ids: bool,
    mut offset: usize,
) -> CompletionLogprobs {
    let mut block = CompletionLogprobs {
        top_logprobs: (top_k > 0).then(Vec::new),
        ..CompletionLogprobs::default()
    };
    for t in tokens {
        let text = token_string(tokenizer, t.token, as_ids);
        block.text_offset.push(offset);
        offset += text.chars().count();
        block.tokens.push(text);
        block.token_logprobs.push(t.logprob);
        if let Some(tops) = block.top_logprobs.as_mut() {
            tops.push(
                t.top
                    .iter()
                    .map(|&(id, lp)| (token_string(tokenizer, id, as_ids), Value::from(lp)))
                    .collect(),
            );
        }
    }
    block
}

/// The chat block for `tokens`.
pub(crate) fn chat_logprobs(
    tokenizer: &Tokenizer,
    tokens: &[SampledToken],
    as_ids: bool,
) -> ChatLogprobs {
    let content = tokens
        .iter()
        .map(|t| {
            let token = token_string(tokenizer, t.token, as_ids);
            ChatLogprob {
                bytes: token.as_bytes().to_vec(),
                token,
                logprob: t.logprob,
                top_logprobs: t
                    .top
                    .iter()
                    .map(|&(id, logprob)| {
                        let token = token_string(tokenizer, id, as_ids);
                        ChatTopLogprob {
                            bytes: token.as_bytes().to_vec(),
                            token,
                            logprob,
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    ChatLogprobs { content }
}
