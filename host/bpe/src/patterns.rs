//! tiktoken's pre-split patterns, as proem runs them (see [`super::split`]):
//! compiled into DFAs by `build.rs`, which includes this file too.

/// The pattern whose match ends with one character too many: `\s+\s`,
/// standing for `\s+(?!\S)` before a non-space.
pub const GIVES_BACK_ONE: usize = 1;

/// o200k_base's alternatives, as tiktoken-rs writes them, in its order.
pub const O200K: [&str; 3] = [
    concat!(
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"|\p{N}{1,3}",
        r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"|\s*[\r\n]+",
        // `\s+(?!\S)` at the end of the text:
        r"|\s+$",
    ),
    // `\s+(?!\S)` before a non-space, with its last character given back:
    r"\s+\s",
    r"\s+",
];

/// cl100k_base's alternatives (tiktoken-rs's variant of the pattern).
pub const CL100K: [&str; 3] = [
    concat!(
        r"'(?i:[sdmt]|ll|ve|re)",
        r"|[^\r\n\p{L}\p{N}]?\p{L}+",
        r"|\p{N}{1,3}",
        r"| ?[^\s\p{L}\p{N}]+[\r\n]*",
        r"|\s+$",
        r"|\s*[\r\n]",
    ),
    r"\s+\s",
    r"\s",
];
