#!/usr/bin/env python3
"""nodelay bench vs wrk, ab (and oha) over TLS: nginx serving a 13-byte file on https://.

The certificate is an EC P-256 self-signed one for 127.0.0.1 and localhost, made with openssl
in a temp dir; nodelay trusts it through --cacert, wrk and ab do not check certificates
(Debian's wrk and ab speak TLS through OpenSSL without verifying), oha gets --insecure.
nginx is pinned to core 0 and each load generator to core 1, with one generator thread.
Runs alternate the tools --rounds times; the tables show medians.

1. Keep-alive, --connections connections (each makes one TLS handshake, then sends requests
   on it): nodelay vs wrk. Prints requests/s, requests per generator CPU-second and peak RSS.
   Targets: req/CPU-s nodelay/wrk >= 1.0, peak RSS nodelay/wrk <= 2.0; req/s nodelay/wrk is
   printed for information.
2. No keep-alive (a new connection and TLS handshake per request): nodelay with session
   resumption (its default) and with --no-tls-resume vs ab without -k (a full handshake per
   connection) and oha --disable-keepalive when oha is on PATH. Prints handshakes (= completed
   requests) per second and per generator CPU-second, and nodelay's full/resumed handshake
   counts. nodelay with resumption vs ab is not like for like (resumed handshakes skip the
   certificate and its signature); nodelay --no-tls-resume vs ab is. No targets: informational.

Usage: bench/vs_wrk_tls.py [--rounds 5] [--seconds 5] [--connections 50] [--nodelay PATH]
Exit status 0 when both keep-alive targets are met, 1 otherwise (and when a tool fails).
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_certificate(workdir):
    """An EC P-256 self-signed certificate for 127.0.0.1 and localhost; returns (cert, key)."""
    cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
    out = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        sys.exit(f"openssl req failed:\n{out.stdout}\n{out.stderr}")
    return cert, key


def start_nginx(workdir, cert, key):
    port = free_port()
    www = os.path.join(workdir, "www")
    os.makedirs(www)
    with open(os.path.join(www, "index.html"), "w") as f:
        f.write("Hello, world!")  # 13 bytes
    os.chmod(workdir, 0o755)
    conf = os.path.join(workdir, "nginx.conf")
    temp = lambda name: os.path.join(workdir, name)
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
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    # nginx 1.22 (Debian 12) offers at most TLS 1.2 unless told; 1.23.4+ adds TLS 1.3 by default.
    ssl_protocols TLSv1.2 TLSv1.3;
    root {www};
    location / {{ }}
  }}
}}
""")
    # nginx's SIGTERM (Popen.terminate) stops its workers too; SIGKILL would orphan them.
    proc = subprocess.Popen(["taskset", "-c", "0", "nginx", "-c", conf, "-p", workdir])
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"https://127.0.0.1:{port}/index.html"
        except OSError:
            time.sleep(0.05)
    proc.terminate()
    proc.wait(timeout=10)
    sys.exit("nginx did not start; see " + temp("error.log"))


def timed(cmd, seconds):
    """Runs cmd pinned to core 1 under GNU time; returns (stdout, cpu_seconds, max_rss_kb).

    The run is bounded: a tool still running 60 s after its --seconds is killed (its whole
    process group, so the tool under time and taskset goes too) and the script fails.
    """
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        full = ["/usr/bin/time", "-o", t.name, "-f", "%U %S %M", "taskset", "-c", "1"] + cmd
        proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=seconds + 60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            sys.exit(f"{' '.join(cmd)} still running {seconds + 60} s after it started; killed:\n{stdout}\n{stderr}")
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed (exit status {proc.returncode}):\n{stdout}\n{stderr}")
        user, system, rss = t.read().split()[-3:]
    return stdout, float(user) + float(system), int(rss)


def run_wrk(url, connections, seconds, cacert):
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", url]
    out, cpu, rss = timed(cmd, seconds)
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    elapsed = re.search(r"requests in ([\d.]+)(us|ms|s|m)", out)
    elapsed_s = float(elapsed.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60}[elapsed.group(2)]
    if re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out) or requests == 0:
        sys.exit(f"wrk saw errors ({' '.join(cmd)}):\n{out}")
    return dict(requests=requests, rps=requests / elapsed_s, cpu=cpu, rss=rss)


def run_nodelay(nodelay, url, connections, seconds, cacert, *extra):
    cmd = [nodelay, "bench", "-t", "1", "-c", str(connections), "-d", f"{seconds}s", "-q", "--json",
           "--cacert", cacert, *extra, url]
    out, cpu, rss = timed(cmd, seconds)
    report = json.loads(out)
    if sum(report["errors"].values()) or report["non_success_responses"] or not report["requests_completed"]:
        sys.exit(f"nodelay saw errors ({' '.join(cmd)}): errors {report['errors']}, "
                 f"non-success responses {report['non_success_responses']}, "
                 f"requests completed {report['requests_completed']}, examples {report.get('error_examples')}")
    tls = report["tls"]
    return dict(requests=report["requests_completed"], rps=report["requests_per_second"], cpu=cpu, rss=rss,
                full=tls["full_handshakes"], resumed=tls["resumed_handshakes"],
                tls=f"{tls['version']} {tls['cipher']}")


def run_ab(url, connections, seconds, cacert):
    # No -k: HTTP/1.0 without keep-alive, so one connection and one full TLS handshake per
    # request (ab keeps no session to resume). -t bounds the run; -n lifts ab's 50000 cap.
    cmd = ["ab", "-q", "-c", str(connections), "-t", str(seconds), "-n", "100000000", url]
    out, cpu, rss = timed(cmd, seconds)
    requests = int(re.search(r"Complete requests:\s+(\d+)", out).group(1))
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    non_2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    if requests == 0 or failed or non_2xx:
        sys.exit(f"ab saw errors ({' '.join(cmd)}):\n{out}")
    elapsed_s = float(re.search(r"Time taken for tests:\s+([\d.]+) seconds", out).group(1))
    protocol = re.search(r"SSL/TLS Protocol:\s+(\S+)", out)
    return dict(requests=requests, rps=requests / elapsed_s, cpu=cpu, rss=rss,
                full=requests, resumed=0, tls=protocol.group(1).split(",", 2)[:2] if protocol else None)


def run_oha(url, connections, seconds, cacert):
    # oha 1.x takes --output-format json; older releases take --json.
    help_text = subprocess.run(["oha", "--help"], capture_output=True, text=True, timeout=30).stdout
    json_flag = ["--output-format", "json"] if "--output-format" in help_text else ["--json"]
    cmd = ["oha", "--no-tui", *json_flag, "-z", f"{seconds}s", "-c", str(connections), "--disable-keepalive",
           "--insecure", url]
    out, cpu, rss = timed(cmd, seconds)
    report = json.loads(out)
    status = report.get("statusCodeDistribution", {})
    requests = sum(count for code, count in status.items() if code.startswith("2"))
    # Requests cut short by -z's deadline are listed as errors; they are not failures.
    errors = {k: v for k, v in (report.get("errorDistribution") or {}).items() if "deadline" not in k}
    if errors or requests == 0 or requests != sum(status.values()):
        sys.exit(f"oha saw errors ({' '.join(cmd)}): status {status}, errors {report.get('errorDistribution')}")
    return dict(requests=requests, rps=requests / report["summary"]["total"], cpu=cpu, rss=rss, full=None,
                resumed=None, tls=None)


def build_nodelay():
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release", "nodelay")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--nodelay", metavar="PATH", help="use this nodelay binary instead of building one")
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds < 1 or args.connections < 1:
        parser.error("--rounds, --seconds and --connections must be at least 1")

    subprocess.run([os.path.join(ROOT, "scripts", "setup.sh"), "--bench"], check=True)
    nodelay = os.path.abspath(args.nodelay) if args.nodelay else build_nodelay()
    oha = shutil.which("oha")

    c, s = args.connections, args.seconds
    keepalive = {
        "nodelay": lambda url, cacert: run_nodelay(nodelay, url, c, s, cacert),
        "wrk": lambda url, cacert: run_wrk(url, c, s, cacert),
    }
    fresh = {
        "nodelay": lambda url, cacert: run_nodelay(nodelay, url, c, s, cacert, "--no-keepalive"),
        "nodelay --no-tls-resume": lambda url, cacert: run_nodelay(nodelay, url, c, s, cacert, "--no-keepalive",
                                                                   "--no-tls-resume"),
        "ab": lambda url, cacert: run_ab(url, c, s, cacert),
    }
    if oha:
        fresh["oha"] = lambda url, cacert: run_oha(url, c, s, cacert)
    many = {name: [] for name in keepalive}
    each = {name: [] for name in fresh}

    workdir = tempfile.mkdtemp(prefix="nodelay-bench-tls-")
    nginx = None
    try:
        cert, key = make_certificate(workdir)
        nginx, url = start_nginx(workdir, cert, key)
        for round_number in range(args.rounds):
            for name, run in keepalive.items():
                many[name].append(run(url, cert))
            for name, run in fresh.items():
                each[name].append(run(url, cert))
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        if nginx is not None:
            nginx.terminate()
            try:
                nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                nginx.kill()
                nginx.wait()
        shutil.rmtree(workdir, ignore_errors=True)

    med = lambda runs, key: statistics.median(r[key] for r in runs)
    per_cpu = lambda runs: statistics.median(r["requests"] / r["cpu"] for r in runs)
    nginx_version = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip().split("/")[-1]
    print(f"\nnginx {nginx_version} over TLS (EC P-256 self-signed certificate), 13-byte file; 1 generator thread, "
          f"{c} connections, {s} s x {args.rounds} rounds (medians); nginx on core 0, generator on core 1")
    print(f"nodelay: {nodelay}; TLS it negotiated: {many['nodelay'][0]['tls']}")

    print(f"\n1. keep-alive: {c} TLS handshakes, then requests on those connections")
    print(f"{'tool':<10}{'requests/s':>18}{'per CPU-second':>22}{'peak RSS':>12}")
    for name, runs in many.items():
        print(f"{name:<10}{med(runs, 'rps'):>12.0f} req/s{per_cpu(runs):>12.0f} req/CPU-s"
              f"{med(runs, 'rss') / 1024:>9.1f} MB")
    print("nodelay handshakes per run (full/resumed): "
          + ", ".join(f"{r['full']}/{r['resumed']}" for r in many["nodelay"]))

    ratios = [
        ("req/CPU-s nodelay/wrk", per_cpu(many["nodelay"]) / per_cpu(many["wrk"]), lambda r: r >= 1.0, ">= 1.00 x"),
        ("peak RSS nodelay/wrk", med(many["nodelay"], "rss") / med(many["wrk"], "rss"), lambda r: r <= 2.0,
         "<= 2.00 x"),
    ]
    print()
    failed = False
    for label, ratio, ok, target in ratios:
        failed |= not ok(ratio)
        print(f"{label:<26}{ratio:>6.2f} x  (target {target}) {'ok' if ok(ratio) else 'MISSED'}")
    rps_ratio = med(many["nodelay"], "rps") / med(many["wrk"], "rps")
    print(f"{'req/s nodelay/wrk':<26}{rps_ratio:>6.2f} x  (informational)")

    print(f"\n2. no keep-alive: a new connection and TLS handshake per request (handshakes = completed requests)")
    print("   nodelay resumes TLS sessions by default: resumed handshakes skip the certificate and its signature,")
    print("   while ab makes a full handshake on every connection, so nodelay (resuming) vs ab is NOT like for like;")
    print("   nodelay --no-tls-resume vs ab is the like-for-like comparison (full handshakes on both sides).")
    print(f"{'tool':<25}{'handshakes/s':>24}{'per CPU-second':>28}{'peak RSS':>12}  handshakes per run (full/resumed)")
    for name, runs in each.items():
        if name == "ab":
            counts = "all full (ab keeps no session to resume)"
        elif runs[0]["full"] is None:
            counts = "-"
        else:
            counts = ", ".join(f"{r['full']}/{r['resumed']}" for r in runs)
        print(f"{name:<25}{med(runs, 'rps'):>11.0f} handshakes/s{per_cpu(runs):>11.0f} handshakes/CPU-s"
              f"{med(runs, 'rss') / 1024:>9.1f} MB  {counts}")
    if not oha:
        print("oha: not installed")
    ab_protocol = each["ab"][0]["tls"]
    print(f"TLS negotiated: nodelay {each['nodelay'][0]['tls']}; ab {' '.join(ab_protocol) if ab_protocol else '?'}")
    print()
    ab_per_cpu = per_cpu(each["ab"])
    for name, note in (("nodelay --no-tls-resume", "like for like: full handshakes on both sides"),
                       ("nodelay", "not like for like: nodelay resumes, ab does full handshakes")):
        print(f"{'handshakes/CPU-s ' + name + '/ab':<48}{per_cpu(each[name]) / ab_per_cpu:>6.2f} x  ({note})")
    if oha:
        oha_per_cpu = per_cpu(each["oha"])
        print(f"{'handshakes/CPU-s nodelay --no-tls-resume/oha':<48}"
              f"{per_cpu(each['nodelay --no-tls-resume']) / oha_per_cpu:>6.2f} x  (informational)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
