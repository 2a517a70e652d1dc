//! Encodes one HTTP/1.1 request into the exact bytes sent, so the engine writes it in one call.

/// What to send; encoded once per run and reused for every request.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: String,
    /// Value of the `Host` header (`host[:port]`).
    pub host: String,
    /// Path and query, starting with `/`.
    pub target: String,
    /// Extra headers as given by the user; a user `Host` replaces ours.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// `false` adds `Connection: close` (one request per connection).
    pub keep_alive: bool,
}

impl HttpRequest {
    /// A plain `GET target` with no extra headers.
    pub fn get(host: &str, target: &str) -> Self {
        HttpRequest {
            method: "GET".into(),
            host: host.into(),
            target: target.into(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        }
    }

    /// True when the response to this request never has a body (RFC 9110 §9.3.2).
    pub fn expects_no_body(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }

    /// The request as one contiguous buffer: head, blank line, body.
    pub fn encode(&self) -> Vec<u8> {
        let has = |name: &str| self.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        let mut out = Vec::with_capacity(128 + self.body.len());
        push_line(&mut out, &format!("{} {} HTTP/1.1", self.method, self.target));
        if !has("host") {
            push_line(&mut out, &format!("Host: {}", self.host));
        }
        for (name, value) in &self.headers {
            push_line(&mut out, &format!("{name}: {value}"));
        }
        if !has("user-agent") {
            push_line(&mut out, concat!("User-Agent: nodelay/", env!("CARGO_PKG_VERSION")));
        }
        if !self.body.is_empty() && !has("content-length") && !has("transfer-encoding") {
            push_line(&mut out, &format!("Content-Length: {}", self.body.len()));
        }
        if !self.keep_alive && !has("connection") {
            push_line(&mut out, "Connection: close");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

fn push_line(out: &mut Vec<u8>, line: &str) {
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_has_host_and_ends_with_blank_line() {
        let text = String::from_utf8(HttpRequest::get("127.0.0.1:8080", "/a?b=1").encode()).unwrap();
        assert!(text.starts_with("GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
        assert!(!text.contains("Content-Length"));
        assert!(!text.contains("Connection"));
    }

    #[test]
    fn body_gets_content_length_and_close_when_not_keep_alive() {
        let mut req = HttpRequest::get("h", "/");
        req.method = "POST".into();
        req.body = b"hello".to_vec();
        req.keep_alive = false;
        let text = String::from_utf8(req.encode()).unwrap();
        assert!(text.contains("Content-Length: 5\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\nhello"));
    }

    #[test]
    fn user_headers_replace_defaults() {
        let mut req = HttpRequest::get("h", "/");
        req.headers = vec![("host".into(), "example".into()), ("User-Agent".into(), "x".into())];
        let text = String::from_utf8(req.encode()).unwrap();
        assert_eq!(text.matches("ost:").count(), 1);
        assert!(text.contains("host: example\r\n"));
        assert!(!text.contains("nodelay/"));
    }
}
