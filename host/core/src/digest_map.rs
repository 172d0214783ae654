//! Maps keyed by 128-bit digests (xxh3-128 of a text, a call, a build).
//!
//! The key is already a hash of its content, so hashing it again with
//! SipHash (std's default) only spends time: it was ~4% of a warm `proem
//! build`'s instructions (the token counts are looked up once per
//! paragraph). [`DigestHasher`] folds the key's two halves with a
//! multiply instead, after mixing in two secret per-process words: the
//! texts behind the digests are untrusted (workspace files, a turn's extra
//! prompt), and without the secret an attacker could search for texts whose
//! digests share their low bits and pile them into one bucket.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// A map from a 128-bit digest.
pub type DigestMap<V> = HashMap<u128, V, DigestState>;

/// The process's secret words (from std's own random hasher keys).
fn secret() -> [u64; 2] {
    static SECRET: OnceLock<[u64; 2]> = OnceLock::new();
    *SECRET.get_or_init(|| {
        let state = std::collections::hash_map::RandomState::new();
        [state.hash_one(0x7072_6f65_6d5f_6b30u64), state.hash_one(0x7072_6f65_6d5f_6b31u64)]
    })
}

/// Builds [`DigestHasher`]s keyed with the process's secret.
#[derive(Clone, Copy, Debug)]
pub struct DigestState([u64; 2]);

impl Default for DigestState {
    fn default() -> Self {
        DigestState(secret())
    }
}

impl BuildHasher for DigestState {
    type Hasher = DigestHasher;

    fn build_hasher(&self) -> DigestHasher {
        DigestHasher { secret: self.0, state: 0 }
    }
}

/// Hashes a `u128` digest in a few instructions; any other input (none in
/// proem) through the same fold, eight bytes at a time.
#[derive(Debug)]
pub struct DigestHasher {
    secret: [u64; 2],
    state: u64,
}

/// An odd multiplier (the golden ratio's 64-bit fraction, as in Fibonacci
/// hashing) for the last fold of [`DigestHasher::write_u128`].
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

/// The high and low halves of the full product, xored (foldhash's and
/// wyhash's mixer).
fn fold(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

impl Hasher for DigestHasher {
    fn write_u128(&mut self, digest: u128) {
        let low = digest as u64 ^ self.secret[0] ^ self.state;
        let high = (digest >> 64) as u64 ^ self.secret[1];
        // Folded once more by an odd constant: keys that differ in one half
        // only meet the other half as a fixed multiplier, and an even one
        // (every other secret) keeps fewer of the low bits a table uses.
        self.state = fold(fold(low, high), SPREAD);
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.state =
                fold(u64::from_le_bytes(word) ^ self.secret[0] ^ self.state, self.secret[1] ^ chunk.len() as u64);
        }
    }

    fn finish(&self) -> u64 {
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A digest map is a map: every key finds its own value, whatever
        /// the keys (here many that differ only in their high half, or only
        /// in a few low bits, as an attacker's search would make them).
        #[test]
        fn every_key_finds_its_value(base in any::<u128>(), n in 1usize..2_000, high_only in any::<bool>()) {
            let mut map = DigestMap::<usize>::default();
            let key = |i: usize| if high_only { base ^ ((i as u128) << 64) } else { base ^ i as u128 };
            for i in 0..n {
                map.insert(key(i), i);
            }
            prop_assert_eq!(map.len(), n);
            for i in 0..n {
                prop_assert_eq!(map.get(&key(i)), Some(&i));
            }
        }
    }

    /// Keys that share their low 64 bits (or their high 64) still spread
    /// over the buckets, whatever the secret: of 4,096 such keys, the
    /// hashes' low 12 bits (the bucket of a 4,096-slot table) take over
    /// 2,000 distinct values (a uniform hash gives ~2,590; a hash of one
    /// half alone would give 1). Secrets: the process's own, ones with
    /// many trailing zero bits (the even multipliers that made the
    /// fold keep fewer low bits: this failed about once in a hundred runs
    /// before the last fold), and 200 random ones.
    #[test]
    fn keys_equal_in_one_half_spread() {
        let mut secrets = vec![DigestState::default().0, [u64::MAX, 1 << 63], [1 << 40, 1 << 52], [0, 1 << 32]];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200 {
            secrets.push([next(), next() & !0xffff]);
        }
        for secret in secrets {
            let state = DigestState(secret);
            for shift in [0u32, 64] {
                let buckets: std::collections::BTreeSet<u64> =
                    (0..4096u128).map(|i| state.hash_one(0xdead_beef_u128 ^ (i << shift)) & 0xfff).collect();
                assert!(buckets.len() > 2_000, "secret {secret:x?}, shift {shift}: {} buckets", buckets.len());
            }
        }
    }
}
