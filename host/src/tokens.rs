//! Exact token counting with tiktoken's BPE tables.
//!
//! The encoders are built lazily, once per process (about 120 ms for
//! o200k_base), and counts are memoised by a hash of the text so a text that
//! was counted before is never encoded again.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use tiktoken_rs::CoreBPE;

/// The BPE vocabularies proem counts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tokenizer {
    /// GPT-4o, GPT-4.1, GPT-5 and the o-series.
    O200kBase,
    /// Everything else (a close approximation for non-OpenAI models).
    Cl100kBase,
}

impl Tokenizer {
    /// The tiktoken name.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200kBase => "o200k_base",
            Tokenizer::Cl100kBase => "cl100k_base",
        }
    }

    /// Parses a tiktoken name.
    pub fn from_name(name: &str) -> Option<Tokenizer> {
        match name {
            "o200k_base" => Some(Tokenizer::O200kBase),
            "cl100k_base" => Some(Tokenizer::Cl100kBase),
            _ => None,
        }
    }

    /// The vocabulary a model uses: o200k_base for OpenAI's GPT-4o, GPT-4.1,
    /// GPT-4.5, GPT-5 and o-series models (a `provider/` prefix is ignored),
    /// cl100k_base for anything else.
    pub fn for_model(model: &str) -> Tokenizer {
        let m = model.rsplit('/').next().unwrap_or(model).trim().to_ascii_lowercase();
        let o200k_families = ["gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "codex-"];
        let o_series = m.len() >= 2 && m.starts_with('o') && m.as_bytes()[1].is_ascii_digit();
        if o_series || o200k_families.iter().any(|f| m.starts_with(f)) {
            Tokenizer::O200kBase
        } else {
            Tokenizer::Cl100kBase
        }
    }

    fn bpe(self) -> &'static CoreBPE {
        match self {
            Tokenizer::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Tokenizer::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        }
    }
}

/// Most memo entries kept before the memo is cleared (bounds memory in
/// long-running processes).
const MEMO_LIMIT: usize = 16_384;

/// Counts tokens, remembering texts it has counted.
#[derive(Debug)]
pub struct TokenCounter {
    tokenizer: Tokenizer,
    memo: Mutex<HashMap<(u64, usize), usize>>,
}

impl TokenCounter {
    /// A counter for `tokenizer`.
    pub fn new(tokenizer: Tokenizer) -> TokenCounter {
        TokenCounter { tokenizer, memo: Mutex::new(HashMap::new()) }
    }

    /// The vocabulary in use.
    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// Tokens in `text` (special-token strings count as ordinary text).
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        let key = (fingerprint(text), text.len());
        if let Some(n) = self.memo.lock().expect("token memo poisoned").get(&key) {
            return *n;
        }
        let n = self.tokenizer.bpe().encode_ordinary(text).len();
        let mut memo = self.memo.lock().expect("token memo poisoned");
        if memo.len() >= MEMO_LIMIT {
            memo.clear();
        }
        memo.insert(key, n);
        n
    }
}

fn fingerprint(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(Tokenizer::for_model(m), Tokenizer::O200kBase, "{m}");
        }
        for m in ["gpt-4", "gpt-3.5-turbo", "claude-sonnet-4", "llama-3", "", "omni", "anthropic/claude-opus"] {
            assert_eq!(Tokenizer::for_model(m), Tokenizer::Cl100kBase, "{m}");
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
}
