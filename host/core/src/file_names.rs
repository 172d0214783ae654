//! The names of the files proem reads from an agent's workspace by itself,
//! and the one spelling each is known by.

use std::borrow::Cow;

/// The standard files, in load order.
pub const STANDARD_FILES: [&str; 8] =
    ["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "BOOTSTRAP.md", "MEMORY.md"];

/// The standard files that change per turn and go below the boundary
/// (BOOTSTRAP.md too: it is deleted after onboarding, and above the
/// boundary it would cost every operator a cache miss that day).
pub const PER_TURN_FILES: [&str; 3] = ["USER.md", "HEARTBEAT.md", "BOOTSTRAP.md"];

/// GoClaw's further workspace files, read after the standard ones when
/// present (no row in the report when absent): the core and task rules
/// its minimal and task modes keep instead of AGENTS.md
/// (`[bootstrap.mode_files]`), the predefined user rules, capabilities and
/// indexed memory.
pub const OPTIONAL_FILES: [&str; 5] =
    ["AGENTS_CORE.md", "AGENTS_TASK.md", "USER_PREDEFINED.md", "CAPABILITIES.md", "MEMORY.json"];

/// The lower-case alternative name of MEMORY.md, read when MEMORY.md is
/// missing (and then shown under its own name).
pub const MEMORY_ALTERNATIVE: &str = "memory.md";

/// The name a bootstrap file is known by. Surrounding invisible characters
/// and whitespace, empty and `.` path segments are dropped; a name that
/// then reads as a standard or optional file, ignoring case and
/// compatibility forms (NFKC: `ＵＳＥＲ.md`), is that file's own name. Two
/// names a filesystem or a model could take for one file are one name, so
/// a file is never injected twice and a per-turn file (`user.md `) keeps
/// its place below the boundary, wherever the name came from (`[bootstrap]`
/// lists, a bootstrap hook's answer).
pub fn canonical_name(name: &str) -> Cow<'_, str> {
    if is_known(name) {
        return Cow::Borrowed(name);
    }
    let trimmed = name.trim_matches(crate::text::is_invisible);
    let path = if trimmed.split('/').any(|part| part.is_empty() || part == ".") {
        Cow::Owned(trimmed.split('/').filter(|part| !part.is_empty() && *part != ".").collect::<Vec<_>>().join("/"))
    } else {
        Cow::Borrowed(trimmed)
    };
    let folded: String = {
        use unicode_normalization::UnicodeNormalization;
        path.nfkc().collect()
    };
    let known = STANDARD_FILES.iter().chain(OPTIONAL_FILES.iter());
    match known.clone().chain([&MEMORY_ALTERNATIVE]).find(|k| **k == folded) {
        Some(exact) => Cow::Borrowed(exact),
        None => match known.clone().find(|k| k.eq_ignore_ascii_case(&folded)) {
            Some(standard) => Cow::Borrowed(standard),
            None if path.len() == name.len() => Cow::Borrowed(name),
            None => Cow::Owned(path.into_owned()),
        },
    }
}

/// Whether `name` is exactly a name the loader reads by itself.
fn is_known(name: &str) -> bool {
    name == MEMORY_ALTERNATIVE || STANDARD_FILES.contains(&name) || OPTIONAL_FILES.contains(&name)
}

/// The standard files rendered below the cache boundary: they change per
/// turn, so nothing above it may see them under any name.
pub fn per_turn_names() -> impl Iterator<Item = &'static str> {
    PER_TURN_FILES.into_iter()
}

/// Whether a file name may name a per-turn file on some filesystem: equal
/// to one ignoring case (as a case-insensitive filesystem compares, by
/// Unicode case mapping), surrounding white space and trailing dots (which
/// Windows drops).
pub fn is_per_turn_name(name: &str) -> bool {
    let trimmed = name.trim_start().trim_end_matches(|c: char| c == '.' || c.is_whitespace());
    if trimmed.is_empty() {
        return false;
    }
    let (upper, lower) = (trimmed.to_uppercase(), trimmed.to_lowercase());
    per_turn_names().any(|n| upper == n.to_uppercase() || lower == n.to_lowercase())
}
