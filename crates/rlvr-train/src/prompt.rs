//! Prompts as the model sees them: an example rendered as text (plain or through the chat
//! template), and the padding id of a tokenizer.

use rlvr_models::Tokenizer;

use crate::data::{Example, Message};
use crate::error::Result;

/// Renders an example's prompt as text: the chat template when the example has `messages` (or
/// when `use_chat_template` wraps a plain prompt as one user turn), else the plain prompt.
pub fn render_prompt(
    tokenizer: &Tokenizer,
    example: &Example,
    use_chat_template: bool,
) -> Result<String> {
    render_prompt_with_tools(tokenizer, example, use_chat_template, &[])
}

/// [`render_prompt`] with the tools of an environment in the chat template's `tools` variable
/// (a plain-text prompt is not changed by them).
pub fn render_prompt_with_tools(
    tokenizer: &Tokenizer,
    example: &Example,
    use_chat_template: bool,
    tools: &[serde_json::Value],
) -> Result<String> {
    let messages = match (&example.messages, &example.prompt) {
        (Some(m), _) => Some(m.clone()),
        (None, Some(p)) if use_chat_template => Some(vec![Message {
            role: "user".into(),
            content: p.clone(),
        }]),
        _ => None,
    };
    Ok(match messages {
        Some(m) => {
            let turns: Vec<rlvr_models::ChatMessage> = m
                .into_iter()
                .map(|m| rlvr_models::ChatMessage {
                    role: m.role,
                    content: m.content,
                })
                .collect();
            tokenizer.apply_chat_template_with_tools(&turns, tools, true)?
        }
        None => example.prompt.clone().unwrap_or_default(),
    })
}

/// The padding id: the tokenizer's pad token, else its first end-of-sequence token, else 0.
pub fn pad_id(tokenizer: &Tokenizer) -> u32 {
    tokenizer
        .pad_token_id()
        .or_else(|| tokenizer.eos_token_ids().first().copied())
        .unwrap_or(0)
}
