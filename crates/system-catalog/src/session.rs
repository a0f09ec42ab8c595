//! What the catalogs and functions know about the session that queries them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::backends::Backends;
use crate::catalog_input::CatalogInput;
use crate::{is_system_schema, pg_catalog, PG_CATALOG};

/// What the catalogs need to know about the session that queries them.
#[derive(Clone, Debug, Default)]
pub struct SessionInfo {
    /// The role the session acts as (`current_user`: `SET ROLE` changes it).
    pub user: String,
    /// The user the session authenticated as (`session_user`).
    pub session_user: String,
    /// The schemas of the search path, in order (existing or not).
    pub search_path: Vec<String>,
    /// The session's settings (`SHOW`), by lower-case name.
    pub settings: BTreeMap<String, String>,
    /// The backend's process id as the client knows it (BackendKeyData).
    pub backend_pid: i32,
    /// Settings changed by `set_config` during the query, to apply to the session after it.
    pub changed_settings: Arc<Mutex<Vec<(String, String)>>>,
    /// The server's backends (none for a session no client connected).
    pub backends: Option<Arc<dyn Backends>>,
}

impl SessionInfo {
    /// The schemas `current_schemas(include_implicit)` lists: those of the search path that
    /// exist, after `pg_catalog` when `include_implicit`.
    pub(crate) fn current_schemas(
        &self,
        catalog: &CatalogInput,
        include_implicit: bool,
    ) -> Vec<String> {
        let mut schemas: Vec<String> = Vec::new();
        if include_implicit && !self.search_path.iter().any(|s| s == PG_CATALOG) {
            schemas.push(PG_CATALOG.to_string());
        }
        for schema in &self.search_path {
            let exists = catalog.has_schema(schema) || is_system_schema(schema);
            if exists && !schemas.contains(schema) {
                schemas.push(schema.clone());
            }
        }
        schemas
    }

    /// The value of a setting, as `current_setting` returns it.
    pub(crate) fn setting(&self, name: &str) -> Option<String> {
        let name = name.to_lowercase();
        if let Some((_, value)) = self
            .changed_settings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
        {
            return Some(value.clone());
        }
        self.settings
            .get(&name)
            .cloned()
            .or_else(|| pg_catalog::static_setting(&name).map(str::to_string))
    }
}
