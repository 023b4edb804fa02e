//! What a task record carries for its verifier: a gold answer, tests, or a rubric.

use serde::{Deserialize, Serialize};

use crate::rubric::Criterion;

/// The verifier-facing part of a task record.
///
/// Serialized with a `kind` tag (`{"kind": "math", "answer": "42"}`); [`Reference::from_record`]
/// reads the untagged dataset forms (GSM8K/MATH `answer`, MBPP `test_list`, HumanEval `test` +
/// `entry_point`, rubric `rubric`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reference {
    /// A gold answer: a bare answer (`"1234"`, `"\\frac{1}{2}"`) or a full solution whose final
    /// answer is extracted like a response's (`\boxed{}`, `#### n`).
    Math {
        /// The gold answer or solution text.
        answer: String,
    },
    /// Tests for a Python program.
    Code(CodeReference),
    /// Weighted criteria.
    Rubric {
        /// The criteria; the score is their normalized weighted sum.
        criteria: Vec<Criterion>,
    },
    /// The whole dataset record, for `command` and `http` rewards: the user's program or
    /// service reads whatever fields it needs.
    Record {
        /// The record (a JSON object: `id`, `prompt`, the task's fields).
        record: serde_json::Value,
    },
    /// A K2V fill-in-the-blank question's gold answer and the answer's graph neighbours that
    /// the question does not show (the rule checklist's `adjacent` criterion).
    K2v {
        /// The masked entity's surface form.
        answer: String,
        /// Entities adjacent to the answer, not in the question (may be empty).
        #[serde(default)]
        adjacent: Vec<String>,
    },
    /// An ECPO ranking task: the intent and the evidence store (methods-extra §20).
    Ecpo {
        /// The intent's attributes.
        intent: Vec<String>,
        /// `(subject, attribute)` per evidence span, span `j` (1-based) at index `j - 1`; the
        /// roster is the spans' subjects.
        spans: Vec<(String, String)>,
        /// How many candidates the ranking lists at most.
        k: usize,
    },
    /// A grid-program task (GeoX's modes, methods-extra §21): a solver record's program and its
    /// input/output points, or a proposer record (`propose_*`, the other fields empty).
    GridProgram {
        /// What the record asks for.
        mode: crate::grid_program::task::GridMode,
        /// The generating program (empty for a proposer record).
        #[serde(default)]
        program: String,
        /// Input points `xy`.
        #[serde(default)]
        inputs: Vec<String>,
        /// Output points `xy`, one per input.
        #[serde(default)]
        outputs: Vec<String>,
    },
    /// One reference per part of a `composite` verifier, in config order (built by
    /// [`crate::VerifierConfig::reference`], which knows each part's kind).
    Composite {
        /// The parts' references.
        parts: Vec<Reference>,
    },
}

/// Tests for a Python program, in one of three styles (they may be combined).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CodeReference {
    /// MBPP style: Python statements (usually `assert ...`), each one test.
    #[serde(default)]
    pub tests: Vec<String>,
    /// Code run after the program and before the tests (MBPP `test_setup_code`).
    #[serde(default)]
    pub setup_code: String,
    /// HumanEval style: source defining `check(candidate)`; one test.
    #[serde(default)]
    pub check: Option<String>,
    /// HumanEval style: the function passed to `check`.
    #[serde(default)]
    pub entry_point: Option<String>,
    /// Text prepended to the response's program (HumanEval `prompt` when the response is only a
    /// function body).
    #[serde(default)]
    pub prefix: String,
    /// stdin/stdout cases: the program runs as a script once per case.
    #[serde(default)]
    pub io_cases: Vec<IoCase>,
    /// Per-item wall-clock limit in seconds, overriding the verifier's.
    #[serde(default)]
    pub timeout_s: Option<f64>,
}

/// One stdin/stdout test case. Outputs are compared after trimming trailing whitespace per line
/// and trailing empty lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoCase {
    /// Text fed to stdin.
    pub input: String,
    /// Expected stdout.
    pub output: String,
}

impl CodeReference {
    /// Number of tests this reference defines.
    pub fn num_tests(&self) -> usize {
        self.tests.len() + usize::from(self.check.is_some()) + self.io_cases.len()
    }
}

/// Which verifier a record is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// [`crate::math::MathVerifier`].
    Math,
    /// [`crate::code::CodeVerifier`].
    Code,
    /// [`crate::rubric::RubricVerifier`].
    Rubric,
    /// [`crate::external::CommandVerifier`]: a user program over stdin/stdout.
    Command,
    /// [`crate::external::HttpVerifier`]: a remote reward service.
    Http,
    /// [`crate::composite::CompositeVerifier`]: a weighted sum of other verifiers.
    Composite,
    /// [`crate::k2v::K2vVerifier`]: the K2V reward.
    K2v,
    /// [`crate::ecpo::EcpoVerifier`]: the ECPO ranking reward.
    Ecpo,
    /// [`crate::grid_program::GridProgramVerifier`]: grid-program tasks checked by execution.
    GridProgram,
}

impl Kind {
    /// The kind's name as written in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Math => "math",
            Kind::Code => "code",
            Kind::Rubric => "rubric",
            Kind::Command => "command",
            Kind::Http => "http",
            Kind::Composite => "composite",
            Kind::K2v => "k2v",
            Kind::Ecpo => "ecpo",
            Kind::GridProgram => "grid_program",
        }
    }
}

impl Reference {
    /// Reads the reference of a dataset/CLI record of the given kind.
    ///
    /// Accepted fields: math `answer`; k2v `answer` and `adjacent` (a list of strings); ecpo `intent` (a list of strings), `spans` (a list of `[subject, attribute]` pairs) and `k`; grid_program `mode`, `program`, `inputs`, `outputs`; code `tests` (or MBPP `test_list`), `setup_code` (or
    /// `test_setup_code`), `test` + `entry_point` (HumanEval), `prompt` (prefix, only with
    /// `prefix_prompt`), `io_cases`, `timeout_s`; rubric `rubric` (or `criteria`); command and
    /// http the whole record (a JSON object). A composite reference needs its parts' kinds:
    /// build it with [`crate::VerifierConfig::reference`].
    ///
    /// # Errors
    /// A message naming the missing or mistyped field.
    pub fn from_record(kind: Kind, record: &serde_json::Value) -> Result<Reference, String> {
        let field = |name: &str| record.get(name).filter(|v| !v.is_null());
        let string = |name: &str| -> Result<Option<String>, String> {
            match field(name) {
                None => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
                // GSM8K-style integer answers written as JSON numbers are accepted.
                Some(v @ serde_json::Value::Number(_)) => Ok(Some(v.to_string())),
                Some(_) => Err(format!("field `{name}` must be a string")),
            }
        };
        match kind {
            Kind::Math => {
                let answer = string("answer")?.ok_or("missing field `answer`")?;
                Ok(Reference::Math { answer })
            }
            Kind::Code => {
                let tests = match field("tests").or_else(|| field("test_list")) {
                    None => Vec::new(),
                    Some(v) => serde_json::from_value::<Vec<String>>(v.clone())
                        .map_err(|e| format!("field `tests` must be a list of strings: {e}"))?,
                };
                let io_cases = match field("io_cases") {
                    None => Vec::new(),
                    Some(v) => serde_json::from_value::<Vec<IoCase>>(v.clone()).map_err(|e| {
                        format!("field `io_cases` must be [{{input, output}}]: {e}")
                    })?,
                };
                let timeout_s = match field("timeout_s") {
                    None => None,
                    Some(v) => Some(v.as_f64().ok_or("field `timeout_s` must be a number")?),
                };
                let reference = CodeReference {
                    tests,
                    setup_code: string("setup_code")?
                        .or(string("test_setup_code")?)
                        .unwrap_or_default(),
                    check: string("test")?,
                    entry_point: string("entry_point")?,
                    prefix: string("prefix")?.unwrap_or_default(),
                    io_cases,
                    timeout_s,
                };
                if reference.check.is_some() && reference.entry_point.is_none() {
                    return Err("field `test` (HumanEval form) needs `entry_point`".into());
                }
                if reference.num_tests() == 0 {
                    return Err(
                        "no tests: give `tests`, `test` + `entry_point`, or `io_cases`".into(),
                    );
                }
                Ok(Reference::Code(reference))
            }
            Kind::Rubric => {
                let v = field("rubric")
                    .or_else(|| field("criteria"))
                    .ok_or("missing field `rubric`")?;
                let criteria = serde_json::from_value::<Vec<Criterion>>(v.clone())
                    .map_err(|e| format!("field `rubric`: {e}"))?;
                Ok(Reference::Rubric { criteria })
            }
            Kind::K2v => {
                let answer = string("answer")?.ok_or("missing field `answer`")?;
                let adjacent = match field("adjacent") {
                    None => Vec::new(),
                    Some(v) => serde_json::from_value::<Vec<String>>(v.clone())
                        .map_err(|e| format!("field `adjacent` must be a list of strings: {e}"))?,
                };
                Ok(Reference::K2v { answer, adjacent })
            }
            Kind::Ecpo => {
                let intent = field("intent")
                    .ok_or("missing field `intent`")
                    .and_then(|v| {
                        serde_json::from_value::<Vec<String>>(v.clone())
                            .map_err(|_| "field `intent` must be a list of strings")
                    })?;
                let spans = field("spans")
                    .ok_or("missing field `spans`")
                    .and_then(|v| {
                        serde_json::from_value::<Vec<(String, String)>>(v.clone()).map_err(
                            |_| "field `spans` must be a list of [subject, attribute] pairs",
                        )
                    })?;
                let k = field("k")
                    .ok_or("missing field `k`")?
                    .as_u64()
                    .and_then(|k| usize::try_from(k).ok())
                    .ok_or("field `k` must be a non-negative integer")?;
                Ok(Reference::Ecpo { intent, spans, k })
            }
            Kind::GridProgram => {
                let mode = field("mode").ok_or("missing field `mode`")?;
                let mode = serde_json::from_value(mode.clone()).map_err(|_| {
                    format!(
                        "field `mode` must be one of deduction, abduction, induction, \
                         propose_deduction, propose_abduction, propose_induction (got {mode})"
                    )
                })?;
                let list = |name: &str| -> Result<Vec<String>, String> {
                    field(name).map_or(Ok(Vec::new()), |v| {
                        serde_json::from_value(v.clone())
                            .map_err(|_| format!("field `{name}` must be a list of strings"))
                    })
                };
                Ok(Reference::GridProgram {
                    mode,
                    program: string("program")?.unwrap_or_default(),
                    inputs: list("inputs")?,
                    outputs: list("outputs")?,
                })
            }
            Kind::Command | Kind::Http => {
                if !record.is_object() {
                    return Err("the record must be a JSON object".into());
                }
                Ok(Reference::Record {
                    record: record.clone(),
                })
            }
            Kind::Composite => Err(
                "a composite reference is built per part from the verifier config \
                 (VerifierConfig::reference)"
                    .into(),
            ),
        }
    }
}
