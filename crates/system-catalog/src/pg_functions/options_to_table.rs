//! `pg_options_to_table(options text[])`: the `(option_name, option_value)` rows of a
//! foreign-data-wrapper options array (psql's `\d` of a foreign table reads
//! `pg_attribute.attfdwoptions` through it).
//!
//! No Fluxion relation or column carries such options (`attfdwoptions`, `ftoptions` are
//! always NULL or absent; a source's options live in its `CREATE SOURCE` text), so every
//! options array a query can pass here is NULL and the function's rows are always none.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::error::Result;

/// The `pg_options_to_table(text[])` table function.
#[derive(Debug)]
pub(crate) struct OptionsToTableFunction;

impl TableFunctionImpl for OptionsToTableFunction {
    fn call_with_args(&self, _args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("option_name", DataType::Utf8, true),
            Field::new("option_value", DataType::Utf8, true),
        ]));
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![]])?))
    }
}
