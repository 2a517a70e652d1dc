//! What to send, as the caller asked for it (method, headers, body, a scenario, raw bytes,
//! TLS), and the HTTP request built from it and the target.

use crate::input::{MAX_BODY_BYTES, read_capped};
use crate::target::HttpTarget;
use anyhow::Result;
use nodelay_flags::Flag;
use nodelay_wire::HttpRequest;
use std::path::{Path, PathBuf};

/// What to send: shared by every command that sends requests. Files named here are read when
/// the workload is built.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    /// HTTP method [default: GET, or POST with a body].
    pub method: Option<String>,
    /// Extra request headers; an empty value sends no such header.
    pub headers: Vec<(String, String)>,
    /// The body; `@FILE` reads it from a file.
    pub body: Option<String>,
    /// A TOML file of named HTTP requests.
    pub scenario: Option<PathBuf>,
    /// `tcp://` only: the request bytes, with escapes, or `@FILE`.
    pub send: Option<String>,
    /// `tcp://` only: how a response ends (`RawFraming` syntax).
    pub frame: Option<String>,
    /// A longer response, in bytes, is malformed.
    pub max_response: Option<u64>,
    /// Send each request in several writes with Nagle on: the leading writes' sizes.
    pub write_split: Option<WriteSplit>,
    /// How https:// targets are reached.
    pub tls: TlsChoices,
    /// Which HTTP to speak, and gRPC calls.
    pub protocol: crate::protocol::ProtocolOptions,
}

/// How https:// targets are reached: shared by every command that sends requests.
#[derive(Debug, Clone, Default)]
pub struct TlsChoices {
    /// Do not check the server's certificate (as curl -k).
    pub insecure: bool,
    /// Trust the certificates in this PEM file instead of the system's store.
    pub cacert: Option<PathBuf>,
    /// The server name to send (SNI) and check the certificate against, instead of the URL's host.
    pub sni: Option<String>,
    /// A new connection makes a full handshake instead of resuming an earlier session.
    pub no_tls_resume: bool,
}

impl TlsChoices {
    /// The options given, each with its value, for the commands nodelay suggests.
    pub fn given(&self) -> Vec<(Flag, Option<String>)> {
        let mut given = Vec::new();
        if let Some(path) = &self.cacert {
            given.push((Flag::Cacert, Some(path.display().to_string())));
        }
        if self.insecure {
            given.push((Flag::Insecure, None));
        }
        if let Some(name) = &self.sni {
            given.push((Flag::Sni, Some(name.clone())));
        }
        if self.no_tls_resume {
            given.push((Flag::NoTlsResume, None));
        }
        given
    }

    /// Some TLS option was given (they are refused for plain http:// and tcp://).
    pub fn any(&self) -> bool {
        !self.given().is_empty()
    }
}

/// The HTTP request `args` describe, sent to `target`.
pub fn build_request(target: &HttpTarget, args: &RequestOptions, keep_alive: bool) -> Result<HttpRequest> {
    let body = read_body(args.body.as_deref())?;
    let method = match &args.method {
        Some(method) => method.to_ascii_uppercase(),
        None if body.is_empty() => "GET".into(),
        None => "POST".into(),
    };
    Ok(HttpRequest {
        method,
        host: target.host_header.clone(),
        target: target.request_target.clone(),
        headers: target.headers_with_auth(&args.headers),
        body,
        keep_alive,
    })
}

fn read_body(body: Option<&str>) -> Result<Vec<u8>> {
    match body {
        None => Ok(Vec::new()),
        Some(text) => match text.strip_prefix('@') {
            Some(path) => read_capped(Path::new(path), "body file", MAX_BODY_BYTES),
            None => Ok(text.as_bytes().to_vec()),
        },
    }
}

/// Byte counts of the leading writes of a request (`--write-split`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteSplit(
    /// The sizes, in bytes, of the writes before the rest.
    pub Vec<usize>,
);

/// Parses `--write-split`: comma-separated byte counts, optionally ending in `rest`.
pub fn parse_write_split(text: &str) -> Result<WriteSplit, String> {
    let mut sizes = Vec::new();
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    for (i, part) in parts.iter().enumerate() {
        if *part == "rest" && i == parts.len() - 1 && i > 0 {
            break;
        }
        match part.parse::<usize>() {
            Ok(n) if n > 0 => sizes.push(n),
            _ => return Err(format!("'{part}' in '{text}': use byte counts such as 40,rest or 4,8,rest")),
        }
    }
    Ok(WriteSplit(sizes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_split_syntax() {
        assert_eq!(parse_write_split("40,rest"), Ok(WriteSplit(vec![40])));
        assert_eq!(parse_write_split("4, 8"), Ok(WriteSplit(vec![4, 8])));
        assert!(parse_write_split("rest").is_err());
        assert!(parse_write_split("0,rest").is_err());
        assert!(parse_write_split("4,rest,8").is_err());
    }
}
