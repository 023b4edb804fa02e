//! Parquet files (the Hub's and verl's format), read with the `parquet` crate's row API: each
//! row becomes the JSON object a JSONL line would be. Strings, numbers and booleans map to
//! themselves, lists to arrays, structs and maps to objects (map keys as strings), dates and
//! timestamps to ISO strings, decimals to strings, raw bytes to base64; a NaN becomes null.
//! Snappy and zstd compression (and uncompressed files) are read.

use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::Value;

use crate::error::{Error, Result};

/// The rows of a parquet file as JSON objects, in file order.
///
/// # Errors
/// [`Error::Io`] when the file cannot be opened; [`Error::BadRow`] naming the row (0-based)
/// that cannot be decoded, or row 0 when the file is not parquet or uses a codec this build
/// does not read.
pub fn records(path: &Path) -> Result<Vec<Value>> {
    let bad = |row: usize, e: parquet::errors::ParquetError| Error::BadRow {
        path: path.to_path_buf(),
        row,
        message: format!("parquet: {e}"),
    };
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = SerializedFileReader::new(file).map_err(|e| bad(0, e))?;
    let rows = reader.get_row_iter(None).map_err(|e| bad(0, e))?;
    rows.enumerate()
        .map(|(i, row)| row.map(|r| r.to_json_value()).map_err(|e| bad(i, e)))
        .collect()
}
