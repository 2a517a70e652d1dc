//! `pidfd_open` and `pidfd_getfd` (Linux ≥ 5.6; glibc wraps them only since 2.36, so they
//! are called as raw syscalls), and the socket options read and set through a copy.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A process handle that stays valid (and never names another process) after it exits.
pub struct PidFd(OwnedFd);

impl PidFd {
    pub fn open(pid: i32) -> io::Result<PidFd> {
        // SAFETY: plain syscall; a non-negative result is a new descriptor we own.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor to us.
        Ok(PidFd(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }))
    }

    /// A copy of the process's descriptor `fd` (close-on-exec), sharing its open file.
    pub fn take(&self, fd: RawFd) -> io::Result<OwnedFd> {
        // SAFETY: plain syscall; a non-negative result is a new descriptor we own.
        let copy = unsafe { libc::syscall(libc::SYS_pidfd_getfd, self.0.as_raw_fd(), fd, 0) };
        if copy < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor to us.
        Ok(unsafe { OwnedFd::from_raw_fd(copy as RawFd) })
    }
}

/// The inode of what `fd` refers to: tells whether a descriptor number still names the
/// socket we listed (the process may have closed it and reused the number meanwhile).
pub fn inode(fd: &OwnedFd) -> io::Result<u64> {
    // SAFETY: fstat writes into the zeroed struct we pass.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(stat.st_ino)
}

pub fn tcp_flag(fd: &OwnedFd, option: libc::c_int) -> io::Result<bool> {
    int_option(fd, libc::IPPROTO_TCP, option).map(|value| value != 0)
}

/// Whether an IPv6 socket refuses IPv4 (IPV6_V6ONLY); false when it cannot be read.
pub fn v6only(fd: &OwnedFd) -> bool {
    int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY).is_ok_and(|value| value != 0)
}

fn int_option(fd: &OwnedFd, level: libc::c_int, option: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `value`.
    let rc = unsafe {
        libc::getsockopt(fd.as_raw_fd(), level, option, (&mut value as *mut libc::c_int).cast(), &mut len)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

pub fn set_tcp_nodelay(fd: &OwnedFd, on: bool) -> io::Result<()> {
    let value = libc::c_int::from(on);
    // SAFETY: passes a pointer to an int and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
