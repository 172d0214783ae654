//! proem's own token counter (`proem_bpe`) against tiktoken-rs, the
//! reference: the same pre-split pieces and the same counts, for both
//! vocabularies, over generated text aimed at every rule of the pre-split
//! (letters by case class, marks, digits of every script, whitespace of
//! every kind, contractions and their case folds, `/` after punctuation)
//! and at both merge paths (pieces under and over 100 bytes).

use proem_bpe::Encoder;
use proptest::prelude::*;
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

/// tiktoken-rs's cl100k_base pattern (inline in its `cl100k_base()`).
const CL100K_PATTERN: &str = "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s";

/// Each vocabulary: proem's encoder, tiktoken-rs's, and tiktoken-rs's
/// pre-split pattern, compiled once for all the cases.
fn vocabularies() -> &'static [(&'static str, &'static Encoder, &'static CoreBPE, fancy_regex::Regex); 2] {
    static VOCABULARIES: OnceLock<[(&str, &Encoder, &CoreBPE, fancy_regex::Regex); 2]> = OnceLock::new();
    VOCABULARIES.get_or_init(|| {
        [
            (
                "o200k_base",
                Encoder::o200k(),
                tiktoken_rs::o200k_base_singleton(),
                fancy_regex::Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).unwrap(),
            ),
            (
                "cl100k_base",
                Encoder::cl100k(),
                tiktoken_rs::cl100k_base_singleton(),
                fancy_regex::Regex::new(CL100K_PATTERN).unwrap(),
            ),
        ]
    })
}

/// Asserts proem's pieces and count of `text` equal tiktoken-rs's.
fn assert_same(text: &str) -> Result<(), TestCaseError> {
    for (name, ours, reference, pattern) in vocabularies() {
        let expected: Vec<&str> = pattern.find_iter(text).map(|m| m.unwrap().as_str()).collect();
        prop_assert_eq!(ours.pieces(text), expected, "{} pre-split of {:?}", name, text);
        prop_assert_eq!(ours.count(text), reference.encode_ordinary(text).len(), "{} count of {:?}", name, text);
    }
    Ok(())
}

/// One character from each class the pre-split patterns tell apart.
fn tricky_char() -> impl Strategy<Value = char> {
    prop::sample::select(vec![
        // letters: lower, upper, title case, modifier, other; case folds
        'a',
        'z',
        'A',
        'Z',
        'é',
        'ß',
        'ſ',
        'K',
        'İ',
        'ǅ',
        'ʰ',
        'ª',
        'λ',
        'Ω',
        'ж',
        'Ж',
        '漢',
        'ひ',
        'ア',
        'ㄱ',
        'ع',
        // marks: nonspacing, spacing, enclosing
        '\u{301}',
        '\u{903}',
        '\u{20dd}',
        // numbers: decimal of several scripts, letter, other
        '0',
        '7',
        '٣',
        '५',
        '７',
        'Ⅻ',
        '½',
        '²',
        // whitespace of every kind, and near-whitespace that is not
        ' ',
        '\t',
        '\n',
        '\r',
        '\u{b}',
        '\u{c}',
        '\u{85}',
        '\u{a0}',
        '\u{1680}',
        '\u{2003}',
        '\u{2028}',
        '\u{2029}',
        '\u{3000}',
        '\u{200b}',
        '\u{feff}',
        // punctuation the patterns name
        '\'',
        '/',
        '.',
        ',',
        '!',
        '?',
        '-',
        '_',
        '(',
        '"',
        '`',
        '’',
        '…',
        // symbols and emoji
        '$',
        '€',
        '+',
        '😀',
        '\u{200d}',
        '\u{fe0f}',
        '\u{1f3fd}',
    ])
}

/// Text built from fragments that meet at the patterns' edges.
fn tricky_text() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        4 => tricky_char().prop_map(String::from),
        1 => prop::sample::select(vec!["'s", "'S", "'ll", "'LL", "'Ve", "'d", "'m", "'t", "'re", "'ſ", "'K"]).prop_map(String::from),
        1 => "[a-zA-Z]{1,12}",
        1 => "[0-9]{1,7}",
        1 => "[ \t]{1,6}",
        1 => "[\r\n]{1,3}",
        1 => "[ \n]{2,5}[a-z/]",
        1 => "[.,;:!?/]{1,3}[\r\n/]{0,3}",
    ];
    prop::collection::vec(fragment, 0..48).prop_map(|v| v.concat())
}

/// Pieces of 100 bytes and more: the merge path for long pieces.
fn long_pieces() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{100,400}",
        "[a-zA-Z0-9+/]{100,600}",
        "[éàüöß]{60,200}",
        "[漢字日本語]{40,160}",
        "[.!?,;:-]{100,300}",
        "a{100,300}",
        "[ab]{100,300}",
        " [a-z]{120,240}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn tricky_text_splits_and_counts_as_tiktoken_does(text in tricky_text()) {
        assert_same(&text)?;
    }

    #[test]
    fn any_unicode_splits_and_counts_as_tiktoken_does(text in any::<String>()) {
        assert_same(&text)?;
    }

    /// Any ASCII (controls included), now and then a non-ASCII character:
    /// the bytes the pre-split's ASCII fast path decides on alone.
    #[test]
    fn any_ascii_splits_and_counts_as_tiktoken_does(
        text in prop::collection::vec(prop_oneof![20 => "[\\x00-\\x7f]{1,8}", 1 => tricky_char().prop_map(String::from)], 0..40)
            .prop_map(|v| v.concat())
    ) {
        assert_same(&text)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn long_pieces_count_as_tiktoken_does(text in long_pieces(), prefix in tricky_text()) {
        assert_same(&text)?;
        assert_same(&format!("{prefix}{text}"))?;
    }
}

/// Every example agent's workspace files, whole: real prose, lists, code.
#[test]
fn the_example_workspaces_count_as_tiktoken_does() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files = 0;
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                assert_same(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                files += 1;
            }
        }
    }
    assert!(files >= 20, "only {files} example files found");
}

/// The vocabulary files are OpenAI's, unchanged (the hashes tiktoken checks
/// its downloads against).
#[test]
fn the_vendored_vocabularies_are_openais() {
    use sha2::{Digest, Sha256};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bpe/vocab");
    for (file, expected) in [
        ("o200k_base.tiktoken", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
        ("cl100k_base.tiktoken", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
    ] {
        let digest = Sha256::digest(std::fs::read(dir.join(file)).unwrap());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, expected, "{file}");
    }
}

/// Each vocabulary table holds exactly tiktoken-rs's ordinary tokens, at
/// their ranks.
#[test]
fn the_tables_hold_tiktokens_vocabularies() {
    for (name, ours, reference, _) in vocabularies() {
        let table = ours.table();
        let expected = if *name == "o200k_base" { 199_998 } else { 100_256 };
        assert_eq!(table.len(), expected, "{name}");
        for rank in 0..table.len() as u32 {
            let bytes = table.token(rank);
            assert_eq!(table.rank(bytes), Some(rank), "{name} rank {rank}");
            assert_eq!(reference.decode_bytes(&[rank]).unwrap(), bytes, "{name} rank {rank}");
        }
        assert_eq!(table.rank(b"no such token, surely, in any vocabulary"), None);
    }
}
