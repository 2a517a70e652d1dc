//! Fuzzes `--cacert FILE`: any bytes as the PEM file give a TLS client or a one-line error
//! naming the option, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_engine::{TlsClient, TlsOptions};
use std::io::Write;

fuzz_target!(|bytes: &[u8]| {
    let path = std::env::temp_dir().join(format!("nodelay-fuzz-cacert-{}.pem", std::process::id()));
    std::fs::File::create(&path).and_then(|mut file| file.write_all(bytes)).expect("write the input");
    let options = TlsOptions { ca_file: Some(path.clone()), resume: true, ..TlsOptions::default() };
    match TlsClient::new("localhost", &options) {
        Ok(client) => assert_eq!(client.trust, nodelay_engine::TlsTrust::CaFile),
        Err(error) => {
            let message = error.to_string();
            assert!(message.contains("--cacert"), "{message}");
            assert!(!message.contains('\n'), "one line: {message}");
        }
    }
});
