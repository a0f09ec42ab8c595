//! Password authentication against the roles' SCRAM-SHA-256 verifiers: SCRAM-SHA-256 (and,
//! over TLS, SCRAM-SHA-256-PLUS with channel binding), or a password sent in clear text (the
//! `password` method), each run by pgwire's mechanism over [`RoleVerifiers`].
//!
//! A client naming a role that does not exist, or one without a password, is taken through
//! the same exchange against a made-up verifier and fails at its end, as PostgreSQL does, so
//! that the answer does not tell which roles exist.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use coord::{Coordinator, ScramVerifier};
use pgwire::api::auth::cleartext::CleartextPasswordAuth;
use pgwire::api::auth::mechanism::{AuthMechanism, AuthMechanismFactory};
use pgwire::api::auth::sasl::scram::{ScramAuth, ScramSecret};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{PgWireError, PgWireResult};

use crate::access_rules::AuthMethod;

/// The password methods a client may be asked to pass.
pub(crate) struct PasswordMethods {
    /// SCRAM-SHA-256 without channel binding (clients in the clear).
    scram: ScramAuth,
    /// SCRAM-SHA-256 and SCRAM-SHA-256-PLUS, bound to the server's certificate (TLS clients).
    scram_tls: Option<ScramAuth>,
    /// A password in clear text, checked against the verifier.
    cleartext: CleartextPasswordAuth<RoleVerifiers>,
}

impl PasswordMethods {
    /// The methods over the roles of `coord`; `certificate_pem`, the server's TLS certificate
    /// chain, enables channel binding for TLS clients.
    pub fn new(coord: Arc<Coordinator>, certificate_pem: Option<&[u8]>) -> PgWireResult<Self> {
        let verifiers = Arc::new(RoleVerifiers { coord });
        let scram = ScramAuth::new(verifiers.clone());
        let scram_tls = match certificate_pem {
            Some(pem) => {
                let mut bound = ScramAuth::new(verifiers.clone());
                bound.configure_certificate(pem)?;
                Some(bound)
            }
            None => None,
        };
        Ok(Self {
            scram,
            scram_tls,
            cleartext: CleartextPasswordAuth::new(verifiers),
        })
    }

    /// A fresh exchange of `method` for a client (`tls`: over TLS); `None` for the methods
    /// that ask for no password.
    pub fn mechanism(&self, method: AuthMethod, tls: bool) -> Option<Box<dyn AuthMechanism>> {
        match method {
            AuthMethod::Trust | AuthMethod::Reject => None,
            AuthMethod::Password => Some(self.cleartext.create()),
            AuthMethod::ScramSha256 => Some(match (&self.scram_tls, tls) {
                (Some(bound), true) => bound.create(),
                _ => self.scram.create(),
            }),
        }
    }
}

/// The roles' password verifiers, as pgwire's mechanisms ask for them.
pub(crate) struct RoleVerifiers {
    coord: Arc<Coordinator>,
}

impl fmt::Debug for RoleVerifiers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoleVerifiers").finish_non_exhaustive()
    }
}

impl RoleVerifiers {
    /// The verifier of the role `login` names, if it exists and has one.
    fn verifier(&self, login: &LoginInfo<'_>) -> Option<ScramVerifier> {
        self.coord.login_role(login.user()?)?.password
    }
}

#[async_trait]
impl AuthSource for RoleVerifiers {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        Err(password_failed(login))
    }

    async fn verify_password(
        &self,
        login: &LoginInfo,
        presented_password: &[u8],
    ) -> PgWireResult<Option<()>> {
        let presented =
            std::str::from_utf8(presented_password).map_err(|_| password_failed(login))?;
        match self.verifier(login) {
            Some(verifier) if verifier.accepts_password(presented) => Ok(Some(())),
            _ => Err(password_failed(login)),
        }
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        // An unknown role, or one without a password, meets a verifier no password matches.
        let verifier = self
            .verifier(login)
            .unwrap_or_else(|| ScramVerifier::of_password(&random_password()));
        Ok((
            ScramSecret::Verifier {
                salt: verifier.salt,
                iterations: verifier.iterations as usize,
                stored_key: verifier.stored_key,
                server_key: verifier.server_key,
            },
            None,
        ))
    }
}

/// A password no client knows.
fn random_password() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn password_failed(login: &LoginInfo<'_>) -> PgWireError {
    PgWireError::InvalidPassword(login.user().unwrap_or_default().to_string())
}
