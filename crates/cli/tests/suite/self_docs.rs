//! An installed binary documents itself: schemas, completions and a man page.

use crate::common::{nodelay, repo_root};
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
        ("watch", "watch"),
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
        assert!(page.contains(&format!("nodelay\\-{command}(1)")), "{command}");
    }
}

/// A page as `man` shows it, 200 columns wide (no option name hyphenated at a line's end) in
/// the C locale; man must read it without a warning.
fn rendered(page: &std::path::Path) -> String {
    let output = Command::new("man")
        .args(["--warnings", "-l"])
        .arg(page)
        .env("MANWIDTH", "200")
        .env("LC_ALL", "C")
        .env("MAN_KEEP_FORMATTING", "")
        .output()
        .expect("man (man-db) runs");
    let warnings = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && warnings.is_empty(), "{}: {warnings}", page.display());
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn every_command_has_a_man_page_of_its_own_that_names_its_options() {
    let dir =
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = nodelay(&["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let pages: &[(&[&str], &[&str])] = &[
        (&[], &["--version", "nodelay-bench(1)", "nodelay-report(1)"]),
        (&["bench"], &["--connections", "--rate", "--hdr-log", "--sni"]),
        (&["doctor"], &["--budget", "--try-fix", "--idle-probe"]),
        (&["pcap"], &["--flow", "--top"]),
        (&["inspect"], &["--json"]),
        (&["fix"], &["--dry-run"]),
        (&["demo"], &["--help"]),
        (&["exec"], &["--quiet", "LD_PRELOAD"]),
        (&["proxy"], &["--listen", "--upstream", "--listen-public"]),
        (&["watch"], &["--source", "--interface", "--port", "--pid", "--json-lines", "--prometheus"]),
        (&["compare"], &["--rounds", "--labels", "--diagnose"]),
        (&["report"], &["--html", "nodelay-report-merge(1)"]),
        (&["report", "merge"], &["--json", "--html"]),
        (&["schema"], &["bench"]),
        (&["completions"], &["bash"]),
        (&["man"], &["--dir"]),
    ];
    let written = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(written, pages.len(), "one page per command, and no other");
    for (command, options) in pages {
        let name = [&["nodelay"][..], command].concat().join("-");
        let printed = nodelay(&[&["man"][..], command].concat());
        assert_eq!(printed.code(), 0, "{}", printed.stderr());
        let path = dir.join(format!("{name}.1"));
        let file = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(printed.stdout(), file, "nodelay man {command:?} prints what --dir writes");
        assert!(file.starts_with(".ie") && file.contains(&format!(".TH {name} 1 ")), "{file}");
        assert!(file.is_ascii(), "{name}: non-ASCII is a roff escape");
        let text = rendered(&path);
        assert!(text.starts_with(&format!("{name}(1)")), "{text}");
        for option in *options {
            assert!(text.contains(option), "{name} does not name {option}:\n{text}");
        }
    }
    let unknown = nodelay(&["man", "bnech"]);
    assert_eq!(unknown.code(), 2);
    assert!(
        unknown.stderr().contains("no man page for 'bnech' (the commands: bench, doctor,"),
        "{}",
        unknown.stderr()
    );
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
