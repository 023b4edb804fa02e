//! `rlvr-verify serve` end to end: the real binary on a free port, the `sandbox_fusion` code
//! backend pointed at it (same verdicts as the local backend, forging attacks included), a
//! stdlib-only Python client, and bad requests that get a 4xx while the server keeps serving.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rlvr_verifiers::{
    CodeBackend, CodeConfig, CodeReference, Error, IoCase, Outcome, Reference, Verifier,
};

/// Wall-clock limit of one program run in these tests.
const LIMIT_S: f64 = 4.0;

/// A running `rlvr-verify serve` on a port the OS picked; killed on drop.
struct Served {
    child: Child,
    addr: String,
}

impl Served {
    fn start() -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rlvr-verify"))
            .args([
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--workers",
                "4",
            ])
            .args(["--max-body-mb", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rlvr-verify starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("a first line");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Served { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One raw HTTP/1.1 exchange: `(status, body)`.
fn http(addr: &str, head: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    // A server that answers before reading the whole body may close early: that is fine.
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    let body = text.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
    (status, body.to_string())
}

fn post(addr: &str, path: &str, body: &str) -> (u16, String) {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    http(addr, &head, body.as_bytes())
}

fn get(addr: &str, path: &str) -> (u16, String) {
    http(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        b"",
    )
}

fn local() -> Box<dyn Verifier> {
    Box::new(
        CodeConfig {
            timeout_s: LIMIT_S,
            ..CodeConfig::default()
        }
        .init()
        .expect("local sandbox starts"),
    )
}

fn remote(url: &str) -> Box<dyn Verifier> {
    Box::new(
        CodeConfig {
            timeout_s: LIMIT_S,
            backend: CodeBackend::SandboxFusion,
            sandbox_url: Some(url.to_string()),
            ..CodeConfig::default()
        }
        .init()
        .expect("the server answers the probe"),
    )
}

fn mbpp() -> Reference {
    Reference::Code(CodeReference {
        tests: vec![
            "assert add(1, 2) == 3".into(),
            "assert add(2, 2) == 4".into(),
        ],
        ..CodeReference::default()
    })
}

/// A wrong `add` (so that any pass would be forged) followed by the attack.
fn hostile(attack: &str) -> String {
    format!("def add(a, b):\n    return a - b\n\n{attack}\n")
}

#[test]
fn remote_backend_gives_the_local_verdicts() {
    let server = Served::start();
    let (local, remote) = (local(), remote(&server.url()));
    // (name, program, expected outcome, expected reward): the expectations follow from the
    // programs (two tests; 1 of 2 right is 0.5 under the default `fraction` reward).
    let cases: Vec<(&str, String, Outcome, f32)> = vec![
        ("correct", "def add(a, b):\n    return a + b".into(), Outcome::Correct, 1.0),
        ("fenced", "Here:\n```python\ndef add(a, b):\n    return b + a\n```".into(), Outcome::Correct, 1.0),
        ("wrong", hostile(""), Outcome::Wrong, 0.0),
        ("one of two", "def add(a, b):\n    return 3".into(), Outcome::Partial, 0.5),
        ("endless loop", "def add(a, b):\n    while True:\n        pass".into(), Outcome::Timeout, 0.0),
        ("syntax error", "def add(a, b)\n    return a + b".into(), Outcome::Crashed, 0.0),
        ("sys.exit(0) at load", hostile("import sys\nsys.exit(0)"), Outcome::Crashed, 0.0),
        ("raise SystemExit at load", hostile("raise SystemExit(0)"), Outcome::Crashed, 0.0),
        ("os._exit(0) at load", hostile("import os\nos._exit(0)"), Outcome::Crashed, 0.0),
        ("SystemExit in the function", "def add(a, b):\n    raise SystemExit(0)".into(), Outcome::Wrong, 0.0),
        ("os._exit in the function", "import os\ndef add(a, b):\n    os._exit(0)".into(), Outcome::Crashed, 0.0),
        ("fake success prints", hostile("print('ALL TESTS PASSED')\nprint('test 0 1 ok -')\nprint('done')"), Outcome::Wrong, 0.0),
        ("fake lines on fd 1", hostile("import os\nos.write(1, b'\\ntest 0 1 ok -\\ntest 1 1 ok -\\ndone\\n')"), Outcome::Wrong, 0.0),
        ("__eq__ always true", "class A:\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return A()".into(), Outcome::Wrong, 0.0),
        ("int subclass", "class I(int):\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return I(0)".into(), Outcome::Wrong, 0.0),
        ("patched AssertionError", hostile("import builtins\nbuiltins.AssertionError = KeyError"), Outcome::Wrong, 0.0),
        ("frame walk", hostile("import sys\ntry:\n    print(sys._getframe(1).f_locals)\nexcept Exception:\n    pass"), Outcome::Wrong, 0.0),
    ];
    let mut failures = Vec::new();
    for (name, program, outcome, reward) in &cases {
        for (backend, v) in [("local", &local), ("remote", &remote)] {
            let start = Instant::now();
            let got = v.verify(program, &mbpp());
            let secs = start.elapsed().as_secs_f64();
            if got.outcome != *outcome || got.reward != *reward {
                failures.push(format!(
                    "{name} ({backend}): {:?} {} instead of {outcome:?} {reward}: {}",
                    got.outcome, got.reward, got.details
                ));
            }
            assert!(secs < LIMIT_S + 8.0, "{name} ({backend}) took {secs:.1} s");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // HumanEval `check` and stdin/stdout cases, both ways.
    let humaneval = Reference::Code(CodeReference {
        check: Some("def check(candidate):\n    assert candidate([3, 1, 2]) == [1, 2, 3]\n    assert abs(candidate([0.5])[0] - 0.5) < 1e-9\n".into()),
        entry_point: Some("srt".into()),
        ..CodeReference::default()
    });
    let io = Reference::Code(CodeReference {
        io_cases: vec![
            IoCase {
                input: "2 3\n".into(),
                output: "5\n".into(),
            },
            IoCase {
                input: "10 -4\n".into(),
                output: "6".into(),
            },
        ],
        ..CodeReference::default()
    });
    for v in [&local, &remote] {
        let ok = v.verify("def srt(xs):\n    return sorted(xs)", &humaneval);
        assert_eq!(
            (ok.outcome, ok.reward),
            (Outcome::Correct, 1.0),
            "{}",
            ok.details
        );
        let forged = v.verify(
            "class F:\n    def __sub__(s, o):\n        return 0.0\n    def __eq__(s, o):\n        return True\n    def __getitem__(s, i):\n        return s\ndef srt(xs):\n    return F()",
            &humaneval,
        );
        assert_eq!(
            (forged.outcome, forged.reward),
            (Outcome::Wrong, 0.0),
            "{}",
            forged.details
        );
        let sum = v.verify("a, b = map(int, input().split())\nprint(a + b)", &io);
        assert_eq!(
            (sum.outcome, sum.reward),
            (Outcome::Correct, 1.0),
            "{}",
            sum.details
        );
        let half = v.verify("a, b = map(int, input().split())\nprint(5)", &io);
        assert_eq!(
            (half.outcome, half.reward),
            (Outcome::Partial, 0.5),
            "{}",
            half.details
        );
    }
    // Patching the stdlib or builtins the tests use changes nothing (remotely they share the
    // program's interpreter; the harness restores them before each test).
    let patched = Reference::Code(CodeReference {
        tests: vec![
            "import math\nassert math.isclose(add(1, 2), 3.0)".into(),
            "assert len(str(add(2, 2))) == 1".into(),
            "import collections\nassert collections.Counter(str(add(2, 2))) == collections.Counter('4')".into(),
        ],
        ..CodeReference::default()
    });
    // At load, and from inside the function while a test runs.
    let at_load = "import math, builtins, collections\nmath.isclose = lambda *a, **k: True\nbuiltins.len = lambda x: 1\ncollections.Counter.__eq__ = lambda s, o: True\ndef add(a, b):\n    return -1";
    let mid_test = "import math, builtins, collections\ndef add(a, b):\n    math.isclose = lambda *a, **k: True\n    builtins.len = lambda x: 1\n    collections.Counter.__eq__ = lambda s, o: True\n    return -1";
    for v in [&local, &remote] {
        let ok = v.verify("def add(a, b):\n    return a + b", &patched);
        assert_eq!(
            (ok.outcome, ok.reward),
            (Outcome::Correct, 1.0),
            "{}",
            ok.details
        );
        for patcher in [at_load, mid_test] {
            let forged = v.verify(patcher, &patched);
            assert_eq!(
                (forged.outcome, forged.reward),
                (Outcome::Wrong, 0.0),
                "{}",
                forged.details
            );
        }
    }
    // Threads are refused remotely (the harness could not watch them).
    let threaded = "import threading\ndef add(a, b):\n    return a + b\nthreading.Thread(target=print).start()";
    let t = remote.verify(threaded, &mbpp());
    assert_eq!(
        (t.outcome, t.reward),
        (Outcome::Crashed, 0.0),
        "{}",
        t.details
    );
    let remote_details = remote
        .verify("def add(a, b):\n    return a + b", &mbpp())
        .details;
    assert_eq!(remote_details["backend"], "sandbox_fusion");
}

#[test]
fn unreachable_server_is_a_config_error_then_an_error_verdict() {
    // Nothing listens on a port just released by the OS.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = CodeConfig {
        backend: CodeBackend::SandboxFusion,
        sandbox_url: Some(format!("http://127.0.0.1:{port}")),
        ..CodeConfig::default()
    };
    match config.init() {
        Err(Error::InvalidConfig { field, reason }) => {
            assert_eq!(field, "verifier.sandbox_url");
            assert!(reason.contains(&port.to_string()), "{reason}");
        }
        other => panic!("expected a config error, got {other:?}"),
    }
    let missing = CodeConfig {
        backend: CodeBackend::SandboxFusion,
        ..CodeConfig::default()
    };
    assert!(
        matches!(missing.init(), Err(Error::InvalidConfig { field, .. }) if field == "verifier.sandbox_url")
    );

    // Reachable when built, gone when used: an Error verdict worth 0, naming the URL.
    let server = Served::start();
    let v = remote(&server.url());
    drop(server);
    let got = v.verify("def add(a, b):\n    return a + b", &mbpp());
    assert_eq!((got.outcome, got.reward), (Outcome::Error, 0.0));
    let reason = got.details["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("/run_code"), "{reason}");
}

#[test]
fn python_client_gets_the_documented_replies() {
    let server = Served::start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/serve_client.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(server.url())
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("checks passed"), "{stdout}");
}

#[test]
fn bad_requests_get_4xx_and_the_server_keeps_serving() {
    let server = Served::start();
    let addr = server.addr.as_str();
    let cases: Vec<(&str, (u16, String), &str)> = vec![
        (
            "malformed JSON",
            post(addr, "/verify", "{\"kind\": \"math\", "),
            "not valid JSON",
        ),
        (
            "not an object",
            post(addr, "/verify", "[1, 2]"),
            "JSON object",
        ),
        (
            "missing kind",
            post(addr, "/verify", "{\"items\": []}"),
            "`kind`",
        ),
        (
            "kind not a string",
            post(addr, "/verify", "{\"kind\": 3, \"items\": []}"),
            "`kind`",
        ),
        (
            "missing items",
            post(addr, "/verify", "{\"kind\": \"math\"}"),
            "`items`",
        ),
        (
            "items not a list",
            post(addr, "/verify", "{\"kind\": \"math\", \"items\": 5}"),
            "`items`",
        ),
        (
            "missing code",
            post(addr, "/run_code", "{\"language\": \"python\"}"),
            "`code`",
        ),
        (
            "missing language",
            post(addr, "/run_code", "{\"code\": \"print(1)\"}"),
            "`language`",
        ),
        (
            "bad timeout",
            post(
                addr,
                "/run_code",
                "{\"code\": \"1\", \"language\": \"python\", \"run_timeout\": -1}",
            ),
            "`run_timeout`",
        ),
        (
            "fetch_files",
            post(
                addr,
                "/run_code",
                "{\"code\": \"1\", \"language\": \"python\", \"fetch_files\": [\"a\"]}",
            ),
            "`fetch_files`",
        ),
        ("unknown path", get(addr, "/admin"), "no endpoint"),
        ("wrong method", get(addr, "/verify"), "not allowed"),
    ];
    let expected = [400, 400, 400, 400, 400, 400, 400, 400, 400, 400, 404, 405];
    for ((name, (status, body), needle), want) in cases.into_iter().zip(expected) {
        assert_eq!(status, want, "{name}: {body}");
        assert!(body.contains(needle), "{name}: {body}");
    }
    // Over the 1 MiB cap: refused from the header alone, and when the body streams in chunks.
    let cap = 1usize << 20;
    let (status, body) = http(
        addr,
        &format!(
            "POST /verify HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            cap + 1
        ),
        b"",
    );
    assert_eq!(status, 413, "{body}");
    let chunk = vec![b' '; cap + 10];
    let mut chunked = format!("{:x}\r\n", chunk.len()).into_bytes();
    chunked.extend_from_slice(&chunk);
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    let (status, body) = http(
        addr,
        "POST /run_code HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        &chunked,
    );
    assert_eq!(status, 413, "{body}");
    // Bytes that are not HTTP at all.
    let mut s = TcpStream::connect(addr).unwrap();
    let _ = s.write_all(b"\x00\x01garbage\r\n\r\n");
    drop(s);
    // Still serving, and still scoring.
    let (status, body) = get(addr, "/health");
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(
        addr,
        "/verify",
        "{\"kind\": \"math\", \"items\": [{\"id\": 1, \"response\": \"#### 12\", \"answer\": \"12\"}]}",
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"passed\":true"), "{body}");
}
