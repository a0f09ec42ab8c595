//! SCRAM-SHA-256 password verifiers, as PostgreSQL stores them in `pg_authid.rolpassword`:
//! `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (RFC 5802, RFC 7677), so that
//! a password is never kept, and a verifier made by a client (psql's `\password`) or dumped
//! from PostgreSQL can be stored as it is.

use std::fmt;
use std::num::NonZeroU32;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::{digest, hmac, pbkdf2};
use subtle::ConstantTimeEq;

/// PostgreSQL's default `scram_iterations`.
const ITERATIONS: u32 = 4096;
/// The bytes of a fresh salt, as PostgreSQL makes them.
const SALT_BYTES: usize = 16;
/// The prefix of a verifier's text.
const PREFIX: &str = "SCRAM-SHA-256$";

/// A role's SCRAM-SHA-256 verifier.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramVerifier {
    /// PBKDF2's iteration count.
    pub iterations: u32,
    /// The salt.
    pub salt: Vec<u8>,
    /// `H(ClientKey)`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
}

impl fmt::Debug for ScramVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramVerifier")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramVerifier {
    /// The verifier of `password` under a fresh random salt.
    pub fn of_password(password: &str) -> Self {
        let salt: [u8; SALT_BYTES] = rand::random();
        Self::derive(password, salt.to_vec(), ITERATIONS)
    }

    /// Reads a verifier in PostgreSQL's text form; `None` if `text` is not one.
    pub fn parse(text: &str) -> Option<Self> {
        let rest = text.strip_prefix(PREFIX)?;
        let (parameters, keys) = rest.split_once('$')?;
        let (iterations, salt) = parameters.split_once(':')?;
        let (stored_key, server_key) = keys.split_once(':')?;
        let verifier = ScramVerifier {
            iterations: iterations.parse().ok().filter(|i| *i > 0)?,
            salt: STANDARD.decode(salt).ok()?,
            stored_key: STANDARD.decode(stored_key).ok()?,
            server_key: STANDARD.decode(server_key).ok()?,
        };
        let key_bytes = digest::SHA256_OUTPUT_LEN;
        (verifier.stored_key.len() == key_bytes && verifier.server_key.len() == key_bytes)
            .then_some(verifier)
    }

    /// Whether `password` is the password this verifies (for clients that send it in clear
    /// text, under the `password` method). Compares in constant time.
    pub fn accepts_password(&self, password: &str) -> bool {
        let candidate = Self::derive(password, self.salt.clone(), self.iterations);
        bool::from(candidate.stored_key.ct_eq(&self.stored_key))
    }

    /// The verifier of `password` under `salt`: SaltedPassword = PBKDF2-HMAC-SHA-256 of the
    /// SASLprep-normalized password (the password as given if it cannot be normalized, as
    /// PostgreSQL does).
    fn derive(password: &str, salt: Vec<u8>, iterations: u32) -> Self {
        let normalized = stringprep::saslprep(password)
            .map(|p| p.into_owned())
            .unwrap_or_else(|_| password.to_string());
        let mut salted = [0u8; digest::SHA256_OUTPUT_LEN];
        pbkdf2::derive(
            pbkdf2::PBKDF2_HMAC_SHA256,
            NonZeroU32::new(iterations).unwrap_or(NonZeroU32::MIN),
            &salt,
            normalized.as_bytes(),
            &mut salted,
        );
        let key = hmac::Key::new(hmac::HMAC_SHA256, &salted);
        let client_key = hmac::sign(&key, b"Client Key");
        let server_key = hmac::sign(&key, b"Server Key");
        ScramVerifier {
            iterations,
            salt,
            stored_key: digest::digest(&digest::SHA256, client_key.as_ref())
                .as_ref()
                .to_vec(),
            server_key: server_key.as_ref().to_vec(),
        }
    }
}

impl fmt::Display for ScramVerifier {
    /// PostgreSQL's text form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PREFIX}{}:{}${}:{}",
            self.iterations,
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.stored_key),
            STANDARD.encode(&self.server_key)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made by PostgreSQL 15 for the password `secret`:
    /// `CREATE ROLE r PASSWORD 'secret'; SELECT rolpassword FROM pg_authid WHERE rolname = 'r'`.
    const POSTGRES_VERIFIER: &str = "SCRAM-SHA-256$4096:7Jw86wivp7M/tdre0zFMIw==$2p/04Ei57FJkfRlZHm5nZEkCKC9A1ThwePddTjILjdM=:UOTPhN8SpJAiBx6HEPYVNo/EK60Zt11SJJKZdczryFc=";

    #[test]
    fn a_verifier_postgres_made_is_read_and_checks_the_password() {
        let verifier = ScramVerifier::parse(POSTGRES_VERIFIER).expect("parses");
        assert_eq!(verifier.iterations, 4096);
        assert!(verifier.accepts_password("secret"));
        assert!(!verifier.accepts_password("Secret"));
        assert_eq!(verifier.to_string(), POSTGRES_VERIFIER);
        let again = ScramVerifier::derive("secret", verifier.salt.clone(), 4096);
        assert_eq!(again, verifier);
    }

    #[test]
    fn fresh_verifiers_are_salted_and_round_trip() {
        let one = ScramVerifier::of_password("pw");
        let two = ScramVerifier::of_password("pw");
        assert_ne!(one.salt, two.salt);
        assert_ne!(one.stored_key, two.stored_key);
        assert!(one.accepts_password("pw") && two.accepts_password("pw"));
        assert_eq!(ScramVerifier::parse(&one.to_string()), Some(one));
    }

    #[test]
    fn text_that_is_not_a_verifier_is_not_read() {
        for text in [
            "secret",
            "md5d6a35858d61d8f3e1f6ae1e6c5e0e0d4",
            "SCRAM-SHA-256$0:c2FsdA==$a:b",
            "SCRAM-SHA-256$4096:c2FsdA==$YQ==:Yg==",
            "SCRAM-SHA-256$4096:c2FsdA==",
        ] {
            assert_eq!(ScramVerifier::parse(text), None, "{text}");
        }
    }
}
