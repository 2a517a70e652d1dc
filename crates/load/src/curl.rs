//! The curl command that sends what nodelay sent: one response (an error page) looked at
//! with the tool everyone has, with the method, headers and body of the run, not a bare GET.

use crate::request::RequestOptions;
use nodelay_diagnose::shell_word;

/// curl's words for the request's method, headers and body (not its TLS options), each
/// quoted for a POSIX shell.
pub fn curl_request_words(request: &RequestOptions) -> Vec<String> {
    let mut words = Vec::new();
    let body = request.body.as_deref();
    // curl sends GET, or POST with --data-binary: -X only where the run's method differs.
    let implied = if body.is_some() { "POST" } else { "GET" };
    if let Some(method) = request.method.as_deref().filter(|m| !m.eq_ignore_ascii_case(implied)) {
        words.extend(["-X".to_string(), shell_word(method)]);
    }
    for (name, value) in &request.headers {
        // An empty value is "send no such header", which curl writes `Name;`... as `Name:`.
        let header = if value.is_empty() { format!("{name}:") } else { format!("{name}: {value}") };
        words.extend(["-H".to_string(), shell_word(&header)]);
    }
    if let Some(body) = body {
        words.extend(["--data-binary".to_string(), shell_word(body)]);
    }
    words
}

/// `curl -i ...` for `url` as the run sent it, TLS options included.
pub fn curl_command(url: &str, request: &RequestOptions) -> String {
    let mut words = vec!["curl".to_string(), "-i".to_string()];
    words.extend(curl_request_words(request));
    if let Some(ca) = &request.tls.cacert {
        words.extend(["--cacert".to_string(), shell_word(&ca.display().to_string())]);
    }
    if request.tls.insecure {
        words.push("--insecure".into());
    }
    words.push(shell_word(url));
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_run_gives_the_curl_that_posts_the_same_body() {
        let post = RequestOptions {
            body: Some(r#"{"id": 7}"#.into()),
            headers: vec![("Content-Type".into(), "application/json".into())],
            ..RequestOptions::default()
        };
        assert_eq!(
            curl_command("http://h:1/a?b=1", &post),
            r#"curl -i -H 'Content-Type: application/json' --data-binary '{"id": 7}' http://h:1/a?b=1"#
        );
        let put = RequestOptions { method: Some("PUT".into()), body: Some("@big.json".into()), ..post };
        assert!(curl_command("http://h:1/", &put).starts_with("curl -i -X PUT -H"));
        assert!(curl_command("http://h:1/", &put).contains("--data-binary @big.json"));
        assert_eq!(curl_command("http://h:1/", &RequestOptions::default()), "curl -i http://h:1/");
    }
}
