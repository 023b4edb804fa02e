//! The seccomp filters of the candidate's process, compiled with `seccompiler` and installed by
//! the runner (`runner.py`) before any untrusted code exists (`PR_SET_NO_NEW_PRIVS` is set before
//! `exec`, so the filter can never be lifted).
//!
//! The filters deny (EPERM) what a test never needs: creating processes (`fork`, `vfork`, `clone`
//! without `CLONE_THREAD`, `execve`, `execveat`), looking into or steering other processes
//! (`ptrace`, `process_vm_*`, `kcmp`, `pidfd_*`, `perf_event_open`), namespace and mount changes,
//! kernel keyrings, BPF, `userfaultfd`, `io_uring` (which would bypass the filter), module and
//! reboot calls, and sockets other than `AF_UNIX`. `clone3` answers `ENOSYS` (its flags sit in
//! memory the filter cannot read), so the C library falls back to `clone`, whose flags it can.
//! A third filter refuses the x32 system-call numbers, which would otherwise reach the same
//! kernel entry points under other numbers.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::{Error, Result};

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

fn err(e: impl std::fmt::Display) -> Error {
    Error::Sandbox {
        reason: format!("seccomp filter: {e}"),
    }
}

/// System calls refused unconditionally.
fn denied() -> Vec<i64> {
    let mut out = vec![
        libc::SYS_execve,
        libc::SYS_execveat,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_kcmp,
        libc::SYS_pidfd_open,
        libc::SYS_pidfd_getfd,
        libc::SYS_pidfd_send_signal,
        libc::SYS_perf_event_open,
        libc::SYS_bpf,
        libc::SYS_userfaultfd,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_syslog,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_fanotify_init,
        libc::SYS_mknodat,
    ];
    #[cfg(target_arch = "x86_64")]
    out.extend([
        libc::SYS_fork,
        libc::SYS_vfork,
        libc::SYS_iopl,
        libc::SYS_ioperm,
        libc::SYS_mknod,
    ]);
    out.sort_unstable();
    out.dedup();
    out
}

fn program(filter: SeccompFilter) -> Result<String> {
    let bpf: BpfProgram = filter.try_into().map_err(err)?;
    Ok(hex(&bpf))
}

fn hex(bpf: &[seccompiler::sock_filter]) -> String {
    let mut out = String::with_capacity(bpf.len() * 16);
    for ins in bpf {
        let mut bytes = Vec::with_capacity(8);
        bytes.extend_from_slice(&ins.code.to_ne_bytes());
        bytes.push(ins.jt);
        bytes.push(ins.jf);
        bytes.extend_from_slice(&ins.k.to_ne_bytes());
        for b in bytes {
            out.push_str(&format!("{b:02x}"));
        }
    }
    out
}

/// The filters as the runner's argument: hex-encoded `sock_filter` arrays, comma-separated, in
/// the order they are installed.
pub(super) fn filters_hex() -> Result<String> {
    let eperm = SeccompAction::Errno(libc::EPERM as u32);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        denied().into_iter().map(|nr| (nr, Vec::new())).collect();
    // clone without CLONE_THREAD is a new process; with it, a thread (allowed).
    let no_thread = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
        0,
    )
    .map_err(err)?;
    rules.insert(
        libc::SYS_clone,
        vec![SeccompRule::new(vec![no_thread]).map_err(err)?],
    );
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )
    .map_err(err)?;
    rules.insert(
        libc::SYS_socket,
        vec![SeccompRule::new(vec![not_unix]).map_err(err)?],
    );
    let main = SeccompFilter::new(rules, SeccompAction::Allow, eperm, ARCH).map_err(err)?;
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        ARCH,
    )
    .map_err(err)?;
    let mut parts = vec![program(main)?, program(clone3)?];
    if cfg!(target_arch = "x86_64") {
        parts.push(hex(&x32_filter()));
    }
    Ok(parts.join(","))
}

/// `ld [nr]; jge 0x40000000 ? deny : allow` (the x32 ABI sets bit 30 of the number).
fn x32_filter() -> Vec<seccompiler::sock_filter> {
    let ins = |code: u32, jt: u8, jf: u8, k: u32| seccompiler::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    vec![
        ins(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        ins(
            libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
            0,
            1,
            0x4000_0000,
        ),
        ins(
            libc::BPF_RET | libc::BPF_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        ),
        ins(libc::BPF_RET | libc::BPF_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_to_whole_instructions() {
        let hex = filters_hex().unwrap();
        let parts: Vec<&str> = hex.split(',').collect();
        assert_eq!(
            parts.len(),
            if cfg!(target_arch = "x86_64") { 3 } else { 2 }
        );
        for p in parts {
            assert!(!p.is_empty() && p.len() % 16 == 0, "{}", p.len());
            assert!(p.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }
}
