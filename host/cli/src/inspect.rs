//! `proem inspect`: the build report as tables for people.

use proem_core::report::{Built, Level};
use std::fmt::Write;

/// Renders the report: totals, sections and files (largest first), plugins
/// and diagnostics.
pub fn table(built: &Built) -> String {
    let mut out = String::new();
    let t = &built.tokens;
    let _ = writeln!(out, "mode {}  tokenizer {}  budget {} tokens", built.mode, built.tokenizer, t.budget);
    let _ = writeln!(
        out,
        "total {} tokens ({}% of budget)  stable {} tokens / {} chars  dynamic {} tokens / {} chars",
        t.total,
        t.total * 100 / t.budget.max(1),
        t.stable,
        built.stable.chars().count(),
        t.dynamic,
        built.dynamic.chars().count()
    );
    if t.tool_schemas > 0 {
        let _ = writeln!(out, "tool schemas sent natively beside the prompt {} tokens", t.tool_schemas);
    }
    let _ = writeln!(out, "stable hash {}", built.stable_hash);

    let mut sections: Vec<_> = built.sections.iter().collect();
    sections.sort_by(|a, b| b.chars.cmp(&a.chars).then(a.id.cmp(&b.id)));
    let rows: Vec<Vec<String>> = sections
        .iter()
        .map(|s| {
            vec![
                s.id.clone(),
                s.chars.to_string(),
                s.tokens.to_string(),
                s.zone.as_str().into(),
                s.source.clone(),
                yes(s.truncated),
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&grid(&["SECTION", "CHARS", "TOKENS", "ZONE", "SOURCE", "TRUNCATED"], &rows, &[1, 2]));

    let mut files: Vec<(usize, &proem_core::report::FileReport)> = built.files.iter().enumerate().collect();
    files.sort_by(|(_, a), (_, b)| {
        b.injected_chars.cmp(&a.injected_chars).then(b.raw_chars.cmp(&a.raw_chars)).then(a.name.cmp(&b.name))
    });
    let rows: Vec<Vec<String>> = files
        .iter()
        .map(|(i, f)| {
            let detail = built.file_details.get(*i).cloned().unwrap_or_default();
            let zone = detail.zone.map(|z| z.as_str()).unwrap_or("-");
            let status = if f.missing {
                "missing"
            } else if f.truncated {
                "truncated"
            } else if detail.zone.is_none() {
                "not shown"
            } else {
                "ok"
            };
            vec![
                f.name.clone(),
                f.raw_chars.to_string(),
                f.injected_chars.to_string(),
                detail.tokens.to_string(),
                zone.into(),
                detail.source,
                status.into(),
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&grid(&["FILE", "RAW CHARS", "INJECTED", "TOKENS", "ZONE", "SOURCE", "STATUS"], &rows, &[1, 2, 3]));

    if !built.plugins.is_empty() {
        let rows: Vec<Vec<String>> =
            built.plugins.iter().map(|p| vec![p.id.clone(), p.status.to_string(), p.elapsed_us.to_string()]).collect();
        out.push('\n');
        out.push_str(&grid(&["PLUGIN", "STATUS", "ELAPSED US"], &rows, &[2]));
    }
    if !built.diagnostics.is_empty() {
        out.push_str("\ndiagnostics:\n");
        for d in &built.diagnostics {
            let level = match d.level {
                Level::Info => "info",
                Level::Warn => "warn",
                Level::Error => "error",
            };
            let _ = writeln!(out, "  {level:<5} {}: {}", d.code, d.message);
        }
    }
    out
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "-" }.to_string()
}

/// A plain-text table; columns in `right` are right-aligned.
fn grid(header: &[&str], rows: &[Vec<String>], right: &[usize]) -> String {
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
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `proem plugins`: one row per plugin with id, version, hooks, the
/// capabilities it asks for, what was granted, where it comes from, and its
/// status (a load failure's reason is printed below the table).
pub fn plugins_table(set: &proem_core::plugin::PluginSet) -> String {
    let mut rows = Vec::new();
    let mut problems = String::new();
    for p in set.plugins() {
        let granted = p.grants.names();
        let (version, hooks, asks) = match &p.state {
            Ok(ready) => (
                ready.info.version.clone(),
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
                            match proem_core::plugin::GRANT_NAMES.contains(&c.as_str())
                                && !granted.contains(&c.as_str())
                            {
                                true => format!("{c} (asked, not granted)"),
                                false => c.clone(),
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                },
            ),
            Err(why) => {
                let _ = writeln!(problems, "{}: {why}", p.id);
                ("?".into(), "?".into(), "?".into())
            }
        };
        let grants = p.grants.names();
        rows.push(vec![
            p.id.clone(),
            version,
            hooks,
            asks,
            if grants.is_empty() { "-".into() } else { grants.join(",") },
            p.origin.clone(),
            format!("{}{}", p.status(), if p.required { " (required)" } else { "" }),
        ]);
    }
    if rows.is_empty() {
        return "no plugins configured\n".into();
    }
    let mut out = grid(&["ID", "VERSION", "HOOKS", "ASKS FOR", "GRANTED", "SOURCE", "STATUS"], &rows, &[]);
    if !problems.is_empty() {
        out.push('\n');
        out.push_str(&problems);
    }
    out
}
