//! Hugging Face `tokenizer.json` vocabularies, behind a trait this crate
//! defines and the `proem` crate implements (`proem-hf`): proem-core, and
//! so the front executable, links no tokenizer library.
//!
//! `[budget] tokenizer = "tokenizers/llama3.json"` names a file inside the
//! agent directory (read like every agent file: relative, no `..`, symlinks
//! followed only inside the directory). The file is untrusted input: before
//! the tokenizer library sees it, [`check_shape`] bounds its size
//! ([`MAX_FILE_BYTES`]), its vocabulary ([`MAX_VOCAB`]), merges
//! ([`MAX_MERGES`]) and added tokens ([`MAX_ADDED_TOKENS`]) in one streaming
//! pass that allocates nothing per entry, and only byte-level or
//! byte-fallback BPE models are taken. Loaded vocabularies are kept once per
//! process by the SHA-256 of the file ([`MAX_LOADED`] of them), so agents
//! that share a tokenizer share its memory.

use crate::error::ProemError;
use crate::sync::Lock;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// The largest tokenizer.json read (Gemma 3's, the largest of the common
/// open models', is 33 MB).
pub const MAX_FILE_BYTES: usize = 64 << 20;
/// The most vocabulary entries (Gemma 3: 262,144).
pub const MAX_VOCAB: usize = 1 << 20;
/// The most merges (Gemma 3: 514,906).
pub const MAX_MERGES: usize = 1 << 20;
/// The most added tokens (Gemma 3: 6,415).
pub const MAX_ADDED_TOKENS: usize = 1 << 16;
/// Distinct tokenizer files one process keeps loaded (each is tens to
/// hundreds of MB in memory).
pub const MAX_LOADED: usize = 4;

/// A loaded tokenizer: counts the tokens of a text as the model's own
/// tokenizer encodes it (no special tokens added around it; added tokens
/// written in the text are matched, as a model server does).
pub trait Vocabulary: Send + Sync {
    /// Tokens in `text`, or `None` when the tokenizer failed on it.
    fn count(&self, text: &str) -> Option<usize>;
}

/// Makes [`Vocabulary`]s from tokenizer.json text that passed
/// [`check_shape`]. The `proem` crate registers one ([`set_loader`]).
pub trait VocabularyLoader: Send + Sync {
    /// Parses a tokenizer.json; the error says what is wrong with it.
    fn load(&self, json: &str) -> Result<Box<dyn Vocabulary>, String>;
}

static LOADER: OnceLock<&'static dyn VocabularyLoader> = OnceLock::new();

/// Registers the loader for the whole process (the first one stays).
pub fn set_loader(loader: &'static dyn VocabularyLoader) {
    let _ = LOADER.set(loader);
}

/// Whether this process can load tokenizer.json files.
pub fn has_loader() -> bool {
    LOADER.get().is_some()
}

/// Whether a `[budget] tokenizer` value names a file rather than a
/// built-in vocabulary.
pub fn is_file_name(value: &str) -> bool {
    value.ends_with(".json")
}

/// One tokenizer.json, loaded: compared and hashed by the file's SHA-256.
pub struct HfVocab {
    digest: [u8; 32],
    name: &'static str,
    vocab: Box<dyn Vocabulary>,
}

impl HfVocab {
    /// `hf-` and the first 13 hex digits of the file's SHA-256 (the report's
    /// `tokenizer`, and the name its saved counts go under).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Tokens in `text` (`None`: the tokenizer failed).
    pub fn count(&self, text: &str) -> Option<usize> {
        self.vocab.count(text)
    }
}

impl PartialEq for HfVocab {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest
    }
}

impl Eq for HfVocab {}

impl std::hash::Hash for HfVocab {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.digest.hash(state);
    }
}

impl std::fmt::Debug for HfVocab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The vocabularies loaded in this process.
static LOADED: Lock<Vec<&'static HfVocab>> = Lock::new(Vec::new());

/// The tokenizer.json vocabularies this process has loaded, in load order.
pub fn loaded() -> Vec<&'static HfVocab> {
    LOADED.lock().clone()
}

/// The tokenizer in `rel` (a tokenizer.json inside `workspace`), loaded
/// once per process per file content. Errors name the config key, the
/// file and the fix.
pub fn load_file(workspace: &crate::workspace::Workspace, rel: &str) -> Result<&'static HfVocab, ProemError> {
    let fail = |message: String| ProemError::input("[budget] tokenizer", format!("{rel}: {message}"));
    let Some(loader) = LOADER.get() else { return Err(ProemError::TokenizerCodeNeeded) };
    // The bytes as they are: an agent file's text hygiene would change a
    // vocabulary's strings.
    let (bytes, larger) = workspace.read_bytes(rel, MAX_FILE_BYTES).map_err(|why| match why.or_exhausted(rel) {
        Err(exhausted) => exhausted.into(),
        Ok(why) => fail(why.describe()),
    })?;
    if larger {
        return Err(fail(format!("larger than {MAX_FILE_BYTES} bytes; a tokenizer.json is never that large")));
    }
    let digest: [u8; 32] = Sha256::digest(&bytes).into();
    {
        let loaded = LOADED.lock();
        if let Some(found) = loaded.iter().find(|v| v.digest == digest) {
            return Ok(found);
        }
        if loaded.len() >= MAX_LOADED {
            return Err(fail(too_many()));
        }
    }
    let json =
        String::from_utf8(bytes).map_err(|e| fail(format!("not UTF-8 (at byte {})", e.utf8_error().valid_up_to())))?;
    check_shape(&json).map_err(fail)?;
    let vocab = loader.load(&json).map_err(|e| fail(format!("not a tokenizer this version can load: {e}")))?;
    let mut loaded = LOADED.lock();
    if let Some(found) = loaded.iter().find(|v| v.digest == digest) {
        return Ok(found);
    }
    if loaded.len() >= MAX_LOADED {
        return Err(fail(too_many()));
    }
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let name: &'static str = Box::leak(format!("hf-{}", &hex[..13]).into_boxed_str());
    let entry: &'static HfVocab = Box::leak(Box::new(HfVocab { digest, name, vocab }));
    loaded.push(entry);
    Ok(entry)
}

fn too_many() -> String {
    format!(
        "this process already holds {MAX_LOADED} different tokenizer files; \
         use the same file for agents of one model, or restart to load a changed one"
    )
}

/// What [`check_shape`] reads of a tokenizer.json: the counts of its big
/// tables, nothing else.
#[derive(Deserialize)]
struct Shape {
    model: ModelShape,
    #[serde(default)]
    added_tokens: Counted,
}

#[derive(Deserialize)]
struct ModelShape {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    vocab: Counted,
    #[serde(default)]
    merges: Counted,
}

/// The number of entries of a JSON array or object, read without keeping
/// any of them.
#[derive(Default)]
struct Counted(usize);

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Count;
        impl<'de> Visitor<'de> for Count {
            type Value = Counted;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array or an object")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Counted, A::Error> {
                let mut n = 0usize;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n = n.saturating_add(1);
                }
                Ok(Counted(n))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Counted, A::Error> {
                let mut n = 0usize;
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    n = n.saturating_add(1);
                }
                Ok(Counted(n))
            }
        }
        d.deserialize_any(Count)
    }
}

/// Checks a tokenizer.json against the bounds before any tokenizer library
/// parses it: valid JSON (nesting at most serde_json's 128 levels), a BPE
/// model, and its vocabulary, merges and added tokens within their limits.
/// One pass, linear in the file's size, keeping no entry.
pub fn check_shape(json: &str) -> Result<(), String> {
    if json.len() > MAX_FILE_BYTES {
        return Err(format!("{} bytes, over the limit of {MAX_FILE_BYTES}", json.len()));
    }
    let shape: Shape = serde_json::from_str(json).map_err(|e| format!("not a tokenizer.json: {e}"))?;
    match shape.model.kind.as_deref() {
        Some("BPE") => {}
        other => {
            return Err(format!(
                "model.type is {}; only BPE tokenizers (Llama 3, Qwen, DeepSeek, Mistral, Gemma) are supported",
                other.map_or("missing".to_string(), |k| format!("{k:?}"))
            ))
        }
    }
    for (what, n, max) in [
        ("model.vocab", shape.model.vocab.0, MAX_VOCAB),
        ("model.merges", shape.model.merges.0, MAX_MERGES),
        ("added_tokens", shape.added_tokens.0, MAX_ADDED_TOKENS),
    ] {
        if n > max {
            return Err(format!("{what} has {n} entries, over the limit of {max}"));
        }
    }
    if shape.model.vocab.0 == 0 {
        return Err("model.vocab is empty".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bpe(vocab: usize, merges: usize, added: usize) -> String {
        let vocab: Vec<String> = (0..vocab).map(|i| format!("\"t{i}\":{i}")).collect();
        let merges: Vec<String> = (0..merges).map(|i| format!("\"a{i} b\"")).collect();
        let added: Vec<String> = (0..added).map(|i| format!("{{\"id\":{i},\"content\":\"<{i}>\"}}")).collect();
        format!(
            "{{\"added_tokens\":[{}],\"model\":{{\"type\":\"BPE\",\"vocab\":{{{}}},\"merges\":[{}]}}}}",
            added.join(","),
            vocab.join(","),
            merges.join(",")
        )
    }

    #[test]
    fn tables_over_their_limits_are_refused_by_name() {
        assert!(check_shape(&bpe(3, 2, 1)).is_ok());
        let e = check_shape(&bpe(MAX_VOCAB + 1, 0, 0)).unwrap_err();
        assert!(e.contains("model.vocab has 1048577 entries"), "{e}");
        let e = check_shape(&bpe(1, MAX_MERGES + 1, 0)).unwrap_err();
        assert!(e.contains("model.merges"), "{e}");
        let e = check_shape(&bpe(1, 0, MAX_ADDED_TOKENS + 1)).unwrap_err();
        assert!(e.contains("added_tokens"), "{e}");
        let e = check_shape(r#"{"model":{"type":"Unigram","vocab":[["a",0.0]]}}"#).unwrap_err();
        assert!(e.contains("only BPE"), "{e}");
        let e = check_shape(&"[".repeat(10_000)).unwrap_err();
        assert!(e.contains("not a tokenizer.json"), "{e}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any bytes at all: an answer, never a panic, and an `Ok` only for
        /// a BPE model within the bounds.
        #[test]
        fn any_text_is_checked_without_panicking(text in "\\PC{0,200}", cut in 0usize..400) {
            let whole = bpe(3, 2, 1);
            let spliced = format!("{}{}{}", &whole[..cut.min(whole.len())], text, &whole[cut.min(whole.len())..]);
            if check_shape(&spliced).is_ok() {
                let v: serde_json::Value = serde_json::from_str(&spliced).unwrap();
                prop_assert_eq!(v["model"]["type"].as_str(), Some("BPE"));
            }
        }

        /// Counts are the number of entries, whatever the entries are.
        #[test]
        fn counts_are_entries(vocab in 1usize..50, merges in 0usize..50, added in 0usize..50) {
            let shape: Shape = serde_json::from_str(&bpe(vocab, merges, added)).unwrap();
            prop_assert_eq!((shape.model.vocab.0, shape.model.merges.0, shape.added_tokens.0), (vocab, merges, added));
        }
    }
}
