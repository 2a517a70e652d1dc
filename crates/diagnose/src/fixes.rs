//! Fixes per common stack (docs/field-notes.md §6): where Nagle is on by default and how to turn it
//! off, how to write a request in one piece, how to keep connections alive.

use crate::finding::Fix;
use nodelay_engine::ErrorKind;
use nodelay_flags::Flag::{Cacert, Insecure, Sni, Timeout};

/// The fix-list stack a `Server` header names, for the stacks whose header is telling.
/// Stacks that send none (Go, Node, the JDK server, evhttp) are not guessed.
pub fn stack_of_server_header(server: &str) -> Option<&'static str> {
    let server = server.to_ascii_lowercase();
    let known: [(&str, &str); 9] = [
        ("basehttp", "Python http.server / socketserver"),
        // "hypercorn-h11", "hypercorn-h2": Python, but none of the other Python stacks.
        ("hypercorn", "hypercorn"),
        ("simplehttp", "Python http.server / socketserver"),
        ("werkzeug", "Python http.server / socketserver"),
        ("nginx", "nginx"),
        ("kestrel", ".NET"),
        ("microsoft-", ".NET"),
        ("puma", "Ruby Puma"),
        ("inets", "Erlang gen_tcp"),
    ];
    known.iter().find(|(token, _)| server.contains(token)).map(|(_, stack)| *stack)
}

/// The stack a library the server links names: a C server is named by its library.
pub fn stack_of_library(file_name: &str) -> Option<&'static str> {
    file_name.starts_with("libevent").then_some("libevent evhttp")
}

/// The server's stack, from what names it most surely: its `Server` header, a library it
/// links (a C server's command is whatever its author called it), then its command.
pub fn stack_of_server(observations: &crate::phase::Observations) -> Option<&'static str> {
    let header = observations.baseline.server_header.as_deref().and_then(stack_of_server_header);
    let library = || observations.linked_libraries.iter().find_map(|name| stack_of_library(name));
    let command = || {
        let process = observations.server_view.as_ref()?.processes.first()?;
        stack_of_command(&process.command)
    };
    header.or_else(library).or_else(command)
}

/// Stacks that speak HTTP/1.1 alone: never the server of an HTTP/2 run, whatever its family.
const HTTP1_ONLY_STACKS: [&str; 2] = ["Python http.server / socketserver", "Python http.server"];

/// Puts the detected stack's fixes first and marks them, keeping the others in order. A
/// family names its members: "Node.js" is "Node.js http" and "Node.js net".
pub fn detected_first(fixes: &mut [Fix], stack: &str) {
    detected_first_speaking(fixes, stack, false);
}

/// [`detected_first`], where an HTTP/2 run (`http2`) marks no stack that speaks HTTP/1.1 alone.
pub fn detected_first_speaking(fixes: &mut [Fix], stack: &str, http2: bool) {
    for fix in fixes.iter_mut() {
        fix.detected = (fix.stack == stack
            || fix.stack.strip_prefix(stack).is_some_and(|rest| rest.starts_with(' ')))
            && !(http2 && HTTP1_ONLY_STACKS.contains(&&*fix.stack));
    }
    // A stable sort keeps the rest as written.
    fixes.sort_by_key(|fix| !fix.detected);
}

pub const SERVER_NODELAY_SUMMARY: &str = "Set TCP_NODELAY on the server's sockets, or write each response (head \
     and body) in one send. Without a code change (Linux): start it with `nodelay exec -- PROGRAM ARGS`, or run \
     `nodelay fix :PORT` while it runs.";
pub const CLIENT_SINGLE_WRITE_SUMMARY: &str =
    "Send each request in one write (or writev), or set TCP_NODELAY on the client socket.";

/// Set TCP_NODELAY on the server's sockets (or write each response in one send).
pub fn server_nodelay() -> Vec<Fix> {
    vec![
        Fix::of(
            "Python http.server / socketserver",
            "set disable_nagle_algorithm = True on the handler class",
        ),
        Fix::of("Node.js net", "socket.setNoDelay(true) on each accepted socket"),
        Fix::of("Node.js http", "http.createServer({ noDelay: true }) (the default since Node 18)"),
        Fix::of("Java com.sun.net.httpserver", "run with -Dsun.net.httpserver.nodelay=true"),
        Fix::of("Java sockets", "socket.setTcpNoDelay(true) on each accepted Socket"),
        Fix::of("Go net/http", "TCP_NODELAY is the default; remove SetNoDelay(false)"),
        Fix::of("Erlang gen_tcp", "listen with {nodelay, true}"),
        Fix::of(
            "libevent evhttp",
            "setsockopt(TCP_NODELAY) on the bound socket: accepted sockets inherit it",
        ),
        Fix::of("nginx", "tcp_nodelay on; (the default)"),
        Fix::of(".NET", "Socket.NoDelay = true (Kestrel sets it by default)"),
        Fix::of("Ruby Puma", "bind tcp://...?low_latency=true"),
        Fix::of(
            "Rust tokio / axum",
            "TcpStream::set_nodelay(true); axum 0.8: serve(listener.tap_io(|s| { let _ = s.set_nodelay(true); }), app) \
             with axum::serve::ListenerExt in scope",
        ),
        Fix::of(
            "C / any stack",
            "setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, 1), or send head and body in one writev()",
        ),
    ]
}

/// Send the request in one write, or set TCP_NODELAY on the client socket.
pub fn client_single_write() -> Vec<Fix> {
    vec![
        Fix::of(
            "any client",
            "build the whole request (head and body) in one buffer and send it in one write, or writev()",
        ),
        Fix::of("C / any stack", "setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, 1) on the client socket"),
        Fix::of(
            "Java sockets",
            "socket.setTcpNoDelay(true), or wrap the stream in a BufferedOutputStream and flush once",
        ),
        Fix::of("Node.js net", "socket.setNoDelay(true), or socket.write(Buffer.concat([head, body]))"),
        Fix::of(
            "Python socket",
            "sock.setsockopt(IPPROTO_TCP, TCP_NODELAY, 1), or sock.sendall(head + body)",
        ),
        Fix::of(".NET", "Socket.NoDelay = true"),
        Fix::of("Rust tokio / hyper-util", "TcpStream::set_nodelay(true); HttpConnector::set_nodelay(true)"),
        Fix::of("Ruby", "sock.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)"),
    ]
}

/// Reuse connections (HTTP keep-alive).
pub fn keep_alive() -> Vec<Fix> {
    vec![
        Fix::of(
            "any HTTP/1.1 server",
            "do not send Connection: close; frame responses with Content-Length or chunked",
        ),
        Fix::of(
            "Python http.server",
            "set protocol_version = \"HTTP/1.1\" on the handler and send Content-Length",
        ),
        Fix::of(
            "nginx upstream",
            "keepalive N; in the upstream block, proxy_http_version 1.1; proxy_set_header Connection \"\";",
        ),
        Fix::of(
            "Node.js http",
            "server.keepAliveTimeout > 0 (default 5 s); clients: new http.Agent({ keepAlive: true })",
        ),
        Fix::of("clients", "reuse one client/session object instead of creating one per request"),
    ]
}

/// Time spent inside the server.
pub fn server_work() -> Vec<Fix> {
    vec![
        Fix::of("any server", "profile the handler: the time is spent before the first byte is written"),
        Fix::of(
            "servers that call other services",
            "run nodelay doctor against each upstream: a stalled hop shows here as a slow first byte",
        ),
    ]
}

/// A server slow with little CPU: it waits, and these find on what.
pub fn server_waits() -> Vec<Fix> {
    vec![
        Fix::of(
            "Linux (any server)",
            "off-CPU profile while it serves: offcputime-bpfcc -p PID 10 (bcc), or perf sched timehist",
        ),
        Fix::of(
            "Linux (any server)",
            "what each thread blocks in: cat /proc/PID/task/*/wchan, or strace -f -T -p PID",
        ),
        Fix::of(
            "servers that call other services",
            "run nodelay doctor against each upstream: a slow hop is a wait here",
        ),
        Fix::of("Python", "py-spy dump --pid PID during a slow request: the stack each thread waits in"),
        Fix::of("Java", "jstack PID (or JFR's thread-park and socket-read events) during a slow request"),
        Fix::of("Go", "net/http/pprof block and mutex profiles (runtime.SetBlockProfileRate)"),
        Fix::of("Node.js", "clinic bubbleprof, or async_hooks timings around the awaited calls"),
    ]
}

/// A pause after the first bytes of a response that is not Nagle: the server's own pace.
pub fn slow_body() -> Vec<Fix> {
    vec![
        Fix::of(
            "any server",
            "profile what runs between the first write and the rest: streaming from a slow source, a flush per chunk",
        ),
        Fix::of(
            "servers that call other services",
            "run nodelay doctor against each upstream: a proxy that relays as it receives passes its stall on",
        ),
    ]
}

/// What a fresh connection's small initial window costs, and what removes it.
pub const INITIAL_WINDOW_SUMMARY: &str = "Reuse connections (keep-alive, a connection pool) so that large \
     responses travel on a window already grown, or raise the server's initial window on its route (initcwnd).";

/// Where the initial window is set.
pub fn initial_window() -> Vec<Fix> {
    vec![
        Fix::of(
            "any client",
            "keep connections alive and pooled: a warm connection's window is already open",
        ),
        Fix::of(
            "Linux (the server)",
            "ip route change default via GATEWAY dev DEV initcwnd 32 initrwnd 32 (per route; 10 by default)",
        ),
        Fix::of(
            "CDNs and proxies",
            "terminate near the client: the window grows in round trips of the short leg",
        ),
    ]
}

/// What to do about packets lost on the path.
pub const RETRANSMISSION_SUMMARY: &str = "Find where the path drops packets (a saturated link or queue, a \
     policer, Wi-Fi, a bad cable); `nstat -az TcpRetransSegs TcpTimeouts` on either end counts them. Each loss costs a \
     retransmission timeout (200 ms at least) unless later data makes the receiver ask for it sooner.";

/// Where losses are found and what shortens their cost.
pub fn retransmission() -> Vec<Fix> {
    vec![
        Fix::of("Linux", "ss -ti shows retrans and rto per connection; tcpdump shows which segments repeat"),
        Fix::of(
            "Linux routes",
            "ip route change DEST ... rto_min 50ms shortens the minimum RTO on a path whose round trip is short",
        ),
        Fix::of(
            "the network",
            "look for drops at the bottleneck: interface counters, policers, queue lengths",
        ),
    ]
}

pub const LISTEN_BACKLOG_SUMMARY: &str = "Give the listening socket a larger backlog (the listen() argument; \
     Linux caps it at net.core.somaxconn) and let the server accept connections as fast as they come: until then, \
     a burst of new connections waits 1 s, 3 s, 7 s for SYN retransmissions. Clients that keep connections alive \
     open fewer.";

/// A larger accept queue, per stack (defaults as of 2026).
pub fn listen_backlog() -> Vec<Fix> {
    vec![
        Fix::of(
            "Linux",
            "sysctl -w net.core.somaxconn=4096 (the cap on every backlog; 4096 since Linux 5.4, 128 before) and \
             net.ipv4.tcp_max_syn_backlog",
        ),
        Fix::of(
            "Python",
            "socketserver / http.server: request_queue_size = 1024 on the server class (default 5); \
             socket.listen(1024); gunicorn --backlog (default 2048)",
        ),
        Fix::of(
            "Node.js",
            "server.listen({ port, backlog: 1024 }) (default 511), and keep the event loop free to accept",
        ),
        Fix::of("Java", "new ServerSocket(port, 1024) or HttpServer.create(address, 1024) (default 50)"),
        Fix::of("Go", "net.Listen uses net.core.somaxconn: raise the sysctl"),
        Fix::of("Erlang", "gen_tcp:listen(Port, [{backlog, 1024} | ...]) (default 5)"),
        Fix::of("nginx", "listen 80 backlog=4096; (default 511)"),
        Fix::of("HAProxy", "backlog 4096 in the frontend (default: maxconn)"),
        Fix::of(
            "any server",
            "accept in a loop of its own, not between requests: one-at-a-time servers overflow first",
        ),
    ]
}

pub const EXPECT_CONTINUE_SUMMARY: &str = "Have the server answer 100 Continue (or its final response) as soon as \
     the head arrives; or stop the clients from sending Expect: 100-continue.";

/// Answer `Expect: 100-continue`, or stop sending it.
pub fn expect_continue() -> Vec<Fix> {
    vec![
        Fix::of(
            "Python http.server / socketserver",
            "protocol_version = \"HTTP/1.1\" on the handler: only then does handle_expect_100 answer 100 Continue",
        ),
        Fix::of(
            "Node.js http",
            "answers 100 Continue itself unless a 'checkContinue' listener is set: call res.writeContinue() there",
        ),
        Fix::of("Go net/http", "answers 100 Continue when the handler first reads the body: read it"),
        Fix::of(
            "Java com.sun.net.httpserver",
            "answers 100 Continue itself; a handler must still read the body",
        ),
        Fix::of(
            "curl / libcurl",
            "-H 'Expect:' (CURLOPT_HTTPHEADER \"Expect:\"), or --expect100-timeout 0.1",
        ),
        Fix::of(
            ".NET",
            "HttpClient: DefaultRequestHeaders.ExpectContinue = false; .NET Framework: ServicePointManager.Expect100Continue = false",
        ),
        Fix::of(
            "proxies",
            "nginx and HAProxy answer 100 Continue to the client themselves; check the hop behind them",
        ),
    ]
}

pub const IDLE_CLOSE_SUMMARY: &str = "Keep each client's idle timeout shorter than the server's (a proxy's \
     upstream idle timeout shorter than its upstream's), or have the server announce its timeout \
     (Keep-Alive: timeout=N) and keep it longer than its clients'.";

/// Idle timeouts ordered client < server, per stack (defaults as of 2026).
pub fn idle_close() -> Vec<Fix> {
    vec![
        Fix::of(
            "Node.js",
            "http: server.keepAliveTimeout (default 5 s; Node 20 closes 1 s after it) longer than any proxy's idle \
             timeout in front (AWS ALB 60 s); clients: new http.Agent({ keepAlive: true, timeout }) below the \
             server's",
        ),
        Fix::of("undici / fetch", "keepAliveTimeout below the server's; it honours Keep-Alive: timeout="),
        Fix::of(
            "Go",
            "net/http client: Transport.IdleConnTimeout below the server's; server: Server.IdleTimeout",
        ),
        Fix::of(
            "Python",
            "gunicorn --keep-alive (default 2 s); http.server: the handler's timeout; clients (requests/urllib3) \
             retry: Retry(total=1)",
        ),
        Fix::of(
            "nginx",
            "keepalive_timeout (default 75 s); upstream pool: keepalive_timeout below the upstream's",
        ),
        Fix::of(
            "HAProxy",
            "timeout http-keep-alive; to a server: timeout server and http-reuse below its idle timeout",
        ),
        Fix::of("Apache httpd", "KeepAliveTimeout (default 5 s)"),
        Fix::of(
            "Java",
            "JDK HttpClient: -Djdk.httpclient.keepalive.timeout below the server's (default 30 s)",
        ),
    ]
}

/// What to do when too many requests failed to measure, by the most common failure.
pub fn failures_summary(kind: ErrorKind) -> String {
    match kind {
        ErrorKind::MalformedResponse => {
            "The server sends bytes the client cannot match to its request (a response nobody asked for, or one \
             longer than it says): fix how it frames responses, then measure again."
            .to_string()
        }
        ErrorKind::Timeout => format!(
            "Responses did not complete within {Timeout}: find why the server stops answering (or raise \
             {Timeout}), then measure again."
        ),
        ErrorKind::ConnectRefused | ErrorKind::ConnectTimeout => {
            "Connections were refused or timed out: check the server's listen backlog and connection limits, then \
             measure again."
            .to_string()
        }
        ErrorKind::Reset | ErrorKind::ClosedEarly => {
            "The server closed or reset connections in the middle of requests: look at its logs, connection \
             limits and keep-alive timeout, then measure again."
            .to_string()
        }
        ErrorKind::OutOfFiles => {
            "nodelay ran out of file descriptors: raise ulimit -n (or close what else holds them), then measure \
             again."
            .to_string()
        }
        ErrorKind::PortsExhausted => {
            "This machine ran out of local ports for new connections (most held in TIME-WAIT): keep connections \
             alive, or set net.ipv4.tcp_tw_reuse=1 or widen net.ipv4.ip_local_port_range, then measure again."
            .to_string()
        }
        ErrorKind::Tls => format!(
            "TLS handshakes or records failed (see the error listed: certificate, alert, not TLS): fix the \
             certificate or the options ({Cacert}, {Sni}, {Insecure}), then measure again."
        ),
        ErrorKind::Other => "Fix the failures listed with the measurements, then measure again.".to_string(),
    }
}

/// The fix-list stack a process's command name (`comm`) names, for the server view.
pub fn stack_of_command(command: &str) -> Option<&'static str> {
    let known: [(&str, &str); 8] = [
        ("node", "Node.js"),
        ("python", "Python"),
        ("gunicorn", "Python"),
        ("uwsgi", "Python"),
        ("nginx", "nginx"),
        ("haproxy", "HAProxy"),
        ("java", "Java"),
        ("beam.smp", "Erlang"),
    ];
    known.iter().find(|(token, _)| command.starts_with(token)).map(|(_, stack)| *stack)
}

/// Reuse connections to the upstream instead of opening one per request.
pub fn upstream_keep_alive() -> Vec<Fix> {
    vec![
        Fix::of(
            "Node.js",
            "pass agent: new http.Agent({ keepAlive: true }) (the global agent's default only since Node 19); with \
             the request module also forever: true",
        ),
        Fix::of(
            "nginx",
            "proxy_http_version 1.1; proxy_set_header Connection \"\"; and keepalive N; in the upstream block",
        ),
        Fix::of(
            "HAProxy",
            "keep option http-keep-alive (the default) and http-reuse safe; drop option httpclose",
        ),
        Fix::of(
            "Python",
            "one requests.Session() (or aiohttp.ClientSession) for all calls, not requests.get per call",
        ),
        Fix::of(
            "Go",
            "one shared http.Client; read every response body to EOF and Close it; raise \
             Transport.MaxIdleConnsPerHost (default 2)",
        ),
        Fix::of("Java", "one shared java.net.http.HttpClient (or a pooled Apache/OkHttp client)"),
        Fix::of("Erlang", "a pooled client (hackney pool, gun) rather than a connection per call"),
    ]
}

/// A CPU-bound server: find where the time goes, then do less or use more cores.
pub fn cpu_bound() -> Vec<Fix> {
    vec![
        Fix::of(
            "Node.js",
            "profile with node --cpu-prof; one process per core (cluster, or pm2 -i max); reuse upstream \
             connections (a keep-alive agent halves a proxy's CPU)",
        ),
        Fix::of(
            "Python",
            "profile with py-spy top --pid PID; more worker processes (gunicorn -w, uWSGI processes)",
        ),
        Fix::of(
            "nginx",
            "worker_processes auto; look for costly modules (gzip level, regex rewrites, TLS ciphers)",
        ),
        Fix::of("HAProxy", "nbthread matching the cores; keep connections alive to cut handshakes"),
        Fix::of("Java", "profile with async-profiler; size the worker pool to the cores"),
        Fix::of("Go", "profile with net/http/pprof; check GOMAXPROCS"),
        Fix::of("Erlang", "profile with eprof or fprof; spread the work over more processes"),
        Fix::of("any", "perf top -p PID shows where its CPU goes"),
    ]
}

/// A proxy that copies hop-by-hop headers, or a server that holds HTTP/1.0 connections.
pub fn hop_by_hop() -> Vec<Fix> {
    vec![
        Fix::of(
            "Node.js (request / http proxy)",
            "before piping, drop the upstream's hop-by-hop headers: .on('response', r => { delete \
             r.headers.connection; delete r.headers['keep-alive']; }); never set Connection by hand",
        ),
        Fix::of("nginx", "proxy_pass already drops hop-by-hop headers; check add_header Connection lines"),
        Fix::of(
            "any proxy",
            "remove Connection, Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade",
        ),
        Fix::of("clients", "speak HTTP/1.1 or ask for keep-alive (ab -k); do not read until the close"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_headers_name_stacks_and_their_fix_goes_first() {
        assert_eq!(
            stack_of_server_header("BaseHTTP/0.6 Python/3.12.3"),
            Some("Python http.server / socketserver")
        );
        assert_eq!(stack_of_server_header("nginx/1.26.0"), Some("nginx"));
        assert_eq!(stack_of_server_header("Go-http-client"), None);
        let mut fixes = server_nodelay();
        let before: Vec<String> = fixes.iter().map(|f| f.stack.to_string()).collect();
        detected_first(&mut fixes, "nginx");
        assert_eq!((&*fixes[0].stack, fixes[0].detected), ("nginx", true));
        assert_eq!(fixes.iter().filter(|f| f.detected).count(), 1);
        let rest: Vec<&str> = fixes[1..].iter().map(|f| &*f.stack).collect();
        let expected: Vec<&str> = before.iter().map(String::as_str).filter(|s| *s != "nginx").collect();
        assert_eq!(rest, expected, "the others keep their order");
    }

    #[test]
    fn an_http2_run_marks_no_stack_that_speaks_http11_alone() {
        assert_eq!(stack_of_server_header("hypercorn-h2"), Some("hypercorn"));
        let detected = |http2: bool| {
            let mut fixes = server_nodelay();
            detected_first_speaking(&mut fixes, "Python", http2);
            fixes.iter().filter(|f| f.detected).map(|f| f.stack.to_string()).collect::<Vec<_>>()
        };
        assert!(
            detected(false).contains(&"Python http.server / socketserver".to_string()),
            "{:?}",
            detected(false)
        );
        assert!(
            !detected(true).contains(&"Python http.server / socketserver".to_string()),
            "{:?}",
            detected(true)
        );
    }

    #[test]
    fn the_axum_fix_uses_listener_ext() {
        let axum = server_nodelay().into_iter().find(|f| f.stack.contains("axum")).expect("axum");
        assert!(axum.how.contains("listener.tap_io") && axum.how.contains("ListenerExt"), "{}", axum.how);
    }
}
