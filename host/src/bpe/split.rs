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

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

/// A vocabulary's pre-split.
#[derive(Debug)]
pub struct PreSplit {
    regex: Regex,
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
        PreSplit::new(&O200K)
    }

    /// cl100k_base's pre-split.
    pub fn cl100k() -> PreSplit {
        PreSplit::new(&CL100K)
    }

    fn new(patterns: &[&str]) -> PreSplit {
        let regex = Regex::new_many(patterns).expect("the pre-split patterns compile");
        PreSplit { regex }
    }

    /// Calls `piece` with each piece of `text`, in order: together, the
    /// whole text.
    pub fn for_each_piece<'t>(&self, text: &'t str, mut piece: impl FnMut(&'t str)) {
        let hay = text.as_bytes();
        let mut at = 0;
        while at < hay.len() {
            let input = Input::new(hay).range(at..).anchored(Anchored::Yes);
            let Some(found) = self.regex.search(&input) else {
                // Unreachable (every character starts a match); should it
                // happen, skip to the next match as tiktoken would.
                match self.regex.search(&Input::new(hay).range(at..)) {
                    Some(next) => at = next.start(),
                    None => return,
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
