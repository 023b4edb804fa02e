//! Adversarial suite: hostile programs must end as fail or timeout, inside the time limit, with
//! the host unharmed and no forged pass. Runs in the plain `cargo test`.

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use rlvr_verifiers::sandbox::{Sandbox, SandboxConfig};
use rlvr_verifiers::{CodeConfig, CodeReference, CodeVerifier, Outcome, Reference, Verifier};

/// Per-run wall-clock limit for hostile programs; generous for a loaded 2-core machine, short
/// enough to keep the suite quick.
const LIMIT_S: f64 = 4.0;
/// Slack allowed past the limit for killing and reaping.
const SLACK_S: f64 = 3.0;

fn verifier() -> CodeVerifier {
    CodeConfig {
        timeout_s: LIMIT_S,
        ..CodeConfig::default()
    }
    .init()
    .expect("sandbox starts")
}

fn reference() -> Reference {
    Reference::Code(CodeReference {
        tests: vec![
            "assert add(1, 2) == 3".into(),
            "assert add(2, 2) == 4".into(),
        ],
        ..CodeReference::default()
    })
}

/// A wrong `add` (so that any pass is forged) followed by the attack.
fn hostile(attack: &str) -> String {
    format!("def add(a, b):\n    return a - b\n\n{attack}\n")
}

fn assert_fails(v: &CodeVerifier, name: &str, program: &str) -> rlvr_verifiers::Verdict {
    let start = Instant::now();
    let verdict = v.verify(program, &reference());
    let secs = start.elapsed().as_secs_f64();
    assert!(
        !verdict.passed && verdict.reward == 0.0,
        "{name}: forged a pass: {}",
        verdict.details
    );
    assert!(secs < LIMIT_S + SLACK_S, "{name}: took {secs:.1} s");
    assert!(
        verdict.outcome != Outcome::Error,
        "{name}: verifier error {}",
        verdict.details
    );
    verdict
}

#[test]
fn control_correct_program_passes_and_may_use_its_directory() {
    let v = verifier();
    let ok = "def add(a, b):\n    with open('scratch.txt', 'w') as f:\n        f.write('x')\n    return a + b\n";
    let verdict = v.verify(ok, &reference());
    assert!(verdict.passed, "{}", verdict.details);
    assert_eq!(verdict.reward, 1.0);
}

#[test]
fn loops_sleeps_and_output_floods_time_out() {
    let v = verifier();
    for (name, attack) in [
        ("infinite loop", "while True:\n    pass"),
        ("sleep", "import time\ntime.sleep(1000)"),
        (
            "loop in the function",
            "def add(a, b):\n    while True:\n        pass",
        ),
        ("huge output", "while True:\n    print('x' * 100000)"),
        (
            "huge stderr",
            "import sys\nwhile True:\n    sys.stderr.write('y' * 100000)",
        ),
    ] {
        let verdict = assert_fails(&v, name, &hostile(attack));
        assert_eq!(
            verdict.outcome,
            Outcome::Timeout,
            "{name}: {}",
            verdict.details
        );
    }
}

#[test]
fn resource_bombs_fail() {
    let v = verifier();
    for (name, attack) in [
        ("fork bomb", "import os\nwhile True:\n    os.fork()"),
        (
            "subprocess",
            "import subprocess\nsubprocess.run(['sh', '-c', 'echo hi'])",
        ),
        ("os.system", "import os\nos.system('true')"),
        ("memory bomb", "x = bytearray(50 * 1024 ** 3)"),
        (
            "memory growth",
            "x = []\nwhile True:\n    x.append(' ' * 10 ** 7)",
        ),
        (
            "file bomb",
            "with open('big', 'wb') as f:\n    while True:\n        f.write(b'0' * 10 ** 6)",
        ),
        (
            "descriptor bomb",
            "fs = [open('f%d' % i, 'w') for i in range(100000)]",
        ),
        ("recursion", "def r():\n    return r()\nr()"),
        (
            "threads",
            "import threading\nfor _ in range(10000):\n    threading.Thread(target=lambda: __import__('time').sleep(100)).start()",
        ),
    ] {
        assert_fails(&v, name, &hostile(attack));
    }
}

#[test]
fn file_and_network_access_fail() {
    let v = verifier();
    let marker = format!("/tmp/rlvr-adversarial-{}", std::process::id());
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    for (name, attack) in [
        (
            "write /tmp",
            format!("open('{marker}', 'w').write('pwned')"),
        ),
        (
            "write /etc",
            "open('/etc/rlvr-pwned', 'w').write('pwned')".to_string(),
        ),
        (
            "os.open outside",
            format!("import os\nos.open('{marker}', os.O_CREAT | os.O_WRONLY)"),
        ),
        (
            "rename outside",
            format!("open('a', 'w').close()\nimport os\nos.rename('a', '{marker}')"),
        ),
        (
            "delete outside",
            "import os\nos.remove('/etc/hostname')".to_string(),
        ),
        (
            "read /proc/self/mem",
            "open('/proc/self/mem', 'rb').read(10)".to_string(),
        ),
        (
            "read /proc/1/environ",
            "open('/proc/1/environ', 'rb').read()".to_string(),
        ),
        (
            "connect localhost",
            format!("import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)"),
        ),
        (
            "connect internet",
            "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)".to_string(),
        ),
        (
            "dns",
            "import socket\nsocket.getaddrinfo('example.com', 80)".to_string(),
        ),
        (
            "urllib",
            "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:1', timeout=1)"
                .to_string(),
        ),
    ] {
        assert_fails(&v, name, &hostile(&attack));
    }
    assert!(!Path::new(&marker).exists(), "a program wrote {marker}");
    assert!(!Path::new("/etc/rlvr-pwned").exists());
    assert!(
        listener.accept().is_err(),
        "a program connected to the host"
    );
}

#[test]
fn fake_passes_fail() {
    let v = verifier();
    let cases = [
        ("exit 0 early", "import os\nos._exit(0)"),
        ("sys.exit(0)", "import sys\nsys.exit(0)"),
        (
            "exit in the function",
            "def add(a, b):\n    import os\n    os._exit(0)",
        ),
        (
            "print passed",
            "print('passed')\nprint('ok 0 1 ok')\nprint('All tests passed')",
        ),
        (
            "forge channel",
            "import os\nfor i in range(3):\n    os.write(3, b'0 %d 1 ok\\n' % i)\nos.write(3, b'0 done 1 -\\n')",
        ),
        ("close channel", "import os\nos.close(3)"),
        (
            "eq always true",
            "class T:\n    def __eq__(self, o):\n        return True\n    def __ne__(self, o):\n        return False\ndef add(a, b):\n    return T()",
        ),
        (
            "int subclass eq",
            "class I(int):\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return I(0)",
        ),
        (
            "bool override",
            "class B:\n    def __bool__(self):\n        return True\n    def __eq__(self, o):\n        return B()\ndef add(a, b):\n    return B()",
        ),
        (
            "redefine AssertionError",
            "import builtins\nbuiltins.AssertionError = type('Quiet', (Exception,), {})",
        ),
        (
            "redefine builtins",
            "import builtins\nbuiltins.bool = lambda x: True\nbuiltins.isinstance = lambda *a: True\nbuiltins.type = lambda *a: int\nbuiltins.len = lambda x: 0\nbuiltins.all = lambda x: True",
        ),
        (
            "patch os.write",
            "import os\nos.write = lambda fd, data: len(data)",
        ),
        (
            "patch json and ast",
            "import json, ast\njson.dumps = lambda *a, **k: '{}'\nast.parse = lambda *a, **k: None",
        ),
        (
            "swallow exceptions",
            "import sys\nsys.excepthook = lambda *a: None",
        ),
        ("kill parent", "import os\nos.kill(os.getppid(), 9)"),
        (
            "kill group",
            "import os, signal\nos.killpg(0, signal.SIGKILL)",
        ),
        ("kill everything", "import os\nos.kill(-1, 9)"),
        (
            "frame walk",
            "import sys\nf = sys._getframe(1)\nwhile f:\n    f.f_locals.clear()\n    f = f.f_back",
        ),
        (
            "inspect stack",
            "import inspect\nfor fr in inspect.stack():\n    fr.frame.f_globals.clear()",
        ),
        (
            "traceback frames",
            "try:\n    1/0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame.f_back",
        ),
        ("gc walk", "import gc\nfor o in gc.get_objects():\n    pass"),
        ("ctypes", "import ctypes\nctypes.string_at(0, 1)"),
        ("settrace", "import sys\nsys.settrace(lambda *a: None)"),
        ("main module", "import __main__\n__main__.__dict__.clear()"),
        (
            "patch code",
            "def add(a, b):\n    return a - b\nadd.__code__ = (lambda a, b: a + b).__code__.replace(co_consts=(None,))",
        ),
        (
            "mutate test globals later",
            "def add(a, b):\n    g = globals()\n    g['__rlvr_eq__'] = lambda a, b: True\n    g['__rlvr_truth__'] = lambda v: True\n    return a - b",
        ),
    ];
    for (name, attack) in cases {
        let verdict = assert_fails(&v, name, &hostile(attack));
        assert!(
            matches!(
                verdict.outcome,
                Outcome::Wrong | Outcome::Crashed | Outcome::Timeout
            ),
            "{name}: {:?}",
            verdict.outcome
        );
    }
}

#[test]
fn forged_channel_lines_are_counted() {
    let v = verifier();
    let verdict = v.verify(
        &hostile("import os\nos.write(3, b'deadbeef 0 1 ok\\n')"),
        &reference(),
    );
    assert!(!verdict.passed);
    assert_eq!(verdict.details["forged_reports"], 1, "{}", verdict.details);
}

fn raw_sandbox() -> Sandbox {
    Sandbox::new(&SandboxConfig::default()).expect("sandbox starts")
}

/// Without the harness (so without audit hooks): what the OS layers alone contain.
#[test]
fn os_layers_contain_raw_programs() {
    let sb = raw_sandbox();
    let iso = sb.isolation();
    eprintln!("sandbox: {} with {}", sb.python().display(), iso.describe());
    let run = |src: &str, secs: f64| {
        let start = Instant::now();
        let out = sb
            .run(&["-c", src], b"", Duration::from_secs_f64(secs))
            .expect("run");
        assert!(
            start.elapsed().as_secs_f64() < secs + SLACK_S,
            "took {:?}",
            start.elapsed()
        );
        out
    };

    // Fork bomb: bounded by the process limit, killed at the timeout, nothing left behind.
    let out = run(
        "import os\nprint(os.getuid(), flush=True)\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        2.0,
    );
    assert!(out.timed_out || out.code != Some(0));
    std::thread::sleep(Duration::from_millis(300));
    if iso.drop_uid {
        let uid: u32 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("uid printed");
        assert_eq!(processes_of_uid(uid), 0, "fork bomb survived its sandbox");
    }

    // Environment is cleared.
    let out = run("import os\nprint(sorted(os.environ))", 10.0);
    let env = String::from_utf8_lossy(&out.stdout);
    assert!(!env.contains("CARGO"), "host environment leaked: {env}");

    // The host is not reachable over the network.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let out = run(
        &format!(
            "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=1)\n    print('connected')\nexcept OSError as e:\n    print('refused', e)"
        ),
        10.0,
    );
    let said = String::from_utf8_lossy(&out.stdout);
    if iso.net_ns {
        assert!(said.starts_with("refused"), "{said}");
        assert!(listener.accept().is_err());
    } else {
        eprintln!("network NOT isolated here (no network namespace): {said}");
    }

    // Writes outside the working directory.
    let marker = format!("/tmp/rlvr-raw-{}", std::process::id());
    let out = run(
        &format!(
            "try:\n    open('{marker}', 'w').write('x')\n    print('wrote')\nexcept OSError as e:\n    print('denied', e)"
        ),
        10.0,
    );
    let said = String::from_utf8_lossy(&out.stdout);
    if iso.mount_ns {
        assert!(said.starts_with("denied"), "{said}");
        assert!(!Path::new(&marker).exists());
    } else {
        let _ = std::fs::remove_file(&marker);
    }
    if iso.drop_uid {
        let out = run(
            "try:\n    open('/etc/rlvr-raw', 'w')\n    print('wrote')\nexcept OSError as e:\n    print('denied', e)",
            10.0,
        );
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("denied"));
        // Signals to the host's processes are refused.
        let me = std::process::id();
        let out = run(
            &format!(
                "import os\ntry:\n    os.kill({me}, 9)\n    print('sent')\nexcept OSError as e:\n    print('denied', e)"
            ),
            10.0,
        );
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("denied"));
    }

    // Output is capped.
    let out = run("import sys\nsys.stdout.write('z' * 10_000_000)", 10.0);
    assert!(out.truncated && out.stdout.len() <= SandboxConfig::default().max_output_bytes);
}

/// Processes whose real uid is `uid`.
fn processes_of_uid(uid: u32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter(|status| {
            if status.contains(&format!("Uid:\t{uid}")) {
                eprintln!(
                    "leftover: {}",
                    status.lines().take(8).collect::<Vec<_>>().join(" | ")
                );
            }
            status
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|u| u.parse::<u32>().ok())
                .is_some_and(|u| u == uid)
        })
        .count()
}
