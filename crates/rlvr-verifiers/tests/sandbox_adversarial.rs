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
            .run(src, b"", Duration::from_secs_f64(secs))
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

/// A program whose `add` is correct only if `attack` ran without raising: a pass means the hole
/// is open. The attack runs at load time, before any test.
fn correct_if(attack: &str) -> String {
    let body: String = attack.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "def _attack():\n{body}\ntry:\n    _attack()\n    _ok = True\nexcept BaseException:\n    _ok = False\n\ndef add(a, b):\n    return a + b if _ok else a - b\n"
    )
}

/// `correct_if` for an attack that must stay closed, with a control: the same program with a
/// harmless statement in place of the attack passes (so a fail really means "blocked").
fn assert_blocked(v: &CodeVerifier, name: &str, attack: &str) {
    let verdict = assert_fails(v, name, &correct_if(attack));
    assert!(
        matches!(verdict.outcome, Outcome::Wrong | Outcome::Crashed),
        "{name}: {:?} {}",
        verdict.outcome,
        verdict.details
    );
}

#[test]
fn control_the_leak_pattern_passes_when_nothing_is_blocked() {
    let v = verifier();
    let verdict = v.verify(&correct_if("x = 1"), &reference());
    assert!(verdict.passed, "{}", verdict.details);
    // Threads, AF_UNIX socket pairs and the work dir stay usable.
    let verdict = v.verify(
        &correct_if(
            "import threading, socket\nt = threading.Thread(target=lambda: None)\nt.start()\nt.join()\na, b = socket.socketpair()\nopen('/work/f', 'w').write('x')\nimport tempfile\ntempfile.TemporaryFile().write(b'x')",
        ),
        &reference(),
    );
    assert!(verdict.passed, "{}", verdict.details);
}

#[test]
fn process_creation_and_ptrace_are_refused_by_seccomp() {
    let v = verifier();
    for (name, attack) in [
        (
            "os.fork",
            "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)",
        ),
        (
            "raw fork syscall",
            "import ctypes\nlibc = ctypes.CDLL(None)\nr = libc.syscall(57)\nif r == 0:\n    libc._exit(0)\nassert r > 0",
        ),
        (
            "clone without CLONE_THREAD",
            "import ctypes\nlibc = ctypes.CDLL(None)\nr = libc.syscall(56, 17, 0, 0, 0, 0)\nif r == 0:\n    libc._exit(0)\nassert r > 0",
        ),
        (
            "subprocess",
            "import subprocess\nsubprocess.run(['/bin/true'], check=True)",
        ),
        (
            "posix_spawn",
            "import os\nos.waitpid(os.posix_spawn('/bin/true', ['true'], {}), 0)",
        ),
        (
            "execve in a thread-free way",
            "import ctypes\nlibc = ctypes.CDLL(None)\nassert libc.execve(b'/bin/true', None, None) == 0",
        ),
        (
            "ptrace traceme",
            "import ctypes\nassert ctypes.CDLL(None).ptrace(0, 0, 0, 0) == 0",
        ),
        (
            "ptrace attach",
            "import ctypes\nassert ctypes.CDLL(None).ptrace(16, 1, 0, 0) == 0",
        ),
        (
            "process_vm_readv",
            "import ctypes\nassert ctypes.CDLL(None).syscall(310, 1, 0, 0, 0, 0, 0) >= 0",
        ),
        (
            "unshare a user namespace",
            "import ctypes\nassert ctypes.CDLL(None).unshare(0x10000000) == 0",
        ),
        (
            "mount",
            "import ctypes\nassert ctypes.CDLL(None).mount(b'none', b'/work', b'tmpfs', 0, None) == 0",
        ),
        (
            "io_uring",
            "import ctypes\nbuf = ctypes.create_string_buffer(120)\nassert ctypes.CDLL(None).syscall(425, 4, buf) >= 0",
        ),
        (
            "x32 syscall numbers",
            "import ctypes\nassert ctypes.CDLL(None).syscall(0x40000000 + 57) >= 0",
        ),
        ("setuid root", "import os\nos.setuid(0)"),
    ] {
        assert_blocked(&v, name, attack);
    }
}

#[test]
fn sockets_other_than_unix_are_refused() {
    let v = verifier();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    for (name, attack) in [
        (
            "inet socket",
            "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)".to_string(),
        ),
        (
            "inet6 socket",
            "import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_DGRAM)".to_string(),
        ),
        (
            "netlink socket",
            "import socket\nsocket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)".to_string(),
        ),
        (
            "connect to the host",
            format!("import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)"),
        ),
    ] {
        assert_blocked(&v, name, &attack);
    }
    assert!(
        listener.accept().is_err(),
        "a program connected to the host"
    );
}

#[test]
fn host_proc_files_and_descriptors_are_out_of_reach() {
    let v = verifier();
    let me = std::process::id();
    let manifest = env!("CARGO_MANIFEST_DIR");
    // A descriptor this process leaks on purpose (no close-on-exec), far above the channel.
    // SAFETY: plain open/dup2/close on a path literal; the numbers are checked below.
    let leaked = unsafe {
        let fd = libc::open(c"/etc/hostname".as_ptr(), libc::O_RDONLY);
        assert!(fd >= 0);
        let high = libc::dup2(fd, 77);
        libc::close(fd);
        high
    };
    assert_eq!(leaked, 77);
    for (name, attack) in [
        (
            "host process environment",
            format!("assert b'CARGO' in open('/proc/{me}/environ', 'rb').read()"),
        ),
        ("signal the host test process", format!("import os\nos.kill({me}, 0)")),
        (
            "more than our own processes in /proc",
            "import os\nassert len([p for p in os.listdir('/proc') if p.isdigit()]) > 3".into(),
        ),
        (
            "host files outside the minimal root",
            format!("import os\nassert os.path.exists('{manifest}/Cargo.toml')"),
        ),
        ("host home", "import os\nos.listdir('/root')".into()),
        ("host /etc", "assert open('/etc/passwd').read()".into()),
        (
            "inherited descriptors",
            "import os\nfor fd in range(5, 1024):\n    try:\n        os.fstat(fd)\n        break\n    except OSError:\n        pass\nelse:\n    raise OSError('no descriptor')".into(),
        ),
    ] {
        assert_blocked(&v, name, &attack);
    }
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(leaked) };
}

#[test]
fn the_filesystem_is_read_only_outside_a_bounded_work_dir() {
    let v = verifier();
    let marker = format!("/tmp/rlvr-adversarial-ro-{}", std::process::id());
    for (name, attack) in [
        ("write /tmp", format!("open('{marker}', 'w').write('x')")),
        ("write /", "open('/pwned', 'w').write('x')".into()),
        ("write /usr", "open('/usr/pwned', 'w').write('x')".into()),
        ("write /dev/shm", "open('/dev/shm/pwned', 'w').write('x')".into()),
        ("mkdir at the root", "import os\nos.mkdir('/pwned')".into()),
        (
            "write via .. from the work dir",
            "open('/work/../pwned', 'w').write('x')".into(),
        ),
        (
            "fill the disk",
            "for k in range(8):\n    with open('/work/big%d' % k, 'wb') as f:\n        f.write(b'0' * (10 << 20))".into(),
        ),
        (
            "fill the inodes",
            "import os\nfor k in range(5000):\n    open('/work/f%d' % k, 'w').close()".into(),
        ),
        (
            "one file past the size limit",
            "with open('/work/big', 'wb') as f:\n    f.write(b'0' * (20 << 20))".into(),
        ),
    ] {
        assert_blocked(&v, name, &attack);
    }
    assert!(!Path::new(&marker).exists());
    assert!(!Path::new("/pwned").exists());
    assert!(!Path::new("/usr/pwned").exists());
}

/// A reference whose tests need more than `==`: a float tolerance through `math.isclose`,
/// `abs`, `sorted`, `isinstance`, `len` and a set; the program's `add` is wrong for all of them.
fn helper_reference() -> Reference {
    Reference::Code(CodeReference {
        tests: vec![
            "import math\nassert math.isclose(add(1, 2), 3)".into(),
            "assert abs(add(1, 2) - 3) < 1e-9".into(),
            "assert sorted([add(2, 2), 1]) == [1, 4]".into(),
            "assert isinstance(add(1, 1), int) and add(1, 1) == 2".into(),
            "assert len(str(add(5, 5))) == 2 and {add(1, 1)} == {2}".into(),
        ],
        ..CodeReference::default()
    })
}

#[test]
fn patching_what_the_asserts_use_changes_nothing() {
    let v = verifier();
    let wrong = "def add(a, b):\n    return a - b\n";
    for (name, attack) in [
        (
            "patch math.isclose",
            "import math\nmath.isclose = lambda *a, **k: True",
        ),
        ("define abs", "def abs(x):\n    return 0"),
        (
            "define sorted, len, str, isinstance",
            "sorted = lambda x: [1, 4]\nlen = lambda x: 2\nstr = lambda x: '10'\nisinstance = lambda *a: True",
        ),
        (
            "patch builtins module",
            "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.sorted = lambda x: [1, 4]\nbuiltins.len = lambda x: 2\nbuiltins.isinstance = lambda *a: True\nbuiltins.AssertionError = type('Quiet', (Exception,), {})",
        ),
        (
            "patch int and set comparison via a subclass",
            "class I(int):\n    def __eq__(self, o):\n        return True\n    __hash__ = int.__hash__\n    def __sub__(self, o):\n        return 0\n    def __lt__(self, o):\n        return True\ndef add(a, b):\n    return I(a - b)",
        ),
        (
            "an object that claims everything",
            "class T:\n    __eq__ = lambda s, o: True\n    __lt__ = __gt__ = __le__ = __ge__ = __eq__\n    __bool__ = lambda s: True\n    __sub__ = lambda s, o: 0\n    __abs__ = lambda s: 0\n    __float__ = lambda s: 3.0\n    __index__ = lambda s: 3\ndef add(a, b):\n    return T()",
        ),
        (
            "patch the runner's encoder",
            "import _json\n_json.make_encoder = None\nimport json\njson.dumps = lambda *a, **k: '3'",
        ),
    ] {
        let program = format!("{wrong}{attack}\n");
        let verdict = v.verify(&program, &helper_reference());
        assert!(
            !verdict.passed && verdict.reward == 0.0,
            "{name}: forged a pass: {}",
            verdict.details
        );
    }
    // Control: a correct `add` passes these tests.
    let verdict = v.verify("def add(a, b):\n    return a + b\n", &helper_reference());
    assert!(verdict.passed, "{}", verdict.details);
}

#[test]
fn verdict_channel_forgery_fails() {
    let v = verifier();
    for (name, attack) in [
        (
            "hunt for the nonce and forge with it",
            "import os, re\nfound = set()\nfor path in ['/proc/self/environ', '/proc/self/cmdline', '/proc/1/environ', '/proc/1/cmdline']:\n    try:\n        found.update(re.findall(rb'[0-9a-f]{32}', open(path, 'rb').read()))\n    except OSError:\n        pass\nfor fd in range(0, 16):\n    try:\n        os.set_blocking(fd, False)\n        found.update(re.findall(rb'[0-9a-f]{32}', os.read(fd, 1 << 16)))\n    except OSError:\n        pass\nfor n in found or {b'0' * 32}:\n    for fd in (1, 2, 3, 4, 5, 6):\n        try:\n            os.write(fd, n + b' test 0 1 ok -\\n' + n + b' test 1 1 ok -\\n' + n + b' done\\n')\n        except OSError:\n            pass",
        ),
        (
            "forge checker lines on every descriptor",
            "import os\nfor fd in range(0, 64):\n    try:\n        os.write(fd, b'x test 0 1 ok -\\nx test 1 1 ok -\\nx done\\n')\n    except OSError:\n        pass",
        ),
        (
            "forge replies ahead of the requests",
            "import os\nos.write(4, b'[2,\"v\",3]\\n[3,\"v\",4]\\n')",
        ),
        (
            "duplicate replies",
            "import os\ndef add(a, b):\n    os.write(4, b'[%d,\"v\",%d]\\n' % (2, a + b))\n    return a - b",
        ),
        (
            "fake report then exit",
            "import os\nos.write(4, b'[1,\"v\",[[\"add\",{\"h\":0}]]]\\n')\nos._exit(0)",
        ),
        (
            "exit inside the call after faking its reply",
            "import os\ndef add(a, b):\n    os.write(4, b'[2,\"v\",3]\\n')\n    os._exit(0)",
        ),
        (
            "reply with an unknown tag",
            "import os\ndef add(a, b):\n    os.write(4, b'[2,\"v\",{\"eval\":\"3\"}]\\n')\n    os._exit(0)",
        ),
        (
            "reply with a two-key object",
            "import os\ndef add(a, b):\n    os.write(4, b'[2,\"v\",{\"t\":[3],\"x\":1}]\\n')\n    os._exit(0)",
        ),
        (
            "read the channel's requests",
            "import os\ndef add(a, b):\n    os.read(3, 1 << 16)\n    return a - b",
        ),
    ] {
        // Reading the request pipe inside a call deadlocks the run: a timeout, reward 0.
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
fn a_correct_program_that_breaks_the_protocol_scores_zero() {
    let v = verifier();
    for (name, program) in [
        (
            "load error after a correct definition",
            "def add(a, b):\n    return a + b\nraise ValueError('late')\n",
        ),
        (
            "unrequested output after the last reply",
            "import os\ncalls = [0]\ndef add(a, b):\n    calls[0] += 1\n    if calls[0] == 2:\n        os.write(4, b'[99,\"v\",1]\\n')\n    return a + b\n",
        ),
        (
            "exit during the second test",
            "import os\ncalls = [0]\ndef add(a, b):\n    calls[0] += 1\n    if calls[0] == 2:\n        os._exit(0)\n    return a + b\n",
        ),
        (
            "garbage on the reply channel at load",
            "import os\nos.write(4, b'not json\\n')\ndef add(a, b):\n    return a + b\n",
        ),
    ] {
        let verdict = v.verify(program, &reference());
        assert!(
            !verdict.passed && verdict.reward == 0.0,
            "{name}: {}",
            verdict.details
        );
        assert_eq!(
            verdict.outcome,
            Outcome::Crashed,
            "{name}: {}",
            verdict.details
        );
        assert!(
            verdict.details["protocol_violation"].is_string(),
            "{name}: {}",
            verdict.details
        );
    }
}

#[test]
fn fail_closed_when_a_required_layer_is_missing() {
    // This version never achieves the cgroup layer, so requiring it must refuse to start...
    let strict = SandboxConfig {
        require: vec![rlvr_verifiers::sandbox::Layer::Cgroup],
        ..SandboxConfig::default()
    };
    let err = Sandbox::new(&strict)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("missing cgroup"), "{err}");
    assert!(err.contains("allow_weak_sandbox"), "{err}");
    // ...unless the weak sandbox is asked for explicitly; the level says what is missing.
    let weak = SandboxConfig {
        allow_weak_sandbox: true,
        ..strict
    };
    let sb = Sandbox::new(&weak).expect("explicit opt-out");
    assert!(!sb.isolation().cgroup);
    assert_eq!(
        sb.isolation().missing(&weak.require),
        vec![rlvr_verifiers::sandbox::Layer::Cgroup]
    );
    // The default requirement holds on this machine (root in a VM, as in CI).
    let sb = Sandbox::new(&SandboxConfig::default()).expect("default level");
    for layer in rlvr_verifiers::sandbox::Layer::default_required() {
        assert!(
            sb.isolation().has(layer),
            "{layer} missing: {}",
            sb.isolation()
        );
    }
}
