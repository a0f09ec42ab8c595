//! Connection startup: trust authentication on the configured listener, the ParameterStatus
//! values PostgreSQL 15 sends, and BackendKeyData so that cancel requests work.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, AuthDriver, ServerParameterProvider,
    StartupHandler,
};
use pgwire::api::{ClientInfo, METADATA_USER};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::backends::{BackendRegistry, BackendStart, Registration};

/// The ParameterStatus values of a new session, as PostgreSQL 15 reports them.
#[derive(Debug, Default)]
pub(crate) struct ServerParameters;

impl ServerParameterProvider for ServerParameters {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<HashMap<String, String>> {
        Some(
            coord::startup_parameter_status(&user_of(client), &startup_settings(client))
                .into_iter()
                .collect(),
        )
    }
}

/// The user a client connected as.
pub(crate) fn user_of<C: ClientInfo>(client: &C) -> String {
    client
        .metadata()
        .get(METADATA_USER)
        .cloned()
        .unwrap_or_else(|| "fluxion".into())
}

/// The settings a client's startup message asked for: its parameters (but user and
/// database), then those of its `options` (`-c name=value`, as libpq's `PGOPTIONS` sends).
pub(crate) fn startup_settings<C: ClientInfo>(client: &C) -> Vec<(String, String)> {
    let metadata = client.metadata();
    let mut settings: Vec<(String, String)> = metadata
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "user" | "database" | "options"))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if let Some(options) = metadata.get("options") {
        settings.extend(option_settings(options));
    }
    settings
}

/// The settings in a startup message's `options`, as PostgreSQL reads them: words split at
/// spaces (a backslash keeps the next character in the word), each `-c name=value`,
/// `-cname=value` or `--name=value`; other words are ignored.
fn option_settings(options: &str) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_ascii_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut settings = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let assignment = match word.as_str() {
            "-c" => words.next(),
            _ => word
                .strip_prefix("--")
                .or_else(|| word.strip_prefix("-c"))
                .map(str::to_string),
        };
        if let Some((name, value)) = assignment.as_deref().and_then(|a| a.split_once('=')) {
            settings.push((name.replace('-', "_").to_lowercase(), value.to_string()));
        }
    }
    settings
}

/// Accepts every startup without a password (the server listens on loopback by default),
/// up to `max_connections` clients at once, and registers each client's backend.
pub(crate) struct TrustStartup {
    driver: AuthDriver<ServerParameters>,
    backends: Arc<BackendRegistry>,
}

impl TrustStartup {
    pub fn new(backends: Arc<BackendRegistry>) -> Self {
        Self {
            driver: AuthDriver::new(ServerParameters),
            backends,
        }
    }
}

/// The backend registered for `client` at its startup, if it completed one.
pub(crate) fn registration_of<C: ClientInfo>(client: &C) -> Option<Arc<Registration>> {
    client.session_extensions().get::<Registration>()
}

#[async_trait]
impl StartupHandler for TrustStartup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            protocol_negotiation(client, startup).await?;
            save_startup_parameters_to_metadata(client, startup);
            let Some(admission) = self.backends.admit() else {
                return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    "FATAL".into(),
                    "53300".into(),
                    "sorry, too many clients already".into(),
                ))));
            };
            self.driver.complete_authentication(client, None).await?;
            let (pid, secret_key) = client.pid_and_secret_key();
            let registration = self.backends.register(
                admission,
                BackendStart {
                    pid,
                    secret_key: secret_key.to_bytes(),
                    user: user_of(client),
                    application_name: startup_settings(client)
                        .into_iter()
                        .rfind(|(name, _)| name == "application_name")
                        .map(|(_, value)| value)
                        .unwrap_or_default(),
                    client: client.socket_addr(),
                },
            );
            // pgwire's extended-query handlers cancel through this handle.
            client
                .session_extensions()
                .insert(registration.backend().statement_handle().clone());
            client.session_extensions().insert(registration);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_as_postgres_reads_them() {
        let settings = option_settings(
            "-c statement_timeout=5s  -csearch_path=a,b --application-name=x\\ y -X ignored",
        );
        let expected = [
            ("statement_timeout", "5s"),
            ("search_path", "a,b"),
            ("application_name", "x y"),
        ];
        let settings: Vec<(&str, &str)> = settings
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(settings, expected);
        assert!(option_settings("").is_empty());
        assert!(option_settings("-c").is_empty());
    }
}
