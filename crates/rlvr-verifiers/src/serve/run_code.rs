//! `POST /run_code`: SandboxFusion's request and reply ([`crate::sandbox_fusion`]'s wire types),
//! executed in the local [`crate::sandbox`] with its limits.
//!
//! Python only. `run_timeout` is capped at the server's code `timeout_s`; the sandbox's memory
//! limit applies whatever `memory_limit_MB` says; `files` are written to the run's working
//! directory before the code starts; `fetch_files` is refused (400). The code, the files and the
//! request's stdin reach the sandboxed interpreter on its stdin behind a length-prefixed header
//! read by [`BOOT`], so no size limit of the command line applies.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Reply, State, error};
use crate::sandbox_fusion::{
    CommandRunResult, CommandRunStatus, RunCodeRequest, RunCodeResponse, RunStatus,
};

/// The sandboxed bootstrap: reads `<length>\n<JSON {"code", "files"}>` from fd 0, writes the
/// files, then runs the code as `__main__` with the rest of stdin as its stdin.
const BOOT: &str = r#"
import os, builtins

def _rlvr_boot():
    import json, base64
    head = b""
    while not head.endswith(b"\n"):
        c = os.read(0, 1)
        if not c:
            raise SystemExit("run_code: truncated header")
        head += c
    size, data = int(head), b""
    while len(data) < size:
        c = os.read(0, size - len(data))
        if not c:
            raise SystemExit("run_code: truncated header")
        data += c
    job = json.loads(data)
    for path, content in job["files"].items():
        if content is None:
            continue
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(content))
    return job["code"]

_rlvr_code = compile(_rlvr_boot(), "<code>", "exec")
del _rlvr_boot
exec(_rlvr_code, {"__name__": "__main__", "__builtins__": builtins})
"#;

/// Reads the request field by field (each error names its field), runs it, and answers in
/// SandboxFusion's shape.
pub(crate) fn handle(state: &State, body: &Value) -> Reply {
    let request = match parse(body) {
        Ok(r) => r,
        Err(message) => return error(400, message),
    };
    if request.language != "python" {
        return error(
            400,
            format!(
                "field `language`: `{}` is not supported by this server (only `python`)",
                request.language
            ),
        );
    }
    if !request.fetch_files.is_empty() {
        return error(400, "field `fetch_files`: not supported by this server");
    }
    if !(request.run_timeout.is_finite() && request.run_timeout > 0.0) {
        return error(
            400,
            "field `run_timeout` must be a positive number of seconds",
        );
    }
    let timeout = Duration::from_secs_f64(request.run_timeout).min(state.max_run);
    let job = json!({ "code": request.code, "files": request.files }).to_string();
    let mut stdin = format!("{}\n{job}", job.len()).into_bytes();
    stdin.extend_from_slice(request.stdin.as_deref().unwrap_or_default().as_bytes());
    let reply = match state.sandbox.run(BOOT, &stdin, timeout) {
        Err(e) => RunCodeResponse {
            status: RunStatus::SandboxError,
            message: e.to_string(),
            compile_result: None,
            run_result: Some(CommandRunResult {
                status: CommandRunStatus::Error,
                execution_time: None,
                return_code: None,
                stdout: None,
                stderr: Some(e.to_string()),
            }),
            executor_pod_name: None,
            files: BTreeMap::new(),
        },
        Ok(out) => {
            let text = |b: &[u8]| Some(String::from_utf8_lossy(b).into_owned());
            let (status, run_status, code) = if out.timed_out {
                (RunStatus::Failed, CommandRunStatus::TimeLimitExceeded, None)
            } else {
                // Killed by a signal: negative, as Python's subprocess reports it.
                let code = out.code.or(out.signal.map(|s| -s));
                let status = if code == Some(0) {
                    RunStatus::Success
                } else {
                    RunStatus::Failed
                };
                (status, CommandRunStatus::Finished, code)
            };
            RunCodeResponse {
                status,
                message: String::new(),
                compile_result: None,
                run_result: Some(CommandRunResult {
                    status: run_status,
                    execution_time: Some(out.wall.as_secs_f64()),
                    return_code: code,
                    stdout: text(&out.stdout),
                    stderr: text(&out.stderr),
                }),
                executor_pod_name: None,
                files: BTreeMap::new(),
            }
        }
    };
    match serde_json::to_value(reply) {
        Ok(v) => (200, v),
        Err(e) => error(500, format!("encoding the reply: {e}")),
    }
}

/// The request, or a message naming the missing or mistyped field.
fn parse(body: &Value) -> Result<RunCodeRequest, String> {
    let string = |name: &str| match body.get(name) {
        None => Err(format!("missing field `{name}`")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("field `{name}` must be a string")),
    };
    let number = |name: &str, default: f64| match body.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_f64()
            .ok_or_else(|| format!("field `{name}` must be a number")),
    };
    let stdin = match body.get("stdin") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("field `stdin` must be a string or null".into()),
    };
    let files = match body.get("files") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(m)) => {
            let mut files = BTreeMap::new();
            for (path, v) in m {
                let content = match v {
                    Value::Null => None,
                    Value::String(s) => Some(s.clone()),
                    _ => return Err(format!("field `files.{path}` must be base64 text or null")),
                };
                files.insert(path.clone(), content);
            }
            files
        }
        Some(_) => return Err("field `files` must be an object of path → base64".into()),
    };
    let fetch_files = match body.get("fetch_files") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => serde_json::from_value::<Vec<String>>(v.clone())
            .map_err(|_| "field `fetch_files` must be a list of paths".to_string())?,
    };
    let memory = match body.get("memory_limit_MB") {
        None | Some(Value::Null) => -1,
        Some(v) => v
            .as_i64()
            .ok_or("field `memory_limit_MB` must be an integer")?,
    };
    Ok(RunCodeRequest {
        code: string("code")?,
        language: string("language")?,
        run_timeout: number("run_timeout", 10.0)?,
        compile_timeout: number("compile_timeout", 10.0)?,
        memory_limit_mb: memory,
        stdin,
        files,
        fetch_files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_named_in_errors() {
        let e = parse(&json!({"language": "python"})).unwrap_err();
        assert_eq!(e, "missing field `code`");
        let e = parse(&json!({"code": "x", "language": 3})).unwrap_err();
        assert_eq!(e, "field `language` must be a string");
        let e = parse(&json!({"code": "x", "language": "python", "run_timeout": "5"})).unwrap_err();
        assert_eq!(e, "field `run_timeout` must be a number");
        let e = parse(&json!({"code": "x", "language": "python", "files": {"a": 1}})).unwrap_err();
        assert!(e.contains("files.a"), "{e}");
        let r = parse(&json!({"code": "x", "language": "python", "stdin": null})).unwrap();
        assert_eq!(
            (r.run_timeout, r.memory_limit_mb, r.stdin),
            (10.0, -1, None)
        );
    }
}
