import java.math.BigDecimal;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Properties;

import org.postgresql.PGResultSetMetaData;
import org.postgresql.PGStatement;

/**
 * pgjdbc against the demo schema: DatabaseMetaData (catalog queries), a
 * PreparedStatement past prepareThreshold (named server-side statement and
 * binary transfer), a cursor-based fetch with fetchSize=1 (portal with max_rows),
 * transactions, ResultSetMetaData and SQLSTATEs.
 *
 * Connection info comes from PGHOST (a TCP host), PGPORT, PGUSER, PGDATABASE and
 * optionally PGPASSWORD. Rows it writes go to customers under names starting
 * with "jdbc_" and are deleted again before it exits.
 */
public final class JdbcCompat {

    static final class CheckFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CheckFailed(String message) {
            super(message);
        }
    }

    private static final List<String> SCRATCH_NAMES = List.of("jdbc_tx", "jdbc_rb");

    public static void main(String[] args) {
        try {
            run();
        } catch (CheckFailed e) {
            System.err.println("FAIL JdbcCompat: " + e.getMessage());
            System.exit(1);
        } catch (Throwable e) {
            e.printStackTrace();
            System.err.println("FAIL JdbcCompat: unexpected " + e);
            System.exit(1);
        }
        System.out.println("PASS JdbcCompat");
    }

    private static void run() throws SQLException {
        deleteScratchRows();
        try (Connection conn = connect()) {
            checkServer(conn);
            DatabaseMetaData md = conn.getMetaData();
            checkSchemas(md);
            checkTables(md);
            checkOrdersColumns(md);
            checkCustomersColumns(md);
            checkMaterializedViewColumns(md);
            checkPrimaryKey(md);
            checkIndexes(md);
            checkPreparedStatement(conn);
            checkFetchSize(conn);
            checkTransactions(conn);
            checkResultSetMetaData(conn);
            checkErrors(conn);
        } finally {
            deleteScratchRows();
        }
        check("scratch rows removed", customerRow("jdbc_tx"), null);
    }

    // ---- helpers -------------------------------------------------------

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    private static Connection connect() throws SQLException {
        String url = "jdbc:postgresql://" + env("PGHOST", "127.0.0.1") + ":" + env("PGPORT", "5432") + "/"
                + env("PGDATABASE", "fluxion");
        Properties props = new Properties();
        props.setProperty("user", env("PGUSER", "fluxion"));
        String password = System.getenv("PGPASSWORD");
        if (password != null) {
            props.setProperty("password", password);
        }
        return DriverManager.getConnection(url, props);
    }

    private static void check(String what, Object actual, Object expected) {
        if (!Objects.deepEquals(actual, expected)) {
            throw new CheckFailed(what + ": expected " + typed(expected) + ", got " + typed(actual));
        }
        System.out.println("ok   " + what + ": " + show(actual));
    }

    private static void checkTrue(String what, boolean condition, Object detail) {
        if (!condition) {
            throw new CheckFailed(what + ": condition failed for " + show(detail));
        }
        System.out.println("ok   " + what + ": " + show(detail));
    }

    private static String show(Object value) {
        if (value instanceof Object[]) {
            return Arrays.deepToString((Object[]) value);
        }
        return String.valueOf(value);
    }

    /** Like show, but with the Java class of every scalar: for failure messages. */
    private static String typed(Object value) {
        if (value instanceof List) {
            List<String> parts = new ArrayList<>();
            for (Object item : (List<?>) value) {
                parts.add(typed(item));
            }
            return parts.toString();
        }
        if (value == null || value instanceof Object[]) {
            return show(value);
        }
        return value + " (" + value.getClass().getSimpleName() + ")";
    }

    /** The given columns of every row, each row as a list. */
    private static List<List<Object>> rows(ResultSet rs, String... columns) throws SQLException {
        List<List<Object>> result = new ArrayList<>();
        try (rs) {
            while (rs.next()) {
                List<Object> row = new ArrayList<>();
                for (String column : columns) {
                    row.add(rs.getObject(column));
                }
                result.add(row);
            }
        }
        return result;
    }

    /** One column of every row. */
    private static List<Object> column(ResultSet rs, String column) throws SQLException {
        List<Object> result = new ArrayList<>();
        for (List<Object> row : rows(rs, column)) {
            result.add(row.get(0));
        }
        return result;
    }

    private static void deleteScratchRows() throws SQLException {
        try (Connection conn = connect();
                PreparedStatement ps = conn.prepareStatement("delete from customers where name in (?, ?)")) {
            ps.setString(1, SCRATCH_NAMES.get(0));
            ps.setString(2, SCRATCH_NAMES.get(1));
            ps.executeUpdate();
        }
    }

    /** [region, vip] of a customer as seen by a fresh connection, or null. */
    private static List<Object> customerRow(String name) throws SQLException {
        try (Connection conn = connect();
                PreparedStatement ps = conn.prepareStatement("select region, vip from customers where name = ?")) {
            ps.setString(1, name);
            List<List<Object>> found = rows(ps.executeQuery(), "region", "vip");
            return found.isEmpty() ? null : found.get(0);
        }
    }

    // ---- checks --------------------------------------------------------

    private static void checkServer(Connection conn) throws SQLException {
        DatabaseMetaData md = conn.getMetaData();
        System.out.println("pgjdbc " + md.getDriverVersion() + ", server " + md.getDatabaseProductVersion());
        check("database product name", md.getDatabaseProductName(), "PostgreSQL");
        check("database major version", md.getDatabaseMajorVersion(), 15);
        check("user name", md.getUserName(), env("PGUSER", "fluxion"));
        check("catalog", conn.getCatalog(), env("PGDATABASE", "fluxion"));
        try (Statement st = conn.createStatement()) {
            check("select 1", column(st.executeQuery("select 1 as one"), "one"), List.of(1));
        }
    }

    private static void checkSchemas(DatabaseMetaData md) throws SQLException {
        List<Object> schemas = column(md.getSchemas(), "TABLE_SCHEM");
        checkTrue("getSchemas has public", schemas.contains("public"), schemas);
        checkTrue("getSchemas has analytics", schemas.contains("analytics"), schemas);
        check("getSchemas(null, \"analytics\")", column(md.getSchemas(null, "analytics"), "TABLE_SCHEM"),
                List.of("analytics"));
    }

    private static void checkTables(DatabaseMetaData md) throws SQLException {
        String[] columns = {"TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE", "REMARKS"};
        check("getTables TABLE in public",
                rows(md.getTables(null, "public", "%", new String[] {"TABLE"}), columns),
                List.of(Arrays.asList("public", "customers", "TABLE", null),
                        List.of("public", "orders", "TABLE", "Customer orders")));
        check("getTables VIEW in public",
                rows(md.getTables(null, "public", "%", new String[] {"VIEW"}), columns),
                List.of(Arrays.asList("public", "big_orders", "VIEW", null)));
        check("getTables MATERIALIZED VIEW anywhere",
                rows(md.getTables(null, null, "%", new String[] {"MATERIALIZED VIEW"}), columns),
                List.of(List.of("analytics", "customer_totals", "MATERIALIZED VIEW", "Totals per customer")));
        check("getTables all types in analytics",
                column(md.getTables(null, "analytics", "%", null), "TABLE_NAME"), List.of("customer_totals"));
        check("getTables by name pattern ord%, all types (indexes included)",
                rows(md.getTables(null, "public", "ord%", null), "TABLE_NAME", "TABLE_TYPE"),
                List.of(List.of("orders_customer_idx", "INDEX"), List.of("orders_pkey", "INDEX"),
                        List.of("orders", "TABLE")));
    }

    private static final String[] COLUMN_FIELDS = {
        "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "NULLABLE", "IS_NULLABLE", "ORDINAL_POSITION"
    };

    private static List<Object> columnRow(String name, int dataType, String typeName, boolean nullable,
            int position) {
        return List.of(name, dataType, typeName,
                nullable ? DatabaseMetaData.columnNullable : DatabaseMetaData.columnNoNulls,
                nullable ? "YES" : "NO", position);
    }

    private static void checkOrdersColumns(DatabaseMetaData md) throws SQLException {
        check("getColumns orders",
                rows(md.getColumns(null, "public", "orders", "%"), COLUMN_FIELDS),
                List.of(columnRow("id", Types.BIGINT, "int8", false, 1),
                        columnRow("customer", Types.VARCHAR, "text", false, 2),
                        columnRow("amount", Types.NUMERIC, "numeric", true, 3),
                        columnRow("created_at", Types.TIMESTAMP, "timestamptz", true, 4),
                        columnRow("tags", Types.ARRAY, "_text", true, 5),
                        columnRow("attrs", Types.OTHER, "jsonb", true, 6)));
        check("getColumns orders.amount size, digits, remarks",
                rows(md.getColumns(null, "public", "orders", "amount"),
                        "COLUMN_SIZE", "DECIMAL_DIGITS", "REMARKS", "COLUMN_DEF", "IS_AUTOINCREMENT"),
                List.of(Arrays.asList(12, 2, "Order total in EUR", null, "NO")));
        check("getColumns orders.id size",
                rows(md.getColumns(null, "public", "orders", "id"), "COLUMN_SIZE", "DECIMAL_DIGITS", "REMARKS"),
                List.of(Arrays.asList(19, 0, null)));
    }

    private static void checkCustomersColumns(DatabaseMetaData md) throws SQLException {
        check("getColumns customers",
                rows(md.getColumns(null, "public", "customers", "%"), COLUMN_FIELDS),
                List.of(columnRow("name", Types.VARCHAR, "text", false, 1),
                        columnRow("region", Types.VARCHAR, "varchar", true, 2),
                        columnRow("vip", Types.BIT, "bool", false, 3)));
        check("getColumns customers.region size",
                column(md.getColumns(null, "public", "customers", "region"), "COLUMN_SIZE"), List.of(20));
        check("getColumns customers.vip default",
                column(md.getColumns(null, "public", "customers", "vip"), "COLUMN_DEF"), List.of("false"));
    }

    private static void checkMaterializedViewColumns(DatabaseMetaData md) throws SQLException {
        check("getColumns analytics.customer_totals",
                rows(md.getColumns(null, "analytics", "customer_totals", "%"),
                        "TABLE_SCHEM", "TABLE_NAME", "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "ORDINAL_POSITION"),
                List.of(List.of("analytics", "customer_totals", "customer", Types.VARCHAR, "text", 1),
                        List.of("analytics", "customer_totals", "order_count", Types.BIGINT, "int8", 2),
                        List.of("analytics", "customer_totals", "total", Types.NUMERIC, "numeric", 3)));
        check("getColumns public.big_orders",
                rows(md.getColumns(null, "public", "big_orders", "%"), "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME"),
                List.of(List.of("id", Types.BIGINT, "int8"), List.of("customer", Types.VARCHAR, "text"),
                        List.of("amount", Types.NUMERIC, "numeric")));
    }

    private static void checkPrimaryKey(DatabaseMetaData md) throws SQLException {
        check("getPrimaryKeys orders",
                rows(md.getPrimaryKeys(null, "public", "orders"), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME"),
                List.of(List.of("orders", "id", 1, "orders_pkey")));
        check("getPrimaryKeys customers",
                rows(md.getPrimaryKeys(null, "public", "customers"), "COLUMN_NAME", "PK_NAME"),
                List.of(List.of("name", "customers_pkey")));
    }

    private static void checkIndexes(DatabaseMetaData md) throws SQLException {
        String[] fields = {"INDEX_NAME", "NON_UNIQUE", "COLUMN_NAME", "ORDINAL_POSITION"};
        List<List<Object>> all = rows(md.getIndexInfo(null, "public", "orders", false, false), fields);
        checkTrue("getIndexInfo orders has orders_customer_idx",
                all.contains(List.of("orders_customer_idx", true, "customer", 1)), all);
        checkTrue("getIndexInfo orders has orders_pkey",
                all.contains(List.of("orders_pkey", false, "id", 1)), all);
        check("getIndexInfo orders index count", all.size(), 2);
        check("getIndexInfo orders unique only",
                rows(md.getIndexInfo(null, "public", "orders", true, false), fields),
                List.of(List.of("orders_pkey", false, "id", 1)));
    }

    private static final Object[][] EXPECTED_ORDERS = {
        {1L, "ann", new BigDecimal("10.50"), OffsetDateTime.of(2026, 1, 1, 10, 0, 0, 0, ZoneOffset.UTC),
            new String[] {"a", "b"}, "{\"k\": 1}"},
        {2L, "bob", new BigDecimal("250.00"), OffsetDateTime.of(2026, 1, 2, 11, 30, 0, 0, ZoneOffset.UTC),
            new String[] {}, "{\"k\": 2}"},
        {3L, "ann", new BigDecimal("120.25"), OffsetDateTime.of(2026, 1, 3, 12, 45, 0, 0, ZoneOffset.UTC),
            null, null},
    };

    private static Object[] readOrder(ResultSet rs, boolean allColumns) throws SQLException {
        OffsetDateTime created = rs.getObject("created_at", OffsetDateTime.class);
        Object[] row = {rs.getLong("id"), rs.getString("customer"), rs.getBigDecimal("amount"),
            created == null ? null : created.withOffsetSameInstant(ZoneOffset.UTC), null, null};
        if (!allColumns) {
            return Arrays.copyOf(row, 4);
        }
        Array tags = rs.getArray("tags");
        row[4] = tags == null ? null : tags.getArray();
        row[5] = rs.getString("attrs");
        return row;
    }

    private static void checkPreparedStatement(Connection conn) throws SQLException {
        String sql = "select id, customer, amount, created_at from orders where id = ?";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            PGStatement pg = ps.unwrap(PGStatement.class);
            check("prepareThreshold", pg.getPrepareThreshold(), 5);
            for (int run = 1; run <= 10; run++) {
                int id = (run - 1) % 3 + 1;
                ps.setLong(1, id);
                try (ResultSet rs = ps.executeQuery()) {
                    checkTrue("run " + run + " has a row", rs.next(), id);
                    check("prepared run " + run + " (id=" + id + ")", readOrder(rs, false),
                            Arrays.copyOf(EXPECTED_ORDERS[id - 1], 4));
                    checkTrue("run " + run + " has exactly one row", !rs.next(), id);
                }
            }
            check("driver uses a server-side prepared statement", pg.isUseServerPrepare(), true);
        }
    }

    private static void checkFetchSize(Connection conn) throws SQLException {
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            st.setFetchSize(1);
            try (ResultSet rs = st.executeQuery("select * from orders order by id")) {
                for (Object[] expected : EXPECTED_ORDERS) {
                    checkTrue("fetchSize=1 next()", rs.next(), expected[0]);
                    check("fetchSize=1 row id=" + expected[0], readOrder(rs, true), expected);
                }
                checkTrue("fetchSize=1 no fourth row", !rs.next(), "end");
            }
        }
        conn.commit();
        conn.setAutoCommit(true);
    }

    private static void insertCustomer(Connection conn, String name, String region, boolean vip)
            throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("insert into customers values (?, ?, ?)")) {
            ps.setString(1, name);
            ps.setString(2, region);
            ps.setBoolean(3, vip);
            check("insert " + name + " update count", ps.executeUpdate(), 1);
        }
    }

    private static void checkTransactions(Connection conn) throws SQLException {
        conn.setAutoCommit(false);
        insertCustomer(conn, "jdbc_tx", "east", true);
        check("uncommitted row invisible to another connection", customerRow("jdbc_tx"), null);
        conn.commit();
        check("committed row visible to another connection", customerRow("jdbc_tx"), List.of("east", true));
        insertCustomer(conn, "jdbc_rb", "east", false);
        conn.rollback();
        check("rolled-back row is gone", customerRow("jdbc_rb"), null);
        conn.setAutoCommit(true);
    }

    private static void checkResultSetMetaData(Connection conn) throws SQLException {
        String sql = "select id, customer, amount, created_at, tags, attrs, id + 1 as next_id from orders";
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            ResultSetMetaData md = rs.getMetaData();
            PGResultSetMetaData pg = md.unwrap(PGResultSetMetaData.class);
            List<List<Object>> described = new ArrayList<>();
            for (int i = 1; i <= md.getColumnCount(); i++) {
                described.add(List.of(md.getColumnLabel(i), md.getColumnType(i), md.getColumnTypeName(i),
                        md.isNullable(i), pg.getBaseTableName(i)));
            }
            int nullable = ResultSetMetaData.columnNullable;
            int noNulls = ResultSetMetaData.columnNoNulls;
            int unknown = ResultSetMetaData.columnNullableUnknown;
            check("ResultSetMetaData columns", described, List.of(
                    List.of("id", Types.BIGINT, "int8", noNulls, "orders"),
                    List.of("customer", Types.VARCHAR, "text", noNulls, "orders"),
                    List.of("amount", Types.NUMERIC, "numeric", nullable, "orders"),
                    List.of("created_at", Types.TIMESTAMP, "timestamptz", nullable, "orders"),
                    List.of("tags", Types.ARRAY, "_text", nullable, "orders"),
                    List.of("attrs", Types.OTHER, "jsonb", nullable, "orders"),
                    List.of("next_id", Types.BIGINT, "int8", unknown, "")));
            check("ResultSetMetaData amount precision/scale", List.of(md.getPrecision(3), md.getScale(3)),
                    List.of(12, 2));
            check("ResultSetMetaData base schema of id", pg.getBaseSchemaName(1), "public");
            check("ResultSetMetaData id autoincrement", md.isAutoIncrement(1), false);
        }
    }

    private static SQLException expectSqlException(String what, Statement st, String sql) {
        try {
            st.executeQuery(sql);
        } catch (SQLException e) {
            System.out.println("ok   " + what + ": raised " + e.getMessage());
            return e;
        }
        throw new CheckFailed(what + ": expected an SQLException, nothing was raised");
    }

    private static void checkErrors(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            SQLException e = expectSqlException("select from an unknown table", st, "select * from no_such_table");
            check("SQLState", e.getSQLState(), "42P01");
            check("select 1 after the error (autocommit)", column(st.executeQuery("select 1 as one"), "one"),
                    List.of(1));
        }
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            SQLException e = expectSqlException("unknown table inside a transaction", st,
                    "select * from no_such_table");
            check("SQLState", e.getSQLState(), "42P01");
            e = expectSqlException("statement in the failed transaction", st, "select 1");
            check("SQLState in failed transaction", e.getSQLState(), "25P02");
            conn.rollback();
            check("select 1 after rollback", column(st.executeQuery("select 1 as one"), "one"), List.of(1));
        }
        try (PreparedStatement ps = conn.prepareStatement("select * from no_such_table where x = ?")) {
            ps.setInt(1, 1);
            SQLException e = null;
            try {
                ps.executeQuery();
            } catch (SQLException raised) {
                e = raised;
            }
            checkTrue("prepared statement on an unknown table raised", e != null, e);
            check("SQLState (prepared)", e.getSQLState(), "42P01");
        }
        conn.rollback();
        conn.setAutoCommit(true);
    }
}
