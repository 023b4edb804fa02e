//! The response format of the K2V reward (methods-extra §17, "Reward"): its four tags, the
//! format pattern, and the hardened extraction of the answer and the reasoning.

use serde::{Deserialize, Serialize};

/// The four tags of a K2V response: `<think>…</think><answer>…</answer>` in the paper.
///
/// `compact` is a deviation for the bundled character model, whose alphabet has no `<`, `>`
/// or lowercase letters and whose context is 64 characters: the same structure written
/// `(…)=…;` (think `(` and `)`, answer `=` and `;`). Every rule of the reward is the same for
/// both sets; only the strings differ.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TagSet {
    /// `<think>`, `</think>`, `<answer>`, `</answer>` (the paper's format).
    #[default]
    Xml,
    /// `(`, `)`, `=`, `;` (the bundled model's format, a documented deviation).
    Compact,
}

/// The four tag strings of a [`TagSet`], in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tags {
    /// Opens the reasoning (`<think>`).
    pub think_open: &'static str,
    /// Closes the reasoning (`</think>`).
    pub think_close: &'static str,
    /// Opens the answer (`<answer>`).
    pub answer_open: &'static str,
    /// Closes the answer (`</answer>`).
    pub answer_close: &'static str,
}

impl TagSet {
    /// The tag strings of this set.
    pub fn tags(self) -> Tags {
        match self {
            TagSet::Xml => Tags {
                think_open: "<think>",
                think_close: "</think>",
                answer_open: "<answer>",
                answer_close: "</answer>",
            },
            TagSet::Compact => Tags {
                think_open: "(",
                think_close: ")",
                answer_open: "=",
                answer_close: ";",
            },
        }
    }
}

impl Tags {
    /// The paper's format pattern `<think>.*?</think>\s*<answer>.*?</answer>`, anchored at the
    /// start of the response only (Python's `re.match`), `.` matching newlines.
    pub fn format_regex(&self) -> regex::Regex {
        let pattern = format!(
            r"\A(?s:{}.*?{}\s*{}.*?{})",
            regex::escape(self.think_open),
            regex::escape(self.think_close),
            regex::escape(self.answer_open),
            regex::escape(self.answer_close)
        );
        regex::Regex::new(&pattern).expect("escaped tags form a valid pattern")
    }

    /// The text between the answer tags, trimmed, or `None`.
    ///
    /// Hardened against answers that score without being given (**\[PROPOSED\]**, stricter
    /// than taking the first `<answer>…</answer>`): both answer tags must occur exactly once,
    /// the opening one first, and after the first `</think>` when the response has one (an
    /// answer block inside the reasoning is not the answer).
    pub fn answer<'a>(&self, response: &'a str) -> Option<&'a str> {
        if response.matches(self.answer_open).count() != 1
            || response.matches(self.answer_close).count() != 1
        {
            return None;
        }
        let open = response.find(self.answer_open)?;
        let start = open + self.answer_open.len();
        let end = start + response[start..].find(self.answer_close)?;
        if let Some(think_end) = response.find(self.think_close)
            && open < think_end
        {
            return None;
        }
        Some(response[start..end].trim())
    }

    /// The reasoning: the text between the first think-open tag and the first think-close tag
    /// after it, or `""` when there is none.
    pub fn think<'a>(&self, response: &'a str) -> &'a str {
        let Some(open) = response.find(self.think_open) else {
            return "";
        };
        let start = open + self.think_open.len();
        match response[start..].find(self.think_close) {
            Some(len) => &response[start..start + len],
            None => "",
        }
    }
}
