//! The server view against a real server in a child process on loopback: its CPU, its
//! threads, the upstream connections it opens or reuses, and the targets that name it.
#![cfg(target_os = "linux")]

mod support;

use nodelay_host::{HostError, SamplerPace, ServerView, ServerWatch, Target, Upstream};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};
use support::{Draining, Server, echoing_listener, private_network, wait_until};

fn watch_while(target: Target, server: &mut Server, commands: &[&str]) -> ServerView {
    let watch = ServerWatch::start(target).unwrap();
    for command in commands {
        server.ask(command);
    }
    watch.finish(0).unwrap()
}

/// A watch at the relaxed pace (its end far off) once its sampler has slowed, the server
/// having stood still for a second: at most 2 looks in 200 ms.
fn slowed_watch(server: &Server) -> ServerWatch {
    let far = Instant::now() + Duration::from_secs(600);
    let watch =
        ServerWatch::start_paced(Target::Address(server.address()), SamplerPace::RelaxedUntil(far)).unwrap();
    wait_until("the sampler's slower pace (at most 2 looks in 200 ms)", || {
        let before = watch.samples_taken();
        std::thread::sleep(Duration::from_millis(200));
        watch.samples_taken() - before <= 2
    });
    watch
}

fn upstream(view: &ServerView, destination: SocketAddr) -> &Upstream {
    let found = view.upstreams.iter().find(|u| u.destination == destination);
    found.unwrap_or_else(|| panic!("no upstream {destination} in {view:#?}"))
}

#[test]
fn a_thread_that_burns_cpu_is_the_busiest_and_named() {
    private_network();
    let mut server = Server::spawn();
    let view = watch_while(Target::Address(server.address()), &mut server, &["burn 300"]);
    assert!(view.cpu_us() >= 250_000, "{view:#?}");
    let busiest = view.busiest_thread().expect("a thread ran");
    // The burner appeared during the run: it counts from zero, not from its birth.
    assert_eq!((busiest.name.as_str(), busiest.pid), ("burner", server.pid()), "{view:#?}");
    assert!((250_000..=view.wall_us).contains(&busiest.on_cpu_us), "{view:#?}");
    assert_eq!(view.processes.iter().map(|p| p.pid).collect::<Vec<_>>(), [server.pid()]);
    // The tests' own connection to it was accepted: it is not an upstream.
    assert_eq!(view.upstreams, []);
    assert_eq!(view.unread, Vec::<String>::new());
    assert!(view.online_cpus >= 1);
}

#[test]
fn a_sleeping_server_spends_almost_nothing() {
    private_network();
    let mut server = Server::spawn();
    let view = watch_while(Target::Address(server.address()), &mut server, &["sleep 300"]);
    assert!(view.wall_us >= 300_000, "{view:#?}");
    assert!(view.cpu_us() < 50_000, "{view:#?}");
    assert!(view.threads.iter().all(|t| t.on_cpu_us < 50_000), "{view:#?}");
    if std::path::Path::new("/proc/pressure/cpu").exists() {
        let share = view.cpu_pressure.expect("PSI is there").some_waiting_share;
        assert!((0.0..=1.0).contains(&share), "{share}");
    }
}

/// Twenty connections opened and closed during the run to one destination, a hundred
/// messages on a connection held from before the run to another: one looks like
/// `connection-per-request`, the other like a pool. The destination keeps its side open (see
/// `Draining::start_holding`): the count is of connections the table still lists.
#[test]
fn fresh_and_pooled_upstream_connections_are_told_apart() {
    private_network();
    let (fresh, pooled) = (Draining::start_holding(), echoing_listener());
    let mut server = Server::spawn();
    server.ask(&format!("hold {} 1", pooled.port()));
    let watch = ServerWatch::start(Target::Address(server.address())).unwrap();
    // The first fresh connection stays open until a sample has seen it: that is how the
    // watch learns the destination of connections that live shorter than a sample.
    server.ask(&format!("hold {} 1", fresh.port()));
    let taken = watch.samples_taken();
    wait_until("a sample that began after the connection opened", || watch.samples_taken() >= taken + 2);
    server.ask(&format!("close {}", fresh.port()));
    server.ask(&format!("churn {} 19", fresh.port()));
    server.ask(&format!("send {} 100", pooled.port()));
    fresh.wait_closed(20);
    let view = watch.finish(0).unwrap();

    let opened = upstream(&view, fresh.address);
    assert_eq!((opened.opened, opened.open_at_end, opened.pooled_segments_out), (20, 0, 0), "{view:#?}");
    let reused = upstream(&view, pooled);
    assert_eq!((reused.opened, reused.open_at_end), (0, 1), "{view:#?}");
    assert!(reused.pooled_segments_out >= 100, "{view:#?}");
    assert!(opened.carried_traffic() && reused.carried_traffic());
    assert_eq!(view.upstreams.len(), 2, "{view:#?}");
    assert_eq!(view.upstreams[0].destination, fresh.address, "most opened first");
    // Twenty connects are far from a round of the local port range; the namespace counted
    // them among its connects (this test's own included: it passed 0 as nodelay's).
    assert!(view.upstreams.iter().all(|u| !u.ports_cycled), "{view:#?}");
    let connects = view.namespace_connects_by_others.expect("this namespace's counters");
    assert!(connects >= 20, "{connects} connects in the namespace during the run");
}

/// The run's own connects are not the server's: the namespace's count less those the run
/// says it made, and never below nothing. Two watches over the same activity, the second
/// inside the first, told 0 and 200 own connects: the first counts 200 more, and any other
/// process's connects meanwhile can only add to it (its window is the larger).
#[test]
fn the_runs_own_connects_come_off_the_namespace_count() {
    private_network();
    let mut server = Server::spawn();
    server.ask("sleep 1");
    let draining = Draining::start();
    let outer = ServerWatch::start(Target::Address(server.address())).unwrap();
    let inner = ServerWatch::start(Target::Address(server.address())).unwrap();
    // 200 connects of this process (the load's), 5 of the server.
    for _ in 0..200 {
        drop(TcpStream::connect(draining.address).unwrap());
    }
    server.ask(&format!("churn {} 5", draining.port()));
    draining.wait_closed(205);
    let inner = inner.finish(200).unwrap().namespace_connects_by_others.expect("counted");
    let outer = outer.finish(0).unwrap().namespace_connects_by_others.expect("counted");
    assert!(inner >= 5, "the server's 5 connects at least: {inner}");
    // The slivers the outer watch has alone last milliseconds: 50 connects are a wide margin.
    assert!((200..250).contains(&(outer - inner)), "{outer} counted without the run's 200, {inner} with");
    let watch = ServerWatch::start(Target::Address(server.address())).unwrap();
    server.ask(&format!("churn {} 5", draining.port()));
    draining.wait_closed(210);
    assert_eq!(watch.finish(u64::MAX).unwrap().namespace_connects_by_others, Some(0));
}

/// At the relaxed pace, upstream connections that live 5 ms, about twenty a second for three
/// seconds, begun once the server has stood still for over a second and the sampler looks
/// only every 160 ms (~20 looks in those 3 s): their connects move the namespace's
/// `ActiveOpens`, so it looks at its quick pace again (10 ms, or 100 times a look's CPU: ~30
/// ms in a debug build, ~3 times the slow count or more) and meets several. The bound on the
/// looks is twice the slow pace's count.
#[test]
fn brief_upstream_connections_after_a_still_second_are_met() {
    // The sampler slows once the namespace stands still for a second: a namespace of its own.
    private_network();
    let brief = Draining::start();
    let mut server = Server::spawn();
    let watch = slowed_watch(&server);
    let (taken, began) = (watch.samples_taken(), Instant::now());
    server.ask(&format!("brief {} 70 40 5", brief.port()));
    let (looks, elapsed) = (watch.samples_taken() - taken, began.elapsed());
    let view = watch.finish(0).unwrap();
    let slow_looks = elapsed.as_millis() / 160;
    let met = view.upstreams.iter().find(|u| u.destination == brief.address).map_or(0, |u| u.opened);
    eprintln!("{looks} looks in {elapsed:?}; the brief upstream opened {met} times");
    assert!(
        u128::from(looks) >= 2 * slow_looks,
        "{looks} looks in {elapsed:?} while the server connected 70 times"
    );
    assert!(upstream(&view, brief.address).opened >= 1, "{view:#?}");
}

/// A run that ends early (Ctrl-C) tells the watch: its sampler, slowed to 160 ms on a still
/// server, looks at its quick pace again at once (six looks take ~60 ms in a release build,
/// ~200 ms in a debug one; at 160 ms they would take 960 ms).
#[test]
fn a_run_ending_early_brings_back_the_quick_pace() {
    // The sampler slows once the namespace stands still for a second: a namespace of its own.
    private_network();
    let server = Server::spawn();
    let watch = slowed_watch(&server);
    let (taken, told) = (watch.samples_taken(), Instant::now());
    watch.ending();
    wait_until("six looks", || watch.samples_taken() >= taken + 6);
    let elapsed = told.elapsed();
    watch.finish(0).unwrap();
    assert!(elapsed < Duration::from_millis(700), "six looks took {elapsed:?} after the end was told");
}

/// Loopback reuses a 4-tuple left in TIME-WAIT once it is 1 s old (`tcp_tw_reuse`), as a
/// server opening connections back to back does within seconds: a connection on it during
/// the run is new, although the 4-tuple was in the table at the start.
#[test]
fn a_connection_on_a_reused_four_tuple_counts_as_opened() {
    private_network();
    let reuse = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_tw_reuse").unwrap_or_default();
    if reuse.trim() == "0" {
        eprintln!("skipped: net.ipv4.tcp_tw_reuse is 0, no 4-tuple is reused");
        return;
    }
    let destination = Draining::start();
    let local = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = Server::spawn();
    // A pooled connection makes the destination known from the start.
    server.ask(&format!("hold {} 1", destination.port()));
    server.ask(&format!("reuse {} {local}", destination.port()));
    // Older than the kernel wants a TIME-WAIT it reuses (its timestamp's second has passed:
    // `tcp_twsk_unique`); 2 s, since the timer's ticks and that second need not line up.
    wait_until("a TIME-WAIT 2 s old", || time_wait_left_s(local).is_some_and(|left| left <= 58.0));
    let watch = ServerWatch::start(Target::Address(server.address())).unwrap();
    server.ask(&format!("reuse {} {local}", destination.port()));
    destination.wait_closed(2);
    let view = watch.finish(0).unwrap();
    let reused = upstream(&view, destination.address);
    assert_eq!((reused.opened, reused.open_at_end), (1, 1), "{view:#?}");
}

/// Seconds left in TIME-WAIT for the IPv4 connection from local port `local`
/// (/proc/net/tcp: state 06, `tr:tm->when` 03:ticks), in this thread's namespace.
fn time_wait_left_s(local: u16) -> Option<f64> {
    let table = std::fs::read_to_string("/proc/thread-self/net/tcp").ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let ours = fields.get(1)?.ends_with(&format!(":{local:04X}")) && fields.get(3) == Some(&"06");
        let (_, ticks) = fields.get(5)?.split_once(':')?;
        ours.then(|| u64::from_str_radix(ticks, 16).ok().map(|ticks| ticks as f64 / ticks_per_second))?
    })
}

#[test]
fn an_upstream_held_but_idle_carried_no_traffic() {
    private_network();
    let pooled = echoing_listener();
    let mut server = Server::spawn();
    server.ask(&format!("hold {} 1", pooled.port()));
    let view = watch_while(Target::Port(server.port), &mut server, &["sleep 50"]);
    assert_eq!(
        view.upstreams,
        [Upstream {
            destination: pooled,
            opened: 0,
            open_at_end: 1,
            pooled_segments_out: 0,
            ports_cycled: false
        }]
    );
    assert!(!view.upstreams[0].carried_traffic());
}

/// nginx's shape: a master and a worker share the listening socket; both are watched, and
/// the CPU is theirs together whichever of them served.
#[test]
fn every_holder_of_the_listening_socket_is_watched() {
    private_network();
    let mut server = Server::spawn_forked();
    let worker = server.worker_pid.expect("a forked worker");
    let view = watch_while(Target::Address(server.address()), &mut server, &["burn 300"]);
    let mut pids = vec![server.pid(), worker];
    pids.sort_unstable();
    assert_eq!(view.processes.iter().map(|p| p.pid).collect::<Vec<_>>(), pids);
    assert!(view.cpu_us() >= 250_000, "{view:#?}");
    assert_eq!(view.busiest_thread().map(|t| t.name.as_str()), Some("burner"));
}

/// A worker forked during the run (php-fpm, gunicorn replacing a worker) holds the listening
/// socket at the end: it is watched, from its start.
#[test]
fn a_worker_forked_during_the_run_is_watched_too() {
    private_network();
    let mut server = Server::spawn();
    let view = watch_while(Target::Address(server.address()), &mut server, &["fork_burn 300"]);
    assert_eq!(view.processes.len(), 2, "{view:#?}");
    let worker = view.processes.iter().find(|p| p.pid != server.pid()).unwrap().pid;
    assert!(view.cpu_us() >= 250_000, "{view:#?}");
    assert_eq!(view.busiest_thread().map(|t| t.pid), Some(worker), "{view:#?}");
}

#[test]
fn a_port_or_a_pid_names_the_server_too() {
    private_network();
    let mut server = Server::spawn();
    let by_port = watch_while(Target::Port(server.port), &mut server, &["burn 100"]);
    assert_eq!(by_port.processes.iter().map(|p| p.pid).collect::<Vec<_>>(), [server.pid()]);
    assert!(by_port.cpu_us() >= 80_000, "{by_port:#?}");
    let by_pid = watch_while(Target::Pid(server.pid()), &mut server, &["burn 100"]);
    assert_eq!(by_pid.processes.len(), 1);
    assert_eq!((by_pid.processes[0].pid, by_pid.processes[0].command.as_str()), (server.pid(), "python3"));
    assert!(by_pid.cpu_us() >= 80_000, "{by_pid:#?}");
}

#[test]
fn a_missing_process_or_listener_is_a_clear_error() {
    private_network();
    // PIDs are below /proc/sys/kernel/pid_max (at most 2^22).
    let error = ServerWatch::start(Target::Pid(i32::MAX)).err().expect("no such process");
    assert!(matches!(error, HostError::NoSuchProcess(i32::MAX)), "{error:?}");
    // A port bound but not listening, held for the test: no other test's listener can take it
    // meanwhile (a port freed at once was, by a test running beside this one).
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    held.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).unwrap();
    let free = held.local_addr().unwrap().as_socket().unwrap();
    for target in [Target::Port(free.port()), Target::Address(free)] {
        let error = ServerWatch::start(target).err().expect("nobody listens");
        assert_eq!(error.to_string(), format!("nothing listens on TCP port {} on this machine", free.port()));
    }
}

#[test]
fn a_server_that_exits_during_the_run_is_said_unread() {
    private_network();
    let mut server = Server::spawn();
    let watch = ServerWatch::start(Target::Address(server.address())).unwrap();
    server.ask("burn 10");
    let pid = server.pid();
    drop(server);
    let view = watch.finish(0).unwrap();
    assert!(view.unread.iter().any(|part| part.contains(&format!("PID {pid} (python3) ended"))), "{view:#?}");
}
