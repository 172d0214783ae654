//! Byte-pair merging, counting the tokens of one pre-split piece.
//!
//! The same merges as tiktoken's: repeatedly join the adjacent pair whose
//! bytes are the lowest-ranked token, the leftmost on a tie, until no pair is
//! a token. Short pieces scan a small array (tiktoken's method below 100
//! bytes); longer ones keep a heap of candidate merges over a linked list,
//! so a piece of kilobytes costs n log n rather than n².

use super::table::Table;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Pieces shorter than this are merged by scanning.
const SMALL: usize = 100;

/// Tokens in `piece` (non-empty).
pub fn count_piece(table: &Table<'_>, piece: &[u8]) -> usize {
    if piece.len() <= 1 {
        return piece.len(); // every byte is a token
    }
    if table.rank(piece).is_some() {
        return 1;
    }
    if piece.len() < SMALL {
        count_small(table, piece)
    } else {
        count_large(table, piece)
    }
}

fn rank_of(table: &Table<'_>, bytes: &[u8]) -> u32 {
    table.rank(bytes).unwrap_or(u32::MAX)
}

/// `parts[i]` starts a current token; `ranks[i]` is the rank of it joined
/// with the next (`u32::MAX`: not a token). The last part is the end.
fn count_small(table: &Table<'_>, piece: &[u8]) -> usize {
    let n = piece.len();
    let mut starts = [0u8; SMALL + 1];
    let mut ranks = [u32::MAX; SMALL + 1];
    for (i, start) in starts[..=n].iter_mut().enumerate() {
        *start = i as u8;
    }
    for i in 0..n - 1 {
        ranks[i] = rank_of(table, &piece[i..i + 2]);
    }
    let mut len = n + 1;
    loop {
        let (mut min, mut at) = (u32::MAX, 0);
        for (i, &r) in ranks[..len - 1].iter().enumerate() {
            if r < min {
                (min, at) = (r, i);
            }
        }
        if min == u32::MAX {
            return len - 1;
        }
        // Joining parts `at` and `at + 1`: the pairs starting at `at - 1`
        // and at `at` now span three of today's parts.
        let joined_rank = |i: usize| {
            if i + 3 < len {
                rank_of(table, &piece[starts[i] as usize..starts[i + 3] as usize])
            } else {
                u32::MAX
            }
        };
        if at > 0 {
            ranks[at - 1] = joined_rank(at - 1);
        }
        ranks[at] = joined_rank(at);
        starts.copy_within(at + 2..len, at + 1);
        ranks.copy_within(at + 2..len, at + 1);
        len -= 1;
    }
}

/// One current token of a long piece: where it ends, the part before it,
/// where the part after it ends, and the rank of it joined with that part.
struct Part {
    prev: usize,
    end: usize,
    next_end: usize,
    next_rank: u32,
}

fn count_large(table: &Table<'_>, piece: &[u8]) -> usize {
    let n = piece.len();
    let mut parts: Vec<Part> =
        (0..n).map(|i| Part { prev: i.wrapping_sub(1), end: i + 1, next_end: i + 2, next_rank: u32::MAX }).collect();
    // (rank, start), smallest first: the lowest rank, then the leftmost.
    let mut heap = BinaryHeap::with_capacity(n);
    for i in 0..n - 1 {
        let rank = rank_of(table, &piece[i..i + 2]);
        if rank != u32::MAX {
            parts[i].next_rank = rank;
            heap.push(Reverse((rank, i)));
        }
    }
    let mut tokens = n;
    let offer = |parts: &mut Vec<Part>, heap: &mut BinaryHeap<Reverse<(u32, usize)>>, start: usize, next_end: usize| {
        parts[start].next_end = next_end;
        parts[start].next_rank = u32::MAX;
        if next_end <= n {
            let rank = rank_of(table, &piece[start..next_end]);
            if rank != u32::MAX {
                parts[start].next_rank = rank;
                heap.push(Reverse((rank, start)));
            }
        }
    };
    while let Some(Reverse((rank, left))) = heap.pop() {
        if rank != parts[left].next_rank {
            continue; // a merge made stale by an earlier one
        }
        let right = parts[left].end;
        let right_end = parts[left].next_end;
        let right_next_end = parts[right].next_end;
        parts[left].end = right_end;
        offer(&mut parts, &mut heap, left, right_next_end);
        if right_end < n {
            parts[right_end].prev = left;
        }
        if left > 0 {
            let prev = parts[left].prev;
            offer(&mut parts, &mut heap, prev, right_end);
        }
        parts[right].next_rank = u32::MAX;
        tokens -= 1;
    }
    tokens
}
