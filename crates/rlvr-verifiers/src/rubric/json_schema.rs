//! A JSON-Schema subset validator for `json_schema` rubric criteria.

use serde_json::Value;

/// Validates `value` against `schema`; `Err` names the first violation with its JSON path.
///
/// Supported keywords: `type` (string or list), `properties`, `required`,
/// `additionalProperties` (boolean), `items` (one schema), `enum`, `const`, `minimum`, `maximum`,
/// `minLength`, `maxLength`, `minItems`, `maxItems`. Unknown keywords are ignored, as JSON
/// Schema prescribes.
pub fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    check(value, schema, "$", 0)
}

/// Deepest schema nesting followed.
const MAX_DEPTH: usize = 64;

fn check(v: &Value, s: &Value, path: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{path}: schema nested too deeply"));
    }
    let Some(s) = s.as_object() else {
        return match s {
            Value::Bool(false) => Err(format!("{path}: not allowed")),
            _ => Ok(()),
        };
    };
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(x) => vec![x.as_str()],
            Value::Array(xs) => xs.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !types.iter().any(|t| has_type(v, t)) {
            return Err(format!("{path}: expected type {}", types.join("|")));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        return Err(format!(
            "{path}: {v} is not one of {}",
            Value::Array(e.clone())
        ));
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        return Err(format!("{path}: {v} != {c}"));
    }
    if let Some(x) = v.as_f64() {
        if let Some(m) = s.get("minimum").and_then(Value::as_f64)
            && x < m
        {
            return Err(format!("{path}: {x} < minimum {m}"));
        }
        if let Some(m) = s.get("maximum").and_then(Value::as_f64)
            && x > m
        {
            return Err(format!("{path}: {x} > maximum {m}"));
        }
    }
    if let Some(text) = v.as_str() {
        let n = text.chars().count() as u64;
        if s.get("minLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| n < m)
        {
            return Err(format!("{path}: shorter than minLength"));
        }
        if s.get("maxLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| n > m)
        {
            return Err(format!("{path}: longer than maxLength"));
        }
    }
    if let Some(items) = v.as_array() {
        let n = items.len() as u64;
        if s.get("minItems")
            .and_then(Value::as_u64)
            .is_some_and(|m| n < m)
        {
            return Err(format!("{path}: fewer than minItems"));
        }
        if s.get("maxItems")
            .and_then(Value::as_u64)
            .is_some_and(|m| n > m)
        {
            return Err(format!("{path}: more than maxItems"));
        }
        if let Some(item_schema) = s.get("items") {
            for (k, item) in items.iter().enumerate() {
                check(item, item_schema, &format!("{path}[{k}]"), depth + 1)?;
            }
        }
    }
    if let Some(obj) = v.as_object() {
        if let Some(req) = s.get("required").and_then(Value::as_array) {
            for name in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(name) {
                    return Err(format!("{path}: missing required property `{name}`"));
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (name, val) in obj {
            match props.and_then(|p| p.get(name)) {
                Some(ps) => check(val, ps, &format!("{path}.{name}"), depth + 1)?,
                None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{path}: unexpected property `{name}`"));
                }
                None => {}
            }
        }
    }
    Ok(())
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|x| x.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_table() {
        let schema = json!({
            "type": "object",
            "required": ["name", "age"],
            "additionalProperties": false,
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "age": {"type": "integer", "minimum": 0},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}
            }
        });
        let cases = [
            (json!({"name": "x", "age": 3}), true),
            (json!({"name": "x", "age": 3, "tags": ["a", "b"]}), true),
            (json!({"name": "x"}), false),
            (json!({"name": "", "age": 3}), false),
            (json!({"name": "x", "age": -1}), false),
            (json!({"name": "x", "age": 2.5}), false),
            (json!({"name": "x", "age": 3, "extra": 1}), false),
            (json!({"name": "x", "age": 3, "tags": ["c"]}), false),
            (
                json!({"name": "x", "age": 3, "tags": ["a", "a", "a"]}),
                false,
            ),
            (json!([1]), false),
        ];
        for (v, ok) in cases {
            assert_eq!(validate(&v, &schema).is_ok(), ok, "{v}");
        }
    }
}
