//! The `fluxion` binary: parses the command line and runs the server.

// The server's connection futures are laid out here too (see crates/server/src/lib.rs).
#![recursion_limit = "256"]

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use coord::{CoordConfig, Coordinator};
use tracing_subscriber::EnvFilter;

/// mimalloc instead of glibc's allocator: dataflow workers allocate and free rows at a high
/// rate from several threads (see docs/benchmarks.md for what it changes).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Fluxion: a streaming SQL database whose materialized views stay incrementally up to date.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Address of the Postgres-protocol listener.
    #[arg(long, default_value = "127.0.0.1:6877")]
    listen: SocketAddr,
    /// Address of the HTTP listener (webhook sources: `POST /webhook/<schema>/<source>`).
    #[arg(long, default_value = "127.0.0.1:6878")]
    http_listen: SocketAddr,
    /// Directory holding the catalog and the durable log.
    #[arg(long, default_value = "fluxion-data")]
    data_dir: PathBuf,
    /// The most clients connected at once; the next is refused (53300), as PostgreSQL's
    /// `max_connections`.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// The most memory one query may use, in MiB (its operators' state and the rows it
    /// returns); a query that needs more fails with 53200. Default: a quarter of the
    /// machine's memory.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_query_memory: Option<u64>,
    /// The most queries computing at once (each on a thread of its own, kept while an open
    /// portal or cursor has rows left); the next fails with 53000.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    max_running_queries: u32,
    /// The memory budget of a materialized view, in MiB, for views created without their own
    /// (`WITH (memory_budget = '…')`); a view that needs more is stopped, not the server.
    /// Default: a quarter of the machine's memory.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_view_memory: Option<u64>,
    /// The access rule file (written like PostgreSQL's `pg_hba.conf`: `host`, `hostssl`,
    /// `hostnossl` rules with `trust`, `reject`, `scram-sha-256`, `md5`, `password`).
    /// Without one: trust on loopback, a password everywhere else.
    #[arg(long)]
    hba_file: Option<PathBuf>,
    /// The server's TLS certificate chain (PEM); with `--tls-key`, clients may use TLS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of `--tls-cert` (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Dataflow worker threads (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// Rows written to the log after which it is compacted into a snapshot of the tables.
    #[arg(long, default_value_t = 2_000_000)]
    checkpoint_after_rows: u64,
    /// How long past states stay readable in memory, in milliseconds: `SUBSCRIBE … AS OF` a
    /// time this recent works (a subscriber resuming after a short disconnect).
    #[arg(long, default_value_t = 10_000)]
    retain_history_ms: u64,
}

fn main() -> std::process::ExitCode {
    // The log goes to stderr, as a server's log does (stdout is for output a caller reads).
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    // Threads that walk statements need a deeper stack than Rust's 2 MiB: tokio's are sized
    // here, and threads started without a size (timely's dataflow workers) read
    // RUST_MIN_STACK, set before any thread starts.
    if std::env::var_os("RUST_MIN_STACK").is_none() {
        std::env::set_var("RUST_MIN_STACK", coord::STATEMENT_STACK_BYTES.to_string());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(coord::STATEMENT_STACK_BYTES)
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"));
    match runtime.and_then(|runtime| runtime.block_on(run(args))) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!("{message}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let workers = args.workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let listener = server::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let http_listener = server::bind(args.http_listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.http_listen))?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(certificate), Some(key)) => {
            Some(server::Tls::load(certificate, key).map_err(|e| e.to_string())?)
        }
        _ => None,
    };
    let ssl = tls.is_some();
    let security = server::Security::load(args.hba_file.as_deref(), tls)?;
    tracing::info!(data_dir = %args.data_dir.display(), workers, "starting");
    let opening = Coordinator::open(CoordConfig {
        data_dir: args.data_dir.clone(),
        workers,
        checkpoint_after_rows: args.checkpoint_after_rows,
        retain_history_ms: args.retain_history_ms,
        max_query_memory: megabytes_or_quarter(args.max_query_memory),
        max_view_memory: megabytes_or_quarter(args.max_view_memory),
        max_running_queries: args.max_running_queries as usize,
        ssl,
    });
    // Clients that connect while the log is replayed are told the server is starting.
    let (listener, opened) = server::refuse_while_starting(listener, &security, opening)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let coord = opened.map_err(|e| format!("cannot open {}: {e}", args.data_dir.display()))?;
    tracing::info!(listen = %args.listen, "accepting Postgres connections");
    tracing::info!(listen = %args.http_listen, "accepting HTTP requests (webhooks, metrics)");
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let backends = server::BackendRegistry::new(args.max_connections as usize);
    let http = tokio::spawn(server::serve_http(
        http_listener,
        coord.clone(),
        backends.clone(),
        async move {
            let mut stop = stop;
            let _ = stop.wait_for(|stopping| *stopping).await;
        },
    ));
    let reloading = tokio::spawn(reload_on_hangup(security.clone()));
    let served = server::serve(
        listener,
        coord.clone(),
        backends,
        security,
        shutdown_signal(),
    )
    .await;
    reloading.abort();
    tracing::info!("shutting down");
    let _ = stopping.send(true);
    let _ = http.await;
    coord.shutdown();
    served
}

/// `mib` MiB in bytes, or a quarter of the machine's memory without it.
fn megabytes_or_quarter(mib: Option<u64>) -> usize {
    mib.map_or_else(quarter_of_memory, |mib| mib.saturating_mul(1 << 20))
        .try_into()
        .unwrap_or(usize::MAX)
}

/// A quarter of the machine's memory (`MemTotal` in `/proc/meminfo`), or 1 GiB where that
/// cannot be read.
fn quarter_of_memory() -> u64 {
    let total_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        });
    total_kib.map_or(1 << 30, |kib| kib * 1024 / 4)
}

/// Reads the access rule file again at every SIGHUP, as PostgreSQL reads `pg_hba.conf`.
async fn reload_on_hangup(security: server::Security) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP: the access rules will not be reloaded");
                return;
            }
        };
        while hangups.recv().await.is_some() {
            security.reload_rules();
        }
    }
    #[cfg(not(unix))]
    let _ = security;
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM");
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
