//! A gRPC request message given as protobuf text (`name: "world"`) with the `.proto` that
//! declares its method (`--grpc-proto`), encoded once before the run: protox compiles the
//! file (no protoc needed), prost-reflect finds the method's input type and parses the text.

use crate::usage::usage;
use anyhow::Result;
use nodelay_flags::Flag::{GrpcMessage, GrpcProto};
use prost::Message;
use prost_reflect::DynamicMessage;
use std::path::Path;

/// The encoded request message of `method` (`/package.Service/Method`), from `text` in
/// protobuf text format, the types read from `proto` (its directory is the import path).
pub(crate) fn encode_text(proto: &Path, method: &str, text: &str) -> Result<Vec<u8>> {
    let shown = proto.display();
    let include = proto.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file = proto.file_name().ok_or_else(|| usage(format!("{GrpcProto} {shown}: not a file")))?;
    let mut compiler = protox::Compiler::new([include])
        .map_err(|e| usage(format!("{GrpcProto} {shown}: {}", one_line(&e.to_string()))))?;
    compiler
        .open_file(file)
        .map_err(|e| usage(format!("{GrpcProto} {shown}: {}", one_line(&e.to_string()))))?;
    let pool = compiler.descriptor_pool();
    let (service, method_name) = method
        .trim_start_matches('/')
        .split_once('/')
        .ok_or_else(|| usage(format!("'{method}': a gRPC method is /package.Service/Method")))?;
    let service_descriptor = pool
        .get_service_by_name(service)
        .ok_or_else(|| usage(format!("{GrpcProto} {shown} declares no service {service}")))?;
    let descriptor = service_descriptor
        .methods()
        .find(|m| m.name() == method_name)
        .ok_or_else(|| usage(format!("service {service} in {shown} has no method {method_name}")))?;
    let input = descriptor.input();
    let message = DynamicMessage::parse_text_format(input.clone(), text).map_err(|e| {
        usage(format!(
            "{GrpcMessage} is not a {} in protobuf text format: {}",
            input.full_name(),
            one_line(&e.to_string())
        ))
    })?;
    Ok(message.encode_to_vec())
}

/// An error's words on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proto() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("nodelay-grpc-proto-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("greeter.proto");
        std::fs::write(
            &path,
            "syntax = \"proto3\";\npackage helloworld;\nservice Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }\n\
             message HelloRequest { string name = 1; int32 times = 2; }\nmessage HelloReply { string message = 1; }\n",
        )
        .unwrap();
        path
    }

    #[test]
    fn text_is_encoded_as_the_methods_input_type() {
        let bytes =
            encode_text(&proto(), "/helloworld.Greeter/SayHello", "name: \"world\" times: 3").unwrap();
        assert_eq!(bytes, b"\x0a\x05world\x10\x03");
    }

    #[test]
    fn mistakes_are_named_in_one_line() {
        let path = proto();
        let error = |method: &str, text: &str| encode_text(&path, method, text).unwrap_err().to_string();
        assert!(error("/helloworld.Nope/SayHello", "").contains("declares no service helloworld.Nope"));
        assert!(error("/helloworld.Greeter/Nope", "").contains("has no method Nope"));
        let wrong = error("/helloworld.Greeter/SayHello", "nmae: \"x\"");
        assert!(wrong.contains("not a helloworld.HelloRequest in protobuf text format"), "{wrong}");
        assert!(!wrong.contains('\n'), "{wrong}");
        let missing = encode_text(Path::new("/nonexistent/x.proto"), "/a.B/C", "").unwrap_err().to_string();
        assert!(
            missing.starts_with("--grpc-proto /nonexistent/x.proto:") && !missing.contains('\n'),
            "{missing}"
        );
    }
}
