//! A server in a child process for the server view's tests, driven over its own listening
//! socket (so the tests' connection to it is one the server accepted, never an upstream),
//! and listeners standing in for its upstreams.
#![allow(dead_code)] // Each test binary uses its own part.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Commands, one a line, each answered `ok` once done:
/// `burn MS` (CPU on a thread named `burner`, started on first use), `sleep MS`,
/// `hold PORT N` (N connections to 127.0.0.1:PORT, kept), `close PORT` (closes them),
/// `churn PORT N` (N fresh connections, each closed at once), `send PORT N` (N one-byte
/// messages over the first held connection to PORT, each awaiting its echo),
/// `reuse PORT LOCAL` (a connection from local port LOCAL, closed at once; retried while the
/// kernel refuses the 4-tuple, still in TIME-WAIT from the last time and younger than 1 s),
/// `fork_burn MS` (a worker forked now, holding the listening socket, burns MS of CPU and
/// stays), `churn_forever PORT` (fresh connections one after the other, on a thread, until it ends),
/// `brief PORT N GAP_MS LIFE_MS` (N connections one after the other, each closed LIFE_MS after
/// it connected, GAP_MS between one's close and the next connect).
/// With `fork` as argument, a second process (a worker) shares the listening socket.
const SERVER: &str = r#"
import ctypes, os, queue, socket, sys, threading, time

def name_thread(name):
    with open(f'/proc/self/task/{threading.get_native_id()}/comm', 'w') as comm:
        comm.write(name)

work, done = queue.Queue(), queue.Queue()

def burner():
    name_thread('burner')
    while True:
        end = time.thread_time() + work.get() / 1000
        while time.thread_time() < end:
            pass
        done.put(None)

held = {}

def run(command, args):
    if command == 'burn':
        if not any(t.name == 'burner' for t in threading.enumerate()):
            threading.Thread(target=burner, name='burner', daemon=True).start()
        work.put(int(args[0]))
        done.get()
    elif command == 'sleep':
        time.sleep(int(args[0]) / 1000)
    elif command == 'hold':
        port, count = int(args[0]), int(args[1])
        held.setdefault(port, []).extend(socket.create_connection(('127.0.0.1', port)) for _ in range(count))
    elif command == 'close':
        for connection in held.pop(int(args[0]), []):
            connection.close()
    elif command == 'churn':
        for _ in range(int(args[1])):
            socket.create_connection(('127.0.0.1', int(args[0]))).close()
    elif command == 'reuse':
        port, local = int(args[0]), int(args[1])
        deadline = time.monotonic() + 10
        while True:
            connection = socket.socket()
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                connection.bind(('127.0.0.1', local))
                connection.connect(('127.0.0.1', port))
                break
            except OSError:
                connection.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        connection.close()
    elif command == 'fork_burn':
        ready, done_burning = os.pipe()
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: ends with its parent
            end = time.thread_time() + int(args[0]) / 1000
            while time.thread_time() < end:
                pass
            os.write(done_burning, b'x')
            while True:
                time.sleep(3600)
        os.read(ready, 1)
    elif command == 'churn_forever':
        port = int(args[0])
        def churn():
            while True:
                socket.create_connection(('127.0.0.1', port)).close()
        threading.Thread(target=churn, daemon=True).start()
    elif command == 'brief':
        port, count, gap, life = (int(a) for a in args)
        for _ in range(count):
            connection = socket.create_connection(('127.0.0.1', port))
            time.sleep(life / 1000)
            connection.close()
            time.sleep(gap / 1000)
    elif command == 'send':
        connection = held[int(args[0])][0]
        for _ in range(int(args[1])):
            connection.sendall(b'x')
            connection.recv(1)

listener = socket.socket()
listener.bind(('127.0.0.1', 0))
listener.listen(8)
if sys.argv[1:] == ['fork'] and os.fork() == 0:
    ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: ends with its parent
    os.write(1, f'worker {os.getpid()}\n'.encode())  # one write: the two lines never mix
else:
    os.write(1, f'port {listener.getsockname()[1]}\n'.encode())
while True:
    client, _ = listener.accept()
    for line in client.makefile():
        command, *args = line.split()
        run(command, args)
        client.sendall(b'ok\n')
"#;

pub struct Server {
    child: Child,
    /// The forked worker, when asked for.
    pub worker_pid: Option<i32>,
    pub port: u16,
    commands: Option<BufReader<TcpStream>>,
}

impl Server {
    pub fn spawn() -> Server {
        Server::spawn_with(&[])
    }

    /// A parent and a forked worker sharing the listening socket, as nginx does.
    pub fn spawn_forked() -> Server {
        Server::spawn_with(&["fork"])
    }

    fn spawn_with(args: &[&str]) -> Server {
        let mut child = Command::new("python3")
            .args(["-c", SERVER])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        // `port N`, and `worker PID` from a forked worker, in either order.
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut server = Server { child, worker_pid: None, port: 0, commands: None };
        for line in lines.take(1 + args.len()) {
            let line = line.unwrap();
            match line.split_once(' ').expect("the server prints `what N`") {
                ("port", port) => server.port = port.parse().unwrap(),
                ("worker", pid) => server.worker_pid = Some(pid.parse().unwrap()),
                _ => panic!("the server printed {line}"),
            }
        }
        server
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn address(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.port).into()
    }

    /// Sends a command and waits until it is done.
    pub fn ask(&mut self, command: &str) {
        let address = self.address();
        let commands =
            self.commands.get_or_insert_with(|| BufReader::new(TcpStream::connect(address).unwrap()));
        writeln!(commands.get_mut(), "{command}").unwrap();
        let mut answer = String::new();
        commands.read_line(&mut answer).unwrap();
        assert_eq!(answer, "ok\n", "the server's answer to {command}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A listener that reads each connection to its end and closes it: a destination for
/// connections that are opened and closed (the client closes first, so its side is left
/// in TIME-WAIT).
pub struct Draining {
    pub address: SocketAddr,
    closed: Arc<AtomicUsize>,
}

impl Draining {
    /// Closes each connection once its client has: the client's side ends in TIME-WAIT.
    pub fn start() -> Draining {
        Draining::serve(false)
    }

    /// Keeps its side of each connection open once the client has closed: the client's side
    /// stays in FIN-WAIT-2 (for `tcp_fin_timeout`, 60 s, far longer than a test). A TIME-WAIT
    /// can vanish: one of twenty
    /// closed connections, in 2 runs of 10, was reset out of TIME-WAIT (the listener side,
    /// whose client's FIN came before `accept`, sent an ACK after its own FIN; the TIME-WAIT
    /// answered it, the closed socket answered that with a RST, and a RST ends a TIME-WAIT
    /// where `tcp_rfc1337` is 0, the default). A FIN-WAIT-2 whose peer never closes sends
    /// nothing that could draw such a reset.
    pub fn start_holding() -> Draining {
        Draining::serve(true)
    }

    fn serve(hold: bool) -> Draining {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let closed = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&closed);
        let held = Arc::new(std::sync::Mutex::new(Vec::new()));
        std::thread::spawn(move || {
            for mut stream in listener.incoming().map_while(Result::ok) {
                let (counter, held) = (Arc::clone(&counter), Arc::clone(&held));
                std::thread::spawn(move || {
                    let _ = io::copy(&mut stream, &mut io::sink());
                    if hold {
                        held.lock().unwrap_or_else(|e| e.into_inner()).push(stream);
                    } else {
                        drop(stream);
                    }
                    counter.fetch_add(1, Ordering::Release);
                });
            }
        });
        Draining { address, closed }
    }

    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// Waits until `count` connections have been closed by their client and answered by
    /// this side (closed, or held): their client's sides are in TIME-WAIT or FIN-WAIT-2 by
    /// then, so the socket table holds still (a line that changes while /proc/net/tcp is
    /// read may be missed).
    pub fn wait_closed(&self, count: usize) {
        wait_until("the upstream's closes", || self.closed.load(Ordering::Acquire) >= count);
    }
}

/// A listener that echoes what each connection sends: a destination for a pooled connection.
pub fn echoing_listener() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut reader = stream.try_clone().unwrap();
                let mut writer = stream;
                let _ = io::copy(&mut reader, &mut writer);
            });
        }
    });
    address
}

/// Moves the calling thread into a network namespace of its own with loopback up: the server
/// the test then starts, its upstreams, the connections and the namespace's TCP counters are
/// the test's alone. In the machine's namespace other programs open connections (a laptop's
/// browser every second, another test's peers): the socket tables are read a page at a time,
/// and a line another test's connection moves within its bucket between two pages is missed
/// (the server-view test counted 19 of 20 closed connections in 2 of 4 CI runs while other
/// tests opened and closed theirs), and a sampler that slows only once the count has stood
/// still for a second never slows. Threads and processes started from this thread afterwards
/// are in the namespace too. Called first by every server-view test, which then runs beside
/// the others.
pub fn private_network() {
    // SAFETY: unshare(2) takes flags only; CLONE_NEWNET moves the calling thread alone.
    let moved = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    assert_eq!(moved, 0, "unshare(CLONE_NEWNET): {} (the test needs root)", io::Error::last_os_error());
    let up = Command::new("ip").args(["link", "set", "lo", "up"]).status().expect("run ip");
    assert!(up.success(), "ip link set lo up in the test's namespace failed");
}

/// Polls `done` until it holds; fails the test after 10 s.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}
