//! JSON lines (`.jsonl`, and `.json` files in the same one-object-per-line form): one record per
//! non-blank line.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};

/// The records of a JSON-lines file with their 1-based line numbers; blank lines are skipped.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read, [`Error::BadLine`] naming the line that is not
/// valid JSON.
pub fn records(path: &Path) -> Result<Vec<(usize, Value)>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map(|v| (i + 1, v))
                .map_err(|e| Error::BadLine {
                    path: path.to_path_buf(),
                    line: i + 1,
                    message: format!("not valid JSON: {e}"),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_numbers_across_blank_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, "{\"a\":1}\n\n  \n[2]\n").unwrap();
        let r = records(&path).unwrap();
        assert_eq!(
            r,
            vec![
                (1, serde_json::json!({"a": 1})),
                (4, serde_json::json!([2]))
            ]
        );
        std::fs::write(&path, "{\"a\":1}\n{\"a\":\n").unwrap();
        let err = records(&path).unwrap_err().to_string();
        assert!(
            err.contains("d.jsonl:2") && err.contains("not valid JSON"),
            "{err}"
        );
    }
}
