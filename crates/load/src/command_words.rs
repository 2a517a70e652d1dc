//! nodelay's own words for the request a run sent (method, headers, body, the split of its
//! writes, HTTP/2 and gRPC), for the `nodelay doctor` and `nodelay bench` commands a report
//! suggests: run as shown, they send what the run sent. An h2c-only server answers a command
//! without `--h2` with "invalid HTTP version"; a gRPC method without `--grpc` is a 404.

use crate::request::RequestOptions;
use nodelay_diagnose::shell_word;
use nodelay_flags::Flag::{Grpc, GrpcMessage, GrpcProto, H2, H2Window, Http11, Streams, WriteSplit};

/// The words, each quoted for a POSIX shell, in the order the options are documented.
pub fn nodelay_request_words(request: &RequestOptions) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut option = |name: &str, value: Option<String>| {
        words.push(name.to_string());
        words.extend(value.map(|v| shell_word(&v)));
    };
    if let Some(method) = &request.method {
        option("-m", Some(method.clone()));
    }
    for (name, value) in &request.headers {
        option("-H", Some(if value.is_empty() { format!("{name}:") } else { format!("{name}: {value}") }));
    }
    if let Some(body) = &request.body {
        option("-b", Some(body.clone()));
    }
    if let Some(split) = &request.write_split {
        let sizes: Vec<String> = split.0.iter().map(usize::to_string).collect();
        option(&WriteSplit.to_string(), Some(format!("{},rest", sizes.join(","))));
    }
    let protocol = &request.protocol;
    if protocol.h2 {
        option(&H2.to_string(), None);
    }
    if protocol.http11 {
        option(&Http11.to_string(), None);
    }
    if let Some(streams) = protocol.streams {
        option(&Streams.to_string(), Some(streams.to_string()));
    }
    if let Some(window) = protocol.h2_window {
        option(&H2Window.to_string(), Some(window.to_string()));
    }
    if let Some(method) = &protocol.grpc {
        option(&Grpc.to_string(), Some(method.clone()));
    }
    if let Some(message) = &protocol.grpc_message {
        option(&GrpcMessage.to_string(), Some(message.clone()));
    }
    if let Some(proto) = &protocol.grpc_proto {
        option(&GrpcProto.to_string(), Some(proto.display().to_string()));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ProtocolOptions;

    #[test]
    fn every_option_that_shapes_the_request_is_given_back() {
        let request = RequestOptions {
            method: Some("PUT".into()),
            headers: vec![("X-Team".into(), "a b".into())],
            body: Some("@body.json".into()),
            protocol: ProtocolOptions {
                h2: true,
                streams: Some(4),
                grpc: Some("/helloworld.Greeter/SayHello".into()),
                grpc_message: Some("\\x0a\\x05world".into()),
                ..ProtocolOptions::default()
            },
            ..RequestOptions::default()
        };
        assert_eq!(
            nodelay_request_words(&request).join(" "),
            r"-m PUT -H 'X-Team: a b' -b @body.json --h2 --streams 4 --grpc /helloworld.Greeter/SayHello --grpc-message '\x0a\x05world'"
        );
        assert!(nodelay_request_words(&RequestOptions::default()).is_empty());
    }
}
