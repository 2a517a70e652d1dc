//! Turns the user's URL into an address to connect to and the request's Host and target.
//! Whether it is reachable, the run's own first connection tells (see engine::Control).

use crate::usage::usage;
use anyhow::{Context, Result};
use std::net::SocketAddr;
use url::Url;

/// An `http://` or `https://` target, resolved.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    /// The URL as reports show it (a password replaced by `***`).
    pub url: String,
    /// The address connected to (the host's first).
    pub address: SocketAddr,
    /// `host[:port]` as written in the URL, for the Host header.
    pub host_header: String,
    /// Path and query.
    pub request_target: String,
    /// `Authorization` value for credentials written in the URL (`http://user:pw@host/`),
    /// sent as curl does; the URL shown anywhere has the password replaced by `***`.
    pub basic_auth: Option<String>,
    /// `https://`: the host name (or address) TLS sends as SNI and checks the certificate for.
    pub tls_host: Option<String>,
}

impl HttpTarget {
    /// The user's headers plus the URL's credentials, unless an Authorization header was
    /// given: that one wins, as in curl.
    pub fn headers_with_auth(&self, headers: &[(String, String)]) -> Vec<(String, String)> {
        let mut all = headers.to_vec();
        if let Some(auth) = &self.basic_auth
            && !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        {
            all.push(("Authorization".into(), auth.clone()));
        }
        all
    }
}

/// Where to send load: an HTTP URL, or a raw TCP request/response service.
#[derive(Debug, Clone)]
pub enum Target {
    /// An HTTP server.
    Http(HttpTarget),
    /// A raw TCP request/response service.
    Tcp {
        /// `tcp://HOST:PORT` as given.
        url: String,
        /// The address connected to.
        address: SocketAddr,
    },
}

impl Target {
    /// The same request sent to another address: a hop behind the target, which the doctor
    /// diagnoses directly. The Host header names that address, as a proxy's default does;
    /// the URL's credentials stay with the URL's own host.
    pub fn at(&self, address: SocketAddr) -> Target {
        match self {
            Target::Http(http) => Target::Http(HttpTarget {
                url: format!("http://{address}{}", http.request_target),
                address,
                host_header: address.to_string(),
                request_target: http.request_target.clone(),
                basic_auth: None,
                tls_host: None,
            }),
            Target::Tcp { .. } => Target::Tcp { url: format!("tcp://{address}"), address },
        }
    }
}

/// Parses `http://HOST[:PORT]/PATH` or `tcp://HOST:PORT`.
pub fn parse_target(text: &str) -> Result<Target> {
    refuse_missing_scheme(text)?;
    let Some(rest) = text.strip_prefix("tcp://") else {
        return parse_http_target(text).map(Target::Http);
    };
    let host_port = rest.trim_end_matches('/');
    if host_port.is_empty() || host_port.contains('/') {
        return Err(usage(format!("invalid target '{text}': use tcp://HOST:PORT")));
    }
    let url = Url::parse(&format!("tcp://{host_port}"))
        .map_err(|e| usage(format!("invalid target '{text}': {e}")))?;
    if url.port().is_none() {
        return Err(usage(format!("'{text}' has no port: use tcp://HOST:PORT")));
    }
    let addresses =
        url.socket_addrs(|| None).with_context(|| format!("cannot resolve the host of '{text}'"))?;
    let address = *addresses.first().with_context(|| format!("the host of '{text}' has no address"))?;
    refuse_port_zero(text, address)?;
    Ok(Target::Tcp { url: format!("tcp://{host_port}"), address })
}

/// Port 0 asks the kernel for any free port when binding; nothing can be connected to it.
/// `text` names the address in the message (a URL, or `proxy --upstream`'s HOST:PORT).
pub fn no_port_zero(text: &str, address: SocketAddr) -> Result<(), String> {
    match address.port() {
        0 => Err(format!("'{text}' names port 0, which no server listens on")),
        _ => Ok(()),
    }
}

fn refuse_port_zero(text: &str, address: SocketAddr) -> Result<()> {
    no_port_zero(text, address).map_err(usage)
}

/// `http://::1:8080/` reads as a host `:` and fails: the brackets it lacks, said.
fn ipv6_hint(text: &str) -> &'static str {
    let authority = text.split_once("://").map_or(text, |(_, rest)| rest).split('/').next().unwrap_or("");
    if authority.matches(':').count() >= 2 && !authority.contains('[') {
        "; an IPv6 address goes in brackets, as http://[::1]:8080/"
    } else {
        ""
    }
}

/// A target typed without its scheme, as curl and oha take it (`localhost:9200`, `:9200`,
/// `9200`), is refused with the URL it most likely means: a measurement states what it
/// measured, and a guess (plain HTTP, or TLS on that port?) would measure something else
/// silently. `localhost:9200` would otherwise read as a scheme `localhost`.
fn refuse_missing_scheme(text: &str) -> Result<()> {
    let has_scheme = text.contains("://") || ["http:", "https:", "tcp:"].iter().any(|s| text.starts_with(s));
    match guess_url(text) {
        Some(guess) if !has_scheme => {
            Err(usage(format!("'{text}': missing http:// — did you mean {guess}?")))
        }
        _ => Ok(()),
    }
}

/// The URL a scheme-less target most likely means: a bare port or `:PORT` is this machine's
/// (127.0.0.1), a host keeps its name, the path defaults to `/`, and port 443 speaks TLS.
/// `None` when nothing like a host is there.
fn guess_url(text: &str) -> Option<String> {
    let text = text.trim();
    let (authority, path) = text.find(['/', '?']).map_or((text, "/"), |at| text.split_at(at));
    let path = if path.starts_with('?') { format!("/{path}") } else { path.to_string() };
    let authority = if authority.bytes().all(|b| b.is_ascii_digit()) && !authority.is_empty() {
        format!("127.0.0.1:{authority}")
    } else if let Some(port) = authority.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else {
        authority.to_string()
    };
    let valid = |c: char| c.is_ascii_alphanumeric() || "-._:[]@%".contains(c);
    if authority.is_empty() || !authority.chars().all(valid) {
        return None;
    }
    let scheme = if authority.ends_with(":443") { "https" } else { "http" };
    Some(format!("{scheme}://{authority}{path}"))
}

/// Parses and resolves an `http://` or `https://` URL.
pub fn parse_http_target(text: &str) -> Result<HttpTarget> {
    refuse_missing_scheme(text)?;
    let url = Url::parse(text).map_err(|e| usage(format!("invalid URL '{text}': {e}{}", ipv6_hint(text))))?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(usage(format!(
                "unsupported scheme '{other}' in '{text}': use http:// or https://HOST:PORT/PATH"
            )));
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(usage(format!("invalid URL '{text}': no host")));
    }
    let tls_host = (url.scheme() == "https").then(|| url.host_str().unwrap_or_default().to_string());
    let addresses = url
        .socket_addrs(|| url.port_or_known_default())
        .with_context(|| format!("cannot resolve the host of '{text}'"))?;
    let address = *addresses.first().with_context(|| format!("the host of '{text}' has no address"))?;
    refuse_port_zero(text, address)?;
    let host_header = url[url::Position::BeforeHost..url::Position::AfterPort].to_string();
    let request_target = url[url::Position::BeforePath..url::Position::AfterQuery].to_string();
    let basic_auth = basic_auth(&url).map_err(usage)?;
    let mut shown = url.clone();
    if shown.password().is_some() {
        // Never printed, in text or JSON: the password stays in the header only.
        let _ = shown.set_password(Some("***"));
    }
    Ok(HttpTarget { url: shown.to_string(), address, host_header, request_target, basic_auth, tls_host })
}

/// `Basic base64(user:password)` from the URL's percent-decoded credentials, if any.
fn basic_auth(url: &Url) -> Result<Option<String>, String> {
    use base64::Engine;
    if url.username().is_empty() && url.password().is_none() {
        return Ok(None);
    }
    let decode = |part: &str| {
        percent_encoding::percent_decode_str(part)
            .decode_utf8()
            .map(|text| text.into_owned())
            .map_err(|_| "the credentials in the URL are not UTF-8 once percent-decoded".to_string())
    };
    let credentials = format!("{}:{}", decode(url.username())?, decode(url.password().unwrap_or(""))?);
    Ok(Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_zero_and_an_unbracketed_ipv6_address_are_refused_with_the_way_out() {
        for zero in ["http://127.0.0.1:0/", "tcp://127.0.0.1:0"] {
            let error = parse_target(zero).err().unwrap().to_string();
            assert_eq!(error, format!("'{zero}' names port 0, which no server listens on"));
        }
        let error = parse_target("http://::1:8080/").err().unwrap().to_string();
        assert!(error.ends_with("an IPv6 address goes in brackets, as http://[::1]:8080/"), "{error}");
        assert!(parse_target("http://[::1]:8080/").is_ok());
    }

    #[test]
    fn a_target_without_its_scheme_is_refused_with_the_url_it_means() {
        let said = |text: &str| parse_target(text).err().map(|e| e.to_string());
        let local = "missing http:// — did you mean http://127.0.0.1:9200/?";
        for text in ["127.0.0.1:9200/", ":9200", "9200", " 9200"] {
            assert_eq!(said(text).unwrap(), format!("'{text}': {local}"));
        }
        assert!(said("localhost:9200").unwrap().ends_with("did you mean http://localhost:9200/?"));
        assert!(said("example.com/a?b=1").unwrap().ends_with("did you mean http://example.com/a?b=1?"));
        assert!(said("[::1]:8080").unwrap().ends_with("did you mean http://[::1]:8080/?"));
        assert!(said("h:443/x").unwrap().ends_with("did you mean https://h:443/x?"));
        let http = parse_http_target("localhost:9200").err().unwrap();
        assert!(crate::usage::is_usage(&http), "{http}");
        // Text that names no host keeps the parser's own reason.
        assert!(said("not a url").unwrap().contains("invalid URL"));
        assert!(said("").unwrap().contains("invalid URL"));
    }

    #[test]
    fn parses_ipv4_ipv6_and_localhost() {
        let t = parse_http_target("http://127.0.0.1:8080/a/b?x=1&y=2").unwrap();
        assert_eq!(t.address, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(t.host_header, "127.0.0.1:8080");
        assert_eq!(t.request_target, "/a/b?x=1&y=2");
        let t = parse_http_target("http://[::1]:9000").unwrap();
        assert_eq!(t.address, "[::1]:9000".parse().unwrap());
        assert_eq!(t.host_header, "[::1]:9000");
        assert_eq!(t.request_target, "/");
        let t = parse_http_target("http://localhost/").unwrap();
        assert_eq!(t.address.port(), 80);
        assert!(t.address.ip().is_loopback());
    }

    #[test]
    fn url_credentials_become_basic_auth_and_are_never_shown() {
        let t = parse_http_target("http://alice:s%3Acret@127.0.0.1:8080/x").unwrap();
        // base64("alice:s:cret")
        assert_eq!(t.basic_auth.as_deref(), Some("Basic YWxpY2U6czpjcmV0"));
        assert_eq!(t.url, "http://alice:***@127.0.0.1:8080/x");
        assert_eq!(t.host_header, "127.0.0.1:8080");
        let user_only = parse_http_target("http://bob@127.0.0.1/").unwrap();
        assert_eq!(user_only.basic_auth.as_deref(), Some("Basic Ym9iOg=="));
        let given = vec![("authorization".to_string(), "Bearer t".to_string())];
        assert_eq!(t.headers_with_auth(&given), given, "a user Authorization header wins");
        assert_eq!(parse_http_target("http://127.0.0.1/").unwrap().basic_auth, None);
    }

    #[test]
    fn parses_tcp_targets() {
        let Target::Tcp { url, address } = parse_target("tcp://127.0.0.1:6379").unwrap() else { panic!() };
        assert_eq!((url.as_str(), address), ("tcp://127.0.0.1:6379", "127.0.0.1:6379".parse().unwrap()));
        let Target::Tcp { address, .. } = parse_target("tcp://[::1]:7/").unwrap() else { panic!() };
        assert_eq!(address, "[::1]:7".parse().unwrap());
        assert!(parse_target("tcp://127.0.0.1").unwrap_err().to_string().contains("no port"));
        assert!(parse_target("tcp://h:1/path").unwrap_err().to_string().contains("tcp://HOST:PORT"));
        assert!(matches!(parse_target("http://127.0.0.1:1/").unwrap(), Target::Http(_)));
    }

    #[test]
    fn rejects_bad_urls_with_reasons() {
        let https = parse_http_target("https://localhost/x").unwrap();
        assert_eq!((https.address.port(), https.tls_host.as_deref()), (443, Some("localhost")));
        let https = parse_http_target("https://[::1]:8443/").unwrap();
        assert_eq!((https.address.port(), https.tls_host.as_deref()), (8443, Some("[::1]")));
        assert!(parse_http_target("http://localhost/").unwrap().tls_host.is_none());
        let garbage = format!("{:#}", parse_http_target("not a url").unwrap_err());
        assert!(garbage.contains("invalid URL"), "{garbage}");
        let ftp = parse_http_target("ftp://h/").unwrap_err().to_string();
        assert!(ftp.contains("unsupported scheme 'ftp'"), "{ftp}");
    }
}
