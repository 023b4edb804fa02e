//! SandboxFusion's `POST /run_code` wire format (`sandbox/server/sandbox_api.py` and
//! `sandbox/runners/types.py` of bytedance/SandboxFusion), shared by the client
//! ([`super::SandboxFusionClient`]) and the server's endpoint.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A `POST /run_code` request. Field names and defaults as in SandboxFusion's `RunCodeRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCodeRequest {
    /// The program's source.
    pub code: String,
    /// The language (`python`; SandboxFusion knows more).
    pub language: String,
    /// Wall-clock limit of the run, seconds (default 10).
    #[serde(default = "ten")]
    pub run_timeout: f64,
    /// Limit of the compile step of compiled languages, seconds (default 10; unused for Python).
    #[serde(default = "ten")]
    pub compile_timeout: f64,
    /// Memory limit in MiB; -1 (the default) leaves the server's.
    #[serde(default = "minus_one", rename = "memory_limit_MB")]
    pub memory_limit_mb: i64,
    /// Text fed to the program's stdin.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Files to create in the working directory first: path → base64 content.
    #[serde(default)]
    pub files: BTreeMap<String, Option<String>>,
    /// Files to return after the run (paths relative to the working directory).
    #[serde(default)]
    pub fetch_files: Vec<String>,
}

fn ten() -> f64 {
    10.0
}

fn minus_one() -> i64 {
    -1
}

/// The overall status of a run (SandboxFusion's `RunStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunStatus {
    /// Every step finished with return code 0.
    Success,
    /// A step timed out or returned non-zero.
    Failed,
    /// The sandbox itself failed (`message` says why).
    SandboxError,
}

/// How one command ended (SandboxFusion's `CommandRunStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommandRunStatus {
    /// The process exited (see `return_code`).
    Finished,
    /// The process could not be run.
    Error,
    /// The process was killed at its time limit.
    TimeLimitExceeded,
}

/// One command's result (SandboxFusion's `CommandRunResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRunResult {
    /// How it ended.
    pub status: CommandRunStatus,
    /// Wall-clock seconds.
    #[serde(default)]
    pub execution_time: Option<f64>,
    /// Exit code (`None` when killed).
    #[serde(default)]
    pub return_code: Option<i32>,
    /// Captured stdout.
    #[serde(default)]
    pub stdout: Option<String>,
    /// Captured stderr.
    #[serde(default)]
    pub stderr: Option<String>,
}

/// A `POST /run_code` reply (SandboxFusion's `RunCodeResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCodeResponse {
    /// The overall status.
    pub status: RunStatus,
    /// Why, for `SandboxError`; empty otherwise.
    #[serde(default)]
    pub message: String,
    /// The compile step (`None` for interpreted languages).
    #[serde(default)]
    pub compile_result: Option<CommandRunResult>,
    /// The run step (`None` when it never started).
    #[serde(default)]
    pub run_result: Option<CommandRunResult>,
    /// The executor's name, if the server reports one.
    #[serde(default)]
    pub executor_pod_name: Option<String>,
    /// Fetched files: path → base64 content.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_defaults_and_reply_shape_match_sandbox_fusion() {
        let r: RunCodeRequest =
            serde_json::from_str(r#"{"code": "print(1)", "language": "python"}"#).unwrap();
        assert_eq!(
            (r.run_timeout, r.compile_timeout, r.memory_limit_mb),
            (10.0, 10.0, -1)
        );
        assert!(r.stdin.is_none() && r.files.is_empty() && r.fetch_files.is_empty());
        // A reply as SandboxFusion writes it for a timed-out Python run.
        let text = r#"{"status": "Failed", "message": "", "compile_result": null,
            "run_result": {"status": "TimeLimitExceeded", "execution_time": 1.0,
            "return_code": null, "stdout": "", "stderr": ""},
            "executor_pod_name": null, "files": {}}"#;
        let reply: RunCodeResponse = serde_json::from_str(text).unwrap();
        assert_eq!(reply.status, RunStatus::Failed);
        let run = reply.run_result.unwrap();
        assert_eq!(run.status, CommandRunStatus::TimeLimitExceeded);
        assert_eq!(run.return_code, None);
        let back = serde_json::to_value(RunStatus::SandboxError).unwrap();
        assert_eq!(back, "SandboxError");
    }
}
