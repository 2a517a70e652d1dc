//! Makes a child's system call fail with EPERM, as `kernel.io_uring_disabled=2` or a
//! container's seccomp profile does: to test what nodelay does where the kernel refuses.
//! x86_64 numbering, the only machines this project runs on.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The child's `syscall` fails with EPERM; with `first_argument`, only when its first
/// argument (the low 32 bits) is that, as socket(2)'s address family.
pub fn refuse(command: &mut Command, syscall: i64, first_argument: Option<u32>) -> &mut Command {
    let statement = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter { code: code as u16, jt, jf, k };
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let equals = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
    // seccomp_data: the syscall number at offset 0, the first argument at 16.
    let mut filter = vec![statement(load, 0, 0, 0)];
    match first_argument {
        None => filter.push(statement(equals, syscall as u32, 0, 1)),
        Some(argument) => filter.extend([
            statement(equals, syscall as u32, 0, 3),
            statement(load, 16, 0, 0),
            statement(equals, argument, 0, 1),
        ]),
    }
    filter.push(statement(ret, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32, 0, 0));
    filter.push(statement(ret, libc::SECCOMP_RET_ALLOW, 0, 0));
    // SAFETY: between fork and exec only prctl is called, with a filter the closure owns.
    unsafe {
        command.pre_exec(move || {
            let program = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut _ };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &program) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}
