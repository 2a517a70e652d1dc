//! What a run sends and how responses are framed, built from the target and the request
//! options: one HTTP request, a scenario of named HTTP requests, or raw TCP bytes.

use crate::input::{MAX_BODY_BYTES, read_capped};
use crate::request::{RequestOptions, TlsChoices, build_request};
use crate::scenario::load_scenario;
use crate::target::{HttpTarget, Target};
use crate::usage::usage;
use anyhow::Result;
use nodelay_engine::{Framing, RawFraming, RequestSpec, Selection, TlsClient, TlsOptions};
use nodelay_flags::Flag::{Cacert, Frame, Insecure, NoTlsResume, Scenario, SendBytes, Sni};
use nodelay_wire::{HttpRequest, unescape};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

const MAX_HTTP_HEAD_BYTES: usize = 64 * 1024;
/// A raw framing that never matches would otherwise read forever.
const MAX_RAW_RESPONSE_BYTES: u64 = 1024 * 1024;

/// One kind of request with what the doctor's experiments need to vary it.
#[derive(Debug, Clone)]
pub struct WorkloadRequest {
    /// The request as the engine sends it.
    pub spec: RequestSpec,
    /// The head of the same request asking the server to close (HTTP `Connection: close`);
    /// empty for raw protocols, which send the request as it is.
    closing_head: Vec<u8>,
    /// Length of the HTTP head when the request has a body: where a split-writing client
    /// would cut it.
    pub head_bytes: Option<usize>,
}

/// What a run sends, where, and how its responses end.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The target's URL as reports show it.
    pub url: String,
    /// The address connected to.
    pub address: SocketAddr,
    /// One request, or a scenario's named requests.
    pub requests: Vec<WorkloadRequest>,
    /// How a connection picks its next request.
    pub selection: Selection,
    /// How a response is framed: HTTP, or a raw framing.
    pub framing: Framing,
    /// `--write-split` asks for a client that writes in pieces with Nagle on.
    pub client_nodelay: bool,
    /// How the request is described in reports: a method, `scenario`, or `raw`.
    pub label: String,
    /// `https://`: the TLS client every connection uses.
    pub tls: Option<TlsClient>,
    /// Spoken over HTTP/2 with these settings (set by [`crate::speak_http2`]); None: HTTP/1.1
    /// or raw TCP.
    pub http2: Option<nodelay_engine::Http2Settings>,
}

impl WorkloadRequest {
    /// The same request asking the server to close after its response (HTTP); raw requests
    /// are sent as they are.
    pub fn closing_bytes(&self) -> Arc<Vec<u8>> {
        if self.closing_head.is_empty() {
            return Arc::clone(&self.spec.bytes);
        }
        let head_bytes = self.head_bytes.unwrap_or(self.spec.bytes.len());
        Arc::new([&self.closing_head[..], &self.spec.bytes[head_bytes..]].concat())
    }
}

impl Workload {
    /// The requests as the engine takes them.
    pub fn specs(&self) -> Vec<RequestSpec> {
        self.requests.iter().map(|r| r.spec.clone()).collect()
    }

    /// More than one named request.
    pub fn is_scenario(&self) -> bool {
        self.requests.len() > 1
    }
}

/// Builds the workload; `keep_alive: false` asks HTTP servers to close after each response.
pub fn build_workload(target: &Target, args: &RequestOptions, keep_alive: bool) -> Result<Workload> {
    let https = match target {
        Target::Http(http) => Some(http.tls_host.is_some()),
        Target::Tcp { .. } => None,
    };
    crate::protocol::check(&args.protocol, https, !keep_alive, args.write_split.is_some())?;
    let write_split = args.write_split.clone().map(|split| split.0).unwrap_or_default();
    let mut workload = match target {
        Target::Http(http) => http_workload(http, args, keep_alive)?,
        Target::Tcp { url, address } => tcp_workload(url, *address, args)?,
    };
    for request in &mut workload.requests {
        request.spec.write_split = write_split.clone();
    }
    workload.client_nodelay = write_split.is_empty();
    workload.tls = tls_client(target, &args.tls)?;
    Ok(workload)
}

/// The TLS client of an https:// target; TLS options on any other target are a mistake.
fn tls_client(target: &Target, args: &TlsChoices) -> Result<Option<TlsClient>> {
    let Target::Http(HttpTarget { tls_host: Some(host), .. }) = target else {
        if args.any() {
            return Err(usage(format!(
                "{Insecure}, {Cacert}, {Sni} and {NoTlsResume} are for https:// URLs"
            )));
        }
        return Ok(None);
    };
    let options = TlsOptions {
        insecure: args.insecure,
        ca_file: args.cacert.clone(),
        server_name: args.sni.clone(),
        resume: !args.no_tls_resume,
    };
    TlsClient::new(host, &options).map(Some).map_err(|e| usage(e.to_string()))
}

fn http_workload(target: &HttpTarget, args: &RequestOptions, keep_alive: bool) -> Result<Workload> {
    if args.send.is_some() || args.frame.is_some() {
        return Err(usage(format!(
            "{SendBytes} and {Frame} are for tcp:// targets; HTTP requests use -m, -H and -b"
        )));
    }
    let (requests, selection, label) = match &args.scenario {
        Some(path) => {
            let scenario = load_scenario(path)?;
            let requests: Vec<(String, HttpRequest)> = scenario
                .requests
                .into_iter()
                .map(|r| {
                    let request = HttpRequest {
                        method: r.method,
                        host: target.host_header.clone(),
                        target: join_path(&target.request_target, &r.path),
                        headers: target.headers_with_auth(&[args.headers.clone(), r.headers].concat()),
                        body: r.body,
                        keep_alive,
                    };
                    (r.name, request)
                })
                .collect();
            (requests, scenario.selection, "scenario".to_string())
        }
        None => {
            let request = match crate::protocol::grpc_request(target, &args.protocol, &args.headers)? {
                Some(call) => call,
                None => build_request(target, args, keep_alive)?,
            };
            let label = request.method.clone();
            (vec![(format!("{} {}", request.method, request.target), request)], Selection::Sequence, label)
        }
    };
    let scenario = args.scenario.is_some();
    let requests = requests
        .into_iter()
        .map(|(name, request)| {
            // Refused here, before anything is sent: no input may inject bytes on the wire.
            let invalid = |e: nodelay_wire::RequestError| match scenario {
                true => usage(format!("scenario request '{name}': {e}")),
                false => usage(format!("cannot send this request: {e}")),
            };
            let mut request = request;
            let expects_no_body = request.expects_no_body();
            let mut bytes = request.encode_head().map_err(invalid)?;
            request.keep_alive = false;
            let closing_head = request.encode_head().map_err(invalid)?;
            // The body is copied once, into the bytes sent; nothing else keeps a copy.
            let body = std::mem::take(&mut request.body);
            let head_bytes = (!body.is_empty()).then_some(bytes.len());
            bytes.extend_from_slice(&body);
            drop(body);
            let spec = RequestSpec { expects_no_body, ..RequestSpec::new(name, bytes) };
            Ok(WorkloadRequest { spec, closing_head, head_bytes })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Workload {
        url: target.url.clone(),
        address: target.address,
        requests,
        selection,
        framing: Framing::Http {
            max_head_bytes: MAX_HTTP_HEAD_BYTES,
            max_response_bytes: args.max_response.unwrap_or(u64::MAX),
        },
        client_nodelay: true,
        label,
        tls: None,
        http2: None,
    })
}

/// When plain HTTP got nothing usable back: whether the port speaks TLS, said as what to do
/// ("the server speaks TLS on this port: use https://..."). One extra connection, only when
/// the failures look like a TLS server's answer to plain HTTP: a close, a reset, bytes that
/// are no HTTP, or a 400 page (`suspect`); never for timeouts.
pub fn tls_hint(workload: &Workload, suspect: bool) -> Option<String> {
    if !suspect || workload.tls.is_some() || !matches!(workload.framing, Framing::Http { .. }) {
        return None;
    }
    let https = workload.url.strip_prefix("http://").map(|rest| format!("https://{rest}"))?;
    nodelay_engine::speaks_tls(workload.address, std::time::Duration::from_secs(1))
        .then(|| format!("the server speaks TLS on this port: use {https}"))
}

/// The failures a TLS server gives a plain-HTTP client: it closes, resets, or answers with
/// a TLS alert record (malformed as HTTP).
pub fn looks_like_tls_refusal(kind: nodelay_engine::ErrorKind) -> bool {
    use nodelay_engine::ErrorKind;
    matches!(kind, ErrorKind::ClosedEarly | ErrorKind::Reset | ErrorKind::MalformedResponse)
}

/// A scenario path under the URL's own path prefix (`http://h/api` + `/items` = `/api/items`).
fn join_path(base: &str, path: &str) -> String {
    let base = base.split('?').next().unwrap_or("").trim_end_matches('/');
    format!("{base}{path}")
}

fn tcp_workload(url: &str, address: SocketAddr, args: &RequestOptions) -> Result<Workload> {
    if args.method.is_some() || !args.headers.is_empty() || args.body.is_some() || args.scenario.is_some() {
        return Err(usage(format!(
            "-m, -H, -b and {Scenario} are for http:// targets; tcp:// uses {SendBytes} and {Frame}"
        )));
    }
    let (Some(send), Some(frame)) = (&args.send, &args.frame) else {
        return Err(usage(format!("a tcp:// target needs {SendBytes} BYTES (or @FILE) and {Frame} FRAMING")));
    };
    let bytes = match send.strip_prefix('@') {
        Some(path) => read_capped(Path::new(path), &format!("{SendBytes} file"), MAX_BODY_BYTES)?,
        None => unescape(send).map_err(|e| usage(format!("{SendBytes}: {e}")))?,
    };
    if bytes.is_empty() {
        return Err(usage(format!("{SendBytes} needs at least one byte")));
    }
    let framing = RawFraming::parse(frame).map_err(|e| usage(format!("{Frame}: {e}")))?;
    let label = format!("raw, {Frame} {framing}");
    let spec = RequestSpec::new(format!("{} bytes", bytes.len()), bytes);
    Ok(Workload {
        url: url.to_string(),
        address,
        requests: vec![WorkloadRequest { spec, closing_head: Vec::new(), head_bytes: None }],
        selection: Selection::Sequence,
        framing: Framing::Raw {
            framing,
            max_response_bytes: args.max_response.unwrap_or(MAX_RAW_RESPONSE_BYTES),
        },
        client_nodelay: true,
        label,
        tls: None,
        http2: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_paths_join_the_base_path() {
        assert_eq!(join_path("/", "/items"), "/items");
        assert_eq!(join_path("/api/", "/items?x=1"), "/api/items?x=1");
        assert_eq!(join_path("/api?q=1", "/x"), "/api/x");
    }
}
