//! `GET /metrics`: the service's counters in Prometheus' text format.
//!
//! Every series is kept in a `BTreeMap` by its labels, so the output is in
//! one order every time. Labels are agent and plugin ids, which are checked
//! names (folder names, `[[plugins]] id`), escaped anyway.

use proem_core::report::Built;
use proem_core::stable_inputs::{diff, StableInput};
use proem_core::sync::Lock;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the build-duration histogram, in seconds.
pub const BUCKETS: [f64; 12] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct Inner {
    /// (agent, outcome) → builds.
    builds: BTreeMap<(String, String), u64>,
    duration: Histogram,
    /// (agent, plugin) → (calls, failures, timeouts).
    plugins: BTreeMap<(String, String), (u64, u64, u64)>,
    /// agent → builds answered by the build memo.
    memo_hits: BTreeMap<String, u64>,
    /// (agent, outcome) → reloads.
    reloads: BTreeMap<(String, String), u64>,
    /// agent → its last build's stable hash and inputs.
    last_stable: BTreeMap<String, (String, std::sync::Arc<[StableInput]>)>,
    /// (agent, cause) → stable-hash changes.
    stable_changes: BTreeMap<(String, &'static str), u64>,
    /// status code → problem responses.
    problems: BTreeMap<u16, u64>,
}

/// The connection counters, kept apart from the lock: the accept loop
/// updates them on every connection.
#[derive(Default)]
struct Connections {
    open: AtomicU64,
    /// The most open since [`Metrics::reset_peak`].
    peak: AtomicU64,
    accepted: AtomicU64,
    refused: AtomicU64,
    accept_errors: AtomicU64,
}

/// The service's counters.
#[derive(Default)]
pub struct Metrics(Lock<Inner>, Connections);

impl Metrics {
    /// Records a build: its outcome, its time, its plugins, and whether its
    /// stable hash differs from the agent's previous build (a cache bust
    /// the operator pays for).
    pub fn build(&self, agent: &str, outcome: &str, elapsed: Duration, built: Option<&Built>, memo_hit: bool) {
        let mut m = self.0.lock();
        *m.builds.entry((agent.to_string(), outcome.to_string())).or_default() += 1;
        let secs = elapsed.as_secs_f64();
        m.duration.count += 1;
        m.duration.sum += secs;
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                m.duration.counts[i] += 1;
            }
        }
        if memo_hit {
            *m.memo_hits.entry(agent.to_string()).or_default() += 1;
        }
        let Some(built) = built else { return };
        for p in &built.plugins {
            // A remembered plugin (the build memo, or memoised answers)
            // was not called.
            if p.remembered {
                continue;
            }
            let e = m.plugins.entry((agent.to_string(), p.id.clone())).or_default();
            e.0 += 1;
            if p.status != proem_core::report::PluginStatus::Ok {
                e.1 += 1;
            }
            if p.status == proem_core::report::PluginStatus::Timeout {
                e.2 += 1;
            }
        }
        let Some((hash, inputs)) = m.last_stable.get_mut(agent) else {
            m.last_stable.insert(agent.to_string(), (built.stable_hash.clone(), built.stable_inputs.clone()));
            return;
        };
        let Some((cause, changes)) = diff(hash, inputs, &built.stable_hash, &built.stable_inputs) else { return };
        *hash = built.stable_hash.clone();
        *inputs = built.stable_inputs.clone();
        let moved: Vec<String> = changes.iter().map(|c| format!("{} {}", c.section, c.input)).collect();
        tracing::info!(agent, cause = cause.label(), inputs = ?moved, "the stable hash changed");
        *m.stable_changes.entry((agent.to_string(), cause.label())).or_default() += 1;
    }

    /// Records a reload.
    pub fn reload(&self, agent: &str, ok: bool) {
        let outcome = if ok { "ok" } else { "error" };
        *self.0.lock().reloads.entry((agent.to_string(), outcome.to_string())).or_default() += 1;
    }

    /// Records a connection accepted and served.
    pub fn connection_opened(&self) {
        let open = self.1.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.1.peak.fetch_max(open, Ordering::Relaxed);
        self.1.accepted.fetch_add(1, Ordering::Relaxed);
    }

    /// The most connections open at once since [`Metrics::reset_peak`].
    pub fn connection_peak(&self) -> u64 {
        self.1.peak.load(Ordering::Relaxed)
    }

    /// Counts the peak from the connections open now.
    pub fn reset_peak(&self) {
        self.1.peak.store(self.connections_open(), Ordering::Relaxed);
    }

    /// Records a served connection closed.
    pub fn connection_closed(&self) {
        self.1.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Connections open now.
    pub fn connections_open(&self) -> u64 {
        self.1.open.load(Ordering::Relaxed)
    }

    /// Records a connection refused because the most were open.
    pub fn connection_refused(&self) {
        self.1.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Records an accept that failed (out of file descriptors or memory).
    pub fn accept_error(&self) {
        self.1.accept_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Records an error response.
    pub fn problem(&self, status: u16) {
        *self.0.lock().problems.entry(status).or_default() += 1;
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        let m = self.0.lock();
        let mut out = String::new();
        header(
            &mut out,
            "proem_builds_total",
            "counter",
            "Builds by agent and outcome (ok, bad_request, budget, failed, timeout, panic).",
        );
        for ((agent, outcome), n) in &m.builds {
            let _ = writeln!(out, "proem_builds_total{{agent=\"{}\",outcome=\"{}\"}} {n}", esc(agent), esc(outcome));
        }
        header(&mut out, "proem_build_duration_seconds", "histogram", "Time to answer a build, queueing included.");
        for (i, bound) in BUCKETS.iter().enumerate() {
            let _ = writeln!(out, "proem_build_duration_seconds_bucket{{le=\"{bound}\"}} {}", m.duration.counts[i]);
        }
        let _ = writeln!(out, "proem_build_duration_seconds_bucket{{le=\"+Inf\"}} {}", m.duration.count);
        let _ = writeln!(out, "proem_build_duration_seconds_sum {}", m.duration.sum);
        let _ = writeln!(out, "proem_build_duration_seconds_count {}", m.duration.count);
        let plugin_series = [
            ("proem_plugin_calls_total", "Plugin calls made (memoised answers are not calls).", 0),
            (
                "proem_plugin_failures_total",
                "Plugin calls that failed (error, trap, timeout, memory, invalid output).",
                1,
            ),
            ("proem_plugin_timeouts_total", "Plugin calls stopped at their deadline.", 2),
        ];
        for (name, help, field) in plugin_series {
            header(&mut out, name, "counter", help);
            for ((agent, plugin), counts) in &m.plugins {
                let n = [counts.0, counts.1, counts.2][field];
                let _ = writeln!(out, "{name}{{agent=\"{}\",plugin=\"{}\"}} {n}", esc(agent), esc(plugin));
            }
        }
        header(&mut out, "proem_memo_hits_total", "counter", "Builds answered whole from the agent's build memo.");
        for (agent, n) in &m.memo_hits {
            let _ = writeln!(out, "proem_memo_hits_total{{agent=\"{}\"}} {n}", esc(agent));
        }
        header(
            &mut out,
            "proem_reloads_total",
            "counter",
            "Agent reloads after a config or plugin change, by outcome.",
        );
        for ((agent, outcome), n) in &m.reloads {
            let _ = writeln!(out, "proem_reloads_total{{agent=\"{}\",outcome=\"{}\"}} {n}", esc(agent), esc(outcome));
        }
        header(
            &mut out,
            "proem_stable_hash_changes_total",
            "counter",
            "Builds whose stable part differed from the agent's previous build (prompt-cache misses), by the kind of input that moved it: config, plugin, file, skills, tools, section, unknown.",
        );
        for ((agent, cause), n) in &m.stable_changes {
            let _ = writeln!(out, "proem_stable_hash_changes_total{{agent=\"{}\",cause=\"{cause}\"}} {n}", esc(agent));
        }
        header(&mut out, "proem_http_problems_total", "counter", "Error responses by status code.");
        for (status, n) in &m.problems {
            let _ = writeln!(out, "proem_http_problems_total{{status=\"{status}\"}} {n}");
        }
        let c = &self.1;
        let connection_series = [
            ("proem_connections_open", "gauge", "Connections open now.", &c.open),
            ("proem_connections_accepted_total", "counter", "Connections accepted and served.", &c.accepted),
            (
                "proem_connections_refused_total",
                "counter",
                "Connections closed at once because --max-connections were open.",
                &c.refused,
            ),
            (
                "proem_accept_errors_total",
                "counter",
                "Accepts that failed (out of file descriptors or memory), each retried after a pause.",
                &c.accept_errors,
            ),
        ];
        for (name, kind, help, value) in connection_series {
            header(&mut out, name, kind, help);
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Escapes a label value (backslash, quote, newline).
fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
