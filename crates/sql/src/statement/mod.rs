//! Statements as the coordinator receives them: typed, every name folded and every clause
//! checked. The parts DataFusion plans — queries, expressions — are opaque values
//! ([`Query`], the DML statements) planned through a [`crate::PlanContext`]; nothing of
//! sqlparser's syntax tree shows through.
//!
//! A statement Fluxion parses but cannot run (`DROP FUNCTION`, an `UPDATE … RETURNING`) is
//! [`Statement::Rejected`]: its error is returned when it is executed, as PostgreSQL reports
//! such errors at execution, inside the transaction.

mod access;
mod copy;
mod cursor;
pub(crate) mod ddl;
mod default_privileges;
pub(crate) mod privileges;
mod query;
pub(crate) mod roles;
mod settings;
pub(crate) mod sinks;
pub(crate) mod sources;
pub(crate) mod subscriptions;
mod view_options;
pub(crate) mod watermark;
mod write;

use std::fmt;

use datafusion::sql::sqlparser::ast;

pub use access::Access;
pub use copy::{CopyFormat, CopyFrom, CopyOptions, CopySource, CopyTo};
pub use cursor::{Declare, DeclareTarget, Fetch};
pub use ddl::{
    column_defaults, reindexed_create_sql, renamed_create_sql, AlterColumns, Altered, ColumnChange,
    Comment, CommentTarget, CreateIndex, CreateSchema, CreateTable, CreateTableAs, CreateView,
    Drop, ObjectKind, Rename, TableDefinition,
};
pub use default_privileges::{DefaultObjects, DefaultPrivilegesChange};
pub use privileges::{
    AlterOwner, PrivilegeAction, PrivilegeChange, PrivilegeTarget, RoleMembershipChange, RoleSpec,
};
pub use query::{parameter_types, ParameterTypes, Query};
pub use roles::{AlterRole, CreateRole, DropRole, RoleOptions};
pub use settings::{Explain, Set, Show, NO_ROLE, ROLE};
pub use sinks::CreateSink;
pub use sources::{CreateSource, CreateTableFromSource};
pub use subscriptions::{AsOf, CreateSubscription, Subscribe, SubscribeTarget, DEFAULT_RETENTION};
pub use view_options::{parse_memory_size, ViewOptions, MEMORY_BUDGET_OPTION};
pub use watermark::WatermarkSpec;
pub use write::{
    ConflictArbiter, ConflictUpdate, Delete, Insert, InsertTarget, OnConflict, PlannedInsert,
    Update,
};

use crate::names::{fold_ident, ObjectRef};
use crate::SqlError;

/// One statement, typed.
#[derive(Debug, Clone)]
pub enum Statement {
    /// A query: `SELECT`, `VALUES`, `WITH …`.
    Select(Query),
    /// `INSERT`.
    Insert(Insert),
    /// `UPDATE`.
    Update(Update),
    /// `DELETE`.
    Delete(Delete),
    /// `COPY table FROM STDIN`.
    CopyFrom(CopyFrom),
    /// `COPY table | (query) TO STDOUT`.
    CopyTo(CopyTo),
    /// `CREATE TABLE`.
    CreateTable(CreateTable),
    /// `CREATE TABLE … FROM source TABLE '…'`.
    CreateTableFromSource(CreateTableFromSource),
    /// `CREATE TABLE name AS query`.
    CreateTableAs(CreateTableAs),
    /// `TRUNCATE [TABLE] name, …`: a DELETE of every row of each table.
    Truncate(Vec<Delete>),
    /// `REFRESH MATERIALIZED VIEW name`: nothing to do, the view is always fresh.
    RefreshMaterializedView(ObjectRef),
    /// `ALTER TABLE | VIEW | MATERIALIZED VIEW … RENAME TO …`.
    Rename(Rename),
    /// `ALTER TABLE … ADD | DROP | RENAME COLUMN`.
    AlterColumns(AlterColumns),
    /// `CREATE [MATERIALIZED] VIEW`.
    CreateView(CreateView),
    /// `CREATE INDEX`.
    CreateIndex(CreateIndex),
    /// `CREATE SCHEMA`.
    CreateSchema(CreateSchema),
    /// `CREATE SOURCE`.
    CreateSource(CreateSource),
    /// `CREATE SINK`.
    CreateSink(CreateSink),
    /// `CREATE SUBSCRIPTION`.
    CreateSubscription(CreateSubscription),
    /// `DROP TABLE | VIEW | … | SOURCE | SINK | SUBSCRIPTION`.
    Drop(Drop),
    /// `COMMENT ON`.
    Comment(Comment),
    /// `CREATE ROLE` / `CREATE USER`.
    CreateRole(CreateRole),
    /// `ALTER ROLE` / `ALTER USER`.
    AlterRole(AlterRole),
    /// `DROP ROLE` / `DROP USER`.
    DropRole(DropRole),
    /// `GRANT` / `REVOKE` of privileges on objects.
    Privileges(PrivilegeChange),
    /// `GRANT role TO role` / `REVOKE role FROM role`.
    RoleMembership(RoleMembershipChange),
    /// `ALTER DEFAULT PRIVILEGES`.
    DefaultPrivileges(DefaultPrivilegesChange),
    /// `ALTER … OWNER TO`.
    AlterOwner(AlterOwner),
    /// `BEGIN` / `START TRANSACTION`, with the isolation level it names (in PostgreSQL's
    /// words), if any.
    Begin {
        /// `ISOLATION LEVEL …`.
        isolation: Option<String>,
    },
    /// `COMMIT` / `END`.
    Commit,
    /// `ROLLBACK` / `ABORT`.
    Rollback,
    /// `SAVEPOINT name`.
    Savepoint(String),
    /// `RELEASE [SAVEPOINT] name`.
    ReleaseSavepoint(String),
    /// `ROLLBACK TO [SAVEPOINT] name`.
    RollbackToSavepoint(String),
    /// `DECLARE name CURSOR FOR …`.
    Declare(Declare),
    /// `FETCH`.
    Fetch(Fetch),
    /// `CLOSE name` (`None`: `CLOSE ALL`).
    Close(Option<String>),
    /// `DEALLOCATE name` (`None`: `DEALLOCATE ALL`).
    Deallocate(Option<String>),
    /// `SUBSCRIBE …`: the changes, streamed as the statement's rows.
    Subscribe(Subscribe),
    /// `COPY (SUBSCRIBE …) TO STDOUT [WITH (…)]`: the changes, streamed as COPY data.
    CopySubscribe {
        /// The subscription.
        subscribe: Subscribe,
        /// How the rows are laid out.
        options: CopyOptions,
    },
    /// `EXPLAIN`.
    Explain(Explain),
    /// `SET`.
    Set(Set),
    /// `SHOW`.
    Show(Show),
    /// `DISCARD ALL | PLANS | SEQUENCES | TEMP`: what is discarded, in upper case.
    Discard(String),
    /// A statement that parses but cannot run; executing it returns the error.
    Rejected(SqlError),
}

/// How a statement moves a session's transaction status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionEffect {
    /// It opens a transaction block.
    Begin,
    /// It ends the transaction block.
    End,
    /// It leaves the status alone (a failure may still fail the block).
    None,
}

impl Statement {
    /// What the statement does to the transaction block it runs in.
    pub fn transaction_effect(&self) -> TransactionEffect {
        match self {
            Statement::Begin { .. } => TransactionEffect::Begin,
            Statement::Commit | Statement::Rollback => TransactionEffect::End,
            _ => TransactionEffect::None,
        }
    }

    /// Whether the statement may run in a transaction block that failed: only the ones that
    /// end it (`COMMIT`, which then rolls back, and `ROLLBACK [TO SAVEPOINT]`).
    pub fn may_run_after_failure(&self) -> bool {
        matches!(
            self,
            Statement::Commit | Statement::Rollback | Statement::RollbackToSavepoint(_)
        )
    }

    /// Whether the statement's result is a subscription streamed until the client stops it.
    pub fn is_streamed(&self) -> bool {
        matches!(
            self,
            Statement::Subscribe(_) | Statement::CopySubscribe { .. }
        )
    }

    /// Types a statement of PostgreSQL's SQL; what Fluxion cannot run becomes
    /// [`Statement::Rejected`].
    pub(crate) fn from_sql(statement: ast::Statement) -> Statement {
        Self::try_from_sql(statement).unwrap_or_else(Statement::Rejected)
    }

    fn try_from_sql(statement: ast::Statement) -> Result<Statement, SqlError> {
        use ast::Statement as S;
        Ok(match statement {
            S::Query(query) => Statement::Select(Query::new(*query)),
            S::Insert(insert) => Statement::Insert(Insert::from_sql(insert)?),
            S::Update(update) => Statement::Update(Update::from_sql(update)?),
            S::Delete(delete) => Statement::Delete(Delete::from_sql(delete)?),
            copy @ S::Copy { .. } => copy::from_sql(copy)?,
            S::CreateTable(create) if create.query.is_some() => {
                Statement::CreateTableAs(CreateTableAs::from_sql(create)?)
            }
            S::CreateTable(create) => Statement::CreateTable(CreateTable::from_sql(create)?),
            S::AlterTable(alter) => ddl::from_alter_table(&alter)?,
            S::Truncate(truncate) => Statement::Truncate(
                truncate
                    .table_names
                    .iter()
                    .map(|target| Delete::every_row(&target.name))
                    .collect::<Result<_, _>>()?,
            ),
            S::CreateView(create) => Statement::CreateView(CreateView::from_sql(create)?),
            S::CreateIndex(create) => Statement::CreateIndex(CreateIndex::from_sql(create)?),
            S::CreateSchema {
                schema_name,
                if_not_exists,
                ..
            } => Statement::CreateSchema(CreateSchema::from_sql(schema_name, if_not_exists)?),
            S::Drop {
                object_type: ast::ObjectType::Role | ast::ObjectType::User,
                if_exists,
                names,
                ..
            } => Statement::DropRole(roles::drop_role(&names, if_exists)?),
            S::CreateRole(create) => Statement::CreateRole(CreateRole::from_sql(create, false)?),
            S::AlterRole { name, operation } => {
                Statement::AlterRole(AlterRole::from_sql(&name, operation)?)
            }
            S::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => Statement::Drop(Drop::from_sql(object_type, if_exists, &names, cascade)?),
            S::Comment {
                object_type,
                object_name,
                comment,
                ..
            } => Statement::Comment(Comment::from_sql(object_type, &object_name, comment)?),
            S::StartTransaction { modes, .. } => Statement::Begin {
                isolation: settings::isolation_level(&modes),
            },
            S::Commit { .. } => Statement::Commit,
            S::Rollback {
                savepoint: None, ..
            } => Statement::Rollback,
            S::Rollback {
                savepoint: Some(name),
                ..
            } => Statement::RollbackToSavepoint(fold_ident(&name)),
            S::Savepoint { name } => Statement::Savepoint(fold_ident(&name)),
            S::ReleaseSavepoint { name } => Statement::ReleaseSavepoint(fold_ident(&name)),
            S::Declare { stmts } => Statement::Declare(Declare::from_sql(stmts)?),
            S::Fetch {
                name, direction, ..
            } => Statement::Fetch(Fetch::from_sql(&name, &direction, None)?),
            S::Close { cursor } => Statement::Close(match cursor {
                ast::CloseCursor::All => None,
                ast::CloseCursor::Specific { name } => Some(fold_ident(&name)),
            }),
            S::Deallocate { name, .. } => Statement::Deallocate(
                (!name.value.eq_ignore_ascii_case("all") || name.quote_style.is_some())
                    .then(|| name.value.clone()),
            ),
            S::Explain { statement, .. } => Statement::Explain(Explain::from_sql(*statement)?),
            S::Set(set) => Statement::Set(Set::from_sql(set)?),
            S::Reset(reset) => Statement::Set(settings::reset(reset)?),
            S::ShowVariable { variable } => Statement::Show(Show::variable(&variable)),
            S::ShowTables { .. } => Statement::Show(Show::Objects(ObjectKind::Table)),
            S::ShowViews { materialized, .. } => Statement::Show(Show::Objects(if materialized {
                ObjectKind::MaterializedView
            } else {
                ObjectKind::View
            })),
            S::ShowCreate { obj_name, .. } => Statement::Show(Show::Create {
                name: crate::names::object_ref(&obj_name)?,
                kind: None,
            }),
            S::Discard { object_type } => Statement::Discard(object_type.to_string()),
            other => {
                return Err(SqlError::Unsupported(format!(
                    "statement {}",
                    other
                        .to_string()
                        .split_whitespace()
                        .take(2)
                        .collect::<Vec<_>>()
                        .join(" ")
                )))
            }
        })
    }
}

impl fmt::Display for Statement {
    /// A short description for logs: the statement's kind.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Statement::Select(_) => "SELECT",
            Statement::Insert(_) => "INSERT",
            Statement::Update(_) => "UPDATE",
            Statement::Delete(_) => "DELETE",
            Statement::CopyFrom(_) | Statement::CopyTo(_) => "COPY",
            Statement::CreateTable(_) | Statement::CreateTableFromSource(_) => "CREATE TABLE",
            Statement::CreateTableAs(_) => "CREATE TABLE AS",
            Statement::Truncate(_) => "TRUNCATE",
            Statement::RefreshMaterializedView(_) => "REFRESH MATERIALIZED VIEW",
            Statement::Rename(rename) => rename.tag(),
            Statement::AlterColumns(_) => "ALTER TABLE",
            Statement::CreateView(_) => "CREATE VIEW",
            Statement::CreateIndex(_) => "CREATE INDEX",
            Statement::CreateSchema(_) => "CREATE SCHEMA",
            Statement::CreateSource(_) => "CREATE SOURCE",
            Statement::CreateSink(_) => "CREATE SINK",
            Statement::CreateSubscription(_) => "CREATE SUBSCRIPTION",
            Statement::Drop(_) => "DROP",
            Statement::Comment(_) => "COMMENT",
            Statement::CreateRole(_) => "CREATE ROLE",
            Statement::AlterRole(_) => "ALTER ROLE",
            Statement::DropRole(_) => "DROP ROLE",
            Statement::Privileges(change) => change.tag(),
            Statement::RoleMembership(change) => change.tag(),
            Statement::DefaultPrivileges(_) => "ALTER DEFAULT PRIVILEGES",
            Statement::AlterOwner(alter) => alter.tag(),
            Statement::Begin { .. } => "BEGIN",
            Statement::Commit => "COMMIT",
            Statement::Rollback | Statement::RollbackToSavepoint(_) => "ROLLBACK",
            Statement::Savepoint(_) => "SAVEPOINT",
            Statement::ReleaseSavepoint(_) => "RELEASE",
            Statement::Declare(_) => "DECLARE",
            Statement::Fetch(_) => "FETCH",
            Statement::Close(_) => "CLOSE",
            Statement::Deallocate(_) => "DEALLOCATE",
            Statement::Subscribe(_) => "SUBSCRIBE",
            Statement::CopySubscribe { .. } => "COPY (SUBSCRIBE)",
            Statement::Explain(_) => "EXPLAIN",
            Statement::Set(_) => "SET",
            Statement::Show(_) => "SHOW",
            Statement::Discard(_) => "DISCARD",
            Statement::Rejected(_) => "rejected statement",
        };
        f.write_str(kind)
    }
}
