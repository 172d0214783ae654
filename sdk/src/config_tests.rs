//! The derive's JSON Schema for each supported type (written here from the
//! JSON Schema spec), and `config_as` over generated configs.

use super::*;
use crate as proem_sdk;
use proptest::prelude::*;
use serde_json::json;

fn schema_of<T: Config>() -> Value {
    serde_json::from_str(&schema_json::<T>()).expect("the schema is JSON")
}

/// Limits.
#[derive(proem_sdk::Config, Debug, Clone, PartialEq)]
struct Limits {
    max: u8,
    floor: i16,
}

/// A sample config:
///   "quoted", back\slashed.
///
/// Second paragraph.
#[derive(proem_sdk::Config, Debug, Clone, PartialEq)]
struct Sample {
    /// The name.
    name: String,
    on: bool,
    n: i64,
    big: u64,
    ratio: f64,
    tags: Vec<String>,
    /// Optional limits.
    limits: Option<Limits>,
    grid: Vec<Vec<i8>>,
    nested: Limits,
    r#type: Option<u32>,
}

#[derive(proem_sdk::Config, Debug, PartialEq)]
struct Empty {}

#[test]
fn each_supported_type_has_its_json_schema() {
    let integer = |min: i128, max: i128| json!({"type": "integer", "minimum": min as f64, "maximum": max as f64});
    // Exact bounds, compared as numbers (serde_json keeps i64/u64 exact).
    let exact = |min: Value, max: Value| json!({"type": "integer", "minimum": min, "maximum": max});
    assert_eq!(schema_of::<String>(), json!({"type": "string"}));
    assert_eq!(schema_of::<bool>(), json!({"type": "boolean"}));
    assert_eq!(schema_of::<f64>(), json!({"type": "number"}));
    assert_eq!(schema_of::<u8>(), exact(json!(0), json!(255)));
    assert_eq!(schema_of::<i8>(), exact(json!(-128), json!(127)));
    assert_eq!(schema_of::<u16>(), exact(json!(0), json!(65535)));
    assert_eq!(schema_of::<i16>(), exact(json!(-32768), json!(32767)));
    assert_eq!(schema_of::<u32>(), exact(json!(0), json!(4294967295u32)));
    assert_eq!(schema_of::<i32>(), exact(json!(-2147483648i32), json!(2147483647)));
    assert_eq!(schema_of::<i64>(), exact(json!(i64::MIN), json!(i64::MAX)));
    assert_eq!(schema_of::<u64>(), exact(json!(0), json!(u64::MAX)));
    assert_ne!(schema_of::<u64>(), integer(0, 1));
    assert_eq!(schema_of::<Vec<bool>>(), json!({"type": "array", "items": {"type": "boolean"}}));
    assert_eq!(schema_of::<Empty>(), json!({"type": "object", "properties": {}, "additionalProperties": false}));
    let limits = json!({
        "type": "object",
        "properties": {
            "max": {"type": "integer", "minimum": 0, "maximum": 255},
            "floor": {"type": "integer", "minimum": -32768, "maximum": 32767}
        },
        "required": ["max", "floor"],
        "additionalProperties": false
    });
    let mut described = limits.clone();
    described["description"] = json!("Limits.");
    assert_eq!(schema_of::<Limits>(), described);
    let mut optional_limits = limits.clone();
    optional_limits["description"] = json!("Optional limits.");
    assert_eq!(
        schema_of::<Sample>(),
        json!({
            "type": "object",
            "description": "A sample config: \"quoted\", back\\slashed.\n\nSecond paragraph.",
            "properties": {
                "name": {"type": "string", "description": "The name."},
                "on": {"type": "boolean"},
                "n": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX},
                "big": {"type": "integer", "minimum": 0, "maximum": u64::MAX},
                "ratio": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "limits": optional_limits,
                "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": -128, "maximum": 127}}},
                "nested": described,
                "type": {"type": "integer", "minimum": 0, "maximum": 4294967295u32}
            },
            "required": ["name", "on", "n", "big", "ratio", "tags", "grid", "nested"],
            "additionalProperties": false
        })
    );
}

#[test]
fn the_section_text_is_compact_json_in_declaration_order() {
    assert_eq!(
        schema_json::<Limits>(),
        r#"{"type":"object","description":"Limits.","properties":{"max":{"type":"integer","minimum":0,"maximum":255},"floor":{"type":"integer","minimum":-32768,"maximum":32767}},"required":["max","floor"],"additionalProperties":false}"#
    );
    // The compile-time bytes are the same text.
    const LEN: usize = schema_len(&<Limits as Config>::SCHEMA);
    const BYTES: [u8; LEN] = schema_bytes::<LEN>(&<Limits as Config>::SCHEMA);
    assert_eq!(std::str::from_utf8(&BYTES).unwrap(), schema_json::<Limits>());
}

#[test]
fn control_characters_in_a_doc_comment_are_escaped() {
    static FIELDS: [Field; 1] =
        [Field { name: "a\u{1}\"", description: "tab\there\u{7f}", required: false, schema: &Schema::Boolean }];
    static ODD: Schema = Schema::Object { description: "", fields: &FIELDS };
    let mut bytes = vec![0; schema_len(&ODD)];
    write(&ODD, "", &mut bytes, 0);
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(value["properties"]["a\u{1}\""]["description"], json!("tab\there\u{7f}"));
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.contains(r#""a\u0001\"":{"type":"boolean","description":"tab\u0009here\u007f"}"#), "{text}");
    let mut lines = vec![0; schema_len(&Schema::Object { description: "a\nb", fields: &[] })];
    write(&Schema::Object { description: "a\nb", fields: &[] }, "", &mut lines, 0);
    assert!(String::from_utf8(lines).unwrap().contains(r#""description":"a\nb""#));
}

#[test]
fn a_config_that_does_not_fit_names_the_path_and_what_was_expected() {
    let ctx = |config: Value| crate::AgentContext::builder().config(config).build();
    let fine = json!({"max": 3.0, "floor": -2});
    assert_eq!(ctx(fine).config_as::<Limits>(), Ok(Limits { max: 3, floor: -2 }));
    for (config, shown) in [
        (json!({"max": 256, "floor": 0}), "config.max: expected an integer from 0 to 255, found 256"),
        (json!({"max": 2.5, "floor": 0}), "config.max: expected an integer from 0 to 255, found 2.5"),
        (json!({"floor": 0}), "config.max: expected a value (the setting is required), found nothing"),
        (
            json!({"max": 1, "floor": 0, "x": 1}),
            "config.x: expected only the settings max, floor, found a setting this plugin does not have",
        ),
        (json!([1]), "config: expected an object (a table), found [1]"),
    ] {
        assert_eq!(ctx(config).config_as::<Limits>().unwrap_err().to_string(), shown);
    }
    let grid = json!({"name": "a", "on": true, "n": 1, "big": u64::MAX, "ratio": 1, "tags": [], "grid": [[1], [2, "x"]],
        "nested": {"max": 1, "floor": 1}});
    let err = ctx(grid).config_as::<Sample>().unwrap_err();
    assert_eq!((err.path.as_str(), err.found.as_str()), ("config.grid[1][1]", "\"x\""));
    let long = ctx(json!({"max": "y".repeat(100), "floor": 0})).config_as::<Limits>().unwrap_err();
    assert_eq!(long.found, format!("\"{}…", "y".repeat(39)));
}

fn limits() -> impl Strategy<Value = Limits> {
    (any::<u8>(), any::<i16>()).prop_map(|(max, floor)| Limits { max, floor })
}

fn sample() -> impl Strategy<Value = Sample> {
    let scalars = (".{0,8}", any::<bool>(), any::<i64>(), any::<u64>(), -1e300f64..1e300);
    let lists = (
        proptest::collection::vec(".{0,4}", 0..4),
        proptest::option::of(limits()),
        proptest::collection::vec(proptest::collection::vec(any::<i8>(), 0..3), 0..3),
        limits(),
        proptest::option::of(any::<u32>()),
    );
    (scalars, lists).prop_map(|((name, on, n, big, ratio), (tags, limits, grid, nested, r#type))| Sample {
        name,
        on,
        n,
        big,
        ratio,
        tags,
        limits,
        grid,
        nested,
        r#type,
    })
}

fn limits_value(l: &Limits) -> Value {
    json!({"max": l.max, "floor": l.floor})
}

fn sample_value(s: &Sample) -> Value {
    let mut v = json!({"name": s.name, "on": s.on, "n": s.n, "big": s.big, "ratio": s.ratio, "tags": s.tags,
        "grid": s.grid, "nested": limits_value(&s.nested)});
    if let Some(l) = &s.limits {
        v["limits"] = limits_value(l);
    }
    if let Some(t) = s.r#type {
        v["type"] = json!(t);
    }
    v
}

fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e20f64..1e20).prop_map(Value::from),
        (-300i32..300).prop_map(|n| Value::from(n as f64)),
        edge_number(),
        ".{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("max|floor|name|x|[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Numbers at the edges of the integer types, as integers and as floats.
fn edges() -> Vec<Value> {
    vec![
        json!(i64::MIN),
        json!(i64::MAX),
        json!(i64::MAX as u64 + 1),
        json!(u64::MAX),
        json!(9_223_372_036_854_775_808.0f64),
        json!(-9_223_372_036_854_775_808.0f64),
        json!(18_446_744_073_709_551_616.0f64),
        json!(255),
        json!(256),
        json!(255.0),
        json!(-32769),
        json!(4_294_967_296u64),
        json!(-0.5),
        json!(255.5),
    ]
}

fn edge_number() -> impl Strategy<Value = Value> {
    proptest::sample::select(edges())
}

/// How one node of a config is changed.
#[derive(Debug, Clone)]
enum Change {
    Replace(Value),
    Remove,
    AddKey(String, Value),
}

/// Walks `steps` down `value` and applies `change` there; returns the
/// path of the node changed, as `ConfigError::path` writes it.
fn mutate(value: &mut Value, steps: &[usize], change: Change) -> String {
    // The walk, read first: keys and indices from the root.
    let mut walk: Vec<Result<String, usize>> = Vec::new();
    let mut node = &*value;
    for step in steps {
        node = match node {
            Value::Object(map) if !map.is_empty() => {
                let (key, next) = map.iter().nth(step % map.len()).unwrap();
                walk.push(Ok(key.clone()));
                next
            }
            Value::Array(items) if !items.is_empty() => {
                walk.push(Err(step % items.len()));
                &items[step % items.len()]
            }
            _ => break,
        };
    }
    let path: String = walk.iter().fold("config".into(), |path, seg| match seg {
        Ok(key) => format!("{path}.{key}"),
        Err(i) => format!("{path}[{i}]"),
    });
    let removed = matches!(change, Change::Remove).then(|| walk.pop()).flatten();
    let mut node = value;
    for seg in &walk {
        node = match seg {
            Ok(key) => node.get_mut(key.as_str()).unwrap(),
            Err(i) => node.get_mut(*i).unwrap(),
        };
    }
    match (change, node) {
        (Change::Replace(new), node) => *node = new,
        (Change::AddKey(key, new), Value::Object(map)) => {
            map.insert(key, new);
        }
        (Change::Remove, Value::Object(map)) => {
            if let Some(Ok(key)) = removed {
                map.remove(&key);
            }
        }
        (Change::Remove, Value::Array(items)) => {
            if let Some(Err(i)) = removed {
                items.remove(i);
            }
        }
        _ => {}
    }
    path
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        any_value().prop_map(Change::Replace),
        Just(Change::Remove),
        ("[a-z]{1,4}", any_value()).prop_map(|(k, v)| Change::AddKey(k, v)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A config written from a value of the type reads back as that value;
    /// with one node changed, it reads or the error is at that node or
    /// below it (never above, never elsewhere), and nothing panics.
    #[test]
    fn config_as_returns_the_value_or_names_the_path_that_differs(
        s in sample(),
        steps in proptest::collection::vec(any::<usize>(), 0..5),
        change in change(),
    ) {
        let ctx = |config: Value| crate::AgentContext::builder().config(config).build();
        let mut value = sample_value(&s);
        prop_assert_eq!(ctx(value.clone()).config_as::<Sample>(), Ok(s.clone()));
        let changed = mutate(&mut value, &steps, change);
        if let Err(err) = ctx(value).config_as::<Sample>() {
            let below = err.path.strip_prefix(&changed).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']));
            prop_assert!(below, "changed {} but the error is at {}", changed, err);
            prop_assert!(!err.expected.is_empty() && !err.found.is_empty());
        }
    }

    /// `config_as` reads exactly the configs proem's load-time check
    /// admits against the derived schema: so a plugin registered with
    /// `config = T` never sees a config it cannot read, nor is one it could
    /// read refused.
    #[test]
    fn config_as_reads_exactly_what_the_hosts_check_admits(
        s in sample(),
        steps in proptest::collection::vec(any::<usize>(), 0..5),
        change in change(),
    ) {
        let schema = proem_core::plugin::config_schema::Schema::parse(schema_json::<Sample>().as_bytes())
            .map_err(TestCaseError::fail)?;
        let mut value = sample_value(&s);
        mutate(&mut value, &steps, change);
        let problems = schema.check(&value);
        let read = crate::AgentContext::builder().config(value.clone()).build().config_as::<Sample>();
        prop_assert_eq!(read.is_ok(), problems.is_empty(), "{} read {:?}, host: {:?}", value, read.err(), problems);
    }

    /// Any JSON at all: a value or an error naming a path under `config`.
    #[test]
    fn config_as_never_panics_on_any_json(value in any_value()) {
        if let Err(err) = crate::AgentContext::builder().config(value).build().config_as::<Sample>() {
            prop_assert!(err.path.starts_with("config"), "{}", err);
        }
    }
}

#[derive(proem_sdk::Config, Debug, PartialEq)]
struct Numbers {
    n: Option<i64>,
    big: Option<u64>,
    small: Option<u8>,
    floor: Option<i16>,
    ratio: Option<f64>,
}

/// Every edge number in every numeric field: `config_as` and the host's
/// check agree (the edges are where a float comparison would not).
#[test]
fn at_the_integer_edges_config_as_and_the_hosts_check_agree() {
    let schema = proem_core::plugin::config_schema::Schema::parse(schema_json::<Numbers>().as_bytes()).unwrap();
    for edge in edges() {
        for field in ["n", "big", "small", "floor", "ratio"] {
            let value = json!({ field: edge });
            let read = crate::AgentContext::builder().config(value.clone()).build().config_as::<Numbers>();
            let problems = schema.check(&value);
            assert_eq!(read.is_ok(), problems.is_empty(), "{value}: read {read:?}, host {problems:?}");
        }
    }
}

/// A tree of schemas for the limit test: `Leaf`, an array of one, or an
/// object of several (leaked: `Schema` holds `'static` references).
fn leaked_schema(shape: &Shape) -> &'static Schema {
    let schema = match shape {
        Shape::Leaf => Schema::Boolean,
        Shape::Array(items) => Schema::Array(leaked_schema(items)),
        Shape::Object(fields) => {
            let fields: Vec<crate::config::Field> = fields
                .iter()
                .enumerate()
                .map(|(i, f)| crate::config::Field {
                    name: Box::leak(format!("f{i}").into_boxed_str()),
                    description: "",
                    required: false,
                    schema: leaked_schema(f),
                })
                .collect();
            Schema::Object { description: "", fields: Box::leak(fields.into_boxed_slice()) }
        }
    };
    Box::leak(Box::new(schema))
}

/// Whether `register_plugin!` admits the schema of `shape` (its depth,
/// count and size within the SDK's limits), and what the host makes of
/// the same schema's text.
fn sdk_and_host(shape: &Shape) -> (bool, Result<proem_core::plugin::config_schema::Schema, String>) {
    let schema = leaked_schema(shape);
    let mut text = vec![0u8; crate::__private::schema_len(schema)];
    crate::config::write(schema, "", &mut text, 0);
    let admitted = crate::__private::schema_depth(schema) <= crate::__private::MAX_SCHEMA_DEPTH
        && crate::__private::schema_nodes(schema) <= crate::__private::MAX_SCHEMA_NODES
        && text.len() <= crate::__private::MAX_SCHEMA_BYTES;
    (admitted, proem_core::plugin::config_schema::Schema::parse(&text))
}

#[derive(Debug, Clone)]
enum Shape {
    Leaf,
    Array(Box<Shape>),
    Object(Vec<Shape>),
}

/// Shapes around both limits: a chain of 10-19 arrays and objects (each
/// object with some leaves beside the chain) ending in an object of up to
/// 560 leaves, so depth straddles 16 and the count straddles 512.
fn shape() -> impl Strategy<Value = Shape> {
    let link = (any::<bool>(), 0usize..8);
    (proptest::collection::vec(link, 9..19), 0usize..560).prop_map(|(chain, width)| {
        let mut shape = Shape::Object(vec![Shape::Leaf; width]);
        for (array, leaves) in chain {
            shape = if array {
                Shape::Array(Box::new(shape))
            } else {
                let mut fields = vec![Shape::Leaf; leaves];
                fields.push(shape);
                Shape::Object(fields)
            };
        }
        shape
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// What `register_plugin!` refuses at compile time (deeper than
    /// MAX_SCHEMA_DEPTH, more than MAX_SCHEMA_NODES) is exactly what the
    /// host refuses at load, so a derived schema that compiles loads.
    #[test]
    fn the_compile_time_limits_are_the_hosts(shape in shape()) {
        let (admitted, loaded) = sdk_and_host(&shape);
        prop_assert_eq!(admitted, loaded.is_ok(), "{:?}", loaded.err());
    }
}

/// Both limits at their edges, each value on either side of them.
#[test]
fn at_the_edges_the_compile_time_limits_are_the_hosts() {
    let agrees = |shape: Shape| {
        let (admitted, loaded) = sdk_and_host(&shape);
        assert_eq!(admitted, loaded.is_ok(), "{shape:?}: {:?}", loaded.err());
        admitted
    };
    let admitted: Vec<bool> = (505..=520).map(|leaves| agrees(Shape::Object(vec![Shape::Leaf; leaves]))).collect();
    assert_eq!(admitted.iter().filter(|a| **a).count(), 511 - 505 + 1, "up to 511 leaves and their object");
    for depth in 12..=20 {
        let chain = (1..depth).fold(Shape::Leaf, |inner, _| Shape::Array(Box::new(inner)));
        assert_eq!(agrees(chain), depth <= 16, "a chain {depth} deep");
    }
}

/// A struct of the author's own named like a type the derive cannot take
/// (`Value`, `Box`, `HashMap`) is a setting like any other when it derives
/// Config: the derive refuses primitives by name, never a path it cannot
/// resolve.
mod own_types_named_like_std_ones {
    use crate as proem_sdk;
    use serde_json::json;

    #[derive(proem_sdk::Config, Debug, PartialEq)]
    struct Value {
        a: u8,
    }

    #[derive(proem_sdk::Config, Debug, PartialEq)]
    struct HashMap {
        b: bool,
    }

    #[derive(proem_sdk::Config, Debug, PartialEq)]
    struct Settings {
        v: Value,
        m: Option<HashMap>,
    }

    #[test]
    fn are_settings_like_any_other() {
        let ctx = crate::AgentContext::builder().config(json!({"v": {"a": 3}, "m": {"b": true}})).build();
        assert_eq!(ctx.config_as::<Settings>(), Ok(Settings { v: Value { a: 3 }, m: Some(HashMap { b: true }) }));
        let schema: serde_json::Value = serde_json::from_str(&crate::schema_json::<Settings>()).unwrap();
        assert_eq!(schema["properties"]["v"]["properties"]["a"]["maximum"], json!(255));
    }
}
