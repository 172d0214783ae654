//! The pre-split: cutting text into the pieces BPE encodes one by one.
//!
//! tiktoken splits with a regex per vocabulary, run by a backtracking
//! engine because of one look-ahead, `\s+(?!\S)` (a whitespace run, less its
//! last character when a non-space follows). Here the same alternatives run
//! on regex-automata's lazy DFA, with that one replaced by two patterns of
//! its own, `\s+$` and `\s+\s`, the second's match given back its last
//! character: the two match at exactly the places the look-ahead does, so a
//! leftmost-first search picks the same alternative and the same end.
//! tiktoken-rs's possessive quantifiers (`?+`, `++`) are written greedy: in
//! these patterns nothing after them could match what backtracking would
//! give back, so greedy and possessive match the same text. Equality with
//! tiktoken-rs's own split is a property test (`tests/tokenizer.rs`).
//!
//! Every character starts a match of some alternative (a letter, a digit,
//! whitespace or anything else), so each search is anchored where the last
//! piece ended and runs forward only.
//!
//! Most pieces of prose are an ASCII word (with one leading space or
//! punctuation character) or a few digits; `ascii_piece` reads those
//! directly, where the patterns' outcome depends on nothing but ASCII bytes,
//! and leaves every other piece to the regex.

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

/// A vocabulary's pre-split.
#[derive(Debug)]
pub struct PreSplit {
    regex: Regex,
    words: Words,
}

/// How a vocabulary's patterns cut a run of letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Words {
    /// o200k_base: by case (capitals, then small letters) and with a
    /// contraction joined to the word before it.
    ByCase,
    /// cl100k_base: the whole run of letters.
    WholeRuns,
}

/// The pattern whose match ends with one character too many.
const GIVES_BACK_ONE: usize = 1;

/// o200k_base's alternatives, as tiktoken-rs writes them, in its order.
const O200K: [&str; 3] = [
    concat!(
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"|\p{N}{1,3}",
        r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"|\s*[\r\n]+",
        // `\s+(?!\S)` at the end of the text:
        r"|\s+$",
    ),
    // `\s+(?!\S)` before a non-space, with its last character given back:
    r"\s+\s",
    r"\s+",
];

/// cl100k_base's alternatives (tiktoken-rs's variant of the pattern).
const CL100K: [&str; 3] = [
    concat!(
        r"'(?i:[sdmt]|ll|ve|re)",
        r"|[^\r\n\p{L}\p{N}]?\p{L}+",
        r"|\p{N}{1,3}",
        r"| ?[^\s\p{L}\p{N}]+[\r\n]*",
        r"|\s+$",
        r"|\s*[\r\n]",
    ),
    r"\s+\s",
    r"\s",
];

impl PreSplit {
    /// o200k_base's pre-split.
    pub fn o200k() -> PreSplit {
        PreSplit::new(&O200K, Words::ByCase)
    }

    /// cl100k_base's pre-split.
    pub fn cl100k() -> PreSplit {
        PreSplit::new(&CL100K, Words::WholeRuns)
    }

    fn new(patterns: &[&str], words: Words) -> PreSplit {
        let regex = Regex::new_many(patterns).expect("the pre-split patterns compile");
        PreSplit { regex, words }
    }

    /// Calls `piece` with each piece of `text`, in order: together, the
    /// whole text.
    pub fn for_each_piece<'t>(&self, text: &'t str, mut piece: impl FnMut(&'t str)) {
        let hay = text.as_bytes();
        let mut at = 0;
        while at < hay.len() {
            if let Some(end) = ascii_piece(hay, at, self.words) {
                piece(&text[at..end]);
                at = end;
                continue;
            }
            let input = Input::new(hay).range(at..).anchored(Anchored::Yes);
            let Some(found) = self.regex.search(&input) else {
                // Unreachable (every character starts a match); should it
                // happen, skip to the next match as tiktoken would.
                match self.regex.search(&Input::new(hay).range(at..)) {
                    Some(next) if next.start() > at => at = next.start(),
                    _ => return,
                }
                continue;
            };
            let mut end = found.end();
            if found.pattern().as_usize() == GIVES_BACK_ONE {
                end -= text[..end].chars().next_back().map_or(0, char::len_utf8);
            }
            piece(&text[at..end]);
            at = end;
        }
    }
}

/// The end of the piece starting at `at` when it is one whose extent plain
/// ASCII settles: up to three ASCII digits, or an ASCII word with at most
/// one leading character that is neither a letter, a digit, `\r` nor `\n`
/// (the patterns' optional prefix), ending before an ASCII byte that cannot
/// continue it. `None` leaves the piece to the regex: anything non-ASCII
/// where it could matter, a contraction (o200k joins `'s` to the word
/// before it, cl100k makes it a piece of its own), a small letter followed
/// by a capital (o200k cuts there), whitespace and punctuation runs.
fn ascii_piece(hay: &[u8], at: usize, words: Words) -> Option<usize> {
    let first = hay[at];
    if first.is_ascii_digit() {
        // `\p{N}{1,3}`: no other alternative starts with a digit.
        let digits = hay[at..].iter().take(3).take_while(|b| b.is_ascii_digit()).count();
        let end = at + digits;
        let settled = digits == 3 || hay.get(end).is_none_or(u8::is_ascii);
        return settled.then_some(end);
    }
    let mut i = at;
    if !first.is_ascii_alphabetic() {
        // The optional prefix `[^\r\n\p{L}\p{N}]`, then letters must follow.
        // (cl100k matches a contraction on its own first: `'s`, `'ll`, ...)
        let contraction = first == b'\'' && words == Words::WholeRuns;
        if !first.is_ascii() || first == b'\r' || first == b'\n' || contraction {
            return None;
        }
        i += 1;
    }
    let letters = i;
    match words {
        Words::ByCase => {
            // Capitals then small letters: both o200k alternatives take the
            // whole of such a run.
            while hay.get(i).is_some_and(u8::is_ascii_uppercase) {
                i += 1;
            }
            while hay.get(i).is_some_and(u8::is_ascii_lowercase) {
                i += 1;
            }
        }
        Words::WholeRuns => {
            while hay.get(i).is_some_and(u8::is_ascii_alphabetic) {
                i += 1;
            }
        }
    }
    if i == letters {
        return None;
    }
    // What follows must end the word for certain: the end of the text or an
    // ASCII byte that is not a letter (a capital after a small letter
    // starts o200k's next piece, a case left to the regex) and, for o200k,
    // not an apostrophe (a contraction may join the word).
    match hay.get(i) {
        None => Some(i),
        Some(&next) if !next.is_ascii() || next.is_ascii_alphabetic() => None,
        Some(b'\'') if words == Words::ByCase => None,
        Some(_) => Some(i),
    }
}
