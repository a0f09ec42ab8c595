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
use pgwire::api::{ClientInfo, ConnectionManager, METADATA_APPLICATION_NAME, METADATA_USER};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

/// The ParameterStatus values of a new session, as PostgreSQL 15 reports them.
#[derive(Debug, Default)]
pub(crate) struct ServerParameters;

impl ServerParameterProvider for ServerParameters {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<HashMap<String, String>> {
        let mut parameters: HashMap<String, String> = [
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, MDY"),
            ("default_transaction_read_only", "off"),
            ("in_hot_standby", "off"),
            ("integer_datetimes", "on"),
            ("IntervalStyle", "postgres"),
            ("is_superuser", "on"),
            ("server_encoding", "UTF8"),
            ("server_version", coord::SERVER_VERSION),
            ("standard_conforming_strings", "on"),
            ("TimeZone", "UTC"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let metadata = client.metadata();
        parameters.insert(
            "application_name".into(),
            metadata
                .get(METADATA_APPLICATION_NAME)
                .cloned()
                .unwrap_or_default(),
        );
        parameters.insert(
            "session_authorization".into(),
            metadata
                .get(METADATA_USER)
                .cloned()
                .unwrap_or_else(|| "fluxion".into()),
        );
        Some(parameters)
    }
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
