//! Load generators: sources that make up their rows (`counter`, `datagen`, `nexmark`).

pub(crate) mod counter;
pub(crate) mod datagen;
pub(crate) mod nexmark;

/// A deterministic 64-bit mix of `seed` and `n` (splitmix64): the same inputs give the same
/// value on every run and every machine, so generated rows do not depend on batch boundaries.
pub(crate) fn mix(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
