//! A certificate authority made for one test: it signs a server certificate for the TLS fronts
//! that stand before the test stack's plaintext servers (`temporal_front.rs`,
//! `postgres_front.rs`, `mcp_front.rs`, and `kafka_front.py` in `kafka_security.rs`) and the
//! client certificates a test presents, written as PEM files the way an operator would hand them
//! to Firstline.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A client certificate and its key, as PEM files.
pub struct ClientCredentials {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

/// A CA of the test's own.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().expect("key"))
            .expect("CA certificate");
        Self { issuer }
    }

    /// Writes the CA's certificate to `path` (what `sslrootcert` or `server_ca_file` names).
    pub fn write_pem(&self, path: &Path) {
        std::fs::write(path, self.issuer.pem()).expect("writing the CA");
    }

    /// A rustls server configuration presenting a certificate for `names`, signed by this CA;
    /// with `clients`, the handshake requires a client certificate that CA signed.
    pub fn server_config(
        &self,
        names: &[&str],
        clients: Option<&TestCa>,
        alpn: &[&[u8]],
    ) -> Arc<rustls::ServerConfig> {
        let key = KeyPair::generate().expect("key");
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let certificate = CertificateParams::new(names)
            .expect("params")
            .signed_by(&key, &self.issuer)
            .expect("server certificate");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("TLS versions");
        let builder = match clients {
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                roots
                    .add(ca.issuer.der().clone())
                    .expect("the CA is a root");
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .expect("client verifier");
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(
                vec![CertificateDer::from(certificate.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("server TLS config");
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }

    /// A server certificate for `names`, signed by this CA, and its key, written under `dir` as
    /// PEM files (for a front that is not rustls: Python's `ssl`, in `kafka_security.rs` only).
    #[allow(dead_code)]
    pub fn server_files(&self, dir: &Path, names: &[&str]) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().expect("key");
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let certificate = CertificateParams::new(names)
            .expect("params")
            .signed_by(&key, &self.issuer)
            .expect("server certificate");
        let cert_file = dir.join("server.pem");
        let key_file = dir.join("server.key");
        std::fs::write(&cert_file, certificate.pem()).expect("writing the certificate");
        std::fs::write(&key_file, key.serialize_pem()).expect("writing the key");
        (cert_file, key_file)
    }

    /// A client certificate for `name`, signed by this CA, written under `dir`.
    pub fn client_credentials(&self, dir: &Path, name: &str) -> ClientCredentials {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params
            .extended_key_usages
            .push(rcgen::ExtendedKeyUsagePurpose::ClientAuth);
        let certificate = params
            .signed_by(&key, &self.issuer)
            .expect("client certificate");
        let cert_file = dir.join(format!("{name}.pem"));
        let key_file = dir.join(format!("{name}.key"));
        std::fs::write(&cert_file, certificate.pem()).expect("writing the certificate");
        std::fs::write(&key_file, key.serialize_pem()).expect("writing the key");
        ClientCredentials {
            cert_file,
            key_file,
        }
    }
}
