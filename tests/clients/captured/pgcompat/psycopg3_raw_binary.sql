-- Distinct SQL that psycopg3_raw_binary sent to PostgreSQL 15.18, extracted from shared/pgcompat/psycopg3_raw_binary.log
-- (log_statement=all) against the demo schema described in shared/pgcompat/README.md.
BEGIN
-- next
-- first parameters: $1 = '1'
select * from orders where id = $1
-- next
select * from analytics.events
-- next
-- first parameters: $1 = '0'
select customer from orders where id = $1
-- next
COMMIT
