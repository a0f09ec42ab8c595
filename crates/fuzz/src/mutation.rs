//! A bounded fuzzing run on the stable toolchain: each target's seeds mutated at random for
//! a given time. There is no coverage feedback (that is what `cargo fuzz` adds); an input is
//! kept for further mutation when it got past the target's first decoding step, so that
//! mutations pile up inside inputs that decode rather than in inputs refused at the door.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::Target;

/// How many kept inputs are mutated further; beyond it, a new one replaces one at random.
const POOL_SIZE: usize = 256;
/// The longest one input may run before the target counts as stuck.
const SLOWEST_INPUT: Duration = Duration::from_secs(60);
/// The longest input a mutation makes.
const MAX_INPUT_BYTES: usize = 64 << 10;
/// Values that sit on the edges of the integers a decoder reads.
const EDGE_VALUES: [u32; 10] = [
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0x7fff,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
];

/// What a run did.
#[derive(Debug)]
pub struct Run {
    /// Inputs run.
    pub inputs: u64,
    /// Inputs that got past the target's first decoding step.
    pub decoded: u64,
}

/// An input on which a target panicked.
#[derive(Debug)]
pub struct Failure {
    /// The panic's message.
    pub message: String,
    /// Where the input was written, to run again (`cargo fuzz run <target> <file>`).
    pub input_file: PathBuf,
}

/// Runs `target` on its seeds, then on mutations of them and of the inputs kept, for
/// `time`, from random `seed`. An input that runs longer than [`SLOWEST_INPUT`] ends the
/// process, the input kept (see [`watch`]).
pub fn fuzz_for(target: Target, time: Duration, seed: u64) -> Result<Run, Failure> {
    let running: Mutex<Option<(Instant, Vec<u8>)>> = Mutex::new(None);
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| watch(target, &running, &done));
        let run = mutate_and_run(target, time, seed, &running);
        done.store(true, Ordering::Relaxed);
        run
    })
}

fn mutate_and_run(
    target: Target,
    time: Duration,
    seed: u64,
    running: &Mutex<Option<(Instant, Vec<u8>)>>,
) -> Result<Run, Failure> {
    let mut rng = StdRng::seed_from_u64(seed);
    let seeds = target.seeds();
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let mut run = Run {
        inputs: 0,
        decoded: 0,
    };
    let deadline = Instant::now() + time;
    while Instant::now() < deadline {
        let seeded = (run.inputs as usize) < seeds.len();
        let input = match seeded {
            true => seeds[run.inputs as usize].clone(),
            false => {
                let mut any = || {
                    let pick = rng.random_range(0..seeds.len() + kept.len());
                    seeds.get(pick).unwrap_or_else(|| &kept[pick - seeds.len()])
                };
                let (base, other) = (any(), any());
                mutate(base, other, &mut rng)
            }
        };
        run.inputs += 1;
        *lock(running) = Some((Instant::now(), input.clone()));
        let decoded = catch_unwind(AssertUnwindSafe(|| target.run(&input)))
            .map_err(|panic| failure(target, &input, panic))?;
        if decoded && !seeded {
            run.decoded += 1;
            match kept.len() < POOL_SIZE {
                true => kept.push(input),
                false => kept[rng.random_range(0..POOL_SIZE)] = input,
            }
        }
    }
    Ok(run)
}

/// Until `done`, checks every second how long the input in `running` has run; past
/// [`SLOWEST_INPUT`] the target is stuck (it cannot be interrupted), so the input is kept
/// and the process ends with a message saying where.
fn watch(target: Target, running: &Mutex<Option<(Instant, Vec<u8>)>>, done: &AtomicBool) {
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_secs(1));
        let guard = lock(running);
        if let Some((started, input)) = guard.as_ref() {
            if started.elapsed() > SLOWEST_INPUT {
                let kept = keep_input(target, input);
                eprintln!(
                    "{}: one input has run for over {} s; it is kept at {}",
                    target.name(),
                    SLOWEST_INPUT.as_secs(),
                    kept.display()
                );
                std::process::exit(101);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A mutation of `base`: one to four edits, each a flip, an overwrite, an insertion, a
/// deletion, a repeat, an edge value or a splice of part of `other`.
fn mutate(base: &[u8], other: &[u8], rng: &mut StdRng) -> Vec<u8> {
    let mut input = base.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let at = rng.random_range(0..=input.len());
        match rng.random_range(0..8) {
            0 if at < input.len() => input[at] ^= 1 << rng.random_range(0..8),
            1 if at < input.len() => input[at] = rng.random(),
            2 => {
                let bytes: Vec<u8> = (0..rng.random_range(1..16)).map(|_| rng.random()).collect();
                input.splice(at..at, bytes);
            }
            3 => {
                let end = (at + rng.random_range(1..64)).min(input.len());
                input.drain(at..end);
            }
            4 => {
                let end = (at + rng.random_range(1..64)).min(input.len());
                let repeated = input[at..end].repeat(rng.random_range(1..8));
                input.splice(at..at, repeated);
            }
            5 => {
                let value = EDGE_VALUES[rng.random_range(0..EDGE_VALUES.len())];
                let bytes = match rng.random_range(0..4) {
                    0 => value.to_be_bytes().to_vec(),
                    1 => value.to_le_bytes().to_vec(),
                    2 => (value as u16).to_be_bytes().to_vec(),
                    _ => vec![value as u8],
                };
                let end = (at + bytes.len()).min(input.len());
                input.splice(at..end, bytes);
            }
            6 => {
                let from = rng.random_range(0..=other.len());
                let end = (from + rng.random_range(1..256)).min(other.len());
                input.splice(at..at, other[from..end].iter().copied());
            }
            _ => input.truncate(at),
        }
    }
    input.truncate(MAX_INPUT_BYTES);
    input
}

/// Writes the input a target panicked on where it can be run again.
fn failure(target: Target, input: &[u8], panic: Box<dyn std::any::Any + Send>) -> Failure {
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned());
    Failure {
        message,
        input_file: keep_input(target, input),
    }
}

/// Writes `input` to a file in the temporary directory and returns its path.
fn keep_input(target: Target, input: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "fluxion-fuzz-{}-{}.input",
        target.name(),
        std::process::id()
    ));
    let _ = std::fs::write(&path, input);
    path
}
