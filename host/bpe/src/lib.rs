//! Counting tokens exactly as tiktoken encodes them, without building
//! tiktoken's tables at start-up.
//!
//! tiktoken-rs builds an encoder by decoding ~200,000 base64 lines into hash
//! maps, a decoder and a sorted copy (~120 ms and ~55 MB for o200k_base,
//! paid by every process that counts). proem only ever needs a count, so
//! `build.rs` turns each of OpenAI's vocabulary files (`host/bpe/vocab/`) into
//! one flat table at compile time (see [`table`]), read in place from the
//! binary, and so is the pre-split's DFA: a process pays for the pages it
//! touches.
//! Counting is tiktoken's own method: the same pre-split ([`split`]) and the
//! same merges ([`merge`]). Counts equal tiktoken-rs's, which stays the
//! reference: `tests/pipeline/tokenizer.rs` compares the two over random and
//! adversarial text for both vocabularies.

pub mod merge;
pub mod patterns;
pub mod split;
pub mod table;

use split::PreSplit;
use std::sync::OnceLock;
use table::Table;

static O200K_TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.table"));
static CL100K_TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.table"));

/// A vocabulary and its pre-split: everything needed to count.
#[derive(Debug)]
pub struct Encoder {
    table: Table<'static>,
    split: PreSplit,
}

impl Encoder {
    /// o200k_base (GPT-4o, GPT-4.1, GPT-5, the o-series), made once per
    /// process (reading the table's and the pre-split DFA's headers).
    pub fn o200k() -> &'static Encoder {
        static ENCODER: OnceLock<Encoder> = OnceLock::new();
        ENCODER.get_or_init(|| Encoder::new(O200K_TABLE, PreSplit::o200k()))
    }

    /// cl100k_base, made once per process.
    pub fn cl100k() -> &'static Encoder {
        static ENCODER: OnceLock<Encoder> = OnceLock::new();
        ENCODER.get_or_init(|| Encoder::new(CL100K_TABLE, PreSplit::cl100k()))
    }

    fn new(blob: &'static [u8], split: PreSplit) -> Encoder {
        let table = Table::parse(blob).expect("build.rs wrote a valid vocabulary table");
        Encoder { table, split }
    }

    /// The vocabulary's table.
    pub fn table(&self) -> &Table<'static> {
        &self.table
    }

    /// Tokens in `text`, special-token strings counted as ordinary text
    /// (tiktoken's `encode_ordinary(text).len()`).
    pub fn count(&self, text: &str) -> usize {
        let mut tokens = 0;
        self.split.for_each_piece(text, |piece| tokens += merge::count_piece(&self.table, piece.as_bytes()));
        tokens
    }

    /// The pre-split pieces of `text` (for tests and tools).
    pub fn pieces<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let mut pieces = Vec::new();
        self.split.for_each_piece(text, |piece| pieces.push(piece));
        pieces
    }
}
