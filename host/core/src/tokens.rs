//! Exact token counting with tiktoken's BPE vocabularies.
//!
//! Texts are encoded by [`proem_bpe`] (tiktoken's counts, from tables
//! built into the binary), and counts are memoised per paragraph by a
//! 128-bit hash of the text, in memory, so a text that was counted before
//! is never encoded again. What is saved on disk for the next process
//! ([`TokenCounter::save`]) is bounded, whatever the number of turns: the
//! [`SAVED_LIMIT`] most recently used counts of what every turn shares
//! (texts counted with [`TokenCounter::count_kept`]: the files, the sections
//! above a turn's, the stable part), then the [`RECENT_LIMIT`] most
//! recently used other counts (the last turns' dynamic part), which turns
//! replace among themselves and never push a kept count out.

use crate::cache_dir::CacheDir;
use crate::digest_map::DigestMap;
use crate::sync::Lock;
use proem_bpe::Encoder;
use xxhash_rust::xxh3::xxh3_128;

/// The vocabularies proem counts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tokenizer {
    /// GPT-4o, GPT-4.1, GPT-5 and the o-series.
    O200kBase,
    /// GPT-4 and GPT-3.5 (and the stand-in for a model whose tokenizer proem
    /// does not have).
    Cl100kBase,
    /// Claude, whose tokenizer is not published: an estimate,
    /// [`CLAUDE_ESTIMATE_PER_MILLE`] of cl100k_base's count, rounded up.
    ClaudeEstimate,
    /// A Hugging Face tokenizer.json (see [`crate::vocab`]).
    HuggingFace(&'static crate::vocab::HfVocab),
}

/// What [`Tokenizer::ClaudeEstimate`] counts per thousand cl100k_base
/// tokens: Claude's tokenizers give ~1.1-1.2x cl100k_base's count on
/// English prose and code (published comparisons; no exact offline count
/// exists), and the estimate adds a safety margin on top, so a budget in
/// Claude tokens is not overrun: 1.25x.
pub const CLAUDE_ESTIMATE_PER_MILLE: usize = 1250;

impl Tokenizer {
    /// The report's name: the tiktoken name, `claude-estimate`, or `hf-`
    /// and 13 hex digits of the tokenizer.json's SHA-256.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200kBase => "o200k_base",
            Tokenizer::Cl100kBase => "cl100k_base",
            Tokenizer::ClaudeEstimate => "claude-estimate",
            Tokenizer::HuggingFace(v) => v.name(),
        }
    }

    /// Parses a built-in name (a tokenizer.json is loaded by
    /// [`crate::vocab::load_file`]).
    pub fn from_name(name: &str) -> Option<Tokenizer> {
        match name {
            "o200k_base" => Some(Tokenizer::O200kBase),
            "cl100k_base" => Some(Tokenizer::Cl100kBase),
            "claude-estimate" => Some(Tokenizer::ClaudeEstimate),
            _ => None,
        }
    }

    /// Whether counts of the sum of [`chunks`] add up to the whole text's
    /// (tiktoken's pre-split always cuts there); a tokenizer.json's
    /// pre-split may not, so its texts are encoded whole.
    fn sums_by_paragraph(self) -> bool {
        !matches!(self, Tokenizer::HuggingFace(_))
    }

    /// The built-in vocabulary's encoder (the estimate's is cl100k_base);
    /// `None` for a tokenizer.json.
    pub fn encoder(self) -> Option<&'static Encoder> {
        match self {
            Tokenizer::O200kBase => Some(Encoder::o200k()),
            Tokenizer::Cl100kBase | Tokenizer::ClaudeEstimate => Some(Encoder::cl100k()),
            Tokenizer::HuggingFace(_) => None,
        }
    }

    /// The exact count this tokenizer's counts are made of, of one piece of
    /// text (at most [`WORD_RUN_LIMIT`] bytes of a run), `None` when the
    /// tokenizer failed on it: for the Claude estimate, cl100k_base's
    /// (scaled by [`Tokenizer::scale`]).
    fn count_piece(self, piece: &str) -> Option<usize> {
        match self {
            Tokenizer::O200kBase | Tokenizer::Cl100kBase | Tokenizer::ClaudeEstimate => {
                self.encoder().map(|e| e.count(piece))
            }
            Tokenizer::HuggingFace(v) => v.count(piece),
        }
    }

    /// Tokens of a chunk of [`chunks`] from its exact count: the Claude
    /// estimate's margin, rounded up once per chunk. Exact counts add up
    /// over any cut `chunks` or the memo makes, so rounding only whole
    /// chunks makes a text's estimate a function of the text alone, not of
    /// which of its parts the memo held (rounding each encoded part gave a
    /// count one higher after some other agent's text was counted).
    fn scale(self, exact: usize) -> usize {
        match self {
            Tokenizer::ClaudeEstimate => exact.saturating_mul(CLAUDE_ESTIMATE_PER_MILLE).div_ceil(1000),
            _ => exact,
        }
    }
}

/// Most memo entries kept before the memo is pruned to what a save would
/// write (bounds memory in long-running processes: about 50 bytes each).
const MEMO_LIMIT: usize = 65_536;
/// Most counts of kept texts saved on disk (see
/// [`TokenCounter::count_kept`]): 20 bytes each. The round-three workspace
/// (~94 KB of markdown, 30 tools, 24 skills) keeps ~200, so this holds
/// twenty such agents sharing a cache folder.
pub const SAVED_LIMIT: usize = 4_096;
/// Most other counts saved on disk (the most recently used: the last
/// turns' dynamic part, ~10-20 pieces a turn, so a new process building
/// a recent turn or day encodes nothing).
pub const RECENT_LIMIT: usize = 256;
/// Most whole-text counts kept in memory (never saved: a new date line makes
/// a new prompt every day, and the paragraph counts already cover it).
const WHOLE_LIMIT: usize = 1_024;
/// The least time between two saves builds make (see
/// [`TokenCounter::save_due`]).
pub const SAVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Counts tokens, remembering every paragraph it has counted.
///
/// Texts are counted paragraph by paragraph (see [`chunks`]): the sum is the
/// exact count of the whole text, and a prompt that differs from the last
/// one in its date line re-encodes that paragraph alone. A text counted
/// before as a whole (the same prompt, section or file in the next build)
/// costs one hash and one lookup. Counts can be
/// loaded from and saved to a file, so a new process never encodes text
/// some earlier process has counted.
#[derive(Debug)]
pub struct TokenCounter {
    tokenizer: Tokenizer,
    memo: Lock<Memo>,
}

#[derive(Debug, Default)]
struct Memo {
    /// Every count, with the `tick` it was last used.
    counts: DigestMap<Kept>,
    /// Whole texts counted in this process (see [`WHOLE_LIMIT`]), and
    /// whether their pieces were kept.
    wholes: DigestMap<(u32, bool)>,
    /// The counts of kept texts (see [`TokenCounter::count_kept`]), with
    /// the `tick` each was last used.
    kept: DigestMap<Kept>,
    /// The clock of `counts` and `kept`: one tick per text counted.
    tick: u64,
    /// Entries `counts` or `kept` gained since the last load or save.
    unsaved: usize,
    /// When this counter last wrote its file.
    saved_at: Option<std::time::Instant>,
    /// Whether lookups may use the memo (benchmarks turn it off).
    enabled: bool,
    encoded_bytes: u64,
}

impl TokenCounter {
    /// A counter for `tokenizer`.
    pub fn new(tokenizer: Tokenizer) -> TokenCounter {
        TokenCounter { tokenizer, memo: Lock::new(Memo { enabled: true, ..Memo::default() }) }
    }

    /// The vocabulary in use.
    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// Tokens in `text` (special-token strings count as ordinary text).
    ///
    /// Total: any text is counted in linear time with bounded stack (see
    /// [`bounded_pieces`]); the memo is never locked while text is encoded,
    /// so concurrent callers (plugins' `count-tokens`) do not queue behind a
    /// long text.
    pub fn count(&self, text: &str) -> usize {
        self.count_hashed(text).0
    }

    /// [`TokenCounter::count`], with the xxh3-128 of `text` it looked the
    /// count up by: a caller that needs both hashes the text once.
    pub fn count_hashed(&self, text: &str) -> (usize, u128) {
        let whole = xxh3_128(text.as_bytes());
        (self.count_with_hash(text, whole), whole)
    }

    /// Where the last piece of [`chunks`] of `text` starts, when this
    /// counter's counts add up by those pieces (else 0). A cut there is one
    /// of [`chunks`]'s: it depends on the bytes on either side alone, so the
    /// tokens of `text[..at]` plus those of the rest of any text that starts
    /// with `text` are that text's count. A prompt whose stable part was
    /// counted is then counted from its last piece on.
    pub fn head_cut(&self, text: &str) -> usize {
        if !self.tokenizer.sums_by_paragraph() {
            return 0;
        }
        chunks(text).last().map_or(0, |last| text.len() - last.len())
    }

    /// [`TokenCounter::count`], keeping the counts of `text`'s pieces for
    /// [`TokenCounter::save`]: for texts every turn of an agent shares (its
    /// files, the stable sections, the stable part), which a new
    /// process counts again. Texts of one turn (the date, an extra prompt,
    /// a plugin's `count-tokens`) are counted with [`TokenCounter::count`]
    /// and never reach the disk, so the file does not grow with turns.
    pub fn count_kept(&self, text: &str) -> usize {
        self.count_with(text, xxh3_128(text.as_bytes()), true)
    }

    /// [`TokenCounter::count_kept`] returning the xxh3-128 of `text` too.
    pub fn count_kept_hashed(&self, text: &str) -> (usize, u128) {
        let whole = xxh3_128(text.as_bytes());
        (self.count_with(text, whole, true), whole)
    }

    fn count_with_hash(&self, text: &str, whole: u128) -> usize {
        self.count_with(text, whole, false)
    }

    /// Tokens of `text` (`whole` its xxh3-128), from the memo or piece by
    /// piece, keeping the pieces' counts when `keep`.
    fn count_with(&self, text: &str, whole: u128, keep: bool) -> usize {
        if text.is_empty() {
            return 0;
        }
        let enabled = {
            let mut memo = self.memo.lock();
            memo.tick += 1;
            if memo.enabled {
                if let Some(&(n, kept)) = memo.wholes.get(&whole) {
                    if kept || !keep {
                        return n as usize;
                    }
                }
            }
            memo.enabled
        };
        let keep = keep && enabled;
        let mut total = 0usize;
        if !self.tokenizer.sums_by_paragraph() {
            total = self.tokenizer.scale(self.count_piece(text, whole, enabled, 0, keep));
        }
        for chunk in chunks(text).filter(|_| self.tokenizer.sums_by_paragraph()) {
            let key = if chunk.len() == text.len() { whole } else { xxh3_128(chunk.as_bytes()) };
            total += self.tokenizer.scale(self.count_piece(chunk, key, enabled, TAIL_SPLITS, keep));
        }
        if let (true, Ok(n)) = (enabled, u32::try_from(total)) {
            let mut memo = self.memo.lock();
            if memo.wholes.len() >= WHOLE_LIMIT {
                memo.wholes.clear();
            }
            let kept = keep || memo.wholes.get(&whole).is_some_and(|w| w.1);
            memo.wholes.insert(whole, (n, kept));
        }
        total
    }

    /// Exact tokens ([`Tokenizer::count_piece`]'s unit) of one piece of
    /// [`chunks`] (`key` its xxh3-128), from the memo or encoded. A piece
    /// encoded is first cut before its last line
    /// (a cut [`chunks`] could make, so the two parts' counts add up), and
    /// the part before, cut again `splits - 1` times, is remembered too:
    /// the same paragraph at the end of a text alone (a section, a file)
    /// differs from its piece in the prompt only in its last line or two
    /// (the blank line after it, a closing tag), and is then counted by
    /// encoding that line alone. When `keep`, the piece's count is kept
    /// for [`TokenCounter::save`] (the parts before are not: a new process
    /// looks up the pieces this one looked up).
    fn count_piece(&self, piece: &str, key: u128, enabled: bool, splits: usize, keep: bool) -> usize {
        if enabled {
            let mut memo = self.memo.lock();
            let tick = memo.tick;
            let found = match memo.counts.get_mut(&key) {
                Some(entry) => {
                    entry.used = tick;
                    Some(entry.count)
                }
                None => memo.kept.get(&key).map(|k| k.count),
            };
            if let Some(n) = found {
                if keep {
                    memo.keep(key, n);
                }
                return n as usize;
            }
        }
        let (n, encoded) = match last_line_cut(piece).filter(|_| splits > 0) {
            Some(cut) => {
                let (head, last) = piece.split_at(cut);
                let head_n = self.count_piece(head, xxh3_128(head.as_bytes()), enabled, splits - 1, false);
                (head_n + encode_len(self.tokenizer, last), last)
            }
            None => (encode_len(self.tokenizer, piece), piece),
        };
        let mut memo = self.memo.lock();
        memo.encoded_bytes += encoded.len() as u64;
        if let (true, Ok(count)) = (enabled, u32::try_from(n)) {
            if memo.counts.len() >= MEMO_LIMIT {
                memo.prune_recent();
            }
            let used = memo.tick;
            if memo.counts.insert(key, Kept { count, used }).is_none() {
                memo.unsaved += 1;
            }
            if keep {
                memo.keep(key, count);
            }
        }
        n
    }

    /// Turns the memo on or off (off: every count encodes; for benchmarks).
    pub fn set_memo(&self, enabled: bool) {
        let mut memo = self.memo.lock();
        memo.enabled = enabled;
    }

    /// Bytes this counter has run through the BPE encoder (tests use it to
    /// prove a count came from the memo).
    pub fn encoded_bytes(&self) -> u64 {
        self.memo.lock().encoded_bytes
    }

    /// Adds the counts saved in the cache folder `dir` (see
    /// [`TokenCounter::save`]). A missing, foreign, forged or corrupt file
    /// adds nothing: counts decide what fits in the budget, so only a file
    /// this user's proem wrote for this tokenizer is read.
    ///
    /// The file lists the most recently used counts first; they are kept
    /// again in that order, older than any this process keeps.
    pub fn load(&self, dir: &CacheDir) {
        let name = saved_counts_name(self.tokenizer);
        let Ok(data) = dir.read(&name, MAX_COUNTS_FILE_BYTES as u64) else { return };
        if !data.starts_with(COUNTS_MAGIC) {
            tracing::debug!(path = %dir.path().join(&name).display(), "token counts of another proem version; ignored");
            return;
        }
        let Some(entries) = decode_counts(dir, &data, self.tokenizer) else {
            tracing::warn!(path = %dir.path().join(&name).display(), "token count cache damaged or not ours; ignoring it");
            return;
        };
        let (kept, recent) = entries;
        let mut memo = self.memo.lock();
        let base = memo.tick;
        let newest = base.saturating_add((kept.len() + recent.len()) as u64);
        for (i, (key, count)) in kept.iter().chain(&recent).enumerate() {
            let entry = Kept { count: *count, used: newest - i as u64 };
            match i < kept.len() {
                true => memo.kept.entry(*key).or_insert(entry),
                false => memo.counts.entry(*key).or_insert(entry),
            };
        }
        memo.tick = newest;
        memo.prune_kept();
    }

    /// Whether counts were added since the last load or save.
    pub fn has_unsaved(&self) -> bool {
        self.memo.lock().unsaved > 0
    }

    /// Whether a build ending at `now` saves: when it added counts and
    /// this counter has not written its file in the last
    /// [`SAVE_INTERVAL`]. A process's first save is never put off, so a
    /// one-shot `proem build` leaves its counts for the next; a long-lived
    /// caller writes the file at most once a second however many builds
    /// it makes and whatever they change (a new clock, a new chat, a new
    /// stable part each build), so its disk writes never grow with builds.
    /// What a long-lived caller counted in its last second is not saved
    /// unless it builds again or calls [`save_token_counts`].
    pub fn save_due(&self, now: std::time::Instant) -> bool {
        let memo = self.memo.lock();
        let quiet = |at: std::time::Instant| now.saturating_duration_since(at) >= SAVE_INTERVAL;
        memo.unsaved > 0 && memo.saved_at.is_none_or(quiet)
    }

    /// Writes the kept counts (see [`TokenCounter::count_kept`]; the
    /// [`SAVED_LIMIT`] most recently used, newest first, ties by key), then
    /// the [`RECENT_LIMIT`] most recently used others, into the cache
    /// folder `dir` (temporary file + rename) when it has counts not saved
    /// yet. Returns whether it wrote: a process that only used counts it
    /// loaded does not write them again (their new order is saved with the
    /// next new count).
    pub fn save(&self, dir: &CacheDir) -> std::io::Result<bool> {
        self.save_at(dir, std::time::Instant::now())
    }

    /// [`TokenCounter::save`], the time being `now`.
    fn save_at(&self, dir: &CacheDir, now: std::time::Instant) -> std::io::Result<bool> {
        let bytes = {
            let mut memo = self.memo.lock();
            if memo.unsaved == 0 {
                return Ok(false);
            }
            memo.unsaved = 0;
            memo.saved_at = Some(now);
            let count = |(k, kept): (u128, Kept)| (k, kept.count);
            let kept: Vec<(u128, u32)> = memo.newest_kept().into_iter().map(count).collect();
            let recent: Vec<(u128, u32)> = memo.newest_recent().into_iter().map(count).collect();
            encode_counts(dir, &kept, &recent, self.tokenizer)
        };
        dir.write(&saved_counts_name(self.tokenizer), &bytes, false)?;
        Ok(true)
    }
}

/// A count [`TokenCounter::save`] writes, and the `tick` it was last used.
#[derive(Debug, Clone, Copy)]
struct Kept {
    count: u32,
    used: u64,
}

impl Memo {
    /// Keeps `key`'s count for the disk, as used now.
    fn keep(&mut self, key: u128, count: u32) {
        let used = self.tick;
        if self.kept.insert(key, Kept { count, used }).is_none() {
            self.unsaved += 1;
            if self.kept.len() > 2 * SAVED_LIMIT {
                self.prune_kept();
            }
        }
    }

    /// The [`SAVED_LIMIT`] most recently used kept counts, newest first
    /// (ties by key: the order never depends on the map's).
    fn newest_kept(&self) -> Vec<(u128, Kept)> {
        let mut all: Vec<(u128, Kept)> = self.kept.iter().map(|(k, v)| (*k, *v)).collect();
        all.sort_unstable_by(|a, b| b.1.used.cmp(&a.1.used).then(a.0.cmp(&b.0)));
        all.truncate(SAVED_LIMIT);
        all
    }

    /// The [`RECENT_LIMIT`] most recently used counts that are not kept,
    /// newest first (ties by key).
    fn newest_recent(&self) -> Vec<(u128, Kept)> {
        let mut all: Vec<(u128, Kept)> =
            self.counts.iter().filter(|(k, _)| !self.kept.contains_key(k)).map(|(k, v)| (*k, *v)).collect();
        all.sort_unstable_by(|a, b| b.1.used.cmp(&a.1.used).then(a.0.cmp(&b.0)));
        all.truncate(RECENT_LIMIT);
        all
    }

    /// Forgets all counts but the kept ones and those a save would write.
    fn prune_recent(&mut self) {
        self.counts = self.newest_recent().into_iter().collect();
    }

    /// Forgets all but the [`SAVED_LIMIT`] most recently used kept counts.
    fn prune_kept(&mut self) {
        if self.kept.len() > SAVED_LIMIT {
            self.kept = self.newest_kept().into_iter().collect();
        }
    }
}

/// The longest head of `text` that, with a note saying it was cut, counts
/// at most `max` tokens; `None` when the whole text fits. Cut at a character
/// boundary; empty when not even the note fits.
pub fn head_within(text: &str, max: usize, counter: &TokenCounter) -> Option<String> {
    if counter.count(text) <= max {
        return None;
    }
    let note = format!("\n[… cut to {max} tokens]");
    let with_note = |end: usize| format!("{}{note}", text[..end].trim_end());
    let floor = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    // Largest end whose head fits: counts grow with the head (not strictly,
    // so only a tested end is ever returned).
    let (mut fits, mut over) = (None, text.len());
    let mut lo = 0;
    while lo < over {
        let mid = floor(lo + (over - lo) / 2);
        if mid < lo || (mid == lo && fits == Some(lo)) {
            break;
        }
        if counter.count(&with_note(mid)) <= max {
            fits = Some(mid);
            lo = mid + 1;
        } else {
            over = mid;
        }
    }
    Some(fits.map(with_note).unwrap_or_default())
}

/// Splits `text` into pieces whose token counts add up to the count of the
/// whole. A cut is made only right after a newline and before a character
/// that is neither whitespace nor `/`: both tiktoken vocabularies proem uses
/// pre-split text with a regex under which such a position always ends one
/// pre-token and starts the next (a pre-token can hold a newline followed
/// by other text only as `\n/`, and whitespace runs end at their last
/// newline), and BPE never merges across pre-tokens. Checked against
/// whole-text counts in this module's tests and in `tests/security/hardening.rs`.
///
/// Where: after every blank line (paragraphs), and after a line whose
/// length in bytes is a multiple of [`LINE_CUT_MODULUS`]. The second rule
/// depends on the line alone, so a long list without blank lines (a
/// MEMORY.md of dated entries) is cut at the same places wherever it
/// appears: in the prompt, its section or the file alone, or after a line
/// was appended; only the pieces around a difference are encoded again.
pub fn chunks(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    // One vectorised search over the whole text (lines are short: a search
    // started again at each line would cost more than it finds).
    let mut newlines = memchr::memchr_iter(b'\n', bytes);
    let mut start = 0;
    let mut line_start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        for at in newlines.by_ref() {
            if at < line_start {
                continue; // the second newline of a blank line cut after it
            }
            let line_len = at - line_start;
            let cut = if bytes.get(at + 1) == Some(&b'\n') {
                at + 2
            } else if line_len > 0 && line_len % LINE_CUT_MODULUS == 0 {
                at + 1
            } else {
                line_start = at + 1;
                continue;
            };
            line_start = cut;
            if cut >= bytes.len() {
                break;
            }
            if starts_pre_token(text, cut) {
                let piece = &text[start..cut];
                start = cut;
                return Some(piece);
            }
        }
        let piece = &text[start..];
        start = bytes.len();
        Some(piece)
    })
}

/// How many times [`TokenCounter`] cuts an encoded piece before its last
/// line, remembering each part before: two covers a paragraph followed by a
/// closing tag (a file in its wrapper) as well as by a blank line.
const TAIL_SPLITS: usize = 2;

/// Whether `at`, right after a newline of `text`, is a place both
/// vocabularies' pre-split always starts a pre-token (see [`chunks`]).
fn starts_pre_token(text: &str, at: usize) -> bool {
    text[at..].chars().next().is_some_and(|next| !next.is_whitespace() && next != '/')
}

/// The last place in `piece` where [`chunks`] could cut (right after a
/// newline, before a character that is neither whitespace nor `/`), other
/// than its start.
fn last_line_cut(piece: &str) -> Option<usize> {
    // A newline in the last character would cut at the end: not a cut.
    let (mut end, _) = piece.char_indices().next_back()?;
    // `rfind(char)` is a memrchr.
    while let Some(newline) = piece[..end].rfind('\n') {
        if starts_pre_token(piece, newline + 1) {
            return Some(newline + 1);
        }
        end = newline;
    }
    None
}

/// [`chunks`] also cuts after a line whose length in bytes is a multiple of
/// this: about one line in sixteen, so pieces of a list stay ~1-2 KB and a
/// prompt of ~90 KB is a hundred-odd memo lookups.
pub const LINE_CUT_MODULUS: usize = 16;

/// The longest run of whitespace handed to the encoder in one piece. It was
/// set for tiktoken-rs, whose backtracking pre-split overflowed the stack on
/// about a million spaces; proem's own pre-split does not recurse, and the
/// limit stays so that counts (and counts saved on disk) do not change.
/// Prose never has a kilobyte of whitespace in a row; a longer run is
/// counted in parts (a count off by a token or two per cut, on text that is
/// not prose).
pub const WHITESPACE_RUN_LIMIT: usize = 1024;

/// The longest run of other characters handed to the encoder in one piece:
/// one pre-token of megabytes costs the BPE merge time and memory in
/// proportion (hundreds of MB for a few MB of one letter). No word, URL or
/// minified line of a prompt comes near it.
pub const WORD_RUN_LIMIT: usize = 64 * 1024;

/// Splits `text` so that no piece holds a whitespace run longer than
/// [`WHITESPACE_RUN_LIMIT`] bytes or another run longer than
/// [`WORD_RUN_LIMIT`]; text without such runs is one piece. Cuts fall only
/// inside such runs, on character boundaries, so counts of ordinary text
/// are exact (checked against tiktoken in `tests/security/hardening.rs`).
pub fn bounded_pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = first_overlong_cut(rest).unwrap_or(rest.len());
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// The byte offset where the first over-long run of `text` must be cut.
fn first_overlong_cut(text: &str) -> Option<usize> {
    if text.len() <= WHITESPACE_RUN_LIMIT {
        return None;
    }
    // Most texts are shorter than a word run may be, and a look at one
    // byte in `RUN_SAMPLE` shows they hold no long whitespace run either.
    if text.len() <= WORD_RUN_LIMIT && !may_hold_long_whitespace_run(text.as_bytes()) {
        return None;
    }
    scan_for_overlong_cut(text)
}

/// Spacing of the bytes [`may_hold_long_whitespace_run`] looks at: a
/// whitespace run longer than [`WHITESPACE_RUN_LIMIT`] covers at least four
/// consecutive multiples of it.
const RUN_SAMPLE: usize = WHITESPACE_RUN_LIMIT / 4;

/// `false` only when `text` holds no whitespace run longer than
/// [`WHITESPACE_RUN_LIMIT`] bytes. Every byte of such a run is ASCII
/// whitespace or part of a multi-byte character (Unicode's other
/// whitespace), and the run covers four consecutive multiples of
/// [`RUN_SAMPLE`]: when no four such bytes in a row qualify, there is none.
fn may_hold_long_whitespace_run(text: &[u8]) -> bool {
    let mut streak = 0;
    for &byte in text.iter().step_by(RUN_SAMPLE) {
        if byte >= 0x80 || proem_bpe::split::is_space(byte) {
            streak += 1;
            if streak == WHITESPACE_RUN_LIMIT / RUN_SAMPLE {
                return true;
            }
        } else {
            streak = 0;
        }
    }
    false
}

/// [`first_overlong_cut`] by reading every character.
fn scan_for_overlong_cut(text: &str) -> Option<usize> {
    let mut run_start = 0;
    let mut run_space = None;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if run_space != Some(space) {
            run_start = i;
            run_space = Some(space);
        }
        let limit = if space { WHITESPACE_RUN_LIMIT } else { WORD_RUN_LIMIT };
        if i + c.len_utf8() - run_start > limit {
            return Some(i).filter(|&i| i > 0);
        }
    }
    None
}

/// Tokens of `text` by the encoder itself, piece by piece. Should the
/// encoder panic anyway, the byte length stands in: never fewer tokens than
/// the text has (a token is at least one byte), so a budget stays safe.
fn encode_len(tokenizer: Tokenizer, text: &str) -> usize {
    bounded_pieces(text)
        .map(|piece| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tokenizer.count_piece(piece)))
                .ok()
                .flatten()
                .unwrap_or_else(|| {
                    tracing::warn!(bytes = piece.len(), "the tokenizer failed on a piece of text; counting its bytes");
                    piece.len()
                })
        })
        .sum()
}

/// The file in proem's cache folder that keeps `tokenizer`'s counts.
pub fn saved_counts_name(tokenizer: Tokenizer) -> String {
    format!("tokens-{}.bin", tokenizer.name())
}

/// `TK4`: at most [`SAVED_LIMIT`] kept counts (the files and stable parts)
/// then [`RECENT_LIMIT`] others, each newest first, every count exact (the
/// Claude estimate's cl100k_base's, see [`Tokenizer::scale`]); `TK3` held
/// the estimate's counts rounded, `TK2` every count of every turn.
const COUNTS_MAGIC: &[u8; 8] = b"PROEMTK4";
/// What the counts file's MAC starts with: the kind of entry.
const COUNTS_KIND: &[u8] = b"proem token counts";
/// Magic, tokenizer name, MAC.
const COUNTS_HEADER: usize = 8 + 16 + 32;
/// The largest counts file: the kept entries' number (4 bytes), then
/// [`SAVED_LIMIT`] + [`RECENT_LIMIT`] entries of 20 bytes (~87 KB).
pub const MAX_COUNTS_FILE_BYTES: usize = COUNTS_HEADER + 4 + (SAVED_LIMIT + RECENT_LIMIT) * 20;

/// The kept counts and the recent ones (see [`TokenCounter::save`]).
type SavedCounts = (Vec<(u128, u32)>, Vec<(u128, u32)>);

/// File layout: magic, tokenizer name (16 bytes, zero-padded), the
/// HMAC-SHA256 of the three and the body under the cache folder's secret;
/// the body: the number of kept entries (4 bytes), then the kept entries
/// and the recent ones (16-byte key, 4-byte count), all little-endian.
fn encode_counts(dir: &CacheDir, kept: &[(u128, u32)], recent: &[(u128, u32)], tokenizer: Tokenizer) -> Vec<u8> {
    let mut body = Vec::with_capacity(4 + (kept.len() + recent.len()) * 20);
    body.extend_from_slice(&u32::try_from(kept.len()).unwrap_or(u32::MAX).to_le_bytes());
    for (k, v) in kept.iter().chain(recent) {
        body.extend_from_slice(&k.to_le_bytes());
        body.extend_from_slice(&v.to_le_bytes());
    }
    let name = padded_name(tokenizer);
    let mut out = Vec::with_capacity(COUNTS_HEADER + body.len());
    out.extend_from_slice(COUNTS_MAGIC);
    out.extend_from_slice(&name);
    out.extend_from_slice(&dir.mac(&[COUNTS_KIND, COUNTS_MAGIC, &name, &body]));
    out.extend_from_slice(&body);
    out
}

fn padded_name(tokenizer: Tokenizer) -> [u8; 16] {
    let mut name = [0u8; 16];
    name[..tokenizer.name().len()].copy_from_slice(tokenizer.name().as_bytes());
    name
}

/// The entries of a counts file `dir`'s proem wrote for `tokenizer`, kept
/// and recent: the magic and name match, the size is whole entries within
/// the bound, each part within its own, and the MAC holds.
fn decode_counts(dir: &CacheDir, data: &[u8], tokenizer: Tokenizer) -> Option<SavedCounts> {
    if data.len() < COUNTS_HEADER + 4 || data.len() > MAX_COUNTS_FILE_BYTES || &data[..8] != COUNTS_MAGIC {
        return None;
    }
    let name = padded_name(tokenizer);
    let body = &data[COUNTS_HEADER..];
    let (kept_n, entries) = body.split_at(4);
    let kept_n = usize::try_from(u32::from_le_bytes(kept_n.try_into().ok()?)).ok()?;
    let all = entries.len() / 20;
    if data[8..24] != name || !entries.len().is_multiple_of(20) || kept_n > all.min(SAVED_LIMIT) {
        return None;
    }
    if all - kept_n > RECENT_LIMIT || !dir.verify(&[COUNTS_KIND, COUNTS_MAGIC, &name, body], &data[24..COUNTS_HEADER]) {
        return None;
    }
    let mut entries: Vec<(u128, u32)> = entries
        .chunks_exact(20)
        .map(|e| {
            let (key, count) = e.split_at(16);
            (
                u128::from_le_bytes(key.try_into().unwrap_or_default()),
                u32::from_le_bytes(count.try_into().unwrap_or_default()),
            )
        })
        .collect();
    let recent = entries.split_off(kept_n);
    Some((entries, recent))
}

/// One counter per tokenizer per process, so memoised counts are shared by
/// every assembler.
pub fn shared_counter(tokenizer: Tokenizer) -> &'static TokenCounter {
    static O200K: std::sync::OnceLock<TokenCounter> = std::sync::OnceLock::new();
    static CL100K: std::sync::OnceLock<TokenCounter> = std::sync::OnceLock::new();
    let init = || {
        let counter = TokenCounter::new(tokenizer);
        if let Some(dir) = crate::cache_dir::default() {
            counter.load(&dir);
        }
        counter
    };
    static CLAUDE: std::sync::OnceLock<TokenCounter> = std::sync::OnceLock::new();
    match tokenizer {
        Tokenizer::O200kBase => O200K.get_or_init(init),
        Tokenizer::Cl100kBase => CL100K.get_or_init(init),
        Tokenizer::ClaudeEstimate => CLAUDE.get_or_init(init),
        Tokenizer::HuggingFace(v) => hf_counter(v, init),
    }
}

/// The shared counter of a loaded tokenizer.json (one per file loaded, so
/// at most [`crate::vocab::MAX_LOADED`]).
fn hf_counter(vocab: &'static crate::vocab::HfVocab, init: impl FnOnce() -> TokenCounter) -> &'static TokenCounter {
    static COUNTERS: Lock<Vec<(&'static crate::vocab::HfVocab, &'static TokenCounter)>> = Lock::new(Vec::new());
    let mut counters = COUNTERS.lock();
    if let Some((_, counter)) = counters.iter().find(|(v, _)| *v == vocab) {
        return counter;
    }
    let counter: &'static TokenCounter = Box::leak(Box::new(init()));
    counters.push((vocab, counter));
    counter
}

/// Every tokenizer this process has counted with a shared counter (the
/// built-in ones and the tokenizer.json files loaded).
pub fn shared_tokenizers() -> Vec<Tokenizer> {
    let mut all = vec![Tokenizer::O200kBase, Tokenizer::Cl100kBase, Tokenizer::ClaudeEstimate];
    all.extend(crate::vocab::loaded().into_iter().map(Tokenizer::HuggingFace));
    all
}

/// Whether a build saves the token counts it added as it ends (the
/// default: the next process does not encode them again). `proem serve`
/// turns it off and saves on a timer instead ([`save_token_counts`]), so
/// that what its clients can make it write does not grow with the number
/// of requests they send.
static SAVE_COUNTS_AFTER_BUILDS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns saving token counts at the end of each build on or off, for the
/// whole process.
pub fn save_token_counts_after_builds(on: bool) {
    SAVE_COUNTS_AFTER_BUILDS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Saves the counts the shared counters added since they were last saved
/// (one file per tokenizer in the cache directory, whole or not at all).
pub fn save_token_counts() {
    for tokenizer in shared_tokenizers() {
        save_counts(shared_counter(tokenizer));
    }
}

/// What a build does with the counts it added, as it ends: saves them
/// when [`TokenCounter::save_due`], unless
/// [`save_token_counts_after_builds`] turned saving off.
pub fn after_build(counter: &TokenCounter) {
    if SAVE_COUNTS_AFTER_BUILDS.load(std::sync::atomic::Ordering::Relaxed)
        && counter.save_due(std::time::Instant::now())
    {
        save_counts(counter);
    }
}

/// Saves the shared counter's new counts into the cache directory, so the
/// next process does not encode them again.
fn save_counts(counter: &TokenCounter) {
    // Checked first: this runs after every build, and most add no counts.
    if !counter.has_unsaved() {
        return;
    }
    let Some(dir) = crate::cache_dir::default() else { return };
    if let Err(e) = counter.save(&dir) {
        tracing::warn!(dir = %dir.path().display(), "cannot save token counts: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tiktoken-rs, the reference the counts are checked against.
    fn reference(tokenizer: Tokenizer) -> &'static tiktoken_rs::CoreBPE {
        match tokenizer {
            Tokenizer::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Tokenizer::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            Tokenizer::ClaudeEstimate | Tokenizer::HuggingFace(_) => panic!("tiktoken has no {}", tokenizer.name()),
        }
    }

    proptest::proptest! {
        /// The Claude estimate is never below cl100k_base's count with the
        /// margin (what the budget relies on), and only rounding above it:
        /// at most one token per chunk of the text.
        #[test]
        fn the_claude_estimate_is_cl100k_with_its_margin(text in "\\PC{0,400}", repeat in 1usize..20) {
            let text = text.repeat(repeat);
            let cl100k = reference(Tokenizer::Cl100kBase).encode_ordinary(&text).len();
            let estimate = TokenCounter::new(Tokenizer::ClaudeEstimate).count(&text);
            let floor = (cl100k * CLAUDE_ESTIMATE_PER_MILLE).div_ceil(1000);
            let pieces = chunks(&text).count();
            proptest::prop_assert!(estimate >= floor && estimate <= floor + pieces, "{estimate} vs {floor} (+{pieces})");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// A text's count is a function of the text alone, for every
        /// built-in tokenizer: counting other texts first (ones sharing its
        /// paragraphs, heads of them, texts a paragraph longer or shorter:
        /// what another agent's files and prompts put in the memo) never
        /// changes it, and it equals a fresh counter's with the memo off.
        #[test]
        fn a_count_never_depends_on_what_was_counted_before(
            paragraphs in proptest::collection::vec("[a-z`#\\- ]{0,40}(\n[a-z ]{0,30}){0,3}", 1..8),
            others in proptest::collection::vec((0usize..8, 0usize..8, 0u8..3), 0..12),
        ) {
            let text = paragraphs.join("\n\n");
            for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase, Tokenizer::ClaudeEstimate] {
                let alone = TokenCounter::new(tokenizer);
                alone.set_memo(false);
                let expected = alone.count(&text);
                let warmed = TokenCounter::new(tokenizer);
                for &(from, to, cut) in &others {
                    let (from, to) = (from.min(paragraphs.len()), to.min(paragraphs.len()));
                    let mut other = paragraphs[from.min(to)..from.max(to)].join("\n\n");
                    match cut {
                        0 => other = other.lines().take(other.lines().count().saturating_sub(1)).collect::<Vec<_>>().join("\n"),
                        1 => other.push_str("\n- and one more line"),
                        _ => {}
                    }
                    warmed.count(&other);
                    warmed.count_kept(&format!("{other}\n\n"));
                }
                proptest::prop_assert_eq!(warmed.count(&text), expected, "{}", tokenizer.name());
            }
        }
    }

    #[test]
    fn count_hashed_is_the_count_and_the_xxh3_of_the_text() {
        let counter = TokenCounter::new(Tokenizer::O200kBase);
        for text in ["", "hello world", "## Tooling\n- exec: runs\n\nnext paragraph", &"héllo wörld. ".repeat(500)] {
            let (count, hash) = counter.count_hashed(text);
            assert_eq!(count, counter.count(text));
            assert_eq!(count, reference(Tokenizer::O200kBase).encode_ordinary(text).len());
            assert_eq!(hash, xxh3_128(text.as_bytes()));
        }
    }

    #[test]
    fn model_to_tokenizer() {
        for m in [
            "gpt-4o",
            "gpt-4o-mini",
            "openai/gpt-5.1",
            "gpt-5",
            "gpt-4.1-nano",
            "o1",
            "o3-mini",
            "o4-mini",
            "GPT-5-codex",
        ] {
            assert_eq!(crate::model_tokenizers::family_of(m).builtin(), Tokenizer::O200kBase, "{m}");
        }
        for m in ["gpt-4", "gpt-3.5-turbo", "llama-3", "", "omni"] {
            assert_eq!(crate::model_tokenizers::family_of(m).builtin(), Tokenizer::Cl100kBase, "{m}");
        }
        for m in ["claude-sonnet-4", "anthropic/claude-opus"] {
            assert_eq!(crate::model_tokenizers::family_of(m).builtin(), Tokenizer::ClaudeEstimate, "{m}");
        }
    }

    #[test]
    fn counts_are_exact_and_memoised() {
        let c = TokenCounter::new(Tokenizer::O200kBase);
        assert_eq!(c.count(""), 0);
        assert_eq!(c.count("hello world"), 2);
        assert_eq!(c.count("hello world"), 2);
        let c100 = TokenCounter::new(Tokenizer::Cl100kBase);
        assert_eq!(c100.count("hello world"), 2);
        // Special-token text is counted as ordinary characters, never as one token.
        assert!(c.count("<|endoftext|>") > 1);
    }

    #[test]
    fn paragraph_sums_equal_whole_counts() {
        let samples = [
            "## A\nbody\n\n## B\nmore text here.\n\n\n## C",
            "x.\n\n/slash stays joined\n\n   indented\n\n\ttab\n\nend",
            "ünï\n\n👩\u{200d}👧 emoji\n\n\u{a0}nbsp\n\n'quote\n\n123456\n\n<tag>\n\n",
            "no breaks at all",
            "\n\n\n\nleading blank lines\n\n",
            // Lines of 16 bytes (a single-newline cut may follow them) ending
            // in punctuation, then what a pre-token may carry across a newline.
            "0123456789abcd.,\n/usr/bin\n0123456789abcd.,\n//\n0123456789abcd.)\n\t-x\n0123456789abcd?!\n 'sx",
            "line of sixteen.\n'see\nline of sixteen:\n12345\nline of sixteen \nword\nline of sixteen\n\n\nend",
        ];
        for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            let c = TokenCounter::new(tokenizer);
            for text in samples {
                let pieces: Vec<&str> = chunks(text).collect();
                assert_eq!(pieces.concat(), text);
                assert_eq!(c.count(text), reference(tokenizer).encode_ordinary(text).len(), "{text:?}");
            }
        }
        let pieces: Vec<&str> = chunks("a\n\nb\n\n/c\n\n d").collect();
        assert_eq!(pieces, ["a\n\n", "b\n\n/c\n\n d"]);
    }

    /// A list with no blank line is cut after lines of a length that is a
    /// multiple of [`LINE_CUT_MODULUS`], exactly (the sum is the whole
    /// count), and at the same places wherever it appears: under a heading,
    /// or with a line appended, the pieces away from the difference are
    /// the same pieces.
    #[test]
    fn lists_are_cut_by_their_lines_alone() {
        let mut list = String::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..400 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let filler = ["lamp", "laser cutter", "Priya", "ünïcode", "42", "/path", "'s", "(note)"][(x % 8) as usize];
            list.push_str(&format!("- 2025-03-{:02}: {filler} {}\n", i % 28 + 1, "x".repeat((x >> 8) as usize % 40)));
        }
        let pieces: Vec<&str> = chunks(&list).collect();
        assert!(pieces.len() > 10, "a 400-line list is cut: {} pieces", pieces.len());
        assert_eq!(pieces.concat(), list);
        for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            let c = TokenCounter::new(tokenizer);
            c.set_memo(false);
            let sum: usize = pieces.iter().map(|p| reference(tokenizer).encode_ordinary(p).len()).sum();
            assert_eq!(sum, reference(tokenizer).encode_ordinary(&list).len());
            assert_eq!(c.count(&list), sum);
        }
        let headed = format!("### MEMORY.md\n<context_file name=\"MEMORY.md\">\n{list}</context_file>");
        let in_context: Vec<&str> = chunks(&headed).collect();
        let shared = pieces[1..pieces.len() - 1].iter().filter(|p| in_context.contains(p)).count();
        assert_eq!(shared, pieces.len() - 2, "every inner piece is the same piece in context");
        let appended = format!("{list}- 2025-04-01: one more line\n");
        let after: Vec<&str> = chunks(&appended).collect();
        assert_eq!(
            &after[..pieces.len() - 1],
            &pieces[..pieces.len() - 1],
            "an appended line changes the last piece only"
        );
    }

    #[test]
    fn saved_counts_load_into_a_new_counter_and_bad_files_are_ignored() {
        let folder = tempfile::tempdir().unwrap();
        let dir = CacheDir::open(folder.path()).unwrap();
        let path = folder.path().join(saved_counts_name(Tokenizer::O200kBase));
        let text = "## Saved\nsome text\n\n## More\nother text";
        let a = TokenCounter::new(Tokenizer::O200kBase);
        let n = a.count_kept(text);
        assert!(a.save(&dir).unwrap());
        assert!(!a.save(&dir).unwrap(), "nothing new to save");
        let b = TokenCounter::new(Tokenizer::O200kBase);
        b.load(&dir);
        assert_eq!(b.count(text), n);
        assert_eq!(b.encoded_bytes(), 0, "counted from the loaded memo");
        // Another tokenizer's file (renamed to its name), a flipped byte, a
        // truncated file, another folder's file: ignored.
        let good = std::fs::read(&path).unwrap();
        std::fs::write(folder.path().join(saved_counts_name(Tokenizer::Cl100kBase)), &good).unwrap();
        let other = TokenCounter::new(Tokenizer::Cl100kBase);
        other.load(&dir);
        other.count(text);
        assert_eq!(other.encoded_bytes(), text.len() as u64);
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        let elsewhere = tempfile::tempdir().unwrap();
        let foreign = CacheDir::open(elsewhere.path()).unwrap();
        // Every saved count, off by one, signed with another folder's secret.
        let (kept, recent) = decode_counts(&dir, &good, Tokenizer::O200kBase).unwrap();
        let off_by_one = |e: &Vec<(u128, u32)>| e.iter().map(|(k, n)| (*k, n + 1)).collect::<Vec<_>>();
        let forged = encode_counts(&foreign, &off_by_one(&kept), &off_by_one(&recent), Tokenizer::O200kBase);
        // The right counts, signed with this folder's secret, one part
        // padded to one entry more than a counter ever saves in it: over
        // its bound, never read.
        let pad = |e: &Vec<(u128, u32)>, limit: usize| {
            e.iter().copied().chain((1..).map(|k: u128| (k << 64, 1))).take(limit + 1).collect::<Vec<_>>()
        };
        let too_many_kept = encode_counts(&dir, &pad(&kept, SAVED_LIMIT), &recent, Tokenizer::O200kBase);
        let too_many_recent = encode_counts(&dir, &kept, &pad(&recent, RECENT_LIMIT), Tokenizer::O200kBase);
        let bads = [flipped, good[..good.len() - 3].to_vec(), Vec::new(), forged, too_many_kept, too_many_recent];
        for bad in bads {
            std::fs::write(&path, &bad).unwrap();
            let c = TokenCounter::new(Tokenizer::O200kBase);
            c.load(&dir);
            assert_eq!(c.count(text), n);
            assert_eq!(c.encoded_bytes(), text.len() as u64, "a bad file is not trusted");
        }
    }

    proptest::proptest! {
        /// A text that starts with another is counted exactly from the
        /// other's [`TokenCounter::head_cut`] on: the head's tokens plus the
        /// rest's are the whole's, whatever follows (both vocabularies).
        #[test]
        fn a_text_is_counted_exactly_from_the_head_cut_of_its_start(
            head in proptest::collection::vec("[a-zA-Z0-9 .,:/`<>*#-]{0,40}|\\PC{0,20}|\n|\n\n| {1,3}", 0..60),
            rest in proptest::collection::vec("[a-zA-Z0-9 .,:/`<>*#-]{0,40}|\\PC{0,20}|\n|\n\n| {1,3}", 0..20),
        ) {
            let head: String = head.concat();
            let whole = format!("{head}{}", rest.concat());
            for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
                let counter = TokenCounter::new(tokenizer);
                let at = counter.head_cut(&head);
                proptest::prop_assert!(at <= head.len());
                let by_parts = counter.count(&head[..at]) + counter.count(&whole[at..]);
                proptest::prop_assert_eq!(by_parts, reference(tokenizer).encode_ordinary(&whole).len(), "cut at {}", at);
            }
        }
    }

    /// [`chunks`]'s rule read off a list of lines: cut after a line
    /// followed by a blank line (after the blank line), else after a line
    /// whose length is a non-zero multiple of [`LINE_CUT_MODULUS`]; keep a
    /// cut only inside the text and where a pre-token starts.
    fn chunks_by_rule(text: &str) -> Vec<&str> {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let (mut cuts, mut end, mut i) = (Vec::new(), 0, 0);
        while let Some(line) = lines.get(i) {
            end += line.len();
            i += 1;
            let Some(body) = line.strip_suffix('\n') else { break };
            let cut = if lines.get(i) == Some(&"\n") {
                end += 1;
                i += 1;
                true
            } else {
                !body.is_empty() && body.len() % LINE_CUT_MODULUS == 0
            };
            if cut && end < text.len() && starts_pre_token(text, end) {
                cuts.push(end);
            }
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        for cut in cuts.into_iter().chain([text.len()]).filter(|&c| c > 0) {
            pieces.push(&text[start..cut]);
            start = cut;
        }
        pieces
    }

    proptest::proptest! {
        /// Lines of every length around the cut (15, 16, 17, 32 bytes, some
        /// with multi-byte characters), blank lines in runs, lines that
        /// start with whitespace or `/`: the one-pass `chunks` cuts exactly
        /// where the rule, read off the list of lines, does.
        #[test]
        fn chunks_cut_where_the_rule_says(
            lines in proptest::collection::vec(
                "[a-z]{15,17}|[a-z]{32}|é[a-z]{13,14}|[ \t/][a-z]{0,20}|[a-z ]{0,8}|",
                0..40,
            ),
            end_with_newline in proptest::bool::ANY,
        ) {
            let mut text = lines.join("\n");
            if end_with_newline {
                text.push('\n');
            }
            proptest::prop_assert_eq!(chunks(&text).collect::<Vec<_>>(), chunks_by_rule(&text));
        }

        /// The sampled look finds every whitespace run over the limit:
        /// runs of every kind of whitespace (one to three bytes a
        /// character) just under, at and over it, anywhere among words and
        /// multi-byte text, are cut where reading every character cuts.
        #[test]
        fn sampling_for_long_whitespace_runs_cuts_where_reading_everything_does(
            segments in proptest::collection::vec(
                (
                    proptest::sample::select(vec![" ", "\t", "\n", "\u{b}", "\r\n", "\u{85}", "\u{a0}", "\u{2003}", "\u{3000}"]),
                    0usize..1300,
                    // Long ASCII words, whose bytes the look tells from
                    // whitespace, and short multi-byte ones, whose bytes it
                    // cannot.
                    "[a-z]{1,600}|[a-z日é]{0,40}",
                ),
                1..8,
            ),
        ) {
            let text: String = segments
                .iter()
                .map(|(space, bytes, word)| format!("{}{word}", space.repeat(bytes / space.len())))
                .collect();
            proptest::prop_assert_eq!(first_overlong_cut(&text), scan_for_overlong_cut(&text));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// A paragraph counted inside a longer text, then at the end of a
        /// text alone (a section before the blank line that follows it in
        /// the prompt, a file before its closing tag): the count is exact,
        /// and only what follows the piece's last two cuts is encoded again
        /// (mostly its last line alone; the line before it too when the
        /// head above them was found in the memo, counted as a head of
        /// another paragraph, so not cut again there).
        #[test]
        fn a_text_counted_after_the_same_text_with_more_encodes_only_its_last_line(
            lines in proptest::collection::vec("[ -~]{0,30}|[a-zé ]{1,20}|日本語|\\s{1,3}|/[a-z]{0,5}", 1..40),
            blank_every in 2usize..12,
            suffix in proptest::sample::select(vec!["\n\n", "\n</context_file>", "\n</context_file>\n\n### NEXT.md\n<context_file>", "\n\n## Next\nmore"]),
            tokenizer in proptest::sample::select(vec![Tokenizer::O200kBase, Tokenizer::Cl100kBase]),
        ) {
            let text: String = lines
                .iter()
                .enumerate()
                .map(|(i, l)| if i % blank_every == blank_every - 1 { format!("{l}\n\n") } else { format!("{l}\n") })
                .collect::<String>()
                .trim_end_matches('\n')
                .to_string();
            proptest::prop_assume!(!text.is_empty());
            let counter = TokenCounter::new(tokenizer);
            let longer = format!("{text}{suffix}");
            proptest::prop_assert_eq!(counter.count(&longer), reference(tokenizer).encode_ordinary(&longer).len());
            let before = counter.encoded_bytes();
            proptest::prop_assert_eq!(counter.count(&text), reference(tokenizer).encode_ordinary(&text).len());
            let last_piece = chunks(&text).last().unwrap();
            // What follows the last two cuts (see the doc above).
            let after_two_cuts = last_line_cut(last_piece)
                .and_then(|cut| last_line_cut(&last_piece[..cut]))
                .map_or(last_piece.len(), |cut| last_piece.len() - cut);
            proptest::prop_assert!(
                counter.encoded_bytes() - before <= after_two_cuts as u64,
                "encoded {} bytes again; the last piece's last two lines are {} bytes",
                counter.encoded_bytes() - before,
                after_two_cuts
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(16))]

        /// Processes one after another over one cache folder, each counting
        /// kept texts (an agent's files: some new, some seen before) and a
        /// turn's texts, then saving: the file never holds more than
        /// [`SAVED_LIMIT`] kept counts and [`RECENT_LIMIT`] others whatever
        /// the number of texts or turns, a turn's texts never take a kept
        /// place, the kept counts it holds are the newest (the last
        /// process's first), the others the last turns', and every count a
        /// new process reads from it equals one encoded with the memo off.
        #[test]
        fn the_saved_counts_stay_within_their_bound_and_hold_the_newest_kept_texts(
            processes in proptest::collection::vec((0u64..4, 1usize..6_000, 0usize..1_500), 1..5),
        ) {
            let folder = tempfile::tempdir().unwrap();
            let dir = CacheDir::open(folder.path()).unwrap();
            let text = |agent: u64, i: usize| format!("agent {agent} paragraph {i}: some words\n\n");
            let uncached = TokenCounter::new(Tokenizer::O200kBase);
            uncached.set_memo(false);
            for (p, &(agent, files, turns)) in processes.iter().enumerate() {
                let counter = TokenCounter::new(Tokenizer::O200kBase);
                counter.load(&dir);
                let loaded_before = counter.encoded_bytes();
                for i in 0..files {
                    counter.count_kept(&text(agent, i));
                }
                for t in 0..turns {
                    counter.count(&format!("Today is day {p}-{t} of the turn.\n\n"));
                }
                proptest::prop_assert_eq!(loaded_before, 0);
                let wrote = counter.save(&dir).unwrap();
                let data = std::fs::read(folder.path().join(saved_counts_name(Tokenizer::O200kBase))).unwrap();
                proptest::prop_assert!(data.len() <= MAX_COUNTS_FILE_BYTES, "{} bytes", data.len());
                let (saved, recent) = decode_counts(&dir, &data, Tokenizer::O200kBase).unwrap();
                proptest::prop_assert!(saved.len() <= SAVED_LIMIT && recent.len() <= RECENT_LIMIT);
                // This process's kept texts come first (newest), then the
                // loaded ones, when it wrote (it keeps nothing new only when
                // they all came from the file); a turn's text is never saved.
                let own: Vec<u128> = (0..files).map(|i| xxh3_128(text(agent, i).as_bytes())).collect();
                let newest = if wrote { own.len().min(SAVED_LIMIT) } else { saved.len() };
                let first: std::collections::HashSet<u128> = saved.iter().take(newest).map(|e| e.0).collect();
                for key in own.iter().rev().take(SAVED_LIMIT) {
                    proptest::prop_assert!(first.contains(key), "process {}: a newest kept count was evicted", p);
                }
                let fresh = TokenCounter::new(Tokenizer::O200kBase);
                fresh.load(&dir);
                for (i, key) in own.iter().enumerate().rev().take(50) {
                    let piece = text(agent, i);
                    proptest::prop_assert_eq!(fresh.count(&piece), uncached.count(&piece));
                    proptest::prop_assert!(saved.iter().any(|e| e.0 == *key));
                }
                proptest::prop_assert_eq!(fresh.encoded_bytes(), 0, "read from the file");
                for t in 0..turns {
                    let key = xxh3_128(format!("Today is day {p}-{t} of the turn.\n\n").as_bytes());
                    proptest::prop_assert!(saved.iter().all(|e| e.0 != key), "a turn's count took a kept place");
                    let last = t + RECENT_LIMIT >= turns;
                    proptest::prop_assert_eq!(recent.iter().any(|e| e.0 == key), last, "turn {} of {}", t, turns);
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Builds in one long-lived process, each counting a new kept text,
        /// a new turn's text or nothing new, at random times, saving when
        /// [`TokenCounter::save_due`]: a build that counted something saves
        /// when the last save is [`SAVE_INTERVAL`] old or there was none,
        /// never more often, and so writes at most once a second whatever
        /// it counts; what a save wrote is read by a new process without
        /// encoding.
        #[test]
        fn builds_save_at_most_once_a_second_and_the_first_at_once(
            builds in proptest::collection::vec((0u8..3, 0u64..1_500), 1..40),
        ) {
            let folder = tempfile::tempdir().unwrap();
            let dir = CacheDir::open(folder.path()).unwrap();
            let counter = TokenCounter::new(Tokenizer::O200kBase);
            let mut at = std::time::Instant::now();
            let (mut last_save, mut waiting) = (None::<std::time::Instant>, Vec::new());
            for (i, &(kind, after_ms)) in builds.iter().enumerate() {
                at += std::time::Duration::from_millis(after_ms);
                match kind {
                    0 => {
                        let text = format!("file paragraph {i}\n\n");
                        counter.count_kept(&text);
                        waiting.push(text);
                    }
                    1 => {
                        let text = format!("Today is turn {i}.\n\n");
                        counter.count(&text);
                        waiting.push(text);
                    }
                    _ => {}
                }
                let wrote = counter.save_due(at) && counter.save_at(&dir, at).unwrap();
                let quiet = last_save.is_none_or(|t| at - t >= SAVE_INTERVAL);
                let since = last_save.map(|t| at - t);
                proptest::prop_assert_eq!(wrote, !waiting.is_empty() && quiet, "build {}: {:?} after the last save", i, since);
                if wrote {
                    let fresh = TokenCounter::new(Tokenizer::O200kBase);
                    fresh.load(&dir);
                    for text in waiting.drain(..) {
                        fresh.count(&text);
                    }
                    proptest::prop_assert_eq!(fresh.encoded_bytes(), 0, "build {}: read from the file", i);
                    last_save = Some(at);
                }
            }
        }
    }

    /// Saving again with nothing counted in between writes nothing; any
    /// number of turns never pushes a kept count out of the file.
    #[test]
    fn turns_never_push_a_kept_count_out() {
        let folder = tempfile::tempdir().unwrap();
        let dir = CacheDir::open(folder.path()).unwrap();
        let counter = TokenCounter::new(Tokenizer::O200kBase);
        let stable = "## Files\nstable text\n\nmore";
        counter.count_kept(stable);
        assert!(counter.save(&dir).unwrap());
        assert!(!counter.save(&dir).unwrap(), "nothing new");
        for day in 0..MEMO_LIMIT + 10 {
            counter.count(&format!("Today is day {day}.\n\nchannel text"));
            if day % 10_000 == 0 {
                counter.save(&dir).unwrap();
            }
        }
        counter.save(&dir).unwrap();
        let data = std::fs::read(folder.path().join(saved_counts_name(Tokenizer::O200kBase))).unwrap();
        let (kept, recent) = decode_counts(&dir, &data, Tokenizer::O200kBase).unwrap();
        let pieces: Vec<u128> = chunks(stable).map(|p| xxh3_128(p.as_bytes())).collect();
        assert_eq!(kept.iter().map(|e| e.0).collect::<std::collections::HashSet<_>>(), pieces.into_iter().collect());
        assert_eq!(recent.len(), RECENT_LIMIT);
    }
}
