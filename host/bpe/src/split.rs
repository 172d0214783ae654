//! The pre-split: cutting text into the pieces BPE encodes one by one.
//!
//! tiktoken splits with a regex per vocabulary, run by a backtracking
//! engine because of one look-ahead, `\s+(?!\S)` (a whitespace run, less its
//! last character when a non-space follows). Here the same alternatives
//! ([`super::patterns`]) run as one of regex-automata's dense DFAs, which
//! `build.rs` compiles and the binary reads in place (no regex is compiled
//! at run time, and no Unicode table is linked for one), with that one
//! replaced by two patterns of its own, `\s+$` and `\s+\s`, the second's match given back its last
//! character: the two match at exactly the places the look-ahead does, so a
//! leftmost-first search picks the same alternative and the same end.
//! tiktoken-rs's possessive quantifiers (`?+`, `++`) are written greedy: in
//! these patterns nothing after them could match what backtracking would
//! give back, so greedy and possessive match the same text. Equality with
//! tiktoken-rs's own split is a property test (`tests/pipeline/tokenizer.rs`).
//!
//! Every character starts a match of some alternative (a letter, a digit,
//! whitespace or anything else), so each search is anchored where the last
//! piece ended and runs forward only.
//!
//! Most pieces of prose are an ASCII word (with one leading space or
//! punctuation character) or a few digits; `ascii_piece` reads those
//! directly, where the patterns' outcome depends on nothing but ASCII bytes,
//! and leaves every other piece to the regex.

use super::patterns::GIVES_BACK_ONE;
use regex_automata::dfa::{dense, Automaton};
use regex_automata::{Anchored, Input};

/// A vocabulary's pre-split.
#[derive(Debug)]
pub struct PreSplit {
    dfa: dense::DFA<&'static [u32]>,
    words: Words,
}

/// A DFA's bytes, aligned as its `u32` transition table must be to be read
/// in place.
#[repr(C)]
struct Aligned<B: ?Sized> {
    _align: [u32; 0],
    bytes: B,
}

static O200K_DFA: &Aligned<[u8]> =
    &Aligned { _align: [], bytes: *include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.dfa")) };
static CL100K_DFA: &Aligned<[u8]> =
    &Aligned { _align: [], bytes: *include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.dfa")) };

/// How a vocabulary's patterns cut a run of letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Words {
    /// o200k_base: by case (capitals, then small letters) and with a
    /// contraction joined to the word before it.
    ByCase,
    /// cl100k_base: the whole run of letters.
    WholeRuns,
}

impl PreSplit {
    /// o200k_base's pre-split.
    pub fn o200k() -> PreSplit {
        PreSplit::new(&O200K_DFA.bytes, Words::ByCase)
    }

    /// cl100k_base's pre-split.
    pub fn cl100k() -> PreSplit {
        PreSplit::new(&CL100K_DFA.bytes, Words::WholeRuns)
    }

    fn new(bytes: &'static [u8], words: Words) -> PreSplit {
        // SAFETY: the bytes are this binary's own, written by build.rs with
        // `to_bytes_*_endian` of the regex-automata in Cargo.lock (one
        // version for the build script and the binary: a different one
        // fails the header check below) for the target's endianness, and
        // aligned by `Aligned`. `from_bytes` would also walk the whole
        // transition table (2.7 MB for o200k) at every start;
        // `dfa::tests::the_built_in_dfas_pass_the_full_check` does that
        // once, in the tests.
        let (dfa, _) = unsafe { dense::DFA::from_bytes_unchecked(bytes) }.expect("build.rs wrote this DFA");
        PreSplit { dfa, words }
    }

    /// Calls `piece` with each piece of `text`, in order: together, the
    /// whole text.
    pub fn for_each_piece<'t>(&self, text: &'t str, mut piece: impl FnMut(&'t str)) {
        let hay = text.as_bytes();
        let mut at = 0;
        while at < hay.len() {
            match ascii_piece(hay, at, self.words).or_else(|| self.regex_piece(text, at)) {
                Some(end) => {
                    piece(&text[at..end]);
                    at = end;
                }
                // Unreachable (every character starts a match, and the DFA
                // has no quit bytes); should it happen, the character is
                // skipped, as tiktoken skips text no pattern matches.
                None => at += text[at..].chars().next().map_or(1, char::len_utf8),
            }
        }
    }

    /// The end of the piece starting at `at`, by the DFA.
    fn regex_piece(&self, text: &str, at: usize) -> Option<usize> {
        let input = Input::new(text.as_bytes()).range(at..).anchored(Anchored::Yes);
        let found = self.dfa.try_search_fwd(&input).ok()??;
        let mut end = found.offset();
        if found.pattern().as_usize() == GIVES_BACK_ONE {
            end -= text[..end].chars().next_back().map_or(0, char::len_utf8);
        }
        Some(end)
    }
}

/// Whitespace as the patterns' `\s` (and `char::is_whitespace`) has it, in
/// ASCII: tab to carriage return (with the vertical tab
/// `u8::is_ascii_whitespace` leaves out) and space.
pub fn is_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ')
}

/// The patterns' `[^\s\p{L}\p{N}]` in ASCII: punctuation, symbols and
/// control characters.
fn is_punct(b: u8) -> bool {
    b.is_ascii() && !is_space(b) && !b.is_ascii_alphanumeric()
}

/// The end of the piece starting at `at` when plain ASCII settles it, by
/// the patterns' alternatives in their order; `None` leaves the piece to
/// the regex (anything non-ASCII where it could matter, and a few rare
/// cases):
///
/// - up to three ASCII digits (`\p{N}{1,3}`; no other alternative starts
///   with a digit);
/// - an ASCII word with at most one leading character that is neither a
///   letter, a digit, `\r` nor `\n` (the optional prefix), ending before an
///   ASCII byte that cannot continue it. Left to the regex: a contraction
///   (o200k joins `'s` to the word before it, cl100k makes it a piece of its
///   own), a small letter followed by a capital (o200k cuts there);
/// - else, a run of punctuation with at most one space before it and the
///   `\r`, `\n` (o200k: and `/`) after it (` ?[^\s\p{L}\p{N}]+[\r\n/]*`);
/// - else, whitespace: up to its last newline (`\s*[\r\n]+`), all of it at
///   the end of the text (`\s+$`, which cl100k tries first), all but its
///   last character before other text (`\s+(?!\S)`), or its one character.
///
/// `tests::ascii_pieces_end_where_the_regex_ends` checks every position of
/// generated text against the DFA.
fn ascii_piece(hay: &[u8], at: usize, words: Words) -> Option<usize> {
    let first = hay[at];
    if first.is_ascii_digit() {
        // `\p{N}{1,3}`: no other alternative starts with a digit.
        let digits = hay[at..].iter().take(3).take_while(|b| b.is_ascii_digit()).count();
        let end = at + digits;
        let settled = digits == 3 || hay.get(end).is_none_or(u8::is_ascii);
        return settled.then_some(end);
    }
    if !first.is_ascii() {
        return None;
    }
    // (cl100k matches a contraction on its own first: `'s`, `'ll`, ...)
    if first == b'\'' && words == Words::WholeRuns {
        return None;
    }
    let prefixable = first != b'\r' && first != b'\n';
    let letters = if first.is_ascii_alphabetic() { at } else { at + 1 };
    match hay.get(letters) {
        Some(b) if b.is_ascii_alphabetic() && (letters == at || prefixable) => return word_end(hay, letters, words),
        _ => {}
    }
    // No word starts here, unless a letter beyond ASCII follows the prefix:
    // both ways below then end at that byte and leave the piece to the
    // regex.
    let run = if first == b' ' && hay.get(at + 1).is_some_and(|&b| is_punct(b)) { at + 1 } else { at };
    if is_punct(hay[run]) {
        let mut end = run;
        while hay.get(end).is_some_and(|&b| is_punct(b)) {
            end += 1;
        }
        if hay.get(end).is_some_and(|b| !b.is_ascii()) {
            return None; // a symbol beyond ASCII may go on with the run
        }
        let tail = |b: u8| b == b'\r' || b == b'\n' || (b == b'/' && words == Words::ByCase);
        while hay.get(end).is_some_and(|&b| tail(b)) {
            end += 1;
        }
        return Some(end);
    }
    // Whitespace (`first` is ASCII and neither a letter, a digit nor
    // punctuation).
    let mut end = at;
    while hay.get(end).is_some_and(|&b| is_space(b)) {
        end += 1;
    }
    let next = hay.get(end);
    if next.is_some_and(|b| !b.is_ascii()) {
        return None; // whitespace beyond ASCII may go on with the run
    }
    let last_newline = hay[at..end].iter().rposition(|&b| b == b'\r' || b == b'\n');
    if next.is_none() && (words == Words::WholeRuns || last_newline.is_none()) {
        return Some(end);
    }
    if let Some(newline) = last_newline {
        return Some(at + newline + 1);
    }
    Some(if end - at >= 2 { end - 1 } else { end })
}

/// The end of an ASCII word whose letters start at `letters` (after the
/// optional prefix), or `None` when the regex must decide.
fn word_end(hay: &[u8], letters: usize, words: Words) -> Option<usize> {
    let mut i = letters;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Text of the classes the fast path tells apart, and of the ones it
    /// leaves to the regex: every ASCII whitespace and control character,
    /// punctuation the patterns name, contractions, letters of both cases,
    /// digits, and characters beyond ASCII (a letter, a mark, a space, a
    /// symbol, punctuation).
    fn mixed_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::strategy::Strategy;
        let piece = proptest::prop_oneof![
            "[a-zA-Z]{1,6}",
            "[0-9]{1,4}",
            "[ \t\n\r\u{b}\u{c}]{1,4}",
            "[!-/:-@\\[-`{-~]{1,3}",
            "[.:)]?\\r?\\n/{1,2}",
            "[\u{0}-\u{8}\u{e}-\u{1f}\u{7f}]",
            "'[sStTdDmM]|'ll|'VE|'re",
            "[é\u{301}\u{a0}\u{3000}…’😀]",
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Wherever a piece could start (every character of the text), a
        /// piece the fast path settles ends where the DFA's ends, for both
        /// vocabularies.
        #[test]
        fn ascii_pieces_end_where_the_regex_ends(text in mixed_text()) {
            for split in [PreSplit::o200k(), PreSplit::cl100k()] {
                for (at, _) in text.char_indices() {
                    if let Some(end) = ascii_piece(text.as_bytes(), at, split.words) {
                        proptest::prop_assert_eq!(
                            Some(end),
                            split.regex_piece(&text, at),
                            "{:?} at {} ({:?})",
                            &text,
                            at,
                            split.words
                        );
                    }
                }
            }
        }
    }

    /// What `PreSplit::new` skips at every start: every transition of the
    /// built-in DFAs leads to a state that exists.
    #[test]
    fn the_built_in_dfas_pass_the_full_check() {
        for bytes in [&O200K_DFA.bytes, &CL100K_DFA.bytes] {
            let (dfa, read) = dense::DFA::from_bytes(bytes).expect("a valid DFA");
            assert_eq!(read, bytes.len(), "nothing after the DFA");
            assert_eq!(dfa.pattern_len(), 3, "the three patterns of super::patterns");
        }
    }
}
