//! The container image (Containerfile, scripts/image.sh): a static musl nodelay on scratch,
//! built with podman and run by it: `--version`, the demo on the container's own loopback, the
//! trust store https:// needs, and doctor through the host's network as a DaemonSet runs it.
//! The image is built once for the file, with the dev profile (half a release's build time).

use crate::common;

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The test image's name: not the version tags, which `scripts/image.sh` gives release builds.
const IMAGE: &str = "localhost/nodelay:test";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Why this machine cannot run containers at all, if it cannot: the kernel refuses the
/// namespaces every container needs. Any other failure is the image's or the test's.
fn containers_forbidden() -> Option<String> {
    let probe = ["--mount", "--uts", "--ipc", "--net", "--pid", "--fork", "true"];
    let output = Command::new("unshare").args(probe).stdin(Stdio::null()).output().expect("run unshare");
    (!output.status.success()).then(|| {
        format!("`unshare {}` failed: {}", probe.join(" "), String::from_utf8_lossy(&output.stderr).trim())
    })
}

/// The variables cargo and nextest set for a test's process (by prefix), which a shell does
/// not have.
const CARGO_TEST_VARIABLES: &[&str] = &[
    "CARGO_MANIFEST_",
    "CARGO_PKG_",
    "CARGO_CRATE_",
    "CARGO_BIN_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    // Set for a package with a build script (the CLI's orders its symbols): ring's build
    // script reruns when it changes, and a clean-clone run spent 171-187 s rebuilding.
    "OUT_DIR",
];

/// Builds the image once per test process (cargo and podman make a second build cheap), one
/// process at a time; a failed build fails every test that needs it.
fn image() -> &'static str {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let _building = common::MachineLock::take("container-image");
        // At a lower priority: the build starts with the test phase, beside the timing
        // tests' first ones. scripts/test.sh builds the static binary before the tests
        // (`image.sh --binary-only`), so that here cargo finds it fresh and podman builds
        // the image; run alone (`cargo nextest run`), this compiles it.
        let mut build = Command::new("nice");
        build
            .args(["-n", "10", "bash"])
            .arg(repository().join("scripts/image.sh"))
            .args(["--dev", "--tag", IMAGE]);
        // As from a shell: without the variables cargo gives this test's process. ring's build
        // script reruns when CARGO_MANIFEST_DIR changes, and with it every crate above ring,
        // so the binary test.sh built before the tests was built again here (73 s of CPU).
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if CARGO_TEST_VARIABLES.iter().any(|prefix| name.starts_with(prefix)) {
                build.env_remove(&*name);
            }
        }
        let output = build.stdin(Stdio::null()).output().expect("run scripts/image.sh");
        if output.status.success() {
            Ok(())
        } else {
            Err(format!("scripts/image.sh failed: {}", String::from_utf8_lossy(&output.stderr)))
        }
    });
    built.as_ref().map(|()| IMAGE).unwrap_or_else(|e| panic!("{e}"))
}

/// The build command the docs give is the script these tests build with (`image()` runs it
/// with `--dev --tag`, for half a release's build time): `podman build` alone fails without
/// the context the script makes.
#[test]
fn the_documented_image_build_is_the_script_the_tests_run() {
    for file in ["docs/kubernetes.md", "deploy/kubernetes/daemonset.yaml", "Containerfile"] {
        let text = std::fs::read_to_string(repository().join(file)).unwrap();
        let mut commands = text.lines().map(|line| line.trim_start_matches(['#', ' ']));
        assert!(
            !commands.any(|command| command.starts_with("podman build")),
            "{file} gives `podman build` as the command, which fails without the script"
        );
        assert!(text.contains("scripts/image.sh"), "{file} does not name scripts/image.sh");
    }
    let documented = std::fs::read_to_string(repository().join("docs/kubernetes.md")).unwrap();
    assert!(documented.contains("```sh\nbash scripts/image.sh\n```"), "{documented}");
}

/// The hard limit of a resource of this process.
fn hard_limit(resource: libc::__rlimit_resource_t) -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into `limit`.
    assert_eq!(unsafe { libc::getrlimit(resource, &mut limit) }, 0);
    limit.rlim_max
}

/// `podman run --rm` of the image with `network` ("none", "host") and nodelay's `args`.
///
/// The runtime is runc, and the limits are those podman can give: on machines whose cgroup v2
/// hierarchy, mounted beside v1, has a controller, crun refuses to start anything ("cgroups in
/// hybrid mode not supported"); where root lacks CAP_SYS_RESOURCE, the limits podman asks by
/// default (1048576 open files) are refused, and podman lowers its own process limit to 32768.
fn run_in_image(network: &str, args: &[&str]) -> Output {
    let open_files = hard_limit(libc::RLIMIT_NOFILE);
    let processes = hard_limit(libc::RLIMIT_NPROC).min(32_768);
    Command::new("podman")
        .args(["--runtime", "runc", "run", "--rm", "--network", network])
        .arg(format!("--ulimit=nofile={open_files}:{open_files}"))
        .arg(format!("--ulimit=nproc={processes}:{processes}"))
        .arg(image())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run podman")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_image_runs_version_and_the_demo_with_its_verdicts() {
    if let Some(why) = containers_forbidden() {
        eprintln!("skipped: this machine forbids containers: {why}");
        return;
    }
    let version = run_in_image("none", &["--version"]);
    assert!(version.status.success(), "{}", text(&version.stderr));
    assert_eq!(text(&version.stdout).trim(), format!("nodelay {}", env!("CARGO_PKG_VERSION")));

    // The demo's servers and client on the container's own loopback, its only interface.
    let demo = run_in_image("none", &["demo"]);
    assert_eq!(demo.status.code(), Some(0), "{}", text(&demo.stderr));
    let text = text(&demo.stdout);
    let row =
        |label: &str| text.lines().find(|l| l.contains(label)).unwrap_or_else(|| panic!("{label} in {text}"));
    let p50 = |label: &str| {
        let cells: Vec<&str> = row(label).split_whitespace().collect();
        let unit = cells.iter().position(|w| ["ns", "µs", "ms", "s"].contains(w)).expect("a unit");
        text_row_ms(&cells[unit - 1..=unit].join(" "), "")[0]
    };
    assert!(row("two writes, Nagle on").ends_with("server-nagle-delayed-ack"), "{text}");
    assert!(p50("two writes, Nagle on") > 35.0, "{text}");
    assert!(row("TCP_NODELAY set").ends_with("healthy"), "{text}");
    assert!(p50("TCP_NODELAY set") < 5.0, "{text}");
    assert!(row("closes the connection").ends_with("connection-per-request"), "{text}");
    assert!(row("handler thinks").ends_with("slow-first-byte"), "{text}");
    assert!(text.contains("before/after:"), "{text}");
}

/// https:// reads the system's trust store: scratch has none, the image carries Debian's.
/// Nothing listens on port 1, so the run gets as far as connecting only with certificates.
#[test]
fn the_image_has_a_trust_store_for_https() {
    if let Some(why) = containers_forbidden() {
        eprintln!("skipped: this machine forbids containers: {why}");
        return;
    }
    let run = run_in_image("none", &["doctor", "https://127.0.0.1:1/"]);
    let stderr = text(&run.stderr);
    assert!(stderr.contains("cannot connect to 127.0.0.1:1"), "{stderr}");
    assert!(!stderr.contains("trust store"), "{stderr}");
}

/// With the host's network, as the DaemonSet runs it (hostNetwork), the image diagnoses a
/// server on the host's loopback.
#[test]
fn the_image_diagnoses_a_host_server_through_the_host_network() {
    if let Some(why) = containers_forbidden() {
        eprintln!("skipped: this machine forbids containers: {why}");
        return;
    }
    let peer = python_peer("python_http_server.py", &[]);
    let run = run_in_image("host", &["doctor", "--json", &peer.url("/")]);
    assert_eq!(run.status.code(), Some(3), "{}", text(&run.stderr));
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).expect("doctor's JSON");
    assert_eq!(finding_ids(&report), vec!["server-nagle-delayed-ack"]);
}
