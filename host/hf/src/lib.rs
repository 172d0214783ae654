//! Exact token counts from a Hugging Face `tokenizer.json`, by Hugging
//! Face's own `tokenizers` crate: the [`Vocabulary`] and
//! [`VocabularyLoader`] proem-core defines, registered with [`install`].
//! The `proem` crate installs it; the front executable `proem` links none
//! and hands a build that needs one to `proem-full`.
//!
//! proem-core checks the file's shape and bounds before it comes here
//! (see `proem_core::vocab`).

use proem_core::vocab::{Vocabulary, VocabularyLoader};
use std::str::FromStr;

/// The loader, for [`install`].
pub struct Loader;

static LOADER: Loader = Loader;

/// Registers the loader for the whole process (idempotent).
pub fn install() {
    proem_core::vocab::set_loader(&LOADER);
}

impl VocabularyLoader for Loader {
    fn load(&self, json: &str) -> Result<Box<dyn Vocabulary>, String> {
        let mut tokenizer = tokenizers::Tokenizer::from_str(json).map_err(|e| e.to_string())?;
        // A count is of the whole text: a file's truncation (or padding)
        // would make a long prompt look short to the budget.
        tokenizer.with_truncation(None).map_err(|e| e.to_string())?;
        tokenizer.with_padding(None);
        Ok(Box::new(Counted(tokenizer)))
    }
}

/// A loaded tokenizer.json.
struct Counted(tokenizers::Tokenizer);

impl Vocabulary for Counted {
    fn count(&self, text: &str) -> Option<usize> {
        // No special tokens added (`add_special_tokens = false`); added
        // tokens written in the text are matched, as by a model server.
        self.0.encode_fast(text, false).ok().map(|encoding| encoding.len())
    }
}
