//! Running out of file descriptors in the middle of a run: every connect fails at once with
//! EMFILE, and the engine must count that as `out_of_files` and end on time, not recurse from
//! one failed connect into the next until the stack overflows (it did, under `ulimit -n 256`).
//!
//! Its own test binary, because it lowers this process's RLIMIT_NOFILE.

use nodelay_engine::{Control, EngineConfig, ErrorKind, Stats, descriptor_limit};
use std::net::TcpListener;
use std::time::{Duration, Instant};

fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count() as u64
}

#[test]
fn emfile_mid_run_is_counted_and_the_run_ends_on_time() {
    // A listener that never accepts: connects still complete into its backlog.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    let address = listener.local_addr().expect("local address");
    let request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    let mut config = EngineConfig::new(address, request);
    config.connections = 400;
    config.threads = 1;
    config.duration = Some(Duration::from_millis(500));

    // Room for the engine's own descriptors and a few sockets, far fewer than 400.
    let limit = open_descriptors() + 24;
    let lowered =
        libc::rlimit { rlim_cur: limit as libc::rlim_t, rlim_max: descriptor_limit().hard as libc::rlim_t };
    // SAFETY: setrlimit reads one valid rlimit struct.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);

    let started = Instant::now();
    let output = nodelay_engine::run(&config, &Control::new(1), |_| Stats::new()).expect("run ends");
    let elapsed = started.elapsed();
    let stats = &output.sinks[0];
    assert!(stats.errors(ErrorKind::OutOfFiles) > 0, "EMFILE counted as out_of_files");
    let message = stats.error_example(ErrorKind::OutOfFiles).expect("an example message");
    assert!(message.contains("out of file descriptors") && message.contains("ulimit -n"), "{message}");
    assert_eq!(stats.errors(ErrorKind::Other), 0, "not lumped into other");
    assert!(elapsed < Duration::from_secs(3), "ended on time: {elapsed:?}");
}
