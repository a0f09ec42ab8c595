#!/usr/bin/env bash
# Regenerates the PostgreSQL 15 catalog facts that Fluxion presents to clients:
#
#   crates/system-catalog/catalog-data/pg15_columns.tsv
#       schema, name, pg_class.oid, relkind and columns (name, type oid, type
#       name, NOT NULL) of the pg_catalog / information_schema relations listed
#       below (information_schema domain types are reported as their base type),
#       read by crates/system-catalog/src/pg15_relations.rs;
#   crates/system-catalog/catalog-data/*.csv
#       built-in rows of pg_type, pg_proc, pg_am, pg_collation, pg_range,
#       pg_language, pg_tablespace, pg_opclass, pg_cast,
#       pg_operator and pg_get_keywords(), as PostgreSQL's own COPY CSV output
#       (reg* columns cast to plain oid numbers).
#
# The output is checked in; this script is its only source. Do not hand-edit
# the generated files; rerun this script instead. It reads from a PostgreSQL 15
# server (read-only) chosen by PGHOST/PGPORT/PGUSER/PGDATABASE, defaulting to
# 127.0.0.1/5433/postgres/postgres, which should be a freshly initdb'ed
# cluster. Output is ordered deterministically, so rerunning it against the
# same server gives byte-identical files.
#
# Usage: crates/system-catalog/catalog-data/generate.sh
set -euo pipefail

export PGHOST="${PGHOST:-127.0.0.1}"
export PGPORT="${PGPORT:-5433}"
export PGUSER="${PGUSER:-postgres}"
export PGDATABASE="${PGDATABASE:-postgres}"
export PGCLIENTENCODING=UTF8
# Pin every setting that affects text output, so the result does not depend
# on the server's or the user's configuration.
export PGOPTIONS="-c search_path=pg_catalog -c extra_float_digits=1 -c DateStyle=ISO,MDY -c IntervalStyle=postgres -c TimeZone=UTC -c bytea_output=hex -c standard_conforming_strings=on"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
data_dir="$here"

q() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }

version_num="$(q -c "SELECT current_setting('server_version_num')")"
if [[ "$version_num" -lt 150000 || "$version_num" -ge 160000 ]]; then
    echo "generate.sh: need a PostgreSQL 15 server, got server_version_num=$version_num" >&2
    exit 1
fi
version="$(q -c "SELECT split_part(current_setting('server_version'), ' ', 1)")"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# --------------------------------------------------------------------------
# Relations described in pg15_columns.tsv.
# --------------------------------------------------------------------------
pg_catalog_relations="
pg_aggregate pg_am pg_amop pg_amproc pg_attrdef pg_attribute pg_auth_members
pg_authid pg_available_extensions pg_cast pg_class pg_collation pg_constraint
pg_conversion pg_database pg_default_acl pg_depend pg_description pg_enum
pg_event_trigger pg_extension pg_foreign_data_wrapper pg_foreign_server
pg_foreign_table pg_group pg_index pg_indexes pg_inherits pg_init_privs
pg_language pg_largeobject_metadata pg_locks pg_matviews pg_namespace
pg_opclass pg_operator pg_opfamily pg_partitioned_table pg_policy
pg_prepared_xacts pg_proc pg_publication pg_publication_rel pg_range
pg_rewrite pg_roles pg_sequence pg_sequences pg_settings pg_shadow
pg_shdepend pg_shdescription pg_stat_activity pg_stat_all_tables
pg_stat_database pg_stat_user_tables pg_statio_user_tables pg_statistic_ext
pg_subscription pg_tables pg_tablespace pg_timezone_names pg_transform
pg_trigger pg_ts_config pg_type pg_user pg_user_mapping pg_views pg_seclabel
pg_stat_user_indexes pg_statio_user_indexes pg_stat_all_indexes
pg_file_settings pg_timezone_abbrevs pg_stats pg_replication_slots
pg_publication_tables pg_stat_replication pg_ts_dict pg_ts_parser
pg_ts_template pg_db_role_setting pg_statistic_ext_data pg_policies pg_rules
pg_prepared_statements pg_cursors pg_available_extension_versions
pg_hba_file_rules pg_config pg_shmem_allocations pg_stat_progress_copy
pg_user_mappings pg_largeobject pg_subscription_rel pg_stat_subscription
pg_publication_namespace pg_statistic pg_stat_user_functions pg_stat_bgwriter
pg_statio_all_tables pg_stat_sys_tables pg_sequence pg_inherits
"
information_schema_relations="
tables columns schemata table_constraints key_column_usage views
referential_constraints constraint_column_usage check_constraints routines
parameters sequences character_sets triggers table_privileges
column_privileges usage_privileges role_table_grants applicable_roles
enabled_roles domains element_types attributes collations user_defined_types
view_table_usage view_column_usage information_schema_catalog_name
"

# Turns a whitespace-separated word list into a SQL array literal of text.
sql_array() {
    local out="" w
    for w in $1; do
        out+="${out:+,}'$w'"
    done
    echo "ARRAY[$out]::text[]"
}

wanted_sql="
SELECT 'pg_catalog'::text AS schema, unnest($(sql_array "$pg_catalog_relations")) AS name
UNION
SELECT 'information_schema'::text, unnest($(sql_array "$information_schema_relations"))"

missing="$(q -c "
SELECT w.schema || '.' || w.name
FROM ($wanted_sql) w
WHERE NOT EXISTS (
    SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = w.schema AND c.relname = w.name)
ORDER BY w.schema COLLATE \"C\", w.name COLLATE \"C\"")"
if [[ -n "$missing" ]]; then
    echo "generate.sh: not in PostgreSQL $version, skipped:" $missing >&2
fi

# One line per column, in attnum order, relations by schema and name:
# schema, relation, pg_class.oid, relkind, column, type oid, type name, NOT NULL.
{
    printf 'schema\trelation\toid\tkind\tcolumn\ttype_oid\ttype_name\tnot_null\n'
    q -F $'\t' -c "
WITH RECURSIVE
wanted AS ($wanted_sql),
-- Every type mapped to itself, or for a domain to its (ultimate) base type.
base_type(oid, base) AS (
    SELECT oid, oid FROM pg_type WHERE typtype <> 'd'
    UNION ALL
    SELECT t.oid, b.base FROM pg_type t JOIN base_type b ON t.typbasetype = b.oid
    WHERE t.typtype = 'd'
)
SELECT n.nspname, c.relname, c.oid::bigint, c.relkind, a.attname, bt.base::bigint,
    format_type(bt.base, NULL), a.attnotnull::text
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN wanted w ON w.schema = n.nspname AND w.name = c.relname
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN base_type bt ON bt.oid = a.atttypid
ORDER BY n.nspname COLLATE \"C\", c.relname COLLATE \"C\", a.attnum"
} > "$tmp/pg15_columns.tsv"

# --------------------------------------------------------------------------
# Built-in rows, as CSV.
# --------------------------------------------------------------------------
# reg* types (regproc, regprocedure, regoper, regoperator, regclass, regtype,
# regconfig, regdictionary, regnamespace, regrole, regcollation): dumped as oid.
reg_types="24, 2202, 2203, 2204, 2205, 2206, 3734, 3769, 4089, 4096, 4191"

# dump_csv FILE RELATION WHERE ORDER_BY: all columns of pg_catalog.RELATION
# (aliased r) in attnum order, reg* columns cast to oid.
dump_csv() {
    local file="$1" rel="$2" where="$3" order_by="$4" cols
    cols="$(q -c "
SELECT string_agg(
    CASE
        WHEN a.atttypid IN ($reg_types)
            THEN 'r.' || quote_ident(a.attname) || '::oid AS ' || quote_ident(a.attname)
        WHEN a.atttypid IN (SELECT typarray FROM pg_type WHERE oid IN ($reg_types))
            THEN 'r.' || quote_ident(a.attname) || '::oid[] AS ' || quote_ident(a.attname)
        ELSE 'r.' || quote_ident(a.attname)
    END,
    ', ' ORDER BY a.attnum)
FROM pg_attribute a
WHERE a.attrelid = 'pg_catalog.$rel'::regclass AND a.attnum > 0 AND NOT a.attisdropped")"
    q -c "COPY (SELECT $cols FROM pg_catalog.$rel AS r WHERE $where ORDER BY $order_by)
          TO STDOUT WITH (FORMAT csv, HEADER)" > "$tmp/$file"
}

dump_csv pg_type.csv pg_type "r.typnamespace = 11" "r.oid"

proc_names="
format_type pg_get_expr pg_table_is_visible pg_type_is_visible
pg_function_is_visible pg_get_indexdef pg_get_constraintdef pg_get_viewdef
pg_get_userbyid obj_description col_description shobj_description
pg_get_serial_sequence pg_encoding_to_char has_table_privilege
has_schema_privilege has_any_column_privilege has_column_privilege
has_database_privilege current_setting set_config current_database
current_schema current_schemas pg_size_pretty pg_table_size
pg_total_relation_size pg_relation_size unnest generate_subscripts
generate_series array_agg array_to_string array_upper array_lower
array_length string_to_array parse_ident quote_ident json_build_object
bool_and bool_or row_number count sum avg min max version pg_get_keywords
pg_backend_pid pg_postmaster_start_time now to_regtype to_regclass format
pg_get_function_result pg_get_function_arguments
pg_get_function_identity_arguments pg_get_triggerdef pg_get_partkeydef
pg_get_statisticsobjdef_columns pg_is_in_recovery txid_current
inet_server_addr inet_server_port pg_get_ruledef
"
dump_csv pg_proc.csv pg_proc "
    r.oid IN (
        SELECT f::oid
        FROM pg_type t,
            LATERAL (VALUES (t.typinput), (t.typoutput), (t.typreceive), (t.typsend),
                            (t.typmodin), (t.typmodout), (t.typanalyze), (t.typsubscript)) v(f)
        WHERE t.typnamespace = 11 AND f::oid <> 0)
    OR (r.pronamespace = 11 AND r.proname = ANY ($(sql_array "$proc_names")))" "r.oid"

for rel in pg_am pg_language pg_tablespace pg_cast pg_operator; do
    dump_csv "$rel.csv" "$rel" "true" "r.oid"
done
# Only the collations every build has (default, C, POSIX, ucs_basic): ICU's depend on the
# machine's ICU and locales.
dump_csv pg_collation.csv pg_collation "r.collprovider IN ('d', 'c') AND r.oid < 16384" "r.oid"
# pg_range has no oid column; its key is rngtypid (the range type's oid).
dump_csv pg_range.csv pg_range "true" "r.rngtypid"
dump_csv pg_opclass.csv pg_opclass \
    "r.opcmethod IN (SELECT oid FROM pg_am WHERE amname IN ('btree', 'hash'))" "r.oid"

q -c "COPY (SELECT * FROM pg_get_keywords() ORDER BY word COLLATE \"C\")
      TO STDOUT WITH (FORMAT csv, HEADER)" > "$tmp/pg_keywords.csv"

# --------------------------------------------------------------------------
# Install the results only once everything succeeded.
# --------------------------------------------------------------------------
chmod 644 "$tmp"/*
for f in "$tmp"/*.csv "$tmp"/pg15_columns.tsv; do
    mv "$f" "$data_dir/$(basename "$f")"
done
echo "generate.sh: wrote pg15_columns.tsv and CSV files from PostgreSQL $version" >&2
