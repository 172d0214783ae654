//! `[budget] tokenizer = "FILE.json"`: a Hugging Face tokenizer.json in the
//! agent directory counts the budget (issue 30, item 5), and a hostile one
//! is refused by name before the tokenizer library parses it
//! (docs/SECURITY.md §0, "tokenizer.json"). Exactness against the Python
//! reference over the real open-model files is `host/hf/tests/exactness.sh`
//! (it downloads them); here a small byte-level BPE made in the test.

use crate::common::*;
use proem::{Assembler, Turn};

use proem_core::vocab::{check_shape, VocabularyLoader, MAX_FILE_BYTES, MAX_MERGES};
use proptest::prelude::*;

/// GPT-2's byte-to-character map, which byte-level BPE vocabularies use.
fn byte_chars() -> Vec<char> {
    let printable = |b: u32| (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b);
    let mut next = 256;
    (0u32..256)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).unwrap()
            } else {
                next += 1;
                char::from_u32(next - 1).unwrap()
            }
        })
        .collect()
}

/// A byte-level BPE whose merges make `the`, `Ġthe` and `Ġagent` single
/// tokens, with `<|x|>` an added special token; `extra` goes into the top
/// object (a truncation, say).
fn tokenizer_json(extra: &str) -> String {
    let mut vocab: Vec<String> = byte_chars().iter().map(|c| c.to_string()).collect();
    let merges = [("t", "h"), ("th", "e"), ("Ġ", "the"), ("a", "g"), ("ag", "e"), ("age", "n"), ("agen", "t")];
    let merges = merges.iter().chain(&[("Ġ", "agent")]);
    let mut merge_lines = Vec::new();
    for (a, b) in merges {
        vocab.push(format!("{a}{b}"));
        merge_lines.push(serde_json::json!(format!("{a} {b}")));
    }
    vocab.push("<|x|>".into());
    let special = vocab.len() - 1;
    let vocab: serde_json::Map<String, serde_json::Value> =
        vocab.into_iter().enumerate().map(|(i, t)| (t, serde_json::json!(i))).collect();
    let json = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{"id": special, "content": "<|x|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
        "normalizer": null,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "vocab": vocab, "merges": merge_lines}
    });
    let mut text = json.to_string();
    if !extra.is_empty() {
        text.insert_str(1, &format!("{extra},"));
        // The later key wins in serde_json's map; drop the null one.
        text = text.replacen("\"truncation\":null,", "", 1);
    }
    text
}

fn agent_with_tokenizer(json: &str) -> Agent {
    let a = Agent::new();
    a.with_standard_files().file("tok/tokenizer.json", json).config("[budget]\ntokenizer = \"tok/tokenizer.json\"\n");
    a
}

#[test]
fn a_tokenizer_json_counts_the_budget_exactly_and_the_report_says_which() {
    let a = agent_with_tokenizer(&tokenizer_json(""));
    let built = a.build(&turn());
    assert!(built.tokenizer.starts_with("hf-") && built.tokenizer.len() == 16, "{}", built.tokenizer);
    assert!(built.exact);
    let vocab = proem_hf::Loader.load(&tokenizer_json("")).unwrap();
    assert_eq!(vocab.count("the agent the"), Some(3), "the, Ġagent, Ġthe");
    assert_eq!(vocab.count("<|x|>the"), Some(2), "an added token written in the text is one token");
    assert_eq!(built.tokens.stable, vocab.count(&built.stable).unwrap(), "the stable part is counted whole, exactly");
    assert_eq!(built.tokens.dynamic, vocab.count(&built.dynamic).unwrap());
}

#[test]
fn a_truncation_in_the_file_does_not_shorten_counts() {
    let truncating =
        tokenizer_json(r#""truncation":{"direction":"Right","max_length":2,"strategy":"LongestFirst","stride":0}"#);
    assert!(truncating.contains("max_length"));
    let vocab = proem_hf::Loader.load(&truncating).unwrap();
    assert_eq!(vocab.count("the agent the agent the"), Some(5), "all of the text, not max_length");
}

#[test]
fn hostile_tokenizer_files_are_refused_naming_the_key_the_file_and_the_bound() {
    for (json, expect) in [
        ("{\"model\": {\"type\": \"BPE\", \"vocab\": {}}}".to_string(), "model.vocab is empty"),
        ("not json".to_string(), "not a tokenizer.json"),
        ("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}".to_string(), "only BPE"),
        (
            format!(
                "{{\"model\": {{\"type\": \"BPE\", \"vocab\": {{\"a\": 0}}, \"merges\": [{}]}}}}",
                vec!["\"a b\""; MAX_MERGES + 1].join(",")
            ),
            "model.merges has 1048577 entries",
        ),
    ] {
        let a = agent_with_tokenizer(&json);
        let err = Assembler::open(a.path(), None).err().expect("refused").to_string();
        assert!(
            err.contains("[budget] tokenizer") && err.contains("tok/tokenizer.json") && err.contains(expect),
            "{err}"
        );
    }
    // Too large: refused before parsing (the file is sparse, so the test is cheap).
    let a = Agent::new();
    a.config("[budget]\ntokenizer = \"big.json\"\n");
    let f = std::fs::File::create(a.path().join("big.json")).unwrap();
    f.set_len(MAX_FILE_BYTES as u64 + 1).unwrap();
    let err = Assembler::open(a.path(), None).err().expect("refused").to_string();
    assert!(err.contains("big.json") && err.contains("larger than"), "{err}");
    // Outside the agent directory: refused by the config's path rule.
    for path in ["/etc/passwd.json", "../x.json"] {
        let a = Agent::new();
        a.config(&format!("[budget]\ntokenizer = \"{path}\"\n"));
        let err = Assembler::open(a.path(), None).err().expect("refused").to_string();
        assert!(err.contains("tokenizer") && err.contains("inside the agent directory"), "{path}: {err}");
    }
    // A symlink out of the agent directory is not followed.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("t.json"), tokenizer_json("")).unwrap();
    let a = Agent::new();
    a.config("[budget]\ntokenizer = \"link.json\"\n");
    std::os::unix::fs::symlink(outside.path().join("t.json"), a.path().join("link.json")).unwrap();
    let err = Assembler::open(a.path(), None).err().expect("refused").to_string();
    assert!(err.contains("link.json"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A tokenizer.json cut anywhere and spliced with anything is refused
    /// or loaded, never a panic; what loads counts any text.
    #[test]
    fn any_corruption_of_a_tokenizer_json_is_an_answer(cut in 0usize..4000, junk in "\\PC{0,40}", text in "\\PC{0,200}") {
        let whole = tokenizer_json("");
        let cut = (cut * whole.len() / 4000).min(whole.len());
        let cut = (0..=cut).rev().find(|&i| whole.is_char_boundary(i)).unwrap_or(0);
        let spliced = format!("{}{}{}", &whole[..cut], junk, &whole[cut..]);
        if check_shape(&spliced).is_ok() {
            if let Ok(vocab) = proem_hf::Loader.load(&spliced) {
                let n = vocab.count(&text);
                prop_assert!(n.is_none_or(|n| n <= text.len().max(1) * 4));
            }
        }
    }
}

#[test]
fn models_without_their_tokenizer_are_counted_inexactly_and_said_so() {
    let a = Agent::new();
    a.with_standard_files();
    let turn = |model: &str| Turn { model: Some(model.into()), ..turn() };
    let claude = a.build(&turn("claude-sonnet-4-5"));
    assert_eq!((claude.tokenizer.as_str(), claude.exact), ("claude-estimate", false));
    let json = serde_json::to_value(&claude).unwrap();
    assert_eq!((json["tokenizer"].as_str(), json["exact"].as_bool()), (Some("claude-estimate"), Some(false)));
    let gpt = a.build(&turn("gpt-4o"));
    assert_eq!((gpt.tokenizer.as_str(), gpt.exact), ("o200k_base", true));
    assert!(claude.tokens.stable > gpt.tokens.stable, "the estimate has its margin");
    let llama = a.build(&turn("meta-llama/Llama-3.1-8B-Instruct"));
    assert_eq!((llama.tokenizer.as_str(), llama.exact), ("cl100k_base", false));
    let note = llama.diagnostics.iter().find(|d| d.code == "tokenizer_not_exact").expect("said");
    assert!(note.message.contains("Llama 3") && note.message.contains("[budget] tokenizer"), "{}", note.message);
}

#[test]
fn the_front_executable_hands_a_tokenizer_json_build_to_proem_full() {
    let a = agent_with_tokenizer(&tokenizer_json(""));
    let out = std::process::Command::new(front())
        .args(["build", a.path().to_str().unwrap(), "--now", "2026-11-21T09:30:00Z", "--format", "json"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["tokenizer"].as_str().unwrap().starts_with("hf-"), "{}", v["tokenizer"]);
    assert_eq!(v["exact"], true);
}
