//! `data.prompt_template`: the text prompt written from a record's fields with a Jinja
//! template (minijinja), e.g. MBPP's task text followed by its first test, so the prompt names
//! the function the tests call: `"{{ text }}\nYour code should pass this test:\n{{ test_list[0] }}"`.
//!
//! Every field of the record is a template variable (nested objects and lists as they are); a
//! variable the record lacks is an error naming the record, not an empty string.

use minijinja::{Environment, UndefinedBehavior};
use serde_json::Value;

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env
}

/// Checks that `template` parses, before any record is read.
///
/// # Errors
/// minijinja's message (with the line) for a template that does not parse.
pub fn check_template(template: &str) -> Result<(), String> {
    environment()
        .template_from_str(template)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The prompt `template` writes from `record`.
///
/// # Errors
/// A message naming `data.prompt_template` when rendering fails (a field the record lacks, a
/// filter applied to the wrong type, ...) or the result is blank.
pub fn render_prompt_template(template: &str, record: &Value) -> Result<String, String> {
    let text = environment()
        .render_str(template, record)
        .map_err(|e| format!("data.prompt_template: {e}"))?;
    if text.trim().is_empty() {
        return Err("data.prompt_template writes an empty prompt for this record".into());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::{check_template, render_prompt_template};
    use serde_json::json;

    #[test]
    fn renders_fields_and_refuses_missing_ones() {
        let record = json!({"text": "Add two numbers.", "test_list": ["assert add(1, 2) == 3", "x"],
                            "meta": {"level": 2}});
        let t =
            "{{ text }}\nYour code should pass this test:\n{{ test_list[0] }} ({{ meta.level }})";
        assert_eq!(
            render_prompt_template(t, &record).unwrap(),
            "Add two numbers.\nYour code should pass this test:\nassert add(1, 2) == 3 (2)"
        );
        let missing = render_prompt_template("{{ question }}", &record).unwrap_err();
        assert!(missing.contains("data.prompt_template"), "{missing}");
        assert!(render_prompt_template("{{ '' }}", &record).is_err());
        assert!(check_template("{{ text ").is_err());
        assert!(check_template(t).is_ok());
    }
}
