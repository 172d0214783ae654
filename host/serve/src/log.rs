//! `proem serve --log-format json`: one JSON object a line on stderr, for
//! a log collector.
//!
//! Each line has `time` (RFC 3339, UTC), `level`, `target`, `message`,
//! the event's own fields, and the fields of the spans it happened in: a
//! request's events carry its `request_id` (the one its problem document
//! and its `X-Request-Id` header show). The filter is the usual one
//! (`PROEM_LOG`, default `warn`); request lines are `info`.

use serde_json::{Map, Value};
use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Installs the JSON logger as the process's subscriber, with the levels
/// `PROEM_LOG` (or `RUST_LOG`) names, `warn` by default. A subscriber
/// already installed stays.
pub fn init_json() {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::prelude::*;
    let filter = std::env::var("PROEM_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|v| v.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::WARN));
    let layer = tracing_subscriber::fmt::layer()
        .fmt_fields(JsonFields)
        .event_format(JsonLines)
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

/// Collects fields into a JSON object (`message` under its own name).
struct Collect<'a>(&'a mut Map<String, Value>);

impl Visit for Collect<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_string(), Value::from(format!("{value:?}")));
    }
}

/// A span's fields, kept as the text of a JSON object.
struct JsonFields;

impl<'writer> FormatFields<'writer> for JsonFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut map = Map::new();
        fields.record(&mut Collect(&mut map));
        write!(writer, "{}", Value::Object(map))
    }

    fn add_fields(
        &self,
        current: &'writer mut FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> fmt::Result {
        let mut map: Map<String, Value> = serde_json::from_str(&current.fields).unwrap_or_default();
        fields.record(&mut Collect(&mut map));
        current.fields = Value::Object(map).to_string();
        Ok(())
    }
}

/// One event, one line.
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        let mut line = Map::new();
        line.insert(
            "time".into(),
            Value::from(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        );
        line.insert("level".into(), Value::from(meta.level().as_str().to_ascii_lowercase()));
        line.insert("target".into(), Value::from(meta.target()));
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let Some(fields) = extensions.get::<FormattedFields<N>>() else { continue };
                if let Ok(Value::Object(map)) = serde_json::from_str(&fields.fields) {
                    line.extend(map);
                }
            }
        }
        event.record(&mut Collect(&mut line));
        writeln!(writer, "{}", Value::Object(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proem_core::sync::Lock;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Lines(Arc<Lock<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn each_event_is_one_json_line_with_its_spans_fields() {
        use tracing_subscriber::prelude::*;
        let lines = Lines::default();
        let writer = lines.clone();
        let layer = tracing_subscriber::fmt::layer()
            .fmt_fields(JsonFields)
            .event_format(JsonLines)
            .with_writer(move || writer.clone());
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request", request_id = "r-1");
            let _entered = span.enter();
            tracing::warn!(status = 503u64, "a \"quoted\"\nmessage");
        });
        let text = String::from_utf8(lines.0.lock().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let line: Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(line["request_id"], "r-1");
        assert_eq!(line["status"], 503);
        assert_eq!(line["level"], "warn");
        assert_eq!(line["message"], "a \"quoted\"\nmessage");
        assert!(line["time"].as_str().unwrap().ends_with('Z'));
    }
}
