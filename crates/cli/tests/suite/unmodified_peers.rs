//! Unmodified servers of six stacks, and a statically linked C server, that stall as
//! started normally (Nagle on, head and body in separate writes, the client's delayed ACK):
//! `nodelay doctor` must call each one server-nagle-delayed-ack, and healthy once the stack's
//! own fix turns TCP_NODELAY on. Then the same as-shipped command line under
//! `nodelay exec -- PROGRAM ARGS` must be healthy, without the stack's fix: the preloaded shim
//! sets TCP_NODELAY (Erlang even calls setsockopt(TCP_NODELAY, 0) on every accepted socket,
//! which the shim turns into 1). The static C peer has no dynamic loader, so no preload
//! reaches it: `nodelay exec` falls back to fixing it from outside (exec.rs).

use crate::common::*;
use PeerKind::*;
use std::process::Command;

/// A small body: one segment, written after the head.
const SMALL: &str = "13";
/// The field case of the evhttp peer: Bitcoin Core's REST block, 40.7 ms per request.
const EVHTTP_BLOCK: &str = "25086";

#[derive(Clone, Copy, Debug)]
enum PeerKind {
    /// Python http.server (ThreadingHTTPServer, HTTP/1.1); fix: disable_nagle_algorithm.
    PythonHttpServer,
    /// The JDK's com.sun.net.httpserver; fix: -Dsun.net.httpserver.nodelay=true.
    JdkHttpServer,
    /// Ruby WEBrick; fix: TCP_NODELAY on its listening sockets.
    RubyWebrick,
    /// libevent evhttp with a 25 086-byte body; fix: TCP_NODELAY on the bound socket.
    Evhttp,
    /// A Node `net` server writing head and body separately; fix: socket.setNoDelay(true).
    NodeNet,
    /// An Erlang gen_tcp server listening with {nodelay, false}; fix: {nodelay, true}.
    ErlangGenTcp,
    /// The C split-write server linked with `cc -static`; fix: TCP_NODELAY on the listener.
    StaticCSplit,
}

/// The command line that starts `kind` as shipped, or with its own fix when `fixed`.
fn peer(kind: PeerKind, fixed: bool) -> (String, Vec<String>) {
    let small = |fix| with_fix(fixed, fix, &["--body-bytes", SMALL]);
    match kind {
        PythonHttpServer => script_command("python3", "python_http_server.py", &small("--disable-nagle")),
        JdkHttpServer => {
            let classes = compiled("JdkHttpServer.java");
            let args = with_fix(
                fixed,
                "-Dsun.net.httpserver.nodelay=true",
                &["-cp", &classes, "JdkHttpServer", SMALL],
            );
            ("java".to_string(), owned(&args))
        }
        RubyWebrick => script_command("ruby", "ruby_webrick_server.rb", &small("--nodelay")),
        Evhttp => (
            compiled("evhttp_server.c"),
            owned(&with_fix(fixed, "--nodelay", &["--body-bytes", EVHTTP_BLOCK])),
        ),
        NodeNet => script_command("node", "node_net_server.js", &small("--nodelay")),
        ErlangGenTcp => script_command("escript", "erlang_gentcp_server.erl", &small("--nodelay")),
        StaticCSplit => (compiled_static("c_split_server.c"), owned(&small("--nodelay"))),
    }
}

/// `rest`, after the fix flag when `fixed` (first: the JVM wants its -D before the class).
fn with_fix<'a>(fixed: bool, fix: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    fixed.then_some(fix).into_iter().chain(rest.iter().copied()).collect()
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// Starts the peer as [`peer`] says and waits until it listens.
fn start(kind: PeerKind, fixed: bool) -> Peer {
    let (program, args) = peer(kind, fixed);
    start_command(Command::new(program).args(args))
}

/// The peer as shipped, started under `nodelay exec --quiet --`.
fn start_exec(kind: PeerKind) -> Peer {
    let (program, args) = peer(kind, false);
    start_command(
        Command::new(env!("CARGO_BIN_EXE_nodelay")).args(["exec", "--quiet", "--", &program]).args(args),
    )
}

verdict!(python_http_server_as_shipped_stalls, start(PythonHttpServer, false), STALL);
verdict!(python_http_server_fixed_is_healthy, start(PythonHttpServer, true), HEALTHY);
verdict!(jdk_httpserver_as_shipped_stalls, start(JdkHttpServer, false), STALL);
verdict!(jdk_httpserver_fixed_is_healthy, start(JdkHttpServer, true), HEALTHY);
verdict!(ruby_webrick_as_shipped_stalls, start(RubyWebrick, false), STALL);
verdict!(ruby_webrick_fixed_is_healthy, start(RubyWebrick, true), HEALTHY);
verdict!(evhttp_as_shipped_stalls, start(Evhttp, false), STALL);
verdict!(evhttp_fixed_is_healthy, start(Evhttp, true), HEALTHY);
verdict!(node_net_as_shipped_stalls, start(NodeNet, false), STALL);
verdict!(node_net_fixed_is_healthy, start(NodeNet, true), HEALTHY);
verdict!(erlang_gen_tcp_as_shipped_stalls, start(ErlangGenTcp, false), STALL);
verdict!(erlang_gen_tcp_fixed_is_healthy, start(ErlangGenTcp, true), HEALTHY);
verdict!(python_http_server_under_exec_is_healthy, start_exec(PythonHttpServer), HEALTHY);
verdict!(jdk_httpserver_under_exec_is_healthy, start_exec(JdkHttpServer), HEALTHY);
verdict!(ruby_webrick_under_exec_is_healthy, start_exec(RubyWebrick), HEALTHY);
verdict!(evhttp_under_exec_is_healthy, start_exec(Evhttp), HEALTHY);
verdict!(node_net_under_exec_is_healthy, start_exec(NodeNet), HEALTHY);
verdict!(erlang_gen_tcp_under_exec_is_healthy, start_exec(ErlangGenTcp), HEALTHY);
verdict!(static_c_split_as_shipped_stalls, start(StaticCSplit, false), STALL);
verdict!(static_c_split_fixed_is_healthy, start(StaticCSplit, true), HEALTHY);

// The latency family's findings on the same servers fixed (common/controls.rs).
control!(python_http_server_fixed_controls, start(PythonHttpServer, true));
control!(jdk_httpserver_fixed_controls, start(JdkHttpServer, true));
control!(ruby_webrick_fixed_controls, start(RubyWebrick, true));
control!(evhttp_fixed_controls, start(Evhttp, true));
control!(node_net_fixed_controls, start(NodeNet, true));
control!(erlang_gen_tcp_fixed_controls, start(ErlangGenTcp, true));
control!(static_c_split_fixed_controls, start(StaticCSplit, true));

/// The static build really has no dynamic loader (no PT_INTERP program header), while the
/// ordinary build of the same source has one: the check is not vacuous.
#[test]
fn static_c_split_server_has_no_program_interpreter() {
    assert!(has_program_interpreter(&compiled("c_split_server.c")), "the dynamic build has PT_INTERP");
    assert!(!has_program_interpreter(&compiled_static("c_split_server.c")), "the static build has PT_INTERP");
}

/// Whether a 64-bit little-endian ELF executable names a program interpreter (PT_INTERP): the
/// dynamic loader, which is what honours LD_PRELOAD.
fn has_program_interpreter(path: &str) -> bool {
    const PT_INTERP: u32 = 3;
    let elf = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(elf.starts_with(b"\x7fELF\x02\x01"), "{path} is not a 64-bit little-endian ELF file");
    let int =
        |at: usize, bytes: usize| elf[at..at + bytes].iter().rev().fold(0usize, |n, b| n << 8 | *b as usize);
    let (table, entry_size, entries) = (int(0x20, 8), int(0x36, 2), int(0x38, 2));
    (0..entries).any(|i| int(table + i * entry_size, 4) == PT_INTERP as usize)
}
