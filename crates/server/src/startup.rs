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
use pgwire::api::{ClientInfo, ConnectionManager, METADATA_USER};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

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

/// The settings a client's startup message asked for (everything but user and database).
pub(crate) fn startup_settings<C: ClientInfo>(client: &C) -> Vec<(String, String)> {
    client
        .metadata()
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "user" | "database" | "options"))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// Accepts every startup without a password (the server listens on loopback by default).
pub(crate) struct TrustStartup {
    driver: AuthDriver<ServerParameters>,
}

impl TrustStartup {
    pub fn new(connections: Arc<ConnectionManager>) -> Self {
        Self {
            driver: AuthDriver::new(ServerParameters).with_connection_manager(connections),
        }
    }
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
            self.driver.complete_authentication(client, None).await?;
        }
        Ok(())
    }
}
