//! The columns of the PostgreSQL 15 `pg_catalog` and `information_schema` relations Fluxion
//! presents, read from `catalog-data/pg15_columns.tsv` (generated from PostgreSQL 15 by
//! `catalog-data/generate.sh`: one line per column, in attnum order).

use std::sync::OnceLock;

/// A column of a PostgreSQL 15 catalog relation.
pub(crate) struct ColumnDef {
    pub name: &'static str,
    pub type_oid: u32,
    pub type_name: &'static str,
    pub not_null: bool,
}

/// A PostgreSQL 15 catalog relation: its schema, name, `pg_class.oid`, relkind ('r' table,
/// 'v' view) and columns in attnum order.
pub(crate) struct RelationDef {
    pub schema: &'static str,
    pub name: &'static str,
    pub oid: u32,
    pub kind: char,
    pub columns: Vec<ColumnDef>,
}

/// The generated column list.
const COLUMNS_TSV: &str = include_str!("../catalog-data/pg15_columns.tsv");

/// Every relation, in the file's order (by schema, then name).
pub(crate) fn relations() -> &'static [RelationDef] {
    static RELATIONS: OnceLock<Vec<RelationDef>> = OnceLock::new();
    RELATIONS.get_or_init(|| parse(COLUMNS_TSV))
}

/// The relations of the TSV text (a header line, then `schema relation oid kind column
/// type_oid type_name not_null` per column).
fn parse(text: &'static str) -> Vec<RelationDef> {
    let mut relations: Vec<RelationDef> = Vec::new();
    for line in text.lines().skip(1).filter(|l| !l.is_empty()) {
        let fields: Vec<&'static str> = line.split('\t').collect();
        let [schema, name, oid, kind, column, type_oid, type_name, not_null] = fields[..] else {
            panic!("invariant: pg15_columns.tsv has 8 fields a line: {line}");
        };
        let number = |text: &str| -> u32 {
            text.parse()
                .unwrap_or_else(|_| panic!("invariant: pg15_columns.tsv number: {line}"))
        };
        let is_new = relations
            .last()
            .is_none_or(|r| r.schema != schema || r.name != name);
        if is_new {
            relations.push(RelationDef {
                schema,
                name,
                oid: number(oid),
                kind: kind.chars().next().unwrap_or('r'),
                columns: Vec::new(),
            });
        }
        if let Some(relation) = relations.last_mut() {
            relation.columns.push(ColumnDef {
                name: column,
                type_oid: number(type_oid),
                type_name,
                not_null: not_null == "true",
            });
        }
    }
    relations
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_file_holds_every_relation() {
        let relations = relations();
        assert_eq!(relations.len(), 131);
        assert_eq!(
            relations.iter().map(|r| r.columns.len()).sum::<usize>(),
            1443
        );
        let pg_class = relations.iter().find(|r| r.name == "pg_class").unwrap();
        assert_eq!((pg_class.oid, pg_class.kind), (1259, 'r'));
        assert_eq!(pg_class.columns[0].name, "oid");
    }
}
