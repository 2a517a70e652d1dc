//! Scenario files: a list of named HTTP requests against one base URL, sent in a weighted
//! mix or as a fixed sequence on every connection. See docs/bench.md, "Scenarios".
//!
//! ```toml
//! mode = "weighted"            # or "sequence"
//! [[request]]
//! name = "main page"
//! path = "/"
//! weight = 5
//! [[request]]
//! name = "add job"
//! method = "POST"              # default: GET, or POST when a body is given
//! path = "/jobs"
//! form = { name = "nightly", branch = "main" }   # or json = {...}, or body = "text" / "@file"
//! headers = { X-Trace = "1" }
//! ```

use crate::input::{MAX_BODY_BYTES, MAX_SCENARIO_BYTES, read_capped};
use crate::usage::usage;
use anyhow::{Context, Result};
use nodelay_engine::Selection;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Most named requests in one scenario.
pub const MAX_REQUESTS: usize = 10_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    #[serde(default)]
    mode: Mode,
    request: Vec<RequestEntry>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Mode {
    #[default]
    Weighted,
    Sequence,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestEntry {
    name: String,
    method: Option<String>,
    path: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    form: Option<BTreeMap<String, String>>,
    json: Option<toml::Value>,
    #[serde(default = "default_weight")]
    weight: u32,
}

fn default_weight() -> u32 {
    1
}

/// One named request of a scenario, ready to encode against the base URL.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioRequest {
    /// Its name: the row of the per-request table.
    pub name: String,
    /// HTTP method, upper case.
    pub method: String,
    /// Path and query, starting with `/`.
    pub path: String,
    /// Its own headers (a Content-Type for form and json bodies).
    pub headers: Vec<(String, String)>,
    /// The body, empty for none.
    pub body: Vec<u8>,
}

/// A parsed scenario file.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The named requests, in the file's order.
    pub requests: Vec<ScenarioRequest>,
    /// How each connection picks its next request: by weight, or in sequence.
    pub selection: Selection,
}

/// Reads and parses the scenario file at `path` (capped in size); any mistake is a usage
/// error naming the file.
pub fn load_scenario(path: &Path) -> Result<Scenario> {
    let bytes = read_capped(path, "scenario", MAX_SCENARIO_BYTES)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| usage(format!("scenario '{}' is not UTF-8 text: {e}", path.display())))?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse_scenario(&text, base).map_err(|e| usage(format!("scenario '{}': {e:#}", path.display())))
}

/// Parses scenario text; `@file` bodies are read relative to `base`.
pub fn parse_scenario(text: &str, base: &Path) -> Result<Scenario> {
    let file: ScenarioFile = toml::from_str(text).map_err(|e| {
        // toml's own text draws the line under a caret over several lines: the place in words.
        // Counted in bytes: a span need not fall on a character's boundary.
        let before = |end: usize| &text.as_bytes()[..end.min(text.len())];
        let line = e.span().map(|span| before(span.start).iter().filter(|&&b| b == b'\n').count() + 1);
        let at = line.map(|line| format!(" at line {line}")).unwrap_or_default();
        anyhow::anyhow!("invalid TOML{at}: {}", e.message().trim().replace('\n', " "))
    })?;
    if file.request.is_empty() {
        anyhow::bail!("no [[request]] entries");
    }
    // Records carry the request's index as a u16; far fewer names already make an unreadable
    // per-request table.
    if file.request.len() > MAX_REQUESTS {
        anyhow::bail!("{} [[request]] entries: at most {MAX_REQUESTS}", file.request.len());
    }
    let mut requests = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (index, entry) in file.request.iter().enumerate() {
        // Names head the per-request table's rows: a line break or an escape would break it.
        if entry.name.trim().is_empty() || entry.name.chars().any(char::is_control) {
            anyhow::bail!("request {}: its name is empty or holds a control character", index + 1);
        }
        if !names.insert(entry.name.as_str()) {
            anyhow::bail!("two requests are named '{}'", entry.name);
        }
        requests.push(to_request(entry, base).with_context(|| format!("request '{}'", entry.name))?);
    }
    let selection = match file.mode {
        Mode::Sequence => Selection::Sequence,
        Mode::Weighted => {
            if file.request.iter().all(|r| r.weight == 0) {
                anyhow::bail!("every weight is 0");
            }
            Selection::Weighted(file.request.iter().map(|r| r.weight).collect())
        }
    };
    Ok(Scenario { requests, selection })
}

fn to_request(entry: &RequestEntry, base: &Path) -> Result<ScenarioRequest> {
    if !entry.path.starts_with('/') {
        anyhow::bail!("path '{}' must start with /", entry.path);
    }
    let bodies = [entry.body.is_some(), entry.form.is_some(), entry.json.is_some()];
    if bodies.iter().filter(|b| **b).count() > 1 {
        anyhow::bail!("give at most one of body, form and json");
    }
    let mut headers: Vec<(String, String)> = entry.headers.clone().into_iter().collect();
    let mut content_type = |value: &str| {
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
            headers.push(("Content-Type".into(), value.into()));
        }
    };
    let body = if let Some(form) = &entry.form {
        content_type("application/x-www-form-urlencoded");
        url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish().into_bytes()
    } else if let Some(json) = &entry.json {
        content_type("application/json");
        serde_json::to_vec(json).context("json body")?
    } else if let Some(body) = &entry.body {
        match body.strip_prefix('@') {
            Some(file) => read_capped(&base.join(file), "body file", MAX_BODY_BYTES)?,
            None => body.clone().into_bytes(),
        }
    } else {
        Vec::new()
    };
    let method = match &entry.method {
        Some(method) => method.to_ascii_uppercase(),
        None if body.is_empty() => "GET".into(),
        None => "POST".into(),
    };
    Ok(ScenarioRequest { name: entry.name.clone(), method, path: entry.path.clone(), headers, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SITE: &str = r#"
        [[request]]
        name = "main page"
        path = "/"
        weight = 3

        [[request]]
        name = "add job"
        path = "/jobs"
        form = { name = "nightly build", branch = "main" }

        [[request]]
        name = "api"
        method = "put"
        path = "/api/x?y=1"
        json = { n = 1, tags = ["a"] }
        headers = { X-Trace = "1" }
    "#;

    #[test]
    fn parses_forms_json_weights() {
        let scenario = parse_scenario(SITE, Path::new(".")).unwrap();
        assert_eq!(scenario.selection, Selection::Weighted(vec![3, 1, 1]));
        let [page, job, api] = &scenario.requests[..] else { panic!("three requests") };
        assert_eq!((page.method.as_str(), page.body.len()), ("GET", 0));
        assert_eq!(job.method, "POST");
        assert_eq!(job.body, b"branch=main&name=nightly+build");
        assert!(job.headers.contains(&("Content-Type".into(), "application/x-www-form-urlencoded".into())));
        assert_eq!(api.method, "PUT");
        assert_eq!(api.body, br#"{"n":1,"tags":["a"]}"#);
        assert!(api.headers.contains(&("X-Trace".into(), "1".into())));
    }

    #[test]
    fn sequence_mode_and_errors() {
        let sequence =
            parse_scenario("mode = \"sequence\"\n[[request]]\nname = \"a\"\npath = \"/\"", Path::new("."));
        assert_eq!(sequence.unwrap().selection, Selection::Sequence);
        let error = |text: &str| format!("{:#}", parse_scenario(text, Path::new(".")).unwrap_err());
        assert!(error("[[request]]\nname = \"a\"\npath = \"x\"").contains("must start with /"));
        assert!(
            error("[[request]]\nname = \"a\"\npath = \"/\"\n[[request]]\nname = \"a\"\npath = \"/\"")
                .contains("two requests")
        );
        assert!(
            error("[[request]]\nname = \"a\"\npath = \"/\"\nbody = \"x\"\njson = 1").contains("at most one")
        );
        assert!(error("[[request]]\nname = \"a\"\npath = \"/\"\nweight = 0").contains("every weight is 0"));
        assert!(error("request = []").contains("no [[request]]"));
        let unknown = error("[[request]]\nname = \"a\"\npath = \"/\"\nbogus = 1");
        assert!(unknown.starts_with("invalid TOML at line 4: unknown field `bogus`"), "{unknown}");
        assert_eq!(unknown.lines().count(), 1, "{unknown}");
        for name in ["", " ", "a\\nb", "\\u001b[31mred"] {
            let named = error(&format!("[[request]]\nname = \"{name}\"\npath = \"/\""));
            assert_eq!(named, "request 1: its name is empty or holds a control character", "{name:?}");
        }
    }
}
