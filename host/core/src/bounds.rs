//! The accepted range of every number proem takes from outside: config
//! keys, command-line flags and request fields.
//!
//! A size, budget, count or time from outside is checked against its range
//! where it enters (config load, flag parsing, request parsing), and the
//! error names the key or flag and the range. The ranges are chosen so that
//! the arithmetic proem does on these numbers (sums of a few of them, `+ 1`,
//! a few multiplications by small constants, milliseconds to a `Duration`
//! added to an `Instant`) cannot overflow: every maximum is at most 2^32.
//! The arithmetic itself is saturating where a library caller could pass an
//! unchecked value, so neither line of defence alone has to be perfect.

/// One number proem takes from outside and the values it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Its name where it is set: `budget.tokens`, `--budget`, `budget`.
    pub name: &'static str,
    /// The smallest value accepted.
    pub min: u64,
    /// The largest value accepted.
    pub max: u64,
    /// What it counts, for messages: `tokens`, `bytes`, `ms`.
    pub unit: &'static str,
}

/// The largest token budget (and context window, reserve, skills cap):
/// far over any model's context, well inside every integer type used.
pub const MAX_TOKENS: u64 = 1_000_000_000;
/// The largest character cap on files.
pub const MAX_CHARS: u64 = 1_000_000_000;
/// The largest `[bootstrap] max_file_bytes`: 1 GiB.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

impl Bound {
    /// `value` if it is within the range, else a message naming the range
    /// (the caller adds where the value came from).
    pub fn check(&self, value: u64) -> Result<u64, String> {
        if (self.min..=self.max).contains(&value) {
            Ok(value)
        } else {
            Err(self.outside(&value.to_string()))
        }
    }

    /// [`Bound::check`] for a `usize`.
    pub fn check_usize(&self, value: usize) -> Result<usize, String> {
        self.check(u64::try_from(value).unwrap_or(u64::MAX)).map(|_| value)
    }

    /// Parses a command-line value: a whole number within the range.
    pub fn parse_usize(&self, text: &str) -> Result<usize, String> {
        let value: u64 = text
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a whole number {}..={} ({})", self.min, self.max, self.unit))?;
        self.check(value)?;
        usize::try_from(value).map_err(|_| self.outside(text))
    }

    /// [`Bound::parse_usize`] for a `u64`.
    pub fn parse_u64(&self, text: &str) -> Result<u64, String> {
        self.parse_usize(text).map(|v| v as u64)
    }

    fn outside(&self, value: &str) -> String {
        format!("{value} is outside {}..={} ({})", self.min, self.max, self.unit)
    }
}

/// `[budget] tokens`, `--budget`, the request's `budget`.
pub const BUDGET_TOKENS: Bound = Bound { name: "budget.tokens", min: 1, max: MAX_TOKENS, unit: "tokens" };
/// `[budget] context_window`.
pub const CONTEXT_WINDOW: Bound = Bound { name: "budget.context_window", min: 1, max: MAX_TOKENS, unit: "tokens" };
/// `[budget] per_file_chars`.
pub const PER_FILE_CHARS: Bound = Bound { name: "budget.per_file_chars", min: 0, max: MAX_CHARS, unit: "characters" };
/// `[budget] total_file_chars`.
pub const TOTAL_FILE_CHARS: Bound =
    Bound { name: "budget.total_file_chars", min: 0, max: MAX_CHARS, unit: "characters" };
/// `[budget] dynamic_reserve`.
pub const DYNAMIC_RESERVE: Bound = Bound { name: "budget.dynamic_reserve", min: 0, max: MAX_TOKENS, unit: "tokens" };
/// `[bootstrap] max_file_bytes`.
pub const MAX_FILE_BYTES_KEY: Bound =
    Bound { name: "bootstrap.max_file_bytes", min: 0, max: MAX_FILE_BYTES, unit: "bytes" };
/// `[skills] max_tokens`.
pub const SKILLS_MAX_TOKENS: Bound = Bound { name: "skills.max_tokens", min: 0, max: MAX_TOKENS, unit: "tokens" };
/// `[tools] mcp_inline_max`.
pub const MCP_INLINE_MAX: Bound = Bound { name: "tools.mcp_inline_max", min: 0, max: 1_000_000, unit: "tools" };
/// `[[plugins]] memory_mib`.
pub const PLUGIN_MEMORY_MIB: Bound = Bound { name: "memory_mib", min: 1, max: 4096, unit: "MiB" };
/// `[[plugins]] deadline_ms`.
pub const PLUGIN_DEADLINE_MS: Bound = Bound { name: "deadline_ms", min: 1, max: 60_000, unit: "ms" };
/// `[[plugins]] output_kib`.
pub const PLUGIN_OUTPUT_KIB: Bound = Bound { name: "output_kib", min: 1, max: 1024, unit: "KiB" };

/// `proem serve --concurrent`.
pub const SERVE_CONCURRENT: Bound = Bound { name: "--concurrent", min: 1, max: 4096, unit: "builds" };
/// `proem serve --queue`.
pub const SERVE_QUEUE: Bound = Bound { name: "--queue", min: 0, max: 1_000_000, unit: "requests" };
/// `proem serve --max-body`: 1 GiB at most.
pub const SERVE_MAX_BODY: Bound = Bound { name: "--max-body", min: 1, max: 1 << 30, unit: "bytes" };
/// `proem serve --timeout-ms`: a day at most.
pub const SERVE_TIMEOUT_MS: Bound = Bound { name: "--timeout-ms", min: 1, max: 86_400_000, unit: "ms" };

/// `proem serve --max-connections`.
pub const SERVE_MAX_CONNECTIONS: Bound = Bound { name: "--max-connections", min: 1, max: 1 << 20, unit: "connections" };
/// `proem serve --header-timeout-ms`: a day at most.
pub const SERVE_HEADER_TIMEOUT_MS: Bound = Bound { name: "--header-timeout-ms", min: 1, max: 86_400_000, unit: "ms" };
/// `proem serve --max-header-bytes`: 8 KiB to 16 MiB.
pub const SERVE_MAX_HEADER_BYTES: Bound = Bound { name: "--max-header-bytes", min: 8192, max: 16 << 20, unit: "bytes" };

/// Every bound, for documentation and tests.
pub const ALL: [Bound; 18] = [
    BUDGET_TOKENS,
    CONTEXT_WINDOW,
    PER_FILE_CHARS,
    TOTAL_FILE_CHARS,
    DYNAMIC_RESERVE,
    MAX_FILE_BYTES_KEY,
    SKILLS_MAX_TOKENS,
    MCP_INLINE_MAX,
    PLUGIN_MEMORY_MIB,
    PLUGIN_DEADLINE_MS,
    PLUGIN_OUTPUT_KIB,
    SERVE_CONCURRENT,
    SERVE_QUEUE,
    SERVE_MAX_BODY,
    SERVE_TIMEOUT_MS,
    SERVE_MAX_CONNECTIONS,
    SERVE_HEADER_TIMEOUT_MS,
    SERVE_MAX_HEADER_BYTES,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_maximum_leaves_room_for_the_arithmetic_done_on_it() {
        for b in ALL {
            assert!(b.min <= b.max && b.max <= 1 << 32, "{b:?}");
            assert_eq!(b.check(b.max), Ok(b.max));
            assert!(b.check(b.max + 1).unwrap_err().contains(&format!("{}..={}", b.min, b.max)));
            if b.min > 0 {
                assert!(b.check(b.min - 1).is_err());
            }
        }
    }

    #[test]
    fn flags_parse_whole_numbers_in_range_only() {
        assert_eq!(BUDGET_TOKENS.parse_usize("24000"), Ok(24_000));
        for bad in ["0", "-1", "1.5", "", "18446744073709551615", "18446744073709551616", "1e9", "0x10"] {
            let err = BUDGET_TOKENS.parse_usize(bad).unwrap_err();
            assert!(err.contains("1..=1000000000"), "{bad:?}: {err}");
        }
    }
}
