//! The search environment: questions answered from a local corpus through a `search` tool, the
//! retrieval setting of SMEPO's and K2V's agentic tasks on the CPU.
//!
//! Each policy turn either calls the tool (`<tool_call>{"name": "search", "arguments":
//! {"query": "kab"}}</tool_call>`) and reads back the best `env.top_k` documents by BM25
//! ([`crate::env::bm25`]) as `<tool_response>doc. doc.</tool_response>` (`no results` when none
//! matches), or answers, which ends the episode for the verifier. The corpus is
//! `env.corpus`, JSON lines `{"id", "text"}`, indexed once per process and path. A bad call is
//! answered with `<tool_response>error: ...</tool_response>` like the calculator's. Datasets:
//! `cargo xtask gen-agent-search` (`datasets/agent-search`: a generated town directory whose
//! documents mention their neighbours, so with `env.top_k` above 1 a query also retrieves
//! documents about other towns, and the answer has to be read from the right one; the bundled
//! config returns one).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::json;

use crate::data::Example;
use crate::data::jsonl::records;
use crate::env::bm25::Bm25Index;
use crate::env::calculator::response;
use crate::env::tool_call::{CallCheck, CallError, Tool, parse_calls};
use crate::env::{Environment, Turn};
use crate::error::{Error, Result};

/// The tool's name.
pub const TOOL: &str = "search";
/// The longest query the schema admits.
pub const MAX_QUERY: usize = 64;
/// What the tool returns when no document matches.
pub const NO_RESULTS: &str = "no results";

static TOOLS: LazyLock<[Tool; 1]> = LazyLock::new(|| {
    [Tool::new(
        TOOL,
        "Searches the local corpus and returns the best-matching documents.",
        json!({
            "type": "object",
            "properties": {"query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY}},
            "required": ["query"],
            "additionalProperties": false
        }),
    )]
});

/// Indexes already built, by corpus path (every episode of a run shares one).
static INDEXES: LazyLock<Mutex<HashMap<PathBuf, Arc<Bm25Index>>>> = LazyLock::new(Mutex::default);

/// The BM25 index of the corpus at `path` (JSON lines with a string `text`), built on first use.
///
/// # Errors
/// [`Error::Io`] for an unreadable file, [`Error::BadLine`] naming a line that is not JSON or
/// has no string `text`, [`Error::Config`] for a corpus without documents.
pub fn corpus_index(path: &Path) -> Result<Arc<Bm25Index>> {
    let mut cache = INDEXES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(index) = cache.get(path) {
        return Ok(Arc::clone(index));
    }
    let docs = records(path)?
        .into_iter()
        .map(|(line, v)| match v.get("text").and_then(|t| t.as_str()) {
            Some(t) => Ok(t.to_string()),
            None => Err(Error::BadLine {
                path: path.to_path_buf(),
                line,
                message: "a corpus document needs a string `text`".into(),
            }),
        })
        .collect::<Result<Vec<_>>>()?;
    if docs.is_empty() {
        return Err(Error::Config(format!(
            "env.corpus: {} holds no documents",
            path.display()
        )));
    }
    let index = Arc::new(Bm25Index::new(docs));
    cache.insert(path.to_path_buf(), Arc::clone(&index));
    Ok(index)
}

/// The search environment over one corpus (stateless between turns).
#[derive(Debug, Clone)]
pub struct Search {
    index: Arc<Bm25Index>,
    top_k: usize,
}

impl Search {
    /// The environment returning the best `top_k` documents of `index` per call.
    pub fn new(index: Arc<Bm25Index>, top_k: usize) -> Self {
        Self { index, top_k }
    }

    /// The tool's output for `query`: the best documents' text joined by spaces, or
    /// [`NO_RESULTS`].
    pub fn results(&self, query: &str) -> String {
        let hits = self.index.top(query, self.top_k);
        if hits.is_empty() {
            return NO_RESULTS.into();
        }
        let texts: Vec<&str> = hits.iter().map(|&d| self.index.doc(d)).collect();
        texts.join(" ")
    }
}

impl Environment for Search {
    fn tools(&self) -> &[Tool] {
        TOOLS.as_slice()
    }

    fn reset(&mut self, _example: &Example) -> Result<()> {
        Ok(())
    }

    fn step(&mut self, action: &str) -> Turn {
        let calls = parse_calls(action, self.tools());
        if calls.is_empty() {
            return Turn::finish();
        }
        let mut checks = Vec::with_capacity(calls.len());
        let mut observation = String::new();
        for call in &calls {
            let result = call
                .as_ref()
                .map_err(CallError::to_string)
                .map(|c| self.results(c.arguments["query"].as_str().unwrap_or_default()));
            checks.push(CallCheck::of(call).ran(result.is_ok()));
            observation.push_str(&response(&result.unwrap_or_else(|e| e)));
        }
        Turn {
            calls: checks,
            ..Turn::observe(observation)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Reply;
    use crate::env::tool_call::render_call;

    fn env() -> Search {
        let docs = [
            "kab: 412 people, near mun.",
            "mun: 377 people, near kab.",
            "zot: 150 people, near mun.",
        ];
        Search::new(
            Arc::new(Bm25Index::new(docs.iter().map(|d| d.to_string()).collect())),
            2,
        )
    }

    #[test]
    fn a_query_returns_the_best_documents_and_an_answer_ends() {
        let mut env = env();
        // "mun" is in all three (equal length and tf): corpus order, the best two.
        let t = env.step(&render_call(TOOL, &json!({"query": "mun"})));
        assert_eq!(
            t.reply,
            Reply::Observation(response(
                "kab: 412 people, near mun. mun: 377 people, near kab."
            ))
        );
        assert!(t.calls[0].executed);
        let t = env.step(&render_call(TOOL, &json!({"query": "zot"})));
        assert_eq!(
            t.reply,
            Reply::Observation(response("zot: 150 people, near mun."))
        );
        let t = env.step(&render_call(TOOL, &json!({"query": "qqq"})));
        assert_eq!(t.reply, Reply::Observation(response(NO_RESULTS)));
        assert!(t.calls[0].executed, "no results is not an error");
        let t = env.step(&render_call(TOOL, &json!({"query": ""})));
        assert!(!t.calls[0].valid, "an empty query breaks the schema");
        assert_eq!(env.step("377").reply, Reply::Final);
    }

    #[test]
    fn a_corpus_line_without_text_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "{\"text\":\"a b\"}\n{\"body\":\"c\"}\n").unwrap();
        let err = corpus_index(&path).unwrap_err().to_string();
        assert!(err.contains("c.jsonl:2") && err.contains("text"), "{err}");
        let empty = dir.path().join("e.jsonl");
        std::fs::write(&empty, "\n").unwrap();
        assert!(
            corpus_index(&empty)
                .unwrap_err()
                .to_string()
                .contains("no documents")
        );
    }
}
