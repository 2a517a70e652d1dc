//! Certificates the TLS tests make for themselves with rcgen, once per test process, in a
//! directory of its own: a CA and the server certificate it issued (for `localhost` and
//! 127.0.0.1), one it issued for another name, and a self-signed one nobody issued.

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use std::path::PathBuf;
use std::sync::OnceLock;

pub struct TestCerts {
    /// The CA's certificate (PEM): what `--cacert` trusts.
    pub ca: String,
    /// The server's certificate and key, issued by the CA for localhost and 127.0.0.1.
    pub cert: String,
    pub key: String,
    /// Issued by the CA for `other.example` only.
    pub wrong_name_cert: String,
    pub wrong_name_key: String,
    /// Self-signed for localhost and 127.0.0.1 (issuer = subject), trusted by no store.
    pub self_signed_cert: String,
    pub self_signed_key: String,
}

/// The CA's common name, which an "untrusted issuer" error names.
pub const CA_NAME: &str = "nodelay test CA";

pub fn certs() -> &'static TestCerts {
    static CERTS: OnceLock<TestCerts> = OnceLock::new();
    CERTS.get_or_init(make_certs)
}

fn make_certs() -> TestCerts {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for the certificates");
    let write = |name: &str, pem: String| {
        let path = dir.join(name);
        std::fs::write(&path, pem).expect("write a PEM file");
        path.to_str().unwrap().to_string()
    };
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, CA_NAME);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let issued = |names: &[&str], common_name: &str| {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        params.distinguished_name.push(DnType::CommonName, common_name);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (cert, key) = issued(&["localhost", "127.0.0.1"], "localhost");
    let (wrong_cert, wrong_key) = issued(&["other.example"], "other.example");
    let mut own = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    own.distinguished_name.push(DnType::CommonName, "self-signed localhost");
    let own_key = KeyPair::generate().unwrap();
    let own_cert = own.self_signed(&own_key).unwrap();
    TestCerts {
        ca: write("ca.pem", ca.pem()),
        cert: write("server.pem", cert),
        key: write("server.key", key),
        wrong_name_cert: write("wrong.pem", wrong_cert),
        wrong_name_key: write("wrong.key", wrong_key),
        self_signed_cert: write("self.pem", own_cert.pem()),
        self_signed_key: write("self.key", own_key.serialize_pem()),
    }
}
