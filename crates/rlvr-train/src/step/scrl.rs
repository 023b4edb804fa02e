//! SCRL's inputs for the `[stages]` pipeline (rlvr-objectives `shaping::scrl`): for each sample,
//! its prompt's subproblems ([`crate::data::subproblems`]), where the response answers each
//! one (`answers = "tagged"` or `"separated"`) and whether the intermediate answers are right
//! (the math verifier's verdict against each subproblem's answer, a numeral for a numeral
//! gold; the original problem's verdict is the run's reward). Its \[PROPOSED] curriculum credits a prompt that the policy
//! has mastered on the original problem alone, and remembers each prompt across steps in the
//! trainer state (saved with the checkpoint).

use rlvr_objectives::shaping::{ScrlConfig, SubproblemAnswers, locate_answers};
use rlvr_verifiers::{MathConfig, MathVerifier, Outcome};

use crate::batch::Sample;
use crate::data::subproblems::subproblems_of;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::trainer::Trainer;

/// Each sample's subproblem verdicts and answer spans (`None` without `[stages.scrl]`), after
/// which the curriculum records this visit of every prompt. Logs `scrl/dropped_prompts` (the
/// prompts credited on the original problem alone) and `scrl/answered_frac` (the share of
/// subproblems a response answered at all).
///
/// # Errors
/// An example whose subproblems cannot be read (a data error the load-time check also names).
pub fn answers(
    tr: &mut Trainer,
    samples: &[Sample],
    m: &mut Metrics,
) -> Result<Option<Vec<SubproblemAnswers>>> {
    let Some(cfg) = tr.config.stages.scrl.clone() else {
        return Ok(None);
    };
    let g = tr.config.rollout.group_size;
    let verifier = MathConfig::default().init()?;
    let mut out = Vec::with_capacity(samples.len());
    let (mut asked, mut answered) = (0usize, 0usize);
    for group in samples.chunks(g) {
        let example = &tr.train_set[group[0].example];
        let mut chain = subproblems_of(&cfg, example)
            .map_err(|e| Error::Config(format!("example `{}`: {e}", example.id)))?;
        if !tr.state.scrl.uses_subproblems(group[0].example) {
            chain.drain(..chain.len() - 1);
        }
        for s in group {
            let spans = locate_answers(&s.text, chain.len(), &cfg);
            let chars: Vec<char> = s.text.chars().collect();
            let intermediate = chain[..chain.len() - 1]
                .iter()
                .zip(&spans)
                .map(|(sub, span)| {
                    span.is_some_and(|(a, b)| {
                        let text: String = chars[a..b].iter().collect();
                        answers_subproblem(&verifier, &text, &sub.answer)
                    })
                })
                .collect();
            asked += spans.len();
            answered += spans.iter().filter(|s| s.is_some()).count();
            out.push(SubproblemAnswers {
                intermediate,
                spans,
            });
        }
    }
    observe(&mut tr.state.scrl, samples, g, &cfg);
    m.insert(
        "scrl/dropped_prompts".into(),
        tr.state.scrl.dropped() as f64,
    );
    m.insert(
        "scrl/answered_frac".into(),
        answered as f64 / asked.max(1) as f64,
    );
    Ok(Some(out))
}

/// Whether `text` answers a subproblem whose gold answer is `gold`: the math verifier's verdict,
/// whose final-form rule (a numeral gold needs a numeral, `rlvr_verifiers::math::final_form`)
/// keeps a restated subproblem (`37+45` for 82, copied from the prompt `37+45-20=`) from being
/// scored as solving it.
fn answers_subproblem(verifier: &MathVerifier, text: &str, gold: &str) -> bool {
    verifier.check(text, gold).0 == Outcome::Correct
}

/// Records each group's pass rate on the original problem with the curriculum.
fn observe(
    curriculum: &mut rlvr_objectives::shaping::ScrlCurriculum,
    samples: &[Sample],
    g: usize,
    cfg: &ScrlConfig,
) {
    for group in samples.chunks(g) {
        let rate = group.iter().filter(|s| s.passed).count() as f64 / group.len() as f64;
        curriculum.observe(group[0].example, rate, cfg);
    }
}
