//! Runs untrusted Python in a contained child process, and the tests against it in a separate
//! trusted one. This module is the only place in the crate that starts processes.
//!
//! # Two processes per check
//! - The **runner** ([`RUNNER`], the candidate's process) loads the program and answers requests
//!   ("call handle 3 with these arguments", "read attribute `x`", "iterate") with values in a
//!   strict typed JSON encoding. It never holds an expected value, a comparison, or the verdict
//!   channel's nonce, so nothing the program does to its own interpreter (patching builtins,
//!   `__eq__`, `json`, the runner itself) can change a verdict: it can only choose what its
//!   functions return.
//! - The **checker** ([`CHECKER`], trusted) receives the job and the nonce on stdin, runs the
//!   test statements, setup code and `check` itself, with each name the program defined bound
//!   to a proxy that forwards to the runner, and decodes every reply into fresh builtin values.
//!   It reports on its own pipe, which the runner's process never holds.
//!
//! # What contains the runner (OS layers, none depending on Python's audit hooks)
//! - **Namespaces:** network (no interfaces up), PID (its own procfs; every descendant dies with
//!   the namespace's init), mount, IPC and UTS.
//! - **Filesystem:** `pivot_root` into a minimal root built per run: read-only binds of `/usr`
//!   (and the interpreter's prefix), the top-level symlinks, `/etc/ld.so.cache`, four device
//!   nodes, a fresh `/proc`, and `/work`, a tmpfs with size and inode limits that is the only
//!   writable place and vanishes with the run.
//! - **Privileges:** a throwaway uid/gid per run, `PR_SET_NO_NEW_PRIVS`, and the seccomp filters
//!   of `seccomp.rs` (no fork/exec/ptrace, sockets only `AF_UNIX`, no mount/namespace/keyring/BPF
//!   /io_uring calls), installed before the program exists.
//! - **Descriptors:** everything above the channel (fds 3 and 4) is closed at `exec`.
//! - **Resources:** rlimits on CPU, address space, processes, file size and open files; a
//!   wall-clock limit that kills both processes; captured output is capped; at most
//!   [`SandboxConfig::max_live`] checks run at once per [`Sandbox`].
//! - **Interpreter:** `python3 -s -S -P -B` with a cleared environment (`-I -S` on interpreters
//!   without `-P`).
//!
//! # Fail closed
//! [`Sandbox::new`] probes once per interpreter for the strongest level that works, and refuses
//! (naming the missing layers) when it lacks any of [`SandboxConfig::require`], unless
//! [`SandboxConfig::allow_weak_sandbox`] is set. [`Sandbox::isolation`] reports what is in force.
//!
//! # What is not contained
//! Kernel exploits; a cgroup is used only where the host delegates the `pids` and `memory`
//! controllers (not yet: the [`Layer::Cgroup`] layer is never achieved by this version).

mod isolation;
mod seccomp;

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};
use isolation::{ChildPlan, Limits, RootPlan};
pub use isolation::{Isolation, Layer};

/// The candidate-side runner (see its header comment).
pub const RUNNER: &str = include_str!("runner.py");
/// The trusted checker (see its header comment).
pub const CHECKER: &str = include_str!("checker.py");

/// First uid of the private range used when running as root.
const UID_BASE: u32 = 0x6000_0000;
/// Size of the private uid range (two uids per concurrent run).
const UID_RANGE: u32 = 1 << 16;
/// How long the namespace's subreaper gets to collect everything after its init is killed.
const REAP_GRACE: Duration = Duration::from_secs(1);
/// How long to wait for output pipes to close after the processes are gone.
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// The most a run can take past its wall-clock limit: killing, reaping and draining. A batch's
/// per-item limit is the run's limit plus this ([`crate::VerifierConfig::item_time_limit`]).
pub const KILL_GRACE: Duration = Duration::from_secs(3);

/// Resource limits and the required isolation of the sandbox (`[verifier.sandbox]` in TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Python interpreter (a name on `PATH` or a path; default `python3`).
    #[serde(default = "default_python")]
    pub python: String,
    /// Address-space limit in MiB (default 1024).
    #[serde(default = "default_memory")]
    pub memory_mb: u64,
    /// Process-count limit of the run's uid (default 16; with seccomp the program cannot create
    /// processes at all, threads still count).
    #[serde(default = "default_processes")]
    pub max_processes: u64,
    /// Largest file the program may write, MiB (default 16).
    #[serde(default = "default_file")]
    pub max_file_mb: u64,
    /// Size of the per-run tmpfs `/work`, MiB (default 32).
    #[serde(default = "default_work_mb")]
    pub work_dir_mb: u64,
    /// Inodes of the per-run tmpfs `/work` (default 512).
    #[serde(default = "default_work_inodes")]
    pub work_dir_inodes: u64,
    /// Open-file limit (default 64).
    #[serde(default = "default_open_files")]
    pub max_open_files: u64,
    /// Bytes of stdout and of stderr kept (default 64 KiB each).
    #[serde(default = "default_output")]
    pub max_output_bytes: usize,
    /// Checks running at once in one [`Sandbox`] (0 = twice the number of CPUs, the default,
    /// matching `verify_batch`'s workers). A run waits for a free slot, so abandoned workers
    /// never add sandboxes beyond this.
    #[serde(default)]
    pub max_live: usize,
    /// Layers that must be in force, or [`Sandbox::new`] refuses (default: all but `cgroup`).
    #[serde(default = "Layer::default_required")]
    pub require: Vec<Layer>,
    /// Run under whatever isolation the host offers, even below `require` (default false).
    #[serde(default)]
    pub allow_weak_sandbox: bool,
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
fn default_work_mb() -> u64 {
    32
}
fn default_work_inodes() -> u64 {
    512
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
            work_dir_mb: default_work_mb(),
            work_dir_inodes: default_work_inodes(),
            max_open_files: default_open_files(),
            max_output_bytes: default_output(),
            max_live: 0,
            require: Layer::default_required(),
            allow_weak_sandbox: false,
        }
    }
}

/// What a sandboxed process left behind.
#[derive(Debug, Clone, Default)]
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
    /// Whether stdout or stderr hit the cap.
    pub truncated: bool,
    /// Wall-clock time of the run.
    pub wall: Duration,
}

/// What a check (checker + runner) left behind.
#[derive(Debug, Clone, Default)]
pub struct CheckOutput {
    /// The checker's report lines (its fd 5), capped at 1 MiB.
    pub channel: Vec<u8>,
    /// The candidate's process (the runner and the program).
    pub program: RunOutput,
    /// The trusted checker's process.
    pub checker: RunOutput,
    /// Whether the wall-clock timeout fired.
    pub timed_out: bool,
    /// Wall-clock time of the check.
    pub wall: Duration,
}

/// Counts the checks in flight and makes new ones wait for a free slot.
#[derive(Debug)]
struct Live {
    count: Mutex<usize>,
    freed: Condvar,
    cap: usize,
}

struct Slot<'a>(&'a Live);

impl Live {
    fn acquire(&self) -> Slot<'_> {
        let mut n = self.count.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= self.cap {
            n = self.freed.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        Slot(self)
    }

    /// Checks running now.
    fn current(&self) -> usize {
        *self.count.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut n = self.0.count.lock().unwrap_or_else(|e| e.into_inner());
        *n -= 1;
        self.0.freed.notify_one();
    }
}

/// What the minimal root binds, found once per interpreter.
#[derive(Debug, Clone, PartialEq)]
struct RootSpec {
    /// Host directories bound read-only at the same path.
    dirs: Vec<PathBuf>,
    /// Top-level symlinks recreated as they are (`/lib -> usr/lib`).
    links: Vec<(PathBuf, PathBuf)>,
    /// Single files bound at the same path.
    files: Vec<PathBuf>,
}

/// Starts a script compiled ahead of time: `argv[1]` is its marshalled code object in hex (made
/// by the same interpreter in [`precompile`]), so no run pays for compiling the runner and the
/// checker from source (about 6 ms of CPU per check).
const BOOT: &str = "import marshal, sys; exec(marshal.loads(bytes.fromhex(sys.argv.pop(1))))";

/// The runner and checker as the interpreter's marshalled code objects, hex-encoded; `None` for
/// a script that could not be precompiled (it then runs from source).
fn precompile(python: &Path, flags: &[&str]) -> (Option<String>, Option<String>) {
    let one = |src: &str, name: &str| -> Option<String> {
        let script = format!(
            "import sys, marshal; sys.stdout.write(marshal.dumps(compile(sys.stdin.read(), '<{name}>', 'exec')).hex())"
        );
        let mut child = Command::new(python)
            .args(flags)
            .args(["-c", &script])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        child.stdin.take()?.write_all(src.as_bytes()).ok()?;
        let out = child.wait_with_output().ok()?;
        let hex = String::from_utf8(out.stdout).ok()?;
        // One argument may hold at most 128 KiB on Linux.
        (out.status.success() && !hex.is_empty() && hex.len() < 120 << 10).then_some(hex)
    };
    (one(RUNNER, "rlvr-runner"), one(CHECKER, "rlvr-checker"))
}

/// `-c` arguments that start `source` (precompiled when `code` is there).
fn script_args(source: &str, code: Option<&String>) -> Vec<String> {
    match code {
        Some(hex) => vec!["-c".into(), BOOT.into(), hex.clone()],
        None => vec!["-c".into(), source.into()],
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Probed {
    python: PathBuf,
    flags: Vec<&'static str>,
    /// [`precompile`]d runner and checker.
    code: Arc<(Option<String>, Option<String>)>,
    isolation: Isolation,
    /// Why each stronger level failed.
    failures: Vec<String>,
}

/// A ready-to-use sandbox: an interpreter that starts under the strongest available isolation.
#[derive(Debug, Clone)]
pub struct Sandbox {
    config: SandboxConfig,
    probed: Probed,
    root: Arc<RootSpec>,
    filters: Arc<String>,
    stage: Arc<PathBuf>,
    live: Arc<Live>,
}

type ProbeCache = Mutex<Vec<(String, std::result::Result<Probed, String>)>>;

fn sandbox_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Sandbox {
        reason: format!("{what}: {e}"),
    }
}

impl Sandbox {
    /// Finds the interpreter and the strongest isolation it starts under (probed once per
    /// interpreter name and cached for the process), then checks it against
    /// [`SandboxConfig::require`].
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a zero limit; [`Error::Sandbox`] when no interpreter starts,
    /// or when a required layer is missing and `allow_weak_sandbox` is off (the message names
    /// the missing layers and why each stronger level failed).
    pub fn new(config: &SandboxConfig) -> Result<Sandbox> {
        for (field, v) in [
            ("memory_mb", config.memory_mb),
            ("max_processes", config.max_processes),
            ("max_file_mb", config.max_file_mb),
            ("work_dir_mb", config.work_dir_mb),
            ("work_dir_inodes", config.work_dir_inodes),
            ("max_open_files", config.max_open_files),
        ] {
            if v == 0 {
                return Err(Error::InvalidConfig {
                    field: format!("code.sandbox.{field}"),
                    reason: "must be > 0".into(),
                });
            }
        }
        let filters = Arc::new(seccomp::filters_hex()?);
        let stage = std::env::temp_dir().join("rlvr-sandbox-root");
        std::fs::create_dir_all(&stage).map_err(|e| sandbox_err("stage directory", e))?;
        let cap = if config.max_live == 0 {
            2 * std::thread::available_parallelism().map_or(2, |p| p.get())
        } else {
            config.max_live
        };
        static CACHE: OnceLock<ProbeCache> = OnceLock::new();
        let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
        let mut guard = cache.lock().map_err(|_| Error::Sandbox {
            reason: "probe cache poisoned".into(),
        })?;
        let (probed, root) = match guard.iter().find(|(k, _)| *k == config.python) {
            Some((_, r)) => {
                let p = r.clone().map_err(|reason| Error::Sandbox { reason })?;
                let root = root_spec(&p.python, &p.flags);
                (p, root)
            }
            None => {
                let r = probe(config, &filters, &stage);
                guard.push((config.python.clone(), r.clone().map(|x| x.0)));
                r.map_err(|reason| Error::Sandbox { reason })?
            }
        };
        drop(guard);
        let missing = probed.isolation.missing(&config.require);
        if !missing.is_empty() && !config.allow_weak_sandbox {
            let names: Vec<&str> = missing.iter().map(|l| l.name()).collect();
            return Err(Error::Sandbox {
                reason: format!(
                    "isolation below the required level: missing {} (achieved: {}). Stronger \
                     levels failed with: {}. Set `allow_weak_sandbox = true` under \
                     [verifier.sandbox] to run anyway, or lower `require`",
                    names.join(", "),
                    probed.isolation.describe(),
                    if probed.failures.is_empty() {
                        "(not tried: this host offers no such layer)".to_string()
                    } else {
                        probed.failures.join("; ")
                    }
                ),
            });
        }
        Ok(Sandbox {
            config: config.clone(),
            probed,
            root: Arc::new(root),
            filters,
            stage: Arc::new(stage),
            live: Arc::new(Live {
                count: Mutex::new(0),
                freed: Condvar::new(),
                cap,
            }),
        })
    }

    /// The isolation layers in force (log this: it is the level training actually ran under).
    pub fn isolation(&self) -> Isolation {
        self.probed.isolation
    }

    /// The interpreter used.
    pub fn python(&self) -> &Path {
        &self.probed.python
    }

    /// The most checks this sandbox runs at once.
    pub fn max_live(&self) -> usize {
        self.live.cap
    }

    /// Checks running right now.
    pub fn live(&self) -> usize {
        self.live.current()
    }

    /// Runs `source` as `__main__` in the candidate's sandbox (all OS layers, seccomp included,
    /// but no checker), with `stdin` fed to it, killed after `timeout`.
    ///
    /// # Errors
    /// [`Error::Sandbox`] when the process cannot be started (never for what the program does).
    pub fn run(&self, source: &str, stdin: &[u8], timeout: Duration) -> Result<RunOutput> {
        let _slot = self.live.acquire();
        run_raw(
            &self.probed,
            &self.root,
            &self.filters,
            &self.stage,
            &self.config,
            source,
            stdin,
            timeout,
        )
    }

    /// Runs the trusted checker on `spec` (a JSON job with the nonce, program and tests) against
    /// the program in the candidate's sandbox; both are killed after `timeout`.
    ///
    /// # Errors
    /// [`Error::Sandbox`] when a process cannot be started (never for what the program does).
    pub fn check(&self, spec: &[u8], timeout: Duration) -> Result<CheckOutput> {
        let _slot = self.live.acquire();
        run_check(
            &self.probed,
            &self.root,
            &self.filters,
            &self.stage,
            &self.config,
            spec,
            timeout,
        )
    }
}

/// The interpreter's real path, base prefix and whether it takes `-P`.
fn resolve(python: &Path) -> Option<(PathBuf, PathBuf, bool)> {
    let out = Command::new(python)
        .args([
            "-I",
            "-S",
            "-c",
            "import sys, os; print(os.path.realpath(sys.executable)); print(sys.base_prefix); print(sys.version_info >= (3, 11))",
        ])
        .env_clear()
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = text.lines();
    let exe = PathBuf::from(lines.next()?.trim());
    let prefix = PathBuf::from(lines.next()?.trim());
    let dash_p = lines.next()?.trim() == "True";
    exe.is_file().then_some((exe, prefix, dash_p))
}

fn root_spec(python: &Path, _flags: &[&str]) -> RootSpec {
    let mut dirs = Vec::new();
    let mut links = Vec::new();
    for top in [
        "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
    ] {
        let p = Path::new(top);
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(t) = std::fs::read_link(p) {
                    links.push((t, p.to_path_buf()));
                }
            }
            Ok(m) if m.is_dir() => dirs.push(p.to_path_buf()),
            _ => {}
        }
    }
    if let Some((exe, prefix, _)) = resolve(python) {
        for extra in [
            prefix,
            exe.parent().map(Path::to_path_buf).unwrap_or_default(),
        ] {
            let covered = dirs.iter().any(|d| extra.starts_with(d))
                || links.iter().any(|(_, l)| extra.starts_with(l));
            if !covered && extra.is_absolute() && extra.is_dir() && extra != Path::new("/") {
                dirs.push(extra);
            }
        }
    }
    let files = ["/etc/ld.so.cache", "/etc/localtime"]
        .into_iter()
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .collect();
    RootSpec { dirs, links, files }
}

/// Tries isolation levels × interpreters, strongest isolation first, each with a real check.
fn probe(
    config: &SandboxConfig,
    filters: &str,
    stage: &Path,
) -> std::result::Result<(Probed, RootSpec), String> {
    let mut pythons = Vec::new();
    let which = Command::new(&config.python)
        .args(["-c", "import sys; print(sys.executable)"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    pythons.extend(which);
    if config.python.contains('/') {
        pythons.push(PathBuf::from(&config.python));
    }
    for p in ["/usr/bin/python3", "/usr/local/bin/python3"] {
        pythons.push(PathBuf::from(p));
    }
    pythons.retain(|p| p.is_file());
    pythons.dedup();
    let pythons: Vec<(
        PathBuf,
        Vec<&'static str>,
        Arc<(Option<String>, Option<String>)>,
    )> = pythons
        .into_iter()
        .filter_map(|p| {
            let (_, _, dash_p) = resolve(&p)?;
            let flags = if dash_p {
                vec!["-s", "-S", "-P", "-B"]
            } else {
                vec!["-I", "-S", "-B"]
            };
            let code = Arc::new(precompile(&p, &flags));
            Some((p, flags, code))
        })
        .collect();
    if pythons.is_empty() {
        return Err(format!(
            "no Python interpreter found for `{}`",
            config.python
        ));
    }
    // SAFETY: geteuid has no preconditions.
    let is_root = unsafe { libc::geteuid() } == 0;
    let nonce = "0123456789abcdef";
    let spec = serde_json::json!({
        "nonce": nonce,
        "program": "def f():\n    return [1, (2, 3.5), {'a': None}]\n",
        "tests": ["assert f() == [1, (2, 3.5), {'a': None}]"],
    })
    .to_string();
    let mut failures = Vec::new();
    for iso in Isolation::candidates(is_root) {
        for (py, flags, code) in &pythons {
            let root = root_spec(py, flags);
            let probed = Probed {
                python: py.clone(),
                flags: flags.clone(),
                code: Arc::clone(code),
                isolation: iso,
                failures: Vec::new(),
            };
            let r = run_check(
                &probed,
                &root,
                filters,
                stage,
                config,
                spec.as_bytes(),
                Duration::from_secs(20),
            );
            match r {
                Ok(out) => {
                    let text = String::from_utf8_lossy(&out.channel).to_string();
                    let want_seccomp = if iso.seccomp { "2" } else { "" };
                    let hello_ok = text.lines().next().is_some_and(|l| {
                        let f: Vec<&str> = l.split(' ').collect();
                        f.len() == 4
                            && f[0] == nonce
                            && f[1] == "hello"
                            && (!iso.seccomp || f[2] == want_seccomp)
                            && (!iso.no_new_privs || f[3] == "1")
                    });
                    if hello_ok
                        && text.contains(&format!("{nonce} test 0 1 ok"))
                        && text.ends_with(&format!("{nonce} done\n"))
                    {
                        return Ok((Probed { failures, ..probed }, root));
                    }
                    failures.push(format!(
                        "{} under [{}]: report {:?}, stderr {:?}",
                        py.display(),
                        iso.describe(),
                        text.trim(),
                        String::from_utf8_lossy(&out.program.stderr).trim()
                    ));
                }
                Err(e) => {
                    failures.push(format!("{} under [{}]: {e}", py.display(), iso.describe()))
                }
            }
        }
    }
    Err(format!(
        "no interpreter starts in the sandbox: {}",
        failures.join("; ")
    ))
}

fn cstr(s: impl AsRef<[u8]>) -> Result<CString> {
    CString::new(s.as_ref().to_vec()).map_err(|e| sandbox_err("path", e))
}

fn under(stage: &Path, p: &Path) -> Result<CString> {
    let rel = p.strip_prefix("/").unwrap_or(p);
    cstr(stage.join(rel).as_os_str().as_encoded_bytes())
}

fn root_plan(spec: &RootSpec, stage: &Path, config: &SandboxConfig, uid: u32) -> Result<RootPlan> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let add_dir = |p: &Path, dirs: &mut Vec<PathBuf>| {
        let mut acc = PathBuf::from("/");
        for c in p.components().skip(1) {
            acc.push(c);
            if !dirs.contains(&acc) {
                dirs.push(acc.clone());
            }
        }
    };
    for d in &spec.dirs {
        add_dir(d, &mut dirs);
    }
    for f in &spec.files {
        if let Some(parent) = f.parent() {
            add_dir(parent, &mut dirs);
        }
    }
    for d in ["/dev", "/proc", "/work", "/.old"] {
        add_dir(Path::new(d), &mut dirs);
    }
    let mut file_binds = Vec::new();
    for f in &spec.files {
        file_binds.push((cstr(f.as_os_str().as_encoded_bytes())?, under(stage, f)?));
    }
    for dev in ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"] {
        if Path::new(dev).exists() {
            file_binds.push((cstr(dev)?, under(stage, Path::new(dev))?));
        }
    }
    Ok(RootPlan {
        stage: cstr(stage.as_os_str().as_encoded_bytes())?,
        tmpfs: cstr("tmpfs")?,
        root_opts: cstr("size=256k,nr_inodes=512,mode=0755")?,
        work_opts: cstr(format!(
            "size={}m,nr_inodes={},mode=0700,uid={uid},gid={uid}",
            config.work_dir_mb, config.work_dir_inodes
        ))?,
        proc_fs: cstr("proc")?,
        dirs: dirs
            .iter()
            .map(|d| under(stage, d))
            .collect::<Result<_>>()?,
        links: spec
            .links
            .iter()
            .map(|(t, l)| Ok((cstr(t.as_os_str().as_encoded_bytes())?, under(stage, l)?)))
            .collect::<Result<_>>()?,
        ro_binds: spec
            .dirs
            .iter()
            .map(|d| Ok((cstr(d.as_os_str().as_encoded_bytes())?, under(stage, d)?)))
            .collect::<Result<_>>()?,
        file_binds,
        work: under(stage, Path::new("/work"))?,
        proc_dir: under(stage, Path::new("/proc"))?,
        old: under(stage, Path::new("/.old"))?,
        slash: cstr("/")?,
        old_in_new: cstr("/.old")?,
        work_in_new: cstr("/work")?,
    })
}

/// A pipe whose ends sit above every descriptor number a child is given (≥ 10), close-on-exec.
fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(sandbox_err("pipe", std::io::Error::last_os_error()));
    }
    let mut out = Vec::new();
    for fd in fds {
        // SAFETY: fd was just created and is owned here; F_DUPFD_CLOEXEC returns a new one.
        let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        // SAFETY: closing the original, which nothing else holds.
        unsafe { libc::close(fd) };
        if high == -1 {
            return Err(sandbox_err("pipe", std::io::Error::last_os_error()));
        }
        // SAFETY: `high` is a fresh descriptor owned by nobody else.
        out.push(unsafe { OwnedFd::from_raw_fd(high) });
    }
    let w = out
        .pop()
        .ok_or_else(|| sandbox_err("pipe", "missing end"))?;
    let r = out
        .pop()
        .ok_or_else(|| sandbox_err("pipe", "missing end"))?;
    Ok((r, w))
}

fn next_uids() -> (u32, u32) {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let k = NEXT.fetch_add(1, Ordering::Relaxed) % (UID_RANGE / 2);
    (UID_BASE + 2 * k, UID_BASE + 2 * k + 1)
}

/// A started process with its output being collected.
struct Started {
    pid: i32,
    status: mpsc::Receiver<std::io::Result<ExitStatus>>,
    stdout: Captured,
    stderr: Captured,
    done: mpsc::Receiver<()>,
    pid_ns: bool,
}

/// Everything the candidate's process needs besides its arguments.
struct Spawn<'a> {
    python: &'a Path,
    args: Vec<String>,
    plan: ChildPlan,
    home: String,
    stdin: Option<Vec<u8>>,
    cap: usize,
}

fn spawn(s: Spawn<'_>) -> Result<Started> {
    let mut cmd = Command::new(s.python);
    cmd.args(&s.args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &s.home)
        .env("TMPDIR", &s.home)
        .env("LANG", "C.UTF-8")
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(if s.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let pid_ns = s.plan.isolation.pid_ns;
    let plan = s.plan;
    // SAFETY: `enter` only makes async-signal-safe syscalls on data prepared above.
    unsafe {
        cmd.pre_exec(move || isolation::enter(&plan));
    }
    let mut child: Child = cmd.spawn().map_err(|e| sandbox_err("spawn", e))?;
    let pid = i32::try_from(child.id()).map_err(|e| sandbox_err("pid", e))?;
    let (done_tx, done) = mpsc::channel::<()>();
    let stdout = reader(child.stdout.take(), s.cap, done_tx.clone());
    let stderr = reader(child.stderr.take(), s.cap, done_tx);
    if let (Some(mut w), Some(input)) = (child.stdin.take(), s.stdin) {
        std::thread::spawn(move || {
            let _ = w.write_all(&input);
        });
    }
    let (status_tx, status) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = status_tx.send(child.wait());
    });
    Ok(Started {
        pid,
        status,
        stdout,
        stderr,
        done,
        pid_ns,
    })
}

impl Started {
    /// SIGKILLs the program: with a PID namespace its init (which tears the namespace down;
    /// the process above it then reaps it and exits), else the process group.
    fn kill(&self) {
        if self.pid_ns {
            kill_children(self.pid);
        } else {
            // SAFETY: signals the process group created by setsid in the child.
            unsafe { libc::killpg(self.pid, libc::SIGKILL) };
        }
    }

    /// Waits for the exit (at most `limit`), kills on overrun; then collects the output.
    fn finish(self, limit: Duration, start: Instant) -> RunOutput {
        let (status, timed_out) = match self.status.recv_timeout(limit) {
            Ok(s) => (s.ok(), false),
            Err(_) => {
                self.kill();
                let s = match self.status.recv_timeout(REAP_GRACE) {
                    Ok(s) => s.ok(),
                    Err(_) => {
                        // SAFETY: as in `kill`.
                        unsafe { libc::killpg(self.pid, libc::SIGKILL) };
                        self.status.recv().ok().and_then(|s| s.ok())
                    }
                };
                (s, true)
            }
        };
        // Stragglers in the group go too (the process itself has been reaped by now).
        // SAFETY: as above; ESRCH when the group is gone is fine.
        unsafe { libc::killpg(self.pid, libc::SIGKILL) };
        let deadline = Instant::now() + DRAIN_GRACE;
        for _ in 0..2 {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.done.recv_timeout(left).is_err() {
                break;
            }
        }
        use std::os::unix::process::ExitStatusExt;
        let (stdout, t1) = take(&self.stdout);
        let (stderr, t2) = take(&self.stderr);
        RunOutput {
            code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            timed_out,
            stdout,
            stderr,
            truncated: t1 || t2,
            wall: start.elapsed(),
        }
    }
}

/// The candidate's process: plan, arguments and (without a minimal root) a host work dir.
fn program_spawn<'a>(
    probed: &'a Probed,
    root: &RootSpec,
    filters: &str,
    stage: &Path,
    config: &SandboxConfig,
    uid: u32,
    timeout: Duration,
    fds: Vec<(i32, i32)>,
    extra: &[&str],
) -> Result<(Spawn<'a>, Option<tempfile::TempDir>)> {
    let iso = probed.isolation;
    let mut host_dir = None;
    let (root_plan, cwd, home) = if iso.minimal_root {
        (
            Some(root_plan(root, stage, config, uid)?),
            None,
            "/work".to_string(),
        )
    } else {
        let dir = tempfile::Builder::new()
            .prefix("rlvr-sandbox-")
            .tempdir()
            .map_err(|e| sandbox_err("temporary directory", e))?;
        if iso.drop_uid {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(uid))
                .map_err(|e| sandbox_err("chown of the working directory", e))?;
        }
        let p = dir.path().to_string_lossy().to_string();
        host_dir = Some(dir);
        (None, Some(cstr(&p)?), p)
    };
    let plan = ChildPlan {
        isolation: iso,
        limits: limits(config, timeout, config.max_processes),
        uid,
        fds,
        root: root_plan,
        cwd,
        cgroup_procs: None,
    };
    let mut args: Vec<String> = probed.flags.iter().map(|s| s.to_string()).collect();
    args.extend(script_args(RUNNER, probed.code.0.as_ref()));
    args.push(if iso.seccomp {
        filters.to_string()
    } else {
        String::new()
    });
    args.extend(extra.iter().map(|s| s.to_string()));
    Ok((
        Spawn {
            python: &probed.python,
            args,
            plan,
            home,
            stdin: None,
            cap: config.max_output_bytes,
        },
        host_dir,
    ))
}

fn limits(config: &SandboxConfig, timeout: Duration, processes: u64) -> Limits {
    Limits {
        cpu_s: timeout.as_secs_f64().ceil() as u64 + 1,
        address_space: config.memory_mb << 20,
        processes,
        file_size: config.max_file_mb << 20,
        open_files: config.max_open_files,
    }
}

#[allow(clippy::too_many_arguments)]
fn run_raw(
    probed: &Probed,
    root: &RootSpec,
    filters: &str,
    stage: &Path,
    config: &SandboxConfig,
    source: &str,
    stdin: &[u8],
    timeout: Duration,
) -> Result<RunOutput> {
    let (uid, _) = next_uids();
    let (mut spawn_spec, host_dir) = program_spawn(
        probed,
        root,
        filters,
        stage,
        config,
        uid,
        timeout,
        Vec::new(),
        &["raw", source],
    )?;
    spawn_spec.stdin = Some(stdin.to_vec());
    let start = Instant::now();
    let started = spawn(spawn_spec)?;
    let out = started.finish(timeout, start);
    drop(host_dir);
    Ok(out)
}

fn run_check(
    probed: &Probed,
    root: &RootSpec,
    filters: &str,
    stage: &Path,
    config: &SandboxConfig,
    spec: &[u8],
    timeout: Duration,
) -> Result<CheckOutput> {
    let (uid, checker_uid) = next_uids();
    // Requests checker -> program, replies program -> checker, reports checker -> here.
    let (req_r, req_w) = pipe()?;
    let (rep_r, rep_w) = pipe()?;
    let (rpt_r, rpt_w) = pipe()?;
    let (program, host_dir) = program_spawn(
        probed,
        root,
        filters,
        stage,
        config,
        uid,
        timeout,
        vec![(req_r.as_raw_fd(), 3), (rep_w.as_raw_fd(), 4)],
        &[],
    )?;
    let checker_iso = Isolation::with(if probed.isolation.drop_uid {
        &[Layer::Uid, Layer::NoNewPrivs]
    } else {
        &[Layer::NoNewPrivs]
    });
    let checker = Spawn {
        python: &probed.python,
        args: probed
            .flags
            .iter()
            .map(|s| s.to_string())
            .chain(script_args(CHECKER, probed.code.1.as_ref()))
            .collect(),
        plan: ChildPlan {
            isolation: checker_iso,
            limits: limits(config, timeout, 4),
            uid: checker_uid,
            fds: vec![
                (rep_r.as_raw_fd(), 3),
                (req_w.as_raw_fd(), 4),
                (rpt_w.as_raw_fd(), 5),
            ],
            root: None,
            cwd: Some(cstr("/")?),
            cgroup_procs: None,
        },
        home: "/".into(),
        stdin: Some(spec.to_vec()),
        cap: config.max_output_bytes,
    };
    let start = Instant::now();
    let program = spawn(program)?;
    let checker = match spawn(checker) {
        Ok(c) => c,
        Err(e) => {
            program.kill();
            return Err(e);
        }
    };
    drop((req_r, req_w, rep_r, rep_w, rpt_w));
    let (chan_tx, chan_done) = mpsc::channel();
    // SAFETY: the read end is owned here and handed to the reader.
    let channel = reader(Some(File::from(rpt_r)), 1 << 20, chan_tx);
    let checker_out = checker.finish(timeout, start);
    // The checker has reported (or was killed): the program's process has nothing left to do.
    program.kill();
    let left = timeout.saturating_sub(start.elapsed());
    let program_out = program.finish(left, start);
    let _ = chan_done.recv_timeout(DRAIN_GRACE);
    drop(host_dir);
    let (chan, _) = take(&channel);
    Ok(CheckOutput {
        channel: chan,
        timed_out: checker_out.timed_out,
        program: program_out,
        checker: checker_out,
        wall: start.elapsed(),
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
