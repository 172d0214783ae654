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
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
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
    }

    #[test]
    fn matching_is_sorted_and_unique() {
        let tools = ["i2c_scan", "gpio_write", "shell", "gpio_read", "gpio_read"];
        assert_eq!(matching_tools(&["gpio_*", "i2c_*"], tools), ["gpio_read", "gpio_write", "i2c_scan"]);
    }
}
