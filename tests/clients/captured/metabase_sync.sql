-- SQL Metabase's PostgreSQL driver sends on connecting and during a database sync (metabase/metabase, 2025 revision:
-- src/metabase/driver/postgres.clj@008fd6675457 + sql_jdbc sync/execute code; pgjdbc 42.7 and c3p0 underneath), reconstructed
-- from source with HoneySQL 2 rendering (:ansi quoting, ? -> $n). Entries are separated by a line `-- next`.
-- pgjdbc ConnectionFactoryImpl.runInitialQueries sends this variant only to a server reporting a version older than 9.0
SET extra_float_digits = 2
-- next
-- pgjdbc runInitialQueries: current pgjdbc sends this only to servers older than 12; older 42.x releases
-- (e.g. 42.5.5 in jdbc_compat.sql) to every 9.0+ server
SET extra_float_digits = 3
-- next
-- pgjdbc runInitialQueries: Metabase sets ApplicationName (config/mb-version-and-process-identifier:
-- 'Metabase <tag> [<process uuid>]') and no assumeMinServerVersion, so it is sent as a statement
SET application_name = 'Metabase v0.55.4 [3f6c2a1e-8b4d-4c2e-9a7f-5d1b0e6c4a2b]'
-- next
-- connection test when the database is added or its details are saved (sql_jdbc/connection.clj can-connect-with-spec?)
SELECT 1
-- next
-- pgjdbc Connection.getTransactionIsolation, called by the c3p0 pool when it opens a pooled connection
SHOW TRANSACTION ISOLATION LEVEL
-- next
-- apparently pgjdbc Connection.getCatalog on a new pooled connection (c3p0 records connection defaults)
-- not found in source I could read: seen in a third-party capture of Metabase v0.62 against PostgreSQL 16
select current_catalog
-- next
-- set-best-transaction-level!: Connection.setTransactionIsolation(READ_UNCOMMITTED), pgjdbc PgConnection, src/metabase/driver/sql_jdbc/execute.clj set-default-connection-options!
SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ UNCOMMITTED
-- next
-- c3p0 resetting the pooled connection to its default isolation level on check-in (the statement is pgjdbc's
-- setTransactionIsolation text; that c3p0 sends it during a sync is from the capture)
-- not found in source I could read: seen in a third-party capture of Metabase v0.62 against PostgreSQL 16
SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED
-- next
-- set-time-zone-if-supported! with the report timezone set to UTC: set-timezone-sql "SET SESSION TIMEZONE TO %s;", src/metabase/driver/postgres.clj@008fd6675457
SET SESSION TIMEZONE TO 'UTC';
-- next
-- database default timezone at sync start (driver/db-default-timezone), src/metabase/driver/postgres.clj@008fd6675457
-- (sync reads use Connection.setReadOnly(true); pgjdbc would wrap them in BEGIN READ ONLY only with autocommit off,
-- and this revision's set-default-connection-options! turns autocommit on for read connections)
show timezone;
-- next
-- syncable schemas: JDBC DatabaseMetaData.getSchemas (src/metabase/driver/sql_jdbc/sync/describe_database.clj all-schemas)
-- exact text not found in source I could read: taken from a third-party capture of Metabase v0.62 against PostgreSQL 16
-- (the stored pgjdbc source is older; jdbc_compat.sql holds the pgjdbc 42.5.5 spelling)
SELECT nspname AS "TABLE_SCHEM", current_database() AS "TABLE_CATALOG" FROM pg_catalog.pg_namespace  WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_'  OR nspname = (pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_'  OR nspname = replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_'))  ORDER BY "TABLE_SCHEM"
-- next
-- same rows as PostgreSQL
-- table privileges of the current user (sql-jdbc.sync/current-user-table-privileges, joined with \n), src/metabase/driver/postgres.clj@008fd6675457
with table_privileges as (
 select
   NULL as role,
   t.schemaname as schema,
   t.objectname as table,
   pg_catalog.has_any_column_privilege(current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"',  'update') as update,
   pg_catalog.has_any_column_privilege(current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"',  'select') as select,
   pg_catalog.has_any_column_privilege(current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"',  'insert') as insert,
   pg_catalog.has_table_privilege(     current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"',  'delete') as delete
 from (
   select schemaname, tablename as objectname from pg_catalog.pg_tables
   union
   select schemaname, viewname as objectname from pg_catalog.pg_views
   union
   select schemaname, matviewname as objectname from pg_catalog.pg_matviews
 ) t
 where t.schemaname !~ '^pg_'
   and t.schemaname <> 'information_schema'
   and pg_catalog.has_schema_privilege(current_user, t.schemaname, 'usage')
)
select t.*
from table_privileges t
-- next
-- describe-database: tables, views, materialized views with comments and pg_stat_user_tables.n_live_tup
-- (get-tables-sql), src/metabase/driver/postgres.clj@008fd6675457
-- first parameters: $1 = 0, $2 = '^pg_', $3 = 'information_schema', $4 = 'analytics', $5 = 'public'
SELECT "n"."nspname" AS "schema", "c"."relname" AS "name", CASE "c"."relkind" WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW' WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS "type", "d"."description" AS "description", "stat"."n_live_tup" AS "estimated_row_count" FROM "pg_catalog"."pg_class" AS "c" INNER JOIN "pg_catalog"."pg_namespace" AS "n" ON "c"."relnamespace" = "n"."oid" LEFT JOIN "pg_catalog"."pg_description" AS "d" ON ("c"."oid" = "d"."objoid") AND ("d"."objsubid" = $1) AND ("d"."classoid" = 'pg_class'::regclass) LEFT JOIN "pg_stat_user_tables" AS "stat" ON ("n"."nspname" = "stat"."schemaname") AND ("c"."relname" = "stat"."relname") WHERE ("c"."relnamespace" = "n"."oid") AND ("n"."nspname" !~ $2) AND ("n"."nspname" <> $3) AND c.relkind in ('r', 'p', 'v', 'f', 'm') AND ("n"."nspname" IN ($4, $5)) ORDER BY "type" ASC, "schema" ASC, "name" ASC
-- next
-- enum types, fetched before describing fields (enum-types / describe-fields-pre-process-xf), src/metabase/driver/postgres.clj@008fd6675457
SELECT nspname, typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.oid IN (SELECT DISTINCT enumtypid FROM pg_enum e)
-- next
-- same rows as PostgreSQL
-- describe-fields for the whole database: information_schema.columns with primary keys and
-- col_description(format('%I.%I', ...)::regclass::oid, ...), UNION ALL materialized-view columns from pg_attribute
-- (describe-fields-sql), src/metabase/driver/postgres.clj@008fd6675457
-- first parameters: $1 = 'analytics', $2 = 'public', $3 = 'analytics', $4 = 'public'
SELECT "c"."column_name" AS "name", CASE WHEN "c"."udt_schema" IN ('public', 'pg_catalog') THEN FORMAT('%s', "c"."udt_name") ELSE FORMAT('"%s"."%s"', "c"."udt_schema", "c"."udt_name") END AS "database-type", "c"."ordinal_position" - 1 AS "database-position", "c"."table_schema" AS "table-schema", "c"."table_name" AS "table-name", "pk"."column_name" IS NOT NULL AS "pk?", COL_DESCRIPTION(CAST(CAST(FORMAT('%I.%I', CAST("c"."table_schema" AS TEXT), CAST("c"."table_name" AS TEXT)) AS REGCLASS) AS OID), "c"."ordinal_position") AS "field-comment", (("column_default" IS NULL) OR (LOWER("column_default") = 'null')) AND ("is_nullable" = 'NO') AND NOT ((("column_default" IS NOT NULL) AND ("column_default" LIKE '%nextval(%')) OR ("is_identity" <> 'NO')) AS "database-required", (("column_default" IS NOT NULL) AND ("column_default" LIKE '%nextval(%')) OR ("is_identity" <> 'NO') AS "database-is-auto-increment" FROM "information_schema"."columns" AS "c" LEFT JOIN (SELECT "tc"."table_schema", "tc"."table_name", "kc"."column_name" FROM "information_schema"."table_constraints" AS "tc" INNER JOIN "information_schema"."key_column_usage" AS "kc" ON ("tc"."constraint_name" = "kc"."constraint_name") AND ("tc"."table_schema" = "kc"."table_schema") AND ("tc"."table_name" = "kc"."table_name") WHERE "tc"."constraint_type" = 'PRIMARY KEY') AS "pk" ON ("c"."table_schema" = "pk"."table_schema") AND ("c"."table_name" = "pk"."table_name") AND ("c"."column_name" = "pk"."column_name") WHERE c.table_schema !~ '^information_schema|catalog_history|pg_' AND ("c"."table_schema" IN ($1, $2)) UNION ALL SELECT "pa"."attname" AS "name", CASE WHEN "ptn"."nspname" IN ('public', 'pg_catalog') THEN FORMAT('%s', "pt"."typname") ELSE FORMAT('"%s"."%s"', "ptn"."nspname", "pt"."typname") END AS "database-type", "pa"."attnum" - 1 AS "database-position", "pn"."nspname" AS "table-schema", "pc"."relname" AS "table-name", FALSE AS "pk?", NULL AS "field-comment", FALSE AS "database-required", FALSE AS "database-is-auto-increment" FROM "pg_catalog"."pg_class" AS "pc" INNER JOIN "pg_catalog"."pg_namespace" AS "pn" ON "pn"."oid" = "pc"."relnamespace" INNER JOIN "pg_catalog"."pg_attribute" AS "pa" ON "pa"."attrelid" = "pc"."oid" INNER JOIN "pg_catalog"."pg_type" AS "pt" ON "pt"."oid" = "pa"."atttypid" INNER JOIN "pg_catalog"."pg_namespace" AS "ptn" ON "ptn"."oid" = "pt"."typnamespace" WHERE ("pc"."relkind" = 'm') AND ("pa"."attnum" >= 1) AND ("pn"."nspname" IN ($3, $4)) ORDER BY "table-schema" ASC, "table-name" ASC, "database-position" ASC
-- next
-- same rows as PostgreSQL
-- describe-fields for one table (table re-sync / metadata/table-fields-metadata), src/metabase/driver/postgres.clj@008fd6675457
-- first parameters: $1 = 'public', $2 = 'orders', $3 = 'public', $4 = 'orders'
SELECT "c"."column_name" AS "name", CASE WHEN "c"."udt_schema" IN ('public', 'pg_catalog') THEN FORMAT('%s', "c"."udt_name") ELSE FORMAT('"%s"."%s"', "c"."udt_schema", "c"."udt_name") END AS "database-type", "c"."ordinal_position" - 1 AS "database-position", "c"."table_schema" AS "table-schema", "c"."table_name" AS "table-name", "pk"."column_name" IS NOT NULL AS "pk?", COL_DESCRIPTION(CAST(CAST(FORMAT('%I.%I', CAST("c"."table_schema" AS TEXT), CAST("c"."table_name" AS TEXT)) AS REGCLASS) AS OID), "c"."ordinal_position") AS "field-comment", (("column_default" IS NULL) OR (LOWER("column_default") = 'null')) AND ("is_nullable" = 'NO') AND NOT ((("column_default" IS NOT NULL) AND ("column_default" LIKE '%nextval(%')) OR ("is_identity" <> 'NO')) AS "database-required", (("column_default" IS NOT NULL) AND ("column_default" LIKE '%nextval(%')) OR ("is_identity" <> 'NO') AS "database-is-auto-increment" FROM "information_schema"."columns" AS "c" LEFT JOIN (SELECT "tc"."table_schema", "tc"."table_name", "kc"."column_name" FROM "information_schema"."table_constraints" AS "tc" INNER JOIN "information_schema"."key_column_usage" AS "kc" ON ("tc"."constraint_name" = "kc"."constraint_name") AND ("tc"."table_schema" = "kc"."table_schema") AND ("tc"."table_name" = "kc"."table_name") WHERE "tc"."constraint_type" = 'PRIMARY KEY') AS "pk" ON ("c"."table_schema" = "pk"."table_schema") AND ("c"."table_name" = "pk"."table_name") AND ("c"."column_name" = "pk"."column_name") WHERE c.table_schema !~ '^information_schema|catalog_history|pg_' AND ("c"."table_schema" IN ($1)) AND ("c"."table_name" IN ($2)) UNION ALL SELECT "pa"."attname" AS "name", CASE WHEN "ptn"."nspname" IN ('public', 'pg_catalog') THEN FORMAT('%s', "pt"."typname") ELSE FORMAT('"%s"."%s"', "ptn"."nspname", "pt"."typname") END AS "database-type", "pa"."attnum" - 1 AS "database-position", "pn"."nspname" AS "table-schema", "pc"."relname" AS "table-name", FALSE AS "pk?", NULL AS "field-comment", FALSE AS "database-required", FALSE AS "database-is-auto-increment" FROM "pg_catalog"."pg_class" AS "pc" INNER JOIN "pg_catalog"."pg_namespace" AS "pn" ON "pn"."oid" = "pc"."relnamespace" INNER JOIN "pg_catalog"."pg_attribute" AS "pa" ON "pa"."attrelid" = "pc"."oid" INNER JOIN "pg_catalog"."pg_type" AS "pt" ON "pt"."oid" = "pa"."atttypid" INNER JOIN "pg_catalog"."pg_namespace" AS "ptn" ON "ptn"."oid" = "pt"."typnamespace" WHERE ("pc"."relkind" = 'm') AND ("pa"."attnum" >= 1) AND ("pn"."nspname" IN ($3)) AND ("pc"."relname" IN ($4)) ORDER BY "table-schema" ASC, "table-name" ASC, "database-position" ASC
-- next
-- same rows as PostgreSQL
-- describe-fields for the materialized view analytics.customer_totals (its columns come from the pg_attribute branch), src/metabase/driver/postgres.clj@008fd6675457
-- first parameters: $1 = 'analytics', $2 = 'customer_totals', $3 = 'analytics', $4 = 'customer_totals'
SELECT "c"."column_name" AS "name", CASE WHEN "c"."udt_schema" IN ('public', 'pg_catalog') THEN FORMAT('%s', "c"."udt_name") ELSE FORMAT('"%s"."%s"', "c"."udt_schema", "c"."udt_name") END AS "database-type", "c"."ordinal_position" - 1 AS "database-position", "c"."table_schema" AS "table-schema", "c"."table_name" AS "table-name", "pk"."column_name" IS NOT NULL AS "pk?", COL_DESCRIPTION(CAST(CAST(FORMAT('%I.%I', CAST("c"."table_schema" AS TEXT), CAST("c"."table_name" AS TEXT)) AS REGCLASS) AS OID), "c"."ordinal_position") AS "field-comment", (("column_default" IS NULL) OR (LOWER("column_default") = 'null')) AND ("is_nullable" = 'NO') AND NOT ((("column_default" IS NOT NULL) AND ("column_default" LIKE '%nextval(%')) OR ("is_identity" <> 'NO')) AS "database-required", (("column_default" IS NOT NULL) AND ("column_default" LIKE '%nextval(%')) OR ("is_identity" <> 'NO') AS "database-is-auto-increment" FROM "information_schema"."columns" AS "c" LEFT JOIN (SELECT "tc"."table_schema", "tc"."table_name", "kc"."column_name" FROM "information_schema"."table_constraints" AS "tc" INNER JOIN "information_schema"."key_column_usage" AS "kc" ON ("tc"."constraint_name" = "kc"."constraint_name") AND ("tc"."table_schema" = "kc"."table_schema") AND ("tc"."table_name" = "kc"."table_name") WHERE "tc"."constraint_type" = 'PRIMARY KEY') AS "pk" ON ("c"."table_schema" = "pk"."table_schema") AND ("c"."table_name" = "pk"."table_name") AND ("c"."column_name" = "pk"."column_name") WHERE c.table_schema !~ '^information_schema|catalog_history|pg_' AND ("c"."table_schema" IN ($1)) AND ("c"."table_name" IN ($2)) UNION ALL SELECT "pa"."attname" AS "name", CASE WHEN "ptn"."nspname" IN ('public', 'pg_catalog') THEN FORMAT('%s', "pt"."typname") ELSE FORMAT('"%s"."%s"', "ptn"."nspname", "pt"."typname") END AS "database-type", "pa"."attnum" - 1 AS "database-position", "pn"."nspname" AS "table-schema", "pc"."relname" AS "table-name", FALSE AS "pk?", NULL AS "field-comment", FALSE AS "database-required", FALSE AS "database-is-auto-increment" FROM "pg_catalog"."pg_class" AS "pc" INNER JOIN "pg_catalog"."pg_namespace" AS "pn" ON "pn"."oid" = "pc"."relnamespace" INNER JOIN "pg_catalog"."pg_attribute" AS "pa" ON "pa"."attrelid" = "pc"."oid" INNER JOIN "pg_catalog"."pg_type" AS "pt" ON "pt"."oid" = "pa"."atttypid" INNER JOIN "pg_catalog"."pg_namespace" AS "ptn" ON "ptn"."oid" = "pt"."typnamespace" WHERE ("pc"."relkind" = 'm') AND ("pa"."attnum" >= 1) AND ("pn"."nspname" IN ($3)) AND ("pc"."relname" IN ($4)) ORDER BY "table-schema" ASC, "table-name" ASC, "database-position" ASC
-- next
-- foreign keys of the synced schemas (describe-fks-sql), src/metabase/driver/postgres.clj@008fd6675457
-- first parameters: $1 = 'analytics', $2 = 'public'
SELECT "fk_ns"."nspname" AS "fk-table-schema", "fk_table"."relname" AS "fk-table-name", "fk_column"."attname" AS "fk-column-name", "pk_ns"."nspname" AS "pk-table-schema", "pk_table"."relname" AS "pk-table-name", "pk_column"."attname" AS "pk-column-name" FROM "pg_constraint" AS "c" INNER JOIN "pg_class" AS "fk_table" ON "c"."conrelid" = "fk_table"."oid" INNER JOIN "pg_namespace" AS "fk_ns" ON "c"."connamespace" = "fk_ns"."oid" INNER JOIN "pg_attribute" AS "fk_column" ON "c"."conrelid" = "fk_column"."attrelid" INNER JOIN "pg_class" AS "pk_table" ON "c"."confrelid" = "pk_table"."oid" INNER JOIN "pg_namespace" AS "pk_ns" ON "pk_table"."relnamespace" = "pk_ns"."oid" INNER JOIN "pg_attribute" AS "pk_column" ON "c"."confrelid" = "pk_column"."attrelid" WHERE fk_ns.nspname !~ '^information_schema|catalog_history|pg_' AND ("c"."contype" = 'f'::char) AND ("fk_column"."attnum" = ANY(c.conkey)) AND ("pk_column"."attnum" = ANY(c.confkey)) AND ("fk_ns"."nspname" IN ($1, $2)) ORDER BY "fk-table-schema" ASC, "fk-table-name" ASC
-- next
-- first column of every unfiltered index via information_schema._pg_expandarray (describe-indexes-sql), src/metabase/driver/postgres.clj@008fd6675457
-- (index sync is off in this revision: :index-info is commented out of the postgres feature list)
-- first parameters: $1 = 'analytics', $2 = 'public', $3 = 1
SELECT "tmp"."table-schema", "tmp"."table-name", TRIM(BOTH '"' FROM PG_CATALOG.PG_GET_INDEXDEF("tmp"."ci_oid", "tmp"."pos", FALSE)) AS "field-name" FROM (SELECT "n"."nspname" AS "table-schema", "ct"."relname" AS "table-name", "ci"."oid" AS "ci_oid", (INFORMATION_SCHEMA._PG_EXPANDARRAY("i"."indkey"))."n" AS "pos" FROM "pg_catalog"."pg_class" AS "ct" INNER JOIN "pg_catalog"."pg_namespace" AS "n" ON "ct"."relnamespace" = "n"."oid" INNER JOIN "pg_catalog"."pg_index" AS "i" ON "ct"."oid" = "i"."indrelid" INNER JOIN "pg_catalog"."pg_class" AS "ci" ON "ci"."oid" = "i"."indexrelid" WHERE (PG_CATALOG.PG_GET_EXPR("i"."indpred", "i"."indrelid") IS NULL) AND n.nspname !~ '^information_schema|catalog_history|pg_' AND ("n"."nspname" IN ($1, $2))) AS "tmp" WHERE "tmp"."pos" = $3
-- next
-- JSON unfolding of orders.attrs: describe-table-fields -> JDBC getColumns(null, 'public', 'orders', null), src/metabase/driver/sql_jdbc/sync/describe_table.clj@00c37c6669cd
-- exact text not found in source I could read: taken from a third-party capture of Metabase v0.62 against PostgreSQL 16
-- (the stored pgjdbc source is older; jdbc_compat.sql holds the pgjdbc 42.5.5 spelling)
-- first parameters: $1 = 'public', $2 = 'orders'
SELECT * FROM (SELECT current_database() AS current_database, n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull  OR (t.typtype = 'd' AND t.typnotnull) AS attnotnull,a.atttypmod,a.attlen,t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS attnum, nullif(a.attidentity, '') as attidentity,nullif(a.attgenerated, '') as attgenerated,pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS adsrc,dsc.description,t.typbasetype,t.typtype  FROM pg_catalog.pg_namespace n  JOIN pg_catalog.pg_class c ON (c.relnamespace = n.oid)  JOIN pg_catalog.pg_attribute a ON (a.attrelid=c.oid)  JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid)  LEFT JOIN pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum)  LEFT JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)  LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class')  LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND dn.nspname='pg_catalog')  WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND NOT a.attisdropped  AND n.nspname LIKE $1 AND c.relname LIKE $2) c WHERE true  ORDER BY nspname,c.relname,attnum
-- next
-- JSON unfolding: get-table-pks -> JDBC getPrimaryKeys(null, 'public', 'orders'), src/metabase/driver/sql_jdbc/sync/describe_table.clj@00c37c6669cd
-- exact text not found in source I could read: taken from a third-party capture of Metabase v0.62 against PostgreSQL 16
-- (the stored pgjdbc source is older; jdbc_compat.sql holds the pgjdbc 42.5.5 spelling)
-- first parameters: $1 = 'public', $2 = 'orders'
SELECT        result.TABLE_CAT AS "TABLE_CAT",        result.TABLE_SCHEM AS "TABLE_SCHEM",        result.TABLE_NAME AS "TABLE_NAME",        result.COLUMN_NAME AS "COLUMN_NAME",        result.KEY_SEQ AS "KEY_SEQ",        result.PK_NAME AS "PK_NAME"FROM      (SELECT current_database() AS TABLE_CAT, n.nspname AS TABLE_SCHEM,   ct.relname AS TABLE_NAME, a.attname AS COLUMN_NAME,   (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname AS PK_NAME,   information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS A_ATTNUM, i.indnkeyatts as KEY_COUNT FROM pg_catalog.pg_class ct   JOIN pg_catalog.pg_attribute a ON (ct.oid = a.attrelid)   JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)   JOIN pg_catalog.pg_index i ON ( a.attrelid = i.indrelid)   JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid) WHERE true  AND n.nspname = $1 AND ct.relname = $2 AND i.indisprimary  ) result where  result.A_ATTNUM = (result.KEYS).x AND result.KEY_SEQ <= KEY_COUNT  ORDER BY result.table_name, result.pk_name, result.key_seq
-- next
-- JSON unfolding: sample of orders.attrs from the first and last 250 rows by primary key (sample-json-row-honey-sql), src/metabase/driver/sql_jdbc/sync/describe_table.clj@00c37c6669cd
-- reconstructed: HoneySQL rendering of the source form, not a captured string
-- first parameters: $1 = 250, $2 = 250
SELECT CASE WHEN 50000 < LENGTH(CAST("public"."orders"."attrs" AS TEXT)) THEN NULL ELSE "public"."orders"."attrs" END AS "attrs" FROM "public"."orders" INNER JOIN ((SELECT "public"."orders"."id" FROM "public"."orders" ORDER BY "public"."orders"."id" ASC LIMIT $1) UNION ALL (SELECT "public"."orders"."id" FROM "public"."orders" ORDER BY "public"."orders"."id" DESC LIMIT $2)) AS "result" ON "result"."id" = "public"."orders"."id"
-- next
-- SELECT probe (simple-select-probe-query), used for FOREIGN TABLEs, which the privileges query does not cover;
-- shown against orders (the demo schema has no foreign table); reconstructed rendering, src/metabase/driver/sql_jdbc/sync/describe_database.clj
SELECT TRUE AS "_" FROM "public"."orders" WHERE 1 <> 1 LIMIT 0
-- next
-- fingerprinting (sync analyze step): text columns of customers sampled through the query processor
-- (table-rows-sample, truncation-size 1234; the QP prefixes the statement with a `-- Metabase` comment line and
-- names expressions substring<gensym>); reconstructed from src/metabase/db/metadata_queries.clj, not captured
SELECT SUBSTRING("public"."customers"."name", 1, 1234) AS "substring7104", SUBSTRING("public"."customers"."region", 1, 1234) AS "substring7105" FROM "public"."customers" LIMIT 10000
-- next
-- fingerprinting: non-text columns of orders (table-rows-sample); reconstructed, see the previous entry
SELECT "public"."orders"."id" AS "id", "public"."orders"."amount" AS "amount", "public"."orders"."created_at" AS "created_at" FROM "public"."orders" LIMIT 10000
-- next
-- field values of the category column customers.region (field-distinct-values: breakout, limit 1000) as the
-- query processor compiles it; reconstructed, not captured
SELECT "public"."customers"."region" AS "region" FROM "public"."customers" GROUP BY "public"."customers"."region" ORDER BY "public"."customers"."region" ASC LIMIT 1000
