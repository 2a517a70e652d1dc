//! Accuracy of `nodelay doctor` against real servers written in five languages with their
//! ordinary APIs, each as shipped and with its fix, on small and ~25 KB responses. The bar
//! is zero wrong verdicts: every stall is server-nagle-delayed-ack, every fix is healthy,
//! and slow or randomly delayed handlers are never called Nagle.

use crate::common::*;

const SMALL: &str = "13";
const BLOCK_25K: &str = "25600";

fn c_server() -> String {
    compiled("c_split_server.c")
}

fn go_server() -> String {
    compiled("go_http_server.go")
}

fn java_classes() -> String {
    compiled("JdkHttpServer.java")
}

fn java_peer(nodelay: bool, body_bytes: &str) -> Peer {
    let mut args = Vec::new();
    if nodelay {
        args.push("-Dsun.net.httpserver.nodelay=true");
    }
    let classes = java_classes();
    args.extend(["-cp", &classes, "JdkHttpServer", body_bytes]);
    start_peer("java", &args)
}

// Python http.server, HTTP/1.1: Nagle on as shipped; disable_nagle_algorithm fixes it.
verdict!(python_small_as_shipped, python_peer("python_http_server.py", &["--body-bytes", SMALL]), STALL);
verdict!(python_25k_as_shipped, python_peer("python_http_server.py", &["--body-bytes", BLOCK_25K]), STALL);
verdict!(
    python_small_fixed,
    python_peer("python_http_server.py", &["--body-bytes", SMALL, "--disable-nagle"]),
    HEALTHY
);
verdict!(
    python_25k_fixed,
    python_peer("python_http_server.py", &["--body-bytes", BLOCK_25K, "--disable-nagle"]),
    HEALTHY
);

// Node.js: a `net` server writing head and body separately stalls; setNoDelay fixes it.
verdict!(node_net_small_as_shipped, node_peer("node_net_server.js", &["--body-bytes", SMALL]), STALL);
verdict!(node_net_25k_as_shipped, node_peer("node_net_server.js", &["--body-bytes", BLOCK_25K]), STALL);
verdict!(
    node_net_small_fixed,
    node_peer("node_net_server.js", &["--body-bytes", SMALL, "--nodelay"]),
    HEALTHY
);
verdict!(
    node_net_25k_fixed,
    node_peer("node_net_server.js", &["--body-bytes", BLOCK_25K, "--nodelay"]),
    HEALTHY
);
// Node.js http.createServer as shipped sets noDelay.
verdict!(node_http_small_as_shipped, node_peer("node_http_server.js", &["--body-bytes", SMALL]), HEALTHY);
verdict!(node_http_25k_as_shipped, node_peer("node_http_server.js", &["--body-bytes", BLOCK_25K]), HEALTHY);

// Go net/http: TCP_NODELAY as shipped; SetNoDelay(false) stalls responses over its 4 KB buffer.
verdict!(go_small_as_shipped, start_peer(&go_server(), &["-body-bytes", SMALL]), HEALTHY);
verdict!(go_25k_as_shipped, start_peer(&go_server(), &["-body-bytes", BLOCK_25K]), HEALTHY);
verdict!(go_25k_nagle_on, start_peer(&go_server(), &["-nagle", "-body-bytes", BLOCK_25K]), STALL);
verdict!(go_small_nagle_on_writes_once, start_peer(&go_server(), &["-nagle", "-body-bytes", SMALL]), HEALTHY);

// Java com.sun.net.httpserver: Nagle on as shipped; -Dsun.net.httpserver.nodelay=true fixes it.
verdict!(java_small_as_shipped, java_peer(false, SMALL), STALL);
verdict!(java_25k_as_shipped, java_peer(false, BLOCK_25K), STALL);
verdict!(java_small_fixed, java_peer(true, SMALL), HEALTHY);
verdict!(java_25k_fixed, java_peer(true, BLOCK_25K), HEALTHY);

// C: two send() calls; TCP_NODELAY on the listening socket (inherited) fixes it.
verdict!(c_small_as_shipped, start_peer(&c_server(), &["--body-bytes", SMALL]), STALL);
verdict!(c_25k_as_shipped, start_peer(&c_server(), &["--body-bytes", BLOCK_25K]), STALL);
verdict!(c_small_fixed, start_peer(&c_server(), &["--nodelay", "--body-bytes", SMALL]), HEALTHY);
verdict!(c_25k_fixed, start_peer(&c_server(), &["--nodelay", "--body-bytes", BLOCK_25K]), HEALTHY);

// Slow servers are not Nagle stalls, however close to 40 ms they are.
verdict!(
    slow_handler_40ms_is_not_nagle,
    python_peer("python_http_server.py", &["--disable-nagle", "--delay-ms", "40"]),
    &["slow-first-byte"]
);
verdict!(
    random_delay_is_not_nagle,
    python_peer("python_http_server.py", &["--disable-nagle", "--random-delay-ms", "80"]),
    &["slow-first-byte"]
);

// The latency family's findings on the healthy servers above (common/controls.rs).
control!(node_http_controls, node_peer("node_http_server.js", &["--body-bytes", SMALL]));
control!(go_controls, start_peer(&go_server(), &["-body-bytes", SMALL]));
control!(java_fixed_controls, java_peer(true, SMALL));
control!(c_fixed_controls, start_peer(&c_server(), &["--nodelay", "--body-bytes", SMALL]));
