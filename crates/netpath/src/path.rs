//! A path brought up: namespaces `NAME-c` and `NAME-s`, a TUN device in each with a
//! point-to-point address, and two forwarding threads between them. The namespaces go when
//! the [`Path`] is dropped or its process is told to stop.

use crate::forward::forward;
use crate::namespaces::{delete, ip};
use crate::schedule::Schedule;
use crate::spec::PathSpec;
use crate::tun;
use std::fs::File;
use std::io;
use std::thread::JoinHandle;

/// The client's address on every path.
pub const CLIENT_IP: &str = "10.211.0.1";
/// The server's address on every path.
pub const SERVER_IP: &str = "10.211.0.2";

/// Real-time priority of the forwarding threads: above every ordinary process, so a loaded
/// machine (a test suite, a build) does not add its run queue to the path's delay; low among
/// real-time priorities, below the kernel's own threads.
const FORWARDER_PRIORITY: libc::c_int = 10;

/// A path that is up.
#[derive(Debug)]
pub struct Path {
    spec: PathSpec,
    devices: Option<(File, File)>,
    forwarders: Vec<JoinHandle<io::Result<()>>>,
    realtime: bool,
}

impl Path {
    /// Creates both namespaces and their devices (replacing namespaces left by a path of the
    /// same name). Packets are not moved until [`Path::start`]. Needs root.
    pub fn up(spec: PathSpec) -> io::Result<Path> {
        spec.validate().map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error.to_string()))?;
        let mut path = Path { spec, devices: None, forwarders: Vec::new(), realtime: false };
        let (client_ns, server_ns) = (path.client_namespace(), path.server_namespace());
        for namespace in [&client_ns, &server_ns] {
            delete(namespace);
            ip(&["netns", "add", namespace])?;
        }
        // From here on, dropping `path` removes what was made, whatever fails next.
        let client_device = format!("{}c0", path.spec.name);
        let server_device = format!("{}s0", path.spec.name);
        let client_tun = tun::open(&client_device)?;
        let server_tun = tun::open(&server_device)?;
        let mtu = path.spec.mtu_bytes.to_string();
        for (namespace, device, me, peer) in [
            (&client_ns, &client_device, CLIENT_IP, SERVER_IP),
            (&server_ns, &server_device, SERVER_IP, CLIENT_IP),
        ] {
            ip(&["link", "set", device, "netns", namespace])?;
            ip(&["-n", namespace, "addr", "add", me, "peer", peer, "dev", device])?;
            ip(&["-n", namespace, "link", "set", device, "mtu", &mtu, "up"])?;
            ip(&["-n", namespace, "link", "set", "lo", "up"])?;
        }
        path.devices = Some((client_tun, server_tun));
        Ok(path)
    }

    /// Starts moving packets both ways. Returns whether the forwarders run at real-time
    /// priority (they need root or CAP_SYS_NICE; without it a busy machine adds delay).
    pub fn start(&mut self) -> io::Result<bool> {
        let Some((client_tun, server_tun)) = self.devices.take() else {
            return Ok(self.realtime);
        };
        let one_way = self.spec.one_way_delay();
        let spec = &self.spec;
        // Each direction draws from its own seed, so the two lose different packets.
        let directions = [
            (client_tun.try_clone()?, server_tun.try_clone()?, spec.seed),
            (server_tun, client_tun, spec.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1)),
        ];
        let (ready_sender, ready) = std::sync::mpsc::channel();
        for (source, destination, seed) in directions {
            let schedule = Schedule::new(one_way, spec.jitter, spec.loss_percent, spec.rate_bits_per_s, seed);
            let ready_sender = ready_sender.clone();
            self.forwarders.push(std::thread::Builder::new().name("netpath-forward".into()).spawn(
                move || {
                    let _ = ready_sender.send(become_realtime());
                    forward(source, destination, schedule)
                },
            )?);
        }
        drop(ready_sender);
        // One answer per forwarder: the threads keep running, so do not wait for the end.
        let answers: Vec<bool> = ready.iter().take(self.forwarders.len()).collect();
        self.realtime = answers.iter().all(|realtime| *realtime);
        Ok(self.realtime)
    }

    /// The client's namespace, `NAME-c`.
    pub fn client_namespace(&self) -> String {
        format!("{}-c", self.spec.name)
    }

    /// The server's namespace, `NAME-s`.
    pub fn server_namespace(&self) -> String {
        format!("{}-s", self.spec.name)
    }

    /// What this path is.
    pub fn spec(&self) -> &PathSpec {
        &self.spec
    }
}

impl Drop for Path {
    fn drop(&mut self) {
        // Deleting the namespaces removes their devices; the forwarders' reads then fail or
        // block forever on a device no one routes to, and end with the process.
        delete(&self.client_namespace());
        delete(&self.server_namespace());
    }
}

/// Moves the calling thread to real-time FIFO scheduling, with no timer slack; says whether
/// the kernel allowed it.
fn become_realtime() -> bool {
    // SAFETY: sched_param is plain integers (musl adds fields glibc lacks): zeroes are valid.
    let mut parameters: libc::sched_param = unsafe { std::mem::zeroed() };
    parameters.sched_priority = FORWARDER_PRIORITY;
    // SAFETY: pid 0 is the calling thread; the parameters live for the call.
    let scheduled = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &parameters) } == 0;
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer; 1 ns is the least slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    scheduled
}
