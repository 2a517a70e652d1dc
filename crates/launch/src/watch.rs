//! The fallback when a preload cannot work: a watcher process sets TCP_NODELAY on the
//! program's sockets from outside (`nodelay_host::force_nodelay`, through pidfd_getfd) until
//! the program ends, while the program itself still replaces the nodelay process (same PID,
//! same terminal, its own exit status).
//!
//! The watcher is double-forked so that it is not the program's child (the program never sees
//! an unknown child, nor a SIGCHLD for it): nodelay forks, the child forks the watcher and
//! exits at once, nodelay reaps the child and then execs. Before forking, nodelay opens a
//! pidfd of *itself*, the process that becomes the program, and the watcher inherits it:
//! polling it says when the program has ended, without PID reuse races. A close-on-exec pipe
//! tells the watcher when the exec has happened (its write end closes then), so scanning
//! starts with the program, not with nodelay. The watcher leaves the terminal's session, keeps
//! no descriptor of the program's but stderr (for its one error line), and ends with the
//! program. Scans come every 2 ms for the first 200 ms, when servers open their listening
//! sockets, then every 50 ms.
//!
//! Under Yama's restricted ptrace (`ptrace_scope` 1, Ubuntu's default) only an ancestor may
//! use pidfd_getfd on a process, and the watcher is not the program's ancestor: the program
//! names it with `PR_SET_PTRACER` before exec (the exception survives exec).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Scans this often while the program starts up...
const FAST_INTERVAL: Duration = Duration::from_millis(2);
/// ...for this long...
const FAST_PERIOD: Duration = Duration::from_millis(200);
/// ...and this often afterwards.
const SLOW_INTERVAL: Duration = Duration::from_millis(50);

/// After a failed scan, how long the program may take to be seen ending before the failure
/// is reported as one.
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// How long to wait before the next scan, `since_exec` after the program started.
pub fn interval(since_exec: Duration) -> Duration {
    if since_exec < FAST_PERIOD { FAST_INTERVAL } else { SLOW_INTERVAL }
}

/// Starts the watcher for this process, which is about to exec the program. Must be called
/// while the process has a single thread (fork copies only the calling one).
pub fn start(program: String, on_error: impl FnOnce(&str)) -> io::Result<()> {
    let pid = std::process::id() as libc::pid_t;
    let pidfd = pidfd_open(pid)?;
    let (exec_read, exec_write) = cloexec_pipe()?;
    let (pid_read, pid_write) = cloexec_pipe()?;
    // SAFETY: the process is single-threaded (see above); each side only closes, forks, writes
    // and exits, or runs the watcher, which needs nothing another thread could have held.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(exec_write);
            drop(pid_read);
            // SAFETY: as above; the child forks once more and exits without unwinding.
            if unsafe { libc::fork() } == 0 {
                let announced = write_pid(pid_write);
                if announced.is_ok() {
                    watcher(pid, &pidfd, &exec_read, &program, on_error);
                }
            }
            // SAFETY: _exit ends the forked child without running the parent's exit handlers.
            unsafe { libc::_exit(0) }
        }
        middle => {
            drop(pid_write);
            drop(exec_read);
            drop(pidfd);
            let mut status = 0;
            // SAFETY: waits for our own child; status is a valid out pointer.
            unsafe { libc::waitpid(middle, &mut status, 0) };
            let watcher_pid =
                read_pid(&pid_read).ok_or_else(|| io::Error::other("the watcher process did not start"))?;
            // SAFETY: prctl with integer arguments. Meaningful only under Yama's ptrace_scope
            // 1; elsewhere it fails (EINVAL) and nothing needs it.
            unsafe { libc::prctl(libc::PR_SET_PTRACER, watcher_pid as libc::c_ulong, 0, 0, 0) };
            // Held open until exec closes it: that close is the watcher's start signal.
            let _ = exec_write.into_raw_fd();
            Ok(())
        }
    }
}

/// The watcher's life: wait for the exec, scan until the program ends, report one error.
fn watcher(
    pid: libc::pid_t,
    pidfd: &OwnedFd,
    exec_read: &OwnedFd,
    program: &str,
    on_error: impl FnOnce(&str),
) {
    detach(&[pidfd.as_raw_fd(), exec_read.as_raw_fd()]);
    // The exec closed the pipe (or nodelay died, which the pidfd says too).
    loop {
        match poll_two(exec_read.as_raw_fd(), pidfd.as_raw_fd()) {
            Ok(true) => break,
            Ok(false) => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
    }
    let started = Instant::now();
    loop {
        if has_ended(pidfd, Duration::ZERO) {
            return;
        }
        if let Err(e) = nodelay_host::force_nodelay(pid) {
            // A program that ended mid-scan is not an error worth a line. A dying program with
            // threads is already gone from /proc while its pidfd waits for the last thread.
            let ending = matches!(e, nodelay_host::HostError::NoSuchProcess(_));
            if !ending && !has_ended(pidfd, EXIT_GRACE) {
                on_error(&scan_failed(program, &e));
            }
            return;
        }
        if has_ended(pidfd, interval(started.elapsed())) {
            return;
        }
    }
}

/// The watcher's one error line. A missing permission is worded for this command (the host
/// crate's own wording points to `nodelay exec`, which is where the user already is).
fn scan_failed(program: &str, error: &nodelay_host::HostError) -> String {
    let why = match error {
        nodelay_host::HostError::NoPermission { why, .. } => {
            format!("no permission to take its sockets: {why}")
        }
        other => other.to_string(),
    };
    format!("stopped setting TCP_NODELAY on {program}'s sockets from outside: {why}")
}

/// Leaves the terminal's session (Ctrl-C and hang-ups are for the program), points stdin and
/// stdout at /dev/null, and closes every inherited descriptor but stderr and `keep`, so that
/// no pipe or socket of the program stays open because of the watcher.
fn detach(keep: &[RawFd]) {
    // SAFETY: prctl with a NUL-terminated name; setsid, open, dup2 and close on descriptors
    // this process owns.
    unsafe {
        // In ps and top: not a second copy of the nodelay command that started it.
        libc::prctl(libc::PR_SET_NAME, c"nodelay-watch".as_ptr() as libc::c_ulong, 0, 0, 0);
        libc::setsid();
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            if null > 2 {
                libc::close(null);
            }
        }
    }
    let open: Vec<RawFd> = match std::fs::read_dir("/proc/self/fd") {
        Ok(entries) => entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect(),
        Err(_) => return,
    };
    for fd in open.into_iter().filter(|fd| *fd > 2 && !keep.contains(fd)) {
        // SAFETY: closing a descriptor no Rust object of this process owns (the kept ones
        // are excluded); the directory's own descriptor is already closed, so this fails.
        unsafe { libc::close(fd) };
    }
}

/// Waits until the pipe or the pidfd is ready: true when the pipe is (the exec happened or
/// nodelay ended) and the program is still running, false when the process has ended.
fn poll_two(pipe: RawFd, pidfd: RawFd) -> io::Result<bool> {
    let mut fds = [
        libc::pollfd { fd: pipe, events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: pidfd, events: libc::POLLIN, revents: 0 },
    ];
    // SAFETY: fds is a valid array of two pollfd.
    if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fds[1].revents == 0)
}

/// Whether the process behind `pidfd` has ended, waiting up to `wait` for it.
fn has_ended(pidfd: &OwnedFd, wait: Duration) -> bool {
    let mut fds = [libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let millis = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: fds is a valid array of one pollfd.
        match unsafe { libc::poll(fds.as_mut_ptr(), 1, millis) } {
            n if n > 0 => return true,
            0 => return false,
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            // A pidfd that cannot be polled: nothing left to watch.
            _ => return true,
        }
    }
}

fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; the result is a new descriptor (close-on-exec
    // by definition) or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn write_pid(pipe: OwnedFd) -> io::Result<()> {
    let bytes = std::process::id().to_ne_bytes();
    // SAFETY: writes 4 bytes from a live array to a descriptor we own.
    let written = unsafe { libc::write(pipe.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    if written == bytes.len() as isize { Ok(()) } else { Err(io::Error::last_os_error()) }
}

fn read_pid(pipe: &OwnedFd) -> Option<libc::pid_t> {
    let mut bytes = [0u8; 4];
    loop {
        // SAFETY: reads at most 4 bytes into a live array from a descriptor we own.
        let n = unsafe { libc::read(pipe.as_raw_fd(), bytes.as_mut_ptr().cast(), bytes.len()) };
        match n {
            4 => return Some(u32::from_ne_bytes(bytes) as libc::pid_t),
            n if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_fast_at_start_then_backs_off() {
        assert_eq!(interval(Duration::ZERO), Duration::from_millis(2));
        assert_eq!(interval(Duration::from_millis(199)), Duration::from_millis(2));
        assert_eq!(interval(Duration::from_millis(200)), Duration::from_millis(50));
        assert_eq!(interval(Duration::from_secs(3600)), Duration::from_millis(50));
    }

    #[test]
    fn a_missing_permission_is_worded_for_exec() {
        let error = nodelay_host::HostError::NoPermission {
            pid: 7,
            command: "server".into(),
            why: "it belongs to uid 1000".into(),
        };
        assert_eq!(
            scan_failed("server", &error),
            "stopped setting TCP_NODELAY on server's sockets from outside: no permission to take its sockets: \
             it belongs to uid 1000"
        );
    }

    #[test]
    fn a_pidfd_tells_when_a_process_ends() {
        let mut child =
            std::process::Command::new("cat").stdin(std::process::Stdio::piped()).spawn().unwrap();
        let pidfd = pidfd_open(child.id() as libc::pid_t).unwrap();
        assert!(!has_ended(&pidfd, Duration::ZERO));
        drop(child.stdin.take());
        assert!(has_ended(&pidfd, Duration::from_secs(10)));
        child.wait().unwrap();
    }
}
