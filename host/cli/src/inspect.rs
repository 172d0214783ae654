//! `proem inspect`: the build report as tables for people.

use proem_core::report::{Built, Level};
use proem_core::section::Zone;
use std::fmt::Write;

/// The order of the sections table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// As in the prompt, with the cache boundary drawn where it falls
    /// (files in load order).
    Prompt,
    /// Largest first (`--by-size`), sections and files.
    BySize,
}

/// The width diagnostics are wrapped to: `COLUMNS` when it is a width
/// between 40 and 1000, else 100.
pub fn width() -> usize {
    std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse().ok()).filter(|w| (40..=1000).contains(w)).unwrap_or(100)
}

/// Renders the report: totals, sections (then those left out, with why),
/// files, plugins and diagnostics (wrapped to [`width`]).
pub fn table(built: &Built, order: Order) -> String {
    table_at(built, order, width())
}

/// [`table`] with the diagnostics wrapped to `width` columns.
pub fn table_at(built: &Built, order: Order, width: usize) -> String {
    let mut out = String::new();
    let t = &built.tokens;
    let _ = writeln!(out, "mode {}  tokenizer {}  budget {} tokens", built.mode, built.tokenizer, t.budget);
    let _ = writeln!(
        out,
        "total {} tokens ({}% of budget)  stable {} tokens / {} chars  dynamic {} tokens / {} chars",
        t.total,
        t.total.saturating_mul(100) / t.budget.max(1),
        t.stable,
        built.stable.chars().count(),
        t.dynamic,
        built.dynamic.chars().count()
    );
    if t.tool_schemas > 0 {
        let _ = writeln!(out, "tool schemas sent natively beside the prompt {} tokens", t.tool_schemas);
    }
    let _ = writeln!(out, "stable hash {}", built.stable_hash);
    out.push('\n');
    out.push_str(&sections_table(built, order));
    out.push('\n');
    out.push_str(&files_table(built, order));
    if !built.plugins.is_empty() {
        let rows: Vec<Vec<String>> = built
            .plugins
            .iter()
            .map(|p| {
                let elapsed = if p.remembered { "remembered".into() } else { format!("{} µs", p.elapsed_us) };
                vec![p.id.clone(), p.status.to_string(), elapsed]
            })
            .collect();
        out.push('\n');
        out.push_str(&grid(&["PLUGIN", "STATUS", "ELAPSED"], &rows, &[2], None));
    }
    if !built.diagnostics.is_empty() {
        out.push_str("\ndiagnostics:\n");
        for d in &built.diagnostics {
            let level = match d.level {
                Level::Info => "info",
                Level::Warn => "warn",
                Level::Error => "error",
            };
            let text = format!("{}: {}", d.code, proem_core::text::one_line(&d.message, 4000));
            for line in wrap(&text, width, &format!("  {level:<5} "), DIAGNOSTIC_INDENT) {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out
}

/// How far a diagnostic's continuation lines are indented: under its code.
pub const DIAGNOSTIC_INDENT: usize = 8;

/// The sections, in `order`, then each section of the layout that is not in
/// the prompt with why.
fn sections_table(built: &Built, order: Order) -> String {
    let mut sections: Vec<_> = built.sections.iter().collect();
    if order == Order::BySize {
        sections.sort_by(|a, b| b.chars.cmp(&a.chars).then(a.id.cmp(&b.id)));
    }
    let mut rows: Vec<Vec<String>> = sections
        .iter()
        .map(|s| {
            let status = if s.truncated { "truncated" } else { "-" };
            vec![
                s.id.clone(),
                s.chars.to_string(),
                s.tokens.to_string(),
                s.zone.as_str().into(),
                s.source.clone(),
                status.into(),
            ]
        })
        .collect();
    // In prompt order the boundary falls before the first dynamic section
    // (after the last row when there is none).
    let boundary = (order == Order::Prompt)
        .then(|| sections.iter().position(|s| s.zone == Zone::Dynamic).unwrap_or(sections.len()));
    for l in &built.left_out {
        rows.push(vec![
            l.id.clone(),
            "-".into(),
            "-".into(),
            "-".into(),
            l.source.clone(),
            format!("left out: {}", l.why),
        ]);
    }
    let rule = boundary.map(|at| (at, "cache boundary"));
    grid(&["SECTION", "CHARS", "TOKENS", "ZONE", "SOURCE", "STATUS"], &rows, &[1, 2], rule)
}

/// The files, in load order (or largest first), each with what became of
/// it: `ok`, `truncated`, or why it is not in the prompt.
fn files_table(built: &Built, order: Order) -> String {
    let mut files: Vec<(usize, &proem_core::report::FileReport)> = built.files.iter().enumerate().collect();
    if order == Order::BySize {
        files.sort_by(|(_, a), (_, b)| {
            b.injected_chars.cmp(&a.injected_chars).then(b.raw_chars.cmp(&a.raw_chars)).then(a.name.cmp(&b.name))
        });
    }
    let rows: Vec<Vec<String>> = files
        .iter()
        .map(|(i, f)| {
            let detail = built.file_details.get(*i).cloned().unwrap_or_default();
            let zone = detail.zone.map(|z| z.as_str()).unwrap_or("-");
            let status = match (&detail.why_not_shown, f.missing, f.truncated, detail.zone) {
                (Some(why), _, _, _) => format!("left out: {why}"),
                (None, true, _, _) => "left out: missing".into(),
                (None, false, true, _) => "truncated".into(),
                (None, false, false, None) => "left out".into(),
                (None, false, false, Some(_)) => "ok".into(),
            };
            vec![
                f.name.clone(),
                f.raw_chars.to_string(),
                f.injected_chars.to_string(),
                detail.tokens.to_string(),
                zone.into(),
                detail.source,
                status,
            ]
        })
        .collect();
    grid(&["FILE", "RAW CHARS", "INJECTED", "TOKENS", "ZONE", "SOURCE", "STATUS"], &rows, &[1, 2, 3], None)
}

/// Wraps `text` at spaces to lines of at most `width` characters: the
/// first line starts with `first`, the others with `indent` spaces. A word
/// longer than a line has room for stays whole on a line of its own (the
/// only way a line is over `width`).
pub fn wrap(text: &str, width: usize, first: &str, indent: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut line_chars = first.chars().count();
    let mut empty = true;
    let pad = " ".repeat(indent);
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let chars = word.chars().count();
        if !empty && line_chars.saturating_add(1).saturating_add(chars) > width {
            lines.push(std::mem::replace(&mut line, pad.clone()));
            line_chars = indent;
            empty = true;
        }
        if !empty {
            line.push(' ');
            line_chars += 1;
        }
        line.push_str(word);
        line_chars = line_chars.saturating_add(chars);
        empty = false;
    }
    lines.push(line);
    lines
}

/// A plain-text table; columns in `right` are right-aligned. `rule`
/// draws a labelled line across the table before row `at` (after the last
/// row when `at` is the row count).
fn grid(header: &[&str], rows: &[Vec<String>], right: &[usize], rule: Option<(usize, &str)>) -> String {
    // Cells come from the agent's folder (file names, proem.toml paths):
    // each on one line, with no control or invisible character.
    let cleaned: Vec<Vec<String>> =
        rows.iter().map(|row| row.iter().map(|cell| proem_core::text::one_line(cell, 1000)).collect()).collect();
    let rows = &cleaned;
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            if i > 0 {
                s.push_str("  ");
            }
            if right.contains(&i) {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        s.push('\n');
        s
    };
    let rule_line = |label: &str| {
        let total = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
        let head = format!("---- {label} ");
        let rest = total.saturating_sub(head.chars().count()).max(4);
        format!("{head}{}\n", "-".repeat(rest))
    };
    let mut out = line(header.to_vec());
    for (i, row) in rows.iter().enumerate() {
        if let Some((_, label)) = rule.filter(|(at, _)| *at == i) {
            out.push_str(&rule_line(label));
        }
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    if let Some((_, label)) = rule.filter(|(at, _)| *at >= rows.len()) {
        out.push_str(&rule_line(label));
    }
    out
}

/// What calling each plugin's hooks on a sample turn gave, by plugin id
/// ([`proem_core::plugin::PluginSet::probe_hooks`]).
pub type Probes = [(String, Vec<proem_core::plugin::set::HookProbe>)];

/// A plugin's failures on the sample turn: each declared hook that failed,
/// with why.
fn hook_failures<'p>(probes: &'p Probes, id: &str) -> Vec<(&'static str, &'p str)> {
    let Some((_, probes)) = probes.iter().find(|(p, _)| p == id) else { return Vec::new() };
    probes
        .iter()
        .filter(|p| p.declared)
        .filter_map(|p| p.answer.as_ref().err().map(|why| (p.hook.interface(), why.as_str())))
        .collect()
}

/// Text a plugin supplied (its version, capabilities, a failure's reason),
/// made one plain line: it must not drive the terminal.
fn plain(text: &str) -> String {
    proem_core::text::one_line(text, 1000)
}

/// `proem plugins`: one row per plugin with id, version, hooks, the
/// capabilities it asks for, what was granted, where it comes from, and its
/// status: `ok`, `load_failed`, or `failed` when a declared hook failed on
/// the sample turn of `probes` (each reason is printed below the table).
/// The second value names every plugin that is not ok.
pub fn plugins_table(set: &proem_core::plugin::PluginSet, probes: &Probes) -> (String, Vec<String>) {
    let mut rows = Vec::new();
    let mut problems = String::new();
    let mut failed = Vec::new();
    for p in set.plugins() {
        let granted = p.grants.names();
        let (version, hooks, asks) = match &p.state {
            Ok(ready) => (
                plain(&ready.info.version),
                ready.info.hooks(),
                if ready.info.capabilities.is_empty() {
                    "-".into()
                } else {
                    // A grant proem knows, asked for and not given, says so.
                    ready
                        .info
                        .capabilities
                        .iter()
                        .map(|c| {
                            let c = plain(c);
                            match proem_core::plugin::GRANT_NAMES.contains(&c.as_str())
                                && !granted.contains(&c.as_str())
                            {
                                true => format!("{c} (asked, not granted)"),
                                false => c,
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                },
            ),
            Err(why) => {
                let _ = writeln!(problems, "{}: {}", p.id, plain(why));
                ("?".into(), "?".into(), "?".into())
            }
        };
        let hook_failures = hook_failures(probes, &p.id);
        for (hook, why) in &hook_failures {
            let _ = writeln!(problems, "{}: the {hook} hook fails on a sample turn: {}", p.id, plain(why));
        }
        let status = match (p.state.is_ok(), hook_failures.is_empty()) {
            (false, _) => p.status().to_string(),
            (true, false) => {
                format!("failed ({})", hook_failures.iter().map(|(h, _)| *h).collect::<Vec<_>>().join(","))
            }
            (true, true) => p.status().to_string(),
        };
        if status != "ok" {
            failed.push(p.id.clone());
        }
        let grants = p.grants.names();
        rows.push(vec![
            p.id.clone(),
            version,
            hooks,
            asks,
            if grants.is_empty() { "-".into() } else { grants.join(",") },
            p.origin.clone(),
            format!("{status}{}", if p.required { " (required)" } else { "" }),
        ]);
    }
    if rows.is_empty() {
        return ("no plugins configured\n".into(), failed);
    }
    let mut out = grid(&["ID", "VERSION", "HOOKS", "ASKS FOR", "GRANTED", "SOURCE", "STATUS"], &rows, &[], None);
    if !problems.is_empty() {
        out.push('\n');
        out.push_str(&problems);
    }
    (out, failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// No wrapped line is wider than the width unless it holds one word
        /// too long for any line; the words come out whole and in order;
        /// every line after the first is indented.
        #[test]
        fn wrapped_lines_fit_unless_one_word_is_longer(
            words in proptest::collection::vec("[a-zA-Zé✓0-9:/._-]{1,60}", 0..60),
            width in 10usize..140,
            indent in 0usize..10,
        ) {
            let text = words.join(" ");
            let first = "  warn  ";
            let lines = wrap(&text, width, first, indent);
            prop_assert!(lines[0].starts_with(first));
            for (i, line) in lines.iter().enumerate() {
                let body = if i == 0 { &line[first.len()..] } else {
                    prop_assert!(line.starts_with(&" ".repeat(indent)), "{:?}", line);
                    &line[indent..]
                };
                let chars = line.chars().count();
                prop_assert!(chars <= width || !body.contains(' '), "line {} of {} chars over {}: {:?}", i, chars, width, line);
            }
            let rejoined: Vec<&str> = lines.iter().flat_map(|l| l.split(' ')).filter(|w| !w.is_empty() && *w != "warn").collect();
            let expected: Vec<&str> = words.iter().map(String::as_str).filter(|w| *w != "warn").collect();
            prop_assert_eq!(rejoined, expected);
        }
    }
}
