//! Field values: prices, random strings, names and places, credit cards, channels and urls,
//! and the `extra` padding (GENERATOR.md §3 and §4).

use std::sync::OnceLock;

use super::rng::{Rng, Stream};

/// First names of people.
const FIRST_NAMES: [&str; 11] = [
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter",
];
/// Last names of people.
const LAST_NAMES: [&str; 9] = [
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
];
/// Cities people live in.
pub(super) const US_CITIES: [&str; 10] = [
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];
/// States people live in.
pub(super) const US_STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];
/// The channels most bids come through.
pub(super) const HOT_CHANNELS: [&str; 4] = ["Google", "Facebook", "Baidu", "Apple"];
/// The number of other channels (`channel-0` … `channel-9999`).
const COLD_CHANNELS: u64 = 10_000;
/// One bid in this many is not from a hot channel (Java nexmark's `HOT_CHANNELS_RATIO`).
const HOT_CHANNELS_RATIO: u64 = 2;
/// The shortest random string before trimming.
const MIN_STRING_LENGTH: u64 = 3;
/// The length of the text the `extra` columns are sliced from.
const PADDING_LENGTH: usize = 1 << 20;

/// A price in cents, log-uniform from 100 to 10^8: `round(10^(6·U) · 100)` (rounding half up,
/// as Java's `Math.round`).
pub(super) fn price(rng: &mut Rng) -> i64 {
    ((rng.unit() * 6.0 * std::f64::consts::LN_10).exp() * 100.0 + 0.5) as i64
}

/// Appends a string of `3 + uniform(max_len − 3)` letters to `out`, each one `special` with
/// probability 1/13; leading and trailing spaces are trimmed as in Java's `String.trim`.
pub(super) fn push_string(rng: &mut Rng, out: &mut String, max_len: u64, special: char) {
    let start = out.len();
    for _ in 0..MIN_STRING_LENGTH + rng.below(max_len - MIN_STRING_LENGTH) {
        let draw = rng.below(13 * 26);
        let c = if draw.is_multiple_of(13) {
            special
        } else {
            char::from(b'a' + (draw / 13) as u8)
        };
        if !(c == ' ' && out.len() == start) {
            out.push(c);
        }
    }
    while out.len() > start && out.ends_with(' ') {
        out.pop();
    }
}

/// Appends a person's name: a first and a last name.
pub(super) fn push_name(rng: &mut Rng, out: &mut String) {
    out.push_str(pick(rng, &FIRST_NAMES));
    out.push(' ');
    out.push_str(pick(rng, &LAST_NAMES));
}

/// Appends an email address: `<string(7)>@<string(5)>.com`.
pub(super) fn push_email(rng: &mut Rng, out: &mut String) {
    push_string(rng, out, 7, ' ');
    out.push('@');
    push_string(rng, out, 5, ' ');
    out.push_str(".com");
}

/// Appends a credit card number: four groups of four digits separated by spaces.
pub(super) fn push_credit_card(rng: &mut Rng, out: &mut String) {
    for group in 0..4 {
        if group > 0 {
            out.push(' ');
        }
        let value = rng.below(10_000);
        for divisor in [1000, 100, 10, 1] {
            out.push(char::from(b'0' + (value / divisor % 10) as u8));
        }
    }
}

/// A uniformly chosen element of `choices`.
pub(super) fn pick(rng: &mut Rng, choices: &[&'static str]) -> &'static str {
    choices[rng.index(choices.len())]
}

/// Padding that brings a row of `current_size` bytes to `average_size` on average: its length
/// is uniform in `[0.8·t, 1.2·t)` for the target `t = average_size − current_size`.
pub(super) fn extra(rng: &mut Rng, current_size: usize, average_size: usize) -> &'static str {
    let Some(target) = average_size.checked_sub(current_size) else {
        return "";
    };
    let delta = (2 * target + 5) / 10;
    let length = target - delta + rng.index(2 * delta);
    let padding = padding();
    let start = rng.index(padding.len() - length);
    &padding[start..start + length]
}

/// The text every `extra` value is a slice of: 1 MiB of random letters, made once.
fn padding() -> &'static str {
    static PADDING: OnceLock<String> = OnceLock::new();
    PADDING.get_or_init(|| {
        let mut rng = Rng::new(0, Stream::Padding, 0);
        (0..PADDING_LENGTH)
            .map(|_| char::from(b'a' + rng.below(26) as u8))
            .collect()
    })
}

/// The channels of bids and their urls, made once per seed.
pub(super) struct Channels {
    /// The url of each hot channel.
    hot_urls: Vec<String>,
    /// The name and url of each cold channel.
    cold: Vec<(String, String)>,
}

impl Channels {
    /// The channels for `seed`: every url is random, but fixed for a seed.
    pub(super) fn new(seed: u64) -> Self {
        let hot_urls = (0..HOT_CHANNELS.len() as u64)
            .map(|i| base_url(&mut Rng::new(seed, Stream::HotUrl, i)))
            .collect();
        let cold = (0..COLD_CHANNELS)
            .map(|i| (format!("channel-{i}"), cold_url(seed, i)))
            .collect();
        Self { hot_urls, cold }
    }

    /// A bid's channel and url: a hot channel with probability 1/2, else a uniform cold one.
    pub(super) fn pick(&self, rng: &mut Rng) -> (&str, &str) {
        if rng.below(HOT_CHANNELS_RATIO) > 0 {
            let i = rng.index(HOT_CHANNELS.len());
            (HOT_CHANNELS[i], &self.hot_urls[i])
        } else {
            let (name, url) = &self.cold[rng.index(self.cold.len())];
            (name, url)
        }
    }
}

/// The url of cold channel `i`: a base url, in 90% of channels with
/// `&channel_id=<abs(Integer.reverse(i))>` (Java's overflowing `abs` included).
fn cold_url(seed: u64, i: u64) -> String {
    let mut rng = Rng::new(seed, Stream::Channel, i);
    let mut url = base_url(&mut rng);
    if rng.below(10) > 0 {
        let reversed = (i as i32).reverse_bits().wrapping_abs();
        url.push_str(&format!("&channel_id={reversed}"));
    }
    url
}

/// `https://www.nexmark.com/<s>/<s>/<s>/item.htm?query=1`, each `<s>` a `string(5)` with `_`.
fn base_url(rng: &mut Rng) -> String {
    let mut url = String::from("https://www.nexmark.com/");
    for _ in 0..3 {
        push_string(rng, &mut url, 5, '_');
        url.push('/');
    }
    url.push_str("item.htm?query=1");
    url
}
