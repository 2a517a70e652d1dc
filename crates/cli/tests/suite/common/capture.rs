//! tcpdump as a test's independent witness: a capture of one port, written as it goes and
//! complete once the packets a run surely made are in the file.

use super::{read_until, wait_until};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// tcpdump writing a capture of one port; stops (and flushes) when dropped.
pub struct Capture {
    child: Option<Child>,
    path: PathBuf,
    /// A UDP socket of the test's own, inside tcpdump's filter: a datagram to it nudges the
    /// capture along.
    sync: std::net::UdpSocket,
    /// Datagrams sent so far (each is one record in the file).
    nudges: std::cell::Cell<usize>,
}

impl Capture {
    /// Starts tcpdump and waits until it captures: "listening on" is printed before packets
    /// reach the file (on `-i any` the first ones were lost), so datagrams to a socket of the
    /// test's own go out until one is in the file. They are UDP: no TCP flow is added.
    pub fn start(name: &str, port: u16, interface: &str, nano: bool) -> Capture {
        let path =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}.pcap", std::process::id()));
        let mut command = Command::new("tcpdump");
        command.args(["-i", interface, "--immediate-mode", "-U", "-Z", "root", "-w"]).arg(&path);
        if nano {
            command.args(["--time-stamp-precision", "nano"]);
        }
        let sync = std::net::UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
        let sync_port = sync.local_addr().unwrap().port();
        let mut child = command
            .arg(format!("tcp port {port} or udp port {sync_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump (scripts/setup.sh installs it; tests run as root)");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        read_until(&mut stderr, "tcpdump", |line| line.contains("listening on"));
        let capture = Capture { child: Some(child), path, sync, nudges: std::cell::Cell::new(0) };
        wait_until("tcpdump to capture", Duration::from_secs(10), || {
            capture.nudge();
            records_in(&capture.path) >= 1
        });
        capture
    }

    /// One datagram through the capture. On `-i any` tcpdump was seen to stop writing a run's
    /// packets until more traffic came (15 of 33 in the file, for 10 s): the datagrams that
    /// follow a run bring the rest out.
    pub fn nudge(&self) {
        let to = self.sync.local_addr().unwrap();
        self.sync.send_to(b"sync", to).expect("a datagram to itself");
        self.nudges.set(self.nudges.get() + 1);
    }

    /// Stops tcpdump once the file holds at least `packets` records; the file is complete
    /// afterwards. Waiting first matters: on SIGINT tcpdump leaves its loop and drops what
    /// is still queued in the kernel's capture ring, so a run's last packets could be lost.
    pub fn finish(mut self, packets: usize) -> PathBuf {
        wait_until("tcpdump to write the run's packets", Duration::from_secs(10), || {
            self.nudge();
            // The run's packets besides the datagrams (some may still be on their way).
            records_in(&self.path) >= packets + self.nudges.get()
        });
        let child = self.child.take().unwrap();
        let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
        assert!(status.success());
        child.wait_with_output().unwrap();
        self.path.clone()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Complete packet records in a classic pcap file that tcpdump may still be writing.
pub fn records_in(path: &Path) -> usize {
    let bytes = std::fs::read(path).unwrap_or_default();
    let (mut offset, mut records) = (24, 0);
    while offset + 16 <= bytes.len() {
        let captured = u32::from_le_bytes(bytes[offset + 8..offset + 12].try_into().unwrap()) as usize;
        offset += 16 + captured;
        if offset > bytes.len() {
            break;
        }
        records += 1;
    }
    records
}
