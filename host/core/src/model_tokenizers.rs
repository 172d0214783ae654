//! Which tokenizer a model name uses when `[budget] tokenizer` does not
//! say, and whether its counts are the model's own (the report's `exact`).
//!
//! | model names (a `provider/` prefix is ignored, case too) | family | counted with, without a tokenizer.json |
//! |---|---|---|
//! | `gpt-4o`, `chatgpt-4o`, `gpt-4.1`, `gpt-4.5`, `gpt-5`, `gpt-oss`, `codex-`, `o1`, `o3`, `o4`… | o200k_base | o200k_base, exact |
//! | `gpt-4`, `gpt-3.5`, `text-embedding-3`, `text-embedding-ada` | cl100k_base | cl100k_base, exact |
//! | `claude` | Claude | `claude-estimate` (not exact) |
//! | `llama-3`, `llama3`, `meta-llama-3` | Llama 3 | cl100k_base, not exact |
//! | `qwen2.5`, `qwen3`, `qwq` | Qwen | cl100k_base, not exact |
//! | `deepseek` | DeepSeek V3 | cl100k_base, not exact |
//! | `mistral`, `mixtral`, `ministral`, `codestral`, `magistral`, `pixtral`, `devstral` | Mistral | cl100k_base, not exact |
//! | `gemma` | Gemma | cl100k_base, not exact |
//! | anything else | unknown | cl100k_base, not exact |
//!
//! The open families' counts are exact with their tokenizer.json as
//! `[budget] tokenizer`; a build without one says so in a diagnostic.

use crate::tokens::Tokenizer;

/// A model's tokenizer family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// OpenAI's newer models.
    O200k,
    /// GPT-4 and GPT-3.5.
    Cl100k,
    /// Anthropic's Claude: no published tokenizer.
    Claude,
    /// An open-weight model whose tokenizer.json proem can count with: the
    /// family's name as the diagnostic says it.
    Open(&'static str),
    /// A model proem does not know.
    Unknown,
}

impl Family {
    /// The built-in tokenizer that counts this family's text without a
    /// tokenizer.json.
    pub fn builtin(self) -> Tokenizer {
        match self {
            Family::O200k => Tokenizer::O200kBase,
            Family::Claude => Tokenizer::ClaudeEstimate,
            Family::Cl100k | Family::Open(_) | Family::Unknown => Tokenizer::Cl100kBase,
        }
    }

    /// Whether [`Family::builtin`]'s counts are the model's own.
    pub fn builtin_is_exact(self) -> bool {
        matches!(self, Family::O200k | Family::Cl100k)
    }
}

/// Prefixes of open-weight model names, and their family.
const OPEN: &[(&str, &str)] = &[
    ("llama-3", "Llama 3"),
    ("llama3", "Llama 3"),
    ("meta-llama-3", "Llama 3"),
    ("qwen2.5", "Qwen 2.5"),
    ("qwen-2.5", "Qwen 2.5"),
    ("qwen3", "Qwen 3"),
    ("qwen-3", "Qwen 3"),
    ("qwq", "Qwen 2.5"),
    ("deepseek", "DeepSeek V3"),
    ("mistral", "Mistral"),
    ("mixtral", "Mistral"),
    ("ministral", "Mistral"),
    ("codestral", "Mistral"),
    ("magistral", "Mistral"),
    ("pixtral", "Mistral"),
    ("devstral", "Mistral"),
    ("gemma", "Gemma"),
];

/// The family of `model` (see the module's table).
pub fn family_of(model: &str) -> Family {
    let m = model.rsplit('/').next().unwrap_or(model).trim().to_ascii_lowercase();
    let o200k = ["gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "codex-"];
    let o_series = m.len() >= 2 && m.starts_with('o') && m.as_bytes()[1].is_ascii_digit();
    if o_series || o200k.iter().any(|f| m.starts_with(f)) {
        return Family::O200k;
    }
    if ["gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada"].iter().any(|f| m.starts_with(f)) {
        return Family::Cl100k;
    }
    if m.starts_with("claude") || m.starts_with("anthropic.claude") {
        return Family::Claude;
    }
    match OPEN.iter().find(|(prefix, _)| m.starts_with(prefix)) {
        Some((_, family)) => Family::Open(family),
        None => Family::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_model_names_map_to_their_family() {
        for (model, family) in [
            ("gpt-4o-mini", Family::O200k),
            ("openai/gpt-5", Family::O200k),
            ("o3-mini", Family::O200k),
            ("gpt-4.1", Family::O200k),
            ("gpt-4-turbo", Family::Cl100k),
            ("gpt-3.5-turbo", Family::Cl100k),
            ("claude-sonnet-4-5", Family::Claude),
            ("anthropic/claude-opus-4", Family::Claude),
            ("meta-llama/Llama-3.1-8B-Instruct", Family::Open("Llama 3")),
            ("llama3.2", Family::Open("Llama 3")),
            ("Qwen/Qwen2.5-7B-Instruct", Family::Open("Qwen 2.5")),
            ("qwen3:8b", Family::Open("Qwen 3")),
            ("deepseek-chat", Family::Open("DeepSeek V3")),
            ("deepseek-ai/DeepSeek-V3", Family::Open("DeepSeek V3")),
            ("mistralai/Mistral-Small-3.1", Family::Open("Mistral")),
            ("google/gemma-3-27b-it", Family::Open("Gemma")),
            ("", Family::Unknown),
            ("some-new-model", Family::Unknown),
        ] {
            assert_eq!(family_of(model), family, "{model}");
        }
        assert_eq!(family_of("claude-3-5-haiku").builtin(), Tokenizer::ClaudeEstimate);
        assert!(!Family::Claude.builtin_is_exact() && !Family::Unknown.builtin_is_exact());
        assert!(Family::O200k.builtin_is_exact());
    }
}
