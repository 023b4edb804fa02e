//! Reading JSON Lines files with errors that name the file and line.

use std::path::Path;

use crate::{Error, Result};

/// Reads a JSONL file into one JSON value per non-empty line.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read, [`Error::BadLine`] (path, 1-based line) for a line
/// that is not JSON.
pub fn read_jsonl(path: &Path) -> Result<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(k, l)| {
            serde_json::from_str(l).map_err(|e| Error::BadLine {
                path: path.to_path_buf(),
                line: k + 1,
                reason: e.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        std::fs::write(&p, "{\"a\": 1}\n\n{oops\n").unwrap();
        let err = read_jsonl(&p).unwrap_err().to_string();
        assert!(err.contains("x.jsonl:3:"), "{err}");
        std::fs::write(&p, "{\"a\": 1}\n[2]\n").unwrap();
        assert_eq!(read_jsonl(&p).unwrap().len(), 2);
        assert!(
            read_jsonl(&dir.path().join("missing"))
                .unwrap_err()
                .to_string()
                .contains("missing")
        );
    }
}
