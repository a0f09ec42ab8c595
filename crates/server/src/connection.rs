//! One client connection: its session, and the simple-query, extended-query and COPY handlers
//! that run statements through the coordinator.

use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use coord::{
    Coordinator, ExecuteResponse, GenericPlan, LiveNotices, Notice, Session, Statement,
    StatementDesc, Subscription,
};
use futures::future::{select, Either};
use futures::{Sink, SinkExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::{
    send_describe_response, send_partial_query_response, ExtendedQueryHandler, SimpleQueryHandler,
};
use pgwire::api::results::{
    DescribePortalResponse, DescribeResponse, DescribeStatementResponse, FieldInfo, Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, Type, DEFAULT_NAME};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::{NoData, ParameterDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Describe, Execute, Parse, ParseComplete, TARGET_TYPE_BYTE_PORTAL,
    TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{CommandComplete, NoticeResponse};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::PgWireBackendMessage;

use crate::backends::{BackendRegistry, Outcome, Registration};
use crate::held_replies::HeldReplies;
use crate::params::{is_binary, parameter_text};
use crate::responses::{to_response, RowOutput};
use crate::rows::{field_infos, parameter_field_of, wire_type};
use crate::simple_query;
use crate::sqlstate::{error_info, to_pgwire};
use crate::subscribe::{stream_subscription, Delivery};
use repr::pg_type::pg_type_of_field;

/// A statement prepared with Parse: the parsed statement, what Describe reports, and the
/// generic plan its executions share.
#[derive(Clone, Debug)]
pub(crate) struct Prepared {
    /// The statement's text, as `pg_stat_activity` shows it while it runs.
    sql: Arc<str>,
    statement: Statement,
    desc: StatementDesc,
    plan: Arc<GenericPlan>,
}

/// The state of one connection, shared by its handlers.
pub(crate) struct Connection {
    coord: Arc<Coordinator>,
    backends: Arc<BackendRegistry>,
    session: Arc<tokio::sync::Mutex<Option<Session>>>,
    copy_data: Mutex<Vec<u8>>,
    parser: Arc<StatementParser>,
}

impl Connection {
    /// Fails the session's transaction block, if it is in one, as an error in it does.
    pub async fn fail_transaction(&self) {
        if let Some(session) = self.session.lock().await.as_mut() {
            session.fail_transaction();
        }
    }

    /// Ends the connection's session: a transaction block it left open is rolled back.
    pub async fn close(&self) {
        let session = self.session.lock().await.take();
        if let Some(session) = session {
            self.coord.end_session(session).await;
        }
    }

    pub fn new(coord: Arc<Coordinator>, backends: Arc<BackendRegistry>) -> Self {
        let session = Arc::new(tokio::sync::Mutex::new(None));
        Self {
            parser: Arc::new(StatementParser {
                coord: coord.clone(),
                backends: backends.clone(),
                session: session.clone(),
            }),
            coord,
            backends,
            session,
            copy_data: Mutex::new(Vec::new()),
        }
    }
}

/// Locks the session, creating it for the connected user on first use.
async fn lock_session<'a, C: ClientInfo>(
    coord: &Coordinator,
    backends: &Arc<BackendRegistry>,
    session: &'a tokio::sync::Mutex<Option<Session>>,
    client: &C,
) -> tokio::sync::MappedMutexGuard<'a, Session> {
    let mut guard = session.lock().await;
    if guard.is_none() {
        let backend_pid = client.pid_and_secret_key().0;
        let mut settings = crate::startup::startup_settings(client);
        settings.push((
            "max_connections".into(),
            backends.max_connections().to_string(),
        ));
        *guard = Some(coord.new_session(
            &crate::startup::user_of(client),
            backend_pid,
            &settings,
            backends.clone(),
        ));
    }
    tokio::sync::MutexGuard::map(guard, |s| {
        s.as_mut().expect("invariant: session created above")
    })
}

/// Sends what the session has for the client besides results: notices (warnings such as a
/// second BEGIN) and ParameterStatus for reported settings that changed.
async fn send_session_messages<C>(client: &mut C, session: &mut Session) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for (name, value) in session.take_reported_settings() {
        client
            .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                name, value,
            )))
            .await?;
    }
    for notice in session.take_notices() {
        client.feed(notice_message(notice)).await?;
    }
    Ok(())
}

fn notice_message(notice: Notice) -> PgWireBackendMessage {
    let info = ErrorInfo::new(notice.severity.into(), notice.code.into(), notice.message);
    PgWireBackendMessage::NoticeResponse(NoticeResponse::from(info))
}

/// Runs `work` (a statement of the session `notices` belongs to), sending the client each
/// notice the statement has for it while it runs, at once.
async fn with_live_notices<C, T>(
    client: &mut C,
    notices: &LiveNotices,
    work: impl Future<Output = T>,
) -> PgWireResult<T>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    tokio::pin!(work);
    loop {
        tokio::select! {
            output = &mut work => return Ok(output),
            Some(notice) = notices.next() => client.send(notice_message(notice)).await?,
        }
    }
}

/// How the statements of one Query message ended, besides the responses sent.
#[derive(Default)]
struct Answered {
    /// Whether a COPY FROM STDIN started (the COPY handlers finish the message's flow).
    copy_started: bool,
    /// A subscription the last statement run started, to stream now.
    subscription: Option<(Subscription, Delivery)>,
}

/// What running one statement of a Query message gave.
enum Step {
    /// Its response.
    Respond(Response),
    /// The subscription it started.
    Subscribe(Subscription, Delivery),
    /// Its error, which ends the message's statements.
    Failed(Response),
}

/// How a subscribing response is delivered, if `response` is one; otherwise the response.
fn subscription_of(
    response: ExecuteResponse,
    send_description: bool,
    format: Option<&Format>,
    zone: &str,
) -> Result<(Subscription, Delivery), ExecuteResponse> {
    let zone = zone.to_string();
    match response {
        ExecuteResponse::Subscribe(subscription) => Ok((
            subscription,
            Delivery::Rows {
                send_description,
                format: format.cloned(),
                zone,
            },
        )),
        ExecuteResponse::CopySubscribe {
            subscription,
            options,
        } => Ok((subscription, Delivery::Copy { options, zone })),
        other => Err(other),
    }
}

/// The session's `TimeZone`, in which results show `timestamptz` values.
fn display_zone(session: &Session) -> String {
    session.variable("timezone").unwrap_or("UTC").to_string()
}

/// Forgets the prepared statements a DEALLOCATE names.
fn deallocate<C: ClientPortalStore>(client: &C, response: &ExecuteResponse)
where
    C::PortalStore: PortalStore,
{
    if let ExecuteResponse::Deallocate { name: Some(name) } = response {
        client.portal_store().rm_statement(name);
    }
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let backend = crate::startup::registration_of(client);
        if let Some(registration) = &backend {
            registration.backend().statement_started(&query.query);
        }
        let answered = self.answer_query(client, &query.query).await;
        let status = simple_query::wire_status(self.finish_statement(backend.as_deref()).await);
        let copy_started = answered?;
        simple_query::finish_query(client, copy_started, status).await
    }

    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (statements, truncations) =
            coord::parse_noting_truncations(query).map_err(|e| to_pgwire(&e.into()))?;
        if statements.is_empty() {
            return Ok(vec![Response::EmptyQuery]);
        }
        let mut session = lock_session(&self.coord, &self.backends, &self.session, client).await;
        session.notice_truncations(&truncations);
        let mut responses = Vec::with_capacity(statements.len());
        for statement in statements {
            match self.run_statement(client, &mut session, statement).await? {
                Step::Respond(response) => responses.push(response),
                Step::Failed(error) => {
                    responses.push(error);
                    break;
                }
                Step::Subscribe(..) => {
                    responses.push(Response::Error(Box::new(error_info(
                        &coord::CoordError::Sql(coord::SqlError::Unsupported(
                            "SUBSCRIBE outside a streaming query".into(),
                        )),
                    ))));
                    break;
                }
            }
        }
        Ok(responses)
    }
}

impl Connection {
    /// Runs the statements of one Query message and sends their responses (and the rows of
    /// a subscription one starts, until the client cancels it); whether a COPY FROM STDIN
    /// started. The statements stop at the client's cancel request (57014), which fails the
    /// transaction block they are in.
    async fn answer_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<bool>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let cancel = simple_query::cancel_receiver(client).await;
        let (answered, cancel) = {
            let running = Box::pin(self.run_statements(client, query));
            match cancel {
                Some(cancel) => match select(running, cancel).await {
                    Either::Left((answered, cancel)) => (answered?, Some(cancel)),
                    Either::Right((_, running)) => {
                        // The statement lets go of the session as it stops.
                        drop(running);
                        self.fail_transaction().await;
                        self.backends.count_statement(Outcome::Canceled);
                        return Err(PgWireError::QueryCanceled);
                    }
                },
                None => (running.await?, None),
            }
        };
        if let Some((subscription, delivery)) = answered.subscription {
            stream_subscription(client, subscription, delivery, cancel).await?;
        }
        Ok(answered.copy_started)
    }

    /// The session's transaction status after a statement, noted in the connection's
    /// backend (`pg_stat_activity`, and the idle timeout that now applies) if it has one.
    async fn finish_statement(
        &self,
        registration: Option<&Registration>,
    ) -> coord::TransactionStatus {
        let session = self.session.lock().await;
        let Some(session) = session.as_ref() else {
            return coord::TransactionStatus::Idle;
        };
        let status = session.transaction_status();
        if let Some(registration) = registration {
            registration.backend().statement_finished(
                status,
                session.variable("application_name").map(str::to_string),
                session.idle_timeout(),
            );
        }
        status
    }

    /// Runs the statements of one Query message, sending each one's response (its rows as
    /// they are computed) before the next runs, stopping after an error (also one that ends
    /// a statement's rows) or after a statement that starts a subscription (which runs
    /// until the client stops it).
    async fn run_statements<C>(&self, client: &mut C, query: &str) -> PgWireResult<Answered>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (statements, truncations) =
            coord::parse_noting_truncations(query).map_err(|e| to_pgwire(&e.into()))?;
        if statements.is_empty() {
            simple_query::send_response(client, Response::EmptyQuery).await?;
            return Ok(Answered::default());
        }
        let mut session = lock_session(&self.coord, &self.backends, &self.session, client).await;
        session.notice_truncations(&truncations);
        for statement in statements {
            let response = match self.run_statement(client, &mut session, statement).await? {
                Step::Respond(response) => response,
                Step::Subscribe(subscription, delivery) => {
                    self.backends.count_statement(Outcome::Succeeded);
                    return Ok(Answered {
                        copy_started: false,
                        subscription: Some((subscription, delivery)),
                    });
                }
                Step::Failed(error) => {
                    if let Response::Error(info) = &error {
                        self.backends.count_statement(Outcome::of_code(&info.code));
                    }
                    simple_query::send_response(client, error).await?;
                    break;
                }
            };
            match simple_query::send_response(client, response).await {
                // A COPY FROM STDIN is counted when its data ends (see the COPY handlers).
                Ok(true) => {
                    return Ok(Answered {
                        copy_started: true,
                        subscription: None,
                    })
                }
                Ok(false) => self.backends.count_statement(Outcome::Succeeded),
                // An error that ended the rows: the client has some of them already.
                Err(PgWireError::UserError(error)) => {
                    self.backends.count_statement(Outcome::of_code(&error.code));
                    session.fail_transaction();
                    simple_query::send_response(client, Response::Error(error)).await?;
                    break;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(Answered::default())
    }

    /// Runs one statement of a Query message in `session`, and sends the messages the
    /// session has for the client besides results.
    async fn run_statement<C>(
        &self,
        client: &mut C,
        session: &mut Session,
        statement: Statement,
    ) -> PgWireResult<Step>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let effect = statement.transaction_effect();
        let notices = session.live_notices();
        let result =
            with_live_notices(client, &notices, self.coord.execute(session, statement)).await?;
        send_session_messages(client, session).await?;
        let response = match result {
            Ok(response) => response,
            Err(error) => return Ok(Step::Failed(Response::Error(Box::new(error_info(&error))))),
        };
        deallocate(client, &response);
        let zone = display_zone(session);
        Ok(match subscription_of(response, true, None, &zone) {
            Ok((subscription, delivery)) => Step::Subscribe(subscription, delivery),
            Err(response) => Step::Respond(to_response(
                response,
                effect,
                RowOutput::new(client, None, &zone),
            )?),
        })
    }

    /// Executes a portal whose statement starts a subscription, streaming its rows until
    /// the client cancels or the subscription ends.
    async fn execute_streamed<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let cancel = simple_query::cancel_receiver(client).await;
        let statement = portal.statement.statement.statement.clone();
        let (result, zone) = {
            let mut session =
                lock_session(&self.coord, &self.backends, &self.session, client).await;
            let result = self.coord.execute(&mut session, statement).await;
            send_session_messages(client, &mut session).await?;
            (result, display_zone(&session))
        };
        let response = result.map_err(|e| to_pgwire(&e))?;
        match subscription_of(response, false, Some(&portal.result_column_format), &zone) {
            Ok((subscription, delivery)) => {
                stream_subscription(client, subscription, delivery, cancel).await
            }
            Err(_) => Err(to_pgwire(&coord::CoordError::Internal(
                "a SUBSCRIBE statement started no subscription".into(),
            ))),
        }
    }
}

impl Connection {
    /// Executes a portal whose statement is a query: sends at most `max_rows` of its rows
    /// (all of them for 0) as they are computed, and leaves the rest in the portal for the
    /// next Execute; or all of them as COPY data (`COPY … TO STDOUT`). (pgwire's own flow
    /// gathers all the rows of an Execute before it sends the first, and ends COPY data that
    /// fails with a message only clients send.)
    async fn execute_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        max_rows: usize,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let state = portal.state();
        if matches!(*state.lock().await, PortalExecutionState::Initial) {
            let cancel = simple_query::cancel_receiver(client).await;
            let running = Box::pin(ExtendedQueryHandler::do_query(
                self, client, portal, max_rows,
            ));
            let response = match cancel {
                Some(cancel) => match select(running, cancel).await {
                    Either::Left((response, _)) => response,
                    Either::Right(_) => Err(PgWireError::QueryCanceled),
                },
                None => running.await,
            }?;
            match response {
                Response::Query(rows) => portal.start(rows).await,
                Response::CopyOut(copy) => {
                    crate::copy_out::send_copy_out(client, copy).await?;
                    client.set_state(PgWireConnectionState::ReadyForQuery);
                    return Ok(());
                }
                _ => {
                    return Err(to_pgwire(&coord::CoordError::Internal(
                        "a query answered without rows".into(),
                    )))
                }
            }
        }
        let mut state = state.lock().await;
        match &mut *state {
            PortalExecutionState::Suspended(rows) => {
                if !send_partial_query_response(client, rows, max_rows).await? {
                    *state = PortalExecutionState::Finished;
                }
            }
            PortalExecutionState::Finished | PortalExecutionState::Initial => {
                let done: CommandComplete = Tag::new("SELECT").with_rows(0).into();
                client
                    .feed(PgWireBackendMessage::CommandComplete(done))
                    .await?;
            }
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        Ok(())
    }
}

/// Parses and describes statements for the extended protocol.
pub(crate) struct StatementParser {
    coord: Arc<Coordinator>,
    backends: Arc<BackendRegistry>,
    session: Arc<tokio::sync::Mutex<Option<Session>>>,
}

#[async_trait]
impl QueryParser for StatementParser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let (mut statements, truncations) =
            coord::parse_noting_truncations(sql).map_err(|e| to_pgwire(&e.into()))?;
        if !truncations.is_empty() {
            // Sent with the statement's next messages: a Parse answers nothing else.
            lock_session(&self.coord, &self.backends, &self.session, client)
                .await
                .notice_truncations(&truncations);
        }
        let statement = match statements.len() {
            0 => return Ok(None),
            1 => statements.remove(0),
            _ => {
                return Err(to_pgwire(&coord::CoordError::Sql(coord::SqlError::Syntax(
                    "cannot insert multiple commands into a prepared statement".into(),
                ))))
            }
        };
        let declared: Vec<_> = types
            .iter()
            .map(|t| t.as_ref().and_then(parameter_field_of))
            .collect();
        let mut session = lock_session(&self.coord, &self.backends, &self.session, client).await;
        // An error while parsing fails the transaction block, as one while executing does.
        let desc = match self
            .coord
            .describe(&mut session, &statement, &declared)
            .await
        {
            Ok(desc) => desc,
            Err(e) => {
                session.fail_transaction();
                return Err(to_pgwire(&e));
            }
        };
        Ok(Some(Prepared {
            sql: sql.into(),
            statement,
            desc,
            plan: Arc::default(),
        }))
    }

    fn get_parameter_types(&self, prepared: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(prepared
            .desc
            .parameters
            .iter()
            .map(|f| wire_type(pg_type_of_field(f)))
            .collect())
    }

    fn get_result_schema(
        &self,
        prepared: &Prepared,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(prepared
            .desc
            .columns
            .as_ref()
            .map(|schema| field_infos(schema, format, None))
            .unwrap_or_default())
    }
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Prepared;
    type QueryParser = StatementParser;

    fn query_parser(&self) -> Arc<StatementParser> {
        self.parser.clone()
    }

    /// Stores the statement as pgwire does, holding ParseComplete until Sync.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match StoredStatement::parse(client, &message, self.query_parser()).await? {
            Some(statement) => client.portal_store().put_statement(Arc::new(statement)),
            None => client.portal_store().put_empty_statement(name),
        }
        Ok(client
            .feed(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?)
    }

    /// Binds the portal as pgwire does, holding BindComplete until Sync.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(statement)) => {
                let portal = Portal::try_new(&message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) if message.parameters.is_empty() => {
                let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
                client.portal_store().put_empty_portal(portal_name);
            }
            Some(Entry::Empty) => {
                return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    "ERROR".into(),
                    "08P01".into(),
                    format!(
                        "bind message supplies {} parameters, but prepared statement \
                         \"{statement_name}\" requires 0",
                        message.parameters.len()
                    ),
                ))))
            }
            None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
        }
        Ok(client
            .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?)
    }

    async fn on_execute<C>(&self, client: &mut C, mut message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        message.max_rows = rows_per_execute(message.max_rows);
        let portal_name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(portal_name) {
            Some(Entry::Value(portal)) => Some(portal),
            _ => None,
        };
        let backend = crate::startup::registration_of(client);
        if let (Some(registration), Some(portal)) = (&backend, &portal) {
            registration
                .backend()
                .statement_started(&portal.statement.statement.sql);
        }
        let executed = match portal {
            Some(portal) if portal.statement.statement.statement.is_streamed() => {
                self.execute_streamed(client, &portal).await
            }
            Some(portal)
                if matches!(
                    portal.statement.statement.statement,
                    Statement::Select(_) | Statement::CopyTo(_)
                ) =>
            {
                let max_rows = message.max_rows as usize;
                self.execute_query(&mut HeldReplies::new(client), &portal, max_rows)
                    .await
            }
            _ => {
                self._on_execute(&mut HeldReplies::new(client), message)
                    .await
            }
        };
        // Also an error that ended the rows after the statement ran, or a cancel.
        match &executed {
            // A COPY FROM STDIN is counted when its data ends (see the COPY handlers).
            Ok(()) if matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) => {}
            Ok(()) => self.backends.count_statement(Outcome::Succeeded),
            Err(error) => {
                self.backends.count_statement(Outcome::of_error(error));
                self.fail_transaction().await;
            }
        }
        let status = self.finish_statement(backend.as_deref()).await;
        executed?;
        // The session knows the transaction status (ROLLBACK TO SAVEPOINT recovers a failed
        // block); ReadyForQuery at Sync reports it.
        if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            client.set_transaction_status(simple_query::wire_status(status));
        }
        Ok(())
    }

    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let client = &mut HeldReplies::new(client);
        // A cursor DECLAREd with SQL is a portal too: clients Describe it by name.
        if message.target_type == TARGET_TYPE_BYTE_PORTAL {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            if client.portal_store().get_portal(name).is_none() {
                let cursor = lock_session(&self.coord, &self.backends, &self.session, client)
                    .await
                    .cursor_schema(name);
                if let Some(schema) = cursor {
                    let fields = field_infos(&schema, None, None);
                    return send_describe_response(client, &DescribePortalResponse::new(fields))
                        .await;
                }
            }
        }
        // A statement with parameters but no result columns must answer NoData, not an
        // empty RowDescription.
        if message.target_type == TARGET_TYPE_BYTE_STATEMENT {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            if let Some(Entry::Value(statement)) = client.portal_store().get_statement(name) {
                let described = self.do_describe_statement(client, &statement).await?;
                if described.fields.is_empty() {
                    let oids = described.parameters.iter().map(|t| t.oid()).collect();
                    client
                        .feed(PgWireBackendMessage::ParameterDescription(
                            ParameterDescription::new(oids),
                        ))
                        .await?;
                    return Ok(client
                        .feed(PgWireBackendMessage::NoData(NoData::new()))
                        .await?);
                }
                return send_describe_response(client, &described).await;
            }
        }
        self._on_describe(client, message).await
    }

    async fn do_describe_statement<C>(
        &self,
        _client: &mut C,
        target: &StoredStatement<Prepared>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let parameters = self.parser.get_parameter_types(&target.statement)?;
        let fields = self.parser.get_result_schema(&target.statement, None)?;
        Ok(DescribeStatementResponse::new(parameters, fields))
    }

    async fn do_describe_portal<C>(
        &self,
        _client: &mut C,
        target: &Portal<Prepared>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let fields = self.parser.get_result_schema(
            &target.statement.statement,
            Some(&target.result_column_format),
        )?;
        if fields.is_empty() {
            return Ok(DescribePortalResponse::no_data());
        }
        Ok(DescribePortalResponse::new(fields))
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let prepared = &portal.statement.statement;
        let required = prepared.desc.parameters.len();
        if portal.parameters.len() != required {
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "ERROR".into(),
                "08P01".into(),
                format!(
                    "bind message supplies {} parameters, but prepared statement requires {required}",
                    portal.parameters.len()
                ),
            ))));
        }
        let mut values = Vec::with_capacity(required);
        for (index, field) in prepared.desc.parameters.iter().enumerate() {
            let value = match portal.parameters.get(index).cloned().flatten() {
                None => None,
                Some(bytes) => Some(
                    parameter_text(&bytes, is_binary(&portal.parameter_format, index), field)
                        .map_err(|e| {
                            PgWireError::UserError(Box::new(ErrorInfo::new(
                                "ERROR".into(),
                                "22P02".into(),
                                e,
                            )))
                        })?,
                ),
            };
            values.push((value, field.data_type().clone()));
        }
        let effect = prepared.statement.transaction_effect();
        let mut session = lock_session(&self.coord, &self.backends, &self.session, client).await;
        let notices = session.live_notices();
        let execution =
            self.coord
                .execute_prepared(&mut session, &prepared.statement, &prepared.plan, &values);
        let result = with_live_notices(client, &notices, execution).await?;
        send_session_messages(client, &mut session).await?;
        let zone = display_zone(&session);
        let response = result.map_err(|e| to_pgwire(&e))?;
        deallocate(client, &response);
        to_response(
            response,
            effect,
            RowOutput::new(client, Some(&portal.result_column_format), &zone),
        )
    }
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.copy_data
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(&copy_data.data);
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let data = std::mem::take(&mut *self.copy_data.lock().unwrap_or_else(|p| p.into_inner()));
        let mut session = lock_session(&self.coord, &self.backends, &self.session, client).await;
        let result = self.coord.finish_copy(&mut session, &data).await;
        if result.is_err() {
            session.fail_transaction();
        }
        self.backends.count_statement(match &result {
            Ok(_) => Outcome::Succeeded,
            Err(e) => Outcome::of_code(crate::sqlstate::sqlstate(e)),
        });
        let rows = result.map_err(|e| to_pgwire(&e))?;
        let tag: CommandComplete = Tag::new("COPY").with_rows(rows as usize).into();
        client
            .send(PgWireBackendMessage::CommandComplete(tag))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.copy_data
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let mut session = lock_session(&self.coord, &self.backends, &self.session, client).await;
        session.abandon_copy();
        self.backends.count_statement(Outcome::Canceled);
        PgWireError::UserError(Box::new(ErrorInfo::new(
            "ERROR".into(),
            "57014".into(),
            format!("COPY from stdin failed: {}", fail.message),
        )))
    }
}

/// The most rows one Execute returns before the portal is suspended (the client executes it
/// again for more): pgwire sets aside room for as many rows as the client asks for, so a
/// client's 2147483647 would reserve gigabytes.
const MAX_ROWS_PER_EXECUTE: i32 = 1 << 20;

/// The row limit of an Execute as this server applies it: none (0) for zero or a negative
/// count, as in PostgreSQL, and at most [`MAX_ROWS_PER_EXECUTE`].
fn rows_per_execute(max_rows: i32) -> i32 {
    match max_rows {
        ..=0 => 0,
        rows => rows.min(MAX_ROWS_PER_EXECUTE),
    }
}
