//! The background thread that learns where the server connects while a run lasts, and keeps
//! each thread's latest times (threads that end before the run does). Every 1 ms or more for
//! the first 100 ms (a doctor's baseline), then every 10 ms or more, it reads each thread's
//! times, and when the namespace has opened a TCP connection since its last listing
//! (`ActiveOpens`, `PassiveOpens`: tcp_opens.rs) it lists the processes' socket descriptors
//! (/proc/PID/fd) and asks only the sockets it has not met before what they are, through a
//! `pidfd_getfd` copy closed at once (getsockname, getpeername, SO_PROTOCOL, SO_ACCEPTCONN): a
//! few microseconds a socket, where one read of /proc/net/tcp{,6} walks the kernel's whole
//! connection hash table (~4 ms on a machine with 262 144 buckets, however few sockets it
//! holds). A server with a steady set of connections costs one counter read per namespace and
//! sample (a connection that lives a millisecond, one per request, is met often enough to
//! learn where it goes). At the relaxed pace (`SamplerPace::RelaxedUntil`, a run of known
//! length), once neither count nor the set of threads has moved for a second (a keep-alive
//! run past its connects) and no socket is still connecting, it looks every 160 ms until they
//! move again or the run nears its end: each wake-up takes the generator's core from it, and
//! there is nothing new to learn. The thread also waits longer after a costlier sample (a
//! server with very many sockets), to stay under 1 % of one CPU.
//!
//! A copy is the server's socket: while it is held (microseconds), a `close` by the server
//! sends its FIN only when the copy is closed too.

use super::connections::{self, Directed};
use super::load::ThreadTimes;
use super::reading::{Watched, thread_name, thread_times};
use super::tcp_opens::{self, Opens, TcpOpens};
use crate::SamplerPace;
use crate::pidfd::{self, PidFd};
use crate::socket_fds::socket_fds;
use procfs::ProcError;
use socket2::{Protocol, SockRef, Type};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The thread's name (at most 15 bytes), to find it in /proc/self/task.
pub const THREAD_NAME: &str = "nodelay-sampler";
const INTERVAL: Duration = Duration::from_millis(1);
/// Past the first looks, the least wait: each wake-up takes the CPU from whatever shares it
/// (a load generator pinned to the sampler's core lost a few % at a 2 ms pace), and a
/// destination is learned from any one of its connections.
const LATER_INTERVAL: Duration = Duration::from_millis(10);
/// Once the counts and the threads have stood still this long...
const STILL_BEFORE_SLOWING: Duration = Duration::from_secs(1);
/// ...the wait, until they move. A still keep-alive server's 100 wake-ups a second on the
/// generator's core cost nginx 1.5 % of its requests/s (24 paired rounds against a 1 s pace,
/// bench/server_view_overhead.py's setup). A thread that ends in a still period loses up to
/// this much of its time from the per-thread figures (the process's CPU keeps all of it).
const STILL_INTERVAL: Duration = Duration::from_millis(160);
/// The quick pace returns this long before the run is due to end: the run's own connections
/// close at its end, and a server's thread per connection ends with them.
const FINAL_LOOKS: Duration = Duration::from_millis(250);
/// The wait after a sample is at least this many times the sample's own CPU time.
const WAIT_PER_CPU: u32 = 100;
/// For this long the sampler looks more often (a doctor's baseline of 40 short requests lasts
/// about this long, and connections that live a millisecond are met only by looking often)...
const FIRST_LOOKS: Duration = Duration::from_millis(100);
/// ...waiting at least this many times a sample's own CPU time.
const FIRST_WAIT_PER_CPU: u32 = 5;
/// Bounds the memory of a long run with a connection per request; beyond it, `opened`
/// relies on the end's table alone.
const MAX_CONNECTIONS: usize = 65_536;
/// Bounds the threads remembered (a server with a thread per connection).
const MAX_THREADS: usize = 16_384;
/// Bounds the destinations remembered (a server that calls many services).
const MAX_DESTINATIONS: usize = 1024;

/// What the sampler learned during the run.
#[derive(Debug, Default)]
pub struct Sampled {
    /// The remote addresses of the server's client connections.
    pub destinations: BTreeSet<SocketAddr>,
    /// Those connections themselves, (local, remote), with their sockets' inodes.
    pub connections: HashSet<(Directed, u64)>,
    /// Each thread's times when last seen, with its name: a thread that ends before the run
    /// does (one per connection, in many servers) still counts up to then.
    pub threads: HashMap<(i32, i32), (ThreadTimes, String)>,
}

/// The running sampler; dropping it stops the thread and waits for it (at most one sample).
pub struct Sampler {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<Sampled>>,
    samples: Arc<AtomicU64>,
}

impl Sampler {
    pub fn start(
        watched: Vec<Watched>,
        listening_ports: HashSet<u16>,
        pace: SamplerPace,
    ) -> io::Result<Sampler> {
        let (stop, stopped) = mpsc::channel();
        let samples = Arc::new(AtomicU64::new(0));
        let knowledge = Knowledge { listening_ports, known: HashMap::new(), sampled: Sampled::default() };
        let learner = Learner {
            watched,
            pace,
            samples: Arc::clone(&samples),
            knowledge,
            listed_at_opens: None,
            list_again: false,
            last_look: None,
        };
        let thread =
            std::thread::Builder::new().name(THREAD_NAME.into()).spawn(move || learner.run(&stopped))?;
        Ok(Sampler { stop: Some(stop), thread: Some(thread), samples })
    }

    /// The run is ending (interrupted) sooner than its pace planned: look now, then at the
    /// quick pace, so that threads ending with its connections are seen to their last 10 ms.
    pub fn ending(&self) {
        if let Some(stop) = &self.stop {
            let _ = stop.send(());
        }
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
    pace: SamplerPace,
    /// Completed samples, counted after each.
    samples: Arc<AtomicU64>,
    knowledge: Knowledge,
    /// The namespaces' counts read before the last descriptor listing.
    listed_at_opens: Option<Vec<Option<Opens>>>,
    /// The last listing met a socket still connecting (or one it could not ask), or could not
    /// list a process: the next look lists again, whether the counts moved or not.
    list_again: bool,
    /// What the last look found, to tell whether anything moved since.
    last_look: Option<Look>,
}

/// The namespaces' counts and the threads (PID, TID) at one look.
#[derive(PartialEq, Eq)]
struct Look {
    opens: Vec<Option<Opens>>,
    threads: Vec<(i32, i32)>,
}

/// What the samples taught so far.
struct Knowledge {
    listening_ports: HashSet<u16>,
    /// Sockets met, by inode: whether each is a client connection of the server. A TCP
    /// socket not connected yet is not kept: it is asked again at the next sample.
    known: HashMap<u64, bool>,
    sampled: Sampled,
}

/// What a socket met for the first time turned out to be.
#[derive(Debug, PartialEq, Eq)]
enum Met {
    /// A connection the server made, (local, remote).
    Client(SocketAddr, SocketAddr),
    /// Not TCP, a listener, or a connection the server accepted: for good.
    Other,
    /// A TCP socket whose SYN is out (SYN-SENT), or one this process lacked a descriptor to
    /// ask: asked again at the next look, counts moved or not (a connect that completes moves
    /// no count).
    Connecting,
    /// A TCP socket neither connected nor connecting, or a descriptor closed since the
    /// listing: asked again at the next listing (a connect, if it comes, moves `ActiveOpens`).
    Later,
}

impl Learner {
    fn run(mut self, stopped: &Receiver<()>) -> Sampled {
        // Without a pidfd (a process that ended, an old kernel) nothing is learned from it.
        let handles: Vec<Option<PidFd>> = self.watched.iter().map(|w| PidFd::open(w.info.pid).ok()).collect();
        let mut counters: Vec<Option<TcpOpens>> =
            tcp_opens::per_namespace(&self.watched).into_iter().map(|(_, counters)| counters).collect();
        let mut pace = self.pace;
        let mut wait = INTERVAL;
        let started = Instant::now();
        let mut last_move = started;
        loop {
            match stopped.recv_timeout(wait) {
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
                // The run ends early: from here on, as over the final looks of a planned end.
                Ok(()) => pace = SamplerPace::RelaxedUntil(Instant::now()),
            }
            let before_ns = thread_cpu_ns();
            if self.sample(&handles, &mut counters) {
                last_move = Instant::now();
            }
            let cost = Duration::from_nanos(thread_cpu_ns().saturating_sub(before_ns));
            // The first looks keep a quicker pace, so that a short run is seen, yet stay at
            // 20 % of a CPU at most: the sampler must not slow what it watches.
            wait = if started.elapsed() > FIRST_LOOKS {
                later_wait(pace, last_move.elapsed(), cost, Instant::now())
            } else {
                INTERVAL.max(cost * FIRST_WAIT_PER_CPU)
            };
        }
        self.knowledge.sampled
    }

    /// One look at every watched process; true when the namespaces' counts or the set of
    /// threads moved since the last look, or it must list again (the counts cannot be read, a
    /// socket is still connecting).
    fn sample(&mut self, handles: &[Option<PidFd>], counters: &mut [Option<TcpOpens>]) -> bool {
        // Read before the listing: a connect() while it runs moves the count for the next look.
        let opens: Vec<Option<Opens>> =
            counters.iter_mut().map(|c| c.as_mut().and_then(TcpOpens::read)).collect();
        let unknown = opens.iter().any(Option::is_none);
        let list = unknown || self.list_again || self.listed_at_opens.as_ref() != Some(&opens);
        let mut present = HashSet::new();
        let mut list_again = false;
        let mut threads_now = Vec::new();
        for (watched, handle) in self.watched.iter().zip(handles) {
            // A process that ended has no sockets left to learn from.
            if let Ok(times) = thread_times(&watched.process) {
                for thread in times {
                    let threads = &mut self.knowledge.sampled.threads;
                    let key = (thread.pid, thread.tid);
                    threads_now.push(key);
                    if let Some((last, _)) = threads.get_mut(&key) {
                        *last = thread;
                    } else if threads.len() < MAX_THREADS {
                        threads.insert(key, (thread, thread_name(&watched.process, key.1)));
                    }
                }
            }
            if !list {
                continue;
            }
            // Without a pidfd no socket of it can be asked: listing it teaches nothing.
            let Some(handle) = handle else { continue };
            let sockets = match socket_fds(&watched.process) {
                Ok(sockets) => sockets,
                // It ended: nothing more to learn from it.
                Err(ProcError::NotFound(_)) => continue,
                Err(_) => {
                    list_again = true;
                    continue;
                }
            };
            for (fd, inode) in sockets {
                present.insert(inode);
                if !self.knowledge.known.contains_key(&inode) {
                    let met = ask(handle, fd, inode, &mut self.knowledge.listening_ports);
                    list_again |= met == Met::Connecting;
                    self.knowledge.learn(inode, met);
                }
            }
        }
        if list {
            self.knowledge.known.retain(|inode, _| present.contains(inode));
            self.list_again = list_again;
            self.listed_at_opens = Some(opens.clone());
        }
        threads_now.sort_unstable();
        let look = Look { opens, threads: threads_now };
        let moved = unknown || self.list_again || self.last_look.as_ref() != Some(&look);
        self.last_look = Some(look);
        self.samples.fetch_add(1, Ordering::Release);
        moved
    }
}

impl Knowledge {
    fn learn(&mut self, inode: u64, met: Met) {
        match met {
            Met::Client(local, remote) => {
                if self.sampled.destinations.len() < MAX_DESTINATIONS {
                    self.sampled.destinations.insert(connections::normal(remote));
                }
                if self.sampled.connections.len() < MAX_CONNECTIONS {
                    self.sampled.connections.insert((connections::directed(local, remote), inode));
                }
                self.known.insert(inode, true);
            }
            Met::Other => {
                self.known.insert(inode, false);
            }
            Met::Connecting | Met::Later => {}
        }
    }
}

/// Asks descriptor `fd` of the process (socket `inode` when it was listed) what it is,
/// through a copy closed on return. Notes a listening port met on the way.
fn ask(handle: &PidFd, fd: i32, inode: u64, listening_ports: &mut HashSet<u16>) -> Met {
    let copy = match handle.take(fd) {
        Ok(copy) => copy,
        // Closed since the listing, or the process ended: nothing left to ask.
        Err(error) if matches!(error.raw_os_error(), Some(libc::EBADF | libc::ESRCH)) => return Met::Later,
        // Out of descriptors here: a passing shortage, asked again at the next look.
        Err(error) if matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
            return Met::Connecting;
        }
        // Refused (EPERM under Yama's ptrace_scope, say), and so at every look: never asked again.
        Err(_) => return Met::Other,
    };
    // The number names another file by now: a new socket there came from a connect or an
    // accept, which moved the counts, so it is met at that listing.
    if pidfd::inode(&copy).ok() != Some(inode) {
        return Met::Later;
    }
    classify(&copy, listening_ports)
}

/// A TCP socket's part: listener, connection the server made, or one it accepted (its local
/// port is a listening port).
fn classify(copy: &OwnedFd, listening_ports: &mut HashSet<u16>) -> Met {
    let socket = SockRef::from(copy);
    let Some(local) = socket.local_addr().ok().and_then(|a| a.as_socket()) else { return Met::Other };
    let tcp =
        socket.r#type().ok() == Some(Type::STREAM) && socket.protocol().ok().flatten() == Some(Protocol::TCP);
    if !tcp {
        return Met::Other;
    }
    if socket.is_listener().unwrap_or(false) {
        listening_ports.insert(local.port());
        return Met::Other;
    }
    match socket.peer_addr().ok().and_then(|a| a.as_socket()) {
        None if nodelay_tcp::is_syn_sent(copy).unwrap_or(true) => Met::Connecting,
        None => Met::Later,
        Some(_) if listening_ports.contains(&local.port()) => Met::Other,
        Some(remote) => Met::Client(local, remote),
    }
}

/// The wait after a later sample (past the first looks) that cost `cost` of CPU, at `now`,
/// when the counts and the threads last moved `still_for` ago.
fn later_wait(pace: SamplerPace, still_for: Duration, cost: Duration, now: Instant) -> Duration {
    let quick = LATER_INTERVAL.max(cost * WAIT_PER_CPU);
    let SamplerPace::RelaxedUntil(end) = pace else { return quick };
    let final_looks = end.checked_sub(FINAL_LOOKS).unwrap_or(end);
    if still_for < STILL_BEFORE_SLOWING || now >= final_looks {
        return quick;
    }
    // Woken in time for the final looks.
    STILL_INTERVAL.max(cost * WAIT_PER_CPU).min(final_looks - now)
}

/// CPU time this thread has used.
fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    u64::try_from(now.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(now.tv_nsec).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream, UdpSocket};
    use std::os::fd::AsFd;

    fn copy(socket: &impl AsFd) -> OwnedFd {
        socket.as_fd().try_clone_to_owned().unwrap()
    }

    #[test]
    fn the_relaxed_pace_slows_after_a_still_second_until_the_final_looks() {
        let (cheap, now) = (Duration::from_micros(20), Instant::now());
        let ms = Duration::from_millis;
        let relaxed = SamplerPace::RelaxedUntil(now + Duration::from_secs(10));
        assert_eq!(later_wait(relaxed, Duration::ZERO, cheap, now), ms(10));
        assert_eq!(later_wait(relaxed, ms(999), cheap, now), ms(10));
        assert_eq!(later_wait(relaxed, ms(1000), cheap, now), ms(160));
        // Woken for the final looks, 250 ms before the end, then quick however still.
        assert_eq!(later_wait(relaxed, ms(5000), cheap, now + ms(9700)), ms(50));
        assert_eq!(later_wait(relaxed, ms(5000), cheap, now + ms(9750)), ms(10));
        assert_eq!(later_wait(relaxed, ms(5000), cheap, now + ms(12000)), ms(10));
        // Steady never slows.
        assert_eq!(later_wait(SamplerPace::Steady, ms(5000), cheap, now), ms(10));
        // A sample that cost 5 ms waits 100 times that, still or not.
        assert_eq!(later_wait(relaxed, Duration::ZERO, ms(5), now), ms(500));
        assert_eq!(later_wait(SamplerPace::Steady, Duration::ZERO, ms(5), now), ms(500));
    }

    #[test]
    fn sockets_are_told_apart_by_what_they_say_of_themselves() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        let mut listening = HashSet::new();
        assert_eq!(classify(&copy(&listener), &mut listening), Met::Other);
        assert_eq!(listening, [server.port()].into(), "a listener's port is learned");

        let client = TcpStream::connect(server).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let expected = Met::Client(client.local_addr().unwrap(), server);
        assert_eq!(classify(&copy(&client), &mut listening), expected);
        assert_eq!(classify(&copy(&accepted), &mut listening), Met::Other, "accepted, not made");

        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.connect(server).unwrap();
        assert_eq!(classify(&copy(&udp), &mut listening), Met::Other);
        let unconnected = socket2::Socket::new(socket2::Domain::IPV4, Type::STREAM, None).unwrap();
        unconnected.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into()).unwrap();
        assert_eq!(classify(&copy(&unconnected), &mut listening), Met::Later, "may connect later");
    }

    /// A listener that accepts nothing, its queue of one full: further connects stay in
    /// SYN-SENT (their SYNs dropped), and are asked again at every look.
    #[test]
    fn a_socket_whose_syn_goes_unanswered_is_connecting() {
        let listener = socket2::Socket::new(socket2::Domain::IPV4, Type::STREAM, None).unwrap();
        listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into()).unwrap();
        listener.listen(0).unwrap();
        let address = listener.local_addr().unwrap();
        let mut listening = HashSet::new();
        let clients: Vec<socket2::Socket> = (0..4)
            .map(|_| {
                let client = socket2::Socket::new(socket2::Domain::IPV4, Type::STREAM, None).unwrap();
                client.set_nonblocking(true).unwrap();
                let _ = client.connect(&address);
                client
            })
            .collect();
        let met: Vec<Met> = clients.iter().map(|client| classify(&copy(client), &mut listening)).collect();
        assert!(met.contains(&Met::Connecting), "{met:?}");
        assert!(met.iter().all(|m| matches!(m, Met::Client(..) | Met::Connecting)), "{met:?}");
    }
}
