-- SQL the Grafana PostgreSQL data source sends (grafana/grafana main, 2025; legacy plugin of Grafana 8/9 where noted),
-- reconstructed from its sources and with $__ macros expanded as pkg/tsdb/grafana-postgresql-datasource/macros.go does.
-- Entries are separated by a line `-- next`; leading `--` lines of an entry are comments.
-- version check on saving the data source (useAutoDetectFeatures -> getVersion), public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts@12f912ab8d01
SELECT current_setting('server_version_num')::int/100 as version
-- next
-- version check of the legacy plugin (getVersion), public/app/plugins/datasource/postgres/datasource.ts@01b1f535cf41 (legacy plugin)
SELECT current_setting('server_version_num')::int/100
-- next
-- TimescaleDB detection (getTimescaleDBVersion), public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts@12f912ab8d01
SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'
-- next
-- 'Save & test' of the legacy plugin (testDatasource); the current plugin's health check is pgx Ping,
-- which sends the comment-only simple query `-- ping` (not representable here: it is all comment), public/app/plugins/datasource/postgres/datasource.ts@01b1f535cf41 (legacy plugin)
SELECT 1
-- next
-- schema list (showSchemas), public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts@12f912ab8d01
SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema',
                              'pg_catalog',
                              'pg_toast',
                              '_timescaledb_cache',
                              '_timescaledb_catalog',
                              '_timescaledb_internal',
                              '_timescaledb_config',
                              'timescaledb_information',
                              'timescaledb_experimental')
    ORDER BY schema_name
-- next
-- table picker / SQL completion (showTables with no schema): tables on the search_path unqualified, others
-- as schema.table, expanding current_setting('search_path') with string_to_array + generate_series, public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts@12f912ab8d01
SELECT
    CASE WHEN 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema',
                             'pg_catalog',
                             '_timescaledb_cache',
                             '_timescaledb_catalog',
                             '_timescaledb_internal',
                             '_timescaledb_config',
                             'timescaledb_information',
                             'timescaledb_experimental')
    ORDER BY CASE WHEN 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          ) THEN 0 ELSE 1 END, 1
-- next
-- tables of one schema (showTables('public')), public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts@12f912ab8d01
SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'public'
      ORDER BY 1
-- next
-- tables of schema analytics (showTables('analytics')); returns no row in PostgreSQL: materialized views
-- are not in information_schema.tables, public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts@12f912ab8d01
SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'analytics'
      ORDER BY 1
-- next
-- same rows as PostgreSQL
-- column picker and field types for table orders (getSchema('orders'), via fetchFields), public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts@12f912ab8d01
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('orders'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('orders'))[1]
          AND quote_ident(table_name) = (parse_ident('orders'))[2]
        ELSE quote_ident(table_name) = 'orders'
          AND 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END
-- next
-- column picker for a schema-qualified pick (getSchema('analytics.customer_totals')): parse_ident path;
-- returns no row in PostgreSQL (materialized view columns are not in information_schema.columns), public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts@12f912ab8d01
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('analytics.customer_totals'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('analytics.customer_totals'))[1]
          AND quote_ident(table_name) = (parse_ident('analytics.customer_totals'))[2]
        ELSE quote_ident(table_name) = 'analytics.customer_totals'
          AND 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END
-- next
-- same rows as PostgreSQL
-- column picker for the view big_orders (getSchema('big_orders')), public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts@12f912ab8d01
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('big_orders'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('big_orders'))[1]
          AND quote_ident(table_name) = (parse_ident('big_orders'))[2]
        ELSE quote_ident(table_name) = 'big_orders'
          AND 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END
-- next
-- schema list of the backend schema handler (querySchemas), pkg/tsdb/grafana-postgresql-datasource/schema.go@043dd88a4794 (pgx, extended protocol)
SELECT schema_name FROM information_schema.schemata
		 WHERE schema_name NOT LIKE 'pg_%' AND schema_name != 'information_schema'
		 ORDER BY schema_name
-- next
-- tables of a schema, backend schema handler (queryTables), pkg/tsdb/grafana-postgresql-datasource/schema.go@043dd88a4794 (pgx, extended protocol)
-- first parameters: $1 = 'public'
SELECT table_name FROM information_schema.tables
		 WHERE table_schema = $1 AND table_type IN ('BASE TABLE', 'VIEW')
		 ORDER BY table_name
-- next
-- columns of a table with numeric precision/scale, backend schema handler (queryColumns), pkg/tsdb/grafana-postgresql-datasource/schema.go@043dd88a4794 (pgx, extended protocol)
-- first parameters: $1 = 'public', $2 = 'orders'
SELECT column_name, data_type, udt_name, numeric_precision, numeric_scale
		 FROM information_schema.columns
		 WHERE table_schema = $1 AND table_name = $2
		 ORDER BY ordinal_position
-- next
-- distinct values of columns customer and created_at of orders (ColumnValues), pkg/tsdb/grafana-postgresql-datasource/schema.go@043dd88a4794 (pgx, extended protocol)
SELECT 'customer' AS col_name, "customer"::text AS val FROM (SELECT DISTINCT "customer" FROM "public"."orders" WHERE "customer" IS NOT NULL ORDER BY "customer" LIMIT 100) sub_0 UNION ALL SELECT 'created_at' AS col_name, "created_at"::text AS val FROM (SELECT DISTINCT "created_at" FROM "public"."orders" WHERE "created_at" IS NOT NULL ORDER BY "created_at" LIMIT 100) sub_1
-- next
-- legacy editor: first table with a timestamp and a float8 column (findMetricTable), public/app/plugins/datasource/postgres/meta_query.ts@027e669f230f (legacy query editor, Grafana <= 9)

SELECT
	quote_ident(table_name) as table_name,
	( SELECT
	    quote_ident(column_name) as column_name
	  FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name IN ('timestamptz','timestamp')
    ORDER BY ordinal_position LIMIT 1
  ) AS time_column,
  ( SELECT
      quote_ident(column_name) AS column_name
    FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name='float8'
    ORDER BY ordinal_position LIMIT 1
  ) AS value_column
FROM information_schema.tables t
WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) AND
  EXISTS
  ( SELECT 1
    FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name IN ('timestamptz','timestamp')
  ) AND
  EXISTS
  ( SELECT 1
    FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name='float8'
  )
LIMIT 1
;
-- next
-- legacy editor: table list on the search_path (buildTableQuery), public/app/plugins/datasource/postgres/meta_query.ts@027e669f230f (legacy query editor, Grafana <= 9)
SELECT quote_ident(table_name) FROM information_schema.tables WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) ORDER BY table_name
-- next
-- legacy editor: time column candidates of orders (buildColumnQuery('time')), public/app/plugins/datasource/postgres/meta_query.ts@027e669f230f (legacy query editor, Grafana <= 9)
SELECT quote_ident(column_name) FROM information_schema.columns WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) AND table_name = 'orders' AND data_type IN ('timestamp without time zone','timestamp with time zone','bigint','integer','double precision','real') ORDER BY column_name
-- next
-- legacy editor: value column candidates of orders, time column created_at (buildColumnQuery('value')), public/app/plugins/datasource/postgres/meta_query.ts@027e669f230f (legacy query editor, Grafana <= 9)
SELECT quote_ident(column_name) FROM information_schema.columns WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) AND table_name = 'orders' AND data_type IN ('bigint','integer','double precision','real','numeric') AND column_name <> 'created_at' ORDER BY column_name
-- next
-- legacy editor: metric column candidates of orders (buildColumnQuery('metric')), public/app/plugins/datasource/postgres/meta_query.ts@027e669f230f (legacy query editor, Grafana <= 9)
SELECT quote_ident(column_name) FROM information_schema.columns WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) AND table_name = 'orders' AND data_type IN ('text','character','character varying') ORDER BY column_name
-- next
-- legacy editor: group-by column candidates of a schema-qualified table (buildColumnQuery('group')), public/app/plugins/datasource/postgres/meta_query.ts@027e669f230f (legacy query editor, Grafana <= 9)
SELECT quote_ident(column_name) FROM information_schema.columns WHERE table_schema = 'analytics' AND table_name = 'customer_totals' AND data_type IN ('text','character','character varying','uuid') ORDER BY column_name
-- next
-- legacy editor: column type lookup for the time column (buildDatatypeQuery('created_at')), public/app/plugins/datasource/postgres/meta_query.ts@027e669f230f (legacy query editor, Grafana <= 9)
SELECT udt_name FROM information_schema.columns WHERE 
table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
) AND table_name = 'orders' AND column_name = 'created_at'
-- next
-- legacy editor: aggregate functions offered for float8 (buildAggregateQuery), public/app/plugins/datasource/postgres/meta_query.ts@027e669f230f (legacy query editor, Grafana <= 9)
SELECT DISTINCT proname FROM pg_aggregate INNER JOIN pg_proc ON pg_aggregate.aggfnoid = pg_proc.oid INNER JOIN pg_type ON pg_type.oid=pg_proc.prorettype WHERE pronargs=1 AND typname IN ('float8') AND aggkind='n' ORDER BY 1
-- next
-- legacy editor: WHERE value suggestions (buildValueQuery('customer')), $__timeFilter expanded, public/app/plugins/datasource/postgres/meta_query.ts@027e669f230f (legacy query editor, Grafana <= 9)
-- macros expanded by macros.go@02ab314b81e2 and sqleng Interpolate: time range 2026-01-01T00:00:00Z .. 2026-01-04T00:00:00Z
SELECT DISTINCT quote_literal(customer) FROM orders WHERE created_at BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-04T00:00:00Z' AND customer IS NOT NULL ORDER BY 1 LIMIT 100
-- next
-- time series panel: avg(amount) per $__timeGroupAlias(created_at,$__interval) with $__interval = 1m, public/app/plugins/datasource/postgres/postgres_query_model.ts@3ec61b895318 buildQuery (legacy visual editor)
-- macros expanded by macros.go@02ab314b81e2 and sqleng Interpolate: time range 2026-01-01T00:00:00Z .. 2026-01-04T00:00:00Z
SELECT
  floor(extract(epoch from created_at)/60)*60 AS "time",
  avg(amount) AS "amount"
FROM orders
WHERE
  created_at BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-04T00:00:00Z'
GROUP BY 1
ORDER BY 1
-- next
-- time series with a metric column (one series per customer), $__interval = 1h, public/app/plugins/datasource/postgres/postgres_query_model.ts@3ec61b895318 buildQuery (legacy visual editor)
-- macros expanded by macros.go@02ab314b81e2 and sqleng Interpolate: time range 2026-01-01T00:00:00Z .. 2026-01-04T00:00:00Z
SELECT
  floor(extract(epoch from created_at)/3600)*3600 AS "time",
  customer AS metric,
  sum(amount) AS "amount"
FROM orders
WHERE
  created_at BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-04T00:00:00Z'
GROUP BY 1,2
ORDER BY 1,2
-- next
-- time series with a 'delta' window and a percentile_cont aggregate, $__interval = 1d (the window's ORDER BY
-- is $__timeGroup without alias), public/app/plugins/datasource/postgres/postgres_query_model.ts@3ec61b895318 buildQuery (legacy visual editor)
-- macros expanded by macros.go@02ab314b81e2 and sqleng Interpolate: time range 2026-01-01T00:00:00Z .. 2026-01-04T00:00:00Z
SELECT
  floor(extract(epoch from created_at)/86400)*86400 AS "time",
  sum(amount) - lag(sum(amount)) OVER (ORDER BY floor(extract(epoch from created_at)/86400)*86400) AS "delta",
  percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS "median"
FROM orders
WHERE
  created_at BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-04T00:00:00Z'
GROUP BY 1
ORDER BY 1
-- next
-- table panel from the current visual query builder (toRawSql: columns, WHERE, GROUP BY, ORDER BY, default
-- LIMIT 50, each clause followed by a space), public/app/plugins/datasource/grafana-postgresql-datasource/sqlUtil.ts@1137a659434e
SELECT customer, SUM(amount) FROM orders WHERE amount > 10 GROUP BY customer ORDER BY customer DESC LIMIT 50 
-- next
-- code-mode time series using $__time and $__timeFilter (query shape from the data source documentation;
-- reconstructed, not a string found in the source), macros expanded by macros.go@02ab314b81e2 and sqleng Interpolate: time range 2026-01-01T00:00:00Z .. 2026-01-04T00:00:00Z
SELECT
  created_at AS "time",
  amount AS value,
  customer AS metric
FROM orders
WHERE created_at BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-04T00:00:00Z'
ORDER BY 1
-- next
-- code-mode query using $__timeEpoch, $__timeFrom(), $__timeTo() and $__unixEpochFrom()/$__unixEpochTo()
-- (reconstructed from the macro definitions, not a string found in the source), macros expanded by macros.go@02ab314b81e2 and sqleng Interpolate: time range 2026-01-01T00:00:00Z .. 2026-01-04T00:00:00Z
SELECT
  extract(epoch from created_at) as "time",
  amount
FROM orders
WHERE created_at >= '2026-01-01T00:00:00Z' AND created_at < '2026-01-04T00:00:00Z'
  AND extract(epoch from created_at) BETWEEN 1767225600 AND 1767484800
ORDER BY 1
