//! Running `nodelay proxy` in the background for the proxy tests: start it, wait for its
//! `listening on ADDR` line (no sleep), interrupt it, collect its output.

use super::Run;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::Instant;

/// A `nodelay proxy` process, killed when dropped if still running.
pub struct Proxy {
    child: Option<Child>,
    stderr: BufReader<ChildStderr>,
    /// The address it listens on, from its `listening on` line.
    pub address: String,
    started: Instant,
}

impl Proxy {
    /// `nodelay proxy --listen 127.0.0.1:0 --upstream 127.0.0.1:PORT ARGS`.
    pub fn in_front_of(port: u16, args: &[&str]) -> Proxy {
        let upstream = format!("127.0.0.1:{port}");
        Proxy::start(&[&["--listen", "127.0.0.1:0", "--upstream", upstream.as_str()], args].concat())
    }

    /// Starts `nodelay proxy ARGS` and waits until it says it listens. Panics if it exits first.
    pub fn start(args: &[&str]) -> Proxy {
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_nodelay"))
            .arg("proxy")
            .args(args)
            .env_remove("COLUMNS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nodelay proxy");
        let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("proxy stderr");
        let Some(address) = line.trim().strip_prefix("listening on ") else {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            panic!("nodelay proxy printed {line:?} instead of 'listening on ADDR'{rest}");
        };
        Proxy { address: address.to_string(), child: Some(child), stderr, started }
    }

    /// `http://ADDR/`: the proxy as an HTTP target.
    pub fn url(&self) -> String {
        format!("http://{}/", self.address)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Sends SIGINT, as Ctrl-C does.
    pub fn interrupt(&self) {
        // SAFETY: kill() with a child's PID and a signal number has no memory effects.
        assert_eq!(unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGINT) }, 0);
    }

    /// Waits for the proxy to exit (after -n, -d or a signal) and returns what it printed.
    pub fn finish(mut self) -> Run {
        let child = self.child.take().expect("running");
        let mut stderr = String::new();
        let _ = self.stderr.read_to_string(&mut stderr);
        let mut output = child.wait_with_output().expect("wait for nodelay proxy");
        output.stderr = stderr.into_bytes();
        Run { output, elapsed: self.started.elapsed() }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A loopback port that refuses connections for as long as the returned socket lives: bound
/// but not listening, so no other test can be given the port meanwhile.
pub fn refusing_port() -> (std::os::fd::OwnedFd, u16) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor this function owns; the address structs are
    // zero-initialised plain data of the sizes passed.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0, "socket");
        let owned = std::os::fd::OwnedFd::from_raw_fd(fd);
        let mut address: libc::sockaddr_in = std::mem::zeroed();
        address.sin_family = libc::AF_INET as libc::sa_family_t;
        address.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        assert_eq!(libc::bind(fd, (&address as *const libc::sockaddr_in).cast(), size), 0, "bind");
        let mut length = size;
        assert_eq!(libc::getsockname(fd, (&mut address as *mut libc::sockaddr_in).cast(), &mut length), 0);
        (owned, u16::from_be(address.sin_port))
    }
}

/// Closes `stream` with a reset (SO_LINGER 0) instead of a FIN: a client that vanished.
pub fn reset(stream: std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: setsockopt reads one linger struct of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_LINGER");
    drop(stream);
}
