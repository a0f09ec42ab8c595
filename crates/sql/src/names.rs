//! Names as PostgreSQL reads and prints them: identifiers fold to lower case unless quoted,
//! object names are `[schema.]name` (a database part must name this database), and a name
//! prints quoted exactly when reading it back needs the quotes.

use datafusion::sql::sqlparser::ast::{Ident, ObjectName, ObjectNamePart};

use crate::session::DATABASE;
use crate::SqlError;

/// The keywords PostgreSQL 15 reserves (`pg_get_keywords()` with catcode `R`): an identifier
/// spelled like one must be quoted.
pub const RESERVED_KEYWORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

/// An identifier as Postgres folds it: quoted identifiers keep their case, others are lower
/// case.
pub fn fold_ident(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// A name as written in a statement: an optional schema and the object's own name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// The schema, if the name was qualified.
    pub schema: Option<String>,
    /// The object's name within its schema.
    pub name: String,
}

impl ObjectRef {
    /// The name `name` in schema `schema`.
    pub fn qualified(schema: &str, name: &str) -> Self {
        ObjectRef {
            schema: Some(schema.to_string()),
            name: name.to_string(),
        }
    }

    /// The name as SQL that reads back as it (`public.orders`, `"Odd"."Name"`).
    pub fn to_sql(&self) -> String {
        object_name(self).to_string()
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.schema {
            Some(schema) => write!(f, "{schema}.{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// The parts of a (possibly schema- or database-qualified) name, folded as Postgres folds them.
pub(crate) fn object_ref(name: &ObjectName) -> Result<ObjectRef, SqlError> {
    let parts = name
        .0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(ident) => Ok(fold_ident(ident)),
            ObjectNamePart::Function(_) => {
                Err(SqlError::Unsupported(format!("object name {name}")))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    match parts.as_slice() {
        [object] => Ok(ObjectRef {
            schema: None,
            name: object.clone(),
        }),
        [schema, object] => Ok(ObjectRef {
            schema: Some(schema.clone()),
            name: object.clone(),
        }),
        [database, schema, object] if database == DATABASE => Ok(ObjectRef {
            schema: Some(schema.clone()),
            name: object.clone(),
        }),
        [_, _, _] => Err(SqlError::Unsupported(format!(
            "cross-database references are not implemented: {name}"
        ))),
        _ => Err(SqlError::Syntax(format!(
            "improper qualified name (too many dotted names): {name}"
        ))),
    }
}

/// A column name: the last part of a possibly qualified name.
pub(crate) fn column_name(name: &ObjectName) -> Result<String, SqlError> {
    Ok(object_ref(name)?.name)
}

/// An identifier that reads back as `name`: quoted unless it is a lower-case word that needs
/// no quotes (what `quote_ident` decides).
pub(crate) fn sql_ident(name: &str) -> Ident {
    if needs_quotes(name) {
        Ident::with_quote('"', name)
    } else {
        Ident::new(name)
    }
}

/// `name` as an identifier that reads back unchanged (PostgreSQL's `quote_ident`).
pub fn quote_ident(name: &str) -> String {
    sql_ident(name).to_string()
}

/// The SQL name of an object name.
pub(crate) fn object_name(name: &ObjectRef) -> ObjectName {
    let mut parts = Vec::new();
    if let Some(schema) = &name.schema {
        parts.push(ObjectNamePart::Identifier(sql_ident(schema)));
    }
    parts.push(ObjectNamePart::Identifier(sql_ident(&name.name)));
    ObjectName(parts)
}

/// Whether Postgres needs `name` quoted to read it back unchanged.
pub fn needs_quotes(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    !starts_well
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
        || RESERVED_KEYWORDS.contains(&name)
}
