//! What a provider's prompt cache would serve of each request, from the
//! providers' public documentation, as three models over the same
//! [`Request`] (a list of content blocks in prefix order):
//!
//! - [`Anthropic`]: entries are written only at `cache_control`
//!   breakpoints (at most four), for the exact prefix up to and including
//!   the block; a request reads the longest such prefix, ending at one of
//!   its block boundaries up to 20 blocks before one of its breakpoints,
//!   that is still alive; a hit refreshes the entry's TTL (5 min or 1 h); a
//!   prefix shorter than the model's minimum (1,024 tokens for Sonnet and
//!   Opus) is not cached. Writes cost 1.25× input (5 min) or 2× (1 h),
//!   reads 0.1×.
//! - [`OpenAi`]: automatic: the longest common prefix with a request seen in
//!   the last 10 minutes of inactivity, served from 1,024 tokens on in
//!   steps of 128; reads cost 0.1× (GPT-5 family). `prompt_cache_key` only
//!   routes requests that share a prefix to one machine, which this
//!   single-machine model already assumes: it is not credited.
//! - [`Prefix`]: the longest common prefix with any earlier request, no
//!   minimum, no expiry (DeepSeek's disk cache keeps entries for hours to
//!   days; vLLM and llama.cpp keep theirs while memory lasts); reads 0.1×.
//!
//! Prefixes are compared block by block, then inside the first block that
//! differs to the tokenizer's pre-split piece ([`common_prefix_tokens`]).

use proem_core::cache::Ttl;
use proem_core::tokens::{TokenCounter, Tokenizer};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// What a block is, as far as prefixes go (a different role is a
/// different prefix, whatever the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The tool definitions, sent before the system prompt.
    Tools,
    /// A block of the system prompt.
    System,
    /// A block of a user message.
    User,
    /// An assistant message.
    Assistant,
}

/// One content block of a request.
#[derive(Debug, Clone)]
pub struct Block {
    /// Its role.
    pub kind: Kind,
    /// Its text.
    pub text: Arc<str>,
    /// Its tokens.
    pub tokens: u64,
    /// An Anthropic `cache_control` breakpoint on it, with its TTL.
    pub breakpoint: Option<Ttl>,
    hash: u64,
}

impl Block {
    /// A block of `text`, counted by `counter`.
    pub fn new(kind: Kind, text: Arc<str>, counter: &TokenCounter) -> Block {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (kind, &*text).hash(&mut h);
        Block { kind, tokens: counter.count(&text) as u64, text, breakpoint: None, hash: h.finish() }
    }

    /// The same block with a breakpoint.
    pub fn cached(mut self, ttl: Ttl) -> Block {
        self.breakpoint = Some(ttl);
        self
    }

    /// The block without its breakpoint (as it stays in the history).
    pub fn plain(&self) -> Block {
        Block { breakpoint: None, ..self.clone() }
    }
}

/// One request: its blocks in prefix order, and when it was sent.
#[derive(Debug, Clone)]
pub struct Request {
    /// Seconds since the trace began.
    pub at: u64,
    /// The blocks.
    pub blocks: Vec<Block>,
}

impl Request {
    /// Its input tokens.
    pub fn tokens(&self) -> u64 {
        self.blocks.iter().map(|b| b.tokens).sum()
    }

    /// Why Anthropic's API would refuse its breakpoints (more than four, or
    /// a 1 h entry after a 5 min one), if it would.
    pub fn anthropic_error(&self) -> Option<String> {
        let ttls: Vec<Ttl> = self.blocks.iter().filter_map(|b| b.breakpoint).collect();
        if ttls.len() > 4 {
            return Some(format!("{} cache_control breakpoints, at most 4 allowed", ttls.len()));
        }
        ttls.windows(2).any(|w| w[1] > w[0]).then(|| "a 1h cache_control entry after a 5m one".to_string())
    }
}

/// What a provider did with one request, in tokens, and its input cost in
/// units of one uncached input token.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Outcome {
    /// Input tokens.
    pub total: u64,
    /// Served from the cache.
    pub reused: u64,
    /// Written to the cache (Anthropic's cache writes; the automatic caches
    /// store every token they did not serve).
    pub written: u64,
    /// Input cost, in uncached-token units.
    pub cost: f64,
}

impl std::ops::AddAssign for Outcome {
    fn add_assign(&mut self, o: Outcome) {
        self.total += o.total;
        self.reused += o.reused;
        self.written += o.written;
        self.cost += o.cost;
    }
}

/// Price of a cached token read, in uncached-token units (all three).
pub const READ_PRICE: f64 = 0.1;

/// A provider's cache over a sequence of requests.
pub trait CacheModel {
    /// Serves `request` (sent at or after every earlier one).
    fn serve(&mut self, request: &Request, counter: &TokenCounter) -> Outcome;
}

/// Tokens `a` and `b` share at their start: whole blocks while they are
/// equal, then, in the first block that differs (same role), the pieces of
/// `a`'s text that lie entirely within the common bytes.
pub fn common_prefix_tokens(a: &[Block], b: &[Block], counter: &TokenCounter) -> u64 {
    let mut tokens = 0;
    for (x, y) in a.iter().zip(b) {
        if x.hash == y.hash && x.kind == y.kind && x.text == y.text {
            tokens += x.tokens;
            continue;
        }
        if x.kind == y.kind {
            tokens += common_text_tokens(&x.text, &y.text, counter);
        }
        break;
    }
    tokens
}

/// Tokens of the pre-split pieces of `a` that lie within its common prefix
/// with `b`.
pub fn common_text_tokens(a: &str, b: &str, counter: &TokenCounter) -> u64 {
    let common = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    // Pre-split a window past the common bytes only (the pre-split looks
    // ahead a few characters, never a kilobyte): a request's system block
    // is compared with many others.
    let mut window = (common + 1024).min(a.len());
    while !a.is_char_boundary(window) {
        window += 1;
    }
    let mut end = 0;
    // o200k_base is built into proem-bpe: it always has an encoder.
    let Some(encoder) = Tokenizer::O200kBase.encoder() else { return 0 };
    for piece in encoder.pieces(&a[..window]) {
        let piece_end = piece.as_ptr() as usize - a.as_ptr() as usize + piece.len();
        if piece_end > common {
            break;
        }
        end = piece_end;
    }
    a.get(..end).map_or(0, |p| counter.count(p) as u64)
}

/// The tokens of each request that are new: in each block, those past its
/// longest common prefix (to the piece) with any earlier block of the same
/// role. No prefix cache can serve them (whatever it serves lies in a
/// common prefix with an earlier request, block by block), so the rest is
/// the limit of every model for these requests.
#[derive(Default)]
pub struct Novelty {
    /// Every distinct block so far, sorted: the earlier block sharing the
    /// longest prefix with a new one is next to it in this order.
    seen: std::collections::BTreeSet<(u8, Arc<str>)>,
}

impl Novelty {
    /// The new tokens of `request`.
    pub fn new_tokens(&mut self, request: &Request, counter: &TokenCounter) -> u64 {
        let mut new = 0;
        for b in &request.blocks {
            let key = (b.kind as u8, b.text.clone());
            if self.seen.contains(&key) {
                continue;
            }
            let neighbours =
                self.seen.range(..key.clone()).next_back().into_iter().chain(self.seen.range(key.clone()..).next());
            let old = neighbours
                .filter(|(kind, _)| *kind == key.0)
                .map(|(_, text)| common_text_tokens(&b.text, text, counter))
                .max()
                .unwrap_or(0);
            new += b.tokens.saturating_sub(old);
            self.seen.insert(key);
        }
        new
    }
}

/// A plain prefix cache: the longest common prefix with any earlier request.
#[derive(Default)]
pub struct Prefix {
    seen: Vec<Request>,
}

impl CacheModel for Prefix {
    fn serve(&mut self, request: &Request, counter: &TokenCounter) -> Outcome {
        let total = request.tokens();
        let reused = longest_prefix(&request.blocks, self.seen.iter(), counter);
        self.seen.push(request.clone());
        Outcome { total, reused, written: total - reused, cost: uncached_cost(total, reused) }
    }
}

/// The longest common prefix of `blocks` with any of `earlier`.
fn longest_prefix<'r>(blocks: &[Block], earlier: impl Iterator<Item = &'r Request>, counter: &TokenCounter) -> u64 {
    // Whole blocks first (cheap); the piece-level tail only for the
    // requests that share the most whole blocks, once per differing block.
    let mut best_blocks = 0;
    let mut tails: Vec<&Request> = Vec::new();
    for r in earlier {
        let n = blocks.iter().zip(&r.blocks).take_while(|(x, y)| x.hash == y.hash && x.text == y.text).count();
        if n > best_blocks {
            best_blocks = n;
            tails.clear();
        }
        if n == best_blocks {
            let differing = r.blocks.get(n).map(|b| b.hash);
            if !tails.iter().any(|t| t.blocks.get(n).map(|b| b.hash) == differing) {
                tails.push(r);
            }
        }
    }
    tails.iter().map(|r| common_prefix_tokens(blocks, &r.blocks, counter)).max().unwrap_or(0)
}

fn uncached_cost(total: u64, reused: u64) -> f64 {
    reused as f64 * READ_PRICE + (total - reused) as f64
}

/// OpenAI's automatic prefix caching.
pub struct OpenAi {
    /// Earlier requests and when each was last used.
    seen: Vec<(Request, u64)>,
    /// Seconds of inactivity after which an entry is gone.
    pub idle_ttl: u64,
}

impl Default for OpenAi {
    fn default() -> Self {
        OpenAi { seen: Vec::new(), idle_ttl: 600 }
    }
}

/// The smallest prompt OpenAI caches, and its step above that.
pub const OPENAI_MIN: u64 = 1024;
/// See [`OPENAI_MIN`].
pub const OPENAI_STEP: u64 = 128;

impl CacheModel for OpenAi {
    fn serve(&mut self, request: &Request, counter: &TokenCounter) -> Outcome {
        let now = request.at;
        let ttl = self.idle_ttl;
        self.seen.retain(|(_, used)| used.saturating_add(ttl) >= now);
        let total = request.tokens();
        let mut best = (0, None);
        for (i, (r, _)) in self.seen.iter().enumerate() {
            let n = common_prefix_tokens(&request.blocks, &r.blocks, counter);
            if n > best.0 {
                best = (n, Some(i));
            }
        }
        let reused = if best.0 >= OPENAI_MIN && total >= OPENAI_MIN {
            OPENAI_MIN + (best.0 - OPENAI_MIN) / OPENAI_STEP * OPENAI_STEP
        } else {
            0
        };
        if let (true, Some(i)) = (reused > 0, best.1) {
            self.seen[i].1 = now;
        }
        self.seen.push((request.clone(), now));
        Outcome { total, reused, written: total - reused, cost: uncached_cost(total, reused) }
    }
}

/// Anthropic's breakpoint cache.
pub struct Anthropic {
    /// Live entries: a prefix's hash → (when it expires, its TTL).
    entries: HashMap<u64, (u64, Ttl)>,
    /// The smallest prefix the model caches.
    pub min_tokens: u64,
}

impl Default for Anthropic {
    fn default() -> Self {
        Anthropic { entries: HashMap::new(), min_tokens: 1024 }
    }
}

/// Blocks before a breakpoint at whose ends a hit is looked for.
pub const ANTHROPIC_LOOKBACK: usize = 20;

/// What Anthropic charges to write a token, by TTL.
pub fn write_price(ttl: Ttl) -> f64 {
    match ttl {
        Ttl::FiveMinutes => 1.25,
        Ttl::OneHour => 2.0,
    }
}

impl CacheModel for Anthropic {
    fn serve(&mut self, request: &Request, _counter: &TokenCounter) -> Outcome {
        let now = request.at;
        self.entries.retain(|_, (expires, _)| *expires >= now);
        let total = request.tokens();
        // The hash and tokens of each prefix ending after block j.
        let mut prefixes = Vec::with_capacity(request.blocks.len());
        let (mut h, mut tokens) = (0u64, 0u64);
        for b in &request.blocks {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            (h, b.hash).hash(&mut hasher);
            h = hasher.finish();
            tokens += b.tokens;
            prefixes.push((h, tokens));
        }
        let breakpoints: Vec<(usize, Ttl)> =
            request.blocks.iter().enumerate().filter_map(|(i, b)| b.breakpoint.map(|t| (i, t))).collect();
        // Read: the longest live prefix ending within the lookback of a breakpoint.
        let mut read: Option<(u64, u64)> = None;
        for &(b, _) in &breakpoints {
            let first = b.saturating_sub(ANTHROPIC_LOOKBACK - 1);
            for &(hash, t) in &prefixes[first..=b] {
                if self.entries.contains_key(&hash) && read.is_none_or(|(_, best)| t > best) {
                    read = Some((hash, t));
                }
            }
        }
        let reused = read.map_or(0, |(_, t)| t);
        if let Some((hash, _)) = read {
            if let Some((expires, ttl)) = self.entries.get_mut(&hash) {
                *expires = now + ttl.seconds();
            }
        }
        // Write: each breakpoint's prefix past what was read, long enough.
        let (mut written, mut cost, mut lower) = (0u64, 0f64, reused);
        for &(b, ttl) in &breakpoints {
            let (hash, t) = prefixes[b];
            if t < self.min_tokens {
                continue;
            }
            match self.entries.get_mut(&hash) {
                Some((expires, live)) => *expires = (*expires).max(now + live.seconds()),
                None => {
                    self.entries.insert(hash, (now + ttl.seconds(), ttl));
                }
            }
            if t > lower {
                written += t - lower;
                cost += (t - lower) as f64 * write_price(ttl);
                lower = t;
            }
        }
        cost += reused as f64 * READ_PRICE + (total - reused - written) as f64;
        Outcome { total, reused, written, cost }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proem_core::tokens::shared_counter;

    fn counter() -> &'static TokenCounter {
        shared_counter(Tokenizer::O200kBase)
    }

    fn block(kind: Kind, text: &str) -> Block {
        Block::new(kind, Arc::from(text), counter())
    }

    /// A system block of about `n` tokens ("w0 w1 …" counts one per word).
    fn long(tag: &str, n: usize) -> String {
        (0..n).map(|i| format!(" {tag}{}", i % 10)).collect()
    }

    fn req(at: u64, blocks: Vec<Block>) -> Request {
        Request { at, blocks }
    }

    #[test]
    fn a_prefix_is_shared_by_whole_blocks_then_by_pieces() {
        let a = [block(Kind::System, "alpha beta"), block(Kind::User, "one two three four")];
        let b = [block(Kind::System, "alpha beta"), block(Kind::User, "one two three five")];
        let shared = common_prefix_tokens(&a, &b, counter());
        assert_eq!(shared, a[0].tokens + counter().count("one two three") as u64);
        let other_role = [block(Kind::System, "alpha beta"), block(Kind::Assistant, "one two three four")];
        assert_eq!(common_prefix_tokens(&a, &other_role, counter()), a[0].tokens);
    }

    #[test]
    fn the_plain_prefix_reuses_the_longest_match_with_any_earlier_request() {
        let mut cache = Prefix::default();
        let sys = block(Kind::System, &long("s", 300));
        let first = cache.serve(&req(0, vec![sys.clone(), block(Kind::User, "hi")]), counter());
        assert_eq!((first.reused, first.written), (0, first.total));
        let second = cache.serve(&req(99_999, vec![sys.clone(), block(Kind::User, "bye")]), counter());
        assert_eq!(second.reused, sys.tokens, "no expiry, no minimum");
        assert!((second.cost - (sys.tokens as f64 * READ_PRICE + (second.total - sys.tokens) as f64)).abs() < 1e-9);
    }

    #[test]
    fn openai_serves_from_1024_tokens_in_steps_of_128_and_forgets_after_ten_idle_minutes() {
        let mut cache = OpenAi::default();
        let sys = block(Kind::System, &long("s", 1200));
        assert!(sys.tokens >= 1200);
        cache.serve(&req(0, vec![sys.clone(), block(Kind::User, "a")]), counter());
        let hit = cache.serve(&req(60, vec![sys.clone(), block(Kind::User, "b")]), counter());
        assert!(hit.reused >= OPENAI_MIN && hit.reused <= sys.tokens + 1, "{hit:?}");
        assert_eq!((hit.reused - OPENAI_MIN) % OPENAI_STEP, 0);
        let late = cache.serve(&req(60 + 601, vec![sys.clone(), block(Kind::User, "c")]), counter());
        assert_eq!(late.reused, 0, "idle longer than the TTL");
        let mut small = OpenAi::default();
        let short = block(Kind::System, &long("t", 500));
        small.serve(&req(0, vec![short.clone()]), counter());
        assert_eq!(small.serve(&req(1, vec![short]), counter()).reused, 0, "under 1024 tokens");
    }

    #[test]
    fn anthropic_reads_only_what_a_breakpoint_wrote_while_it_lives() {
        let mut cache = Anthropic::default();
        let stable = block(Kind::System, &long("s", 2000));
        let turn = |at, text: &str, ttl| {
            req(at, vec![stable.clone().cached(ttl), block(Kind::System, text), block(Kind::User, "question")])
        };
        let first = cache.serve(&turn(0, "monday", Ttl::FiveMinutes), counter());
        assert_eq!((first.reused, first.written), (0, stable.tokens));
        assert!((first.cost - (stable.tokens as f64 * 1.25 + (first.total - stable.tokens) as f64)).abs() < 1e-6);
        let second = cache.serve(&turn(200, "tuesday", Ttl::FiveMinutes), counter());
        assert_eq!((second.reused, second.written), (stable.tokens, 0));
        // Refreshed at 200: alive at 200 + 300, gone after.
        assert_eq!(cache.serve(&turn(500, "x", Ttl::FiveMinutes), counter()).reused, stable.tokens);
        let gone = cache.serve(&turn(500 + 301, "y", Ttl::FiveMinutes), counter());
        assert_eq!((gone.reused, gone.written), (0, stable.tokens));
        // Without a breakpoint nothing is written; a short prefix is not cached.
        let mut bare = Anthropic::default();
        let plain = req(0, vec![stable.clone(), block(Kind::User, "q")]);
        bare.serve(&plain, counter());
        assert_eq!(bare.serve(&plain, counter()).reused, 0);
        let tiny = req(0, vec![block(Kind::System, "short").cached(Ttl::OneHour)]);
        bare.serve(&tiny, counter());
        assert_eq!(bare.serve(&tiny, counter()).reused, 0);
    }

    #[test]
    fn new_tokens_are_those_past_the_longest_prefix_shared_with_an_earlier_block() {
        let mut novelty = Novelty::default();
        let first = req(0, vec![block(Kind::System, "rules one two"), block(Kind::User, "hello there")]);
        assert_eq!(novelty.new_tokens(&first, counter()), first.tokens());
        assert_eq!(novelty.new_tokens(&first, counter()), 0, "all seen");
        let grown = req(1, vec![block(Kind::System, "rules one two three"), block(Kind::Assistant, "hello there")]);
        let expected = counter().count("rules one two three") as u64 - counter().count("rules one two") as u64
            + grown.blocks[1].tokens;
        assert_eq!(novelty.new_tokens(&grown, counter()), expected, "another role shares nothing");
    }

    proptest::proptest! {
        /// No model serves more than the tokens that are not new.
        #[test]
        fn no_model_serves_new_tokens(texts in proptest::collection::vec(proptest::collection::vec("[ab ]{0,12}", 1..4), 1..12)) {
            let (mut novelty, mut prefix, mut openai, mut anthropic) =
                (Novelty::default(), Prefix::default(), OpenAi::default(), Anthropic { min_tokens: 1, ..Anthropic::default() });
            for (at, blocks) in texts.iter().enumerate() {
                let blocks = blocks.iter().enumerate().map(|(i, t)| {
                    let b = block(if i == 0 { Kind::System } else { Kind::User }, t);
                    if i % 2 == 0 { b.cached(Ttl::OneHour) } else { b }
                }).collect();
                let r = req(at as u64, blocks);
                let bound = r.tokens() - novelty.new_tokens(&r, counter());
                for served in [prefix.serve(&r, counter()).reused, openai.serve(&r, counter()).reused, anthropic.serve(&r, counter()).reused] {
                    proptest::prop_assert!(served <= bound, "{} > {}", served, bound);
                }
            }
        }
    }

    #[test]
    fn anthropic_finds_an_earlier_breakpoint_within_twenty_blocks_of_a_later_one() {
        let mut cache = Anthropic::default();
        let stable = block(Kind::System, &long("s", 1500)).cached(Ttl::OneHour);
        let history: Vec<Block> = (0..30).map(|i| block(Kind::User, &format!("message {i}"))).collect();
        let with = |n: usize| {
            let mut blocks = vec![stable.clone()];
            blocks.extend(history[..n].iter().cloned());
            blocks.last_mut().unwrap().breakpoint.get_or_insert(Ttl::FiveMinutes);
            req(0, blocks)
        };
        cache.serve(&with(5), counter());
        let near = cache.serve(&with(10), counter());
        assert_eq!(near.reused, with(5).tokens(), "the last conversation entry, 5 blocks back");
        let mut far_cache = Anthropic::default();
        far_cache.serve(&with(1), counter());
        let far = far_cache.serve(&with(25), counter());
        assert_eq!(far.reused, stable.tokens, "25 blocks on, the stable breakpoint itself still matches");
        assert!(with(25).anthropic_error().is_none());
        let mut bad = with(3);
        bad.blocks[1].breakpoint = Some(Ttl::FiveMinutes);
        bad.blocks[2].breakpoint = Some(Ttl::OneHour);
        assert!(bad.anthropic_error().unwrap().contains("1h"));
    }
}
