//! The compiled-component cache entry's integrity rule (docs/SECURITY.md,
//! "Caches"): the MAC covers a header that binds the wasm digest, the
//! engine, and the machine code's length and xxh3-128, so a read costs one
//! xxh3 pass over the code instead of a SHA-256 one, and still no changed
//! byte anywhere in an entry is ever handed to wasmtime.

use proem_core::cache_dir::CacheDir;
use proem_wasm::cache::{decode_entry, encode_entry, EntryKey};
use proptest::prelude::*;

fn key(seed: u8) -> EntryKey {
    EntryKey { wasm: [seed; 32], engine: 0x5eed_0000 + u64::from(seed) }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Exactly what `encode_entry` wrote for a key under this folder's
    /// secret decodes, to its payload; any byte changed anywhere (header,
    /// MAC or code), any truncation or extension, another key, or another
    /// folder's secret is refused.
    #[test]
    fn an_entry_decodes_only_as_written_for_its_key_and_folder(
        payload in proptest::collection::vec(any::<u8>(), 0..4096),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
        cut in any::<prop::sample::Index>(),
        extra in proptest::collection::vec(any::<u8>(), 1..16),
    ) {
        let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (dir, other) = (CacheDir::open(ours.path()).unwrap(), CacheDir::open(theirs.path()).unwrap());
        let entry = encode_entry(&dir, &key(1), &payload);
        prop_assert_eq!(decode_entry(&dir, &key(1), &entry), Some(&payload[..]));
        let mut changed = entry.clone();
        changed[at.index(entry.len())] ^= flip;
        prop_assert_eq!(decode_entry(&dir, &key(1), &changed), None, "a changed byte was accepted");
        prop_assert_eq!(decode_entry(&dir, &key(1), &entry[..cut.index(entry.len())]), None, "a truncation");
        let longer = [&entry[..], &extra[..]].concat();
        prop_assert_eq!(decode_entry(&dir, &key(1), &longer), None, "an extension");
        prop_assert_eq!(decode_entry(&dir, &key(2), &entry), None, "another binary's entry");
        prop_assert_eq!(decode_entry(&other, &key(1), &entry), None, "another folder's entry");
    }
}
