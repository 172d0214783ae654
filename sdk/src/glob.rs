//! Tool-name matching with `*` and `?` globs.

/// Whether `name` matches `pattern`, where `*` matches any run of characters
/// (including none) and `?` exactly one. Matching is case-sensitive, like
/// tool names themselves.
///
/// ```
/// use proem_sdk::glob_match;
/// assert!(glob_match("gpio_*", "gpio_write"));
/// assert!(!glob_match("gpio_*", "i2c_scan"));
/// ```
pub fn glob_match(pattern: &str, name: &str) -> bool {
    // Over bytes, without allocating (a plugin matches every tool against
    // every pattern on each call): literal bytes compare as their
    // characters do, and `?` and a retried `*` step over whole characters,
    // so every position taken in `name` is a character boundary.
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && p[pi] == b'?' {
            pi += 1;
            ni += char_len(n[ni]);
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if pi < p.len() && p[pi] == n[ni] {
            pi += 1;
            ni += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += char_len(n[mark]);
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// The length of the UTF-8 character whose first byte is `lead`.
fn char_len(lead: u8) -> usize {
    match lead {
        0xf0.. => 4,
        0xe0.. => 3,
        0xc0.. => 2,
        _ => 1,
    }
}

/// The tool names (sorted, deduplicated) that match any of `patterns`.
pub fn matching_tools<'a>(patterns: &[&str], tools: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut hits: Vec<&str> = tools.into_iter().filter(|t| patterns.iter().any(|p| glob_match(p, t))).collect();
    hits.sort_unstable();
    hits.dedup();
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("gpio_*", "gpio_read"));
        assert!(glob_match("gpio_*", "gpio_"));
        assert!(!glob_match("gpio_*", "GPIO_read"));
        assert!(glob_match("i2c_?can", "i2c_scan"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("pico_*", "rpi_pico"));
        assert!(glob_match("*_read", "hardware_memory_read"));
        assert!(glob_match("a*b*c", "axxbyyc") && !glob_match("a*b*c", "axxbyy"));
        // A retried `*` steps over a whole character: restarting inside 😀
        // would let `??` take two of its bytes as two characters.
        assert!(!glob_match("*??b*", "😀bz"));
        assert!(glob_match("*??b*", "a😀bz"));
    }

    /// The definition, character by character: `*` takes any run, `?` one
    /// character, anything else itself.
    fn reference(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|i| reference(rest, &n[i..])),
            Some(('?', rest)) => !n.is_empty() && reference(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && reference(rest, &n[1..]),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// Patterns and names over a small alphabet with multi-byte
        /// characters (two, three and four bytes, some sharing their first
        /// bytes), so `*` and `?` meet characters of every length.
        #[test]
        fn globs_match_as_the_definition_says(
            pattern in "[ab*?é😀]{0,6}",
            name in "[abé😀]{0,6}",
        ) {
            let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
            proptest::prop_assert_eq!(glob_match(&pattern, &name), reference(&p, &n), "{:?} against {:?}", pattern, name);
        }
    }

    #[test]
    fn matching_is_sorted_and_unique() {
        let tools = ["i2c_scan", "gpio_write", "shell", "gpio_read", "gpio_read"];
        assert_eq!(matching_tools(&["gpio_*", "i2c_*"], tools), ["gpio_read", "gpio_write", "i2c_scan"]);
    }
}
