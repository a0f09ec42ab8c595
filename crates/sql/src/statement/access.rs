//! What a statement touches, for privilege checks before it runs: the relations it reads,
//! the relations it writes and with which privilege, the objects only their owner may
//! change, and where it creates something. Names are as written; the coordinator resolves
//! them with the session's search path.

use datafusion::common::TableReference;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::resolve::resolve_table_references;
use datafusion::sql::sqlparser::ast;
use repr::Privileges;

use super::{
    CommentTarget, CopySource, DeclareTarget, Explain, ObjectKind, Query, Statement,
    SubscribeTarget,
};
use crate::names::ObjectRef;

/// What a statement needs privileges for.
#[derive(Debug, Default, PartialEq)]
pub struct Access {
    /// Relations it reads (SELECT).
    pub reads: Vec<ObjectRef>,
    /// Relations it writes, with the privilege each write needs.
    pub writes: Vec<(ObjectRef, Privileges)>,
    /// Objects only their owner may change, by kind (`None`: any relation, as a COMMENT ON
    /// COLUMN names one).
    pub owned: Vec<(Option<ObjectKind>, ObjectRef)>,
    /// The object it creates, whose schema needs CREATE (a schema's own name for CREATE
    /// SCHEMA, which needs CREATE on the database).
    pub creates: Option<(ObjectKind, ObjectRef)>,
    /// Whether it reads or writes files on the server, which only superusers may.
    pub server_files: bool,
}

impl Statement {
    /// What the statement touches; GRANT, REVOKE, OWNER TO and role statements check their
    /// own rules when they run.
    pub fn access(&self) -> Access {
        let mut access = Access::default();
        match self {
            Statement::Select(query) => access.reads = query.relations(),
            Statement::Insert(insert) => {
                access.writes.push((insert.table.clone(), insert.needs()));
                access.reads = insert.relations_read();
            }
            Statement::Update(update) => {
                access
                    .writes
                    .push((update.table.clone(), Privileges::UPDATE));
                access.reads = update.relations_read();
            }
            Statement::Delete(delete) => {
                access
                    .writes
                    .push((delete.table.clone(), Privileges::DELETE));
                access.reads = delete.relations_read();
            }
            Statement::Truncate(deletes) => {
                access.writes = deletes
                    .iter()
                    .map(|delete| (delete.table.clone(), Privileges::TRUNCATE))
                    .collect();
            }
            Statement::CopyFrom(copy) => {
                access.writes.push((copy.table.clone(), Privileges::INSERT));
            }
            Statement::CopyTo(copy) => match &copy.source {
                CopySource::Table { name, .. } => access.reads.push(name.clone()),
                CopySource::Query(query) => access.reads = query.relations(),
            },
            Statement::CreateTable(create) => {
                access.creates = Some((ObjectKind::Table, create.name.clone()));
            }
            Statement::CreateTableFromSource(create) => {
                access.creates = Some((ObjectKind::Table, create.table.name.clone()));
                access
                    .owned
                    .push((Some(ObjectKind::Source), create.source.clone()));
            }
            Statement::CreateTableAs(create) => {
                access.creates = Some((ObjectKind::Table, create.name.clone()));
                access.reads = create.query.relations();
            }
            Statement::CreateView(create) => {
                let kind = if create.materialized {
                    ObjectKind::MaterializedView
                } else {
                    ObjectKind::View
                };
                access.creates = Some((kind, create.name.clone()));
                // A view reads with its owner's privileges when it is used, as in
                // PostgreSQL; a materialized view reads at once.
                if create.materialized {
                    access.reads = create.query().relations();
                }
            }
            Statement::CreateIndex(create) => {
                access
                    .owned
                    .push((Some(ObjectKind::Table), create.on.clone()));
            }
            Statement::CreateSchema(create) => {
                access.creates = Some((
                    ObjectKind::Schema,
                    ObjectRef {
                        schema: None,
                        name: create.name.clone(),
                    },
                ));
            }
            Statement::CreateSource(create) => {
                access.creates = Some((ObjectKind::Source, create.name.clone()));
                access.server_files = reads_server_files(&create.options);
            }
            Statement::CreateSink(create) => {
                access.creates = Some((ObjectKind::Sink, create.name.clone()));
                access.reads.push(create.from.clone());
                access.server_files = reads_server_files(&create.options);
            }
            Statement::CreateSubscription(create) => {
                access.creates = Some((ObjectKind::Subscription, create.name.clone()));
                access.reads.push(create.from.clone());
            }
            Statement::Drop(drop) => {
                access.owned = drop
                    .names
                    .iter()
                    .map(|name| (Some(drop.kind), name.clone()))
                    .collect();
            }
            Statement::Rename(rename) => {
                access.owned.push((Some(rename.kind), rename.name.clone()));
            }
            Statement::AlterColumns(alter) => {
                access
                    .owned
                    .push((Some(ObjectKind::Table), alter.name.clone()));
            }
            Statement::RefreshMaterializedView(name) => {
                access
                    .owned
                    .push((Some(ObjectKind::MaterializedView), name.clone()));
            }
            Statement::Comment(comment) => access.owned.push(match &comment.target {
                CommentTarget::Object { kind, name } => (Some(*kind), name.clone()),
                CommentTarget::Column { relation, .. } => (None, relation.clone()),
            }),
            Statement::Declare(declare) => match &declare.target {
                DeclareTarget::Query(query) => access.reads = query.relations(),
                DeclareTarget::Subscribe(subscribe) => access.reads = subscribe.target.relations(),
            },
            Statement::Subscribe(subscribe) | Statement::CopySubscribe { subscribe, .. } => {
                access.reads = subscribe.target.relations();
            }
            Statement::Explain(Explain::Query(query)) => access.reads = query.relations(),
            Statement::Explain(Explain::View(create)) => access.reads = create.query().relations(),
            _ => {}
        }
        access
    }
}

impl Query {
    /// The relations the query reads, by name (common table expressions aside).
    pub(crate) fn relations(&self) -> Vec<ObjectRef> {
        relations_in(ast::Statement::Query(self.0.clone()))
    }
}

impl SubscribeTarget {
    fn relations(&self) -> Vec<ObjectRef> {
        match self {
            SubscribeTarget::Object(name) => vec![name.clone()],
            SubscribeTarget::Query(query) => query.relations(),
        }
    }
}

/// The relations a statement names (common table expressions aside).
pub(crate) fn relations_in(statement: ast::Statement) -> Vec<ObjectRef> {
    let statement = DFStatement::Statement(Box::new(statement));
    let Ok((relations, _)) = resolve_table_references(&statement, true) else {
        return Vec::new();
    };
    relations.iter().map(object_ref_of).collect()
}

fn object_ref_of(reference: &TableReference) -> ObjectRef {
    ObjectRef {
        schema: reference.schema().map(str::to_string),
        name: reference.table().to_string(),
    }
}

/// Whether a source's or sink's options name the `file` connector.
fn reads_server_files(options: &[(String, String)]) -> bool {
    options
        .iter()
        .any(|(key, value)| key == "connector" && value.eq_ignore_ascii_case("file"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn access_of(sql: &str) -> Access {
        parse(sql).unwrap().pop().unwrap().access()
    }

    fn name(schema: Option<&str>, name: &str) -> ObjectRef {
        ObjectRef {
            schema: schema.map(str::to_string),
            name: name.into(),
        }
    }

    #[test]
    fn queries_read_what_they_name_but_not_their_ctes() {
        let access =
            access_of("WITH c AS (SELECT * FROM s.a) SELECT * FROM c JOIN \"B\" USING (x) WHERE x IN (SELECT y FROM d)");
        assert_eq!(
            access.reads,
            vec![name(None, "B"), name(None, "d"), name(Some("s"), "a")]
        );
    }

    #[test]
    fn writes_need_their_privilege_and_reads_need_select() {
        let access = access_of("UPDATE t SET a = 1 WHERE b IN (SELECT b FROM u)");
        assert_eq!(access.writes, vec![(name(None, "t"), Privileges::UPDATE)]);
        assert!(access.reads.contains(&name(None, "u")));
        let access = access_of_insert();
        assert_eq!(
            access.writes,
            vec![(name(None, "t"), Privileges::INSERT | Privileges::UPDATE)]
        );
        assert_eq!(access.reads, vec![name(None, "u")]);
    }

    fn access_of_insert() -> Access {
        access_of("INSERT INTO t SELECT * FROM u ON CONFLICT (id) DO UPDATE SET a = excluded.a")
    }

    #[test]
    fn definitions_name_where_they_create_and_what_they_own() {
        let access = access_of("CREATE MATERIALIZED VIEW s.m AS SELECT * FROM t");
        assert_eq!(
            access.creates,
            Some((ObjectKind::MaterializedView, name(Some("s"), "m")))
        );
        assert_eq!(access.reads, vec![name(None, "t")]);
        let access = access_of("DROP TABLE a, s.b");
        assert_eq!(
            access.owned,
            vec![
                (Some(ObjectKind::Table), name(None, "a")),
                (Some(ObjectKind::Table), name(Some("s"), "b"))
            ]
        );
        assert!(
            access_sink("file").server_files && !access_sink("kafka").server_files,
            "only the file connector touches the server's files"
        );
    }

    fn access_sink(connector: &str) -> Access {
        access_of(&format!(
            "CREATE SINK k FROM t WITH (connector = '{connector}', path = '/tmp/x')"
        ))
    }
}
