//! The coordinator object and statement dispatch.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use compute::ComputeController;
use datafusion::execution::context::SessionState;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use repr::{GlobalId, Timestamp};

use crate::catalog::{Catalog, CatalogProviderImpl};
use crate::error::CoordError;
use crate::postgres_syntax::{rewrite_postgres_syntax, Target};
use crate::response::ExecuteResponse;
use crate::session::Session;
use crate::table_rows::TableCodecs;
use crate::timestamps::{ReadHolds, TimestampOracle};

/// Where the coordinator keeps its data and how much parallelism it uses.
#[derive(Clone, Debug)]
pub struct CoordConfig {
    /// The data directory (catalog, log and stream logs).
    pub data_dir: PathBuf,
    /// Timely worker threads.
    pub workers: usize,
    /// Rows logged after which the log is compacted into a snapshot.
    pub checkpoint_after_rows: u64,
    /// How long (ms of the timeline) past states stay readable in the arrangements.
    pub retain_history_ms: u64,
}

/// The coordinator. Shared by all sessions.
pub struct Coordinator {
    pub(crate) catalog: Arc<RwLock<Catalog>>,
    pub(crate) durable: storage::Catalog,
    pub(crate) wal: storage::Wal,
    pub(crate) compute: Arc<ComputeController>,
    pub(crate) oracle: TimestampOracle,
    pub(crate) holds: Arc<ReadHolds>,
    pub(crate) base_state: SessionState,
    /// Serializes DDL and commits: one writer at a time decides the next timestamp.
    pub(crate) sequencer: Arc<tokio::sync::Mutex<()>>,
    /// The time each table was last written at (for transaction validation).
    pub(crate) last_write: Mutex<HashMap<GlobalId, Timestamp>>,
    /// Row codecs of the tables, for writing.
    pub(crate) table_codecs: RwLock<HashMap<GlobalId, Arc<TableCodecs>>>,
    /// Rows logged since the last checkpoint.
    pub(crate) rows_since_checkpoint: AtomicU64,
    /// Whether a checkpoint is running.
    pub(crate) checkpointing: AtomicBool,
    /// Rows logged after which a checkpoint starts.
    pub(crate) checkpoint_after_rows: u64,
    /// How long (ms) past states stay readable.
    pub(crate) retain_history_ms: u64,
    /// The sources: their positions, statistics and stop flags.
    pub(crate) sources: Arc<crate::sources::SourceRegistry>,
    /// The streams (append-only sources) and their logs.
    pub(crate) streams: Arc<crate::streams::Streams>,
    /// The durable subscriptions and their logs.
    pub(crate) subscriptions: Arc<crate::durable_subscriptions::DurableSubscriptions>,
    /// The sinks, their logs and their delivery.
    pub(crate) sinks: Arc<crate::sinks::Sinks>,
    /// The next transient dataflow (subscription) number.
    pub(crate) next_transient_id: AtomicU64,
    /// This coordinator, for work that must outlive a cancelled statement.
    this: OnceLock<Weak<Coordinator>>,
}

/// Parses SQL text into statements.
///
/// Literals are normalized to spellings DataFusion's parsers accept (see
/// [`crate::postgres_literals`]).
pub(crate) fn parse(sql: &str) -> Result<Vec<Statement>, CoordError> {
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql)
        .map_err(|e| CoordError::Syntax(e.to_string()))?;
    for statement in &mut statements {
        crate::postgres_literals::normalize_literals(statement);
    }
    Ok(statements)
}

impl Coordinator {
    /// Opens the data directory, rebuilds every object and replays the log.
    pub async fn open(config: CoordConfig) -> Result<Arc<Self>, CoordError> {
        std::fs::create_dir_all(&config.data_dir)
            .map_err(|e| CoordError::Storage(format!("{}: {e}", config.data_dir.display())))?;
        let durable = storage::Catalog::open(&config.data_dir.join("catalog.redb"))?;
        let (wal, records) = storage::Wal::open(&config.data_dir.join("wal"))?;
        let compute = Arc::new(ComputeController::start(config.workers)?);
        let catalog = Arc::new(RwLock::new(Catalog::default()));
        let sources = Arc::new(crate::sources::SourceRegistry::default());
        let subscriptions = Arc::new(crate::durable_subscriptions::DurableSubscriptions::new(
            config.data_dir.join("subscriptions"),
            "subscription",
        ));
        let sinks = Arc::new(crate::sinks::Sinks::new(config.data_dir.join("sinks")));
        let base_state = sql::session::new_state(Arc::new(CatalogProviderImpl::new(
            catalog.clone(),
            compute.clone(),
            sources.clone(),
            subscriptions.clone(),
            sinks.clone(),
        )));
        let floor = records.iter().map(|r| r.time).max().unwrap_or(0);
        let oracle = TimestampOracle::new(floor, durable.timestamp_high_water()?);
        let coordinator = Arc::new(Self {
            catalog,
            durable,
            wal,
            compute,
            oracle,
            holds: Arc::new(ReadHolds::default()),
            base_state,
            sequencer: Arc::new(tokio::sync::Mutex::new(())),
            last_write: Mutex::new(HashMap::new()),
            table_codecs: RwLock::new(HashMap::new()),
            rows_since_checkpoint: AtomicU64::new(0),
            checkpointing: AtomicBool::new(false),
            checkpoint_after_rows: config.checkpoint_after_rows,
            retain_history_ms: config.retain_history_ms,
            sources,
            streams: Arc::new(crate::streams::Streams::new(
                config.data_dir.join("streams"),
            )),
            subscriptions: subscriptions.clone(),
            sinks,
            next_transient_id: AtomicU64::new(0),
            this: OnceLock::new(),
        });
        let _ = coordinator.this.set(Arc::downgrade(&coordinator));
        coordinator.recover(records, floor).await?;
        coordinator.spawn_idle_ticks();
        Ok(coordinator)
    }

    /// The coordinator as an `Arc`.
    pub(crate) fn arc(&self) -> Result<Arc<Coordinator>, CoordError> {
        self.this
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| CoordError::Internal("the coordinator is shutting down".into()))
    }

    /// A new session for `user`, whose connection the client knows as `backend_pid`, with
    /// the settings the client's startup message asked for.
    pub fn new_session(
        &self,
        user: &str,
        backend_pid: i32,
        startup: &[(String, String)],
    ) -> Session {
        Session::new(user, backend_pid, startup)
    }

    /// Stops the sources and the compute workers.
    pub fn shutdown(&self) {
        self.sources.stop_all();
        self.compute.shutdown();
    }

    /// Executes one statement.
    pub async fn execute(
        &self,
        session: &mut Session,
        statement: crate::Statement,
    ) -> Result<ExecuteResponse, CoordError> {
        session.check_not_failed(&statement)?;
        let result = match statement {
            crate::Statement::Sql(statement) => {
                let statement = self.prepare(session, statement);
                self.dispatch(session, statement).await
            }
            crate::Statement::CreateSource(create) => self.create_source(session, create).await,
            crate::Statement::DropSource(drop) => self.drop_source(session, drop).await,
            crate::Statement::ShowCreateSource(name) => {
                self.show_create(session, &name, Some(storage::ItemKind::Source))
            }
            crate::Statement::CreateTableFromSource(create) => {
                self.create_table_from_source(session, create).await
            }
            crate::Statement::Subscribe(subscribe) => self
                .subscribe(session, &subscribe)
                .await
                .map(ExecuteResponse::Subscribe),
            crate::Statement::CopySubscribe { subscribe, options } => {
                let options = crate::copy::CopyOptions::from_pairs(&options)?;
                let subscription = self.subscribe(session, &subscribe).await?;
                Ok(ExecuteResponse::CopySubscribe {
                    subscription,
                    options,
                })
            }
            crate::Statement::CreateSubscription(create) => {
                self.create_subscription(session, create).await
            }
            crate::Statement::CreateSink(create) => self.create_sink(session, create).await,
            crate::Statement::DropSink { names, if_exists } => {
                self.drop_items(session, storage::ItemKind::Sink, if_exists, names, false)
                    .await
            }
            crate::Statement::DropSubscription { names, if_exists } => {
                self.drop_items(
                    session,
                    storage::ItemKind::Subscription,
                    if_exists,
                    names,
                    false,
                )
                .await
            }
            crate::Statement::DeclareSubscribe { name, subscribe } => {
                self.declare_subscription(session, &name, &subscribe).await
            }
            crate::Statement::FetchWithTimeout { fetch, timeout } => match *fetch {
                Statement::Fetch {
                    name, direction, ..
                } => self.fetch(session, &name, &direction, Some(timeout)).await,
                other => Err(CoordError::Internal(format!("{other} is not a FETCH"))),
            },
        };
        if result.is_err() {
            session.fail_transaction();
        }
        result
    }

    async fn dispatch(
        &self,
        session: &mut Session,
        statement: Statement,
    ) -> Result<ExecuteResponse, CoordError> {
        crate::statement_checks::reject_bag_set_operations(&statement)?;
        match statement {
            Statement::Query(_) => self.select(session, statement).await,
            Statement::Insert(insert) => self.insert(session, insert).await,
            Statement::Update(update) => self.update(session, update).await,
            Statement::Delete(delete) => self.delete(session, delete).await,
            Statement::Copy { to: true, .. } => self.copy_to(session, statement).await,
            Statement::Copy { .. } => self.start_copy(session, statement),
            Statement::CreateTable(create) => self.create_table(session, create).await,
            Statement::CreateView(create) => self.create_view(session, create).await,
            Statement::CreateIndex(create) => self.create_index(session, create).await,
            Statement::CreateSchema {
                schema_name,
                if_not_exists,
                ..
            } => {
                self.create_schema(session, schema_name, if_not_exists)
                    .await
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => {
                self.drop_objects(session, object_type, if_exists, names, cascade)
                    .await
            }
            Statement::StartTransaction { .. } => Ok(self.begin(session)),
            Statement::Commit { .. } => self.commit(session).await,
            Statement::Rollback {
                savepoint: None, ..
            } => Ok(self.rollback(session)),
            Statement::Rollback {
                savepoint: Some(name),
                ..
            } => self.rollback_to_savepoint(session, &name),
            Statement::Savepoint { name } => self.savepoint(session, &name),
            Statement::ReleaseSavepoint { name } => self.release_savepoint(session, &name),
            Statement::Declare { stmts } => self.declare(session, stmts).await,
            Statement::Fetch {
                name, direction, ..
            } => self.fetch(session, &name, &direction, None).await,
            Statement::Close { cursor } => self.close_cursor(session, cursor),
            Statement::Deallocate { name, .. } => Ok(ExecuteResponse::Deallocate {
                name: (!name.value.eq_ignore_ascii_case("all") || name.quote_style.is_some())
                    .then(|| name.value.clone()),
            }),
            Statement::Explain { statement, .. } => self.explain(session, *statement).await,
            Statement::Comment {
                object_type,
                object_name,
                comment,
                ..
            } => {
                self.comment_on(session, object_type, object_name, comment)
                    .await
            }
            other => self.show_or_set(session, other).await,
        }
    }

    /// Readies a statement for planning: resolves its relation names for the session's search
    /// path and rewrites PostgreSQL syntax DataFusion does not plan.
    pub(crate) fn prepare(&self, session: &Session, mut statement: Statement) -> Statement {
        self.qualify_statement(session, &mut statement);
        let target = match statement {
            Statement::CreateView(_) => Target::View,
            _ => Target::Read,
        };
        let aggregates = self.base_state.aggregate_functions();
        let windows = self.base_state.window_functions();
        let is_aggregate = |name: &str| {
            aggregates.contains_key(name)
                || windows.contains_key(name)
                || name == crate::pg_functions::SINGLE_VALUE
        };
        rewrite_postgres_syntax(&mut statement, target, &is_aggregate);
        statement
    }
}
