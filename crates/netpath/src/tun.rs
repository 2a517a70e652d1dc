//! A TUN device: a file whose reads are the IP packets the kernel routes to the device and
//! whose writes are packets the kernel receives from it.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

/// Opens (creating) the TUN device `name`, IP packets without a packet-information header,
/// non-blocking so the forwarder can drain it and wait on its own timer.
pub(crate) fn open(name: &str) -> io::Result<File> {
    let device = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")?;
    // SAFETY: ifreq is plain data (a name and a union of integers and pointers), so all
    // zeroes is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    if name.len() >= request.ifr_name.len() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("device name {name:?} is too long")));
    }
    for (slot, byte) in request.ifr_name.iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    request.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which `request` is, for the call's length;
    // the descriptor is open.
    if unsafe { libc::ioctl(device.as_raw_fd(), libc::TUNSETIFF, &mut request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(device)
}
