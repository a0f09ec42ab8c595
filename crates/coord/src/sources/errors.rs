//! The system relation `fluxion_catalog.source_errors` (its columns and the rows of bad
//! records are `pipelines`'), as queries read it and compute holds it.

use std::sync::Arc;

use pipelines::{source_errors_desc, SOURCE_ERRORS, SOURCE_ERRORS_NAME};
use sql::catalog::RelationTable;

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::table_rows::TableCodecs;

/// The relation as queries read it; its columns say they come from `oid`.
pub(crate) fn source_errors_relation(oid: u32) -> RelationTable {
    RelationTable::new(
        SOURCE_ERRORS,
        format!("fluxion_catalog.{SOURCE_ERRORS_NAME}"),
        source_errors_desc(),
    )
    .with_origin(oid)
}

impl Coordinator {
    /// Makes `fluxion_catalog.source_errors` readable and writable; at startup, before the
    /// log is replayed.
    pub(crate) fn install_source_errors(&self) -> Result<(), CoordError> {
        let codecs = TableCodecs::new(
            SOURCE_ERRORS_NAME,
            &source_errors_desc(),
            Default::default(),
        )?;
        self.compute.create_input(
            SOURCE_ERRORS,
            compute::ArrangementLayout::BySelf,
            0,
            SOURCE_ERRORS_NAME,
        );
        self.table_codecs
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(SOURCE_ERRORS, Arc::new(codecs));
        Ok(())
    }
}
