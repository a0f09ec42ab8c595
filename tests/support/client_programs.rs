//! The client programs of `tests/clients/`: the environments they run in (Python virtual
//! environments, Debian's pgjdbc), set up once and kept in `$FLUXION_CLIENT_CACHE` (default
//! `~/.cache/fluxion/clients`), and how their results are checked.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where the client environments live.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("FLUXION_CLIENT_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
            Path::new(&home).join(".cache/fluxion/clients")
        })
}

/// Runs a setup script under a lock, so concurrent tests do not build the same environment
/// twice at once.
pub fn setup(script: &str, args: &[&str]) {
    let cache = cache_dir();
    std::fs::create_dir_all(&cache).expect("the client cache directory");
    let lock = cache.join(format!("{}.lock", script.replace('/', "_")));
    let output = Command::new("flock")
        .arg(&lock)
        .arg(format!("tests/clients/{script}"))
        .args(args)
        .output()
        .expect("flock runs the setup script");
    assert_success(&format!("{script} {}", args.join(" ")), &output);
}

/// A Python environment of `flavor` (`sqla2`, `sqla14`, `dbt`, `pgcli` or `odbc`), set up if
/// needed.
pub fn python(flavor: &str) -> PathBuf {
    let venv = cache_dir().join(format!("venv-{flavor}"));
    setup("setup_python.sh", &[&venv.display().to_string(), flavor]);
    venv.join("bin/python")
}

/// Fails the test with the program's output unless it exited successfully.
pub fn assert_success(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
