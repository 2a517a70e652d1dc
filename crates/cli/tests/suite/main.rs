//! nodelay's integration tests, one module per subject, in one test binary: built and
//! linked once, with `common` compiled once. As 44 binaries, each compiled `common` again and
//! linked the whole of nodelay (2.7 s each from scratch; 16 s for all of them as one).
//! Tests are named `FILE::TEST` (`wan_paths::a_two_write_...`): `cargo nextest run -p nodelay
//! --test suite wan_paths::`, or `cargo test -p nodelay --test suite wan_paths::`.

// Before the modules: its macros (`verdict!`, `control!`) are theirs too.
#[macro_use]
mod common;

mod architecture;
mod bench;
mod bench_paths;
mod ci_jobs;
mod compare;
mod container;
mod conventions;
mod docs_commands;
mod doctor;
mod doctor_failures;
mod ebpf_fix;
mod ebpf_holds;
mod exec;
mod fix;
mod gate;
mod generator;
mod h2_peers;
mod habits;
mod hardening;
mod hop_peers;
mod hops;
mod html;
mod http2;
mod https;
mod io_uring;
mod latency_family;
mod memory;
mod merge;
mod msrv;
mod open_loop;
mod pcap;
mod pcap_paths;
mod peers;
mod proxy;
mod proxy_paths;
mod raw;
mod scenario;
mod self_docs;
mod terminal;
mod unmodified_peers;
mod uwsgi;
mod verdicts;
mod wan_paths;
mod watch;
