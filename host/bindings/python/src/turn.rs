//! A turn given as Python values (a dict and keywords) made into the
//! members of `proem serve`'s JSON body, value by value: no `json.dumps`,
//! no text parsed again. What it accepts is what `json.dumps` accepts and
//! the body allows (str, int, float, bool, None, list, tuple, dict with str
//! keys), plus an aware `datetime` (as RFC 3339). Anything else, a dict key
//! that is not a str, nesting deeper than [`MAX_DEPTH`] (a list that holds
//! itself) or more than [`MAX_NODES`] values is refused, naming the member.

use proem::binding::{Members, Refusal, MAX_DEPTH, MAX_NODES, NOT_UNICODE};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDateTime, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// The members of the turn `turn` (a dict, or None) with `fields` (the
/// keywords) over it; None-valued members dropped. `Err(Ok(_))` is a
/// refusal naming the member; `Err(Err(_))` a Python error to raise as it
/// is (`turn` not a dict: a `TypeError`).
pub fn members(
    turn: Option<&Bound<'_, PyAny>>,
    fields: Option<&Bound<'_, PyDict>>,
) -> Result<Members, Result<Refusal, PyErr>> {
    let mut out = Members::default();
    if let Some(turn) = turn.filter(|t| !t.is_none()) {
        let dict = turn.cast::<PyDict>().map_err(|_| {
            let kind = turn.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            Err(pyo3::exceptions::PyTypeError::new_err(format!("turn: expected a dict of turn fields, got {kind}")))
        })?;
        add(&mut out, dict).map_err(Ok)?;
    }
    if let Some(fields) = fields {
        add(&mut out, fields).map_err(Ok)?;
    }
    Ok(out)
}

/// Adds `dict`'s members to `out` (a later one replaces an earlier one; a
/// None one removes it).
fn add(out: &mut Members, dict: &Bound<'_, PyDict>) -> Result<(), Refusal> {
    for (key, value) in dict.iter() {
        let name = key_of(&key).map_err(|why| Refusal::of_turn(format!("a member's name: {why}")))?;
        if value.is_none() {
            out.remove(&name);
            continue;
        }
        let mut nodes = MAX_NODES;
        let value = convert(&value, MAX_DEPTH, &mut nodes).map_err(|why| Refusal::of_member(&name, &name, why))?;
        out.insert(&name, name.clone(), value);
    }
    Ok(())
}

/// A dict key: a str.
fn key_of(key: &Bound<'_, PyAny>) -> Result<String, String> {
    match key.cast::<PyString>() {
        Ok(s) => text(s),
        Err(_) => Err(format!("a dict key must be a str, not {}", type_name(key))),
    }
}

/// A str as Rust text; one holding a lone surrogate is refused, as the
/// Node binding refuses it ([`NOT_UNICODE`]).
fn text(s: &Bound<'_, PyString>) -> Result<String, String> {
    s.to_cow().map(|c| c.into_owned()).map_err(|_| NOT_UNICODE.into())
}

/// `value` as a JSON value, at most `depth` levels deep and `nodes` values
/// big (counted down).
fn convert(value: &Bound<'_, PyAny>, depth: u32, nodes: &mut usize) -> Result<Value, String> {
    *nodes = nodes.checked_sub(1).ok_or_else(|| format!("more than {MAX_NODES} values"))?;
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return text(s).map(Value::String);
    }
    if value.is_instance_of::<PyInt>() {
        return Ok(integer(value));
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| format!("{} is not a JSON number", f.value()));
    }
    if value.is_instance_of::<PyDateTime>() {
        return datetime(value);
    }
    let deeper = depth.checked_sub(1).ok_or_else(|| format!("nested deeper than {MAX_DEPTH} levels"))?;
    if let Ok(list) = value.cast::<PyList>() {
        return list.iter().map(|v| convert(&v, deeper, nodes)).collect::<Result<_, _>>().map(Value::Array);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return tuple.iter().map(|v| convert(&v, deeper, nodes)).collect::<Result<_, _>>().map(Value::Array);
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in dict.iter() {
            map.insert(key_of(&k)?, convert(&v, deeper, nodes)?);
        }
        return Ok(Value::Object(map));
    }
    Err(format!(
        "a {} is not a turn value (str, int, float, bool, None, list, tuple, dict, datetime)",
        type_name(value)
    ))
}

/// An int as JSON has it: exact within 64 bits, else a float (which the
/// field's own check then refuses as out of range).
fn integer(value: &Bound<'_, PyAny>) -> Value {
    if let Ok(n) = value.extract::<i64>() {
        return Value::from(n);
    }
    if let Ok(n) = value.extract::<u64>() {
        return Value::from(n);
    }
    let f = value.extract::<f64>().unwrap_or(f64::MAX);
    Number::from_f64(f).map(Value::Number).unwrap_or_else(|| Value::from(f64::MAX))
}

/// An aware datetime as RFC 3339 (`isoformat()`); a naive one is refused.
fn datetime(value: &Bound<'_, PyAny>) -> Result<Value, String> {
    let zone = value.getattr("tzinfo").map_err(|e| e.to_string())?;
    if zone.is_none() {
        return Err("a datetime needs a time zone (tzinfo), e.g. datetime.now(timezone.utc)".into());
    }
    let text = value.call_method0("isoformat").and_then(|t| t.extract::<String>()).map_err(|e| e.to_string())?;
    Ok(Value::String(text))
}

/// A value's Python type name, for a refusal.
fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "value".into())
}

/// A JSON value the renderer made, as Python objects (dict, list, str,
/// int, float, bool, None).
pub fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(members) => {
            let dict = PyDict::new(py);
            for (k, v) in members {
                dict.set_item(k, to_python(py, v)?)?;
            }
            dict.into_any()
        }
    })
}
