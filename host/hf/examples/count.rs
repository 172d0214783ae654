//! Token counts of NUL-separated texts with a tokenizer.json, one a line,
//! as proem counts them (the bounds check of proem-core, then proem-hf):
//! the Rust side of `host/hf/tests/exactness.sh`.
//!
//! `cargo run --release -p proem-hf --example count -- TOKENIZER.json TEXTS`

use proem_core::vocab::{check_shape, VocabularyLoader};

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, tokenizer, texts] = args.as_slice() else {
        return Err("usage: count TOKENIZER.json TEXTS (NUL-separated)".into());
    };
    let json = std::fs::read_to_string(tokenizer).map_err(|e| format!("{tokenizer}: {e}"))?;
    check_shape(&json).map_err(|e| format!("{tokenizer}: {e}"))?;
    let vocab = proem_hf::Loader.load(&json).map_err(|e| format!("{tokenizer}: {e}"))?;
    let texts = std::fs::read_to_string(texts).map_err(|e| format!("{texts}: {e}"))?;
    let mut out = String::new();
    for text in texts.split('\0') {
        match vocab.count(text) {
            Some(n) => out.push_str(&format!("{n}\n")),
            None => out.push_str("failed\n"),
        }
    }
    print!("{out}");
    Ok(())
}
