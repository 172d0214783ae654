//! Head/tail truncation: never over the cap, never splits a character (the
//! result is a `String`), keeps the first `head_chars` and last `tail_chars`
//! characters of the original exactly.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proem_core::truncate::head_tail;

fuzz_target!(|input: (u16, u8, u8, &str)| {
    let (cap, head, tail, text) = input;
    let cap = cap as usize % 4096;
    let head_ratio = head as f64 / 255.0;
    let tail_ratio = (tail as f64 / 255.0).min(1.0 - head_ratio);
    let out = head_tail(text, cap, head_ratio, tail_ratio, "FILE.md");
    let chars: Vec<char> = text.chars().collect();
    let out_len = out.text.chars().count();
    assert!(out_len <= cap || !out.truncated && out_len == chars.len(), "{out_len} chars over the cap {cap}");
    assert_eq!(out.raw_chars, chars.len());
    if !out.truncated {
        assert_eq!(out.text, text);
        return;
    }
    assert!(out_len <= cap);
    let head: String = chars[..out.head_chars].iter().collect();
    let tail: String = chars[chars.len() - out.tail_chars..].iter().collect();
    assert!(out.text.starts_with(&head), "head not kept exactly");
    assert!(out.text.ends_with(&tail) || out.tail_chars == 0, "tail not kept exactly");
    assert!(out.head_chars + out.tail_chars < chars.len());
});
