//! The coordinator object and statement dispatch.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use compute::ComputeController;
use datafusion::arrow::datatypes::DataType;
use datafusion::execution::context::SessionState;
use repr::{GlobalId, Timestamp};
use sql::{ObjectKind, PlanContext, Statement};

use crate::catalog::{Catalog, CatalogProviderImpl};
use crate::commit::CommitEffects;
use crate::error::CoordError;
use crate::generic_plans::GenericPlan;
use crate::hydration::Hydrations;
use crate::in_flight::InFlightCommits;
use crate::query_memory::QueryMemoryLimit;
use crate::response::ExecuteResponse;
use crate::roles::Roles;
use crate::running_queries::RunningQueries;
use crate::session::Session;
use crate::system_status::RunningSystem;
use crate::table_rows::TableCodecs;
use crate::table_watermarks::TableWatermarks;
use crate::timeouts::{self, STATEMENT_TIMEOUT};
use crate::timestamps::{ReadHolds, TimestampOracle};
use crate::view_memory::ViewBudgets;
use crate::write::{InsertRows, RowSearch, WriteStatement};
use crate::write_conflicts::RecentWrites;

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
    /// The most memory one query may use, in bytes (see `query_memory`).
    pub max_query_memory: usize,
    /// The memory budget of a materialized view created without its own, in bytes (see
    /// `view_memory`).
    pub max_view_memory: usize,
    /// The most queries computing at once (see `running_queries`).
    pub max_running_queries: usize,
    /// Whether clients may connect with TLS (`SHOW ssl`).
    pub ssl: bool,
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
    /// Commits ordered but not yet visible (group commit).
    pub(crate) in_flight: InFlightCommits<CommitEffects>,
    /// The time each table was last written at (for transaction validation).
    pub(crate) last_write: Mutex<HashMap<GlobalId, Timestamp>>,
    /// The keys the latest commits wrote (for writes that read without the sequencer).
    pub(crate) recent_writes: RecentWrites,
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
    pub(crate) sources: Arc<pipelines::SourceRegistry>,
    /// The watermarks of the tables that declare one.
    pub(crate) table_watermarks: Arc<TableWatermarks>,
    /// The streams (append-only sources) and their logs.
    pub(crate) streams: Arc<pipelines::Streams>,
    /// The durable subscriptions and their logs.
    pub(crate) subscriptions: Arc<pipelines::DurableSubscriptions>,
    /// The sinks, their logs and their delivery.
    pub(crate) sinks: Arc<pipelines::Sinks>,
    /// The memory budget of every materialized view.
    pub(crate) view_budgets: Arc<ViewBudgets>,
    /// The dataflows being built, and how far each has got.
    pub(crate) hydrations: Arc<Hydrations>,
    /// The roles.
    pub(crate) roles: Roles,
    /// Whether clients may connect with TLS.
    pub(crate) ssl: bool,
    /// The next transient dataflow (subscription) number.
    pub(crate) next_transient_id: AtomicU64,
    /// The next number naming a transaction block's definitions in the durable catalog.
    pub(crate) next_ddl_block: AtomicU64,
    /// This coordinator, for work that must outlive a cancelled statement.
    this: OnceLock<Weak<Coordinator>>,
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
        let sources = Arc::new(pipelines::SourceRegistry::default());
        let table_watermarks = Arc::new(TableWatermarks::default());
        let subscriptions = Arc::new(pipelines::DurableSubscriptions::new(
            config.data_dir.join("subscriptions"),
            "subscription",
        ));
        let sinks = Arc::new(pipelines::Sinks::new(config.data_dir.join("sinks")));
        let roles = Roles::load(&durable)?;
        let view_budgets = Arc::new(ViewBudgets::new(config.max_view_memory));
        let hydrations = Arc::new(Hydrations::default());
        let mut base_state = sql::session::new_state(Arc::new(CatalogProviderImpl::new(
            catalog.clone(),
            roles.clone(),
            RunningSystem {
                catalog: catalog.clone(),
                compute: compute.clone(),
                sources: sources.clone(),
                table_watermarks: table_watermarks.clone(),
                subscriptions: subscriptions.clone(),
                sinks: sinks.clone(),
                view_budgets: view_budgets.clone(),
                hydrations: hydrations.clone(),
            },
        )));
        base_state
            .config_mut()
            .set_extension(Arc::new(QueryMemoryLimit(config.max_query_memory)));
        base_state
            .config_mut()
            .set_extension(Arc::new(RunningQueries::new(config.max_running_queries)));
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
            in_flight: InFlightCommits::new(floor),
            last_write: Mutex::new(HashMap::new()),
            recent_writes: RecentWrites::new(floor),
            table_codecs: RwLock::new(HashMap::new()),
            rows_since_checkpoint: AtomicU64::new(0),
            checkpointing: AtomicBool::new(false),
            checkpoint_after_rows: config.checkpoint_after_rows,
            retain_history_ms: config.retain_history_ms,
            sources,
            table_watermarks,
            streams: Arc::new(pipelines::Streams::new(config.data_dir.join("streams"))),
            subscriptions: subscriptions.clone(),
            sinks,
            view_budgets,
            hydrations,
            roles,
            ssl: config.ssl,
            next_transient_id: AtomicU64::new(0),
            next_ddl_block: AtomicU64::new(1),
            this: OnceLock::new(),
        });
        let _ = coordinator.this.set(Arc::downgrade(&coordinator));
        coordinator.spawn_memory_watch();
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
    /// the settings the client's startup message asked for, among the server's `backends`.
    pub fn new_session(
        &self,
        user: &str,
        backend_pid: i32,
        startup: &[(String, String)],
        backends: Arc<dyn system_catalog::Backends>,
    ) -> Session {
        let mut session = self.session_of(user, backend_pid, startup);
        session.backends = Some(backends);
        session
    }

    /// The ParameterStatus values a new session of `user` reports, given the settings its
    /// client's startup message asked for.
    pub fn startup_parameter_status(
        &self,
        user: &str,
        startup: &[(String, String)],
    ) -> Vec<(String, String)> {
        self.session_of(user, 0, startup).reported_settings()
    }

    /// A session of `user`: `is_superuser` as its role is, `ssl` as the server is.
    fn session_of(&self, user: &str, backend_pid: i32, startup: &[(String, String)]) -> Session {
        let mut session = Session::new(user, backend_pid, startup);
        let on_or_off = |on: bool| if on { "on" } else { "off" }.to_string();
        let superuser = self.roles.get(user).is_some_and(|role| role.superuser);
        session.set_variable("is_superuser", on_or_off(superuser));
        session.set_variable("ssl", on_or_off(self.ssl));
        // The client hears of these in the startup's ParameterStatus messages.
        session.take_reported_settings();
        session
    }

    /// What the write-ahead log has measured of group commit (group sizes, time to durable)
    /// since the server started.
    pub fn commit_stats(&self) -> storage::WalStats {
        self.wal.stats()
    }

    /// Stops the sources and the compute workers.
    pub fn shutdown(&self) {
        self.sources.stop_all();
        self.compute.shutdown();
    }

    /// Executes one statement; a query or a write that runs longer than the session's
    /// `statement_timeout` is cancelled (57014).
    pub async fn execute(
        &self,
        session: &mut Session,
        statement: Statement,
    ) -> Result<ExecuteResponse, CoordError> {
        self.execute_guarded(session, Execution::Statement(Box::new(statement)))
            .await
    }

    /// Executes prepared `statement` with parameter `values` (text, `None` for NULL, with
    /// the types the statement was described with), through its generic `plan` where it
    /// has one (see [`crate::generic_plans`]), as [`Self::execute`] does otherwise.
    pub async fn execute_prepared(
        &self,
        session: &mut Session,
        statement: &Statement,
        plan: &GenericPlan,
        values: &[(Option<String>, DataType)],
    ) -> Result<ExecuteResponse, CoordError> {
        let execution = Execution::Prepared {
            statement,
            plan,
            values,
        };
        self.execute_guarded(session, execution).await
    }

    /// Runs `execution` unless the session's transaction failed, under the session's
    /// `statement_timeout` and `lock_timeout`, failing the transaction if it fails.
    async fn execute_guarded(
        &self,
        session: &mut Session,
        execution: Execution<'_>,
    ) -> Result<ExecuteResponse, CoordError> {
        let statement = execution.statement();
        session.check_not_failed(statement)?;
        if let Err(denied) = self.check_access(session, statement) {
            session.fail_transaction();
            return Err(denied);
        }
        let limit = session
            .variable(STATEMENT_TIMEOUT)
            .and_then(timeouts::parse)
            .filter(|limit| !limit.is_zero() && timeouts::applies_to(statement));
        let lock_limit = session.lock_timeout();
        let running = timeouts::with_lock_timeout(lock_limit, self.run(session, execution));
        let result = match limit {
            Some(limit) => {
                // Rows still to be computed must be read by the statement's deadline too.
                let deadline = tokio::time::Instant::now() + limit;
                tokio::time::timeout_at(deadline, running)
                    .await
                    .unwrap_or(Err(CoordError::StatementTimeout))
                    .map(|response| response.with_deadline(deadline))
            }
            None => running.await,
        };
        if result.is_err() {
            session.fail_transaction();
        }
        result
    }

    async fn run(
        &self,
        session: &mut Session,
        execution: Execution<'_>,
    ) -> Result<ExecuteResponse, CoordError> {
        match execution {
            Execution::Statement(statement) => {
                if let Some(response) = self.execute_shape(session, &statement).await? {
                    return Ok(response);
                }
                self.dispatch(session, *statement).await
            }
            Execution::Prepared {
                statement,
                plan,
                values,
            } => {
                let generic = self.execute_generic(session, statement, plan, values);
                if let Some(response) = generic.await? {
                    return Ok(response);
                }
                self.dispatch(session, statement.bind(values)?).await
            }
        }
    }

    async fn dispatch(
        &self,
        session: &mut Session,
        statement: Statement,
    ) -> Result<ExecuteResponse, CoordError> {
        match statement {
            Statement::Select(query) => self.select(session, &query).await,
            Statement::Insert(insert) => {
                self.write(
                    session,
                    WriteStatement::Insert(&insert, InsertRows::Planned),
                )
                .await
            }
            Statement::Update(update) => {
                self.write(session, WriteStatement::Update(&update, RowSearch::Planned))
                    .await
            }
            Statement::Delete(delete) => {
                self.write(session, WriteStatement::Delete(&delete, RowSearch::Planned))
                    .await
            }
            Statement::CopyFrom(copy) => self.start_copy(session, copy),
            Statement::CopyTo(copy) => self.copy_to(session, copy).await,
            Statement::CreateTable(create) => self.create_table(session, create).await,
            Statement::CreateTableFromSource(create) => {
                session.refuse_in_block("CREATE TABLE … FROM SOURCE")?;
                self.create_table_from_source(session, create).await
            }
            Statement::CreateTableAs(create) => self.create_table_as(session, create).await,
            Statement::Truncate(deletes) => {
                for delete in &deletes {
                    self.write(session, WriteStatement::Delete(delete, RowSearch::Planned))
                        .await?;
                }
                Ok(ExecuteResponse::command("TRUNCATE TABLE"))
            }
            Statement::Rename(rename) => self.rename(session, rename).await,
            Statement::AlterColumns(alter) => self.alter_columns(session, alter).await,
            Statement::RefreshMaterializedView(name) => {
                self.refresh_materialized_view(session, &name)
            }
            Statement::CreateView(create) => self.create_view(session, create).await,
            Statement::CreateIndex(create) => self.create_index(session, create).await,
            Statement::CreateSchema(create) => self.create_schema(session, create).await,
            Statement::CreateSource(create) => {
                session.refuse_in_block("CREATE SOURCE")?;
                self.create_source(session, create).await
            }
            Statement::CreateSink(create) => {
                session.refuse_in_block("CREATE SINK")?;
                self.create_sink(session, create).await
            }
            Statement::CreateSubscription(create) => {
                session.refuse_in_block("CREATE SUBSCRIPTION")?;
                self.create_subscription(session, create).await
            }
            Statement::Drop(drop) if drop.kind == ObjectKind::Source => {
                session.refuse_in_block("DROP SOURCE")?;
                self.drop_source(session, drop).await
            }
            Statement::Drop(drop) => self.drop_objects(session, drop).await,
            Statement::Comment(comment) => self.comment_on(session, comment).await,
            Statement::CreateRole(create) => {
                self.sequenced(|| self.create_role(session, create)).await
            }
            Statement::AlterRole(alter) => self.sequenced(|| self.alter_role(session, alter)).await,
            Statement::DropRole(drop) => self.sequenced(|| self.drop_role(session, drop)).await,
            Statement::Privileges(change) => self.change_privileges(session, change).await,
            Statement::RoleMembership(change) => {
                self.sequenced(|| self.change_role_membership(session, change))
                    .await
            }
            Statement::DefaultPrivileges(change) => {
                self.alter_default_privileges(session, change).await
            }
            Statement::AlterOwner(alter) => self.alter_owner(session, alter).await,
            Statement::Begin { isolation } => Ok(self.begin(session, isolation)),
            Statement::Commit => self.commit(session).await,
            Statement::Rollback => self.rollback(session).await,
            Statement::Savepoint(name) => self.savepoint(session, name),
            Statement::ReleaseSavepoint(name) => self.release_savepoint(session, &name),
            Statement::RollbackToSavepoint(name) => {
                self.rollback_to_savepoint(session, &name).await
            }
            Statement::Declare(declare) => self.declare(session, declare).await,
            Statement::Fetch(fetch) => self.fetch(session, &fetch).await,
            Statement::Close(cursor) => self.close_cursor(session, cursor),
            Statement::Deallocate(name) => Ok(ExecuteResponse::Deallocate { name }),
            Statement::Subscribe(subscribe) => self
                .subscribe(session, &subscribe)
                .await
                .map(ExecuteResponse::Subscribe),
            Statement::CopySubscribe { subscribe, options } => {
                let subscription = self.subscribe(session, &subscribe).await?;
                Ok(ExecuteResponse::CopySubscribe {
                    subscription,
                    options,
                })
            }
            Statement::Explain(explain) => self.explain(session, explain).await,
            Statement::Set(set) => self.set(session, set),
            Statement::Show(show) => self.show(session, show),
            Statement::Discard(what) => {
                if what == "ALL" {
                    self.set_role(session, sql::NO_ROLE)?;
                }
                Ok(ExecuteResponse::command(format!("DISCARD {what}")))
            }
            Statement::Rejected(error) => Err(error.into()),
        }
    }

    /// Where `session` plans statements that read nothing (DDL, subscriptions): the shared
    /// planning state and the session's search path.
    pub(crate) fn plan_context<'a>(&'a self, search_path: &'a [String]) -> PlanContext<'a> {
        PlanContext::new(&self.base_state, search_path)
    }
}

/// A statement to execute.
enum Execution<'a> {
    /// A statement as it is.
    Statement(Box<Statement>),
    /// A prepared statement with the values of its parameters.
    Prepared {
        statement: &'a Statement,
        plan: &'a GenericPlan,
        values: &'a [(Option<String>, DataType)],
    },
}

impl Execution<'_> {
    /// The statement (a prepared one without its values).
    fn statement(&self) -> &Statement {
        match self {
            Execution::Statement(statement) => statement,
            Execution::Prepared { statement, .. } => statement,
        }
    }
}
