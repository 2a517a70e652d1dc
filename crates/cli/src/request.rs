//! Builds the HTTP request a command sends from the target and the request options.

use crate::args::RequestArgs;
use crate::input::{MAX_BODY_BYTES, read_capped};
use crate::target::HttpTarget;
use anyhow::Result;
use nodelay_wire::HttpRequest;
use std::path::Path;

pub fn build_request(target: &HttpTarget, args: &RequestArgs, keep_alive: bool) -> Result<HttpRequest> {
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
