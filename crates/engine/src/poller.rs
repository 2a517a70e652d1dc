//! How a worker learns which of its sockets are ready: epoll (through mio), or io_uring's
//! multishot poll (`bench --io-uring`).
//!
//! Both report readiness edges, as epoll with EPOLLET does, so the worker's reads and writes
//! are the same syscalls either way. Both can batch a wait: with IORING_SETUP_DEFER_TASKRUN
//! the kernel wakes the worker only once `want` sockets are ready, or once `min_wait` has
//! passed since the wait began and one is; epoll, which wakes a thread at the first, gets
//! the same by sleeping on a timer between looks (`epoll_batched`). Against nginx on one core
//! at -c 50 either is one wake-up per ~25 responses instead of one per 3 to 4
//! (bench/server_cost_per_generator.py).

use crate::config::BusyPoll;
use io_uring::{IoUring, cqueue, opcode, squeue, types};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// One readiness edge of one registered socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Readiness {
    pub token: usize,
    pub readable: bool,
    pub writable: bool,
    /// The peer's FIN or an error came with it: the socket holds its last bytes.
    pub hangup: bool,
}

/// What a wait may hold out for: `want` ready sockets, but once `min_wait` has passed since it
/// began, one will do (io_uring's minimum wait; epoll's `epoll_batched` sleeps to the same end).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Batch {
    pub want: usize,
    pub min_wait: Duration,
}

/// A wait that got what it held out for this many times in a row holds out for twice as many.
const GROW_AFTER: u32 = 8;
/// The longest run of waits between two probes: a probe that gained nothing (one response
/// came) doubles the run before the next, up to this.
const PROBE_GAP_MAX: u32 = 1024;

/// How many ready sockets the next wait holds out for, learnt from the last ones: twice as
/// many after a run of waits that got theirs, and what came when one did not. Against nginx
/// at -c 50 it climbs to its cap within a millisecond. Against a server whose responses come
/// one at a time it stays at one, and the waits that probe for two (each holds its response
/// up to `min_wait`, delaying that connection's next request) come further apart each time one
/// gains nothing: 8 waits, then 16, ... up to `PROBE_GAP_MAX`, until a hold again gets two.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchSize {
    want: usize,
    streak: u32,
    /// Waits in a row that must get theirs before the next holds out for twice as many.
    grow_after: u32,
}

impl BatchSize {
    pub fn new() -> Self {
        BatchSize { want: 1, streak: 0, grow_after: GROW_AFTER }
    }

    /// What to hold out for, at most `cap`.
    pub fn want(&self, cap: usize) -> usize {
        self.want.clamp(1, cap.max(1))
    }

    /// A wait that held out for `wanted` got `got` ready sockets.
    pub fn learn(&mut self, wanted: usize, got: usize) {
        if wanted > 1 {
            // Did holding out pay? Two or more that came together say the responses bunch.
            self.grow_after = if got > 1 { GROW_AFTER } else { (self.grow_after * 2).min(PROBE_GAP_MAX) };
        }
        if got >= wanted {
            self.streak += 1;
            if self.streak >= self.grow_after {
                self.want = wanted.saturating_mul(2);
                self.streak = 0;
            }
        } else {
            self.want = got.max(1);
            self.streak = 0;
        }
    }
}

pub(crate) enum Poller {
    Epoll { poll: Poll, events: Events },
    Uring(Box<UringPoller>),
}

impl Poller {
    pub fn epoll() -> io::Result<Self> {
        Ok(Poller::Epoll { poll: Poll::new()?, events: Events::with_capacity(1024) })
    }

    /// An io_uring poller for tokens `0..tokens`; an error where the kernel has no io_uring, or
    /// refuses it (`kernel.io_uring_disabled`, a seccomp filter), or lacks the batched wait.
    pub fn uring(tokens: usize) -> io::Result<Self> {
        Ok(Poller::Uring(Box::new(UringPoller::new(tokens)?)))
    }

    /// Watches `stream` for readability and writability under `token`.
    pub fn register(&mut self, stream: &mut TcpStream, token: usize) -> io::Result<()> {
        match self {
            Poller::Epoll { poll, .. } => {
                poll.registry().register(stream, Token(token), Interest::READABLE | Interest::WRITABLE)
            }
            Poller::Uring(uring) => uring.register(stream.as_raw_fd(), token),
        }
    }

    /// Stops watching `token`'s socket; call before closing it. With io_uring the poll holds a
    /// reference to the socket, which would otherwise stay open (no FIN) until the ring closes.
    pub fn deregister(&mut self, token: usize) -> io::Result<()> {
        match self {
            // Closing the descriptor removes it from the epoll set.
            Poller::Epoll { .. } => Ok(()),
            Poller::Uring(uring) => uring.deregister(token),
        }
    }

    /// Fills `ready` with what became ready, waiting at most `timeout`.
    pub fn wait(&mut self, ready: &mut Vec<Readiness>, timeout: Duration, batch: Batch) -> io::Result<()> {
        ready.clear();
        match self {
            Poller::Epoll { poll, events } if batch.want > 1 && !timeout.is_zero() => {
                epoll_batched(poll, events, ready, timeout, batch)
            }
            Poller::Epoll { poll, events } => epoll_look(poll, events, ready, timeout),
            Poller::Uring(uring) => uring.wait(ready, timeout, batch),
        }
    }

    /// One wait of a worker's loop, until `wake` at the latest, holding out for `batch`; a
    /// `learning` wait that could block teaches `batch_size` how many came. Whole
    /// milliseconds, rounded down: epoll never oversleeps a due slot, and a sub-millisecond
    /// wait polls without blocking. Busy-polling (until `busy_poll` says, after the last event
    /// at `last_event`) never blocks.
    pub fn wait_until(
        &mut self,
        ready: &mut Vec<Readiness>,
        wake: Instant,
        (batch, learning): (Batch, bool),
        batch_size: &mut BatchSize,
        busy_poll: BusyPoll,
        last_event: Instant,
    ) -> io::Result<()> {
        let now = Instant::now();
        let spinning = match busy_poll {
            BusyPoll::Off => false,
            BusyPoll::Always => true,
            BusyPoll::After(window) => now.saturating_duration_since(last_event) < window,
        };
        let timeout = if spinning {
            Duration::ZERO
        } else {
            Duration::from_millis(wake.saturating_duration_since(now).as_millis() as u64)
        };
        self.wait(ready, timeout, batch)?;
        if learning && !timeout.is_zero() {
            batch_size.learn(batch.want, ready.len());
        }
        Ok(())
    }

    /// Hands the kernel what is queued (io_uring's poll cancels) and lets them finish, so that
    /// sockets closed at the end of a run are released now rather than when the ring is.
    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            Poller::Epoll { .. } => Ok(()),
            Poller::Uring(uring) => uring.flush(),
        }
    }
}

/// Epoll's batched wait, for machines without io_uring's: epoll has no minimum wait, so the
/// thread looks without blocking and, short of `want` ready sockets, sleeps on a timer in
/// quarters of `min_wait` and looks again. A timer wakes this thread on its own core, where a
/// socket's readiness would have the server's core send the wake-up: against nginx on one
/// core at -c 50, 0.001 wake-ups sent per request instead of 0.34, and 4 % more requests/s
/// (bench/server_cost_per_generator.py). Only a wait that found nothing after `min_wait`
/// blocks until readiness, as an unbatched one does. The responses' times are their arrival
/// stamps, so a sleep delays only the next requests.
fn epoll_batched(
    poll: &mut Poll,
    events: &mut Events,
    ready: &mut Vec<Readiness>,
    timeout: Duration,
    batch: Batch,
) -> io::Result<()> {
    let hold = batch.min_wait.min(timeout);
    let mut slept = Duration::ZERO;
    loop {
        epoll_look(poll, events, ready, Duration::ZERO)?;
        if ready.len() >= batch.want || slept >= hold {
            break;
        }
        let nap = (batch.min_wait / 4).min(hold - slept);
        std::thread::sleep(nap);
        slept += nap;
    }
    if ready.is_empty() {
        epoll_look(poll, events, ready, timeout.saturating_sub(slept))?;
    }
    Ok(())
}

/// One epoll_wait of at most `timeout`, its events added to `ready`; a signal ends it with
/// none (mio clears `events` first).
fn epoll_look(
    poll: &mut Poll,
    events: &mut Events,
    ready: &mut Vec<Readiness>,
    timeout: Duration,
) -> io::Result<()> {
    match poll.poll(events, Some(timeout)) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
        Err(e) => return Err(e),
    }
    ready.extend(events.iter().map(|event| Readiness {
        token: event.token().0,
        readable: event.is_readable() || event.is_read_closed() || event.is_error(),
        writable: event.is_writable() || event.is_error(),
        hangup: event.is_read_closed() || event.is_error(),
    }));
    Ok(())
}

const POLL_MASK: u32 =
    (libc::POLLIN | libc::POLLOUT | libc::POLLRDHUP | libc::POLLERR | libc::POLLHUP) as u32;
const READABLE_MASK: u32 = (libc::POLLIN | libc::POLLRDHUP | libc::POLLERR | libc::POLLHUP) as u32;
const WRITABLE_MASK: u32 = (libc::POLLOUT | libc::POLLERR | libc::POLLHUP) as u32;
const HANGUP_MASK: u32 = (libc::POLLRDHUP | libc::POLLERR | libc::POLLHUP) as u32;
/// IORING_ENTER_GETEVENTS.
const ENTER_GETEVENTS: u32 = 1;
/// Enters of one look without waiting: 64 × 20 deferred completions at most, so that a look
/// stays short however much is ready (the completion queue holds far more).
const PEEK_ROUNDS_MAX: usize = 64;
/// user_data of poll cancels, whose completions mean nothing to the worker.
const CANCEL: u64 = u64::MAX;

pub(crate) struct UringPoller {
    ring: IoUring,
    /// Per token: the socket watched (-1: none) and the generation of its poll, so that a
    /// completion of a removed poll is never taken for the token's next socket.
    watched: Vec<(RawFd, u32)>,
    /// Tokens whose multishot poll ended (no IORING_CQE_F_MORE) and must be armed again.
    rearm: Vec<usize>,
}

impl UringPoller {
    /// Made on the thread that will wait on it: SINGLE_ISSUER binds the ring to its creator.
    fn new(tokens: usize) -> io::Result<Self> {
        // Room for an add and a cancel per token in one pass; the queue is flushed when full.
        let entries = (2 * tokens + 64).next_power_of_two().clamp(256, 16384) as u32;
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .setup_cqsize(2 * entries)
            .build(entries)?;
        if !ring.params().is_feature_min_timeout() {
            // Before Linux 6.12 a batched wait could hold a lone response until the timeout.
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel has no IORING_FEAT_MIN_TIMEOUT (Linux 6.12)",
            ));
        }
        Ok(UringPoller { ring, watched: vec![(-1, 0); tokens], rearm: Vec::new() })
    }

    fn user_data(&self, token: usize) -> u64 {
        (u64::from(self.watched[token].1) << 32) | token as u64
    }

    fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: poll entries point at no buffer; their descriptor outlives the poll or is
            // removed by `deregister` first.
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                return Ok(());
            }
            self.ring.submit()?;
        }
    }

    fn arm(&mut self, token: usize) -> io::Result<()> {
        let fd = self.watched[token].0;
        let entry = opcode::PollAdd::new(types::Fd(fd), POLL_MASK)
            .multi(true)
            .build()
            .user_data(self.user_data(token));
        self.push(&entry)
    }

    fn register(&mut self, fd: RawFd, token: usize) -> io::Result<()> {
        self.watched[token].0 = fd;
        self.arm(token).map_err(|e| {
            self.watched[token].0 = -1;
            io::Error::new(e.kind(), format!("io_uring: cannot watch the socket: {e}"))
        })
    }

    fn deregister(&mut self, token: usize) -> io::Result<()> {
        if self.watched[token].0 < 0 {
            return Ok(());
        }
        // A cancel, not IORING_OP_POLL_REMOVE: a removal gives up (EALREADY) while a wake-up of
        // the socket waits in deferred task work (the server's FIN after a response), leaving
        // the poll, and the socket it holds, until the ring closes. A cancel marks it all the
        // same, and the pending work then ends it.
        let entry = opcode::AsyncCancel::new(self.user_data(token))
            .build()
            .user_data(CANCEL)
            .flags(squeue::Flags::SKIP_SUCCESS);
        self.watched[token] = (-1, self.watched[token].1.wrapping_add(1));
        self.push(&entry)
    }

    fn flush(&mut self) -> io::Result<()> {
        // A cancelled poll ends in deferred task work, which runs only in an enter that asks
        // for events, a batch at a time (the kernel flags TASKRUN while some is left); its end
        // releases the socket. The completions themselves mean nothing any more.
        loop {
            self.peek()?;
            self.ring.completion().for_each(drop);
            if !self.ring.submission().taskrun() {
                return Ok(());
            }
        }
    }

    fn wait(&mut self, ready: &mut Vec<Readiness>, timeout: Duration, batch: Batch) -> io::Result<()> {
        if timeout.is_zero() {
            self.peek()?;
        } else {
            self.block(timeout, batch)?;
            // A wait runs at most max(20, want) deferred completions: the rest now, not a
            // wait later (with peek's own rounds, 10 k connections on one thread against nginx
            // went from 13.9 k to 18.7 k req/s).
            if self.ring.submission().taskrun() {
                self.peek()?;
            }
        }
        self.reap(ready)
    }

    /// Submits what is queued and collects what is ready, without waiting. The crate's
    /// submit asks for events only when it sees the kernel's TASKRUN flag; asking always
    /// runs the deferred work that turns ready sockets into completions, but at most 20 items
    /// of it per enter (IO_LOCAL_TW_DEFAULT_MAX), the TASKRUN flag staying up while some is
    /// left: so it asks again while the flag is up (a bounded number of times). Asking once
    /// left all but 20 of 64 connects issued between two looks for later: 10 k connects on one
    /// thread measured a p50 of 325 ms, the ramp's length, against epoll's 10 ms.
    fn peek(&mut self) -> io::Result<()> {
        for _ in 0..PEEK_ROUNDS_MAX {
            let pending = self.ring.submission().len() as u32;
            // SAFETY: a plain io_uring_enter with no argument structure.
            match unsafe { self.ring.submitter().enter::<libc::sigset_t>(pending, 0, ENTER_GETEVENTS, None) }
            {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => return Ok(()),
                Err(e) => return Err(e),
            }
            if !self.ring.submission().taskrun() {
                break;
            }
        }
        Ok(())
    }

    fn block(&mut self, timeout: Duration, batch: Batch) -> io::Result<()> {
        let want = batch.want.max(1);
        let timespec = types::Timespec::from(timeout);
        // Holding out for one is no hold: without the second timer the wait is cheaper.
        let min_wait = if want > 1 { batch.min_wait } else { Duration::ZERO };
        let min_wait_us = u32::try_from(min_wait.as_micros()).unwrap_or(u32::MAX);
        let args = types::SubmitArgs::new().timespec(&timespec).min_wait_usec(min_wait_us);
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => {}
            // The timeout passed, a signal came, or the completion queue overflowed (EBUSY):
            // what is there is reaped below.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn reap(&mut self, ready: &mut Vec<Readiness>) -> io::Result<()> {
        let UringPoller { ring, watched, rearm } = self;
        for completion in ring.completion() {
            let user_data = completion.user_data();
            if user_data == CANCEL {
                continue;
            }
            let token = (user_data & u64::from(u32::MAX)) as usize;
            let generation = (user_data >> 32) as u32;
            if watched.get(token).is_none_or(|&(fd, current)| fd < 0 || current != generation) {
                continue;
            }
            let result = completion.result();
            let mask = if result < 0 { READABLE_MASK | WRITABLE_MASK } else { result as u32 };
            ready.push(Readiness {
                token,
                readable: mask & READABLE_MASK != 0,
                writable: mask & WRITABLE_MASK != 0,
                hangup: mask & HANGUP_MASK != 0,
            });
            if !cqueue::more(completion.flags()) {
                rearm.push(token);
            }
        }
        while let Some(token) = self.rearm.pop() {
            self.arm(token)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::Instant;

    /// A connected pair: the client as the worker holds it, and the server's end.
    fn connected_pair(listener: &TcpListener) -> (TcpStream, std::net::TcpStream) {
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        client.set_nonblocking(true).unwrap();
        let (server, _) = listener.accept().unwrap();
        (TcpStream::from_std(client), server)
    }

    fn uring(tokens: usize) -> Poller {
        Poller::uring(tokens).expect("io_uring with IORING_FEAT_MIN_TIMEOUT (Linux 6.12+)")
    }

    /// One socket registered under token 0 with `poller`, its connect's edge already seen:
    /// the poller, the client as the worker holds it, and the server's end.
    fn one_watched_socket(mut poller: Poller) -> (Poller, TcpStream, std::net::TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (mut client, server) = connected_pair(&listener);
        poller.register(&mut client, 0).unwrap();
        drain_connect_edges(&mut poller, &[0]);
        (poller, client, server)
    }

    /// Removes token 0's socket and closes it: the server must see the FIN now, not when the
    /// ring goes.
    fn close_and_expect_fin(poller: &mut Poller, client: TcpStream, server: &mut std::net::TcpStream) {
        poller.deregister(0).unwrap();
        drop(client);
        poller.flush().unwrap();
        server.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(server.read(&mut [0u8; 8]).expect("the client's FIN, within 2 s"), 0);
    }

    /// Waits until every token in `tokens` has reported writable (the connect's edge).
    fn drain_connect_edges(poller: &mut Poller, tokens: &[usize]) {
        let mut ready = Vec::new();
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while seen.len() < tokens.len() && Instant::now() < deadline {
            poller
                .wait(&mut ready, Duration::from_millis(100), Batch { want: 1, min_wait: Duration::ZERO })
                .unwrap();
            for edge in ready.iter().filter(|r| r.writable) {
                if !seen.contains(&edge.token) {
                    seen.push(edge.token);
                }
            }
        }
        assert_eq!(seen.len(), tokens.len(), "writable edges: {seen:?}");
    }

    #[test]
    fn uring_reports_data_and_releases_a_removed_socket() {
        let (mut poller, mut client, mut server) = one_watched_socket(uring(1));

        server.write_all(b"x").unwrap();
        let mut ready = Vec::new();
        poller.wait(&mut ready, Duration::from_secs(2), Batch { want: 1, min_wait: Duration::ZERO }).unwrap();
        assert!(ready.iter().any(|r| r.token == 0 && r.readable), "{ready:?}");

        let mut buffer = [0u8; 8];
        assert_eq!(client.read(&mut buffer).unwrap(), 1, "read, so that the close is a FIN, not a reset");
        close_and_expect_fin(&mut poller, client, &mut server);
        // And nothing more is reported for the removed socket.
        poller
            .wait(&mut ready, Duration::from_millis(50), Batch { want: 1, min_wait: Duration::ZERO })
            .unwrap();
        assert!(ready.is_empty(), "{ready:?}");
    }

    #[test]
    fn a_socket_whose_wake_up_is_still_pending_is_released_too() {
        // The server's FIN queues a wake-up (deferred task work) that no wait has run when the
        // worker closes the socket: a cancel must take the poll all the same.
        let (mut poller, client, mut server) = one_watched_socket(uring(1));
        server.shutdown(std::net::Shutdown::Write).unwrap();
        close_and_expect_fin(&mut poller, client, &mut server);
    }

    #[test]
    fn a_batched_wait_holds_for_more_sockets_but_no_longer_than_min_wait() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (mut first, mut first_server) = connected_pair(&listener);
        let (mut second, mut second_server) = connected_pair(&listener);
        let mut poller = uring(2);
        poller.register(&mut first, 0).unwrap();
        poller.register(&mut second, 1).unwrap();
        drain_connect_edges(&mut poller, &[0, 1]);
        let mut ready = Vec::new();

        first_server.write_all(b"x").unwrap();
        let started = Instant::now();
        let batch = Batch { want: 2, min_wait: Duration::from_millis(100) };
        poller.wait(&mut ready, Duration::from_secs(5), batch).unwrap();
        let held = started.elapsed();
        assert_eq!(ready.iter().map(|r| r.token).collect::<Vec<_>>(), vec![0]);
        assert!(held >= Duration::from_millis(95) && held < Duration::from_secs(2), "held {held:?}");

        first_server.write_all(b"y").unwrap();
        second_server.write_all(b"z").unwrap();
        let started = Instant::now();
        let batch = Batch { want: 2, min_wait: Duration::from_secs(3) };
        poller.wait(&mut ready, Duration::from_secs(5), batch).unwrap();
        let mut tokens: Vec<usize> = ready.iter().map(|r| r.token).collect();
        tokens.sort();
        assert_eq!(tokens, vec![0, 1]);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "two ready sockets waited {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn the_batch_grows_while_waits_get_theirs_and_falls_to_what_came() {
        let mut size = BatchSize::new();
        let mut seen = Vec::new();
        for _ in 0..60 {
            let want = size.want(25);
            seen.push(want);
            size.learn(want, want);
        }
        assert_eq!(&seen[..8], &[1; 8]);
        assert_eq!(&seen[8..16], &[2; 8]);
        assert_eq!(*seen.last().unwrap(), 25, "capped: {seen:?}");
        size.learn(25, 3);
        assert_eq!(size.want(25), 3);
        // Three came: holding out pays, so the batch grows again at the usual pace.
        for _ in 0..8 {
            let want = size.want(25);
            size.learn(want, want);
        }
        assert_eq!(size.want(25), 6);
    }

    #[test]
    fn probes_that_gain_nothing_come_further_apart_until_one_does() {
        // One response at a time: a probe after 8 waits, then 16, 32, ... up to 1024 apart.
        let mut size = BatchSize::new();
        let mut probes = Vec::new();
        for wait in 0..8192 {
            let want = size.want(25);
            if want > 1 {
                probes.push(wait);
            }
            size.learn(want, 1);
        }
        let gaps: Vec<usize> = probes.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(probes[0], 8);
        assert_eq!(&gaps[..7], &[17, 33, 65, 129, 257, 513, 1025], "{probes:?}");
        assert!(gaps[7..].iter().all(|&gap| gap == 1025), "{gaps:?}");
        // Then the responses bunch: the next probe gets two, and the batch grows at the
        // usual pace again.
        while size.want(25) == 1 {
            size.learn(1, 1);
        }
        for _ in 0..8 {
            size.learn(2, 2);
        }
        assert_eq!(size.want(25), 4, "grew after 8 waits, not 1024");
    }

    #[test]
    fn epoll_holds_out_by_timer_as_io_uring_does() {
        let (mut poller, _client, mut server) = one_watched_socket(Poller::epoll().unwrap());
        server.write_all(b"x").unwrap();
        let mut ready = Vec::new();
        // Holding out for one is no hold.
        let started = Instant::now();
        poller
            .wait(&mut ready, Duration::from_secs(5), Batch { want: 1, min_wait: Duration::from_secs(3) })
            .unwrap();
        assert!(ready.iter().any(|r| r.token == 0 && r.readable), "{ready:?}");
        assert!(started.elapsed() < Duration::from_secs(1), "epoll held {:?}", started.elapsed());
        // For two, with one ready: the one, once the minimum wait is over.
        server.write_all(b"y").unwrap();
        let started = Instant::now();
        let min_wait = Duration::from_millis(200);
        poller.wait(&mut ready, Duration::from_secs(5), Batch { want: 2, min_wait }).unwrap();
        let held = started.elapsed();
        assert!(ready.iter().any(|r| r.token == 0 && r.readable), "{ready:?}");
        assert!(held >= min_wait && held < Duration::from_secs(1), "epoll held {held:?}");
    }
}
