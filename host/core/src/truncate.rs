//! Head/tail truncation of one file to a character cap.
//!
//! The result never exceeds the cap (marker included), never splits a
//! character, keeps the first `h` and last `t` characters of the original
//! exactly, and says in its marker what was kept of how much. When the cap is
//! too small for the full marker a compact one is used; when it is too small
//! even for that, the head alone is kept and ends with `…`.

use crate::text::char_len;

/// Below this many content characters the full marker is not worth its size.
const MIN_CONTENT_FOR_FULL_MARKER: usize = 32;

/// What truncation kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated {
    /// The text to inject.
    pub text: String,
    /// Characters in the original.
    pub raw_chars: usize,
    /// Characters kept from the start.
    pub head_chars: usize,
    /// Characters kept from the end.
    pub tail_chars: usize,
    /// Whether anything was cut.
    pub truncated: bool,
}

/// Cuts `text` to at most `cap` characters, keeping `head_ratio` of the cap
/// from the start and `tail_ratio` from the end (scaled down to make room for
/// the marker). `label` names the file in the marker.
pub fn head_tail(text: &str, cap: usize, head_ratio: f64, tail_ratio: f64, label: &str) -> Truncated {
    let raw = char_len(text);
    if raw <= cap {
        return Truncated { text: text.to_string(), raw_chars: raw, head_chars: raw, tail_chars: 0, truncated: false };
    }
    // A head-only cut (no tail kept, ZeroClaw's) says where it stopped; a
    // head-and-tail cut says what it kept of each end.
    let head_only = tail_ratio <= 0.0;
    let full = |h: usize, t: usize| {
        if head_only {
            format!("\n\n[… {label}: cut after {h} of {raw} characters; read the file for the rest …]\n")
        } else {
            format!("\n\n[… {label}: kept the first {h} and last {t} of {raw} characters; read the file for the part cut here …]\n\n")
        }
    };
    let compact =
        |h: usize, t: usize| if head_only { format!("[…{h}/{raw}]") } else { format!("[…{h}+{t}/{raw}]") };

    if let Some((h, t)) = fit(cap, head_ratio, tail_ratio, &full) {
        if h.saturating_add(t) >= MIN_CONTENT_FOR_FULL_MARKER {
            return assemble(text, raw, h, t, &full(h, t));
        }
    }
    if let Some((h, t)) = fit(cap, head_ratio, tail_ratio, &compact) {
        if h.saturating_add(t) > 0 {
            return assemble(text, raw, h, t, &compact(h, t));
        }
    }
    // The cap is smaller than any marker: keep what fits of the head.
    let (kept, head) = if cap == 0 {
        (String::new(), 0)
    } else {
        let head = cap - 1;
        (format!("{}…", take_head(text, head)), head)
    };
    Truncated { text: kept, raw_chars: raw, head_chars: head, tail_chars: 0, truncated: true }
}

/// Head and tail sizes such that head + tail + marker ≤ cap, or `None`.
fn fit(
    cap: usize,
    head_ratio: f64,
    tail_ratio: f64,
    marker: &dyn Fn(usize, usize) -> String,
) -> Option<(usize, usize)> {
    let ratio_sum = head_ratio + tail_ratio;
    if ratio_sum <= 0.0 {
        return None;
    }
    let mut h = (cap as f64 * head_ratio).floor() as usize;
    let mut t = (cap as f64 * tail_ratio).floor() as usize;
    for _ in 0..4 {
        let m = char_len(&marker(h, t));
        if h.saturating_add(t).saturating_add(m) <= cap {
            return Some((h, t));
        }
        let avail = cap.checked_sub(m)?;
        h = (avail as f64 * head_ratio / ratio_sum).floor() as usize;
        t = (avail as f64 * tail_ratio / ratio_sum).floor() as usize;
        h = h.min(avail);
        t = t.min(avail - h);
    }
    None
}

fn assemble(text: &str, raw: usize, h: usize, t: usize, marker: &str) -> Truncated {
    let (head, tail) = (take_head(text, h), take_tail(text, raw, t));
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len());
    out.push_str(head);
    out.push_str(marker);
    out.push_str(tail);
    Truncated { text: out, raw_chars: raw, head_chars: h, tail_chars: t, truncated: true }
}

/// The first `n` characters.
pub fn take_head(text: &str, n: usize) -> &str {
    &text[..char_offset(text, n)]
}

/// The last `n` characters of a text of `len` characters.
pub fn take_tail(text: &str, len: usize, n: usize) -> &str {
    if n == 0 || n > len {
        return if n == 0 { "" } else { text };
    }
    &text[char_offset(text, len - n)..]
}

/// The byte offset of character `n` (the text's length when it has fewer).
/// Counts whole 64-byte blocks at a time (a byte starts a character unless
/// it is a UTF-8 continuation byte), then finishes one byte at a time.
fn char_offset(text: &str, n: usize) -> usize {
    const BLOCK: usize = 64;
    let bytes = text.as_bytes();
    let mut offset = 0;
    let mut seen = 0;
    for block in bytes.chunks_exact(BLOCK) {
        let block: &[u8; BLOCK] = block.try_into().expect("chunks_exact gives whole blocks");
        // A u8 sum over a fixed-size block compiles to vector adds.
        let in_block = block.iter().fold(0u8, |sum, &b| sum + ((b as i8) >= -0x40) as u8) as usize;
        // Stop at the block holding the start of character n.
        if seen + in_block > n {
            break;
        }
        seen += in_block;
        offset += BLOCK;
    }
    for (i, &b) in bytes[offset..].iter().enumerate() {
        if (b as i8) >= -0x40 {
            if seen == n {
                return offset + i;
            }
            seen += 1;
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, cap: usize) -> Truncated {
        let t = head_tail(text, cap, 0.7, 0.2, "AGENTS.md");
        assert!(char_len(&t.text) <= cap, "cap {cap} exceeded: {} chars", char_len(&t.text));
        if t.truncated {
            assert!(t.text.starts_with(take_head(text, t.head_chars)));
            assert!(t.text.ends_with(take_tail(text, char_len(text), t.tail_chars)));
        }
        t
    }

    #[test]
    fn char_offsets_match_char_indices() {
        let texts =
            ["", "abc", &"é".repeat(100), &"a👩‍👧b".repeat(40), &format!("{}ü{}", "x".repeat(63), "y".repeat(130))];
        for text in texts {
            let len = char_len(text);
            for n in 0..=len + 2 {
                let naive = text.char_indices().nth(n).map(|(i, _)| i).unwrap_or(text.len());
                assert_eq!(char_offset(text, n), naive, "{n} of {text:?}");
                let tail: String = text.chars().skip(len.saturating_sub(n)).collect();
                assert_eq!(take_tail(text, len, n), if n == 0 { "" } else { tail.as_str() });
            }
        }
    }

    #[test]
    fn exactly_at_cap_is_untouched() {
        let text = "é".repeat(100);
        let t = check(&text, 100);
        assert!(!t.truncated);
        assert_eq!(t.text, text);
    }

    #[test]
    fn one_over_cap_with_multibyte_chars() {
        let text = "é".repeat(20_001);
        let t = check(&text, 20_000);
        assert!(t.truncated);
        assert!(t.text.contains("kept the first") && t.text.contains("of 20001 characters"));
        // Roughly 70/20 of the cap, minus room for the marker.
        assert!(t.head_chars > 13_000 && t.head_chars <= 14_000, "{}", t.head_chars);
        assert!(t.tail_chars > 3_500 && t.tail_chars <= 4_000, "{}", t.tail_chars);
    }

    #[test]
    fn small_caps_use_the_compact_marker_then_head_only() {
        let text: String = "日本語のテキスト".repeat(50);
        let t = check(&text, 40);
        assert!(t.truncated && t.text.contains("[…") && t.text.contains("/400]"), "{}", t.text);
        for cap in 0..40 {
            check(&text, cap);
        }
        assert_eq!(check(&text, 0).text, "");
        assert_eq!(check(&text, 1).text, "…");
        assert_eq!(check(&text, 3).text, "日本…");
    }

    #[test]
    fn every_cap_respects_the_bound() {
        let text: String = (0..3000).map(|i| char::from_u32(0x41 + (i % 2000)).unwrap_or('x')).collect();
        for cap in (0..3000).step_by(7) {
            check(&text, cap);
        }
    }

    proptest::proptest! {
        /// Any cap, even past the text's length or at `usize::MAX`, and any
        /// ratios a library caller may pass (negative, over 1, NaN, infinite):
        /// no overflow, never over the cap.
        #[test]
        fn any_cap_and_ratios_stay_within_the_cap(
            text in "[a-zé日 ]{0,300}",
            cap in proptest::prop_oneof![0usize..400, proptest::num::usize::ANY, proptest::strategy::Just(usize::MAX)],
            head in proptest::num::f64::ANY,
            tail in proptest::prop_oneof![proptest::num::f64::ANY, 0.0..1.0],
        ) {
            let t = head_tail(&text, cap, head, tail, "X");
            proptest::prop_assert!(char_len(&t.text) <= cap.max(char_len(&text)));
            if t.truncated {
                proptest::prop_assert!(char_len(&t.text) <= cap);
            }
        }
    }

    #[test]
    fn tail_ratio_zero_keeps_head_only_and_says_where_it_stopped() {
        let t = head_tail(&"a".repeat(1000), 200, 0.9, 0.0, "X");
        assert_eq!(t.tail_chars, 0);
        assert!(t.head_chars > 50);
        assert!(t.text.contains(&format!("X: cut after {} of 1000 characters", t.head_chars)), "{}", t.text);
        assert!(!t.text.contains("last 0"), "{}", t.text);
        assert!(head_tail(&"a".repeat(1000), 12, 1.0, 0.0, "X").text.contains("/1000]"));
    }
}
