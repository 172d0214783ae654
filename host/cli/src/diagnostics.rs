//! What `proem build` says on stderr: one line per diagnostic of the build
//! at warning level or above, read off the report's diagnostics list (the
//! one source: whatever a build reports as a problem, the command line
//! prints, with no list of its own to fall behind).

use proem_core::report::{Built, Diagnostic, Level};

/// The most characters of one diagnostic's message on stderr (a plugin's
/// stderr or log line can be long; the report keeps it whole).
pub const MAX_LINE_CHARS: usize = 2000;

/// Whether a diagnostic is a problem the operator must see: every level
/// from warning up (an `error` diagnostic is a failure the build survived).
pub fn is_problem(d: &Diagnostic) -> bool {
    d.level >= Level::Warn
}

/// The stderr lines of a build: one per problem, in report order.
pub fn stderr_lines(built: &Built) -> Vec<String> {
    built.diagnostics.iter().filter(|d| is_problem(d)).map(line).collect()
}

/// One problem as one readable line: `proem: warning: MESSAGE [CODE]`,
/// then what to do when the code has a known fix. The message is made one
/// line with no control characters (plugin output reaches it, and a
/// terminal must not be driven by it).
pub fn line(d: &Diagnostic) -> String {
    let message = proem_core::text::one_line(&d.message, MAX_LINE_CHARS);
    let code = proem_core::text::one_line(&d.code, 80);
    match fix(&d.code) {
        Some(fix) => format!("proem: warning: {message} [{code}] (fix: {fix})"),
        None => format!("proem: warning: {message} [{code}]"),
    }
}

/// What to do about a diagnostic, by its code, when the message does not
/// say it already (`plugin_load_failed` and `plugin_grant_missing` do).
pub fn fix(code: &str) -> Option<&'static str> {
    Some(match code {
        "plugin_trap" | "plugin_error" | "plugin_failed" => {
            "run `proem plugins AGENT_DIR` to see each hook on a sample turn; fix the plugin or its config, or remove it"
        }
        "plugin_timeout" => "raise deadline_ms in its [[plugins]] entry, or fix the plugin",
        "plugin_memory_limit" => "raise memory_mib in its [[plugins]] entry, or fix the plugin",
        "file_truncated" | "budget_file_shrunk" => {
            "shorten the file, or raise [budget] per_file_chars / total_file_chars / tokens"
        }
        "file_too_large" => "shorten the file: proem does not read a file that large",
        "budget_section_dropped" | "budget_skills_dropped" | "budget_extra_dropped" | "budget_cut_stable" => {
            "raise [budget] tokens (or --budget), or shorten what the prompt carries"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever a diagnostic says, it is one line on stderr with no
        /// control character, and it names its code.
        #[test]
        fn every_problem_is_one_line_without_control_characters(
            message in any::<String>(),
            code in "[a-z_]{1,30}",
            level in prop_oneof![Just(Level::Info), Just(Level::Warn), Just(Level::Error)],
        ) {
            let d = Diagnostic { level, code: code.clone(), message };
            let shown = line(&d);
            prop_assert!(!shown.contains('\n') && !shown.chars().any(char::is_control), "{:?}", shown);
            prop_assert!(shown.starts_with("proem: warning: "));
            let code_shown = format!("[{code}]");
            prop_assert!(shown.contains(&code_shown));
            prop_assert_eq!(is_problem(&d), level != Level::Info);
        }
    }
}
