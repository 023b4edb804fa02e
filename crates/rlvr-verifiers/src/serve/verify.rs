//! `POST /verify`: `{"kind", "items": [rlvr-verify input lines]}` → `{"results": [output lines]}`
//! in item order, scored with the CLI's per-item limits.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Reply, State, error};
use crate::{Reference, verify_batch};

/// Scores the items; an item that is not a valid input line becomes `{"id", "index", "error"}`
/// in its place (like the CLI's malformed lines) and the rest still scores.
pub(crate) fn handle(state: &State, body: &Value) -> Reply {
    let kind = match body.get("kind") {
        None => return error(400, "missing field `kind`"),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return error(400, "field `kind` must be a string"),
    };
    let Some((kind, served)) = state.kinds.get(kind) else {
        let valid: Vec<_> = state.kinds.keys().copied().collect();
        return error(
            400,
            format!(
                "field `kind`: unknown kind `{kind}` (served: {})",
                valid.join(", ")
            ),
        );
    };
    let items = match body.get("items") {
        None => return error(400, "missing field `items`"),
        Some(Value::Array(a)) => a,
        Some(_) => return error(400, "field `items` must be an array"),
    };
    let mut rows: Vec<Result<Value, Value>> = Vec::with_capacity(items.len());
    let mut batch: Vec<(String, Reference)> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let id = item.get("id").cloned().unwrap_or(Value::Null);
        let bad = |reason: String| json!({ "id": id, "index": index, "error": reason });
        if !item.is_object() {
            rows.push(Err(bad("not a JSON object".into())));
            continue;
        }
        let response = match item.get("response") {
            Some(Value::String(s)) => s.clone(),
            Some(_) => {
                rows.push(Err(bad("field `response` must be a string".into())));
                continue;
            }
            None => {
                rows.push(Err(bad("missing field `response`".into())));
                continue;
            }
        };
        match Reference::from_record(*kind, item) {
            Ok(reference) => {
                rows.push(Ok(id.clone()));
                batch.push((response, reference));
            }
            Err(reason) => rows.push(Err(bad(reason))),
        }
    }
    let verdicts = verify_batch(Arc::clone(&served.verifier), &batch, served.item_limit);
    let mut verdicts = verdicts.into_iter();
    let mut results = Vec::with_capacity(rows.len());
    for row in rows {
        results.push(match row {
            Ok(id) => match verdicts.next() {
                Some(v) => json!({
                    "id": id, "reward": v.reward, "passed": v.passed, "outcome": v.outcome,
                    "extracted": v.extracted, "details": v.details,
                }),
                None => return error(500, "verdict count mismatch"),
            },
            Err(record) => record,
        });
    }
    (200, json!({ "results": results }))
}
