//! `COMMENT ON`: descriptions of tables, views, materialized views, indexes and columns, kept
//! durably and shown in `pg_description` (psql `\d+`, SQLAlchemy, JDBC, Metabase read them).

use repr::{GlobalId, ItemKind};
use sql::{Comment, CommentTarget};

use crate::coordinator::Coordinator;
use crate::ddl::item_kind;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;

/// The durable key of a comment: the item and the column number (0 for the item itself).
fn comment_key(id: GlobalId, column: u32) -> String {
    format!("comment/{:020}/{column:05}", id.0)
}

impl Coordinator {
    pub(crate) async fn comment_on(
        &self,
        session: &Session,
        comment: Comment,
    ) -> Result<ExecuteResponse, CoordError> {
        let _sequencer = self.lock_sequencer().await?;
        let (id, column) = self.comment_target(session, &comment.target)?;
        self.set_comment(id, column, comment.text)?;
        Ok(ExecuteResponse::command("COMMENT"))
    }

    /// Sets (or with `None` removes) the comment of item `id`'s column `column` (0: the
    /// item itself).
    pub(crate) fn set_comment(
        &self,
        id: GlobalId,
        column: u32,
        text: Option<String>,
    ) -> Result<(), CoordError> {
        let key = comment_key(id, column);
        let mut catalog = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        match text {
            Some(text) => {
                self.durable.set_setting(&key, &text)?;
                catalog.comments.insert((id, column), text);
            }
            None => {
                self.durable.delete_setting(&key)?;
                catalog.comments.remove(&(id, column));
            }
        }
        Ok(())
    }

    /// The item (and column number, 0 for none) a COMMENT ON names.
    fn comment_target(
        &self,
        session: &Session,
        target: &CommentTarget,
    ) -> Result<(GlobalId, u32), CoordError> {
        let search_path = session.search_path();
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        let (relation, column) = match target {
            CommentTarget::Object { kind, name } => {
                let kind = item_kind(*kind);
                let found = match kind {
                    ItemKind::Schema => catalog.schema_item(&name.name),
                    _ => catalog.resolve(name, &search_path),
                };
                let item = found
                    .filter(|item| item.kind == kind)
                    .ok_or_else(|| CoordError::unknown(kind.name(), name.name.clone()))?;
                return Ok((item.id, 0));
            }
            CommentTarget::Column { relation, column } => (relation, column),
        };
        let item = catalog
            .resolve(relation, &search_path)
            .ok_or_else(|| CoordError::unknown("relation", relation.name.clone()))?;
        let name = &relation.name;
        let schema = match item.provider() {
            Some(provider) => provider.schema(),
            None => {
                return Err(CoordError::unknown_column(format!(
                    "\"{name}\" has no columns"
                )))
            }
        };
        let position = schema.index_of(column).map_err(|_| {
            CoordError::unknown_column(format!(
                "column \"{column}\" of relation \"{name}\" does not exist"
            ))
        })?;
        Ok((item.id, position as u32 + 1))
    }

    /// Loads the stored comments of the items that exist.
    pub(crate) fn load_comments(&self) -> Result<(), CoordError> {
        let stored = self.durable.settings_with_prefix("comment/")?;
        let mut catalog = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        for (key, text) in stored {
            let mut parts = key.trim_start_matches("comment/").split('/');
            let (Some(id), Some(column)) = (parts.next(), parts.next()) else {
                continue;
            };
            let (Ok(id), Ok(column)) = (id.parse::<u64>(), column.parse::<u32>()) else {
                continue;
            };
            if catalog.get(GlobalId(id)).is_some() {
                catalog.comments.insert((GlobalId(id), column), text);
            }
        }
        Ok(())
    }

    /// Forgets the comments of a dropped item.
    pub(crate) fn drop_comments(&self, id: GlobalId) -> Result<(), CoordError> {
        let stored = self
            .durable
            .settings_with_prefix(&format!("comment/{:020}/", id.0))?;
        for (key, _) in stored {
            self.durable.delete_setting(&key)?;
        }
        let mut catalog = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        catalog.comments.retain(|(item, _), _| *item != id);
        Ok(())
    }
}
