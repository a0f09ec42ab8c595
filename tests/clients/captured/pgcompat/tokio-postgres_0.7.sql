-- Distinct SQL that tokio-postgres_0.7 sent to PostgreSQL 15.18, extracted from shared/pgcompat/tokio-postgres_0.7.log
-- (log_statement=all) against the demo schema described in shared/pgcompat/README.md.
-- first parameters: $1 = '1'
select id, customer from orders where id = $1
-- next
-- first parameters: $1 = 'alice'
select count(*) from orders where customer = $1
-- next
-- first parameters: $1 = '16416'
SELECT t.typname, t.typtype, t.typelem, r.rngsubtype, t.typbasetype, n.nspname, t.typrelid
FROM pg_catalog.pg_type t
LEFT OUTER JOIN pg_catalog.pg_range r ON r.rngtypid = t.oid
INNER JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid
WHERE t.oid = $1

-- next
-- first parameters: $1 = '16416'
SELECT enumlabel
FROM pg_catalog.pg_enum
WHERE enumtypid = $1
ORDER BY enumsortorder

-- next
select 1
