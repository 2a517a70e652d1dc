//! A run's requests, built once as HTTP/1.1 bytes by the caller, turned into HTTP/2 requests:
//! the same method, path, headers and body, with `Host` as `:authority` and the headers that
//! belong to an HTTP/1.1 connection (RFC 9113 8.2.2) left out. The `http` crate checks each
//! name and value once here, so that every stream sends fields already known to be valid.

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Uri};

/// One request as every stream of the run sends it.
#[derive(Debug, Clone)]
pub(crate) struct StreamRequest {
    /// The header fields in order: the pseudo-headers (`:method`, `:scheme`, `:authority`,
    /// `:path`), then the others with lower-case names.
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
    /// Sent as DATA after the HEADERS; empty: the HEADERS end the stream.
    pub body: Bytes,
}

/// Headers that only mean something on an HTTP/1.1 connection.
const CONNECTION_HEADERS: [&str; 6] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"];

/// Converts one encoded HTTP/1.1 request; `https` chooses the `:scheme`.
pub(crate) fn from_http11(bytes: &[u8], https: bool) -> Result<StreamRequest, String> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut parsed = httparse::Request::new(&mut headers);
    let head_end = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(end)) => end,
        Ok(httparse::Status::Partial) => return Err("the request head is incomplete".to_string()),
        Err(e) => return Err(format!("the request head does not parse: {e}")),
    };
    let method =
        Method::from_bytes(parsed.method.unwrap_or("GET").as_bytes()).map_err(|e| format!("method: {e}"))?;
    let path = parsed.path.unwrap_or("/");
    let mut authority = None;
    let mut headers = Vec::new();
    for header in parsed.headers.iter() {
        let name = header.name.to_ascii_lowercase();
        if name == "host" {
            authority = Some(String::from_utf8_lossy(header.value).into_owned());
        }
        if name == "transfer-encoding" {
            return Err("a chunked request body cannot be sent over HTTP/2 (give its length)".to_string());
        }
        if CONNECTION_HEADERS.contains(&name.as_str()) || (name == "te" && header.value != b"trailers") {
            continue;
        }
        let name =
            HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("header {}: {e}", header.name))?;
        let value = HeaderValue::from_bytes(header.value).map_err(|e| format!("header {name}: {e}"))?;
        headers.push((name.as_str().as_bytes().to_vec(), value.as_bytes().to_vec()));
    }
    let authority = authority.ok_or("the request has no Host header for :authority")?;
    let scheme = if https { "https" } else { "http" };
    let uri: Uri =
        format!("{scheme}://{authority}{path}").parse().map_err(|e| format!("request target: {e}"))?;
    // As the URI read them: the authority and path the request was checked with.
    let authority = uri.authority().map_or(authority.as_str(), |a| a.as_str());
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut fields = vec![
        (b":method".to_vec(), method.as_str().as_bytes().to_vec()),
        (b":scheme".to_vec(), scheme.as_bytes().to_vec()),
        (b":authority".to_vec(), authority.as_bytes().to_vec()),
        (b":path".to_vec(), path.as_bytes().to_vec()),
    ];
    fields.extend(headers);
    Ok(StreamRequest { fields, body: Bytes::copy_from_slice(&bytes[head_end..]) })
}

impl StreamRequest {
    /// The value of a field, by its (lower-case) name.
    #[cfg(test)]
    fn field(&self, name: &str) -> Option<&str> {
        let (_, value) = self.fields.iter().find(|(n, _)| n == name.as_bytes())?;
        std::str::from_utf8(value).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_becomes_the_authority_and_connection_headers_are_left_out() {
        let bytes = b"POST /p?q=1 HTTP/1.1\r\nHost: example.test:8080\r\nConnection: keep-alive\r\n\
            TE: trailers\r\nContent-Type: application/grpc\r\nContent-Length: 3\r\n\r\nabc";
        let request = from_http11(bytes, false).unwrap();
        assert_eq!(request.field(":method"), Some("POST"));
        assert_eq!(request.field(":scheme"), Some("http"));
        assert_eq!(request.field(":authority"), Some("example.test:8080"));
        assert_eq!(request.field(":path"), Some("/p?q=1"));
        let names: Vec<&[u8]> = request.fields.iter().map(|(name, _)| name.as_slice()).collect();
        let expected: [&[u8]; 7] =
            [b":method", b":scheme", b":authority", b":path", b"te", b"content-type", b"content-length"];
        assert_eq!(names, expected);
        assert_eq!(request.body, Bytes::from_static(b"abc"));
    }

    #[test]
    fn a_chunked_body_is_refused_in_words() {
        let bytes = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        assert!(from_http11(bytes, true).unwrap_err().contains("chunked"));
    }
}
