//! The background thread that learns where the server connects while a run lasts. Every
//! ~100 ms it lists the processes' socket descriptors (/proc/PID/fd) and looks up only the
//! sockets it has not met before in the socket table, so a server with a steady set of
//! connections costs a directory listing per process. It waits longer when a sample cost
//! more (a server with very many sockets), to stay under 1 % of one CPU.

use super::connections::{self, Pair};
use super::reading::{HeldSocket, Watched};
use crate::linux::{socket_fds, tcp_entries};
use procfs::net::{TcpNetEntry, TcpState};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// The thread's name (at most 15 bytes), to find it in /proc/self/task.
pub const THREAD_NAME: &str = "nodelay-sampler";
const INTERVAL: Duration = Duration::from_millis(100);
/// The wait after a sample is at least this many times the sample's own CPU time.
const WAIT_PER_CPU: u32 = 100;
/// Sockets met that were not connections (other protocols, or not connected yet) are looked
/// up again after this many samples: a socket may connect after it was first met.
const RECHECK_EVERY_SAMPLES: u64 = 10;
/// Bounds the memory of a long run with a connection per request; beyond it, `opened`
/// relies on the end's table alone.
const MAX_PAIRS: usize = 65_536;

/// What the sampler learned during the run.
#[derive(Debug, Default)]
pub struct Sampled {
    /// The remote addresses of the server's client connections.
    pub destinations: BTreeSet<SocketAddr>,
    /// Those connections themselves.
    pub pairs: HashSet<Pair>,
}

/// The running sampler; dropping it stops the thread and waits for it (at most one sample).
pub struct Sampler {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<Sampled>>,
    samples: Arc<AtomicU64>,
}

impl Sampler {
    pub fn start(watched: Vec<Watched>, listening_ports: HashSet<u16>) -> io::Result<Sampler> {
        let (stop, stopped) = mpsc::channel();
        let knowledge = Knowledge { listening_ports, known: HashMap::new(), sampled: Sampled::default() };
        let samples = Arc::new(AtomicU64::new(0));
        let learner = Learner { watched, samples: Arc::clone(&samples), knowledge };
        let thread =
            std::thread::Builder::new().name(THREAD_NAME.into()).spawn(move || learner.run(&stopped))?;
        Ok(Sampler { stop: Some(stop), thread: Some(thread), samples })
    }

    /// Samples completed so far.
    pub fn samples(&self) -> u64 {
        self.samples.load(Ordering::Acquire)
    }

    /// Stops the thread and returns what it learned (nothing if it panicked).
    pub fn stop(mut self) -> Sampled {
        self.stop.take();
        self.thread.take().and_then(|thread| thread.join().ok()).unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // Disconnecting the channel wakes the thread at once.
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Learner {
    watched: Vec<Watched>,
    /// Completed samples, counted after each.
    samples: Arc<AtomicU64>,
    knowledge: Knowledge,
}

/// What the samples taught so far.
struct Knowledge {
    listening_ports: HashSet<u16>,
    /// Sockets met, by inode: whether each is a client connection of the server.
    known: HashMap<u64, bool>,
    sampled: Sampled,
}

impl Learner {
    fn run(mut self, stopped: &Receiver<()>) -> Sampled {
        let mut wait = INTERVAL;
        while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(wait) {
            let before_ns = thread_cpu_ns();
            self.sample();
            let cost = Duration::from_nanos(thread_cpu_ns().saturating_sub(before_ns));
            wait = INTERVAL.max(cost * WAIT_PER_CPU);
        }
        self.knowledge.sampled
    }

    fn sample(&mut self) {
        if self.samples.load(Ordering::Relaxed).is_multiple_of(RECHECK_EVERY_SAMPLES) {
            self.knowledge.known.retain(|_, client| *client);
        }
        let mut tables: HashMap<u64, HashMap<u64, TcpNetEntry>> = HashMap::new();
        let mut present = HashSet::new();
        for watched in &self.watched {
            let pid = watched.info.pid;
            // A process that ended has no sockets left to learn from.
            let Ok(sockets) = socket_fds(&watched.process) else { continue };
            for (fd, inode) in sockets {
                present.insert(inode);
                if self.knowledge.known.contains_key(&inode) {
                    continue;
                }
                let table = tables.entry(watched.netns).or_insert_with(|| owned_by_inode(watched));
                let client = table.get(&inode).is_some_and(|entry| self.knowledge.learn(pid, fd, entry));
                self.knowledge.known.insert(inode, client);
            }
        }
        self.knowledge.known.retain(|inode, _| present.contains(inode));
        self.samples.fetch_add(1, Ordering::Release);
    }
}

impl Knowledge {
    /// Learns from a socket met for the first time: a new listening port, or a connection
    /// of which the server is the client (then true).
    fn learn(&mut self, pid: i32, fd: i32, entry: &TcpNetEntry) -> bool {
        if entry.state == TcpState::Listen {
            self.listening_ports.insert(entry.local_address.port());
            return false;
        }
        let socket = HeldSocket::new(pid, fd, entry);
        if !socket.is_client(&self.listening_ports) {
            return false;
        }
        self.sampled.destinations.insert(socket.remote);
        if self.sampled.pairs.len() < MAX_PAIRS {
            self.sampled.pairs.insert(connections::pair(socket.local, socket.remote));
        }
        true
    }
}

/// The process's namespace's sockets by inode; empty if it ended meanwhile.
fn owned_by_inode(watched: &Watched) -> HashMap<u64, TcpNetEntry> {
    let entries = tcp_entries(Some(&watched.process)).unwrap_or_default();
    entries.into_iter().filter(|entry| entry.inode != 0).map(|entry| (entry.inode, entry)).collect()
}

/// CPU time this thread has used.
fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    u64::try_from(now.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(now.tv_nsec).unwrap_or(0)
}
