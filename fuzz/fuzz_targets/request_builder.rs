//! Fuzzes request encoding: whenever `HttpRequest::encode` accepts the fields, httparse must read
//! back exactly one complete request with the method, target and headers given (plus the
//! defaults encode documents), and a body framed to exactly the bytes given, so no field can
//! smuggle a second request or a forged header onto the wire.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use nodelay_wire::{ChunkedDecoder, HttpRequest};

#[derive(Arbitrary, Debug)]
struct Input {
    method: String,
    target: String,
    host: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    keep_alive: bool,
}

/// Stands for `nodelay/<version of nodelay-wire>`, which this crate cannot name.
const DEFAULT_AGENT: &[u8] = b"nodelay/*";

/// The headers `encode` sends: Host unless given, the user's in order, then the defaults.
fn expected_headers(request: &HttpRequest) -> Vec<(String, Vec<u8>)> {
    let has = |name: &str| request.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let mut out = Vec::new();
    if !has("host") {
        out.push(("Host".to_string(), request.host.clone().into_bytes()));
    }
    out.extend(request.headers.iter().map(|(k, v)| (k.clone(), v.clone().into_bytes())));
    if !has("user-agent") {
        out.push(("User-Agent".into(), DEFAULT_AGENT.to_vec()));
    }
    if !request.body.is_empty() && !has("content-length") && !has("transfer-encoding") {
        out.push(("Content-Length".into(), request.body.len().to_string().into_bytes()));
    }
    if !request.keep_alive && !has("connection") {
        out.push(("Connection".into(), b"close".to_vec()));
    }
    out
}

/// How many bytes after the head a server takes as this request's body (RFC 9112 §6.3), or
/// why it cannot tell.
fn framed_body_length(headers: &[(String, Vec<u8>)], body: &[u8]) -> Result<usize, String> {
    fn named<'a>(headers: &'a [(String, Vec<u8>)], name: &'a str) -> impl Iterator<Item = &'a [u8]> {
        headers.iter().filter(move |(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_slice())
    }
    if let Some(coding) = named(headers, "transfer-encoding").last() {
        if named(headers, "content-length").next().is_some() {
            return Err("both Transfer-Encoding and Content-Length".into());
        }
        let last = coding.rsplit(|&b| b == b',').next().unwrap_or(b"").trim_ascii();
        if !last.eq_ignore_ascii_case(b"chunked") {
            return Err("Transfer-Encoding whose last coding is not chunked".into());
        }
        let mut decoder = ChunkedDecoder::new();
        let used = decoder.feed(body).map_err(|e| format!("chunked body: {e}"))?;
        return if decoder.is_done() { Ok(used) } else { Err("unfinished chunked body".into()) };
    }
    let mut length = None;
    for value in named(headers, "content-length") {
        let text = std::str::from_utf8(value).map_err(|_| "non-UTF-8 Content-Length")?;
        let value: usize = text.parse().map_err(|_| format!("Content-Length {text:?}"))?;
        if length.is_some_and(|earlier| earlier != value) {
            return Err("conflicting Content-Length".into());
        }
        length = Some(value);
    }
    Ok(length.unwrap_or(0))
}

fuzz_target!(|input: Input| {
    let request = HttpRequest {
        method: input.method,
        host: input.host,
        target: input.target,
        headers: input.headers,
        body: input.body,
        keep_alive: input.keep_alive,
    };
    let Ok(bytes) = request.encode() else { return };
    let mut slots = vec![httparse::EMPTY_HEADER; request.headers.len() + 8];
    let mut parsed = httparse::Request::new(&mut slots);
    let head_len = match parsed.parse(&bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        other => panic!("encoded request does not parse ({other:?}): {}", bytes.escape_ascii()),
    };
    assert_eq!(parsed.method, Some(request.method.as_str()), "method");
    assert_eq!(parsed.path, Some(request.target.as_str()), "target");
    assert_eq!(parsed.version, Some(1), "version");
    let headers: Vec<(String, Vec<u8>)> =
        parsed.headers.iter().map(|h| (h.name.to_string(), h.value.to_vec())).collect();
    let user_agent = request.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("user-agent"));
    let shown: Vec<(String, Vec<u8>)> = headers
        .iter()
        .map(|(k, v)| match k.as_str() {
            "User-Agent" if !user_agent && v.starts_with(b"nodelay/") => (k.clone(), DEFAULT_AGENT.to_vec()),
            _ => (k.clone(), v.clone()),
        })
        .collect();
    assert_eq!(shown, expected_headers(&request), "headers of {}", bytes.escape_ascii());
    assert_eq!(&bytes[head_len..], &request.body[..], "body");
    let framed = framed_body_length(&headers, &request.body);
    assert_eq!(framed, Ok(request.body.len()), "body framing of {}", bytes.escape_ascii());
});
