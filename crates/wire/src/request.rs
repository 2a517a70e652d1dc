//! Encodes one HTTP/1.1 request into the exact bytes sent, so the engine writes it in one call.
//!
//! Every field is validated here, where the bytes are built, so that no input (flag, scenario
//! file or URL) can put a second request or a forged header on the wire: the method and header
//! names must be RFC 9110 tokens, the request target visible ASCII, header values free of
//! control characters (CR, LF and NUL above all) and of whitespace at either end, and a user's
//! Content-Length or Transfer-Encoding must frame exactly the body.

use crate::chunked::ChunkedDecoder;
use thiserror::Error;

/// What to send; encoded once per run and reused for every request.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// The method, an RFC 9110 token (`GET`, `POST`, ...).
    pub method: String,
    /// Value of the `Host` header (`host[:port]`).
    pub host: String,
    /// Path and query, starting with `/` (or `*`).
    pub target: String,
    /// Extra headers as given by the user; a user `Host` replaces ours.
    pub headers: Vec<(String, String)>,
    /// Bytes sent as the request body; when there are some and the user's headers frame none,
    /// a `Content-Length` is added for them.
    pub body: Vec<u8>,
    /// `false` adds `Connection: close` (one request per connection).
    pub keep_alive: bool,
}

/// A request field that cannot be sent as given; the message names the field and the byte.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field} {shown}: {reason}")]
pub struct RequestError {
    /// `method`, `request target`, `header name`, `header 'X-A' value`, ...
    pub field: String,
    /// The offending text, escaped so that it prints on one line.
    pub shown: String,
    /// Why the text cannot be sent.
    pub reason: String,
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

    /// Checks every field that goes on the wire; `encode` calls it.
    pub fn validate(&self) -> Result<(), RequestError> {
        check_token("method", &self.method)?;
        check_target(&self.target)?;
        check_value("Host header value", &self.host)?;
        for (name, value) in &self.headers {
            check_token("header name", name)?;
            check_value(&format!("header '{name}' value"), value)?;
        }
        check_framing(&self.headers, &self.body)
    }

    /// The request as one contiguous buffer: head, blank line, body; an error if any field
    /// would break the framing of the request.
    pub fn encode(&self) -> Result<Vec<u8>, RequestError> {
        let mut out = self.encode_head()?;
        out.extend_from_slice(&self.body);
        Ok(out)
    }

    /// The request line and headers up to and including the blank line (the body, if any,
    /// follows on the wire), so a large body is copied only when the caller joins them.
    pub fn encode_head(&self) -> Result<Vec<u8>, RequestError> {
        self.validate()?;
        let has = |name: &str| self.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        let mut out = Vec::with_capacity(128 + self.body.len());
        push_line(&mut out, &format!("{} {} HTTP/1.1", self.method, self.target));
        if !has("host") {
            push_line(&mut out, &format!("Host: {}", self.host));
        }
        // As curl's -H 'Name:': a header given with no value is not sent, and neither is
        // the one nodelay would have added under that name.
        for (name, value) in self.headers.iter().filter(|(_, value)| !value.is_empty()) {
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
        Ok(out)
    }
}

fn push_line(out: &mut Vec<u8>, line: &str) {
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn invalid(field: &str, text: &str, reason: String) -> RequestError {
    RequestError { field: field.into(), shown: format!("'{}'", text.escape_debug()), reason }
}

/// A byte for an error message: printable as itself, otherwise by name or in hex.
fn describe(byte: u8) -> String {
    match byte {
        b'\r' => "CR (\\r)".into(),
        b'\n' => "LF (\\n)".into(),
        0 => "NUL (\\0)".into(),
        b' ' => "a space".into(),
        b'\t' => "a tab".into(),
        0x21..=0x7e => format!("'{}'", byte as char),
        _ => format!("byte 0x{byte:02x}"),
    }
}

/// RFC 9110 §5.6.2: `token = 1*tchar`.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// The first byte of `text` that `refused` rejects, as an error naming the byte, where it
/// is, and why (`reason` completes "… at offset N is not allowed").
fn refuse_first(
    field: &str,
    text: &str,
    refused: impl Fn(u8) -> bool,
    reason: impl Fn(u8) -> String,
) -> Result<(), RequestError> {
    match text.bytes().position(refused) {
        None => Ok(()),
        Some(at) => {
            let byte = text.as_bytes()[at];
            Err(invalid(
                field,
                text,
                format!("{} at offset {at} is not allowed {}", describe(byte), reason(byte)),
            ))
        }
    }
}

fn check_token(field: &str, text: &str) -> Result<(), RequestError> {
    if text.is_empty() {
        return Err(invalid(field, text, "must not be empty".into()));
    }
    refuse_first(field, text, |b| !is_tchar(b), |_| "in an HTTP token".into())
}

/// Origin form (`/path?query`) or `*`: visible ASCII only, so non-ASCII and spaces must be
/// percent-encoded, and no fragment (a client never sends one).
fn check_target(text: &str) -> Result<(), RequestError> {
    const FIELD: &str = "request target";
    if text != "*" && !text.starts_with('/') {
        return Err(invalid(FIELD, text, "must start with / (or be *)".into()));
    }
    refuse_first(
        FIELD,
        text,
        |b| !b.is_ascii_graphic() || b == b'#',
        |b| if b == b'#' { "(a fragment is never sent)".into() } else { "(percent-encode it)".into() },
    )
}

/// RFC 9110 §5.5: a field value is visible characters, spaces, tabs and obs-text; CR, LF, NUL
/// and the other control characters are refused. Whitespace at either end is refused too:
/// receivers strip it, so the server would see another value than the one given.
fn check_value(field: &str, text: &str) -> Result<(), RequestError> {
    refuse_first(field, text, |b| (b < 0x20 && b != b'\t') || b == 0x7f, |_| "in a header value".into())?;
    let bytes = text.as_bytes();
    let edge = match (bytes.first(), bytes.last()) {
        (Some(&first @ (b' ' | b'\t')), _) => Some(("starts", first)),
        (_, Some(&last @ (b' ' | b'\t'))) => Some(("ends", last)),
        _ => None,
    };
    match edge {
        Some((side, byte)) => Err(invalid(
            field,
            text,
            format!("{side} with {}, which receivers strip (RFC 9110 §5.5)", describe(byte)),
        )),
        None => Ok(()),
    }
}

/// User Content-Length and Transfer-Encoding headers replace ours, so they must frame exactly
/// the body: a server reading more waits forever, one reading less takes the rest for a second
/// request (RFC 9112 §6.3).
fn check_framing(headers: &[(String, String)], body: &[u8]) -> Result<(), RequestError> {
    let named =
        |wanted: &'static str| headers.iter().filter(move |(name, _)| name.eq_ignore_ascii_case(wanted));
    if let Some((name, coding)) = named("transfer-encoding").next_back() {
        if let Some((length_name, value)) = named("content-length").next() {
            let reason = "cannot be sent with Transfer-Encoding (RFC 9112 §6.2)".into();
            return Err(invalid(&format!("header '{length_name}'"), value, reason));
        }
        let last = coding.rsplit(',').next().unwrap_or("").trim();
        if !last.eq_ignore_ascii_case("chunked") {
            let reason = "must end with chunked, or the server cannot tell where the body ends".into();
            return Err(invalid(&format!("header '{name}' value"), coding, reason));
        }
        let mut decoder = ChunkedDecoder::new();
        let reason = match decoder.feed(body) {
            Err(e) => format!("is not chunked as Transfer-Encoding says: {e}"),
            Ok(_) if !decoder.is_done() => "ends inside its chunked encoding".into(),
            Ok(used) if used < body.len() => format!("has {} bytes after its last chunk", body.len() - used),
            Ok(_) => return Ok(()),
        };
        return Err(RequestError { field: "body".into(), shown: format!("of {} bytes", body.len()), reason });
    }
    for (name, value) in named("content-length") {
        // 1*DIGIT only: Rust's parse would also take "+5".
        if !value.bytes().all(|b| b.is_ascii_digit()) || value.parse::<usize>() != Ok(body.len()) {
            let reason = format!("must be the body length, {}", body.len());
            return Err(invalid(&format!("header '{name}' value"), value, reason));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(request: &HttpRequest) -> String {
        String::from_utf8(request.encode().expect("valid request")).expect("ASCII")
    }

    #[test]
    fn get_has_host_and_ends_with_blank_line() {
        let text = encoded(&HttpRequest::get("127.0.0.1:8080", "/a?b=1"));
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
        let text = encoded(&req);
        assert!(text.contains("Content-Length: 5\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\nhello"));
    }

    #[test]
    fn user_headers_replace_defaults() {
        let mut req = HttpRequest::get("h", "/");
        req.headers = vec![("host".into(), "example".into()), ("User-Agent".into(), "x".into())];
        let text = encoded(&req);
        assert_eq!(text.matches("ost:").count(), 1);
        assert!(text.contains("host: example\r\n"));
        assert!(!text.contains("nodelay/"));
    }

    #[test]
    fn an_empty_user_header_removes_it_as_curl_does() {
        let mut req = HttpRequest::get("h", "/");
        req.body = b"hi".to_vec();
        req.headers = vec![
            ("User-Agent".into(), String::new()),
            ("X-Gone".into(), String::new()),
            ("X-Kept".into(), "1".into()),
        ];
        let text = encoded(&req);
        assert_eq!(text, "GET / HTTP/1.1\r\nHost: h\r\nX-Kept: 1\r\nContent-Length: 2\r\n\r\nhi");
        // A body cannot lose its framing: that is refused, not sent unframed.
        req.headers = vec![("Content-Length".into(), String::new())];
        assert_eq!(req.encode().unwrap_err().field, "header 'Content-Length' value");
    }

    #[test]
    fn injected_methods_are_refused_with_the_field_named() {
        let mut req = HttpRequest::get("h", "/");
        for method in ["GET /admin HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET", "", "GET /evil HTTP/1.1", "GE\0T"] {
            req.method = method.into();
            let error = req.encode().unwrap_err();
            assert_eq!(error.field, "method", "{method:?}");
            assert!(!error.to_string().contains('\n'), "one line: {error}");
        }
        req.method = "M-SEARCH".into();
        assert!(req.encode().is_ok());
    }

    #[test]
    fn targets_must_be_visible_ascii_from_a_slash() {
        let mut req = HttpRequest::get("h", "/");
        for target in ["/a b", "/x\r\nX-Evil: 1", "relative", "", "/é", "/page#frag"] {
            req.target = target.into();
            let error = req.encode().unwrap_err();
            assert_eq!(error.field, "request target", "{target:?}");
        }
        for target in ["*", "/a%20b?q=1&r=[2]", "/~user/!$&'()*+,;=:@"] {
            req.target = target.into();
            assert!(req.encode().is_ok(), "{target}");
        }
    }

    #[test]
    fn header_names_and_values_are_checked() {
        let mut req = HttpRequest::get("h", "/");
        req.headers = vec![("X-A".into(), "ok\r\nX-Injected: 1".into())];
        assert!(req.encode().unwrap_err().to_string().starts_with("header 'X-A' value"));
        req.headers = vec![("X A".into(), "v".into())];
        assert_eq!(req.encode().unwrap_err().field, "header name");
        req.headers = vec![("X-A".into(), "tab\tand obs-text \u{e9}".into())];
        assert!(req.encode().is_ok());
        req.host = "h\n".into();
        req.headers.clear();
        assert_eq!(req.encode().unwrap_err().field, "Host header value");
    }

    #[test]
    fn user_framing_headers_must_frame_exactly_the_body() {
        let with = |headers: &[(&str, &str)], body: &[u8]| {
            let mut req = HttpRequest::get("h", "/");
            req.headers = headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            req.body = body.to_vec();
            req.encode()
        };
        // Found by fuzzing: an empty Content-Length went on the wire.
        let error = with(&[("Content-Length", "")], b"").unwrap_err();
        assert_eq!(error.to_string(), "header 'Content-Length' value '': must be the body length, 0");
        assert_eq!(
            with(&[("content-length", "5")], b"a").unwrap_err().field,
            "header 'content-length' value"
        );
        assert!(with(&[("Content-Length", "+1")], b"a").is_err());
        assert!(with(&[("Content-Length", "1"), ("Content-Length", "1")], b"a").is_ok());
        let chunked = b"1\r\na\r\n0\r\n\r\n";
        assert!(with(&[("Transfer-Encoding", "gzip, chunked")], chunked).is_ok());
        let smuggled = [&chunked[..], b"GET /admin HTTP/1.1\r\n\r\n"].concat();
        let error = with(&[("Transfer-Encoding", "chunked")], &smuggled).unwrap_err();
        assert_eq!(error.to_string(), "body of 34 bytes: has 23 bytes after its last chunk");
        assert!(with(&[("Transfer-Encoding", "chunked")], b"").is_err());
        assert!(with(&[("Transfer-Encoding", "chunked")], b"zz").is_err());
        assert_eq!(
            with(&[("Transfer-Encoding", "gzip")], b"x").unwrap_err().field,
            "header 'Transfer-Encoding' value"
        );
        let both = with(&[("Transfer-Encoding", "chunked"), ("Content-Length", "15")], chunked);
        assert_eq!(both.unwrap_err().field, "header 'Content-Length'");
    }

    #[test]
    fn values_with_edge_whitespace_are_refused() {
        // Found by fuzzing: a receiver strips it, so the server would see "/" for " /".
        let mut req = HttpRequest::get(" /", "//$");
        req.method = "$#".into();
        req.body = b".".to_vec();
        assert_eq!(
            req.encode().unwrap_err().to_string(),
            "Host header value ' /': starts with a space, which receivers strip (RFC 9110 §5.5)"
        );
        req.host = "h".into();
        for value in ["a ", "\ta", " ", "a\t"] {
            req.headers = vec![("X-A".into(), value.into())];
            assert_eq!(req.encode().unwrap_err().field, "header 'X-A' value", "{value:?}");
        }
        req.headers = vec![("X-A".into(), "a b\tc".into()), ("X-B".into(), String::new())];
        assert!(req.encode().is_ok());
    }
}
