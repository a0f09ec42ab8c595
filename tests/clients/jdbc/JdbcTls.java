import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Properties;

/**
 * pgjdbc over TLS with SCRAM password authentication.
 *
 * The server named by PGHOST ("localhost"), PGPORT and PGDATABASE is expected
 * to accept PGUSER (password PGPASSWORD) only over TLS ("hostssl ...
 * scram-sha-256"), with a certificate signed by the CA in PGSSLROOTCERT (PEM)
 * whose SAN covers the host name. Checks, in order:
 *
 * - sslmode=verify-full with sslrootcert=$PGSSLROOTCERT connects (the
 *   certificate chain and the host name are verified); current_user is PGUSER;
 *   a PreparedStatement "SELECT ?::int + 1" with 41 gives 42;
 * - the same URL with sslmode=disable is refused with SQLSTATE 28000 and
 *   "no pg_hba.conf entry" (pgjdbc has no public "TLS in use" API, so this
 *   negative stands in for it: the good connection cannot have been plain);
 * - sslmode=verify-full with a wrong password is refused with SQLSTATE 28P01.
 */
public final class JdbcTls {

    static final class CheckFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CheckFailed(String message) {
            super(message);
        }
    }

    public static void main(String[] args) {
        try {
            run();
        } catch (CheckFailed e) {
            System.err.println("FAIL JdbcTls: " + e.getMessage());
            System.exit(1);
        } catch (Throwable e) {
            e.printStackTrace();
            System.err.println("FAIL JdbcTls: unexpected " + e);
            System.exit(1);
        }
        System.out.println("PASS JdbcTls");
    }

    private static void run() throws SQLException {
        String user = required("PGUSER");
        String password = required("PGPASSWORD");
        String rootCert = required("PGSSLROOTCERT");
        checkTrue("PGSSLROOTCERT is a readable file", new java.io.File(rootCert).canRead(), rootCert);

        try (Connection conn = connect(user, password, "verify-full", rootCert)) {
            System.out.println("ok   connect with sslmode=verify-full");
            try (Statement st = conn.createStatement();
                    ResultSet rs = st.executeQuery("SELECT current_user")) {
                check("current_user", column(rs), List.of(user));
            }
            try (PreparedStatement ps = conn.prepareStatement("SELECT ?::int + 1")) {
                ps.setInt(1, 41);
                try (ResultSet rs = ps.executeQuery()) {
                    check("SELECT ?::int + 1 with 41", column(rs), List.of(42));
                }
            }
        }

        SQLException noTls = expectFailure("connect with sslmode=disable",
                () -> connect(user, password, "disable", null));
        check("sslmode=disable SQLSTATE", noTls.getSQLState(), "28000");
        checkContains("sslmode=disable message", noTls.getMessage(), "no pg_hba.conf entry");

        SQLException wrongPassword = expectFailure("connect with a wrong password",
                () -> connect(user, password + "-wrong", "verify-full", rootCert));
        check("wrong password SQLSTATE", wrongPassword.getSQLState(), "28P01");
    }

    // ---- helpers -------------------------------------------------------

    @FunctionalInterface
    private interface Connector {
        Connection open() throws SQLException;
    }

    private static String required(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            throw new CheckFailed("environment variable " + name + " must be set");
        }
        return value;
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    private static Connection connect(String user, String password, String sslmode, String rootCert)
            throws SQLException {
        String url = "jdbc:postgresql://" + env("PGHOST", "localhost") + ":" + env("PGPORT", "5432") + "/"
                + env("PGDATABASE", "fluxion");
        Properties props = new Properties();
        props.setProperty("user", user);
        props.setProperty("password", password);
        props.setProperty("sslmode", sslmode);
        if (rootCert != null) {
            props.setProperty("sslrootcert", rootCert);
        }
        return DriverManager.getConnection(url, props);
    }

    /** Run a connection attempt that must fail; return its SQLException. */
    private static SQLException expectFailure(String what, Connector connector) throws SQLException {
        Connection conn;
        try {
            conn = connector.open();
        } catch (SQLException e) {
            System.out.println("ok   " + what + ": raised SQLException (" + e.getSQLState() + ") " + e.getMessage());
            return e;
        }
        conn.close();
        throw new CheckFailed(what + ": expected an SQLException, but the connection succeeded");
    }

    private static List<Object> column(ResultSet rs) throws SQLException {
        List<Object> values = new ArrayList<>();
        while (rs.next()) {
            values.add(rs.getObject(1));
        }
        return values;
    }

    private static void check(String what, Object actual, Object expected) {
        if (!Objects.deepEquals(actual, expected)) {
            throw new CheckFailed(what + ": expected " + typed(expected) + ", got " + typed(actual));
        }
        System.out.println("ok   " + what + ": " + actual);
    }

    private static void checkTrue(String what, boolean condition, Object detail) {
        if (!condition) {
            throw new CheckFailed(what + ": condition failed for " + detail);
        }
        System.out.println("ok   " + what + ": " + detail);
    }

    private static void checkContains(String what, String text, String part) {
        if (text == null || !text.contains(part)) {
            throw new CheckFailed(what + ": \"" + part + "\" missing from " + (text == null ? "null" : "\"" + text + "\""));
        }
        System.out.println("ok   " + what + ": \"" + part + "\" in \"" + text + "\"");
    }

    /** The value with the Java class of every scalar: for failure messages. */
    private static String typed(Object value) {
        if (value instanceof List) {
            List<String> parts = new ArrayList<>();
            for (Object item : (List<?>) value) {
                parts.add(typed(item));
            }
            return parts.toString();
        }
        return value == null ? "null" : value + " (" + value.getClass().getSimpleName() + ")";
    }
}
