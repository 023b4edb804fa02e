//! The `rlvr-verify` binary: output shape and order, malformed lines, `--strict`.

use std::process::Command;

fn run(kind: &str, input: &str, extra: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    std::fs::write(&path, input).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rlvr-verify"))
        .args(["--kind", kind, "--input"])
        .arg(&path)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn math_lines_score_in_order_and_bad_lines_are_reported() {
    let input = "{\"id\": \"a\", \"response\": \"#### 12\", \"answer\": \"12\"}\n\
                 {\"id\": \"b\", \"response\": \"The answer is 13.\", \"answer\": \"12\"}\n\
                 not json\n\
                 {\"id\": \"d\", \"response\": \"x\"}\n\
                 {\"id\": 5, \"response\": \"\\\\boxed{\\\\frac{1}{2}}\", \"answer\": \"0.5\"}\n";
    let (code, stdout, stderr) = run("math", input, &[]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(
        (lines[0]["id"].as_str(), lines[0]["passed"].as_bool()),
        (Some("a"), Some(true))
    );
    assert_eq!(
        (lines[1]["id"].as_str(), lines[1]["reward"].as_f64()),
        (Some("b"), Some(0.0))
    );
    assert_eq!(lines[2]["line"], 3);
    assert!(lines[3]["error"].as_str().unwrap().contains("answer"));
    assert_eq!(lines[4]["passed"], true);
    assert!(stderr.contains(":3: not JSON"), "{stderr}");
    assert!(
        stderr.contains("3 scored, 2 passed") && stderr.contains("2 malformed"),
        "{stderr}"
    );
    assert!(stderr.contains("items/s"));

    let (code, _, stderr) = run("math", input, &["--strict"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("in.jsonl:3"), "{stderr}");
}

#[test]
fn code_and_rubric_forms() {
    let input = "{\"id\": 1, \"response\": \"def f(x):\\n    return x + 1\", \"tests\": [\"assert f(1) == 2\", \"assert f(2) == 4\"]}\n\
                 {\"id\": 2, \"response\": \"def g(x):\\n    return 2 * x\", \"test\": \"def check(c):\\n    assert c(3) == 6\\n\", \"entry_point\": \"g\"}\n";
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.jsonl");
    let (code, stdout, stderr) = run("code", input, &["--output", out_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty());
    let text = std::fs::read_to_string(&out_path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["reward"], 0.5);
    assert_eq!(lines[1]["passed"], true);
    assert!(stderr.contains("sandbox runs"), "{stderr}");

    let rubric = "{\"id\": \"r\", \"response\": \"hello world\", \"rubric\": [{\"id\": \"h\", \"kind\": \"contains\", \"text\": \"hello\"}, {\"id\": \"z\", \"kind\": \"contains\", \"text\": \"zebra\"}]}\n";
    let (code, stdout, _) = run("rubric", rubric, &[]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["reward"], 0.5);
}
