//! Program lines → character spans of the response (methods-extra §9, token mapping): the
//! program is the fenced block's body (or the whole response), found at a byte offset of the
//! response by [`crate::code::extract_program_at`]; a reference's `prefix` (HumanEval's prompt)
//! comes before it in the analyzed source, so source lines are shifted by the prefix's lines.

/// The character span in the response of line `line` (1-based) of the program that starts at
/// byte `at` of `response`, `program` being that text. Line 0, or a line past the end, gives
/// the whole program ([PROPOSED]: an unknown place is charged to all of the program). An empty
/// line covers its newline. `None` when the program is empty.
pub fn line_span(response: &str, at: usize, program: &str, line: usize) -> Option<(usize, usize)> {
    let base = response.get(..at)?.chars().count();
    let total = program.chars().count();
    if total == 0 {
        return None;
    }
    let lines: Vec<&str> = program.split('\n').collect();
    // A final newline leaves an empty last piece that is not a line of the program.
    let n_lines = if program.ends_with('\n') {
        lines.len() - 1
    } else {
        lines.len()
    };
    if line == 0 || line > n_lines {
        return Some((base, base + total));
    }
    let start: usize = lines[..line - 1]
        .iter()
        .map(|l| l.chars().count() + 1)
        .sum();
    let len = lines[line - 1].chars().count().max(1);
    Some((base + start, (base + start + len).min(base + total)))
}

/// The program line of analyzed-source line `source_line` when the source is `prefix` followed
/// by the program: `None` for a line inside the prefix, `Some(0)` for an unknown line (0).
pub fn program_line(source_line: usize, prefix: &str) -> Option<usize> {
    if source_line == 0 {
        return Some(0);
    }
    let shift = prefix.matches('\n').count();
    source_line.checked_sub(shift).filter(|&l| l >= 1)
}
