//! Runs untrusted Python in a contained child process. This module is the only place in the crate
//! that starts processes.
//!
//! # What is contained
//! - **Time:** a wall-clock timeout kills the whole process group (and, with a PID namespace,
//!   every descendant, since they die with the namespace's init); `RLIMIT_CPU` backs it up.
//! - **Resources:** rlimits on address space, process count, file size and open files; captured
//!   stdout/stderr are capped (the rest is drained and dropped).
//! - **Filesystem:** a fresh temporary working directory, removed afterwards; as root the program
//!   runs as a throwaway uid that owns only that directory, and a private mount namespace puts
//!   empty read-only `tmpfs` over `/tmp`, `/var/tmp` and `/dev/shm`.
//! - **Network:** a new network namespace (no interfaces up) where the OS allows it.
//! - **Other processes:** a PID namespace and a different uid: the program cannot see or signal
//!   the verifier or the host.
//! - **Environment:** cleared, except a minimal `PATH`, `HOME` (the working directory), `LANG`
//!   and a fixed `PYTHONHASHSEED`.
//! - **Verdicts:** the [`harness`](HARNESS) reports over fd 3 with a per-run random nonce; stdout
//!   and the exit status never count. Python's audit hooks block frame/gc/ctypes introspection,
//!   `/proc`, sockets, process creation, signals and writes outside the directory.
//!
//! # What is not contained
//! - Kernel exploits, and CPU time taken from other work on the machine (there is no cgroup).
//! - Without root and without unprivileged user namespaces, only rlimits, the process group and
//!   the audit hooks remain: **no network isolation**. [`Sandbox::isolation`] says which layers
//!   are active; the crate README lists what is used where.
//! - A program that defeats CPython's audit hooks (an interpreter memory-corruption bug) could
//!   read the nonce and forge results; the OS layers still hold.

mod isolation;

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};
pub use isolation::Isolation;
use isolation::{ChildPlan, Limits};

/// The Python test harness run inside the sandbox (see its header comment).
pub const HARNESS: &str = include_str!("harness.py");

/// First uid of the private range used when running as root.
const UID_BASE: u32 = 0x6000_0000;
/// Size of the private uid range (one uid per concurrent run).
const UID_RANGE: u32 = 1 << 16;
/// How long the namespace's subreaper gets to collect everything after its init is killed.
const REAP_GRACE: Duration = Duration::from_secs(1);
/// How long to wait for output pipes to close after the process is gone.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Resource limits of the sandbox (`[verifier.sandbox]` in TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Python interpreter (a name on `PATH` or a path; default `python3`).
    #[serde(default = "default_python")]
    pub python: String,
    /// Address-space limit in MiB (default 1024).
    #[serde(default = "default_memory")]
    pub memory_mb: u64,
    /// Process-count limit of the run's uid (default 16).
    #[serde(default = "default_processes")]
    pub max_processes: u64,
    /// Largest file the program may write, MiB (default 16).
    #[serde(default = "default_file")]
    pub max_file_mb: u64,
    /// Open-file limit (default 64).
    #[serde(default = "default_open_files")]
    pub max_open_files: u64,
    /// Bytes of stdout and of stderr kept (default 64 KiB each).
    #[serde(default = "default_output")]
    pub max_output_bytes: usize,
}

fn default_python() -> String {
    "python3".into()
}
fn default_memory() -> u64 {
    1024
}
fn default_processes() -> u64 {
    16
}
fn default_file() -> u64 {
    16
}
fn default_open_files() -> u64 {
    64
}
fn default_output() -> usize {
    64 << 10
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            python: default_python(),
            memory_mb: default_memory(),
            max_processes: default_processes(),
            max_file_mb: default_file(),
            max_open_files: default_open_files(),
            max_output_bytes: default_output(),
        }
    }
}

/// What a sandboxed run left behind.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Exit code (`128 + signal` when killed through a PID namespace's init), `None` if killed
    /// by a signal directly.
    pub code: Option<i32>,
    /// The signal that ended the process, if any.
    pub signal: Option<i32>,
    /// Whether the wall-clock timeout fired.
    pub timed_out: bool,
    /// Captured stdout (capped).
    pub stdout: Vec<u8>,
    /// Captured stderr (capped).
    pub stderr: Vec<u8>,
    /// What arrived on the verdict channel (fd 3), capped.
    pub channel: Vec<u8>,
    /// Whether stdout or stderr hit the cap.
    pub truncated: bool,
    /// Wall-clock time of the run.
    pub wall: Duration,
}

/// A ready-to-use sandbox: an interpreter that starts under the strongest available isolation.
#[derive(Debug, Clone)]
pub struct Sandbox {
    config: SandboxConfig,
    python: PathBuf,
    isolation: Isolation,
}

type ProbeCache = Mutex<Vec<(String, std::result::Result<(PathBuf, Isolation), String>)>>;

impl Sandbox {
    /// Finds the interpreter and the strongest isolation it starts under (probed once per
    /// interpreter name and cached for the process).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a zero limit; [`Error::Sandbox`] when no interpreter starts.
    pub fn new(config: &SandboxConfig) -> Result<Sandbox> {
        for (field, v) in [
            ("memory_mb", config.memory_mb),
            ("max_processes", config.max_processes),
            ("max_file_mb", config.max_file_mb),
            ("max_open_files", config.max_open_files),
        ] {
            if v == 0 {
                return Err(Error::InvalidConfig {
                    field: format!("code.sandbox.{field}"),
                    reason: "must be > 0".into(),
                });
            }
        }
        static CACHE: OnceLock<ProbeCache> = OnceLock::new();
        let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
        let mut guard = cache.lock().map_err(|_| Error::Sandbox {
            reason: "probe cache poisoned".into(),
        })?;
        let found = match guard.iter().find(|(k, _)| *k == config.python) {
            Some((_, r)) => r.clone(),
            None => {
                let r = probe(config);
                guard.push((config.python.clone(), r.clone()));
                r
            }
        };
        let (python, isolation) = found.map_err(|reason| Error::Sandbox { reason })?;
        Ok(Sandbox {
            config: config.clone(),
            python,
            isolation,
        })
    }

    /// The isolation layers in force.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// The interpreter used.
    pub fn python(&self) -> &Path {
        &self.python
    }

    /// Runs `python <args>` in a fresh directory with `stdin` fed to it, killed after `timeout`.
    ///
    /// # Errors
    /// [`Error::Sandbox`] when the process cannot be started (never for what the program does).
    pub fn run(&self, args: &[&str], stdin: &[u8], timeout: Duration) -> Result<RunOutput> {
        run_with(
            &self.python,
            self.isolation,
            &self.config,
            args,
            stdin,
            timeout,
        )
    }
}

fn sandbox_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Sandbox {
        reason: format!("{what}: {e}"),
    }
}

/// Tries interpreters × isolation levels, strongest isolation first.
fn probe(config: &SandboxConfig) -> std::result::Result<(PathBuf, Isolation), String> {
    let mut pythons = Vec::new();
    let resolved = Command::new(&config.python)
        .args(["-c", "import sys; print(sys.executable)"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    pythons.extend(resolved);
    if config.python.contains('/') {
        pythons.push(PathBuf::from(&config.python));
    }
    // A root-only interpreter (e.g. under /root) cannot run as the throwaway uid; the system one
    // usually can.
    for p in ["/usr/bin/python3", "/usr/local/bin/python3"] {
        pythons.push(PathBuf::from(p));
    }
    pythons.retain(|p| p.is_file());
    pythons.dedup();
    if pythons.is_empty() {
        return Err(format!(
            "no Python interpreter found for `{}`",
            config.python
        ));
    }
    // SAFETY: geteuid has no preconditions.
    let is_root = unsafe { libc::geteuid() } == 0;
    let mut last = String::new();
    for iso in Isolation::candidates(is_root) {
        for py in &pythons {
            match run_with(
                py,
                iso,
                config,
                &["-c", "print('ok')"],
                b"",
                Duration::from_secs(20),
            ) {
                Ok(out) if out.code == Some(0) && out.stdout.starts_with(b"ok") => {
                    return Ok((py.clone(), iso));
                }
                Ok(out) => {
                    last = format!(
                        "{} under {}: exit {:?}, {}",
                        py.display(),
                        iso.describe(),
                        out.code,
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                }
                Err(e) => last = format!("{} under {}: {e}", py.display(), iso.describe()),
            }
        }
    }
    Err(format!(
        "no interpreter starts in the sandbox; last attempt: {last}"
    ))
}

fn run_with(
    python: &Path,
    isolation: Isolation,
    config: &SandboxConfig,
    args: &[&str],
    stdin: &[u8],
    timeout: Duration,
) -> Result<RunOutput> {
    static NEXT_UID: AtomicU32 = AtomicU32::new(0);
    let uid = UID_BASE + NEXT_UID.fetch_add(1, Ordering::Relaxed) % UID_RANGE;
    let dir = tempfile::Builder::new()
        .prefix("rlvr-sandbox-")
        .tempdir()
        .map_err(|e| sandbox_err("temporary directory", e))?;
    if isolation.drop_uid {
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(uid))
            .map_err(|e| sandbox_err("chown of the working directory", e))?;
    }
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(sandbox_err("pipe", std::io::Error::last_os_error()));
    }
    // SAFETY: both descriptors were just created and are owned here.
    let (chan_read, chan_write) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    let cstr = |s: &str| CString::new(s).map_err(|e| sandbox_err("path", e));
    let tmp_mounts = ["/tmp", "/var/tmp", "/dev/shm"]
        .into_iter()
        .filter(|p| Path::new(p).is_dir())
        .map(cstr)
        .collect::<Result<Vec<_>>>()?;
    let secs = timeout.as_secs_f64().ceil() as u64;
    let plan = ChildPlan {
        isolation,
        limits: Limits {
            cpu_s: secs + 1,
            address_space: config.memory_mb << 20,
            processes: config.max_processes,
            file_size: config.max_file_mb << 20,
            open_files: config.max_open_files,
        },
        uid,
        channel_fd: fds[1],
        tmp_mounts,
        tmpfs: cstr("tmpfs")?,
        tmpfs_opts: cstr("size=16k,mode=0555")?,
        root: cstr("/")?,
    };
    let mut cmd = Command::new(python);
    cmd.args(["-s", "-B"])
        .args(args)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", dir.path())
        .env("LANG", "C.UTF-8")
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: `enter` only makes async-signal-safe syscalls on data prepared above.
    unsafe {
        cmd.pre_exec(move || isolation::enter(&plan));
    }
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| sandbox_err("spawn", e))?;
    drop(chan_write);
    let pgid = i32::try_from(child.id()).map_err(|e| sandbox_err("pid", e))?;

    let cap = config.max_output_bytes;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let stdout = reader(child.stdout.take(), cap, done_tx.clone());
    let stderr = reader(child.stderr.take(), cap, done_tx.clone());
    let channel = reader(Some(chan_read), 1 << 20, done_tx);
    if let Some(mut w) = child.stdin.take() {
        let input = stdin.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&input);
        });
    }
    let (status_tx, status_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = status_tx.send(child.wait());
    });
    let (status, timed_out) = match status_rx.recv_timeout(timeout) {
        Ok(s) => (s, false),
        Err(_) => {
            // With a PID namespace, killing its init tears the namespace down and lets the
            // subreaper above it collect every descendant before it exits; the process group
            // is the fallback.
            if isolation.pid_ns {
                kill_children(pgid);
            }
            let status = match status_rx.recv_timeout(REAP_GRACE) {
                Ok(s) => s,
                Err(_) => {
                    // SAFETY: signals the process group created by setsid in the child.
                    unsafe { libc::killpg(pgid, libc::SIGKILL) };
                    status_rx.recv().map_err(|e| sandbox_err("wait", e))?
                }
            };
            (status, true)
        }
    };
    // Stragglers in the group (without a PID namespace) go too.
    // SAFETY: as above; ESRCH when the group is gone is fine.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    let status = status.map_err(|e| sandbox_err("wait", e))?;
    let deadline = Instant::now() + DRAIN_GRACE;
    for _ in 0..3 {
        let left = deadline.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            break;
        }
    }
    let wall = start.elapsed();
    use std::os::unix::process::ExitStatusExt;
    let (out, out_trunc) = take(&stdout);
    let (err, err_trunc) = take(&stderr);
    let (chan, _) = take(&channel);
    drop(dir);
    Ok(RunOutput {
        code: status.code(),
        signal: status.signal(),
        timed_out,
        stdout: out,
        stderr: err,
        channel: chan,
        truncated: out_trunc || err_trunc,
        wall,
    })
}

/// SIGKILLs the children of `pid` (listed in `/proc/<pid>/task/<pid>/children`).
fn kill_children(pid: i32) {
    let path = format!("/proc/{pid}/task/{pid}/children");
    let Ok(list) = std::fs::read_to_string(path) else {
        return;
    };
    for child in list
        .split_whitespace()
        .filter_map(|c| c.parse::<i32>().ok())
    {
        // SAFETY: kill has no memory-safety preconditions; a vanished pid gives ESRCH.
        unsafe { libc::kill(child, libc::SIGKILL) };
    }
}

type Captured = Arc<Mutex<(Vec<u8>, bool)>>;

/// Reads a pipe to its end on a thread, keeping the first `cap` bytes.
fn reader<R: Read + Send + 'static>(
    pipe: Option<R>,
    cap: usize,
    done: mpsc::Sender<()>,
) -> Captured {
    let buf: Captured = Arc::new(Mutex::new((Vec::new(), false)));
    let out = Arc::clone(&buf);
    std::thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut chunk = [0u8; 8192];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if let Ok(mut b) = out.lock() {
                            let room = cap.saturating_sub(b.0.len());
                            let keep = room.min(n);
                            b.0.extend_from_slice(&chunk[..keep]);
                            b.1 |= keep < n;
                        }
                    }
                }
            }
        }
        let _ = done.send(());
    });
    buf
}

fn take(c: &Captured) -> (Vec<u8>, bool) {
    c.lock()
        .map(|mut b| (std::mem::take(&mut b.0), b.1))
        .unwrap_or_default()
}
