#!/usr/bin/env python3
"""nodelay bench --h2 vs h2load and oha against nginx h2c: issue 34's performance targets.

nginx 1.22 (1 worker, pinned to core 0) serves a 13-byte file over HTTP/2 without TLS
(`listen ... http2`, prior knowledge); each load generator runs pinned to core 1 with one
thread, --connections connections (50) and --streams concurrent streams on each (10):
  nodelay bench --h2 --streams 10 -t 1 -c 50 -d Ns --json
  h2load -t 1 -c 50 -m 10 -D N          (Debian nghttp2-client)
  oha --http2 -c 50 -p 10 -z Ns --no-tui --output-format json
Rounds alternate the three tools --rounds times. A tool's CPU (user + system) and peak RSS
come from getrusage of the child, through GNU time, as in bench/vs_wrk.py. Every run must
end with 2xx responses only and no errors, or the script stops and shows the tool's output
(oha's requests cut off by its -z deadline are not errors).
Prints per tool the median req/s, requests per generator CPU-second (and the user/system
split of that CPU) and peak RSS, then each ratio against issue 34's targets:
  req/s nodelay / best of (h2load, oha) >= 1.00,
  req/CPU-s nodelay/h2load >= 1.00, peak RSS nodelay/h2load <= 2.00.
The same text goes to bench/out/h2_vs_h2load.txt (h2_vs_h2load_tls.txt under --tls).

Usage: bench/h2_vs_h2load.py [--quick] [--rounds 5] [--seconds 5] [--connections 50]
                             [--streams 10] [--tls] [--epoll-too] [--no-build]
--quick: 2 rounds of 3 s. --tls: nginx serves HTTP/2 over TLS (a self-signed certificate
made by openssl for the run), chosen by ALPN; nodelay trusts it with --cacert, h2load does
not check it, oha runs with --insecure. --epoll-too: a fourth tool, nodelay's classic loop
(`--epoll`: woken for every ready socket, no batched waits), for an A/B of the waits.
Exit status 0 when every target is met, 1 otherwise.
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODELAY = os.path.join(ROOT, "target", "release", "nodelay")
OUT = os.path.join(ROOT, "bench", "out", "h2_vs_h2load.txt")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def self_signed(workdir):
    """A key and certificate for localhost, made by openssl; returns (cert, key) paths."""
    cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    return cert, key


def start_nginx(workdir, tls):
    """nginx HTTP/2 on core 0 serving a 13-byte file, h2c (prior knowledge) or over TLS
    (`tls`: (cert, key)); returns (proc, url)."""
    port = free_port()
    www = os.path.join(workdir, "www")
    os.makedirs(www)
    with open(os.path.join(www, "index.html"), "w") as f:
        f.write("Hello, world!")  # 13 bytes
    os.chmod(workdir, 0o755)
    conf = os.path.join(workdir, "nginx.conf")
    temp = lambda name: os.path.join(workdir, name)
    # keepalive_requests also bounds the requests of an HTTP/2 connection since nginx 1.19.7
    # (http2_max_requests is gone): without it nginx sends GOAWAY after 1000 streams.
    ssl = f"ssl_certificate {tls[0]}; ssl_certificate_key {tls[1]};" if tls else ""
    with open(conf, "w") as f:
        f.write(f"""
worker_processes 1;
daemon off;
pid {temp('nginx.pid')};
error_log {temp('error.log')};
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120;
  client_body_temp_path {temp('body')};
  proxy_temp_path {temp('proxy')};
  fastcgi_temp_path {temp('fastcgi')};
  uwsgi_temp_path {temp('uwsgi')};
  scgi_temp_path {temp('scgi')};
  server {{ listen 127.0.0.1:{port} {'ssl ' if tls else ''}http2; root {www}; location / {{ }} {ssl} }}
}}
""")
    # nginx's SIGTERM (Popen.terminate) stops its workers too; SIGKILL would orphan them.
    proc = subprocess.Popen(["taskset", "-c", "0", "nginx", "-c", conf, "-p", workdir])
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"{'https://localhost' if tls else 'http://127.0.0.1'}:{port}/index.html"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("nginx did not start; see " + temp("error.log"))


def timed(cmd, name):
    """Runs cmd pinned to core 1 under GNU time (getrusage of the child); returns
    (stdout, user_s, system_s, max_rss_kb). A non-zero exit stops the script."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        full = ["/usr/bin/time", "-o", t.name, "-f", "%U %S %M", "taskset", "-c", "1"] + cmd
        out = subprocess.run(full, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            sys.exit(f"{name} failed ({' '.join(cmd)}):\n{out.stdout}\n{out.stderr}")
        user, system, rss = t.read().split()[-3:]
    return out.stdout, float(user), float(system), int(rss)


def result(requests, rps, user, system, rss):
    return dict(requests=requests, rps=rps, user=user, system=system, cpu=user + system, rss=rss)


def run_nodelay(url, connections, streams, seconds, cacert, classic=False):
    # Over TLS ALPN chooses HTTP/2 (--h2 is prior knowledge, for http:// only).
    wire = ["--cacert", cacert] if cacert else ["--h2"]
    loop = ["--epoll"] if classic else []
    out, user, system, rss = timed(
        [NODELAY, "bench", *wire, *loop, "--streams", str(streams), "-t", "1", "-c", str(connections),
         "-d", f"{seconds}s", "-q", "--json", url], "nodelay")
    report = json.loads(out)
    h2 = report.get("http2") or {}
    negotiated = (report["settings"].get("http2") or {}).get("negotiated_by")
    if negotiated != ("alpn" if cacert else "prior-knowledge"):
        sys.exit(f"nodelay did not run HTTP/2 as asked: settings {report['settings'].get('http2')}")
    if report["settings"]["batched_waits"] == classic:
        sys.exit(f"nodelay's waits were not as asked (batched_waits {report['settings']['batched_waits']})")
    errors = {k: v for k, v in report["errors"].items() if v}
    statuses = report["status_counts"]
    if errors or set(statuses) != {"200"} or report["non_success_responses"] or h2.get("streams_reset"):
        sys.exit(f"nodelay saw errors: {errors}, statuses {statuses}, "
                 f"streams reset {h2.get('streams_reset')}, goaways {h2.get('goaways')}")
    run = result(report["requests_completed"], report["requests_per_second"], user, system, rss)
    run["goaways"] = h2.get("goaways", 0)
    run["cpu_share"] = report.get("generator_cpu_share")
    return run


def run_h2load(url, connections, streams, seconds, cacert):
    out, user, system, rss = timed(
        ["h2load", "-t", "1", "-c", str(connections), "-m", str(streams), "-D", str(seconds), url], "h2load")
    done = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                     r"(\d+) errored, (\d+) timeout", out)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    rps = re.search(r"finished in [\d.]+\w*, ([\d.]+) req/s", out)
    protocol = re.search(r"Application protocol: (\S+)", out)
    if not (done and codes and rps):
        sys.exit(f"h2load's output was not understood:\n{out}")
    if protocol and protocol.group(1) != ("h2" if cacert else "h2c"):
        sys.exit(f"h2load spoke {protocol.group(1)}, not HTTP/2 as asked:\n{out}")
    _, _, completed, succeeded, failed, errored, timeouts = map(int, done.groups())
    ok, *others = map(int, codes.groups())
    # The 2xx count can exceed `succeeded` by a stream whose HEADERS came before the deadline
    # and its DATA after: h2load counts the status as it arrives.
    if failed or errored or timeouts or any(others) or succeeded == 0 or ok < succeeded:
        sys.exit(f"h2load saw errors or non-2xx responses:\n{out}")
    return result(succeeded, float(rps.group(1)), user, system, rss)


def oha_binary():
    found = shutil.which("oha")
    cargo_bin = os.path.expanduser("~/.cargo/bin/oha")
    return found or (cargo_bin if os.access(cargo_bin, os.X_OK) else None)


def run_oha(url, connections, streams, seconds, cacert):
    # Pinned to one core, tokio starts one worker thread (available_parallelism follows affinity).
    insecure = ["--insecure"] if cacert else []
    out, user, system, rss = timed(
        [oha_binary(), "--http2", *insecure, "-c", str(connections), "-p", str(streams), "-z", f"{seconds}s",
         "--no-tui", "--output-format", "json", url], "oha")
    report = json.loads(out)
    statuses = report["statusCodeDistribution"]
    # With -z, requests cut off by the deadline are listed as errors; they are not failures.
    errors = {k: v for k, v in report.get("errorDistribution", {}).items() if "deadline" not in k}
    if errors or set(statuses) != {"200"}:
        sys.exit(f"oha saw errors: {errors}, statuses {statuses}")
    return result(sum(statuses.values()), report["summary"]["requestsPerSec"], user, system, rss)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds of 3 s")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--streams", type=int, default=10, help="concurrent streams per connection")
    parser.add_argument("--tls", action="store_true", help="HTTP/2 over TLS (ALPN) instead of h2c")
    parser.add_argument("--epoll-too", action="store_true", help="also nodelay's classic loop (--epoll)")
    parser.add_argument("--no-build", action="store_true", help="use target/release/nodelay as it is")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds = 2, 3
    if min(args.rounds, args.seconds, args.connections, args.streams) < 1:
        parser.error("--rounds, --seconds, --connections and --streams must be at least 1")
    missing = [tool for tool, found in (("h2load", shutil.which("h2load")), ("oha", oha_binary()),
                                        ("nginx", shutil.which("nginx")),
                                        ("openssl", shutil.which("openssl") or not args.tls)) if not found]
    if missing:
        sys.exit(f"missing {', '.join(missing)}: run scripts/setup.sh --bench")
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay"], cwd=ROOT, check=True)

    tools = {"nodelay": run_nodelay, "h2load": run_h2load, "oha": run_oha}
    if args.epoll_too:
        tools["nd --epoll"] = lambda *given: run_nodelay(*given, classic=True)
    runs = {name: [] for name in tools}
    workdir = tempfile.mkdtemp(prefix="nodelay-h2-bench-")
    tls = self_signed(workdir) if args.tls else None
    cacert = tls[0] if tls else None
    nginx, url = start_nginx(workdir, tls)
    try:
        for round_number in range(args.rounds):
            for name, run in tools.items():
                runs[name].append(run(url, args.connections, args.streams, args.seconds, cacert))
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(workdir, ignore_errors=True)

    lines = []
    say = lines.append
    med = lambda name, key: statistics.median(r[key] for r in runs[name])
    per_cpu = {n: statistics.median(r["requests"] / r["cpu"] for r in rs) for n, rs in runs.items()}
    say(f"nginx {'HTTP/2 over TLS' if tls else 'h2c'}, 13-byte file, {args.connections} connections x {args.streams} streams, 1 generator "
        f"thread, {args.seconds} s x {args.rounds} rounds (medians)")
    say("nginx (1 worker) on core 0, each generator on core 1")
    say(f"{'tool':<10}{'req/s':>10}{'req/CPU-s':>11}{'user':>8}{'system':>8}{'peak RSS':>11}")
    for name in tools:
        user, system = med(name, "user"), med(name, "system")
        say(f"{name:<10}{med(name, 'rps'):>10.0f}{per_cpu[name]:>11.0f}{user:>6.2f} s{system:>6.2f} s"
            f"{med(name, 'rss') / 1024:>8.1f} MB")
    share = [r["cpu_share"] for r in runs["nodelay"] if r["cpu_share"] is not None]
    goaways = sum(r["goaways"] for r in runs["nodelay"])
    say("user/system: the generator's CPU seconds over one run; req/CPU-s counts both")
    if share:
        say(f"nodelay's own generator_cpu_share (median): {statistics.median(share):.2f} of its thread's time")
    if goaways:
        say(f"nodelay received {goaways} GOAWAY frames over the rounds")

    best_name = max(("h2load", "oha"), key=lambda n: med(n, "rps"))
    targets = [
        ("req/s nodelay/best of h2load,oha", med("nodelay", "rps") / med(best_name, "rps"), ">=", 1.0),
        ("req/CPU-s nodelay/h2load", per_cpu["nodelay"] / per_cpu["h2load"], ">=", 1.0),
        ("peak RSS nodelay/h2load", med("nodelay", "rss") / med("h2load", "rss"), "<=", 2.0),
    ]
    say("")
    failed = False
    if args.epoll_too:
        say(f"{'req/s nodelay/nodelay --epoll':<36}{med('nodelay', 'rps') / med('nd --epoll', 'rps'):>6.2f}")
        say(f"{'req/CPU-s nodelay/nodelay --epoll':<36}{per_cpu['nodelay'] / per_cpu['nd --epoll']:>6.2f}")
    for label, ratio, sense, target in targets:
        ok = ratio >= target if sense == ">=" else ratio <= target
        failed |= not ok
        say(f"{label:<36}{ratio:>6.2f}  (target {sense} {target:.2f}) {'ok' if ok else 'missed'}")
    say(f"(best of h2load, oha by req/s: {best_name})")
    text = "\n".join(lines) + "\n"
    print("\n" + text, end="")
    out_path = OUT.replace(".txt", "_tls.txt") if args.tls else OUT
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w") as f:
        f.write(text)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
