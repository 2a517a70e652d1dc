//! The house's shape, as docs/architecture.md states it: no crate's files import each other in
//! a circle, each crate depends only on the crates it may, TCP facts are stated only in
//! `crates/tcp`, and only `crates/cli` prints, asks the terminal or parses and spells flags.
//!
//! A file's imports are the `crate::...` paths it names (in `use` lines and in code, braces
//! expanded) and its non-test `super::...` paths, resolved to the file that defines the
//! longest module prefix. `lib.rs` and `main.rs` are each crate's table of contents (its
//! `mod` lines and re-exports) and are left out; test modules are left out too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The library crates and the crates of this workspace each may depend on (docs/architecture.md).
const ALLOWED: &[(&str, &[&str])] = &[
    ("tcp", &[]),
    ("flags", &[]),
    ("wire", &[]),
    ("engine", &["wire", "tcp", "flags"]),
    ("capture", &["tcp"]),
    ("host", &["tcp"]),
    ("diagnose", &["engine", "host", "capture", "proxy", "tcp", "flags"]),
    ("proxy", &["wire", "tcp"]),
    ("launch", &["host"]),
    ("report", &["engine", "diagnose", "capture", "host", "proxy", "tcp", "flags"]),
    ("load", &["wire", "engine", "diagnose", "host", "report", "flags"]),
    ("doctor", &["engine", "diagnose", "host", "report", "load", "tcp", "ebpf", "flags"]),
    ("watch", &["capture", "host", "tcp", "ebpf", "flags"]),
    ("netpath", &[]),
    ("ebpf", &[]),
    (
        "cli",
        &[
            "tcp", "flags", "wire", "engine", "capture", "host", "diagnose", "proxy", "launch", "report",
            "load", "doctor", "watch", "netpath", "ebpf",
        ],
    ),
];

/// The crates that meet TCP and take its model from `nodelay-tcp` (docs/architecture.md).
const TCP_MODEL_USERS: &[&str] = &["capture", "engine", "host", "proxy", "diagnose", "watch"];

/// The names of a crate's normal dependencies (`nodelay-tcp`, `clap`): a test may use any
/// crate, so dev-dependencies are left out.
fn normal_dependencies(name: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(workspace().join("crates").join(name).join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("crates/{name}/Cargo.toml: {e}"));
    let dependencies = manifest.split("\n[dev-dependencies]").next().unwrap_or_default();
    let section = dependencies.split("\n[dependencies]").skip(1).collect::<Vec<_>>().join("\n");
    section
        .lines()
        .map(|line| line.trim().split(['.', ' ', '=']).next().unwrap_or_default().to_string())
        .filter(|name| !name.is_empty() && !name.starts_with(['#', '[']))
        .collect()
}

#[test]
fn each_crate_depends_only_on_the_crates_it_may() {
    for (name, allowed) in ALLOWED {
        for dependency in normal_dependencies(name) {
            let Some(dependency) = dependency.strip_prefix("nodelay-") else { continue };
            assert!(
                allowed.contains(&dependency),
                "crates/{name} depends on nodelay-{dependency}, which docs/architecture.md does not allow it"
            );
        }
    }
}

#[test]
fn the_tcp_model_is_a_leaf_that_every_crate_meeting_tcp_imports() {
    for name in TCP_MODEL_USERS {
        assert!(
            normal_dependencies(name).iter().any(|dependency| dependency == "nodelay-tcp"),
            "crates/{name} meets TCP but does not depend on nodelay-tcp"
        );
    }
}

/// A TCP fact named outside `crates/tcp`: a constant with a fact's name not derived from
/// `nodelay_tcp`, a second `FindingId` or TCP_INFO reader, a percentile or a path judgement
/// of its own. Each would let two crates judge the same packets two ways.
fn tcp_fact_copied(line: &str) -> Option<&'static str> {
    const FACTS: &[&str] = &[
        "RTO_MIN",
        "RTO_SEEN",
        "MIN_PATH_RTT",
        "INITIAL_WINDOW_SEGMENTS",
        "STALL_GAP",
        "LATE_FIRST_BYTE",
        "SLOW_FIRST_BYTE",
        "SYMPTOM_FRACTION",
        "MIN_ACK_DELAY",
        "MAX_ACK_DELAY",
    ];
    let code = line.split("//").next().unwrap_or("");
    // `const NAME: TYPE = value`, with NAME a fact (in any unit) and TYPE a number or a time.
    let declaration = code.trim_start().trim_start_matches("pub ").trim_start_matches("pub(crate) ");
    let declares_fact = declaration.strip_prefix("const ").and_then(|rest| rest.split_once(':')).is_some_and(
        |(name, rest)| {
            let kind = rest.split('=').next().unwrap_or("").trim();
            let numeric = ["f64", "u64", "u32", "usize", "Duration"].contains(&kind);
            let fact = FACTS.iter().any(|fact| {
                ["", "_MS", "_NS", "_US"].iter().any(|unit| name.trim() == format!("{fact}{unit}"))
            });
            numeric && fact
        },
    );
    if declares_fact && !code.contains("nodelay_tcp") {
        return Some("declares a TCP fact; take it from nodelay_tcp");
    }
    if code.contains("enum FindingId") {
        return Some("declares finding ids; nodelay_tcp::FindingId is the one list");
    }
    if code.contains("libc::TCP_INFO") || code.contains("tcpi_") {
        return Some("reads TCP_INFO itself; nodelay_tcp::KernelTcpInfo is the one layout");
    }
    if code.contains("value_at_quantile") || code.contains("len() / 2)") {
        return Some("takes a percentile its own way; use nodelay_tcp::quantile");
    }
    if code.contains(">= MIN_PATH_RTT") || code.contains("< MIN_PATH_RTT") {
        return Some("judges a round trip itself; use nodelay_tcp::path");
    }
    None
}

/// Every line of the chosen crates' code (tests aside) that `flag` has something to say of,
/// as `file:line: what`.
fn lines_flagged(crates: impl Fn(&str) -> bool, flag: fn(&str) -> Option<&'static str>) -> Vec<String> {
    let mut found = Vec::new();
    for (name, _) in ALLOWED.iter().filter(|(name, _)| crates(name)) {
        let src = workspace().join("crates").join(name).join("src");
        for path in modules(&src).values() {
            let text = without_tests(&std::fs::read_to_string(path).unwrap());
            for (number, line) in text.lines().enumerate() {
                if let Some(what) = flag(line) {
                    found.push(format!("{}:{}: {what}", path.display(), number + 1));
                }
            }
        }
    }
    found
}

#[test]
fn tcp_facts_live_only_in_the_tcp_crate() {
    let copies = lines_flagged(|name| name != "tcp", tcp_fact_copied);
    assert!(copies.is_empty(), "TCP facts outside crates/tcp:\n{}", copies.join("\n"));
}

/// A call of the rules: what only `diagnose`'s callers make, never the report models, which
/// render what the rules said.
fn calls_the_rules(line: &str) -> Option<&'static str> {
    const RULES: &[&str] = &[
        "diagnose(",
        "relay_findings(",
        "capture_diagnosis(",
        "suggest(",
        "server_findings(",
        ".diagnose()",
    ];
    let code = line.split("//").next().unwrap_or("");
    RULES.iter().any(|rule| code.contains(rule) && !code.contains("fn ")).then_some("runs the rules")
}

#[test]
fn report_models_render_what_the_rules_said() {
    let calls = lines_flagged(|name| name == "report", calls_the_rules);
    assert!(calls.is_empty(), "the rules called from crates/report:\n{}", calls.join("\n"));
    assert!(calls_the_rules("let findings = relay_findings(&observations);").is_some());
    assert!(calls_the_rules("pub fn suggestion_shape(&self) -> RunShape {").is_none());
}

/// A rule that hands its findings out bare, outside the one `Diagnosis` every source gets.
fn bare_findings(line: &str) -> Option<&'static str> {
    let code = line.split("//").next().unwrap_or("");
    (code.trim_start().starts_with("pub fn ")
        && (code.contains("-> Vec<Finding>") || code.contains("-> Option<Finding>")))
    .then_some("a public rule returns findings, not a Diagnosis")
}

#[test]
fn every_source_gets_one_diagnosis() {
    let bare = lines_flagged(|name| name == "diagnose", bare_findings);
    assert!(bare.is_empty(), "rules outside the stage:\n{}", bare.join("\n"));
    assert!(bare_findings("pub fn relay_findings(o: &RelayObservations) -> Vec<Finding> {").is_some());
    assert!(bare_findings("pub(crate) fn relay_findings(o: &RelayObservations) -> Vec<Finding> {").is_none());
    assert!(bare_findings("pub fn diagnose(&self) -> Diagnosis {").is_none());
}

#[test]
fn the_fact_reader_sees_copies_and_lets_derived_views_pass() {
    assert!(tcp_fact_copied("const STALL_GAP_MS: f64 = 25.0;").is_some());
    assert!(tcp_fact_copied("pub const RTO_MIN_NS: u64 = 200_000_000;").is_some());
    assert!(tcp_fact_copied("pub const RTO_MIN_NS: u64 = ns(nodelay_tcp::RTO_MIN);").is_none());
    assert!(tcp_fact_copied("pub enum FindingId {").is_some());
    assert!(tcp_fact_copied("let m = v.get(v.len() / 2).copied();").is_some());
    assert!(tcp_fact_copied("rtt.filter(|&rtt| rtt >= MIN_PATH_RTT_MS)").is_some());
    assert!(tcp_fact_copied("let stall = gap >= STALL_GAP_MS; // STALL_GAP").is_none());
    assert!(tcp_fact_copied("const SLOW_FIRST_BYTE_RTT_SHARE: f64 = 0.25;").is_none());
    assert!(tcp_fact_copied("const LATE_FIRST_BYTE: Symptom = Symptom {").is_none());
    assert!(tcp_fact_copied("pub(crate) const SLOW_BODY_MS: f64 = STALL_GAP_MS;").is_none());
}

#[test]
fn every_library_crate_documents_its_public_items() {
    for (name, _) in ALLOWED.iter().filter(|(name, _)| *name != "cli") {
        let lib = std::fs::read_to_string(workspace().join("crates").join(name).join("src/lib.rs")).unwrap();
        assert!(
            lib.contains("#![warn(missing_docs)]"),
            "crates/{name}/src/lib.rs lacks #![warn(missing_docs)]"
        );
    }
}

#[test]
fn a_crate_without_unsafe_code_forbids_it() {
    // Every crate root (lib.rs and the binaries'): once a crate has no `unsafe`, the compiler
    // keeps it so; a crate that needs some comments each block instead (SAFETY).
    for (name, _) in ALLOWED {
        let src = workspace().join("crates").join(name).join("src");
        let texts: Vec<String> =
            modules(&src).values().map(|path| std::fs::read_to_string(path).unwrap()).collect();
        let uses_unsafe = texts.iter().any(|text| {
            without_tests(text).lines().any(|line| {
                let code = line.split("//").next().unwrap_or("");
                code.contains("unsafe ") || code.contains("unsafe{")
            })
        });
        let roots = ["lib.rs", "main.rs", "path_main.rs"].map(|root| src.join(root));
        for root in roots.iter().filter(|root| root.exists()) {
            let text = std::fs::read_to_string(root).unwrap();
            assert_eq!(
                text.contains("#![forbid(unsafe_code)]"),
                !uses_unsafe,
                "crates/{name}: {} {}",
                root.display(),
                if uses_unsafe { "forbids unsafe code it uses" } else { "lacks #![forbid(unsafe_code)]" }
            );
        }
    }
}

#[test]
fn no_crate_has_a_circle_of_files() {
    for (name, _) in ALLOWED {
        let src = workspace().join("crates").join(name).join("src");
        let modules = modules(&src);
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, path) in &modules {
            if module.is_empty() {
                continue;
            }
            let text = without_tests(&std::fs::read_to_string(path).unwrap());
            for target in imports(module, &text) {
                if let Some(file) = resolve(&modules, &target)
                    && !file.is_empty()
                    && &file != module
                {
                    edges.entry(module.clone()).or_default().insert(file);
                }
            }
        }
        if let Some(circle) = find_circle(&edges) {
            panic!("crates/{name}: these files import each other in a circle: {}", circle.join(" -> "));
        }
    }
}

/// Dependencies for the front end alone: parsing arguments and drawing on a terminal.
const FRONT_END_CRATES: &[&str] =
    &["clap", "clap_complete", "indicatif", "console", "terminal_size", "crossterm"];

/// What a library's code (tests aside) may not write: printing, the standard streams, asking
/// the terminal, clap's attributes.
fn front_end_work(line: &str) -> Option<&'static str> {
    const WORK: &[(&str, &str)] = &[
        ("println!", "prints"),
        ("eprintln!", "prints"),
        ("print!(", "prints"),
        ("eprint!(", "prints"),
        ("io::stdout()", "writes to stdout"),
        ("io::stderr()", "writes to stderr"),
        ("is_terminal()", "asks the terminal"),
        ("TIOCGWINSZ", "asks the terminal"),
        ("#[arg(", "declares a flag"),
        ("#[command(", "declares a command"),
        ("clap::", "parses flags"),
    ];
    let code = line.split("//").next().unwrap_or("");
    WORK.iter().find(|(pattern, _)| code.contains(pattern)).map(|(_, what)| *what)
}

#[test]
fn only_the_cli_prints_asks_the_terminal_or_parses_flags() {
    let mut found = lines_flagged(|name| name != "cli", front_end_work);
    for (name, _) in ALLOWED.iter().filter(|(name, _)| *name != "cli") {
        for dependency in normal_dependencies(name) {
            if FRONT_END_CRATES.contains(&dependency.as_str()) {
                found.push(format!("crates/{name}/Cargo.toml depends on {dependency}"));
            }
        }
    }
    assert!(found.is_empty(), "front-end work outside crates/cli:\n{}", found.join("\n"));
}

#[test]
fn the_front_end_reader_sees_printing_streams_and_flags() {
    assert_eq!(front_end_work("    println!(\"{x}\");"), Some("prints"));
    assert_eq!(front_end_work("let out = std::io::stdout();"), Some("writes to stdout"));
    assert_eq!(front_end_work("#[derive(Debug, clap::Args)]"), Some("parses flags"));
    assert_eq!(front_end_work("    #[arg(long)]"), Some("declares a flag"));
    assert_eq!(front_end_work("// println! in a comment"), None);
    assert_eq!(front_end_work("let text = format!(\"{x}\");"), None);
}

/// Every long flag of every nodelay command, aliases included, as clap defines them.
fn nodelay_flags() -> BTreeSet<String> {
    use clap::CommandFactory;
    let mut flags = BTreeSet::new();
    let mut commands = vec![nodelay::Cli::command()];
    while let Some(command) = commands.pop() {
        for arg in command.get_arguments() {
            flags.extend(
                arg.get_long()
                    .into_iter()
                    .chain(arg.get_all_aliases().unwrap_or_default())
                    .map(|f| format!("--{f}")),
            );
        }
        commands.extend(command.get_subcommands().cloned());
    }
    flags
}

/// The string literals of Rust `code` (escapes left as written, a `\\` line continuation
/// joined; raw strings as written), comments and char literals skipped.
fn string_literals(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().filter(|&c| c != '\r').collect();
    let find = |from: usize, what: &[char]| {
        (from..chars.len()).find(|&i| chars[i..].starts_with(what)).unwrap_or(chars.len())
    };
    let (mut found, mut at) = (Vec::new(), 0);
    while at < chars.len() {
        let next = chars.get(at + 1).copied();
        match chars[at] {
            '/' if next == Some('/') => at = find(at, &['\n']),
            '/' if next == Some('*') => at = find(at + 2, &['*', '/']) + 1,
            // A char literal: 'x' or an escape, '\'' and '\\' included.
            '\'' if next == Some('\\') => at = find(at + 3, &['\'']),
            '\'' if chars.get(at + 2) == Some(&'\'') => at += 2,
            // A raw string: r"…" or r#"…"#, no escapes.
            'r' if (next == Some('"') || next == Some('#'))
                && (at == 0 || !(chars[at - 1].is_alphanumeric() || chars[at - 1] == '_')) =>
            {
                let hashes = chars[at + 1..].iter().take_while(|&&c| c == '#').count();
                if chars.get(at + 1 + hashes) != Some(&'"') {
                    at += 1;
                    continue;
                }
                let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                let start = at + 2 + hashes;
                let end = find(start, &close);
                found.push(chars[start..end.min(chars.len())].iter().collect());
                at = end + close.len() - 1;
            }
            '"' => {
                let mut text = String::new();
                at += 1;
                while at < chars.len() && chars[at] != '"' {
                    if chars[at] == '\\' && chars.get(at + 1) == Some(&'\n') {
                        at += 2;
                        while chars.get(at).is_some_and(|c| c.is_whitespace()) {
                            at += 1;
                        }
                        continue;
                    }
                    if chars[at] == '\\' {
                        text.push(chars[at]);
                        at += 1;
                    }
                    if let Some(&c) = chars.get(at) {
                        text.push(c);
                    }
                    at += 1;
                }
                found.push(text);
            }
            _ => {}
        }
        at += 1;
    }
    found
}

/// The code of a library source file that is not test code: none of a `tests` module's file,
/// and of another file what comes before its test module.
fn library_code(module: &str, text: &str) -> String {
    if module == "tests" || module.ends_with("::tests") {
        return String::new();
    }
    let test_module = ["#[cfg(test)]\nmod ", "#[cfg(test)]\npub(crate) mod "];
    let end = test_module.iter().filter_map(|marker| text.find(marker)).min().unwrap_or(text.len());
    text[..end].to_string()
}

/// The flags (`--name`) a text names.
fn flags_named(text: &str) -> Vec<String> {
    text.match_indices("--")
        .filter(|(at, _)| *at == 0 || !text[..*at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '-'))
        .filter_map(|(at, _)| {
            let name: String = text[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '.')
                .collect();
            let name = name.trim_end_matches(['-', '.']);
            name.starts_with(|c: char| c.is_ascii_lowercase()).then(|| format!("--{name}"))
        })
        .collect()
}

/// Other programs' flags that libraries name in advice, each with its program.
const OTHER_PROGRAMS_FLAGS: &[(&str, &str)] = &[
    ("--data-binary", "curl"),
    ("--expect100-timeout", "curl"),
    ("--http2", "curl"),
    ("--http2-prior-knowledge", "curl"),
    ("--http", "uWSGI"),
    ("--http11-socket", "uWSGI"),
    ("--http-keepalive", "uWSGI"),
    ("--tcp-nodelay", "uWSGI"),
    ("--h2-max-concurrent-streams", "hypercorn"),
    ("--backlog", "gunicorn"),
    ("--keep-alive", "gunicorn"),
    ("--cpu-prof", "node"),
];

/// Files whose purpose is another program's command line, with the flags of that program's
/// that nodelay has too (curl's `--cacert`): there, those are the other program's.
const OTHER_PROGRAMS_COMMAND_LINES: &[(&str, &[&str])] = &[
    ("crates/load/src/curl.rs", &["--cacert", "--insecure"]),
    ("crates/diagnose/src/curl_words.rs", &["--cacert", "--insecure"]),
];

/// Programs whose commands libraries quote in advice: in a string, the flags after one of
/// these names are its own ("py-spy dump --pid PID"), until the clause ends (`;`, `.`, `:`,
/// `)`) or "nodelay" names nodelay again.
const OTHER_PROGRAMS: &[&str] = &["curl", "py-spy", "gunicorn", "uWSGI", "uwsgi", "hypercorn", "node"];

/// The flags a text names as nodelay's: those not in another program's command.
fn nodelay_flags_named(text: &str) -> Vec<String> {
    let mut named = Vec::new();
    let mut nodelays = true;
    for word in text.split(|c: char| c.is_whitespace() || c == '(' || c == '`') {
        if OTHER_PROGRAMS.contains(&word) {
            nodelays = false;
        } else if word == "nodelay" {
            nodelays = true;
        } else if nodelays {
            named.extend(flags_named(word));
        }
        if word.ends_with([';', '.', ':', ')']) {
            nodelays = true;
        }
    }
    named
}

/// Where each library's strings spell one of nodelay's flags (`file: --flag`).
fn nodelay_flags_spelled() -> Vec<String> {
    let known = nodelay_flags();
    let mut spelled = Vec::new();
    for (name, _) in ALLOWED.iter().filter(|(name, _)| *name != "cli") {
        let src = workspace().join("crates").join(name).join("src");
        for (module, path) in modules(&src) {
            let shown = format!("crates/{name}/src/{}", path.strip_prefix(&src).unwrap().display());
            let others: &[&str] = OTHER_PROGRAMS_COMMAND_LINES
                .iter()
                .find(|(file, _)| *file == shown)
                .map_or(&[], |(_, flags)| flags);
            let code = library_code(&module, &std::fs::read_to_string(&path).unwrap());
            for flag in string_literals(&code).iter().flat_map(|s| nodelay_flags_named(s)) {
                if known.contains(&flag) && !others.contains(&flag.as_str()) {
                    spelled.push(format!("{shown}: {flag}"));
                }
            }
        }
    }
    spelled
}

/// Every flag a library names is one of nodelay's (or another program's, named), and no
/// library spells one of nodelay's: it names a `nodelay_flags::Flag`, which the CLI spells.
#[test]
fn every_flag_a_library_names_is_one_the_cli_has() {
    let known = nodelay_flags();
    assert!(known.contains("--budget") && known.contains("--h2") && known.len() > 50, "{known:?}");
    let mut unknown = Vec::new();
    for (name, _) in ALLOWED.iter().filter(|(name, _)| *name != "cli") {
        let src = workspace().join("crates").join(name).join("src");
        for (module, path) in modules(&src) {
            let code = library_code(&module, &std::fs::read_to_string(&path).unwrap());
            for flag in string_literals(&code).iter().flat_map(|s| flags_named(s)) {
                if !known.contains(&flag) && !OTHER_PROGRAMS_FLAGS.iter().any(|(other, _)| *other == flag) {
                    unknown.push(format!("{}: {flag}", path.display()));
                }
            }
        }
    }
    assert!(unknown.is_empty(), "flags no nodelay command has:\n{}", unknown.join("\n"));
    let spelled = nodelay_flags_spelled();
    assert!(
        spelled.is_empty(),
        "libraries that spell nodelay's flags (name a Flag):\n{}",
        spelled.join("\n")
    );
    for (file, _) in OTHER_PROGRAMS_COMMAND_LINES {
        assert!(workspace().join(file).is_file(), "{file} is gone: take it off the list");
    }
    assert_eq!(nodelay_flags_named("py-spy dump --pid PID, then nodelay doctor --pid 1"), ["--pid"]);
    assert_eq!(nodelay_flags_named("curl -i --cacert a (or --insecure)"), Vec::<String>::new());
    assert_eq!(nodelay_flags_named("as curl does; raise --budget"), ["--budget"], "a clause ends it");
    let literals = string_literals("let a = '\"'; f(\"x --budget y\"); // \"--nope\"\ng(\"a \\\n   --h2\")");
    assert_eq!(literals, ["x --budget y", "a --h2"]);
    let tricky =
        string_literals("['\\'', '\"']; /* \"--no\" */ r\"C:\\\"; r#\"a \"b\" --c\"#; for<'a> x\r\n\"--d\"");
    assert_eq!(tricky, ["C:\\", "a \"b\" --c", "--d"]);
    assert_eq!(flags_named("--h2, --http1.1 and a--b, -- alone"), ["--h2", "--http1.1"]);
}

/// Module path (`a::b`, "" for the root) to file, for every .rs file under `src`.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    let mut folders = vec![src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> =
                relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                parts.pop();
            }
            found.insert(parts.join("::"), path);
        }
    }
    found
}

/// The code before the file's test module (`#[cfg(test)]` then `mod`, which closes every file
/// that has one), without comments: a doc link names a module without importing it.
fn without_tests(text: &str) -> String {
    let mut kept = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| {
                let next = next.trim_start();
                next.starts_with("mod ") || next.starts_with("pub(crate) mod ")
            })
        {
            break;
        }
        kept.push_str(line.split("//").next().unwrap_or_default());
        kept.push('\n');
    }
    kept
}

/// The module paths `text` (the file of `module`) names through `crate::` and `super::`.
fn imports(module: &str, text: &str) -> Vec<String> {
    let parent: Vec<&str> = module.split("::").collect();
    let parent = parent[..parent.len() - 1].join("::");
    let mut found = Vec::new();
    for (prefix, base) in [("crate::", String::new()), ("super::", parent)] {
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let preceded = rest[..at].chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_');
            rest = &rest[at + prefix.len()..];
            if preceded {
                continue;
            }
            for path in expand(rest) {
                found.push(if base.is_empty() { path } else { format!("{base}::{path}") });
            }
        }
    }
    found
}

/// The paths at the start of `text`: `a::b::C` gives one, `{a::X, b::{c, d}}` each.
fn expand(text: &str) -> Vec<String> {
    let head: String = text.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
    let head = head.trim_end_matches(':').to_string();
    let after = &text[head.len()..].trim_start_matches(':');
    if !after.starts_with('{') {
        return vec![head];
    }
    // The group's items at depth one, each expanded in turn.
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 1);
    for (index, c) in after.char_indices() {
        match c {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                items.push(&after[start..index]);
                start = index + 1;
                if c == '}' {
                    break;
                }
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
    items
        .into_iter()
        .map(str::trim)
        .filter(|item| !item.is_empty() && *item != "self")
        .flat_map(|item| expand(item).into_iter().map(|path| join(&head, &path)).collect::<Vec<_>>())
        .collect()
}

fn join(head: &str, path: &str) -> String {
    if head.is_empty() { path.to_string() } else { format!("{head}::{path}") }
}

/// The module whose file defines `path`: its longest prefix that is a file.
fn resolve(modules: &BTreeMap<String, PathBuf>, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (0..=parts.len()).rev().map(|n| parts[..n].join("::")).find(|prefix| modules.contains_key(prefix))
}

/// A circle in the import graph, as the files along it, if there is one.
fn find_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.to_string());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, done, path) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|node| visit(node, edges, &mut done, &mut Vec::new()))
}

#[test]
fn the_import_reader_sees_grouped_and_nested_paths() {
    let text = "use crate::a::{B, c::{D, e}};\nfn f() { crate::f::g(); notcrate::x(); }";
    let found = imports("x::y", text);
    assert_eq!(found, ["a::B", "a::c::D", "a::c::e", "f::g"]);
    assert_eq!(imports("x::y", "use super::z::W;"), ["x::z::W"]);
    let edges = BTreeMap::from([
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["a".to_string()])),
    ]);
    assert_eq!(find_circle(&edges), Some(vec!["a".into(), "b".into(), "a".into()]));
}

/// The README's first command, `cargo run --release -p nodelay -- demo`, runs the `nodelay`
/// binary: the package has another (nodelay-path), and without `default-run` cargo refuses
/// to choose.
#[test]
fn cargo_run_of_the_package_means_the_nodelay_binary() {
    let manifest = std::fs::read_to_string(workspace().join("crates/cli/Cargo.toml")).unwrap();
    let binaries = manifest.matches("[[bin]]").count();
    let package = manifest.split("\n[").next().unwrap_or_default();
    assert!(
        binaries <= 1 || package.lines().any(|line| line.replace(' ', "") == "default-run=\"nodelay\""),
        "crates/cli has {binaries} binaries and no default-run = \"nodelay\" in [package]"
    );
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    assert!(readme.contains("cargo run --release -p nodelay -- demo"), "the README's set-up command changed");
}
