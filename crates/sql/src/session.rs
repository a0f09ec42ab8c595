//! The DataFusion session every statement is planned in, configured to behave like Postgres.

use std::sync::Arc;

use datafusion::common::config::Dialect;
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::{FunctionRegistry, SessionStateDefaults};
use datafusion::logical_expr::planner::ExprPlanner;
use datafusion::prelude::SessionConfig;

/// The database name clients see (`current_database()`), and DataFusion's catalog name.
pub const DATABASE: &str = "fluxion";

/// The schema user objects live in.
pub const DEFAULT_SCHEMA: &str = "public";

/// The Postgres-like session configuration.
pub fn config() -> SessionConfig {
    let mut config = SessionConfig::new()
        .with_target_partitions(1)
        .with_information_schema(false)
        .with_default_catalog_and_schema(DATABASE, DEFAULT_SCHEMA)
        .with_create_default_catalog_and_schema(false);
    let options = config.options_mut();
    options.sql_parser.dialect = Dialect::PostgreSQL;
    options.sql_parser.map_string_types_to_utf8view = false;
    options.sql_parser.enable_ident_normalization = true;
    // `1.5` is numeric, as in Postgres: exact in comparisons with numeric columns.
    options.sql_parser.parse_float_as_decimal = true;
    options.execution.time_zone = Some("UTC".to_string());
    // Scalar subqueries become joins, which dataflows can maintain.
    options
        .optimizer
        .enable_physical_uncorrelated_scalar_subquery = false;
    config
}

/// A session state with Postgres-like configuration whose default catalog is `catalog`.
pub fn new_state(catalog: Arc<dyn datafusion::catalog::CatalogProvider>) -> SessionState {
    let mut analyzer_rules = datafusion::optimizer::Analyzer::new().rules;
    analyzer_rules.insert(0, Arc::new(crate::bag_set_operations::BagSetOperations));
    analyzer_rules.insert(0, Arc::new(crate::lateral_top_k::LateralTopK));
    analyzer_rules.insert(0, Arc::new(crate::asof_joins::AsOfJoins));
    analyzer_rules.insert(1, Arc::new(crate::postgres_types::RoundingIntegerCasts));
    for (position, rule) in crate::postgres_arrays::analyzer_rules()
        .into_iter()
        .enumerate()
    {
        analyzer_rules.insert(2 + position, rule);
    }
    // Last before type coercion, as literals are typed then: the rules before match
    // aggregates by their unaliased form, which narrowing a literal inside one aliases.
    let type_coercion = analyzer_rules
        .iter()
        .position(|rule| rule.name() == "type_coercion")
        .unwrap_or(analyzer_rules.len());
    analyzer_rules.insert(
        type_coercion,
        Arc::new(crate::postgres_types::SumBigintAsNumeric),
    );
    analyzer_rules.insert(
        type_coercion,
        Arc::new(crate::postgres_types::RealWithExactAsDouble),
    );
    analyzer_rules.insert(
        type_coercion,
        Arc::new(crate::postgres_integers::IntegerLiterals),
    );
    analyzer_rules.push(Arc::new(crate::postgres_arrays::ArrayTextCasts));
    analyzer_rules.push(Arc::new(crate::postgres_text_casts::PostgresTextCasts));
    analyzer_rules.push(Arc::new(crate::postgres_integers::CheckedIntegerArithmetic));
    analyzer_rules.push(Arc::new(crate::session_time_zone::LocalTimes));
    let mut expr_planners: Vec<Arc<dyn ExprPlanner>> =
        vec![Arc::new(crate::postgres_arrays::VectorSubscripts)];
    expr_planners.extend(SessionStateDefaults::default_expr_planners());
    let mut state = SessionStateBuilder::new()
        .with_config(config())
        .with_default_features()
        .with_expr_planners(expr_planners)
        .with_analyzer_rules(analyzer_rules)
        .build();
    // The scalar-subquery rewrite of reads relies on it (see `rewrite::postgres_syntax`).
    let _ = state.register_udaf(Arc::new(crate::single_value::single_value_udaf()));
    // Replaces DataFusion's `to_char`, which reads chrono's templates, not PostgreSQL's. Its
    // alias `date_format` goes too: a state rebuilt from this one registers every function it
    // holds, and the alias would bring DataFusion's back under the name `to_char`.
    let _ = state.deregister_udf("to_char");
    let _ = state.register_udf(Arc::new(crate::postgres_to_char::to_char()));
    // `repeat`, `lpad` and `rpad` refuse results past PostgreSQL's 1 GB bound on a value.
    for function in crate::text_size_bound::bounded_text_functions() {
        let _ = state.register_udf(Arc::new(function));
    }
    // PostgreSQL spells `ceil` `ceiling` too.
    let ceiling = datafusion::functions::math::ceil()
        .as_ref()
        .clone()
        .with_aliases(["ceiling"]);
    let _ = state.register_udf(Arc::new(ceiling));
    // PostgreSQL's `variance` is the sample variance.
    let variance = datafusion::functions_aggregate::variance::var_samp_udaf()
        .as_ref()
        .clone()
        .with_aliases(["variance"]);
    let _ = state.register_udaf(Arc::new(variance));
    // JSON read from text: `->`, `->>` and the json_get functions (json is text here).
    let _ = datafusion_functions_json::register_all(&mut state);
    let _ = state.register_udf(Arc::new(crate::rewrite::cast_aggregates::as_is_udf()));
    let _ = state.register_udf(Arc::new(crate::temporal_filters::mz_now()));
    let _ = state.register_udf(Arc::new(crate::temporal_filters::clock()));
    let _ = state.register_udf(Arc::new(crate::hop_windows::hop_starts()));
    let _ = state.register_udf(Arc::new(crate::asof_joins::asof_marker()));
    let _ = state.register_udwf(Arc::new(crate::asof_joins::asof_closest()));
    let _ = state.register_udf(Arc::new(crate::lookup_joins::lookup_marker()));
    let _ = state.register_udf(Arc::new(crate::processing_time::proctime()));
    for function in crate::session_windows::session_window_functions() {
        let _ = state.register_udwf(Arc::new(function));
    }
    state
        .catalog_list()
        .register_catalog(DATABASE.to_string(), catalog);
    state
}

/// A session state over an empty `public` schema, for tests of the planning rules.
#[cfg(test)]
pub(crate) fn empty_state() -> SessionState {
    let catalog = datafusion::catalog::MemoryCatalogProvider::new();
    let _ = datafusion::catalog::CatalogProvider::register_schema(
        &catalog,
        DEFAULT_SCHEMA,
        Arc::new(datafusion::catalog::MemorySchemaProvider::new()),
    );
    new_state(Arc::new(catalog))
}
