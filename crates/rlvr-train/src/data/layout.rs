//! Which files hold a split: `data.train` / `data.eval` name a file, or a directory laid out
//! the way the HuggingFace Hub lays out datasets, read by the rules of `datasets`' own
//! resolver (`data_files.py`), first match wins:
//!
//! 1. shards `data/<split>-NNNNN-of-NNNNN*.<ext>` (what `push_to_hub` writes): when any file
//!    has this form, a split is exactly its shards;
//! 2. a directory name holding the split's keyword as a word (`train/`, `my-test/`);
//! 3. a file name holding it (`train.jsonl`, `gsm8k_test.parquet`, `test-0001.json`);
//! 4. no keyword anywhere: every file is `train`.
//!
//! A keyword stands "as a word" when the characters either side are `-`, `.`, `_`, a space, a
//! digit or the path's end. The splits' keywords are those of `datasets`: `train`, `training`;
//! `validation`, `valid`, `dev`, `val`; `test`, `testing`, `eval`, `evaluation`; another split
//! name is its own keyword. Data files are `.parquet`, `.jsonl` and `.json`; hidden files and
//! directories, `__*` directories and the Hub's metadata files are skipped. A split's files are
//! read in sorted path order.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// How a data file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line (`.jsonl`, `.json`, and any other name).
    JsonLines,
    /// Apache Parquet (`.parquet`).
    Parquet,
}

impl Format {
    /// The format of a file, by its extension.
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("parquet") => Format::Parquet,
            _ => Format::JsonLines,
        }
    }
}

/// The extensions of data files in a directory.
pub const DATA_EXTENSIONS: [&str; 3] = ["parquet", "jsonl", "json"];

/// The Hub's metadata files, never data (from `datasets`' `FILES_TO_IGNORE`).
const IGNORED_FILES: [&str; 4] = [
    "config.json",
    "dataset_info.json",
    "dataset_infos.json",
    "dataset_dict.json",
];

/// The splits `datasets` knows and their keywords.
const SPLIT_KEYWORDS: [(&str, &[&str]); 3] = [
    ("train", &["train", "training"]),
    ("validation", &["validation", "valid", "dev", "val"]),
    ("test", &["test", "testing", "eval", "evaluation"]),
];

/// The files of `split` under `path`: `path` itself when it is a file, else the split's files
/// in a directory laid out as on the Hub (see the module docs), sorted.
///
/// # Errors
/// [`Error::Io`] when `path` cannot be read; [`Error::Config`] when the directory holds no file
/// of the split, saying what was looked for and which splits are there.
pub fn files(path: &Path, split: &str) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut all = Vec::new();
    walk(path, Path::new(""), &mut all)?;
    all.sort();
    if all.is_empty() {
        return Err(Error::Config(format!(
            "{}: no data files (.{}) in this directory",
            path.display(),
            DATA_EXTENSIONS.join(", .")
        )));
    }
    let (chosen, present, rule) = resolve(&all, split);
    if chosen.is_empty() {
        return Err(Error::Config(format!(
            "{}: no files of split `{split}` (data.train_split / data.eval_split name the \
             split). Looked for shards data/{split}-NNNNN-of-NNNNN.*, then .{} files under a \
             directory or with a file name holding {} as a word (the HuggingFace layout); by \
             {rule} this directory has the split(s) {}",
            path.display(),
            DATA_EXTENSIONS.join(", ."),
            keywords(split)
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", "),
            present
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(chosen.into_iter().map(|rel| path.join(rel)).collect())
}

/// Collects the data files under `root/rel`, as paths relative to `root`.
fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let dir = root.join(rel);
    for entry in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
        let entry = entry.map_err(|e| Error::io(&dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            if !name.starts_with("__") {
                walk(root, &rel.join(&*name), out)?;
            }
        } else if !IGNORED_FILES.contains(&&*name)
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| DATA_EXTENSIONS.contains(&e))
        {
            out.push(rel.join(&*name));
        }
    }
    Ok(())
}

/// The files of `split` among `files` (relative, sorted), the splits the directory has, and
/// the rule that decided.
fn resolve(files: &[PathBuf], split: &str) -> (Vec<PathBuf>, BTreeSet<String>, &'static str) {
    let shards: Vec<(&PathBuf, String)> = files
        .iter()
        .filter_map(|f| shard_split(f).map(|s| (f, s)))
        .collect();
    if !shards.is_empty() {
        let present = shards.iter().map(|(_, s)| s.clone()).collect();
        let chosen = shards
            .into_iter()
            .filter(|(_, s)| s == split)
            .map(|(f, _)| f.clone())
            .collect();
        return (chosen, present, "its data/<split>-NNNNN-of-NNNNN shards");
    }
    let rules: [(fn(&Path, &str) -> bool, &'static str); 2] = [
        (in_dir_name, "directory names"),
        (in_file_name, "file names"),
    ];
    for (matches, rule) in rules {
        let has = |keys: &[&str]| -> Vec<PathBuf> {
            files
                .iter()
                .filter(|f| keys.iter().any(|k| matches(f, k)))
                .cloned()
                .collect()
        };
        let present: BTreeSet<String> = SPLIT_KEYWORDS
            .iter()
            .filter(|(_, keys)| !has(keys).is_empty())
            .map(|(name, _)| name.to_string())
            .collect();
        let chosen = has(&keywords(split));
        if !present.is_empty() || !chosen.is_empty() {
            return (chosen, present, rule);
        }
    }
    let train = keywords("train");
    let chosen = if keywords(split) == train {
        files.to_vec()
    } else {
        Vec::new()
    };
    let present = BTreeSet::from(["train".to_string()]);
    (
        chosen,
        present,
        "no split keyword in any name (all files are `train`)",
    )
}

/// The keywords of a split name: its group's when it is one of `datasets`' keywords.
fn keywords(split: &str) -> Vec<&str> {
    SPLIT_KEYWORDS
        .iter()
        .find(|(_, keys)| keys.contains(&split))
        .map_or_else(|| vec![split], |(_, keys)| keys.to_vec())
}

/// `Some(split)` for `data/<split>-NNNNN-of-NNNNN*.<ext>`.
fn shard_split(rel: &Path) -> Option<String> {
    let mut parts = rel.iter();
    let (dir, name) = (parts.next()?, parts.next()?);
    if dir != "data" || parts.next().is_some() {
        return None;
    }
    let name = name.to_str()?;
    let b = name.as_bytes();
    // "-" 5 digits "-of-" 5 digits: 15 bytes; the split before it, an extension after it.
    (1..b.len().saturating_sub(15)).find_map(|i| {
        let tail = &b[i..i + 15];
        let digits = |r: std::ops::Range<usize>| tail[r].iter().all(u8::is_ascii_digit);
        let shard = tail[0] == b'-' && digits(1..6) && &tail[6..10] == b"-of-" && digits(10..15);
        (shard && name[i + 15..].contains('.')).then(|| name[..i].to_string())
    })
}

/// Whether `key` occurs in `s` as a word: bounded by a separator or the string's ends on the
/// left, and on the right by a separator or (when `end_ok`) the end.
fn has_word(s: &str, key: &str, end_ok: bool) -> bool {
    let sep = |c: char| matches!(c, '-' | '.' | '_' | ' ') || c.is_ascii_digit();
    s.match_indices(key).any(|(i, _)| {
        let left = s[..i].chars().next_back().is_none_or(sep);
        let right = match s[i + key.len()..].chars().next() {
            None => end_ok,
            Some(c) => sep(c),
        };
        left && right
    })
}

/// `**/{key}/**`, `**/{key}[sep]*/**`, `**/*[sep]{key}/**`, `**/*[sep]{key}[sep]*/**`.
fn in_dir_name(rel: &Path, key: &str) -> bool {
    rel.parent()
        .into_iter()
        .flat_map(Path::iter)
        .any(|d| d.to_str().is_some_and(|d| has_word(d, key, true)))
}

/// `**/{key}[sep]*`, `**/*[sep]{key}[sep]*`: the keyword is followed by a separator.
fn in_file_name(rel: &Path, key: &str) -> bool {
    rel.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| has_word(n, key, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        dir
    }

    fn split(dir: &tempfile::TempDir, split: &str) -> Result<Vec<String>> {
        Ok(files(dir.path(), split)?
            .into_iter()
            .map(|p| {
                p.strip_prefix(dir.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect())
    }

    #[test]
    fn shards_are_a_split_exactly_in_order() {
        let d = tree(&[
            "README.md",
            "data/train-00001-of-00002.parquet",
            "data/train-00000-of-00002.parquet",
            "data/test-00000-of-00001.parquet",
            // Shards win: a keyword-named file beside them is not part of any split.
            "train.jsonl",
            "data/.hidden-00000-of-00001.parquet",
        ]);
        assert_eq!(
            split(&d, "train").unwrap(),
            [
                "data/train-00000-of-00002.parquet",
                "data/train-00001-of-00002.parquet"
            ]
        );
        assert_eq!(
            split(&d, "test").unwrap(),
            ["data/test-00000-of-00001.parquet"]
        );
        let err = split(&d, "validation").unwrap_err().to_string();
        assert!(
            err.contains("no files of split `validation`")
                && err.contains("data/validation-NNNNN-of-NNNNN")
                && err.contains("`test`, `train`"),
            "{err}"
        );
    }

    #[test]
    fn custom_shard_split_names_are_found() {
        let d = tree(&[
            "data/train_sft-00000-of-00001.parquet",
            "data/test_sft-00000-of-00001.parquet",
        ]);
        assert_eq!(
            split(&d, "train_sft").unwrap(),
            ["data/train_sft-00000-of-00001.parquet"]
        );
        assert!(split(&d, "train").is_err());
    }

    #[test]
    fn file_names_with_split_keywords() {
        let d = tree(&[
            "train.jsonl",
            "gsm8k_test.parquet",
            "dev-0001.json",
            "trainer.jsonl",
            "dataset_info.json",
            "notes.txt",
        ]);
        assert_eq!(split(&d, "train").unwrap(), ["train.jsonl"]);
        assert_eq!(split(&d, "test").unwrap(), ["gsm8k_test.parquet"]);
        // `validation` and its keyword `dev` are one split.
        assert_eq!(split(&d, "validation").unwrap(), ["dev-0001.json"]);
        assert_eq!(split(&d, "dev").unwrap(), ["dev-0001.json"]);
    }

    #[test]
    fn directory_names_win_over_file_names() {
        let d = tree(&[
            "train/a.parquet",
            "train/b_test.parquet",
            "my-test/x.jsonl",
            "__pycache__/train.json",
        ]);
        assert_eq!(
            split(&d, "train").unwrap(),
            ["train/a.parquet", "train/b_test.parquet"]
        );
        assert_eq!(split(&d, "test").unwrap(), ["my-test/x.jsonl"]);
    }

    #[test]
    fn without_keywords_every_file_is_train() {
        let d = tree(&["a.jsonl", "b/c.parquet"]);
        assert_eq!(split(&d, "train").unwrap(), ["a.jsonl", "b/c.parquet"]);
        let err = split(&d, "test").unwrap_err().to_string();
        assert!(err.contains("all files are `train`"), "{err}");
    }

    #[test]
    fn a_file_is_itself_and_an_empty_directory_is_an_error() {
        let d = tree(&["x.jsonl"]);
        let f = d.path().join("x.jsonl");
        assert_eq!(files(&f, "test").unwrap(), vec![f.clone()]);
        let e = tree(&["README.md"]);
        let err = files(e.path(), "train").unwrap_err().to_string();
        assert!(err.contains("no data files"), "{err}");
        let err = files(&d.path().join("missing"), "train")
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing"), "{err}");
    }

    #[test]
    fn words_are_bounded_by_separators() {
        assert!(has_word("train", "train", true));
        assert!(!has_word("train", "train", false));
        assert!(has_word("train.jsonl", "train", false));
        assert!(has_word("x_train-1", "train", false));
        assert!(has_word("x9train", "train", true));
        assert!(!has_word("trainer.jsonl", "train", false));
        assert!(!has_word("pretrain.jsonl", "train", false));
        assert_eq!(
            shard_split(Path::new("data/train-00000-of-00002.parquet")).as_deref(),
            Some("train")
        );
        assert_eq!(shard_split(Path::new("train-00000-of-00002.parquet")), None);
        assert_eq!(
            shard_split(Path::new("data/train-0000-of-00002.parquet")),
            None
        );
    }
}
