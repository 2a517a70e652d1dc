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

/// Messages longer than this are left out of a gRPC call's command: a line to read, not a
/// file to carry.
const MAX_SHOWN_MESSAGE_BYTES: usize = 256;

/// `curl -i ...` for `url` as the run sent it, TLS options included. A gRPC call is the same
/// POST over HTTP/2, its framed message piped in by printf: curl -i shows its grpc-status and
/// grpc-message (a failed call's come as headers, trailers-only).
pub fn curl_command(url: &str, request: &RequestOptions) -> String {
    let mut words = vec!["curl".to_string(), "-i".to_string()];
    let mut target = url.to_string();
    let mut body = None;
    match &request.protocol.grpc {
        Some(method) => {
            let framed = crate::protocol::grpc_body(&request.protocol, method).unwrap_or_default();
            let https = url.starts_with("https://");
            words
                .extend([if https { "--http2" } else { "--http2-prior-knowledge" }.to_string(), "-s".into()]);
            // Lower case, as HTTP/2 sends them.
            for (name, value) in crate::protocol::GRPC_HEADERS {
                words.extend([
                    "-H".to_string(),
                    shell_word(&format!("{}: {value}", name.to_ascii_lowercase())),
                ]);
            }
            for (name, value) in &request.headers {
                words.extend(["-H".to_string(), shell_word(&format!("{name}: {value}"))]);
            }
            if framed.len() <= MAX_SHOWN_MESSAGE_BYTES + crate::protocol::GRPC_PREFIX_BYTES {
                words.extend(["--data-binary".to_string(), "@-".to_string()]);
                body = Some(printf_bytes(&framed));
            }
            target = format!("{}{method}", url.trim_end_matches('/'));
        }
        None => words.extend(curl_request_words(request)),
    }
    if let Some(ca) = &request.tls.cacert {
        words.extend(["--cacert".to_string(), shell_word(&ca.display().to_string())]);
    }
    if request.tls.insecure {
        words.push("--insecure".into());
    }
    words.push(shell_word(&target));
    match body {
        Some(printf) => format!("{printf} | {}", words.join(" ")),
        None => words.join(" "),
    }
}

/// `printf '...'` writing `bytes` exactly: printable ASCII as itself, the rest as octal
/// escapes (POSIX printf, any shell).
fn printf_bytes(bytes: &[u8]) -> String {
    let mut format = String::from("printf '");
    for &byte in bytes {
        match byte {
            b'%' => format.push_str("%%"),
            b'\\' | b'\'' => format.push_str(&format!("\\{byte:03o}")),
            0x20..=0x7e => format.push(byte as char),
            _ => format.push_str(&format!("\\{byte:03o}")),
        }
    }
    format.push('\'');
    format
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

    #[test]
    fn a_grpc_call_gives_the_curl_that_makes_the_same_call() {
        let mut call = RequestOptions::default();
        call.protocol.grpc = Some("/helloworld.Greeter/SayHello".into());
        call.protocol.grpc_message = Some("\\x0a\\x02%'".into());
        assert_eq!(
            curl_command("http://h:1/", &call),
            "printf '\\000\\000\\000\\000\\004\\012\\002%%\\047' | curl -i --http2-prior-knowledge -s \
             -H 'content-type: application/grpc' -H 'te: trailers' --data-binary @- \
             http://h:1/helloworld.Greeter/SayHello"
        );
    }
}
