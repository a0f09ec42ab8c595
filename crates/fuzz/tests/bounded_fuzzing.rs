//! Every fuzz target, run for a bounded time on mutations of its seeds (seconds per target:
//! `FLUXION_FUZZ_SECONDS`, default 10; random seed: `FLUXION_FUZZ_SEED`). No input may panic
//! a target.

use std::time::Duration;

use fuzz::mutation::fuzz_for;
use fuzz::Target;

fn run(target: Target) {
    let seconds: u64 = std::env::var("FLUXION_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let seed: u64 = std::env::var("FLUXION_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    match fuzz_for(target, Duration::from_secs(seconds), seed) {
        Ok(run) => {
            println!(
                "{}: seed {seed}, {} inputs in {seconds} s, {} decoded",
                target.name(),
                run.inputs,
                run.decoded
            );
            assert!(run.inputs > 0, "{}: no input ran", target.name());
        }
        Err(failure) => panic!(
            "{} panicked (seed {seed}; input kept at {}): {}",
            target.name(),
            failure.input_file.display(),
            failure.message
        ),
    }
}

#[test]
fn protocol_messages() {
    run(Target::ProtocolMessages);
}

#[test]
fn sql_front_end() {
    run(Target::SqlFrontEnd);
}

#[test]
fn log_record() {
    run(Target::LogRecord);
}

#[test]
fn wal_segment() {
    run(Target::WalSegment);
}

#[test]
fn change_log_file() {
    run(Target::ChangeLogFile);
}

#[test]
fn source_records() {
    run(Target::SourceRecords);
}

#[test]
fn pgoutput_message() {
    run(Target::PgoutputMessage);
}
