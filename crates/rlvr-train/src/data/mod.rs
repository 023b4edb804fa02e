//! Datasets: records that carry a prompt and the verifier's reference fields, read from JSON
//! lines or parquet, from a file or a directory in the HuggingFace Hub layout.
//!
//! A record is a JSON object (a JSONL line, or a parquet row converted to one: `parquet.rs`)
//! with an optional `id`, either a text prompt (`prompt`; GSM8K's `question` and MATH's
//! `problem` are read too) or chat turns (`messages`: `[{role, content}]`), and the fields of
//! the verifier's reference (`answer` for math, `tests`/`test` for code, `rubric` for rubrics;
//! see `rlvr-verifiers`). The whole record is kept, so the verifier finds its fields.
//!
//! - `layout.rs`: which files hold a split (`data.train_split`, `data.eval_split`);
//! - `jsonl.rs`, `parquet.rs`: the records of one file;
//! - `fields.rs`: the field mapping (`data.prompt_field`, `data.messages_field`,
//!   `data.id_field`, `data.answer_field`) and a record → [`Example`];
//! - `template.rs`: the prompt written from a record's fields (`data.prompt_template`);
//! - `rows.rs`: a slice of a split by position (`data.train_rows`, `data.eval_rows`);
//! - `semantic_mask.rs`, `guidance.rs`: SMEPO's masked expert traces on training prompts
//!   (`[smepo]`).
//!
//! Every example remembers where it came from ([`Origin`]), so a bad record, whether found
//! while reading or by [`Dataset::check`] when the run starts, is an error naming its file and
//! its line (JSONL, from 1) or row (parquet, from 0).

pub mod fields;
pub mod guidance;
pub mod jsonl;
pub mod layout;
pub mod parquet;
pub mod rows;
pub mod semantic_mask;
pub mod subproblems;
pub mod template;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

pub use fields::Fields;
pub use layout::Format;
pub use rows::Rows;

use crate::config::DataSection;
use crate::error::{Error, Result};

/// One chat turn.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

/// One training or evaluation example.
#[derive(Debug, Clone)]
pub struct Example {
    /// The record's id, or `<file stem>:<line>` (JSONL) / `<file stem>:<row>` (parquet) when
    /// it has none.
    pub id: String,
    /// The prompt as plain text, if given.
    pub prompt: Option<String>,
    /// The prompt as chat turns, if given.
    pub messages: Option<Vec<Message>>,
    /// The whole record, from which the verifier takes its reference fields (with the mapped
    /// gold answer copied to the field the verifier reads).
    pub record: serde_json::Value,
}

/// Where a record is in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A JSONL line, from 1.
    Line(usize),
    /// A parquet row, from 0.
    Row(usize),
}

/// Where an example came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub path: PathBuf,
    /// The line or row in it.
    pub place: Place,
}

impl Origin {
    /// The error for this record: [`Error::BadLine`] or [`Error::BadRow`].
    pub fn error(&self, message: String) -> Error {
        let path = self.path.clone();
        match self.place {
            Place::Line(line) => Error::BadLine {
                path,
                line,
                message,
            },
            Place::Row(row) => Error::BadRow { path, row, message },
        }
    }
}

/// The examples of a split, in file order, with where each came from.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    /// The examples.
    pub examples: Vec<Example>,
    /// `origins[i]` is where `examples[i]` was read.
    pub origins: Vec<Origin>,
}

impl Dataset {
    /// Runs `check` on every example (in parallel); the first failure in file order is an
    /// error naming its file and line or row, and how many other examples fail.
    ///
    /// # Errors
    /// [`Error::BadLine`] or [`Error::BadRow`] for the first example `check` refuses.
    pub fn check(
        &self,
        check: impl Fn(&Example) -> std::result::Result<(), String> + Sync,
    ) -> Result<()> {
        let failures: Vec<(usize, String)> = self
            .examples
            .par_iter()
            .enumerate()
            .filter_map(|(i, ex)| check(ex).err().map(|e| (i, e)))
            .collect();
        let Some((first, message)) = failures.first() else {
            return Ok(());
        };
        let more = failures.len() - 1;
        Err(self.origins[*first].error(if more == 0 {
            message.clone()
        } else {
            format!("{message} (and {more} more records of this dataset fail this check)")
        }))
    }
}

/// Reads the `split` of `path` (a file, or a directory in the Hub layout: `layout.rs`) with the
/// field mapping `fields`. A file is read by its extension: `.parquet` as parquet, anything
/// else as JSON lines (blank lines skipped).
///
/// # Errors
/// [`Error::Io`] for an unreadable file, [`Error::Config`] for a directory without the split,
/// and [`Error::BadLine`] / [`Error::BadRow`] naming a record that is not valid JSON, has no
/// prompt, or has a mapped field missing or of the wrong type; an empty split is an error too.
pub fn load(path: &Path, split: &str, fields: &Fields) -> Result<Dataset> {
    let mut out = Dataset::default();
    for file in layout::files(path, split)? {
        let stem = file
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let records: Vec<(Place, serde_json::Value)> = match Format::of(&file) {
            Format::JsonLines => jsonl::records(&file)?
                .into_iter()
                .map(|(line, r)| (Place::Line(line), r))
                .collect(),
            Format::Parquet => parquet::records(&file)?
                .into_iter()
                .enumerate()
                .map(|(row, r)| (Place::Row(row), r))
                .collect(),
        };
        for (place, record) in records {
            let origin = Origin {
                path: file.clone(),
                place,
            };
            let n = match place {
                Place::Line(n) | Place::Row(n) => n,
            };
            let example = fields
                .example(record, format!("{stem}:{n}"))
                .map_err(|e| origin.error(e))?;
            out.examples.push(example);
            out.origins.push(origin);
        }
    }
    if out.examples.is_empty() {
        return Err(Error::BadLine {
            path: path.to_path_buf(),
            line: 0,
            message: format!("no examples (split `{split}`)"),
        });
    }
    Ok(out)
}

/// What the warm start learns from in `data`'s training split, as bytes for its cache key: the
/// file's contents when `data.train` is a file and the fields are not mapped (so the key of
/// such a run is the same as before directories and mappings existed), else each of the
/// split's files (path in the directory and contents) and the field mapping.
///
/// # Errors
/// [`Error::Io`] for an unreadable file, [`Error::Config`] for a directory without the split.
pub fn train_fingerprint(data: &DataSection) -> Result<Vec<u8>> {
    let files = layout::files(&data.train, &data.train_split)?;
    let read = |f: &Path| std::fs::read(f).map_err(|e| Error::io(f, e));
    let mut mapping = vec![
        &data.prompt_field,
        &data.messages_field,
        &data.answer_field,
        &data.id_field,
    ];
    let defaults = DataSection::default();
    let unmapped = mapping
        == [
            &defaults.prompt_field,
            &defaults.messages_field,
            &defaults.answer_field,
            &defaults.id_field,
        ]
        && data.prompt_template.is_empty()
        && data.train_rows.is_empty();
    // Keys written before the template and the row slice existed stay as they were.
    if !(data.prompt_template.is_empty() && data.train_rows.is_empty()) {
        mapping.extend([&data.prompt_template, &data.train_rows]);
    }
    if unmapped && files.len() == 1 && files[0] == data.train {
        return read(&data.train);
    }
    let mut out = serde_json::to_vec(&mapping).expect("strings serialize");
    for f in &files {
        let rel = f.strip_prefix(&data.train).unwrap_or(f);
        out.extend_from_slice(rel.to_string_lossy().as_bytes());
        out.push(0);
        out.extend(read(f)?);
    }
    Ok(out)
}

/// Reads a JSONL file with the default field names (`prompt`/`question`/`problem`,
/// `messages`, `id`/`task_id`). Blank lines are skipped. The commands other than `rlvr train`
/// read their data with it; [`load`] reads every format and layout with a field mapping.
///
/// # Errors
/// As [`load`].
pub fn load_jsonl(path: &Path) -> Result<Vec<Example>> {
    if Format::of(path) != Format::JsonLines {
        return Err(Error::Config(format!(
            "{}: this command reads JSON-lines files only (parquet files and Hub-layout \
             directories are read by `rlvr train`)",
            path.display()
        )));
    }
    if path.is_dir() {
        return Err(Error::Config(format!(
            "{}: a directory; this command reads JSON-lines files only (Hub-layout \
             directories are read by `rlvr train`)",
            path.display()
        )));
    }
    Ok(load(path, "train", &Fields::default())?.examples)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<Vec<Example>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, text).unwrap();
        load_jsonl(&path)
    }

    #[test]
    fn reads_prompts_messages_and_ids() {
        let ex = load_text(
            "{\"id\":\"a\",\"prompt\":\"1+1=\",\"answer\":\"2\"}\n\n\
             {\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"answer\":\"3\"}\n",
        )
        .unwrap();
        assert_eq!(ex.len(), 2);
        assert_eq!(ex[0].id, "a");
        assert_eq!(ex[1].id, "d:3");
        assert_eq!(ex[1].messages.as_ref().unwrap()[0].content, "hi");
        assert_eq!(ex[0].record["answer"], "2");
    }

    #[test]
    fn benchmark_prompt_fields_are_read() {
        let ex = load_text(
            "{\"question\":\"Q?\",\"answer\":\"x\\n#### 4\"}\n\
             {\"problem\":\"P?\",\"answer\":\"5\"}\n\
             {\"prompt\":\"A\",\"question\":\"B\",\"answer\":\"6\"}\n",
        )
        .unwrap();
        let prompts: Vec<_> = ex.iter().map(|e| e.prompt.as_deref().unwrap()).collect();
        assert_eq!(prompts, ["Q?", "P?", "A"]);
        let err = load_text("{\"question\": 3}\n").unwrap_err().to_string();
        assert!(
            err.contains("d.jsonl:1") && err.contains("`question`"),
            "{err}"
        );
    }

    #[test]
    fn malformed_line_names_file_and_line() {
        let err = load_text("{\"prompt\":\"x\"}\n{\"prompt\": 3}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("d.jsonl:2") && err.contains("prompt"), "{err}");
        let err = load_text("{\"prompt\":\"x\"}\nnot json\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("d.jsonl:2") && err.contains("JSON"), "{err}");
        let err = load_text("{\"answer\":\"x\"}\n").unwrap_err().to_string();
        assert!(err.contains("d.jsonl:1"), "{err}");
        let err = load_text("\n\n").unwrap_err().to_string();
        assert!(err.contains("no examples"), "{err}");
    }

    #[test]
    fn check_names_the_first_bad_record_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(
            &path,
            "{\"prompt\":\"a\",\"answer\":\"1\"}\n{\"prompt\":\"b\"}\n\n{\"prompt\":\"c\"}\n",
        )
        .unwrap();
        let d = load(&path, "train", &Fields::default()).unwrap();
        assert_eq!(d.origins[2].place, Place::Line(4));
        let needs_answer = |ex: &Example| match ex.record.get("answer") {
            Some(_) => Ok(()),
            None => Err(format!("`{}` has no answer", ex.id)),
        };
        let err = d.check(needs_answer).unwrap_err().to_string();
        assert!(
            err.contains("d.jsonl:2: `d:2` has no answer (and 1 more"),
            "{err}"
        );
        assert!(d.check(|_| Ok(())).is_ok());
    }
}
