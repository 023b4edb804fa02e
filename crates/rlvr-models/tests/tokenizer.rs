//! Tokenizer: ids and chat-template rendering match `transformers` (fixture made by
//! `scripts/make_parity_fixtures.py`), encode/decode round trip, save/load round trip.

use std::path::{Path, PathBuf};

use rlvr_models::{ChatMessage, Error, Tokenizer};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer")
}

#[derive(serde::Deserialize)]
struct Encoded {
    text: String,
    ids: Vec<u32>,
}

#[derive(serde::Deserialize)]
struct Expected {
    messages: Vec<ChatMessage>,
    rendered_with_generation_prompt: String,
    rendered_first_two_no_prompt: String,
    encode: Vec<Encoded>,
    eos_token_id: u32,
    pad_token_id: u32,
}

fn expected() -> Expected {
    serde_json::from_str(&std::fs::read_to_string(dir().join("expected.json")).unwrap()).unwrap()
}

#[test]
fn chat_template_renders_like_transformers() {
    let tok = Tokenizer::from_dir(&dir()).unwrap();
    let e = expected();
    assert_eq!(
        tok.apply_chat_template(&e.messages, true).unwrap(),
        e.rendered_with_generation_prompt
    );
    assert_eq!(
        tok.apply_chat_template(&e.messages[..2], false).unwrap(),
        e.rendered_first_two_no_prompt
    );
}

#[test]
fn ids_match_transformers_and_round_trip() {
    let tok = Tokenizer::from_dir(&dir()).unwrap();
    for case in expected().encode {
        let ids = tok.encode(&case.text).unwrap();
        assert_eq!(ids, case.ids, "{:?}", case.text);
        assert_eq!(tok.decode(&ids).unwrap(), case.text);
    }
}

#[test]
fn special_tokens_come_from_tokenizer_config() {
    let tok = Tokenizer::from_dir(&dir()).unwrap();
    let e = expected();
    assert_eq!(tok.eos_token_ids(), vec![e.eos_token_id]);
    assert_eq!(tok.pad_token_id(), Some(e.pad_token_id));
    let ids = tok.encode("<|im_start|>user\nhi<|im_end|>").unwrap();
    assert_eq!(*ids.last().unwrap(), e.eos_token_id);
    assert_eq!(tok.decode_skip_special(&ids).unwrap(), "user\nhi");
}

#[test]
fn save_and_reload_keeps_template_and_ids() {
    let tok = Tokenizer::from_dir(&dir()).unwrap();
    let out = tempfile::tempdir().unwrap();
    tok.save_to_dir(out.path()).unwrap();
    let again = Tokenizer::from_dir(out.path()).unwrap();
    let e = expected();
    assert_eq!(
        again.apply_chat_template(&e.messages, true).unwrap(),
        e.rendered_with_generation_prompt
    );
    assert_eq!(again.encode(&e.encode[1].text).unwrap(), e.encode[1].ids);
    assert_eq!(again.eos_token_ids(), tok.eos_token_ids());
}

#[test]
fn python_methods_and_raise_exception_work_in_templates() {
    let inner = Tokenizer::from_dir(&dir()).unwrap().inner().clone();
    let template = "{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}{{ raise_exception('bad role ' + m.role) }}{% endif %}\
        [{{ m.content.lstrip().rstrip('!').split(' ', 1)[0].upper() }}|{{ m.content.startswith('  hi') }}|{{ {'a': 1}.get('b', 'd') }}]{% endfor %}";
    let tok = Tokenizer::from_tokenizer(inner, Some(template.into()));
    let out = tok
        .apply_chat_template(&[ChatMessage::new("user", "  hi there!!")], false)
        .unwrap();
    assert_eq!(out, "[HI|True|d]"); // jinja2 prints Python booleans
    let err = tok
        .apply_chat_template(&[ChatMessage::new("tool", "x")], false)
        .unwrap_err();
    assert!(
        matches!(&err, Error::ChatTemplate { message } if message.contains("bad role tool")),
        "{err}"
    );
}

#[test]
fn tojson_formats_like_python_json_dumps() {
    // Python: json.dumps({"a": [1, 2], "b": "é"}, ensure_ascii=False) and with indent=2.
    let inner = Tokenizer::from_dir(&dir()).unwrap().inner().clone();
    let template = "{{ {'a': [1, 2], 'b': 'é'} | tojson }}|{{ {'a': [1, 2]} | tojson(indent=2) }}";
    let tok = Tokenizer::from_tokenizer(inner, Some(template.into()));
    let out = tok.apply_chat_template(&[], false).unwrap();
    assert_eq!(
        out,
        "{\"a\": [1, 2], \"b\": \"é\"}|{\n  \"a\": [\n    1,\n    2\n  ]\n}"
    );
}

#[test]
fn missing_template_and_missing_file_are_errors() {
    let inner = Tokenizer::from_dir(&dir()).unwrap().inner().clone();
    let tok = Tokenizer::from_tokenizer(inner, None);
    assert!(matches!(
        tok.apply_chat_template(&[ChatMessage::new("user", "x")], true),
        Err(Error::ChatTemplate { .. })
    ));
    let empty = tempfile::tempdir().unwrap();
    let err = Tokenizer::from_dir(empty.path()).unwrap_err();
    assert!(err.to_string().contains("tokenizer.json"), "{err}");
}

/// Tools reach the template as `tools` (the `transformers` `apply_chat_template(tools=...)`
/// variable); without tools it is undefined, so `{% if tools %}` is false.
#[test]
fn tools_reach_the_template_as_tools() {
    let inner = Tokenizer::from_dir(&dir()).unwrap().inner().clone();
    let template = "{% if tools %}{% for t in tools %}<{{ t.function.name }}:\
        {{ t.function.parameters.required | join(',') }}>{% endfor %}{% else %}none{% endif %}\
        {% for m in messages %}|{{ m.content }}{% endfor %}";
    let tok = Tokenizer::from_tokenizer(inner, Some(template.into()));
    let tools = [serde_json::json!({"type": "function", "function": {
        "name": "calculator", "description": "d",
        "parameters": {"type": "object", "required": ["expression"]}}})];
    let messages = [ChatMessage::new("user", "2*3=")];
    assert_eq!(
        tok.apply_chat_template_with_tools(&messages, &tools, false)
            .unwrap(),
        "<calculator:expression>|2*3="
    );
    assert_eq!(
        tok.apply_chat_template(&messages, false).unwrap(),
        "none|2*3="
    );
}
