//! Fuzz targets for every decoder of outside input: the wire protocol, the SQL front end,
//! the log files read at recovery and the records sources read.
//!
//! Each [`Target`] takes arbitrary bytes and must never panic on them (it panics only where
//! it checks a property of what decoded). `cargo fuzz` runs them coverage-guided (the binaries
//! in `fuzz_targets/`, feature `libfuzzer`, starting from the seeds that the `write_seeds`
//! binary writes into their corpus); [`mutation::fuzz_for`] runs them for a bounded
//! time on the stable toolchain, mutating each target's seed inputs, and the tests run it in
//! every CI run.

use std::sync::Once;

pub mod mutation;
mod sql_front_end;

/// A decoder of outside input, as a fuzz target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A client's byte stream: message checks, then pgwire's decoder.
    ProtocolMessages,
    /// SQL text: parse, then plan every statement that plans, and lower views.
    SqlFrontEnd,
    /// One payload of a WAL or change-log frame.
    LogRecord,
    /// A WAL directory's only segment, opened, appended to and reopened.
    WalSegment,
    /// A stream's change log, recovered and read.
    ChangeLogFile,
    /// JSON, CSV or raw records of a file, webhook or Kafka source.
    SourceRecords,
    /// A message of a PostgreSQL replication stream.
    PgoutputMessage,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 7] = [
        Target::ProtocolMessages,
        Target::SqlFrontEnd,
        Target::LogRecord,
        Target::WalSegment,
        Target::ChangeLogFile,
        Target::SourceRecords,
        Target::PgoutputMessage,
    ];

    /// The target's name, as its `cargo fuzz` binary is named.
    pub fn name(self) -> &'static str {
        match self {
            Target::ProtocolMessages => "protocol_messages",
            Target::SqlFrontEnd => "sql_front_end",
            Target::LogRecord => "log_record",
            Target::WalSegment => "wal_segment",
            Target::ChangeLogFile => "change_log_file",
            Target::SourceRecords => "source_records",
            Target::PgoutputMessage => "pgoutput_message",
        }
    }

    /// Runs the target on `data`; returns whether the input got past its first decoding
    /// step (parsed, decoded, opened), which makes it worth mutating further.
    pub fn run(self, data: &[u8]) -> bool {
        match self {
            Target::ProtocolMessages => server::fuzzing::frontend_messages(data) > 1,
            Target::SqlFrontEnd => sql_front_end::plan_text(data),
            Target::LogRecord => storage::fuzzing::log_record(data),
            Target::WalSegment => storage::fuzzing::wal_segment(data),
            Target::ChangeLogFile => storage::fuzzing::change_log_file(data),
            Target::SourceRecords => connectors::fuzzing::source_records(data) > 0,
            Target::PgoutputMessage => connectors::fuzzing::pgoutput_message(data),
        }
    }

    /// [`Target::run`] under libFuzzer, whose panic hook aborts at every panic, even one the
    /// code catches: the record decoder catches the panics of Arrow's IPC reader on some
    /// damaged records and reports the record as corrupt, as it should. The hook is replaced
    /// by one that only prints; a panic that reaches libFuzzer still aborts the run there.
    pub fn run_under_libfuzzer(self, data: &[u8]) {
        static PRINT_ONLY_HOOK: Once = Once::new();
        PRINT_ONLY_HOOK.call_once(|| std::panic::set_hook(Box::new(|info| eprintln!("{info}"))));
        self.run(data);
    }

    /// Inputs that reach deep into the target, to start mutating from.
    pub fn seeds(self) -> Vec<Vec<u8>> {
        match self {
            Target::ProtocolMessages => server::fuzzing::message_seeds(),
            Target::SqlFrontEnd => sql_front_end::seeds(),
            Target::LogRecord => storage::fuzzing::record_seeds(),
            Target::WalSegment | Target::ChangeLogFile => storage::fuzzing::file_seeds(),
            Target::SourceRecords => connectors::fuzzing::record_seeds(),
            Target::PgoutputMessage => connectors::fuzzing::pgoutput_seeds(),
        }
    }
}
