//! Whether this process may capture packets: watch's capture mode opens an AF_PACKET socket,
//! which needs CAP_NET_RAW; without it watch runs the sock_diag survey and says why.

use std::io;

/// Ok when this process may open a packet socket (AF_PACKET), else why not in one line:
/// "no CAP_NET_RAW: ..." (under 80 columns) when refused. The socket opened to find out
/// (protocol 0, so it receives nothing) is closed at once.
pub fn capture_allowed() -> Result<(), String> {
    // SAFETY: socket(2) with constant arguments; a descriptor returned is closed below.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd >= 0 {
        // SAFETY: `fd` was just opened here and is not used again.
        unsafe { libc::close(fd) };
        return Ok(());
    }
    let error = io::Error::last_os_error();
    Err(match error.raw_os_error() {
        // One short line: watch prints it after its own words.
        Some(libc::EPERM | libc::EACCES) => {
            "no CAP_NET_RAW: packet capture refused (run as root, or setcap cap_net_raw+ep)".into()
        }
        Some(libc::EAFNOSUPPORT) => format!("this kernel has no packet sockets (AF_PACKET): {error}"),
        _ => format!("cannot open a packet socket (AF_PACKET): {error}"),
    })
}
