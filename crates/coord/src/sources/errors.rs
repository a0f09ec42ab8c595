//! The system relations source batches write: `fluxion_catalog.source_errors` (its columns
//! are `system_catalog`'s, the rows of bad records `pipelines`'), and how compute holds them.

use std::sync::Arc;

use repr::{GlobalId, RelationDesc};
use system_catalog::{source_errors_desc, SOURCE_ERRORS, SOURCE_ERRORS_NAME};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::table_rows::TableCodecs;

impl Coordinator {
    /// Makes `fluxion_catalog.source_errors` readable and writable; at startup, before the
    /// log is replayed.
    pub(crate) fn install_source_errors(&self) -> Result<(), CoordError> {
        self.install_system_relation(SOURCE_ERRORS, SOURCE_ERRORS_NAME, &source_errors_desc())
    }

    /// Makes system relation `id` (`fluxion_catalog.<name>`, columns `desc`), which source
    /// batches write, readable and writable like a table.
    pub(super) fn install_system_relation(
        &self,
        id: GlobalId,
        name: &str,
        desc: &RelationDesc,
    ) -> Result<(), CoordError> {
        let codecs = TableCodecs::new(name, desc, Default::default())?;
        self.compute
            .create_input(id, compute::ArrangementLayout::BySelf, 0, name);
        self.table_codecs
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, Arc::new(codecs));
        Ok(())
    }
}
