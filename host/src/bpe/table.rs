//! The byte layout of a vocabulary table, shared by `build.rs` (which
//! writes one per vocabulary from tiktoken-rs's own tables) and the counter
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
//! | 4 × 2^b | the slots of an open-addressing hash index: `tag << RANK_BITS \| rank`, or [`EMPTY`] |
//! | rest | every token's bytes, in rank order |
//!
//! A token's slot is found from [`hash`] of its bytes: the top `b` bits pick
//! the first slot to probe (linearly), the next [`TAG_BITS`] are the tag, so
//! a probe compares bytes only when the tag matches.

/// The first bytes of a table.
pub const MAGIC: &[u8; 8] = b"PROEMBP1";
/// Bits of a slot that hold the rank: both vocabularies have fewer than
/// 2^18 tokens.
pub const RANK_BITS: u32 = 18;
/// Bits of a slot that hold the tag.
pub const TAG_BITS: u32 = 32 - RANK_BITS;
/// A slot that holds no token.
pub const EMPTY: u32 = u32::MAX;
const HEADER: usize = 16;

/// The hash a token's bytes are indexed by (a multiply-rotate over 8-byte
/// words; tokens are short, so a few rounds).
pub fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = (h.rotate_left(23) ^ u64::from_le_bytes(w.try_into().expect("8 bytes"))).wrapping_mul(K);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(last)).wrapping_mul(K);
    }
    h ^ (h >> 29)
}

/// The first slot to probe and the tag, for a table of `2^slot_bits` slots.
fn place(h: u64, slot_bits: u32) -> (usize, u32) {
    let slot = (h >> (64 - slot_bits)) as usize;
    let tag = ((h >> (64 - slot_bits - TAG_BITS)) as u32) & ((1 << TAG_BITS) - 1);
    (slot, tag)
}

/// A table read in place.
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    offsets: &'a [u8],
    slots: &'a [u8],
    bytes: &'a [u8],
    slot_mask: usize,
    slot_bits: u32,
}

fn word(area: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(area[i * 4..i * 4 + 4].try_into().expect("4 bytes"))
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
        let slots_end = offsets_end + 4 * (1usize << slot_bits);
        let offsets = blob.get(HEADER..offsets_end)?;
        let slots = blob.get(offsets_end..slots_end)?;
        let bytes = &blob[slots_end..];
        if word(offsets, n) as usize != bytes.len() {
            return None;
        }
        Some(Table { offsets, slots, bytes, slot_mask: (1 << slot_bits) - 1, slot_bits })
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
        let (mut slot, tag) = place(hash(piece), self.slot_bits);
        loop {
            let entry = word(self.slots, slot);
            if entry == EMPTY {
                return None;
            }
            let rank = entry & ((1 << RANK_BITS) - 1);
            if entry >> RANK_BITS == tag && self.token(rank) == piece {
                return Some(rank);
            }
            slot = (slot + 1) & self.slot_mask;
        }
    }
}

/// Writes the table of `tokens` (the token of rank `r` at index `r`), with
/// slots for a load of at most 40%.
pub fn write(tokens: &[Vec<u8>]) -> Vec<u8> {
    assert!(tokens.len() < (1 << RANK_BITS) - 1, "too many tokens for {RANK_BITS} rank bits");
    let mut slot_bits = 1;
    while (1usize << slot_bits) * 2 < tokens.len() * 5 {
        slot_bits += 1;
    }
    let mut slots = vec![EMPTY; 1 << slot_bits];
    let mask = slots.len() - 1;
    for (rank, token) in tokens.iter().enumerate() {
        let (mut slot, tag) = place(hash(token), slot_bits);
        while slots[slot] != EMPTY {
            let other = (slots[slot] & ((1 << RANK_BITS) - 1)) as usize;
            assert!(tokens[other] != *token, "token {rank} repeats token {other}");
            slot = (slot + 1) & mask;
        }
        slots[slot] = (tag << RANK_BITS) | rank as u32;
    }
    let total: usize = tokens.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(HEADER + 4 * (tokens.len() + 1 + slots.len()) + total);
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
    for token in tokens {
        out.extend_from_slice(token);
    }
    out
}
