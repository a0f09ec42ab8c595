//! The system relation `fluxion_catalog.source_errors` (its columns are `system_catalog`'s,
//! the rows of bad records `pipelines`'), as compute holds it.

use std::sync::Arc;

use system_catalog::{source_errors_desc, SOURCE_ERRORS, SOURCE_ERRORS_NAME};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::table_rows::TableCodecs;

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
