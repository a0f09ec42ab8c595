//! A full disk, as PostgreSQL meets one: a write or a definition that finds no space fails
//! with 53100 (and PostgreSQL's hint), nothing acknowledged is lost, and writes and
//! definitions succeed again by themselves once there is space, without a restart. The data directory is on a small tmpfs mounted for
//! the test, which needs root (as CI runs); a few megabytes of filler take the space that is
//! freed later.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::query::rows;
use support::TestServer;

/// A tmpfs of a few megabytes, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(megabytes: u32) -> SmallDisk {
        let dir = tempfile::tempdir().expect("a mount point");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("mount runs");
        assert!(
            status.success(),
            "mounting a {megabytes} MB tmpfs failed ({status}): this test needs root"
        );
        SmallDisk { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Inserts 500 rows of about 1 kB from `first`; the SQLSTATE, message and hint if it fails.
async fn insert_batch(client: &tokio_postgres::Client, first: i64) -> Result<(), String> {
    let sql = format!(
        "INSERT INTO t SELECT {first} + value, repeat('x', 1000) \
         FROM generate_series(0, 499) AS s(value)"
    );
    client.batch_execute(&sql).await.map_err(|error| {
        let db = error.as_db_error().expect("a server error");
        format!(
            "{} {} / {}",
            db.code().code(),
            db.message(),
            db.hint().unwrap_or_default()
        )
    })
}

/// Writes `path` until the disk has no byte left (the log's refusal leaves a few blocks the
/// catalog could still use).
fn fill_to_the_last_byte(path: &Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).expect("the file is created");
    let block = vec![0u8; 4096];
    while file
        .write_all(&block)
        .and_then(|()| file.sync_all())
        .is_ok()
    {}
}

/// The rows of `t` and what the view over it says of them.
async fn counts(client: &tokio_postgres::Client) -> (Vec<String>, Vec<String>) {
    (
        rows(client, "SELECT count(*) FROM t").await,
        rows(client, "SELECT n FROM t_count").await,
    )
}

#[tokio::test]
async fn a_full_disk_is_53100_loses_nothing_and_writes_resume_once_there_is_space() {
    let disk = SmallDisk::mount(16);
    let filler: PathBuf = disk.path().join("filler");
    std::fs::write(&filler, vec![0u8; 6 << 20]).expect("the filler is written");
    let data = disk.path().join("data");
    let mut server = TestServer::start_in(&data);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, pad TEXT);
             CREATE MATERIALIZED VIEW t_count AS SELECT count(*) AS n FROM t",
        )
        .await
        .unwrap();

    let mut acknowledged: i64 = 0;
    let refusal = loop {
        assert!(acknowledged < 100_000, "the disk never filled");
        match insert_batch(&client, acknowledged).await {
            Ok(()) => acknowledged += 500,
            Err(refusal) => break refusal,
        }
    };
    assert!(
        acknowledged > 0,
        "no write succeeded before the disk filled"
    );
    assert!(
        refusal.starts_with("53100 could not write to the log: ")
            && refusal.contains("No space left on device")
            && refusal.ends_with(" / Check free disk space."),
        "{refusal}"
    );
    let expected = vec![acknowledged.to_string()];
    assert_eq!(counts(&client).await, (expected.clone(), expected));
    assert!(
        insert_batch(&client, acknowledged).await.is_err(),
        "still full"
    );
    let last_bytes = disk.path().join("last_bytes");
    fill_to_the_last_byte(&last_bytes);
    // The definition is large, so the catalog must grow its file to keep it.
    let large_definition = format!(
        "CREATE VIEW refused AS SELECT '{}' AS s",
        "x".repeat(1 << 20)
    );
    let refusal = client
        .batch_execute(&large_definition)
        .await
        .expect_err("a definition on a full disk is refused");
    let refusal = refusal.as_db_error().expect("an error response");
    assert_eq!(refusal.code().code(), "53100", "{refusal}");
    std::fs::remove_file(&last_bytes).expect("the last bytes are freed");
    std::fs::remove_file(&filler).expect("the filler is removed");
    insert_batch(&client, acknowledged)
        .await
        .expect("with space again, a write succeeds without a restart");
    acknowledged += 500;
    let expected = vec![acknowledged.to_string()];
    assert_eq!(counts(&client).await, (expected.clone(), expected.clone()));
    client
        .batch_execute("CREATE TABLE later (a int); INSERT INTO later VALUES (1)")
        .await
        .expect("with space again, a definition succeeds without a restart");

    drop(client);
    server.kill();
    let server = TestServer::start_in(&data);
    let client = server.connect().await;
    assert_eq!(counts(&client).await, (expected.clone(), expected));
    assert_eq!(
        rows(
            &client,
            "SELECT count(*) FROM t WHERE pad <> repeat('x', 1000)"
        )
        .await,
        ["0"]
    );
    assert_eq!(rows(&client, "SELECT a FROM later").await, ["1"]);
    assert!(
        client.simple_query("SELECT * FROM refused").await.is_err(),
        "the refused definition was not kept"
    );
    drop(client);
    drop(server);
}
