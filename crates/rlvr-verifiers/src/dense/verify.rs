//! The dense code reward's verdict: analysis first, then (when the program compiles) the
//! sandboxed test run, then components, R and the localized penalties.

use std::collections::BTreeSet;

use serde_json::json;

use super::analyzer::{Finding, analyze};
use super::reward::{Components, Counts, finding_penalty};
use super::spans::{line_span, program_line};
use super::{Component, DenseConfig};
use crate::code::{CodeVerifier, nonce};
use crate::sandbox::Sandbox;
use crate::{CodeReference, Outcome, PartVerdict, PenaltySpan, Verdict};

/// Scores `response` (whose program `body` starts at byte `at`) against `r` with the dense
/// code reward.
pub(crate) fn verify_dense(
    verifier: &CodeVerifier,
    sandbox: &Sandbox,
    config: &DenseConfig,
    response: &str,
    at: usize,
    body: &str,
    r: &CodeReference,
) -> Verdict {
    let n = r.num_tests();
    let program = format!("{}{}", r.prefix, body);
    let analysis = match analyze(sandbox, &program, config.max_line_length) {
        Ok(a) => a,
        Err(e) => return Verdict::zero(Outcome::Error, e),
    };
    // Findings located in the reference's prefix are the prompt's, not the policy's.
    fn own<'a>(f: &'a Finding, prefix: &str) -> Option<(&'a Finding, usize)> {
        program_line(f.line, prefix).map(|line| (f, line))
    }
    let mut located: Vec<(Component, String, usize)> = Vec::new();
    let mut counts = Counts {
        total: n,
        ..Counts::default()
    };
    let (mut outcome, mut details) = (Outcome::Crashed, json!({}));
    if let Some(err) = &analysis.syntax_error {
        if let Some((f, line)) = own(err, &r.prefix) {
            located.push((Component::Syntax, f.rule.clone(), line));
        }
        details["syntax_error"] = json!({ "rule": err.rule, "line": err.line });
    } else {
        counts.compiles = true;
        for (f, line) in analysis.findings.iter().filter_map(|f| own(f, &r.prefix)) {
            match f.component {
                Component::Style => counts.lint += 1,
                _ => counts.security += 1,
            }
            located.push((f.component, f.rule.clone(), line));
        }
        let (run, report) = verifier.run_local(sandbox, program.clone(), r, &nonce());
        if run.outcome == Outcome::Error {
            // The sandbox, not the program, failed.
            return run;
        }
        outcome = run.outcome;
        counts.passed = if report.violation.is_some() {
            0
        } else {
            run.details["passed"].as_u64().unwrap_or(0) as usize
        };
        counts.ran_to_completion = run.outcome != Outcome::Timeout
            && run.outcome != Outcome::Crashed
            && report.tracebacks.is_empty();
        let lines: BTreeSet<usize> = report
            .tracebacks
            .iter()
            .filter_map(|&(_, line)| program_line(line, &r.prefix).or(Some(0)))
            .collect();
        for line in lines {
            located.push((Component::Exec, "traceback".into(), line));
        }
        details = run.details;
    }
    let components = Components::from_counts(&counts, config);
    let reward = components.reward(config);
    let penalties: Vec<PenaltySpan> = if config.kappa > 0.0 {
        located
            .iter()
            .filter_map(|(c, rule, line)| {
                let (char_start, char_end) = line_span(response, at, body, *line)?;
                Some(PenaltySpan {
                    component: c.name().into(),
                    rule: rule.clone(),
                    line: *line,
                    char_start,
                    char_end,
                    penalty: finding_penalty(*c, config),
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    details["dense"] = json!({
        "components": Component::ALL.iter().map(|&c| (c.name().to_string(), json!(components.get(c))))
            .collect::<serde_json::Map<_, _>>(),
        "findings": located.iter().map(|(c, rule, line)| {
            json!({ "component": c.name(), "rule": rule, "line": line })
        }).collect::<Vec<_>>(),
        "lint": counts.lint,
        "security": counts.security,
        "analyze_s": analysis.wall_s,
    });
    let mut verdict = Verdict::new(reward, outcome, Some(program), details);
    verdict.parts = Component::ALL
        .iter()
        .map(|&c| PartVerdict {
            name: c.name().into(),
            reward: components.get(c),
            passed: components.get(c) >= 1.0,
            outcome: if components.get(c) >= 1.0 {
                Outcome::Correct
            } else if components.get(c) > 0.0 {
                Outcome::Partial
            } else {
                Outcome::Wrong
            },
        })
        .collect();
    verdict.penalties = penalties;
    verdict
}
