//! The byte layout of a vocabulary table, shared by `build.rs` (which
//! writes one per vocabulary from `host/bpe/vocab/`) and the counter
//! (which reads it in place from the binary: nothing to build at start-up).
//!
//! A table is, little-endian throughout:
//!
//! | bytes | what |
//! |---|---|
//! | 8 | [`MAGIC`] |
//! | 4 | `n`, the number of tokens (ranks are `0..n`) |
//! | 4 | `b`, log2 of the number of slots |
//! | 4 × (n + 1) | where each token's bytes start in the byte area (the last: its end) |
//! | 8 × 2^b | the slots of an open-addressing hash index, or [`EMPTY`] |
//! | 4 × 65,536 | the rank of each two-byte token by its bytes, or `u32::MAX` |
//! | rest | every token's bytes, in rank order |
//!
//! A token's slot is found from [`hash`] of its bytes: the top `b` bits pick
//! the first slot to probe (linearly), the next [`TAG_BITS`] are the tag. A
//! slot holds, from the low bits up, where the token's bytes start (21
//! bits), its length (8), its rank (18) and the tag (17), so a probe reads
//! the token's bytes only when tag and length match, and a lookup touches
//! two cache lines: the slot and the bytes. Two-byte pieces, most of the
//! lookups a merge makes, are read from a direct table (256 KB) instead.

/// The first bytes of a table.
pub const MAGIC: &[u8; 8] = b"PROEMBP3";
/// Bits of a slot that say where the token's bytes start.
const OFFSET_BITS: u32 = 21;
/// Bits of a slot that hold the token's length: the longest token of either
/// vocabulary is 128 bytes.
const LEN_BITS: u32 = 8;
/// Bits of a slot that hold the rank: both vocabularies have fewer than
/// 2^18 tokens.
pub const RANK_BITS: u32 = 18;
/// Bits of a slot that hold the tag.
pub const TAG_BITS: u32 = 64 - OFFSET_BITS - LEN_BITS - RANK_BITS;
const LEN_SHIFT: u32 = OFFSET_BITS;
const RANK_SHIFT: u32 = LEN_SHIFT + LEN_BITS;
const TAG_SHIFT: u32 = RANK_SHIFT + RANK_BITS;
/// The longest token a table can hold.
pub const MAX_TOKEN_LEN: usize = (1 << LEN_BITS) - 1;
/// A slot that holds no token.
pub const EMPTY: u64 = u64::MAX;
const HEADER: usize = 16;
/// Entries of the two-byte table.
const PAIRS: usize = 1 << 16;

/// A slot's tag and length, as they sit in the slot.
fn key(tag: u64, len: usize) -> u64 {
    (tag << TAG_SHIFT) | ((len as u64) << LEN_SHIFT)
}

/// The rank a filled slot holds.
fn slot_rank(entry: u64) -> u32 {
    ((entry >> RANK_SHIFT) & ((1 << RANK_BITS) - 1)) as u32
}

/// The bits of a slot that [`key`] fills.
const KEY_MASK: u64 = (((1 << TAG_BITS) - 1) << TAG_SHIFT) | (((1 << LEN_BITS) - 1) << LEN_SHIFT);

/// The hash a token's bytes are indexed by (a multiply-rotate over 8-byte
/// words; tokens are short, so a few rounds, and no copy of the tail).
pub fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mix = |h: u64, w: u64| (h.rotate_left(23) ^ w).wrapping_mul(K);
    let n = bytes.len();
    let mut h = (n as u64).wrapping_mul(K);
    if n > 8 {
        let mut words = bytes[..n - 1].chunks_exact(8);
        for w in &mut words {
            h = mix(h, u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        // The last 8 bytes (overlapping the last word read when n is not a
        // multiple of 8): every byte is read, and no partial word copied.
        h = mix(h, u64::from_le_bytes(bytes[n - 8..].try_into().expect("8 bytes")));
    } else if n >= 4 {
        let lo = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
        let hi = u32::from_le_bytes(bytes[n - 4..].try_into().expect("4 bytes"));
        h = mix(h, u64::from(lo) | (u64::from(hi) << 32));
    } else if n > 0 {
        let w = u64::from(bytes[0]) | (u64::from(bytes[n / 2]) << 8) | (u64::from(bytes[n - 1]) << 16);
        h = mix(h, w);
    }
    h ^ (h >> 29)
}

/// The first slot to probe and the tag, for a table of `2^slot_bits` slots.
fn place(h: u64, slot_bits: u32) -> (usize, u64) {
    let slot = (h >> (64 - slot_bits)) as usize;
    let tag = (h >> (64 - slot_bits - TAG_BITS)) & ((1 << TAG_BITS) - 1);
    (slot, tag)
}

/// Whether `a` and `b`, of the same length, hold the same bytes: words
/// compared inline, since a token is a few bytes long and a call to
/// `memcmp` costs more than the comparison (a lookup that finds its token
/// compares once).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    let word8 = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    let word4 = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes"));
    if n >= 8 {
        // Whole words, then the last 8 bytes (overlapping when n is not a
        // multiple of 8).
        let mut at = 0;
        while at + 8 < n {
            if word8(a, at) != word8(b, at) {
                return false;
            }
            at += 8;
        }
        word8(a, n - 8) == word8(b, n - 8)
    } else if n >= 4 {
        word4(a, 0) == word4(b, 0) && word4(a, n - 4) == word4(b, n - 4)
    } else {
        a.iter().zip(b).all(|(x, y)| x == y)
    }
}

/// A table read in place.
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    offsets: &'a [u8],
    slots: &'a [u8],
    pairs: &'a [u8],
    bytes: &'a [u8],
    slot_mask: usize,
    slot_bits: u32,
}

fn word(area: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(area[i * 4..i * 4 + 4].try_into().expect("4 bytes"))
}

fn slot(area: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(area[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
}

impl<'a> Table<'a> {
    /// Reads the header of `blob`; `None` when it is not a table.
    pub fn parse(blob: &'a [u8]) -> Option<Table<'a>> {
        if blob.len() < HEADER || &blob[..8] != MAGIC {
            return None;
        }
        let n = word(&blob[8..], 0) as usize;
        let slot_bits = word(&blob[8..], 1);
        if !(1..=30).contains(&slot_bits) || n >= 1 << RANK_BITS {
            return None;
        }
        let offsets_end = HEADER + 4 * (n + 1);
        let slots_end = offsets_end + 8 * (1usize << slot_bits);
        let offsets = blob.get(HEADER..offsets_end)?;
        let slots = blob.get(offsets_end..slots_end)?;
        let pairs = blob.get(slots_end..slots_end + 4 * PAIRS)?;
        let bytes = &blob[slots_end + 4 * PAIRS..];
        if word(offsets, n) as usize != bytes.len() {
            return None;
        }
        Some(Table { offsets, slots, pairs, bytes, slot_mask: (1 << slot_bits) - 1, slot_bits })
    }

    /// The number of tokens.
    pub fn len(&self) -> usize {
        self.offsets.len() / 4 - 1
    }

    /// Whether the table has no tokens.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of the token of `rank`.
    pub fn token(&self, rank: u32) -> &'a [u8] {
        let r = rank as usize;
        &self.bytes[word(self.offsets, r) as usize..word(self.offsets, r + 1) as usize]
    }

    /// The rank of the token whose bytes are `piece`, if there is one.
    #[inline]
    pub fn rank(&self, piece: &[u8]) -> Option<u32> {
        if let &[a, b] = piece {
            let rank = word(self.pairs, usize::from(a) << 8 | usize::from(b));
            return (rank != u32::MAX).then_some(rank);
        }
        if piece.len() > MAX_TOKEN_LEN {
            return None;
        }
        let (mut at, tag) = place(hash(piece), self.slot_bits);
        let want = key(tag, piece.len());
        loop {
            let entry = slot(self.slots, at);
            if entry == EMPTY {
                return None;
            }
            if entry & KEY_MASK == want {
                let start = (entry & ((1 << OFFSET_BITS) - 1)) as usize;
                if self.bytes.get(start..start + piece.len()).is_some_and(|token| same_bytes(token, piece)) {
                    return Some(slot_rank(entry));
                }
            }
            at = (at + 1) & self.slot_mask;
        }
    }
}

/// Writes the table of `tokens` (the token of rank `r` at index `r`), with
/// slots for a load of at most 40%.
pub fn write(tokens: &[Vec<u8>]) -> Vec<u8> {
    assert!(tokens.len() < (1 << RANK_BITS), "too many tokens for {RANK_BITS} rank bits");
    let total: usize = tokens.iter().map(Vec::len).sum();
    assert!(total < 1 << OFFSET_BITS, "{total} bytes of tokens need more than {OFFSET_BITS} offset bits");
    let mut slot_bits = 1;
    while (1usize << slot_bits) * 2 < tokens.len() * 5 {
        slot_bits += 1;
    }
    let mut slots = vec![EMPTY; 1 << slot_bits];
    let mask = slots.len() - 1;
    let mut start = 0u64;
    for (rank, token) in tokens.iter().enumerate() {
        assert!(!token.is_empty() && token.len() <= MAX_TOKEN_LEN, "token {rank} is {} bytes", token.len());
        let (mut at, tag) = place(hash(token), slot_bits);
        while slots[at] != EMPTY {
            let other = slot_rank(slots[at]) as usize;
            assert!(tokens[other] != *token, "token {rank} repeats token {other}");
            at = (at + 1) & mask;
        }
        slots[at] = key(tag, token.len()) | ((rank as u64) << RANK_SHIFT) | start;
        start += token.len() as u64;
    }
    let mut pairs = vec![u32::MAX; PAIRS];
    for (rank, token) in tokens.iter().enumerate() {
        if let &[a, b] = token.as_slice() {
            pairs[usize::from(a) << 8 | usize::from(b)] = rank as u32;
        }
    }
    let mut out = Vec::with_capacity(HEADER + 4 * (tokens.len() + 1) + 8 * slots.len() + 4 * PAIRS + total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
    out.extend_from_slice(&slot_bits.to_le_bytes());
    let mut at = 0u32;
    out.extend_from_slice(&at.to_le_bytes());
    for token in tokens {
        at += token.len() as u32;
        out.extend_from_slice(&at.to_le_bytes());
    }
    for slot in slots {
        out.extend_from_slice(&slot.to_le_bytes());
    }
    for rank in pairs {
        out.extend_from_slice(&rank.to_le_bytes());
    }
    for token in tokens {
        out.extend_from_slice(token);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the tokens (lengths 1 to 255, near-twins that differ in
        /// one byte anywhere), each is found at its rank and nothing else
        /// is found.
        #[test]
        fn every_token_is_found_at_its_rank_and_no_other_text(
            seeds in prop::collection::hash_set(prop::collection::vec(any::<u8>(), 1..40), 1..300),
            long in prop::collection::vec(any::<u8>(), 200..=MAX_TOKEN_LEN),
            probes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..50),
        ) {
            let mut tokens: Vec<Vec<u8>> = seeds.into_iter().collect();
            // Twins: the same bytes but one, at each position in turn.
            for i in 0..tokens.len().min(20) {
                let mut twin = tokens[i].clone();
                let at = i % twin.len();
                twin[at] ^= 1;
                if !tokens.contains(&twin) {
                    tokens.push(twin);
                }
            }
            if !tokens.contains(&long) {
                tokens.push(long);
            }
            let blob = write(&tokens);
            let table = Table::parse(&blob).unwrap();
            prop_assert_eq!(table.len(), tokens.len());
            for (rank, token) in tokens.iter().enumerate() {
                prop_assert_eq!(table.rank(token), Some(rank as u32));
                prop_assert_eq!(table.token(rank as u32), token.as_slice());
            }
            for probe in probes {
                let expected = tokens.iter().position(|t| *t == probe).map(|r| r as u32);
                prop_assert_eq!(table.rank(&probe), expected);
            }
        }
    }

    #[test]
    fn a_blob_that_is_not_a_table_is_refused() {
        let blob = write(&[b"a".to_vec(), b"bc".to_vec()]);
        assert!(Table::parse(&blob).is_some());
        assert!(Table::parse(&blob[..blob.len() - 1]).is_none(), "a short byte area");
        assert!(Table::parse(MAGIC).is_none(), "the magic alone");
        let mut wrong = blob.clone();
        wrong[0] = b'X';
        assert!(Table::parse(&wrong).is_none());
    }
}
