//! Which HTTP a run speaks, and gRPC: the options (`--h2`, `--http1.1`, `--streams`,
//! `--h2-window`, `--grpc`, `--grpc-message`), checked where they are parsed, and what they
//! make of a load. Plain http:// speaks HTTP/2 only when asked (`--h2`, prior knowledge);
//! https:// offers `h2` by ALPN and speaks it when the server chooses it, as curl and browsers
//! do, unless `--http1.1`.

use crate::input::{MAX_BODY_BYTES, read_capped};
use crate::target::HttpTarget;
use crate::usage::usage;
use anyhow::Result;
use nodelay_engine::{Http2Settings, TlsClient};
use nodelay_flags::Flag::{
    self, Grpc, GrpcMessage, GrpcProto, H2, H2Window, Http11, NoKeepalive, Streams, WriteSplit,
};
use nodelay_wire::{HttpRequest, unescape};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// RFC 9113 6.5.2: a window may not exceed 2^31 - 1.
const MAX_WINDOW_BYTES: u32 = (1 << 31) - 1;
/// bench's and compare's window without `--h2-window`: h2load's (`-w 30 -W 30`, 2^30 - 1
/// bytes), so that the two agree out of the box.
pub const LOAD_WINDOW_BYTES: u32 = (1 << 30) - 1;
/// The doctor's: the protocol's own (RFC 9113 6.9.2), what a client that changes nothing
/// advertises; its larger-window experiment measures the other kind of client.
pub const PROTOCOL_WINDOW_BYTES: u32 = 65_535;
/// The gRPC message prefix: a compressed flag and a 4-byte big-endian length.
pub(crate) const GRPC_PREFIX_BYTES: usize = 5;
/// The headers every gRPC call carries besides the user's.
pub(crate) const GRPC_HEADERS: [(&str, &str); 2] = [("Content-Type", "application/grpc"), ("TE", "trailers")];

/// Which HTTP to speak, and gRPC calls.
#[derive(Debug, Clone, Default)]
pub struct ProtocolOptions {
    /// Speak HTTP/2: on http:// with prior knowledge (h2c), on https:// insisting on h2 by ALPN.
    pub h2: bool,
    /// https:// only: offer only HTTP/1.1 by ALPN.
    pub http11: bool,
    /// HTTP/2: requests in flight at once on each connection (h2load's -m); `None`: 1.
    pub streams: Option<u32>,
    /// HTTP/2: the flow-control window advertised for each stream and the connection, in bytes.
    pub h2_window: Option<u32>,
    /// A gRPC unary call of this method (`/package.Service/Method`) over HTTP/2.
    pub grpc: Option<String>,
    /// The gRPC request message: encoded protobuf with escapes or `@FILE`, or protobuf text
    /// with `grpc_proto`.
    pub grpc_message: Option<String>,
    /// The .proto file that declares the method.
    pub grpc_proto: Option<std::path::PathBuf>,
}

/// A flow-control window in bytes: 65535 to 2^31 - 1 (RFC 9113 6.9.1).
pub fn parse_window(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u64>() {
        Ok(bytes) if (65_535..=u64::from(MAX_WINDOW_BYTES)).contains(&bytes) => Ok(bytes as u32),
        _ => Err(format!("'{text}': a window is 65535 to {MAX_WINDOW_BYTES} bytes")),
    }
}

/// A gRPC method, `/package.Service/Method`.
pub fn parse_grpc_method(text: &str) -> Result<String, String> {
    let parts: Vec<&str> = text.strip_prefix('/').map(|rest| rest.split('/').collect()).unwrap_or_default();
    let printable = text.bytes().all(|b| b.is_ascii_graphic());
    match parts.as_slice() {
        [service, method] if !service.is_empty() && !method.is_empty() && printable => Ok(text.to_string()),
        _ => Err(format!("'{text}': a gRPC method is /package.Service/Method")),
    }
}

impl ProtocolOptions {
    /// HTTP/2 is asked for outright (`--h2` or `--grpc`).
    pub fn requires_h2(&self) -> bool {
        self.h2 || self.grpc.is_some()
    }

    /// The engine's HTTP/2 settings from these options; `unset_window` without `--h2-window`.
    pub fn settings(&self, unset_window: u32) -> Http2Settings {
        let window = self.h2_window.unwrap_or(unset_window);
        Http2Settings {
            streams_per_connection: self.streams.unwrap_or(1) as usize,
            stream_window_bytes: window,
            connection_window_bytes: window,
        }
    }

    /// Options that only HTTP/2 uses, named as the user wrote them.
    fn h2_only_options(&self) -> Option<Flag> {
        match (self.streams, self.h2_window) {
            (Some(_), _) => Some(Streams),
            (_, Some(_)) => Some(H2Window),
            _ => None,
        }
    }
}

/// Refuses what cannot go together, before anything is sent. `https`: the URL's scheme (None
/// for tcp://).
pub(crate) fn check(
    options: &ProtocolOptions,
    https: Option<bool>,
    no_keepalive: bool,
    split: bool,
) -> Result<()> {
    let Some(https) = https else {
        if options.requires_h2() || options.http11 || options.h2_only_options().is_some() {
            return Err(usage(format!(
                "{H2}, {Http11}, {Streams}, {H2Window} and {Grpc} are for http:// and https:// URLs"
            )));
        }
        return Ok(());
    };
    if options.http11 && !https {
        return Err(usage(format!(
            "{Http11} is for https:// URLs (plain http:// speaks HTTP/1.1 unless {H2})"
        )));
    }
    if let Some(option) = options.h2_only_options() {
        if options.http11 {
            return Err(usage(format!("{option} is for HTTP/2, and {Http11} refuses it")));
        }
        if !https && !options.requires_h2() {
            return Err(usage(format!(
                "{option} is for HTTP/2: add {H2} (prior knowledge) for an http:// URL"
            )));
        }
    }
    if options.requires_h2() || https && !options.http11 {
        let refuse = |what: Flag| {
            usage(format!("{what} is HTTP/1.1's; over HTTP/2 add {Http11} (https://) or drop {H2}"))
        };
        if no_keepalive && options.requires_h2() {
            return Err(refuse(NoKeepalive));
        }
        if split && options.requires_h2() {
            return Err(refuse(WriteSplit));
        }
    }
    Ok(())
}

/// The gRPC unary call `method` with its message, as an HTTP request (the engine sends it as
/// HTTP/2 HEADERS and one DATA frame). The URL's own path must be `/`.
pub(crate) fn grpc_request(
    target: &HttpTarget,
    options: &ProtocolOptions,
    headers: &[(String, String)],
) -> Result<Option<HttpRequest>> {
    let Some(method) = &options.grpc else { return Ok(None) };
    if target.request_target != "/" {
        return Err(usage(format!(
            "{Grpc} names the path ({method}): give the URL without one, not {}",
            target.request_target
        )));
    }
    let body = grpc_body(options, method)?;
    let mut all_headers: Vec<(String, String)> =
        GRPC_HEADERS.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect();
    all_headers.extend(target.headers_with_auth(headers));
    Ok(Some(HttpRequest {
        method: "POST".to_string(),
        host: target.host_header.clone(),
        target: method.clone(),
        headers: all_headers,
        body,
        keep_alive: true,
    }))
}

/// The call's DATA: the request message behind its 5-byte gRPC prefix.
pub(crate) fn grpc_body(options: &ProtocolOptions, method: &str) -> Result<Vec<u8>> {
    let message = match (options.grpc_message.as_deref(), &options.grpc_proto) {
        (text, Some(proto)) => crate::grpc_message::encode_text(proto, method, text.unwrap_or(""))?,
        (None, None) => Vec::new(),
        (Some(text), None) => match text.strip_prefix('@') {
            Some(path) => read_capped(Path::new(path), &format!("{GrpcMessage} file"), MAX_BODY_BYTES)?,
            // Sent as bytes it would fail every call (grpc-status 13 from grpcio): refused.
            None if looks_like_protobuf_text(text) => {
                return Err(usage(format!(
                    "{GrpcMessage} {text:?} looks like protobuf text: add {GrpcProto} FILE (the .proto that \
                     declares {method}), or give the encoded message as bytes (\\x0a\\x05world)"
                )));
            }
            None => unescape(text).map_err(|e| usage(format!("{GrpcMessage}: {e}")))?,
        },
    };
    let mut body = Vec::with_capacity(GRPC_PREFIX_BYTES + message.len());
    body.push(0);
    body.extend_from_slice(&(message.len() as u32).to_be_bytes());
    body.extend_from_slice(&message);
    Ok(body)
}

/// Protobuf text format (`name: "x"`, `inner { id: 1 }`): a field name, then `:` or `{`. As
/// encoded bytes that would be a tag byte that is a letter followed by more letters and a
/// colon, which no message of ordinary fields starts with.
fn looks_like_protobuf_text(message: &str) -> bool {
    let message = message.trim_start();
    let name_end = message.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(message.len());
    let (name, rest) = message.split_at(name_end);
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && rest.trim_start().starts_with([':', '{', '<'])
}

/// Makes `workload` speak HTTP/2 when `options` ask for it or, on https://, when the server
/// chooses h2 by ALPN (one handshake before the run); leaves it HTTP/1.1 otherwise. Its
/// windows are `unset_window` bytes unless `--h2-window` says.
pub fn speak_http2(
    workload: &mut crate::Workload,
    options: &ProtocolOptions,
    unset_window: u32,
) -> Result<()> {
    if !matches!(workload.framing, nodelay_engine::Framing::Http { .. }) {
        return Ok(());
    }
    if let Some((settings, offering)) =
        choose(options, unset_window, workload.tls.as_ref(), workload.address)?
    {
        workload.http2 = Some(settings);
        if offering.is_some() {
            workload.tls = offering;
        }
    }
    Ok(())
}

/// Whether a run speaks HTTP/2, and with which TLS client: asked outright, or, on https://,
/// when the server chooses `h2` by ALPN (one handshake, before the run; a server that cannot
/// be reached leaves the run to say so). None: HTTP/1.1.
pub(crate) fn choose(
    options: &ProtocolOptions,
    unset_window: u32,
    tls: Option<&TlsClient>,
    address: SocketAddr,
) -> Result<Option<(Http2Settings, Option<TlsClient>)>> {
    let settings = options.settings(unset_window);
    let Some(tls) = tls else {
        return Ok(options.requires_h2().then_some((settings, None)));
    };
    if options.http11 {
        return Ok(None);
    }
    let offering = tls.offering_h2();
    let chosen = nodelay_engine::alpn_choice(address, &offering, Duration::from_secs(3));
    match chosen {
        Ok(Some(protocol)) if protocol == b"h2" => Ok(Some((settings, Some(offering)))),
        // The server's choice, not a bad argument: nothing could be measured (exit 1).
        Ok(other) if options.requires_h2() => {
            let chose = other.map_or("no protocol".to_string(), |p| String::from_utf8_lossy(&p).into_owned());
            Err(anyhow::anyhow!(
                "the server did not choose HTTP/2 by ALPN (it chose {chose}): drop {H2} and {Grpc}"
            ))
        }
        Ok(_) => match options.h2_only_options() {
            Some(option) => {
                Err(anyhow::anyhow!("{option} is for HTTP/2, and the server chose HTTP/1.1 by ALPN"))
            }
            None => Ok(None),
        },
        Err(_) if options.requires_h2() => Ok(Some((settings, Some(offering)))),
        Err(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_methods_and_windows_are_checked_where_parsed() {
        assert!(parse_grpc_method("/helloworld.Greeter/SayHello").is_ok());
        for bad in ["helloworld.Greeter/SayHello", "/Greeter", "/a/b/c", "//m", "/s/ m"] {
            assert!(parse_grpc_method(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_window("1048576"), Ok(1 << 20));
        for bad in ["65534", "2147483648", "1MB", "-1"] {
            assert!(parse_window(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn protobuf_text_is_told_from_encoded_bytes() {
        for text in ["name: \"x\"", "  name:\"x\"", "inner { id: 1 }", "_x <a: 1>"] {
            assert!(looks_like_protobuf_text(text), "{text}");
        }
        for bytes in ["\\x0a\\x05world", "", "\n\x05world", "hello", "a b: c", "1: 2"] {
            assert!(!looks_like_protobuf_text(bytes), "{bytes}");
        }
    }

    #[test]
    fn http2_options_need_http2() {
        let streams = ProtocolOptions { streams: Some(10), ..ProtocolOptions::default() };
        let message = check(&streams, Some(false), false, false).unwrap_err().to_string();
        assert!(message.contains("add --h2"), "{message}");
        assert!(check(&ProtocolOptions { h2: true, ..streams.clone() }, Some(false), false, false).is_ok());
        assert!(check(&streams, Some(true), false, false).is_ok());
        let h2 = ProtocolOptions { h2: true, ..ProtocolOptions::default() };
        assert!(check(&h2, Some(false), true, false).unwrap_err().to_string().contains("--no-keepalive"));
        assert!(check(&h2, None, false, false).is_err());
        let http11 = ProtocolOptions { http11: true, ..ProtocolOptions::default() };
        assert!(check(&http11, Some(false), false, false).is_err());
    }
}
