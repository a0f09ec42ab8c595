//! A small deterministic random stream, one per event (or per cached string): the values
//! depend only on the seed, the stream and the index, never on the order of generation.

use crate::generator::mix;

/// Independent families of random streams drawn from one seed.
#[derive(Clone, Copy, Debug)]
pub(super) enum Stream {
    /// The fields of event `n`.
    Event = 0,
    /// The url of cold channel `i`.
    Channel = 1,
    /// The url of hot channel `i`.
    HotUrl = 2,
    /// The shared padding of the `extra` columns.
    Padding = 3,
}

/// A splitmix64-style stream over a key derived from `(seed, stream, index)`.
pub(super) struct Rng {
    key: u64,
    counter: u64,
}

impl Rng {
    /// The stream for item `index` of `stream` under `seed`.
    pub(super) fn new(seed: u64, stream: Stream, index: u64) -> Self {
        Self {
            key: mix(mix(seed, stream as u64), index),
            counter: 0,
        }
    }

    /// The next 64 random bits.
    pub(super) fn next_u64(&mut self) -> u64 {
        self.counter += 1;
        mix(self.key, self.counter)
    }

    /// Uniform in `0..n` by multiply-high (0 when `n` is 0).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform index below `len` (0 when `len` is 0).
    pub(super) fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub(super) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
