//! Flags typed from another load tool's habit (wrk, wrk2, ab, oha, hey), read before the
//! command line is parsed: clap alone would answer them with a bare "unexpected argument", or
//! take them for one of nodelay's own flags that means something else (`-d {json}` for a
//! duration). A flag that would change nothing here is accepted with a note ([`accept`]); one
//! that asks for something nodelay spells otherwise is refused with the spelling ([`hint`]).
//!
//! Only nodelay's own words are read: none past `--`, and none of `exec`'s, whose words after
//! its `--quiet` are the program's own (`nodelay exec -- tool -q 5`).

use std::ffi::OsString;

/// The commands that send load, where these habits are typed.
const LOAD_COMMANDS: [&str; 3] = ["bench", "compare", "doctor"];

/// The words of `args` (program name first) that are nodelay's: all up to a `--`; none for
/// `exec`.
fn ours(args: &[OsString]) -> &[OsString] {
    if args.get(1).is_some_and(|command| command == "exec") {
        return &[];
    }
    args.iter().position(|a| a == "--").map_or(args, |end| &args[..end])
}

fn command(args: &[OsString]) -> Option<&str> {
    args.get(1).and_then(|command| command.to_str())
}

/// `args` without the flags that change nothing here, and a note for the user about the ones
/// that deserve one: wrk's `--latency` (percentiles are always shown) is dropped silently;
/// ab's `-k` (keep-alive, already the default) is dropped with a note when no https:// URL is
/// given, since `-k` is curl's `--insecure` here.
pub fn accept(args: Vec<OsString>) -> (Vec<OsString>, Option<String>) {
    let Some(command) = command(&args).filter(|c| LOAD_COMMANDS.contains(c)) else { return (args, None) };
    let drop_latency = command != "doctor";
    let end = ours(&args).len();
    let https = args.iter().any(|a| a.to_string_lossy().starts_with("https://"));
    let mut noted = false;
    let kept = args
        .into_iter()
        .enumerate()
        .filter(|(index, arg)| {
            if *index >= end {
                return true;
            }
            if drop_latency && arg == "--latency" {
                return false;
            }
            if !https && arg == "-k" {
                noted = true;
                return false;
            }
            true
        })
        .map(|(_, arg)| arg)
        .collect();
    let note =
        noted.then(|| "-k ignored: keep-alive (ab's -k) is the default; here -k is --insecure".to_string());
    (kept, note)
}

/// A usage error for a flag typed from another tool's habit, naming nodelay's spelling.
pub fn hint(args: &[OsString]) -> Option<String> {
    let ours = ours(args);
    let value_of = |flag: &str| {
        let at = ours.iter().position(|a| a == flag)?;
        // Shown in a one-line error: a line break or an escape typed in it is written escaped.
        let value = ours.get(at + 1).map_or_else(String::new, |v| v.to_string_lossy().into_owned());
        Some(
            value
                .chars()
                .flat_map(|c| if c.is_control() { c.escape_debug().collect() } else { vec![c] })
                .collect::<String>(),
        )
    };
    // hey's and oha's -q N is a rate (ours is --quiet), anywhere but exec.
    if let Some(next) = value_of("-q").filter(|next| next.parse::<f64>().is_ok()) {
        return Some(format!(
            "-q means --quiet here; for a request rate (oha's -q, hey's -q per worker) use --rate {next} (requests/s in total)"
        ));
    }
    if !command(args).is_some_and(|c| LOAD_COMMANDS.contains(&c)) {
        return None;
    }
    let or =
        |value: String, placeholder: &str| if value.is_empty() { placeholder.to_string() } else { value };
    if let Some(rate) = value_of("-R") {
        return Some(format!("-R is wrk2's rate: use --rate {} (requests/s in total)", or(rate, "R")));
    }
    if let Some(body) = value_of("-d").filter(|v| v.starts_with(['{', '[', '@'])) {
        let body = shell_word(&body);
        return Some(format!(
            "-d is the duration here (as in wrk); for a request body (oha's and curl's -d) use -b {body}"
        ));
    }
    if let Some(file) = value_of("-p") {
        return Some(format!(
            "-p is ab's body file: use -b @{} (POST, the default with a body; ab's -T is -H 'Content-Type: TYPE')",
            or(file, "FILE")
        ));
    }
    if let Some(kind) = value_of("-T") {
        return Some(format!("-T is ab's content type: use -H 'Content-Type: {}'", or(kind, "TYPE")));
    }
    if value_of("-s").is_some() {
        return Some(
            "-s is wrk's Lua script: nodelay takes requests from a TOML file, --scenario FILE (see nodelay bench --help)"
                .to_string(),
        );
    }
    None
}

/// `text` as one word a shell reads back unchanged: single-quoted unless it is plain.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+,-./:=_".contains(c);
    if text.chars().all(plain) { text.to_string() } else { format!("'{}'", text.replace('\'', r"'\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    fn args(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn numeric_q_gets_a_rate_hint() {
        assert!(hint(&args("nodelay bench -q 100 http://h/")).unwrap().contains("--rate 100"));
        assert_eq!(hint(&args("nodelay bench -q http://h/")), None);
        assert_eq!(hint(&args("nodelay exec -- tool -q 5")), None);
        assert_eq!(hint(&args("nodelay exec -q tool 5")), None);
        assert_eq!(hint(&args("nodelay bench http://h/ -- -q 5")), None);
        // Not UTF-8: no hint and no panic; clap then says what is wrong.
        let with_odd = |line: &str| [args(line), vec![OsString::from_vec(b"\xff".to_vec())]].concat();
        assert_eq!(hint(&with_odd("nodelay inspect")), None);
        assert_eq!(hint(&with_odd("nodelay bench -q")), None);
        assert!(accept(with_odd("nodelay bench -k")).1.is_some());
    }

    #[test]
    fn other_tools_flags_point_to_ours() {
        let said = |line: &str| hint(&args(line)).unwrap_or_default();
        assert!(said("nodelay bench -R 2000 http://h/").contains("use --rate 2000"));
        assert!(said("nodelay bench -R").contains("use --rate R"));
        assert!(said(r#"nodelay bench -d {"a":1} http://h/"#).ends_with(r#"use -b '{"a":1}'"#));
        assert!(said("nodelay doctor -d @body.json http://h/").ends_with("use -b @body.json"));
        assert!(said("nodelay bench -p post.txt -T application/json http://h/").contains("-b @post.txt"));
        assert!(
            said("nodelay bench -T application/json http://h/")
                .contains("-H 'Content-Type: application/json'")
        );
        assert!(said("nodelay compare -s x.lua http://h/ http://i/").contains("--scenario FILE"));
        let typed = [args("nodelay bench -T"), vec![OsString::from("a\nb\u{1b}")]].concat();
        assert!(hint(&typed).unwrap().ends_with(r"-H 'Content-Type: a\nb\u{1b}'"), "{:?}", hint(&typed));
        // wrk's -d with a duration is ours too; a flag of another command is left to clap.
        assert_eq!(hint(&args("nodelay bench -d 10s http://h/")), None);
        assert_eq!(hint(&args("nodelay proxy -d {x}")), None);
        assert_eq!(hint(&args("nodelay bench http://h/ -- -R 5")), None);
    }

    #[test]
    fn flags_that_change_nothing_are_dropped_with_a_note_when_due() {
        let accepted = |line: &str| {
            let (kept, note) = accept(args(line));
            (kept.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" "), note)
        };
        assert_eq!(
            accepted("nodelay bench --latency -c 2 http://h/"),
            ("nodelay bench -c 2 http://h/".into(), None)
        );
        let (kept, note) = accepted("nodelay bench -k http://h/");
        assert_eq!(kept, "nodelay bench http://h/");
        assert!(note.unwrap().contains("keep-alive (ab's -k) is the default"));
        // -k is --insecure for an https:// URL; the doctor has no --latency; exec's words are
        // the program's.
        assert_eq!(accepted("nodelay bench -k https://h/").0, "nodelay bench -k https://h/");
        assert_eq!(accepted("nodelay doctor --latency http://h/").0, "nodelay doctor --latency http://h/");
        assert_eq!(accepted("nodelay exec -- wrk --latency -k").0, "nodelay exec -- wrk --latency -k");
        assert_eq!(accepted("nodelay bench http://h/ -- -k").0, "nodelay bench http://h/ -- -k");
    }

    #[test]
    fn shell_words_quote_what_a_shell_would_read_otherwise() {
        assert_eq!(shell_word("@body.json"), "@body.json");
        assert_eq!(shell_word(r#"{"a": 1}"#), r#"'{"a": 1}'"#);
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
