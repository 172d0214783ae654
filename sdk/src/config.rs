//! A plugin's typed config: [`Config`] (derive it with
//! `#[derive(proem_sdk::Config)]`), read by
//! [`Session::config_as`](crate::Session::config_as), its JSON Schema
//! stamped into the component by `register_plugin!(P, config = T)`.
//!
//! A type's schema is a constant tree ([`Schema`]) built by the derive from
//! the fields' types; [`write`] turns it into JSON in a `const fn`, so the
//! same bytes are the `proem:config-schema` custom section (at compile
//! time) and [`schema_json`] (at run time, for tests). The parser is
//! generated from the same field list, and refuses exactly what the schema
//! refuses: a value proem admitted at load always reads.
//!
//! Only the subset of JSON Schema proem checks is written: `type`,
//! `properties`, `required`, `additionalProperties: false`, `items`,
//! `minimum`, `maximum`, and `description` (from doc comments).

use serde_json::{Map, Value};

/// A type a plugin's config (or one of its settings) can be read as.
/// Derive it for a struct with named fields; it is implemented for
/// `String`, `bool`, `i8`-`i64`, `u8`-`u64`, `f64` and `Vec<T>`.
///
/// ```
/// use proem_sdk::serde_json::json;
/// use proem_sdk::{AgentContext, Config};
///
/// /// The plugin's settings.
/// #[derive(Config, Debug, PartialEq)]
/// struct Settings {
///     /// Shown in the section.
///     note: String,
///     /// Left out: `None`.
///     max: Option<u8>,
///     tags: Vec<String>,
/// }
///
/// let ctx = AgentContext::builder().config(json!({"note": "hi", "tags": ["a"]})).build();
/// assert_eq!(ctx.config_as::<Settings>(), Ok(Settings { note: "hi".into(), max: None, tags: vec!["a".into()] }));
/// let wrong = AgentContext::builder().config(json!({"note": "hi", "tags": [1]})).build();
/// let err = wrong.config_as::<Settings>().unwrap_err();
/// assert_eq!(err.to_string(), "config.tags[0]: expected a string, found 1");
/// assert!(proem_sdk::schema_json::<Settings>().starts_with(r#"{"type":"object","description":"The plugin's settings.""#));
/// ```
///
/// A field of any other type is a compile error at the field, naming it
/// and the supported types:
///
/// ```compile_fail
/// #[derive(proem_sdk::Config)]
/// struct Settings { limit: usize } // "use u32 or u64"
/// ```
/// ```compile_fail
/// #[derive(proem_sdk::Config)]
/// struct Settings { notes: std::collections::HashMap<String, String> }
/// ```
/// ```compile_fail
/// #[derive(proem_sdk::Config)]
/// struct Settings { maybe: Option<Option<String>> } // Option is for a field
/// ```
/// ```compile_fail
/// #[derive(proem_sdk::Config)]
/// struct Settings { list: Vec<Option<String>> }
/// ```
/// ```compile_fail
/// struct NotConfig;
/// #[derive(proem_sdk::Config)]
/// struct Settings { inner: NotConfig } // "`NotConfig` cannot be a config setting"
/// ```
/// ```compile_fail
/// #[derive(proem_sdk::Config)]
/// struct Settings(String); // a struct with named fields only
/// ```
/// ```compile_fail
/// #[derive(proem_sdk::Config)]
/// enum Settings { A }
/// ```
/// ```compile_fail
/// #[derive(proem_sdk::Config)]
/// struct Settings<T> { inner: T }
/// ```
///
/// So is a config type whose schema proem would not read (deeper than 16
/// schemas, more than 512 in all, over 64 KiB), where it is registered:
///
/// ```compile_fail
/// use proem_sdk::{register_plugin, Plugin};
/// #[derive(proem_sdk::Config)] struct L3 { v: Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<bool>>>>>>>>>>>>>>> }
/// #[derive(proem_sdk::Config)] struct Settings { deep: L3 } // 18 levels
/// #[derive(Default)] struct P;
/// impl Plugin for P {}
/// register_plugin!(P, config = Settings);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a config setting: it does not implement proem_sdk::Config",
    label = "a field of a #[derive(Config)] struct",
    note = "supported: String, bool, i8, i16, i32, i64, u8, u16, u32, u64, f64, Vec<T>, Option<T> (a setting that \
            may be left out) or a struct with #[derive(proem_sdk::Config)]"
)]
pub trait Config: Sized {
    /// The type's JSON Schema, as a tree (see [`schema_json`]).
    const SCHEMA: Schema;

    /// Reads `value`, found at `path` (`config`, `config.limits.max`,
    /// `config.tags[2]`), or says where and what was expected.
    fn from_config(value: &Value, path: &str) -> Result<Self, ConfigError>;
}

/// A JSON Schema in the subset proem checks, as a constant tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// `{"type": "string"}`.
    String,
    /// `{"type": "boolean"}`.
    Boolean,
    /// `{"type": "number"}`.
    Number,
    /// `{"type": "integer", "minimum": min, "maximum": max}`.
    Integer {
        /// The smallest value.
        min: i128,
        /// The largest value.
        max: i128,
    },
    /// `{"type": "array", "items": …}`.
    Array(&'static Schema),
    /// An object with exactly these properties (`additionalProperties: false`).
    Object {
        /// The struct's doc comment (empty: none).
        description: &'static str,
        /// Its fields, in declaration order.
        fields: &'static [Field],
    },
}

/// One property of a [`Schema::Object`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The property's name.
    pub name: &'static str,
    /// The field's doc comment (empty: none); it replaces the type's own.
    pub description: &'static str,
    /// Whether the config must set it (`false` for an `Option`).
    pub required: bool,
    /// The property's schema.
    pub schema: &'static Schema,
}

/// Why a config does not read as the type asked for: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where in the config: `config`, `config.note`, `config.tags[2]` (as
    /// proem's load-time check names it).
    pub path: String,
    /// What the type takes there: `a string`, `an integer from 0 to 255`.
    pub expected: String,
    /// What is there instead: its JSON (`true`, `300`, `"x"`, cut to 40
    /// characters), or `nothing`.
    pub found: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: expected {}, found {}", self.path, self.expected, self.found)
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    fn new(path: &str, expected: impl Into<String>, found: impl Into<String>) -> ConfigError {
        ConfigError { path: path.to_string(), expected: expected.into(), found: found.into() }
    }

    fn mismatch(path: &str, expected: impl Into<String>, value: &Value) -> ConfigError {
        ConfigError::new(path, expected, shown(value))
    }
}

/// A value as the errors show it: its JSON, cut to 40 characters.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// `T`'s JSON Schema as text: the bytes `register_plugin!(P, config = T)`
/// puts in the `proem:config-schema` section.
pub fn schema_json<T: Config>() -> String {
    let mut bytes = vec![0; schema_len(&T::SCHEMA)];
    write(&T::SCHEMA, "", &mut bytes, 0);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// How many schemas deep `schema` is (a field or an item one deeper than
/// its object or array; a leaf counts 1), as proem counts them against its
/// depth limit.
pub const fn schema_depth(schema: &Schema) -> usize {
    match schema {
        Schema::Array(items) => 1 + schema_depth(items),
        Schema::Object { fields, .. } => {
            let (mut deepest, mut i) = (0, 0);
            while i < fields.len() {
                let depth = schema_depth(fields[i].schema);
                if depth > deepest {
                    deepest = depth;
                }
                i += 1;
            }
            1 + deepest
        }
        _ => 1,
    }
}

/// How many schemas `schema` holds in all, itself included (one per
/// struct, field and item), as proem counts them against its limit;
/// saturating.
pub const fn schema_nodes(schema: &Schema) -> usize {
    match schema {
        Schema::Array(items) => schema_nodes(items).saturating_add(1),
        Schema::Object { fields, .. } => {
            let (mut total, mut i) = (1usize, 0);
            while i < fields.len() {
                total = total.saturating_add(schema_nodes(fields[i].schema));
                i += 1;
            }
            total
        }
        _ => 1,
    }
}

/// The length of `schema`'s JSON text.
pub const fn schema_len(schema: &Schema) -> usize {
    write(schema, "", &mut [], 0)
}

/// `schema`'s JSON text in an array of exactly its length (`N` is
/// [`schema_len`]), for a `#[link_section]` static.
pub const fn schema_bytes<const N: usize>(schema: &Schema) -> [u8; N] {
    let mut out = [0; N];
    write(schema, "", &mut out, 0);
    out
}

/// Writes `schema` as JSON into `out` from `at` (bytes past its end are
/// counted, not written) and returns where it ends; `description`, when
/// not empty, replaces the schema's own.
pub const fn write(schema: &Schema, description: &str, out: &mut [u8], at: usize) -> usize {
    let own = match schema {
        Schema::Object { description, .. } => description,
        _ => "",
    };
    let description = if description.is_empty() { own } else { description };
    let mut at = put(out, at, b"{\"type\":\"");
    at = put(out, at, type_name(schema).as_bytes());
    at = put(out, at, b"\"");
    if !description.is_empty() {
        at = put(out, at, b",\"description\":");
        at = put_string(out, at, description);
    }
    match schema {
        Schema::Integer { min, max } => {
            at = put(out, at, b",\"minimum\":");
            at = put_integer(out, at, *min);
            at = put(out, at, b",\"maximum\":");
            at = put_integer(out, at, *max);
        }
        Schema::Array(items) => {
            at = put(out, at, b",\"items\":");
            at = write(items, "", out, at);
        }
        Schema::Object { fields, .. } => at = put_object(fields, out, at),
        Schema::String | Schema::Boolean | Schema::Number => {}
    }
    put(out, at, b"}")
}

const fn type_name(schema: &Schema) -> &'static str {
    match schema {
        Schema::String => "string",
        Schema::Boolean => "boolean",
        Schema::Number => "number",
        Schema::Integer { .. } => "integer",
        Schema::Array(_) => "array",
        Schema::Object { .. } => "object",
    }
}

/// `,"properties":{…},"required":[…],"additionalProperties":false`.
const fn put_object(fields: &[Field], out: &mut [u8], mut at: usize) -> usize {
    at = put(out, at, b",\"properties\":{");
    let mut i = 0;
    while i < fields.len() {
        if i > 0 {
            at = put(out, at, b",");
        }
        at = put_string(out, at, fields[i].name);
        at = put(out, at, b":");
        at = write(fields[i].schema, fields[i].description, out, at);
        i += 1;
    }
    at = put(out, at, b"}");
    let (mut i, mut listed) = (0, 0);
    while i < fields.len() {
        if fields[i].required {
            at = put(out, at, if listed == 0 { b",\"required\":[" } else { b"," });
            at = put_string(out, at, fields[i].name);
            listed += 1;
        }
        i += 1;
    }
    if listed > 0 {
        at = put(out, at, b"]");
    }
    put(out, at, b",\"additionalProperties\":false")
}

/// Copies `bytes` into `out` at `at`, as far as `out` goes.
const fn put(out: &mut [u8], at: usize, bytes: &[u8]) -> usize {
    let mut i = 0;
    while i < bytes.len() {
        if at + i < out.len() {
            out[at + i] = bytes[i];
        }
        i += 1;
    }
    at + bytes.len()
}

/// `text` as a JSON string: `"`, `\` and newlines escaped, other control
/// characters as `\u00XX`.
const fn put_string(out: &mut [u8], mut at: usize, text: &str) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    at = put(out, at, b"\"");
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        at = match b {
            b'"' | b'\\' => put(out, at, &[b'\\', b]),
            b'\n' => put(out, at, b"\\n"),
            0..0x20 | 0x7f => put(out, at, &[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]),
            _ => put(out, at, &[b]),
        };
        i += 1;
    }
    put(out, at, b"\"")
}

/// `n` in decimal.
const fn put_integer(out: &mut [u8], mut at: usize, n: i128) -> usize {
    if n < 0 {
        at = put(out, at, b"-");
    }
    let mut digits = [0u8; 40];
    let (mut rest, mut len) = (n.unsigned_abs(), 0);
    loop {
        digits[digits.len() - 1 - len] = b'0' + (rest % 10) as u8;
        len += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut i = digits.len() - len;
    while i < digits.len() {
        at = put(out, at, &[digits[i]]);
        i += 1;
    }
    at
}

impl Config for String {
    const SCHEMA: Schema = Schema::String;
    fn from_config(value: &Value, path: &str) -> Result<Self, ConfigError> {
        value.as_str().map(str::to_string).ok_or_else(|| ConfigError::mismatch(path, "a string", value))
    }
}

impl Config for bool {
    const SCHEMA: Schema = Schema::Boolean;
    fn from_config(value: &Value, path: &str) -> Result<Self, ConfigError> {
        value.as_bool().ok_or_else(|| ConfigError::mismatch(path, "a boolean", value))
    }
}

impl Config for f64 {
    const SCHEMA: Schema = Schema::Number;
    fn from_config(value: &Value, path: &str) -> Result<Self, ConfigError> {
        value.as_f64().ok_or_else(|| ConfigError::mismatch(path, "a number", value))
    }
}

impl<T: Config> Config for Vec<T> {
    const SCHEMA: Schema = Schema::Array(&T::SCHEMA);
    fn from_config(value: &Value, path: &str) -> Result<Self, ConfigError> {
        let items = value.as_array().ok_or_else(|| ConfigError::mismatch(path, "an array", value))?;
        items.iter().enumerate().map(|(i, item)| T::from_config(item, &format!("{path}[{i}]"))).collect()
    }
}

/// A whole number in `min..=max`: an integer, or a number with no
/// fraction (proem's schema check admits `3.0` as an integer, so this
/// does too).
fn integer(value: &Value, path: &str, min: i128, max: i128) -> Result<i128, ConfigError> {
    let expected = || format!("an integer from {min} to {max}");
    let n = match value {
        Value::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)).or_else(|| {
            // Whole numbers within ±2^64 convert exactly; the range check follows.
            n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 18_446_744_073_709_551_616.0).map(|f| f as i128)
        }),
        _ => None,
    };
    match n {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ConfigError::mismatch(path, expected(), value)),
    }
}

macro_rules! integer_config {
    ($($t:ty),*) => {$(
        impl Config for $t {
            const SCHEMA: Schema = Schema::Integer { min: <$t>::MIN as i128, max: <$t>::MAX as i128 };
            fn from_config(value: &Value, path: &str) -> Result<Self, ConfigError> {
                let n = integer(value, path, <$t>::MIN as i128, <$t>::MAX as i128)?;
                <$t>::try_from(n).map_err(|_| ConfigError::mismatch(path, "an integer in range", value))
            }
        }
    )*};
}

integer_config!(i8, i16, i32, i64, u8, u16, u32, u64);

/// What the derive calls: kept public for its generated code only.
#[doc(hidden)]
pub mod derived {
    use super::*;

    /// `value` as an object whose keys are all fields of `schema`.
    pub fn object<'v>(value: &'v Value, path: &str, schema: &Schema) -> Result<&'v Map<String, Value>, ConfigError> {
        let map = value.as_object().ok_or_else(|| ConfigError::mismatch(path, "an object (a table)", value))?;
        let Schema::Object { fields, .. } = schema else { return Ok(map) };
        match map.keys().find(|key| !fields.iter().any(|f| f.name == key.as_str())) {
            None => Ok(map),
            Some(key) => {
                let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
                let expected = format!("only the settings {}", names.join(", "));
                Err(ConfigError::new(&format!("{path}.{key}"), expected, "a setting this plugin does not have"))
            }
        }
    }

    /// The field `key` of `map`, which must be there.
    pub fn required<T: Config>(map: &Map<String, Value>, key: &str, path: &str) -> Result<T, ConfigError> {
        let at = format!("{path}.{key}");
        match map.get(key) {
            Some(value) => T::from_config(value, &at),
            None => Err(ConfigError::new(&at, "a value (the setting is required)", "nothing")),
        }
    }

    /// The field `key` of `map`, `None` when it is not there.
    pub fn optional<T: Config>(map: &Map<String, Value>, key: &str, path: &str) -> Result<Option<T>, ConfigError> {
        map.get(key).map(|value| T::from_config(value, &format!("{path}.{key}"))).transpose()
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
