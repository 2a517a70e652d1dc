//! `nodelay-path`: a real network path on one machine, between two network namespaces,
//! for the path tests and benchmarks and for anyone reproducing a slow service across a
//! WAN. The path itself is `nodelay_netpath`; this parses the arguments and waits.
#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use nodelay_netpath::{
    CLIENT_IP, Path, PathSpec, SERVER_IP, parse_duration, parse_loss_percent, parse_name, parse_rate,
};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    version,
    about = "A real TCP path of chosen round trip, jitter, loss and rate, between two network namespaces"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Creates namespaces NAME-c (10.211.0.1) and NAME-s (10.211.0.2) and forwards between
    /// them until told to stop (SIGTERM, SIGINT, SIGHUP), then removes both. Prints a line
    /// starting READY once packets move. Needs root.
    Up {
        /// Round trip the path adds (half each way): 40ms, 500us, 1s.
        #[arg(long, default_value = "40ms", value_parser = parse_duration)]
        rtt: Duration,
        /// Each packet's one-way delay varies uniformly by up to this either side, without
        /// reordering.
        #[arg(long, default_value = "0ms", value_parser = parse_duration)]
        jitter: Duration,
        /// Percentage of packets dropped, each direction.
        #[arg(long, default_value = "0", value_parser = parse_loss_percent)]
        loss: f64,
        /// Link rate (100mbit, 250kbit); unlimited if not given.
        #[arg(long, value_parser = parse_rate)]
        rate: Option<u64>,
        /// MTU of both devices, in bytes.
        #[arg(long, default_value_t = 1500)]
        mtu: u32,
        /// Names the namespaces and devices: 1-12 letters or digits.
        #[arg(long, default_value = "wan", value_parser = parse_name)]
        name: String,
        /// Seed of the loss and jitter draws.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// End when the process that started this one ends (for tests).
        #[arg(long)]
        with_parent: bool,
    },
}

fn main() -> ExitCode {
    let Command::Up { rtt, jitter, loss, rate, mtu, name, seed, with_parent } = Args::parse().command;
    let spec =
        PathSpec { rtt, jitter, loss_percent: loss, rate_bits_per_s: rate, mtu_bytes: mtu, name, seed };
    if let Err(error) = spec.validate() {
        eprintln!("nodelay-path: {error}");
        return ExitCode::from(2);
    }
    if !nodelay_netpath::running_as_root() {
        eprintln!("nodelay-path: needs root (it makes network namespaces and TUN devices)");
        return ExitCode::from(2);
    }
    if with_parent {
        nodelay_netpath::end_with_parent();
    }
    let signals = nodelay_netpath::block_termination_signals();
    let mut path = match Path::up(spec) {
        Ok(path) => path,
        Err(error) => {
            eprintln!("nodelay-path: cannot bring the path up: {error}");
            return ExitCode::FAILURE;
        }
    };
    let realtime = match path.start() {
        Ok(realtime) => realtime,
        Err(error) => {
            eprintln!("nodelay-path: cannot start forwarding: {error}");
            return ExitCode::FAILURE;
        }
    };
    if !realtime {
        eprintln!("nodelay-path: forwarding at normal priority: a busy machine will add delay");
    }
    println!(
        "READY {} {CLIENT_IP} -> {} {SERVER_IP} rtt {:?}",
        path.client_namespace(),
        path.server_namespace(),
        path.spec().rtt
    );
    signals.wait();
    drop(path);
    ExitCode::SUCCESS
}
