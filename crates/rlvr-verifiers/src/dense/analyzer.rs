//! The static half of the dense code reward: syntax, style and security findings of a program,
//! from a Python process that compiles and parses the program but never executes it
//! (`analyze.py` after `style_rules.py` and `security_rules.py`), run in the sandbox.

use std::time::Duration;

use serde_json::Value;

use super::Component;
use crate::sandbox::Sandbox;

/// The analyzer's source: the two rule files, then the driver.
pub const ANALYZER: &str = concat!(
    include_str!("style_rules.py"),
    include_str!("security_rules.py"),
    include_str!("analyze.py")
);

/// The analyzer's wall-clock limit (it only parses: milliseconds on MBPP programs).
pub const ANALYZE_TIMEOUT: Duration = Duration::from_secs(10);

/// One static finding, at a line of the analyzed source (1-based; 0 = unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// `Syntax`, `Style` or `Security`.
    pub component: Component,
    /// The rule code (`E501`, `B307`, `SyntaxError`, ...).
    pub rule: String,
    /// The line of the analyzed source.
    pub line: usize,
}

/// What the analyzer found in one source.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Analysis {
    /// The syntax error, when the source does not compile.
    pub syntax_error: Option<Finding>,
    /// Style and security findings (none when the source does not compile).
    pub findings: Vec<Finding>,
    /// The analyzer's wall time, seconds.
    pub wall_s: f64,
}

/// Analyzes `source` in `sandbox`.
///
/// # Errors
/// A reason, when the analyzer could not start, timed out or wrote something that is not its
/// report (the verifier's failure, not the program's).
pub fn analyze(sandbox: &Sandbox, source: &str, max_line: usize) -> Result<Analysis, String> {
    let job = serde_json::json!({ "source": source, "max_line": max_line }).to_string();
    let out = sandbox
        .run(ANALYZER, job.as_bytes(), ANALYZE_TIMEOUT)
        .map_err(|e| format!("analyzer did not start: {e}"))?;
    if out.timed_out {
        return Err("analyzer timed out".into());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut analysis = parse(&stdout).map_err(|e| {
        let err = String::from_utf8_lossy(&out.stderr);
        format!(
            "analyzer report: {e}; stderr: {}",
            crate::code::stderr_tail(&err)
        )
    })?;
    analysis.wall_s = out.wall.as_secs_f64();
    Ok(analysis)
}

/// Parses the analyzer's one-line JSON report strictly.
fn parse(stdout: &str) -> Result<Analysis, String> {
    let v: Value = serde_json::from_str(stdout.trim()).map_err(|e| e.to_string())?;
    let line_of = |v: &Value| {
        v.as_u64()
            .map(|n| n as usize)
            .ok_or("a line is not a number")
    };
    let mut analysis = Analysis::default();
    match v.get("syntax") {
        Some(Value::Null) => {}
        Some(s) => {
            analysis.syntax_error = Some(Finding {
                component: Component::Syntax,
                rule: s["error"].as_str().ok_or("syntax.error")?.to_string(),
                line: line_of(&s["line"])?,
            });
        }
        None => return Err("no `syntax` key".into()),
    }
    for f in v["findings"].as_array().ok_or("no `findings` list")? {
        let component = match f[0].as_str() {
            Some("style") => Component::Style,
            Some("security") => Component::Security,
            _ => return Err(format!("bad finding {f}")),
        };
        analysis.findings.push(Finding {
            component,
            rule: f[1].as_str().ok_or("a rule is not a string")?.to_string(),
            line: line_of(&f[2])?,
        });
    }
    Ok(analysis)
}
