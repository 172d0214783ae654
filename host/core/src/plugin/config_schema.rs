//! A plugin's declared config schema: the JSON Schema of its
//! `[[plugins]] config` table, which proem checks the operator's table
//! against when it loads the plugin (once per build, before any call), and
//! `proem plugin check --config` and `proem plugin run --config` against a
//! file.
//!
//! A plugin declares it in the custom section [`SECTION`] of its binary
//! (beside `proem:api-version`): JSON, at most [`MAX_SCHEMA_BYTES`]. A
//! custom section rather than a new hook: it is a fact about the binary,
//! read without running it (so a build whose answers are all on disk checks
//! the config too), it needs no new plugin API version, and every toolchain
//! can add one (the Python and JS templates append theirs after building;
//! the Rust SDK's `register_plugin!(P, config = T)` stamps the schema
//! `#[derive(Config)]` wrote for `T`, like the API version).
//!
//! The schema comes from the plugin, so it is untrusted input: a small
//! subset of JSON Schema is understood ([`KEYWORDS`]; annotations such as
//! `title`, `description`, `default`, `examples` and `$schema` are
//! ignored), and anything else is refused when the plugin loads, naming
//! the keyword and where it is. No `$ref`, no combinators, no patterns: so
//! checking a value costs at most one visit per (value node, schema node)
//! pair, and a schema is bounded in bytes, depth ([`MAX_DEPTH`]) and nodes
//! ([`MAX_NODES`]).

use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The custom section a plugin's config schema is in.
pub const SECTION: &str = "proem:config-schema";
/// The largest schema read.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// The deepest a schema nests (schemas within schemas).
pub const MAX_DEPTH: usize = 16;
/// The most schemas within one schema, itself included.
pub const MAX_NODES: usize = 512;
/// The most problems reported for one config.
pub const MAX_PROBLEMS: usize = 8;

/// The keywords understood; [`ANNOTATIONS`] are ignored, anything else is
/// refused.
pub const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
];
/// Keywords that say something to people only.
pub const ANNOTATIONS: &[&str] = &["title", "description", "default", "examples", "$schema", "$comment", "$id"];

/// A checked schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    types: Option<Vec<Type>>,
    properties: BTreeMap<String, Schema>,
    required: Vec<String>,
    /// `None`: any; `Some(None)`: none (false); `Some(Some(s))`: each by `s`.
    additional: Option<Option<Box<Schema>>>,
    items: Option<Box<Schema>>,
    allowed: Option<Allowed>,
    minimum: Option<serde_json::Number>,
    maximum: Option<serde_json::Number>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
}

/// The values an `enum` (or `const`) admits: the list, to show, and each
/// value's JSON text, to look a config value up by. A lookup costs the
/// value's size, whatever the list's length: a config of many values
/// checked against a long list stays linear in the config.
#[derive(Debug, Clone, PartialEq)]
struct Allowed {
    values: Vec<Value>,
    texts: std::collections::BTreeSet<String>,
}

impl Allowed {
    fn new(values: Vec<Value>) -> Self {
        let texts = values.iter().map(canonical).collect();
        Allowed { values, texts }
    }

    /// Equal to one of the values as JSON Schema defines equality: numbers
    /// by value (`1`, `1.0` and `1e0` are one value), objects whatever
    /// their keys' order, each compared through its [`canonical`] text.
    fn admits(&self, value: &Value) -> bool {
        self.texts.contains(&canonical(value))
    }
}

/// One text per JSON value as JSON Schema compares them: an integral
/// number written as an integer (`1.0` → `1`, `-0.0` → `0`, `1e3` →
/// `1000`) where it fits 128 bits, any other number as serde_json writes
/// it, object keys in order.
fn canonical(value: &Value) -> String {
    match value {
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 1.7e38 => (f as i128).to_string(),
            _ => n.to_string(),
        },
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            let members: Vec<String> =
                members.iter().map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), canonical(v))).collect();
            format!("{{{}}}", members.join(","))
        }
        other => other.to_string(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Type {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
    Null,
}

impl Type {
    fn parse(name: &str) -> Option<Type> {
        Some(match name {
            "object" => Type::Object,
            "array" => Type::Array,
            "string" => Type::String,
            "integer" => Type::Integer,
            "number" => Type::Number,
            "boolean" => Type::Boolean,
            "null" => Type::Null,
            _ => return None,
        })
    }

    /// The `type` keyword at `at`: one type name or a list of them.
    fn list(types: &Value, at: &str) -> Result<Vec<Type>, String> {
        let names: Vec<&Value> = match types {
            Value::Array(list) => list.iter().collect(),
            one => vec![one],
        };
        let parsed: Option<Vec<Type>> = names.iter().map(|n| n.as_str().and_then(Type::parse)).collect();
        parsed.ok_or_else(|| {
            format!("{at}/type: a type name (object, array, string, integer, number, boolean, null) or a list of them")
        })
    }

    fn of(value: &Value) -> &'static str {
        match value {
            Value::Object(_) => "an object",
            Value::Array(_) => "an array",
            Value::String(_) => "a string",
            Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
            Value::Number(_) => "a number",
            Value::Bool(_) => "a boolean",
            Value::Null => "null",
        }
    }

    fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Type::Object, Value::Object(_)) | (Type::Array, Value::Array(_)) | (Type::String, Value::String(_)) => {
                true
            }
            (Type::Boolean, Value::Bool(_)) | (Type::Null, Value::Null) | (Type::Number, Value::Number(_)) => true,
            (Type::Integer, Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Type::Object => "object",
            Type::Array => "array",
            Type::String => "string",
            Type::Integer => "integer",
            Type::Number => "number",
            Type::Boolean => "boolean",
            Type::Null => "null",
        }
    }
}

impl Schema {
    /// Parses a schema from the section's bytes, or says what is wrong and
    /// where (a JSON pointer into the schema).
    pub fn parse(bytes: &[u8]) -> Result<Schema, String> {
        if bytes.len() > MAX_SCHEMA_BYTES {
            return Err(format!("{} bytes, over the {MAX_SCHEMA_BYTES} byte limit", bytes.len()));
        }
        // serde_json refuses nesting past 128 levels on its own; the schema
        // walk below stops at MAX_DEPTH schemas.
        let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        let mut nodes = 0usize;
        Schema::of(&value, "", 0, &mut nodes)
    }

    /// The schema at `at` (a JSON pointer), `depth` schemas down; `nodes`
    /// counts the schemas read so far.
    fn of(value: &Value, at: &str, depth: usize, nodes: &mut usize) -> Result<Schema, String> {
        let object = Schema::enter(value, at, depth, nodes)?;
        let child = |key: &str, value: &Value, nodes: &mut usize| {
            Schema::of(value, &format!("{at}/{}", pointer_escape(key)), depth + 1, nodes)
        };
        let mut schema = Schema {
            types: None,
            properties: BTreeMap::new(),
            required: Vec::new(),
            additional: None,
            items: None,
            allowed: None,
            minimum: None,
            maximum: None,
            min_length: None,
            max_length: None,
            min_items: None,
            max_items: None,
        };
        schema.types = object.get("type").map(|types| Type::list(types, at)).transpose()?;
        if let Some(properties) = object.get("properties") {
            let properties = properties.as_object().ok_or_else(|| format!("{at}/properties: an object of schemas"))?;
            for (name, value) in properties {
                let sub = Schema::of(value, &format!("{at}/properties/{}", pointer_escape(name)), depth + 1, nodes)?;
                schema.properties.insert(name.clone(), sub);
            }
        }
        if let Some(required) = object.get("required") {
            let names: Option<Vec<String>> =
                required.as_array().and_then(|list| list.iter().map(|n| n.as_str().map(str::to_string)).collect());
            schema.required = names.ok_or_else(|| format!("{at}/required: a list of property names"))?;
        }
        match object.get("additionalProperties") {
            None => {}
            Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => schema.additional = Some(None),
            Some(value) => schema.additional = Some(Some(Box::new(child("additionalProperties", value, nodes)?))),
        }
        if let Some(items) = object.get("items") {
            schema.items = Some(Box::new(child("items", items, nodes)?));
        }
        if let Some(allowed) = object.get("enum") {
            let values = allowed.as_array().cloned().ok_or_else(|| format!("{at}/enum: a list of values"))?;
            schema.allowed = Some(Allowed::new(values));
        }
        if let Some(only) = object.get("const") {
            schema.allowed = Some(Allowed::new(vec![only.clone()]));
        }
        schema.read_bounds(object, at)?;
        Ok(schema)
    }

    /// Counts the schema at `at` against [`MAX_DEPTH`] and [`MAX_NODES`]
    /// and returns its object, whose keys are all known keywords or
    /// annotations.
    fn enter<'v>(
        value: &'v Value,
        at: &str,
        depth: usize,
        nodes: &mut usize,
    ) -> Result<&'v serde_json::Map<String, Value>, String> {
        let here = if at.is_empty() { "/" } else { at };
        if depth >= MAX_DEPTH {
            return Err(format!("{here}: nested deeper than {MAX_DEPTH} schemas"));
        }
        *nodes += 1;
        if *nodes > MAX_NODES {
            return Err(format!("{here}: more than {MAX_NODES} schemas in all"));
        }
        let object = value.as_object().ok_or_else(|| format!("{here}: a schema is a JSON object"))?;
        for key in object.keys() {
            if !KEYWORDS.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()) {
                return Err(format!(
                    "{here}: `{}` is not supported by proem (supported: {})",
                    crate::plugin::hooks::label(key, 60),
                    KEYWORDS.join(", ")
                ));
            }
        }
        Ok(object)
    }

    /// Reads the numeric bounds (`minimum`, `maximum`, `minLength`,
    /// `maxLength`, `minItems`, `maxItems`) of the schema `object` at `at`.
    fn read_bounds(&mut self, object: &serde_json::Map<String, Value>, at: &str) -> Result<(), String> {
        let number = |key: &str| -> Result<Option<serde_json::Number>, String> {
            object.get(key).map(|v| v.as_number().cloned().ok_or_else(|| format!("{at}/{key}: a number"))).transpose()
        };
        let count = |key: &str| -> Result<Option<u64>, String> {
            object.get(key).map(|v| v.as_u64().ok_or_else(|| format!("{at}/{key}: a whole number"))).transpose()
        };
        self.minimum = number("minimum")?;
        self.maximum = number("maximum")?;
        self.min_length = count("minLength")?;
        self.max_length = count("maxLength")?;
        self.min_items = count("minItems")?;
        self.max_items = count("maxItems")?;
        Ok(())
    }

    /// Checks `value` (a config as JSON); each problem names where in the
    /// config (a dotted key path, `config` for the table itself) and where
    /// in the schema (a JSON pointer): at most [`MAX_PROBLEMS`].
    pub fn check(&self, value: &Value) -> Vec<Problem> {
        let mut problems = Vec::new();
        self.check_at(value, "config", "", &mut problems);
        problems
    }

    fn check_at(&self, value: &Value, at: &str, schema_at: &str, out: &mut Vec<Problem>) {
        if out.len() >= MAX_PROBLEMS {
            return;
        }
        let mut say = |what: String, keyword: &str| {
            if out.len() < MAX_PROBLEMS {
                out.push(Problem { at: at.to_string(), schema: format!("{schema_at}/{keyword}"), what });
            }
        };
        if let Some(types) = &self.types {
            if !types.iter().any(|t| t.admits(value)) {
                let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
                return say(format!("is {}, where the plugin takes {}", Type::of(value), names.join(" or ")), "type");
            }
        }
        if let Some(allowed) = &self.allowed {
            if !allowed.admits(value) {
                let shown: Vec<String> =
                    allowed.values.iter().take(8).map(|v| crate::text::one_line(&v.to_string(), 60)).collect();
                say(
                    format!("is {}, not one of {}", crate::text::one_line(&value.to_string(), 60), shown.join(", ")),
                    "enum",
                );
            }
        }
        match value {
            Value::Number(n) => {
                if let Some(min) = self.minimum.as_ref().filter(|min| compare(n, min).is_none_or(Ordering::is_lt)) {
                    say(format!("is {n}, under the minimum {min}"), "minimum");
                }
                if let Some(max) = self.maximum.as_ref().filter(|max| compare(n, max).is_none_or(Ordering::is_gt)) {
                    say(format!("is {n}, over the maximum {max}"), "maximum");
                }
            }
            Value::String(s) => {
                let chars = s.chars().count() as u64;
                if self.min_length.is_some_and(|min| chars < min) {
                    say(
                        format!("has {chars} characters, fewer than {}", self.min_length.unwrap_or_default()),
                        "minLength",
                    );
                }
                if self.max_length.is_some_and(|max| chars > max) {
                    say(
                        format!("has {chars} characters, more than {}", self.max_length.unwrap_or_default()),
                        "maxLength",
                    );
                }
            }
            Value::Array(items) => {
                let n = items.len() as u64;
                if self.min_items.is_some_and(|min| n < min) {
                    say(format!("has {n} items, fewer than {}", self.min_items.unwrap_or_default()), "minItems");
                }
                if self.max_items.is_some_and(|max| n > max) {
                    say(format!("has {n} items, more than {}", self.max_items.unwrap_or_default()), "maxItems");
                }
                if let Some(each) = &self.items {
                    for (i, item) in items.iter().enumerate() {
                        each.check_at(item, &format!("{at}[{i}]"), &format!("{schema_at}/items"), out);
                    }
                }
            }
            Value::Object(map) => self.check_object(map, at, schema_at, out),
            _ => {}
        }
    }

    fn check_object(&self, map: &Map<String, Value>, at: &str, schema_at: &str, out: &mut Vec<Problem>) {
        for name in &self.required {
            if !map.contains_key(name) && out.len() < MAX_PROBLEMS {
                out.push(Problem {
                    at: format!("{at}.{}", crate::plugin::hooks::label(name, 60)),
                    schema: format!("{schema_at}/required"),
                    what: "is required, and not set".into(),
                });
            }
        }
        for (name, item) in map {
            let item_at = format!("{at}.{name}");
            match (self.properties.get(name), &self.additional) {
                (Some(schema), _) => {
                    schema.check_at(item, &item_at, &format!("{schema_at}/properties/{}", pointer_escape(name)), out)
                }
                (None, Some(None)) => {
                    if out.len() < MAX_PROBLEMS {
                        // The names are the plugin's: shown on one clean line each.
                        let known: Vec<String> =
                            self.properties.keys().take(20).map(|name| crate::text::one_line(name, 60)).collect();
                        out.push(Problem {
                            at: item_at,
                            schema: format!("{schema_at}/additionalProperties"),
                            what: format!("is not a setting of this plugin (it takes: {})", known.join(", ")),
                        });
                    }
                }
                (None, Some(Some(schema))) => {
                    schema.check_at(item, &item_at, &format!("{schema_at}/additionalProperties"), out)
                }
                (None, None) => {}
            }
        }
    }
}

/// One way a config does not match its plugin's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where in the config: `config`, `config.note`, `config.list[2]`.
    pub at: String,
    /// Where in the schema: a JSON pointer to the keyword that refused it.
    pub schema: String,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} (schema {})", crate::text::one_line(&self.at, 200), self.what, self.schema)
    }
}

/// How two JSON numbers compare, exactly: integers as integers (an i64 or
/// u64 bound is not rounded to a float, so `u64::MAX` and `2^63` keep
/// their place), a float against an integer by its whole part, then its
/// fraction. `None` only for a float that is not a number.
fn compare(a: &serde_json::Number, b: &serde_json::Number) -> Option<Ordering> {
    match (whole(a), whole(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(x), None) => float_against(b.as_f64()?, x).map(Ordering::reverse),
        (None, Some(y)) => float_against(a.as_f64()?, y),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// An integer number as i128 (a float, even a whole one, is `None`).
fn whole(n: &serde_json::Number) -> Option<i128> {
    n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))
}

/// A float against an integer: exact (the integer is within ±2^64, and a
/// float within ±2^100 has an exact whole part in i128).
fn float_against(f: f64, i: i128) -> Option<Ordering> {
    const LIMIT: f64 = 1.2676506002282294e30; // 2^100
    if f.is_nan() {
        return None;
    }
    if f.abs() >= LIMIT {
        return Some(if f > 0.0 { Ordering::Greater } else { Ordering::Less });
    }
    let whole = f.trunc() as i128;
    Some(whole.cmp(&i).then(f.fract().partial_cmp(&0.0)?))
}

/// A key as a JSON pointer token (RFC 6901), made printable.
fn pointer_escape(key: &str) -> String {
    crate::plugin::hooks::label(&key.replace('~', "~0").replace('/', "~1"), 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn schema(value: Value) -> Schema {
        Schema::parse(value.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn a_config_is_checked_against_the_subset_naming_config_and_schema_paths() {
        let s = schema(json!({
            "type": "object",
            "properties": {
                "note": {"type": "string", "maxLength": 5},
                "level": {"enum": ["low", "high"]},
                "n": {"type": "integer", "minimum": 1, "maximum": 3},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
            },
            "required": ["note"],
            "additionalProperties": false
        }));
        assert!(s.check(&json!({"note": "hi", "level": "low", "n": 2, "tags": ["a"]})).is_empty());
        let problems = s.check(&json!({"note": "too long", "level": "mid", "n": 9, "tags": ["a", 1], "x": true}));
        let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "config.level is \"mid\", not one of \"low\", \"high\" (schema /properties/level/enum)",
                "config.n is 9, over the maximum 3 (schema /properties/n/maximum)",
                "config.note has 8 characters, more than 5 (schema /properties/note/maxLength)",
                "config.tags[1] is an integer, where the plugin takes string (schema /properties/tags/items/type)",
                "config.x is not a setting of this plugin (it takes: level, n, note, tags) (schema /additionalProperties)",
            ]
        );
        let missing = s.check(&json!({}));
        assert_eq!(missing[0].to_string(), "config.note is required, and not set (schema /required)");
    }

    /// Every text of a problem is on one line with no control character,
    /// whatever the plugin's schema names and the operator's config holds
    /// (the property names listed, the values shown, the paths).
    #[test]
    fn a_problem_shows_no_control_character_from_the_schema_or_the_config() {
        let hostile = "a\u{1b}[31m\n\r\u{202e}\u{7}";
        let s = schema(json!({
            "type": "object",
            "properties": { hostile: {"enum": [hostile]}, "b": {"type": "integer"} },
            "additionalProperties": false
        }));
        for config in [json!({ hostile: "x" }), json!({ "z\u{1b}]0;t\u{7}": 1 }), json!({ "b": hostile })] {
            for problem in s.check(&config) {
                let text = problem.to_string();
                assert!(!text.chars().any(|c| c.is_control() || c == '\u{202e}'), "{text:?}");
            }
        }
    }

    #[test]
    fn a_schema_outside_the_subset_is_refused_naming_the_keyword_and_where() {
        for (bad, expected) in [
            (json!({"properties": {"a": {"$ref": "#"}}}), "/properties/a: `$ref` is not supported"),
            (json!({"oneOf": []}), "/: `oneOf` is not supported"),
            (json!({"type": "text"}), "/type: a type name"),
            (json!({"items": 3}), "/items: a schema is a JSON object"),
            (json!({"maxLength": -1}), "/maxLength: a whole number"),
            (json!([]), "/: a schema is a JSON object"),
        ] {
            let err = Schema::parse(bad.to_string().as_bytes()).unwrap_err();
            assert!(err.contains(expected), "{bad}: {err}");
        }
        assert!(Schema::parse(b"{").unwrap_err().starts_with("not JSON"));
    }

    proptest! {
        /// Whatever bytes or nesting a hostile plugin puts in its section,
        /// parsing ends with a schema or an error (never a panic or a stack
        /// overflow), bounded in depth and nodes, and checking any value
        /// against what parsed reports at most MAX_PROBLEMS problems.
        #[test]
        fn a_hostile_schema_is_bounded(
            depth in 0usize..200,
            width in 0usize..2000,
            key in "[a-z~/]{0,8}",
            bytes in proptest::collection::vec(any::<u8>(), 0..256),
        ) {
            let _ = Schema::parse(&bytes);
            let mut nested = String::from("{}");
            for _ in 0..depth {
                nested = format!("{{\"items\": {nested}}}");
            }
            let parsed = Schema::parse(nested.as_bytes());
            prop_assert_eq!(parsed.is_ok(), depth < MAX_DEPTH, "depth {}", depth);
            let wide: Map<String, Value> =
                (0..width).map(|i| (format!("{key}{i}"), json!({"type": "string"}))).collect();
            let wide = json!({"properties": wide, "additionalProperties": false});
            let parsed = Schema::parse(wide.to_string().as_bytes());
            prop_assert_eq!(parsed.is_ok(), width < MAX_NODES && wide.to_string().len() <= MAX_SCHEMA_BYTES);
            if let Ok(schema) = parsed {
                let config: Map<String, Value> = (0..width + 20).map(|i| (format!("k{i}"), json!(i))).collect();
                prop_assert!(schema.check(&Value::Object(config)).len() <= MAX_PROBLEMS);
            }
        }
    }

    /// Bounds compare exactly, however the number is written: a float
    /// rounding of `i64::MAX` or `u64::MAX` would admit 2^63 and 2^64.
    #[test]
    fn integer_bounds_compare_exactly_at_64_bits() {
        let s = schema(json!({"properties": {
            "i": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX},
            "u": {"type": "integer", "minimum": 0, "maximum": u64::MAX},
            "h": {"type": "number", "minimum": 0.5, "maximum": 2}
        }}));
        let admitted = |v: Value| s.check(&v).is_empty();
        assert!(admitted(json!({"i": i64::MAX, "u": u64::MAX, "h": 2})));
        assert!(admitted(json!({"i": i64::MIN, "u": 0, "h": 0.5})));
        assert!(admitted(json!({"i": -9_223_372_036_854_775_808.0f64, "h": 1.999})));
        for refused in [
            json!({"i": i64::MAX as u64 + 1}),
            json!({"i": 9_223_372_036_854_775_808.0f64}),
            json!({"i": -9_223_372_036_854_777_856.0f64}),
            json!({"u": 18_446_744_073_709_551_616.0f64}),
            json!({"u": -0.5}),
            json!({"u": 1e300}),
            json!({"h": 2.000001}),
            json!({"h": 0.4999}),
        ] {
            assert!(!admitted(refused.clone()), "{refused}");
        }
    }

    #[test]
    fn an_enum_lookup_is_json_schema_equality() {
        // (allowed, probe, equal as JSON Schema compares values), written
        // from the spec: numbers by value, objects whatever their order.
        let cases = [
            (json!([1]), json!(1.0), true),
            (json!([1.0]), json!(1), true),
            (json!([0]), json!(-0.0), true),
            (json!([1000]), json!(1e3), true),
            (json!([2]), json!(2.5), false),
            (json!([9_007_199_254_740_992.0f64]), json!(9_007_199_254_740_993u64), false),
            (json!([18_446_744_073_709_551_615u64]), json!(18_446_744_073_709_551_615u64), true),
            (json!([-9_223_372_036_854_775_808i64]), json!(-9.223_372_036_854_776e18), true),
            (json!([{"b": 1, "a": [1, 2.5, "x"]}]), json!({"a": [1.0, 2.5, "x"], "b": 1}), true),
            (json!([{"a": [1, 2.5, "x"]}]), json!({"a": [1, 2.5]}), false),
            (json!([[1, 2]]), json!([2, 1]), false),
            (json!(["1"]), json!(1), false),
            (json!([null]), json!(null), true),
            (json!([1e300]), json!(1e300), true),
        ];
        for (allowed, probe, equal) in cases {
            let allowed = Allowed::new(allowed.as_array().unwrap().clone());
            assert_eq!(allowed.admits(&probe), equal, "{probe} in {:?}", allowed.values);
        }
    }
}
