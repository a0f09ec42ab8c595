//! Connection startup: authentication as the access rules ask for it ([`crate::access_rules`],
//! [`crate::authentication`]), PostgreSQL's checks of the role and the database, the
//! ParameterStatus values PostgreSQL 15 sends, and BackendKeyData so that cancel requests work.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use coord::Coordinator;
use futures::Sink;
use pgwire::api::auth::driver::AuthOutcome;
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, AuthDriver, ServerParameterProvider,
    StartupHandler,
};
use pgwire::api::{
    ClientInfo, PidSecretKeyGenerator, RandomPidSecretKeyGenerator, METADATA_DATABASE,
    METADATA_USER,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::{Authentication, SecretKey};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::access_rules::{AuthMethod, ConnectionFacts};
use crate::authentication::PasswordMethods;
use crate::backends::{Admission, BackendRegistry, BackendStart, Registration};
use crate::Security;

/// The ParameterStatus values of a new session, as PostgreSQL 15 reports them.
pub(crate) struct ServerParameters {
    coord: Arc<Coordinator>,
}

impl ServerParameterProvider for ServerParameters {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<HashMap<String, String>> {
        Some(
            self.coord
                .startup_parameter_status(&user_of(client), &startup_settings(client))
                .into_iter()
                .collect(),
        )
    }
}

/// The pid and secret key a backend was registered with before its startup completed;
/// pgwire's driver asks for them when it sends BackendKeyData, and gets those.
#[derive(Debug, Default)]
struct KeysAssignedAtRegistration;

impl PidSecretKeyGenerator for KeysAssignedAtRegistration {
    fn generate(&self, client: &dyn ClientInfo) -> (i32, SecretKey) {
        client.pid_and_secret_key()
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

/// Runs each client's startup: admits it among the `max_connections`, picks its
/// authentication method by the access rules, asks for its password if the method does, then
/// lets it in as PostgreSQL does (the role exists and may log in, below its connection limit,
/// into the one database) and registers its backend.
pub(crate) struct Startup {
    driver: AuthDriver<ServerParameters>,
    /// Hands out each backend's pid and secret key (BackendKeyData).
    keys: RandomPidSecretKeyGenerator,
    backends: Arc<BackendRegistry>,
    coord: Arc<Coordinator>,
    security: Security,
    passwords: PasswordMethods,
}

/// A client's place among the `max_connections` while it authenticates.
struct PendingAdmission(Mutex<Option<Admission>>);

impl Startup {
    pub fn new(
        backends: Arc<BackendRegistry>,
        coord: Arc<Coordinator>,
        security: Security,
        passwords: PasswordMethods,
    ) -> Self {
        Self {
            driver: AuthDriver::new(ServerParameters {
                coord: coord.clone(),
            })
            .with_pid_secret_key_generator(Arc::new(KeysAssignedAtRegistration)),
            keys: RandomPidSecretKeyGenerator::default(),
            backends,
            coord,
            security,
            passwords,
        }
    }

    /// Admits the client of a startup message and begins its authentication.
    async fn begin<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(admission) = self.backends.admit() else {
            return Err(fatal("53300", "sorry, too many clients already"));
        };
        let Some(user) = client.metadata().get(METADATA_USER).cloned() else {
            return Err(fatal(
                "28000",
                "no PostgreSQL user name specified in startup packet",
            ));
        };
        let database = database_of(client);
        let facts = ConnectionFacts {
            address: client.socket_addr().ip(),
            user: &user,
            database: &database,
            tls: client.is_secure(),
        };
        let method = self.security.rules().method_for(&facts);
        let encryption = if facts.tls {
            "SSL encryption"
        } else {
            "no encryption"
        };
        let connection = format!(
            "host \"{}\", user \"{user}\", database \"{database}\", {encryption}",
            facts.address
        );
        let method = match method {
            None => {
                return Err(fatal(
                    "28000",
                    format!("no pg_hba.conf entry for {connection}"),
                ))
            }
            Some(AuthMethod::Reject) => {
                return Err(fatal(
                    "28000",
                    format!("pg_hba.conf rejects connection for {connection}"),
                ))
            }
            Some(method) => method,
        };
        let Some(mechanism) = self.passwords.mechanism(method, facts.tls) else {
            return self.admit(client, admission, None).await;
        };
        client
            .session_extensions()
            .insert(PendingAdmission(Mutex::new(Some(admission))));
        match self.driver.begin_authentication(client, mechanism).await {
            Ok(AuthOutcome::InProgress) => Ok(()),
            Ok(AuthOutcome::Authenticated { final_message, .. }) => {
                self.authenticated(client, final_message).await
            }
            Err(error) => Err(authentication_error(error, &user)),
        }
    }

    /// A client that proved its password: checks the password is still valid, then lets it in.
    async fn authenticated<C>(
        &self,
        client: &mut C,
        final_message: Option<Authentication>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let user = user_of(client);
        let expired = self
            .coord
            .login_role(&user)
            .is_some_and(|role| !role.password_valid_at(now_micros()));
        if expired {
            return Err(password_failed(&user));
        }
        let admission = client
            .session_extensions()
            .get::<PendingAdmission>()
            .and_then(|pending| pending.0.lock().unwrap_or_else(|p| p.into_inner()).take());
        let Some(admission) = admission else {
            return Err(PgWireError::NoAuthenticationInProgress);
        };
        self.admit(client, admission, final_message).await
    }

    /// Lets an authenticated client in, as PostgreSQL decides it: the role exists and may log
    /// in, is below its connection limit, and the database exists; then completes the
    /// startup and registers the client's backend.
    async fn admit<C>(
        &self,
        client: &mut C,
        admission: Admission,
        final_message: Option<Authentication>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let user = user_of(client);
        let Some(role) = self.coord.login_role(&user) else {
            return Err(fatal("28000", format!("role \"{user}\" does not exist")));
        };
        if !role.can_login {
            return Err(fatal(
                "28000",
                format!("role \"{user}\" is not permitted to log in"),
            ));
        }
        // Registered (and counted against the role's limit) before the client hears it is
        // in, so its next login already counts it; a refusal below unregisters it.
        let (pid, secret_key) = self.keys.generate(client);
        client.set_pid_and_secret_key(pid, secret_key.clone());
        let start = BackendStart {
            pid,
            secret_key: secret_key.to_bytes(),
            user: user.clone(),
            application_name: startup_settings(client)
                .into_iter()
                .rfind(|(name, _)| name == "application_name")
                .map(|(_, value)| value)
                .unwrap_or_default(),
            client: client.socket_addr(),
        };
        let role_limit = usize::try_from(role.connection_limit).ok();
        let Some(registration) = self.backends.register(admission, start, role_limit) else {
            return Err(fatal(
                "53300",
                format!("too many connections for role \"{user}\""),
            ));
        };
        let database = database_of(client);
        if !self.coord.database_exists(&database) {
            return Err(fatal(
                "3D000",
                format!("database \"{database}\" does not exist"),
            ));
        }
        self.driver
            .complete_authentication(client, final_message)
            .await?;
        // pgwire's extended-query handlers cancel through this handle.
        client
            .session_extensions()
            .insert(registration.backend().statement_handle().clone());
        client.session_extensions().insert(registration);
        Ok(())
    }
}

/// The backend registered for `client` at its startup, if it completed one.
pub(crate) fn registration_of<C: ClientInfo>(client: &C) -> Option<Arc<Registration>> {
    client.session_extensions().get::<Registration>()
}

/// The database a client asked for: the user's name if it named none, as in PostgreSQL.
fn database_of<C: ClientInfo>(client: &C) -> String {
    let metadata = client.metadata();
    metadata
        .get(METADATA_DATABASE)
        .filter(|database| !database.is_empty())
        .or_else(|| metadata.get(METADATA_USER))
        .cloned()
        .unwrap_or_default()
}

/// A FATAL error that ends the startup.
fn fatal(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".into(),
        code.into(),
        message.into(),
    )))
}

fn password_failed(user: &str) -> PgWireError {
    fatal(
        "28P01",
        format!("password authentication failed for user \"{user}\""),
    )
}

/// A failed password exchange, reported as PostgreSQL reports it: a wrong password names
/// the role the client connected as (SCRAM's own message carries no user name).
fn authentication_error(error: PgWireError, user: &str) -> PgWireError {
    match error {
        PgWireError::InvalidPassword(_) => password_failed(user),
        other => other,
    }
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX)
        })
}

#[async_trait]
impl StartupHandler for Startup {
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
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                self.begin(client).await
            }
            PgWireFrontendMessage::PasswordMessageFamily(message) => {
                match self.driver.advance_authentication(client, message).await {
                    Ok(AuthOutcome::InProgress) => Ok(()),
                    Ok(AuthOutcome::Authenticated { final_message, .. }) => {
                        self.authenticated(client, final_message).await
                    }
                    Err(error) => Err(authentication_error(error, &user_of(client))),
                }
            }
            _ => Ok(()),
        }
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
