//! A slice of a split's records by position (`data.train_rows`, `data.eval_rows`): one file
//! can then hold both splits, as MBPP's does (its test split is task ids 11–510, its train split
//! 601–974, in one file of task ids 1–974).

use std::fmt;

/// The records `start..end` of a split, in file order, from 0; `end = None` is to the end.
/// Written `"start:end"`, either side may be left out (`"600:"`, `":500"`); `""` is every
/// record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rows {
    /// The first record kept, from 0.
    pub start: usize,
    /// One past the last record kept; `None`: to the end.
    pub end: Option<usize>,
}

impl Rows {
    /// Parses `"start:end"` (either side optional) or `""` (everything).
    ///
    /// # Errors
    /// A message saying what is wrong: no colon, a side that is not a number, or
    /// `end <= start`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Rows::default());
        }
        let (a, b) = text
            .split_once(':')
            .ok_or_else(|| format!("{text:?}: expected \"start:end\" (e.g. \"600:974\")"))?;
        let side = |s: &str| -> Result<Option<usize>, String> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            s.parse()
                .map(Some)
                .map_err(|_| format!("{text:?}: {s:?} is not a record index (0, 1, 2, ...)"))
        };
        let rows = Rows {
            start: side(a)?.unwrap_or(0),
            end: side(b)?,
        };
        if rows.end.is_some_and(|end| end <= rows.start) {
            return Err(format!("{text:?}: the end must come after the start"));
        }
        Ok(rows)
    }

    /// Whether this selects every record.
    pub fn is_all(&self) -> bool {
        *self == Rows::default()
    }

    /// The selected part of `items`.
    ///
    /// # Errors
    /// A message when the selection is empty (`start` at or past the end of `items`).
    pub fn select<T>(&self, mut items: Vec<T>) -> Result<Vec<T>, String> {
        let n = items.len();
        let end = self.end.unwrap_or(n).min(n);
        if self.start >= end {
            return Err(format!("{self} selects no record of {n}"));
        }
        items.truncate(end);
        items.drain(..self.start);
        Ok(items)
    }
}

impl fmt::Display for Rows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.end {
            Some(end) => write!(f, "\"{}:{end}\"", self.start),
            None => write!(f, "\"{}:\"", self.start),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Rows;

    #[test]
    fn parses_and_selects() {
        let v: Vec<u32> = (0..10).collect();
        assert_eq!(Rows::parse("").unwrap().select(v.clone()).unwrap(), v);
        assert_eq!(
            Rows::parse("2:5").unwrap().select(v.clone()).unwrap(),
            [2, 3, 4]
        );
        assert_eq!(
            Rows::parse("8:").unwrap().select(v.clone()).unwrap(),
            [8, 9]
        );
        assert_eq!(
            Rows::parse(":2").unwrap().select(v.clone()).unwrap(),
            [0, 1]
        );
        // An end past the records is cut to them; a start past them selects nothing.
        assert_eq!(Rows::parse("9:40").unwrap().select(v.clone()).unwrap(), [9]);
        assert!(Rows::parse("10:").unwrap().select(v).is_err());
        for bad in ["5", "a:3", "3:1", "2:2", "-1:"] {
            assert!(Rows::parse(bad).is_err(), "{bad}");
        }
    }
}
