//! The OS-level containment applied between `fork` and `exec`: session, namespaces, private
//! `/tmp`, a throwaway uid, rlimits, parent-death signal.

use std::ffi::CString;
use std::io;

use serde::Serialize;

/// Which containment layers a sandboxed process gets.
///
/// Chosen once per interpreter by probing from strongest to weakest (see
/// [`super::Sandbox::new`]); [`super::Sandbox::isolation`] reports the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Isolation {
    /// Run as a throwaway uid/gid from a private range (needs root): the program cannot signal
    /// or write to anything of the host's users, and the process-count limit is its own.
    pub drop_uid: bool,
    /// A new user namespace (the unprivileged route to the other namespaces).
    pub user_ns: bool,
    /// A new network namespace: only a down loopback, no route anywhere.
    pub net_ns: bool,
    /// A new PID namespace: the program sees no host process, and all of its descendants die
    /// with it.
    pub pid_ns: bool,
    /// A new mount namespace with read-only empty `tmpfs` over `/tmp`, `/var/tmp`, `/dev/shm`.
    pub mount_ns: bool,
}

impl Isolation {
    /// The levels tried, strongest first.
    pub(super) fn candidates(is_root: bool) -> Vec<Isolation> {
        let mut out = Vec::new();
        if is_root {
            out.push(Isolation {
                drop_uid: true,
                user_ns: false,
                net_ns: true,
                pid_ns: true,
                mount_ns: true,
            });
            out.push(Isolation {
                drop_uid: true,
                user_ns: false,
                net_ns: true,
                pid_ns: true,
                mount_ns: false,
            });
            out.push(Isolation {
                drop_uid: true,
                user_ns: false,
                net_ns: false,
                pid_ns: false,
                mount_ns: false,
            });
        }
        out.push(Isolation {
            drop_uid: false,
            user_ns: true,
            net_ns: true,
            pid_ns: true,
            mount_ns: true,
        });
        out.push(Isolation {
            drop_uid: false,
            user_ns: true,
            net_ns: true,
            pid_ns: false,
            mount_ns: false,
        });
        out.push(Isolation {
            drop_uid: false,
            user_ns: false,
            net_ns: false,
            pid_ns: false,
            mount_ns: false,
        });
        out
    }

    /// One-line description for reports.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.drop_uid {
            parts.push("private uid");
        }
        if self.user_ns {
            parts.push("user ns");
        }
        if self.net_ns {
            parts.push("network ns (no network)");
        }
        if self.pid_ns {
            parts.push("pid ns");
        }
        if self.mount_ns {
            parts.push("mount ns (read-only /tmp)");
        }
        if parts.is_empty() {
            "rlimits and process group only (no namespaces: network NOT isolated)".into()
        } else {
            format!("rlimits, process group, {}", parts.join(", "))
        }
    }
}

/// Resource limits applied to the sandboxed process.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub cpu_s: u64,
    pub address_space: u64,
    pub processes: u64,
    pub file_size: u64,
    pub open_files: u64,
}

/// Everything the child needs, prepared before `fork` so that the child allocates nothing.
pub(super) struct ChildPlan {
    pub isolation: Isolation,
    pub limits: Limits,
    pub uid: u32,
    pub channel_fd: i32,
    pub tmp_mounts: Vec<CString>,
    pub tmpfs: CString,
    pub tmpfs_opts: CString,
    pub root: CString,
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
        // The verdict channel becomes fd 3 (dup2 clears close-on-exec).
        if plan.channel_fd == 3 {
            check(libc::fcntl(3, libc::F_SETFD, 0))?;
        } else {
            check(libc::dup2(plan.channel_fd, 3))?;
        }
        let iso = plan.isolation;
        let mut flags = 0;
        if iso.user_ns {
            flags |= libc::CLONE_NEWUSER;
        }
        if iso.net_ns {
            flags |= libc::CLONE_NEWNET;
        }
        if iso.pid_ns {
            flags |= libc::CLONE_NEWPID;
        }
        if iso.mount_ns {
            flags |= libc::CLONE_NEWNS | libc::CLONE_NEWIPC;
        }
        if flags != 0 {
            check(libc::unshare(flags))?;
        }
        if iso.mount_ns {
            check(libc::mount(
                std::ptr::null(),
                plan.root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            for dir in &plan.tmp_mounts {
                check(libc::mount(
                    plan.tmpfs.as_ptr(),
                    dir.as_ptr(),
                    plan.tmpfs.as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    plan.tmpfs_opts.as_ptr().cast(),
                ))?;
            }
        }
        if iso.pid_ns {
            // The first child in the new namespace is its init: fork it, and let this process
            // wait and pass on the exit status. This process is a subreaper, so whatever the
            // program leaves behind is reparented here (not to the host's init) and reaped when
            // the namespace is torn down. It closes every descriptor so that the parent's pipes
            // see end-of-file exactly when the program's side is done.
            check(libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))?;
            let pid = libc::fork();
            if pid == -1 {
                return Err(io::Error::last_os_error());
            }
            if pid > 0 {
                for fd in 0..1024 {
                    libc::close(fd);
                }
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
            check(libc::setgid(plan.uid))?;
            check(libc::setuid(plan.uid))?;
        }
        // Die with the parent (set after setuid, which clears it).
        check(libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ))?;
        Ok(())
    }
}
