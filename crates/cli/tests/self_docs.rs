//! An installed binary documents itself: schemas, completions and a man page.

mod common;

use common::{nodelay, repo_root};
use std::process::Command;

#[test]
fn schemas_are_embedded_and_equal_the_files() {
    // inspect and fix share one schema.
    for (name, file) in [
        ("bench", "bench"),
        ("doctor", "doctor"),
        ("pcap", "pcap"),
        ("inspect", "inspect"),
        ("fix", "inspect"),
        ("proxy", "proxy"),
    ] {
        let run = nodelay(&["schema", name]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let file =
            std::fs::read_to_string(repo_root().join(format!("schema/{file}.schema.json"))).expect("schema");
        assert_eq!(run.stdout(), file, "{name}");
        assert!(run.json()["$schema"].is_string());
    }
    assert_eq!(nodelay(&["schema", "nonsense"]).code(), 2);
    let help = nodelay(&["bench", "--help"]).stdout();
    assert!(help.contains("nodelay schema bench") && !help.contains("schema/bench.schema.json"), "{help}");
}

#[test]
fn bash_completion_loads_and_completes_subcommands() {
    let script = nodelay(&["completions", "bash"]).stdout();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("nodelay.bash");
    std::fs::write(&path, script).expect("write completion script");
    let check = format!(
        "source {} && COMP_WORDS=(nodelay do) COMP_CWORD=1 && _nodelay nodelay do nodelay && echo \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let output = Command::new("bash").args(["-c", &check]).output().expect("bash");
    let replies = String::from_utf8_lossy(&output.stdout);
    assert!(
        replies.split_whitespace().any(|w| w == "doctor"),
        "{replies} {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn bash_completion_knows_exec() {
    let script = nodelay(&["completions", "bash"]).stdout();
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nodelay-exec.bash");
    std::fs::write(&path, script).expect("write completion script");
    let check = format!(
        "source {} && COMP_WORDS=(nodelay ex) COMP_CWORD=1 && _nodelay nodelay ex nodelay && echo \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let output = Command::new("bash").args(["-c", &check]).output().expect("bash");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "exec");
}

#[test]
fn man_page_is_roff_with_every_command() {
    let page = nodelay(&["man"]).stdout();
    assert!(page.contains(".TH nodelay 1"), "{page}");
    for command in ["bench", "doctor", "pcap", "demo", "inspect", "fix", "exec", "proxy"] {
        assert!(page.contains(command), "{command}");
    }
}

#[test]
fn every_help_fits_80_columns() {
    for command in [
        &[][..],
        &["bench"],
        &["doctor"],
        &["pcap"],
        &["inspect"],
        &["fix"],
        &["demo"],
        &["exec"],
        &["proxy"],
        &["schema"],
        &["completions"],
        &["man"],
    ] {
        let run = nodelay(&[command, &["--help"]].concat());
        assert_eq!(run.code(), 0, "{command:?}");
        let wide: Vec<&str> = run
            .output
            .stdout
            .split(|&b| b == b'\n')
            .filter_map(|l| std::str::from_utf8(l).ok())
            .filter(|l| l.chars().count() > 80)
            .collect();
        assert!(wide.is_empty(), "{command:?} --help has lines over 80 columns: {wide:#?}");
    }
}
