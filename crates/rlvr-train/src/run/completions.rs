//! The table of sampled completions: every `log.completions_every` steps, each kept sample of
//! the step's rollout batch with its prompt, response, reward, advantage and verdict, as
//! `completions/step-<k>.jsonl` (one object per sample) and `completions/step-<k>.md` (the same
//! rows as a Markdown table, for reading).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::checkpoint::write_atomic;
use crate::error::{Error, Result};
use crate::step::rollout::Rollouts;
use crate::trainer::Trainer;

/// One sampled completion of a step.
#[derive(Debug, Clone, Serialize)]
pub struct CompletionRow {
    /// The group (prompt) index within the step's kept batch.
    pub group: usize,
    /// The example's id.
    pub id: String,
    /// The prompt as the policy saw it (decoded, special tokens removed).
    pub prompt: String,
    /// The decoded response.
    pub response: String,
    /// The verifier's reward (before any reward shaping).
    pub reward: f32,
    /// The advantage the update used (times the stages' loss weight).
    pub advantage: f32,
    /// Whether the verifier judged the response correct.
    pub passed: bool,
    /// The answer the verifier extracted, if any.
    pub extracted: Option<String>,
    /// Response length in tokens.
    pub tokens: usize,
}

/// Whether step `step` (1-based) writes its completions: every `every`-th step, never at 0.
pub fn due(every: usize, step: usize) -> bool {
    every > 0 && step.is_multiple_of(every)
}

/// The rows of a step's kept batch (advantages assigned), in batch order.
pub fn rows(tr: &Trainer, batch: &Rollouts) -> Result<Vec<CompletionRow>> {
    let g = tr.config.rollout.group_size.max(1);
    batch
        .samples
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Ok(CompletionRow {
                group: i / g,
                id: tr.train_set[s.example].id.clone(),
                prompt: tr.tokenizer.decode_skip_special(&s.prompt)?,
                response: s.text.clone(),
                reward: s.reward,
                advantage: s.advantage,
                passed: s.passed,
                extracted: s.extracted.clone(),
                tokens: s.response.len(),
            })
        })
        .collect()
}

/// Writes `dir/step-<step>.jsonl` and `dir/step-<step>.md` (step zero-padded to 6 digits; `dir`
/// is created when missing) and returns the JSONL path.
pub fn write(dir: &Path, step: usize, rows: &[CompletionRow]) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let jsonl: String = rows
        .iter()
        .map(|r| serde_json::to_string(r).expect("a row serializes") + "\n")
        .collect();
    let path = dir.join(format!("step-{step:06}.jsonl"));
    write_atomic(&path, jsonl.as_bytes())?;
    write_atomic(
        &dir.join(format!("step-{step:06}.md")),
        markdown(step, rows).as_bytes(),
    )?;
    Ok(path)
}

fn markdown(step: usize, rows: &[CompletionRow]) -> String {
    let mut md = format!(
        "# Completions of step {step}\n\n| group | id | prompt | response | reward | advantage \
         | passed | answer |\n|---:|---|---|---|---:|---:|:---:|---|\n"
    );
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.3} | {:+.3} | {} | {} |",
            r.group,
            cell(&r.id),
            cell(&r.prompt),
            cell(&r.response),
            r.reward,
            r.advantage,
            if r.passed { "✓" } else { "✗" },
            cell(r.extracted.as_deref().unwrap_or("")),
        );
    }
    md
}

/// Text as one Markdown table cell: `|` escaped, line breaks as `<br>`, at most 300 characters.
fn cell(text: &str) -> String {
    let mut s: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        s.push('…');
    }
    s.replace('|', "\\|")
        .replace("\r\n", "<br>")
        .replace('\n', "<br>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_every_nth_step_and_never_when_off() {
        assert!(due(2, 2) && due(2, 4) && !due(2, 3) && !due(0, 2));
    }

    #[test]
    fn rows_become_jsonl_and_an_escaped_markdown_table() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("completions");
        let row = CompletionRow {
            group: 1,
            id: "s12".into(),
            prompt: "1+2=".into(),
            response: "3|x\ny".into(),
            reward: 1.0,
            advantage: -0.5,
            passed: true,
            extracted: Some("3".into()),
            tokens: 4,
        };
        let path = write(&dir, 7, &[row]).unwrap();
        assert_eq!(path, dir.join("step-000007.jsonl"));
        let line: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&path).unwrap().trim()).unwrap();
        assert_eq!(line["response"], "3|x\ny");
        assert_eq!(line["advantage"], -0.5);
        assert_eq!(line["extracted"], "3");
        let md = std::fs::read_to_string(dir.join("step-000007.md")).unwrap();
        assert!(
            md.contains("| 1 | s12 | 1+2= | 3\\|x<br>y | 1.000 | -0.500 | ✓ | 3 |"),
            "{md}"
        );
    }
}
