//! A real nginx for the tests, started from the `server { ... }` (and `upstream { ... }`)
//! part of a configuration: [`Nginx::start`]. The helper writes the rest (`daemon off;`,
//! `worker_processes 1;`, pid file, error and access logs and every temp path in a fresh
//! directory under `CARGO_TARGET_TMPDIR`) and kills master and worker when dropped.
//!
//! How it gets a free port without a race: nginx refuses `listen 127.0.0.1:0` ("invalid
//! port", nginx 1.22), so it cannot pick a port itself, and reading one back from /proc has
//! nothing to read. Binding a port here and closing it before nginx binds it again is the
//! classic race with the other tests running in parallel. Instead the helper binds
//! 127.0.0.1:0 itself and hands that very listening socket to nginx the way nginx's own
//! binary upgrade does: the descriptor stays open across exec and the `NGINX` environment
//! variable names it (`NGINX=<fd>;`). nginx logs `using inherited sockets from "<fd>;"` and
//! uses the socket for the `listen 127.0.0.1:<port>` the helper puts in the server block
//! (nginx matches an inherited socket to a listen directive by address). Measured here:
//! `ss -ltnp` shows the one socket held by master and worker; the first response came 13 ms
//! after the start.
//!
//! [`Nginx::start_in_namespace`] does the same in a network namespace of the test's own
//! (`nodelay-path`'s server side): a thread that joined the namespace (setns) binds the
//! socket there, and nginx runs under `ip netns exec`, so that its upstreams are the
//! namespace's.
//!
//! Ready means the master has forked its worker (the worker exists only once the
//! configuration is loaded); the socket is listening from the start, so a connection made
//! between the two waits in the backlog rather than being refused. A configuration nginx
//! rejects makes [`Nginx::start`] panic with the error log.

use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A running nginx (master and one worker in a process group of their own), killed when
/// dropped. Its directory (config, logs, temp paths) is removed then, unless the test is
/// panicking: then it is kept and its path printed.
pub struct Nginx {
    pub port: u16,
    ip: String,
    master: Child,
    dir: PathBuf,
}

impl Nginx {
    /// Starts nginx with `snippet`, the `http { ... }` content of the test: one `server {`
    /// block without a `listen` (the helper adds `listen 127.0.0.1:<port>;`) and any
    /// `upstream` blocks. Returns once the worker is running.
    pub fn start(snippet: &str) -> Nginx {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        Nginx::start_listening(snippet, "", listener, None)
    }

    /// The same in network namespace `namespace`, listening on `ip` (an address of it).
    pub fn start_in_namespace(snippet: &str, namespace: &str, ip: &str) -> Nginx {
        let path = format!("/run/netns/{namespace}");
        let address = format!("{ip}:0");
        let listener = std::thread::spawn(move || {
            let handle = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            // SAFETY: setns(2) on a descriptor this thread owns; it moves only this thread,
            // which ends once the socket is bound (a socket keeps the namespace it was made in).
            let joined = unsafe { libc::setns(handle.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(joined, 0, "setns {path}: {}", std::io::Error::last_os_error());
            TcpListener::bind(&address).unwrap_or_else(|e| panic!("bind {address}: {e}"))
        })
        .join()
        .expect("the thread that binds in the namespace");
        Nginx::start_listening(snippet, "", listener, Some(namespace))
    }

    /// The same with TLS on the port (`listen ... ssl`): the snippet names the certificate
    /// and key (`ssl_certificate`, `ssl_certificate_key`).
    pub fn start_tls(snippet: &str) -> Nginx {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        Nginx::start_listening(snippet, " ssl", listener, None)
    }

    fn start_listening(
        snippet: &str,
        listen_options: &str,
        listener: TcpListener,
        namespace: Option<&str>,
    ) -> Nginx {
        static STARTED: AtomicU32 = AtomicU32::new(0);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "nginx-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("nginx dir");

        let address = listener.local_addr().expect("address");
        let (ip, port) = (address.ip().to_string(), address.port());
        let config = dir.join("nginx.conf");
        std::fs::write(&config, full_config(&dir, &with_listen(snippet, &ip, port, listen_options)))
            .expect("write nginx.conf");

        let fd = listener.as_raw_fd();
        let mut command = match namespace {
            Some(namespace) => {
                let mut command = Command::new("ip");
                command.args(["netns", "exec", namespace, nginx_binary()]);
                command
            }
            None => Command::new(nginx_binary()),
        };
        command
            .arg("-c")
            .arg(&config)
            .arg("-p")
            .arg(&dir)
            .arg("-e")
            .arg(dir.join("error.log"))
            .env("NGINX", format!("{fd};"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            // Master and worker in a group of their own, so Drop reaches both with one kill.
            .process_group(0);
        // SAFETY: runs in the child between fork and exec and only calls fcntl, which is
        // async-signal-safe; it clears FD_CLOEXEC on the child's copy of the listening
        // socket so that nginx inherits it.
        unsafe {
            command.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        let master = command.spawn().unwrap_or_else(|e| panic!("cannot start nginx: {e}"));
        // nginx holds the socket now; ours would keep accepting into the backlog after nginx
        // died, hiding the death from the tests.
        drop(listener);
        let mut nginx = Nginx { port, ip, master, dir };
        crate::common::wait_until("nginx's worker", Duration::from_secs(10), || {
            if let Ok(Some(status)) = nginx.master.try_wait() {
                panic!("nginx exited ({status}) before it was ready:\n{}", nginx.error_log());
            }
            !nginx.worker_pids().is_empty()
        });
        nginx
    }

    /// The master process's pid.
    pub fn pid(&self) -> u32 {
        self.master.id()
    }

    /// The worker processes' pids (the master's children).
    pub fn worker_pids(&self) -> Vec<u32> {
        let pid = self.pid();
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}:{}{path}", self.ip, self.port)
    }

    pub fn https_url(&self, path: &str) -> String {
        format!("https://{}:{}{path}", self.ip, self.port)
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this helper created for master and worker.
        unsafe { libc::kill(-(self.master.id() as libc::pid_t), libc::SIGKILL) };
        let _ = self.master.wait();
        if std::thread::panicking() {
            eprintln!("nginx's files are kept in {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The config snippet of a reverse proxy in front of `127.0.0.1:upstream_port`:
/// `proxy_http_version` "1.0" (nginx's default: `Connection: close`, a new upstream
/// connection per request) or "1.1" (with `proxy_set_header Connection ""`, as nginx's
/// documentation asks for upstream keep-alive); `keepalive_pool` proxies through an
/// `upstream { server 127.0.0.1:PORT; keepalive 8; }` block, which keeps idle upstream
/// connections for reuse (only with HTTP/1.1 does the upstream keep them open).
pub fn proxy_to(upstream_port: u16, http_version: &str, keepalive_pool: bool) -> String {
    assert!(matches!(http_version, "1.0" | "1.1"), "proxy_http_version {http_version:?}");
    let (upstream, target) = if keepalive_pool {
        (
            format!("upstream backend {{\n    server 127.0.0.1:{upstream_port};\n    keepalive 8;\n}}\n"),
            "backend".to_string(),
        )
    } else {
        (String::new(), format!("127.0.0.1:{upstream_port}"))
    };
    let connection = if http_version == "1.1" { "        proxy_set_header Connection \"\";\n" } else { "" };
    format!(
        "{upstream}server {{\n    location / {{\n        proxy_pass http://{target};\n        \
         proxy_http_version {http_version};\n{connection}    }}\n}}\n"
    )
}

fn nginx_binary() -> &'static str {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("nginx").is_file()));
    if on_path { "nginx" } else { "/usr/sbin/nginx" }
}

/// The snippet with `listen <ip>:<port>;` opening its one `server {` block.
fn with_listen(snippet: &str, ip: &str, port: u16, listen_options: &str) -> String {
    assert!(!snippet.contains("listen "), "the helper chooses the port; drop the listen:\n{snippet}");
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(at) = snippet[from..].find("server").map(|i| from + i) {
        let rest = snippet[at + "server".len()..].trim_start();
        let word_start = at == 0 || !snippet.as_bytes()[at - 1].is_ascii_alphanumeric();
        if word_start && rest.starts_with('{') {
            blocks.push(snippet.len() - rest.len() + 1);
        }
        from = at + "server".len();
    }
    assert_eq!(blocks.len(), 1, "the snippet needs exactly one server block:\n{snippet}");
    let brace_end = blocks[0];
    format!("{}\n    listen {ip}:{port}{listen_options};{}", &snippet[..brace_end], &snippet[brace_end..])
}

fn full_config(dir: &Path, http: &str) -> String {
    let path = |name: &str| dir.join(name).display().to_string();
    format!(
        "daemon off;\nworker_processes 1;\npid {pid};\nerror_log {error} notice;\n\
         events {{ worker_connections 1024; }}\nhttp {{\n\
         access_log {access};\nclient_body_temp_path {body};\nproxy_temp_path {proxy};\n\
         fastcgi_temp_path {fastcgi};\nuwsgi_temp_path {uwsgi};\nscgi_temp_path {scgi};\n\
         {http}}}\n",
        pid = path("nginx.pid"),
        error = path("error.log"),
        access = path("access.log"),
        body = path("client_body_temp"),
        proxy = path("proxy_temp"),
        fastcgi = path("fastcgi_temp"),
        uwsgi = path("uwsgi_temp"),
        scgi = path("scgi_temp"),
    )
}
