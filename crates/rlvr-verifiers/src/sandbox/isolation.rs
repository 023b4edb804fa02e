//! The OS-level containment applied between `fork` and `exec`: session, namespaces, a minimal
//! read-only root with a fresh procfs and a size-limited tmpfs work dir, a throwaway uid, rlimits,
//! `PR_SET_NO_NEW_PRIVS`, descriptors closed above the channel, parent-death signal.

use std::ffi::CString;
use std::fmt;
use std::io;

use serde::{Deserialize, Serialize};

/// One containment mechanism, as named in `[verifier.sandbox] require = [...]` and in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The program runs as a throwaway uid/gid from a private range (needs root): it owns
    /// nothing on the host and cannot signal the host's processes.
    Uid,
    /// A new network namespace: only a down loopback, no route anywhere.
    Net,
    /// A new PID namespace with its own procfs: the program sees no host process, and all of its
    /// descendants die with it.
    Pid,
    /// New mount, IPC and UTS namespaces.
    Mount,
    /// `pivot_root` into a minimal root: read-only binds of the interpreter's directories, a few
    /// device nodes, a fresh `/proc`, and a per-run tmpfs `/work` with size and inode limits.
    Root,
    /// `PR_SET_NO_NEW_PRIVS`: no exec can gain privileges (and seccomp can be installed).
    NoNewPrivs,
    /// The seccomp filters of [`super::seccomp`]: no new processes, no exec, no ptrace, sockets
    /// limited to `AF_UNIX`, no mount/namespace/keyring/BPF/io_uring calls.
    Seccomp,
    /// A cgroup v2 per run with `pids.max` and `memory.max` (only where the host delegates the
    /// `pids` and `memory` controllers).
    Cgroup,
}

impl Layer {
    /// Every layer, strongest containment first.
    pub const ALL: [Layer; 8] = [
        Layer::Uid,
        Layer::Net,
        Layer::Pid,
        Layer::Mount,
        Layer::Root,
        Layer::NoNewPrivs,
        Layer::Seccomp,
        Layer::Cgroup,
    ];

    /// The name used in TOML and messages.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Uid => "uid",
            Layer::Net => "net",
            Layer::Pid => "pid",
            Layer::Mount => "mount",
            Layer::Root => "root",
            Layer::NoNewPrivs => "no_new_privs",
            Layer::Seccomp => "seccomp",
            Layer::Cgroup => "cgroup",
        }
    }

    /// The layers required unless configured otherwise: all but `cgroup`, which many hosts
    /// (containers with cgroup v1, or v2 without delegation) do not offer.
    pub fn default_required() -> Vec<Layer> {
        Layer::ALL
            .into_iter()
            .filter(|l| *l != Layer::Cgroup)
            .collect()
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which containment layers a sandboxed process gets (the achieved isolation level).
///
/// Chosen once per interpreter by probing from strongest to weakest (see
/// [`super::Sandbox::new`]); [`super::Sandbox::isolation`] reports the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Isolation {
    /// [`Layer::Uid`].
    pub drop_uid: bool,
    /// [`Layer::Net`].
    pub net_ns: bool,
    /// [`Layer::Pid`].
    pub pid_ns: bool,
    /// [`Layer::Mount`].
    pub mount_ns: bool,
    /// [`Layer::Root`].
    pub minimal_root: bool,
    /// [`Layer::NoNewPrivs`].
    pub no_new_privs: bool,
    /// [`Layer::Seccomp`] (confirmed by the runner from `/proc/self/status` on every run).
    pub seccomp: bool,
    /// [`Layer::Cgroup`].
    pub cgroup: bool,
}

impl Isolation {
    /// An isolation with exactly the given layers.
    pub fn with(layers: &[Layer]) -> Isolation {
        let has = |l| layers.contains(&l);
        Isolation {
            drop_uid: has(Layer::Uid),
            net_ns: has(Layer::Net),
            pid_ns: has(Layer::Pid),
            mount_ns: has(Layer::Mount) || has(Layer::Root),
            minimal_root: has(Layer::Root),
            no_new_privs: has(Layer::NoNewPrivs) || has(Layer::Seccomp),
            seccomp: has(Layer::Seccomp),
            cgroup: has(Layer::Cgroup),
        }
    }

    /// Whether a layer is in force.
    pub fn has(&self, layer: Layer) -> bool {
        match layer {
            Layer::Uid => self.drop_uid,
            Layer::Net => self.net_ns,
            Layer::Pid => self.pid_ns,
            Layer::Mount => self.mount_ns,
            Layer::Root => self.minimal_root,
            Layer::NoNewPrivs => self.no_new_privs,
            Layer::Seccomp => self.seccomp,
            Layer::Cgroup => self.cgroup,
        }
    }

    /// The layers in force.
    pub fn layers(&self) -> Vec<Layer> {
        Layer::ALL.into_iter().filter(|l| self.has(*l)).collect()
    }

    /// The layers of `required` that are not in force.
    pub fn missing(&self, required: &[Layer]) -> Vec<Layer> {
        let mut out: Vec<Layer> = required.iter().copied().filter(|l| !self.has(*l)).collect();
        out.sort();
        out.dedup();
        out
    }

    /// The levels tried, strongest first (the cgroup layer is added by the caller where the
    /// host offers it).
    pub(super) fn candidates(is_root: bool) -> Vec<Isolation> {
        use Layer::*;
        let mut out = Vec::new();
        if is_root {
            out.push(Isolation::with(&[
                Uid, Net, Pid, Mount, Root, NoNewPrivs, Seccomp,
            ]));
            out.push(Isolation::with(&[Uid, Net, Pid, Mount, Root, NoNewPrivs]));
            out.push(Isolation::with(&[
                Uid, Pid, Mount, Root, NoNewPrivs, Seccomp,
            ]));
            out.push(Isolation::with(&[
                Uid, Net, Pid, Mount, NoNewPrivs, Seccomp,
            ]));
            out.push(Isolation::with(&[Uid, NoNewPrivs, Seccomp]));
            out.push(Isolation::with(&[Uid, NoNewPrivs]));
        }
        out.push(Isolation::with(&[NoNewPrivs, Seccomp]));
        out.push(Isolation::with(&[NoNewPrivs]));
        out.push(Isolation::with(&[]));
        out
    }

    /// One-line description for reports.
    pub fn describe(&self) -> String {
        let layers = self.layers();
        let mut s = if layers.is_empty() {
            "rlimits and process group only".to_string()
        } else {
            format!(
                "rlimits, process group, {}",
                layers
                    .iter()
                    .map(|l| l.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        if !self.net_ns {
            s.push_str(" (network NOT isolated)");
        }
        s
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Resource limits applied to a sandboxed process.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub cpu_s: u64,
    pub address_space: u64,
    pub processes: u64,
    pub file_size: u64,
    pub open_files: u64,
}

/// How the minimal root is assembled (every path prepared before `fork`).
pub(super) struct RootPlan {
    /// An empty host directory the new root's tmpfs is mounted on (in the private namespace).
    pub stage: CString,
    pub tmpfs: CString,
    pub root_opts: CString,
    pub work_opts: CString,
    pub proc_fs: CString,
    /// Directories to create on the new root, parents first (absolute, under `stage`).
    pub dirs: Vec<CString>,
    /// `(target, link)` symlinks to create (link under `stage`).
    pub links: Vec<(CString, CString)>,
    /// `(host source, mount point under stage)` read-only binds.
    pub ro_binds: Vec<(CString, CString)>,
    /// `(host file, mount point under stage)` file binds (device nodes, single files).
    pub file_binds: Vec<(CString, CString)>,
    pub work: CString,
    pub proc_dir: CString,
    pub old: CString,
    pub slash: CString,
    pub old_in_new: CString,
    pub work_in_new: CString,
}

/// Everything the child needs, prepared before `fork` so that the child allocates nothing.
pub(super) struct ChildPlan {
    pub isolation: Isolation,
    pub limits: Limits,
    pub uid: u32,
    /// `(source fd, target fd)` moved into place; everything above the highest target is closed
    /// on exec.
    pub fds: Vec<(i32, i32)>,
    pub root: Option<RootPlan>,
    /// Directory to change to before `exec` (when there is no minimal root).
    pub cwd: Option<CString>,
    /// `cgroup.procs` of this run's cgroup, when there is one.
    pub cgroup_procs: Option<CString>,
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Runs in the forked child before `exec` (async-signal-safe calls only, no allocation).
///
/// # Safety
/// Must only be called from `CommandExt::pre_exec`.
pub(super) unsafe fn enter(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: plain syscalls on values prepared by the parent; we are the only thread of the
    // freshly forked child.
    unsafe {
        check(libc::setsid())?;
        if let Some(procs) = &plan.cgroup_procs {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
            if n != 1 {
                return Err(io::Error::last_os_error());
            }
        }
        // Sources were placed above every target by the parent, so no dup2 clobbers another.
        let mut top = 2;
        for &(src, dst) in &plan.fds {
            check(libc::dup2(src, dst))?;
            top = top.max(dst);
        }
        let iso = plan.isolation;
        let mut flags = 0;
        if iso.net_ns {
            flags |= libc::CLONE_NEWNET;
        }
        if iso.pid_ns {
            flags |= libc::CLONE_NEWPID;
        }
        if iso.mount_ns {
            flags |= libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
        }
        if flags != 0 {
            check(libc::unshare(flags))?;
        }
        if iso.pid_ns {
            // The first child in the new namespace is its init: fork it, and let this process
            // wait and pass on the exit status. It closes every descriptor so that the parent's
            // pipes see end-of-file exactly when the program's side is done.
            let pid = libc::fork();
            if pid == -1 {
                return Err(io::Error::last_os_error());
            }
            if pid > 0 {
                libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
                let mut code = 255;
                loop {
                    let mut status = 0;
                    let r = libc::waitpid(-1, &mut status, 0);
                    if r == pid {
                        code = if libc::WIFEXITED(status) {
                            libc::WEXITSTATUS(status)
                        } else if libc::WIFSIGNALED(status) {
                            128 + libc::WTERMSIG(status)
                        } else {
                            255
                        };
                    } else if r == -1 && *libc::__errno_location() != libc::EINTR {
                        break;
                    }
                }
                libc::_exit(code);
            }
        }
        if iso.mount_ns {
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
        }
        if let Some(root) = &plan.root {
            build_root(root)?;
        } else if let Some(cwd) = &plan.cwd {
            check(libc::chdir(cwd.as_ptr()))?;
        }
        let l = plan.limits;
        for (res, v) in [
            (libc::RLIMIT_CPU, l.cpu_s),
            (libc::RLIMIT_AS, l.address_space),
            (libc::RLIMIT_NPROC, l.processes),
            (libc::RLIMIT_FSIZE, l.file_size),
            (libc::RLIMIT_NOFILE, l.open_files),
            (libc::RLIMIT_CORE, 0),
        ] {
            let lim = libc::rlimit {
                rlim_cur: v,
                rlim_max: v,
            };
            check(libc::setrlimit(res, &lim))?;
        }
        if iso.drop_uid {
            check(libc::setgroups(0, std::ptr::null()))?;
            check(libc::setresgid(plan.uid, plan.uid, plan.uid))?;
            check(libc::setresuid(plan.uid, plan.uid, plan.uid))?;
        }
        if iso.no_new_privs {
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        }
        // Die with the parent (set after the uid change, which clears it).
        check(libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ))?;
        // Every inherited descriptor above the channel is closed at exec.
        let first = (top + 1) as u32;
        if libc::syscall(
            libc::SYS_close_range,
            first,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ) != 0
        {
            for fd in first..4096 {
                libc::fcntl(fd as i32, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        Ok(())
    }
}

/// Mounts the minimal root on the stage directory and pivots into it.
///
/// # Safety
/// As [`enter`]: only in the forked child, inside a private mount namespace.
unsafe fn build_root(r: &RootPlan) -> io::Result<()> {
    // SAFETY: see `enter`.
    unsafe {
        let null = std::ptr::null::<libc::c_char>();
        let nosuid = libc::MS_NOSUID | libc::MS_NODEV;
        check(libc::mount(
            r.tmpfs.as_ptr(),
            r.stage.as_ptr(),
            r.tmpfs.as_ptr(),
            nosuid,
            r.root_opts.as_ptr().cast(),
        ))?;
        for d in &r.dirs {
            check(libc::mkdir(d.as_ptr(), 0o755))?;
        }
        for (target, link) in &r.links {
            check(libc::symlink(target.as_ptr(), link.as_ptr()))?;
        }
        for (src, dst) in &r.ro_binds {
            check(libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                null,
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            ))?;
            check(libc::mount(
                null,
                dst.as_ptr(),
                null,
                libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | nosuid,
                std::ptr::null(),
            ))?;
        }
        for (src, dst) in &r.file_binds {
            let fd = libc::open(
                dst.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                0o644,
            );
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            libc::close(fd);
            check(libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                null,
                libc::MS_BIND,
                std::ptr::null(),
            ))?;
            check(libc::mount(
                null,
                dst.as_ptr(),
                null,
                libc::MS_REMOUNT | libc::MS_BIND | libc::MS_NOSUID | libc::MS_NOEXEC,
                std::ptr::null(),
            ))?;
        }
        check(libc::mount(
            r.tmpfs.as_ptr(),
            r.work.as_ptr(),
            r.tmpfs.as_ptr(),
            nosuid | libc::MS_NOEXEC,
            r.work_opts.as_ptr().cast(),
        ))?;
        check(libc::mount(
            r.proc_fs.as_ptr(),
            r.proc_dir.as_ptr(),
            r.proc_fs.as_ptr(),
            nosuid | libc::MS_NOEXEC,
            std::ptr::null(),
        ))?;
        check(libc::syscall(libc::SYS_pivot_root, r.stage.as_ptr(), r.old.as_ptr()) as i32)?;
        check(libc::chdir(r.slash.as_ptr()))?;
        check(libc::umount2(r.old_in_new.as_ptr(), libc::MNT_DETACH))?;
        check(libc::rmdir(r.old_in_new.as_ptr()))?;
        // The root tmpfs itself becomes read-only: only /work is writable.
        check(libc::mount(
            null,
            r.slash.as_ptr(),
            null,
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | nosuid,
            std::ptr::null(),
        ))?;
        check(libc::chdir(r.work_in_new.as_ptr()))?;
        Ok(())
    }
}
