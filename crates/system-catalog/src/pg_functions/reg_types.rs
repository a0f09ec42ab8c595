//! The object-identifier types `regclass`, `regtype`, `regproc`, `regnamespace` and `regrole`:
//! an oid that reads and prints as the object's name.
//!
//! `'orders'::regclass` looks the name up (as an unqualified name would be, through the search
//! path) and is the relation's oid, so it compares with oid columns; `to_regclass('orders')`
//! is the same but NULL when nothing has that name. A value of these types keeps its type in
//! its field's metadata, and a query's result shows it as the name (see
//! [`display_reg_types`]); `x::regclass::text` is the name too.

use std::sync::Arc;

use datafusion::arrow::array::{
    new_empty_array, Array, ArrayRef, AsArray, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Int64Type, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use repr::pg_type::PG_TYPE_OID_KEY;

use super::{any_arity, invalid_argument, oid_arg, row_function, text, text_arg, FunctionEnv};
use sql::RegKind;

use crate::builtin_functions::{builtin_function_name, builtin_function_named};
use crate::catalog_input::{CatalogInput, CatalogReader};
use crate::session::SessionInfo;
use crate::snapshot::CatalogSnapshot;
use crate::types::{format_type, type_info, type_oid_by_name};

pub(super) fn functions(env: &FunctionEnv) -> Vec<ScalarUDF> {
    let kinds = [
        RegKind::Class,
        RegKind::Type,
        RegKind::Proc,
        RegKind::Namespace,
        RegKind::Role,
    ];
    let mut functions = Vec::new();
    for kind in kinds {
        for strict in [true, false] {
            functions.push(ScalarUDF::from(RegLookup {
                name: if strict {
                    kind.cast_function()
                } else {
                    format!("to_{}", kind.type_name())
                },
                kind,
                strict,
                env: env.clone(),
                signature: any_arity(&[1], Volatility::Stable),
            }));
        }
        let names_env = env.clone();
        functions.push(row_function(
            &kind.names_function(),
            any_arity(&[1], Volatility::Stable),
            DataType::new_list(DataType::Utf8, true),
            move |args| {
                let ScalarValue::List(list) = &args[0] else {
                    return Ok(ScalarValue::new_null_list(DataType::Utf8, true, 1));
                };
                if list.is_null(0) {
                    return Ok(ScalarValue::new_null_list(DataType::Utf8, true, 1));
                }
                let oids = datafusion::arrow::compute::cast(&list.value(0), &DataType::Int64)?;
                let catalog = names_env.catalog.catalog();
                let snapshot = CatalogSnapshot::of(&catalog);
                let names: Vec<ScalarValue> = oids
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|oid| {
                        text(oid.and_then(|oid| u32::try_from(oid).ok()).map(|oid| {
                            reg_type_display_name(
                                kind,
                                oid,
                                &catalog,
                                &snapshot,
                                &names_env.session,
                            )
                        }))
                    })
                    .collect();
                Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                    &names,
                    &DataType::Utf8,
                )))
            },
        ));
        let env = env.clone();
        functions.push(row_function(
            &kind.name_function(),
            any_arity(&[1], Volatility::Stable),
            DataType::Utf8,
            move |args| {
                let catalog = env.catalog.catalog();
                let snapshot = CatalogSnapshot::of(&catalog);
                Ok(text(oid_arg(&args[0]).map(|oid| {
                    reg_type_display_name(kind, oid, &catalog, &snapshot, &env.session)
                })))
            },
        ));
    }
    functions.push(ScalarUDF::from(TypeOf {
        signature: any_arity(&[1], Volatility::Immutable),
    }));
    functions
}

/// `pg_typeof(x)`: the `regtype` of its argument's type (a declared `varchar`, `json` or
/// `uuid` column included).
#[derive(Debug, PartialEq, Eq, Hash)]
struct TypeOf {
    signature: Signature,
}

impl ScalarUDFImpl for TypeOf {
    fn name(&self) -> &str {
        "pg_typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn return_field_from_args(&self, _: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(reg_type_field(self.name(), RegKind::Type)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let oid = repr::pg_type::pg_type_of_field(&args.arg_fields[0]).oid;
        Ok(ColumnarValue::Scalar(ScalarValue::Int64(Some(i64::from(
            oid,
        )))))
    }
}

/// A field named `name` holding oids of `kind` (shown as the objects' names).
fn reg_type_field(name: &str, kind: RegKind) -> Field {
    let metadata = std::collections::HashMap::from([
        (PG_TYPE_OID_KEY.to_string(), kind.type_oid().to_string()),
        (
            repr::pg_type::DECLARED_TYPE_KEY.to_string(),
            kind.type_name().to_string(),
        ),
    ]);
    Field::new(name, DataType::Int64, true).with_metadata(metadata)
}

/// Looks a name up as an object of one kind; an oid passes through.
#[derive(Debug)]
struct RegLookup {
    name: String,
    kind: RegKind,
    /// Whether a missing object is an error (the cast) rather than NULL (`to_regclass`).
    strict: bool,
    env: FunctionEnv,
    signature: Signature,
}

impl PartialEq for RegLookup {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for RegLookup {}

impl std::hash::Hash for RegLookup {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for RegLookup {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn return_field_from_args(&self, _: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(reg_type_field(self.name(), self.kind)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let input = args.args[0].to_array(rows.max(1))?;
        let catalog = self.env.catalog.catalog();
        let snapshot = CatalogSnapshot::of(&catalog);
        let mut out = Vec::with_capacity(rows);
        for row in 0..input.len() {
            let value = ScalarValue::try_from_array(&input, row)?;
            out.push(ScalarValue::Int64(
                self.lookup(&value, &catalog, &snapshot)?,
            ));
        }
        if matches!(args.args[0], ColumnarValue::Scalar(_)) {
            return Ok(ColumnarValue::Scalar(
                out.pop().unwrap_or(ScalarValue::Int64(None)),
            ));
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(new_empty_array(&DataType::Int64)));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

impl RegLookup {
    fn lookup(
        &self,
        value: &ScalarValue,
        catalog: &CatalogInput,
        snapshot: &CatalogSnapshot,
    ) -> Result<Option<i64>> {
        if value.is_null() {
            return Ok(None);
        }
        let is_text = matches!(
            value,
            ScalarValue::Utf8(_) | ScalarValue::LargeUtf8(_) | ScalarValue::Utf8View(_)
        );
        if !is_text {
            return Ok(oid_arg(value).map(i64::from));
        }
        let name = text_arg(value).unwrap_or_default();
        if let Ok(oid) = name.trim().parse::<u32>() {
            return Ok(Some(i64::from(oid)));
        }
        match find_by_name(self.kind, &name, catalog, snapshot, &self.env.session) {
            Some(oid) => Ok(Some(i64::from(oid))),
            None if self.strict => Err(invalid_argument(format!(
                "{} \"{name}\" does not exist",
                self.kind.object_word()
            ))),
            None => Ok(None),
        }
    }
}

/// The parts of a possibly qualified, possibly quoted name (`public."Orders"`).
pub(super) fn name_parts(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = name.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                current.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut current)),
            c if quoted => current.push(c),
            c => current.extend(c.to_lowercase()),
        }
    }
    parts.push(current);
    parts
}

/// The oid of the object of `kind` called `name`, found as an unqualified name is.
pub(super) fn find_by_name(
    kind: RegKind,
    name: &str,
    catalog: &CatalogInput,
    snapshot: &CatalogSnapshot,
    session: &SessionInfo,
) -> Option<u32> {
    let parts = name_parts(name);
    let (schema, object) = match parts.as_slice() {
        [object] => (None, object.clone()),
        [schema, object] => (Some(schema.clone()), object.clone()),
        _ => return None,
    };
    let searched = match &schema {
        Some(schema) => vec![schema.clone()],
        None => session.current_schemas(catalog, true),
    };
    match kind {
        RegKind::Class => searched
            .iter()
            .find_map(|s| snapshot.relation_named(s, &object)),
        RegKind::Type => type_oid_by_name(name).or_else(|| {
            searched.iter().find_map(|s| {
                snapshot
                    .relations
                    .iter()
                    .find(|r| r.namespace == *s && r.name == object && r.row_type_oid != 0)
                    .map(|r| r.row_type_oid)
            })
        }),
        RegKind::Proc => builtin_function_named(&object),
        RegKind::Namespace => snapshot.namespace(&object).map(|n| n.oid),
        RegKind::Role => snapshot.role_oid(&object),
    }
}

/// `batches` with every column of a reg type (`regclass`, `regtype`, …) as the names of
/// its objects, as Postgres prints such values.
pub fn display_reg_types(
    catalog: &dyn CatalogReader,
    session: &SessionInfo,
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<Vec<RecordBatch>, ArrowError> {
    let reg_columns: Vec<(usize, RegKind)> = schema
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| sql::reg_kind_of(f).map(|k| (i, k)))
        .collect();
    if reg_columns.is_empty() {
        return Ok(batches);
    }
    let catalog = catalog.catalog();
    let snapshot = CatalogSnapshot::of(&catalog);
    let displayed = sql::displayed_schema(schema);
    batches
        .into_iter()
        .map(|batch| {
            let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
            for (index, kind) in &reg_columns {
                let oids = batch.column(*index);
                let Some(oids) = oids.as_primitive_opt::<Int64Type>() else {
                    continue;
                };
                let names: StringArray = (0..oids.len())
                    .map(|row| {
                        oids.is_valid(row).then(|| {
                            reg_type_display_name(
                                *kind,
                                oids.value(row) as u32,
                                &catalog,
                                &snapshot,
                                session,
                            )
                        })
                    })
                    .collect();
                columns[*index] = Arc::new(names);
            }
            RecordBatch::try_new(displayed.clone(), columns)
        })
        .collect()
}

/// How a value of a reg type prints: the object's name (qualified when an unqualified name
/// would not find it), or the oid when no object has it.
fn reg_type_display_name(
    kind: RegKind,
    oid: u32,
    catalog: &CatalogInput,
    snapshot: &CatalogSnapshot,
    session: &SessionInfo,
) -> String {
    let name = match kind {
        RegKind::Class => snapshot.class_name(oid).map(|(namespace, name)| {
            let searched = session.current_schemas(catalog, true);
            let quoted = sql::quote_ident(name);
            if snapshot.is_visible(&searched, namespace, name) {
                quoted
            } else {
                format!("{}.{quoted}", sql::quote_ident(namespace))
            }
        }),
        RegKind::Type => type_info(oid).map(|_| format_type(oid, -1)).or_else(|| {
            snapshot
                .relations
                .iter()
                .find(|r| r.row_type_oid == oid)
                .map(|r| r.name.clone())
        }),
        RegKind::Proc => builtin_function_name(oid),
        RegKind::Namespace => snapshot
            .namespaces
            .iter()
            .find(|n| n.oid == oid)
            .map(|n| n.name.clone()),
        RegKind::Role => snapshot.role_name(oid),
    };
    name.unwrap_or_else(|| oid.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_like_identifiers() {
        assert_eq!(
            name_parts("pg_catalog.pg_class"),
            vec!["pg_catalog", "pg_class"]
        );
        assert_eq!(name_parts("public.\"Or.ders\""), vec!["public", "Or.ders"]);
        assert_eq!(name_parts("Orders"), vec!["orders"]);
    }
}
