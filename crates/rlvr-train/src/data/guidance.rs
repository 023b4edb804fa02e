//! SMEPO's guidance (methods-extra §10; arXiv 2605.25198, the reference code's
//! `inject_teacher_prefix_inplace`): during training rollouts each prompt with an expert trace
//! is followed by `intro + masked_trace[:k] + tail`, the trace's reward-relevant spans masked
//! ([`crate::data::semantic_mask`]) and its plan kept. The guidance is part of the prompt, so
//! it gets no loss; the reward and the objective are unchanged; held-out evaluation uses the
//! plain prompt.
//!
//! `k` = ⌊tokens × `ratio`⌋ of the masked trace, cut back to its last newline when shortened
//! (the paper's setting is `ratio = 1`, the whole trace). A plain prompt gets the guidance
//! appended to its text; a chat prompt gets it appended, after a blank line, to its last user
//! turn (the template then closes the turn, which is what the paper's
//! `"<|im_end|>\n<|im_start|>assistant"` tail does by hand). A trace that still holds the
//! gold answer after masking is not shown (`drop_leaking`).
//!
//! `prompts = "hard"` **\[PROPOSED]** guides only the prompts the policy cannot yet solve:
//! each prompt is first sampled plain, and a group with no passing sample is sampled again with
//! its guidance, the guided group taking the plain one's place (`step/hard_guidance.rs`). The
//! paper's runs guide every prompt of a set chosen to be hard; this picks them per step instead.

use serde::{Deserialize, Serialize};

use crate::data::Example;
use crate::data::semantic_mask::{
    contains_answer, mask_code_trace, mask_entities, mask_math_trace,
};
use crate::error::{Error, Result};

/// Which spans of the trace are masked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaskKind {
    /// Numbers (math: final and intermediate values).
    #[default]
    Math,
    /// Fenced code blocks' bodies.
    Code,
    /// The values of `entity_fields` (agentic search's answer entities, **\[PROPOSED]**).
    Entities,
    /// Nothing: the full expert trace, the paper's "full trace" baseline (it leaks answers).
    None,
}

/// Which training prompts get guidance (`smepo.prompts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuidedPrompts {
    /// Every prompt with a trace (the paper's runs).
    #[default]
    All,
    /// Only a prompt whose plain group had no passing sample this step, sampled again with its
    /// guidance **\[PROPOSED]**.
    Hard,
}

/// `[smepo]`: semantic-masked expert guidance on the training prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmepoConfig {
    /// The record field holding the expert trace (GSM8K's `answer` is its annotated
    /// solution). Examples without it get no guidance.
    pub trace_field: String,
    /// What is masked.
    pub mask: MaskKind,
    /// With `mask = "entities"`: the record fields whose (string) values are masked.
    pub entity_fields: Vec<String>,
    /// The share of the masked trace's tokens shown, in (0, 1].
    pub ratio: f64,
    /// Text before the trace.
    pub intro: String,
    /// Text after the trace.
    pub tail: String,
    /// Whether a trace that still holds the gold answer after masking is withheld.
    pub drop_leaking: bool,
    /// Which prompts are guided: `"all"` (default) or `"hard"`.
    pub prompts: GuidedPrompts,
}

impl Default for SmepoConfig {
    fn default() -> Self {
        Self {
            trace_field: "solution".into(),
            mask: MaskKind::Math,
            entity_fields: vec!["answer".into()],
            ratio: 1.0,
            intro: "Here is an example solution:\n".into(),
            tail: String::new(),
            drop_leaking: true,
            prompts: GuidedPrompts::All,
        }
    }
}

/// What became of one prompt's guidance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guidance {
    /// Shown: this many characters of guidance text were added.
    Shown(usize),
    /// The example has no trace.
    NoTrace,
    /// The masked trace still held the answer, and was withheld.
    Leaked,
    /// With `prompts = "hard"`: the plain group had a passing sample, so none was needed.
    Unneeded,
}

impl SmepoConfig {
    /// Checks the knobs.
    ///
    /// # Errors
    /// [`Error::Config`] naming the key.
    pub fn validate(&self) -> Result<()> {
        if !(self.ratio > 0.0 && self.ratio <= 1.0) {
            return Err(Error::Config(format!(
                "smepo.ratio must be in (0, 1] (got {})",
                self.ratio
            )));
        }
        if self.trace_field.is_empty() {
            return Err(Error::Config("smepo.trace_field must name a field".into()));
        }
        if self.mask == MaskKind::Entities && self.entity_fields.is_empty() {
            return Err(Error::Config(
                "smepo.mask = \"entities\" needs smepo.entity_fields".into(),
            ));
        }
        Ok(())
    }

    /// The masked trace of `ex`, or `None` without one.
    pub fn masked_trace(&self, ex: &Example) -> Option<String> {
        let trace = ex.record.get(&self.trace_field)?.as_str()?;
        Some(match self.mask {
            MaskKind::Math => mask_math_trace(trace),
            MaskKind::Code => mask_code_trace(trace),
            MaskKind::Entities => {
                let values: Vec<&str> = self
                    .entity_fields
                    .iter()
                    .filter_map(|f| ex.record.get(f).and_then(|v| v.as_str()))
                    .collect();
                mask_entities(trace, &values)
            }
            MaskKind::None => trace.to_string(),
        })
    }

    /// `ex` with its guidance added to the prompt, and what was done; `shorten` cuts a masked
    /// trace to its shown part (the run passes a token-level cut, see [`cut_at_ratio`]).
    pub fn guide(
        &self,
        ex: &Example,
        gold: Option<&str>,
        shorten: impl FnOnce(&str) -> Result<String>,
    ) -> Result<(Example, Guidance)> {
        let Some(masked) = self.masked_trace(ex) else {
            return Ok((ex.clone(), Guidance::NoTrace));
        };
        if self.drop_leaking && gold.is_some_and(|g| contains_answer(&masked, g)) {
            return Ok((ex.clone(), Guidance::Leaked));
        }
        let shown = if self.ratio < 1.0 {
            shorten(&masked)?
        } else {
            masked
        };
        let text = format!("{}{shown}{}", self.intro, self.tail);
        let mut out = ex.clone();
        match (&mut out.messages, &mut out.prompt) {
            (Some(turns), _) => match turns.iter_mut().rev().find(|m| m.role == "user") {
                Some(user) => {
                    user.content.push_str("\n\n");
                    user.content.push_str(&text);
                }
                None => turns.push(crate::data::Message {
                    role: "user".into(),
                    content: text.clone(),
                }),
            },
            (None, Some(p)) => p.push_str(&text),
            (None, None) => out.prompt = Some(text.clone()),
        }
        Ok((out, Guidance::Shown(text.chars().count())))
    }
}

/// The first ⌊`ids.len()` × `ratio`⌋ of `ids`, decoded, cut back to the last newline when one
/// is in it (SMEPO's `k`).
///
/// # Errors
/// The tokenizer's.
pub fn cut_at_ratio(tokenizer: &rlvr_models::Tokenizer, text: &str, ratio: f64) -> Result<String> {
    let ids = tokenizer.encode(text)?;
    let k = (ids.len() as f64 * ratio).floor() as usize;
    if k >= ids.len() {
        return Ok(text.to_string());
    }
    let head = tokenizer.decode(&ids[..k])?;
    Ok(match head.rfind('\n') {
        Some(i) => head[..=i].to_string(),
        None => head,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::data::Message;

    fn example(record: serde_json::Value, messages: Option<Vec<Message>>) -> Example {
        Example {
            id: "x".into(),
            prompt: record["prompt"].as_str().map(str::to_string),
            messages,
            record,
        }
    }

    fn unused(_: &str) -> Result<String> {
        panic!("ratio 1 shows the whole trace")
    }

    #[test]
    fn a_plain_prompt_gets_the_masked_trace_and_a_chat_prompt_its_last_user_turn() {
        let cfg = SmepoConfig {
            intro: "Hint: ".into(),
            tail: " Now you.".into(),
            ..SmepoConfig::default()
        };
        let ex = example(json!({"prompt": "Q?", "solution": "2+3=5. #### 5"}), None);
        let (g, what) = cfg.guide(&ex, Some("6"), unused).unwrap();
        let want = "Hint: [NUMBER]+[NUMBER]=[NUMBER]. #### [NUMBER] Now you.";
        assert_eq!(g.prompt.as_deref(), Some(format!("Q?{want}").as_str()));
        assert_eq!(what, Guidance::Shown(want.chars().count()));
        let turns = vec![
            Message {
                role: "user".into(),
                content: "Q?".into(),
            },
            Message {
                role: "assistant".into(),
                content: "ok".into(),
            },
        ];
        let chat = example(json!({"solution": "7"}), Some(turns));
        let (g, _) = cfg.guide(&chat, None, unused).unwrap();
        let m = g.messages.unwrap();
        assert_eq!(m[0].content, "Q?\n\nHint: [NUMBER] Now you.");
        assert_eq!(m[1].content, "ok");
    }

    /// The full-trace baseline leaks the answer, so it is withheld unless `drop_leaking` is
    /// off; a record without the field is left alone.
    #[test]
    fn leaking_traces_are_withheld_and_missing_ones_skipped() {
        let ex = example(json!({"prompt": "Q", "solution": "so 72"}), None);
        let full = SmepoConfig {
            mask: MaskKind::None,
            ..SmepoConfig::default()
        };
        assert_eq!(
            full.guide(&ex, Some("72"), unused).unwrap().1,
            Guidance::Leaked
        );
        let shown = SmepoConfig {
            drop_leaking: false,
            ..full
        };
        assert!(matches!(
            shown.guide(&ex, Some("72"), unused).unwrap().1,
            Guidance::Shown(_)
        ));
        let bare = example(json!({"prompt": "Q"}), None);
        let (g, what) = SmepoConfig::default()
            .guide(&bare, Some("1"), unused)
            .unwrap();
        assert_eq!((g.prompt.as_deref(), what), (Some("Q"), Guidance::NoTrace));
    }

    #[test]
    fn entities_are_masked_from_the_records_fields() {
        let cfg = SmepoConfig {
            mask: MaskKind::Entities,
            entity_fields: vec!["answer".into()],
            intro: String::new(),
            ..SmepoConfig::default()
        };
        let ex = example(
            json!({"prompt": "Q:", "solution": "search kabo, read Muna", "answer": "muna"}),
            None,
        );
        let (g, _) = cfg.guide(&ex, Some("muna"), unused).unwrap();
        assert_eq!(g.prompt.as_deref(), Some("Q:search kabo, read [ENTITY]"));
    }

    #[test]
    fn knobs_are_checked() {
        for (cfg, key) in [
            (
                SmepoConfig {
                    ratio: 0.0,
                    ..SmepoConfig::default()
                },
                "smepo.ratio",
            ),
            (
                SmepoConfig {
                    mask: MaskKind::Entities,
                    entity_fields: vec![],
                    ..SmepoConfig::default()
                },
                "smepo.entity_fields",
            ),
        ] {
            assert!(cfg.validate().unwrap_err().to_string().contains(key));
        }
    }
}
