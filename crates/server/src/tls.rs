//! TLS for the Postgres listener: a certificate chain and its private key, read from PEM
//! files (`--tls-cert`, `--tls-key`), served with rustls to clients that send an SSLRequest
//! (libpq's `sslmode=require` / `verify-full`, pgjdbc's `ssl=true`) or open with TLS directly
//! (PostgreSQL 17's `sslnegotiation=direct`, ALPN `postgresql`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// The ALPN protocol of PostgreSQL's direct TLS connections.
const POSTGRES_ALPN: &[u8] = b"postgresql";

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file holds no PEM object of the kind needed.
    #[error("{}: {what}", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// rustls refused the certificate and key (a key that does not match, say).
    #[error("the TLS certificate and key cannot be used: {0}")]
    Config(#[from] tokio_rustls::rustls::Error),
}

/// The server's TLS setup: what accepts TLS clients, and the certificate chain in PEM (for
/// SCRAM channel binding).
pub struct Tls {
    pub(crate) acceptor: TlsAcceptor,
    pub(crate) certificate_pem: Vec<u8>,
}

impl Tls {
    /// Reads the certificate chain at `certificate` and the private key at `key` (PEM).
    pub fn load(certificate: &Path, key: &Path) -> Result<Tls, TlsError> {
        let certificate_pem = read(certificate)?;
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&certificate_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| pem_error(certificate, e.to_string()))?;
        if chain.is_empty() {
            return Err(pem_error(certificate, "no certificate in the file".into()));
        }
        let key_pem = read(key)?;
        let private_key = PrivateKeyDer::from_pem_slice(&key_pem)
            .map_err(|e| pem_error(key, format!("no private key in the file: {e}")))?;
        let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, private_key)?;
        config.alpn_protocols = vec![POSTGRES_ALPN.to_vec()];
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            certificate_pem,
        })
    }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn pem_error(path: &Path, what: String) -> TlsError {
    TlsError::Pem {
        path: path.to_path_buf(),
        what,
    }
}
