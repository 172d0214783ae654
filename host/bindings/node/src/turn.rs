//! A turn given as a JS value made into the members of `proem serve`'s JSON
//! body, value by value (`proem::binding`): no `JSON.stringify`, no text
//! parsed again. What it takes is what a JSON body holds: a plain object
//! (its prototype `Object.prototype` or null, own enumerable string keys
//! only), arrays, strings that are Unicode text, finite numbers, booleans
//! and null (an `undefined` member is an absent one). Anything else (a
//! `Map`, a `Date`, a class instance, a function, a symbol, a bigint, a
//! string holding a lone surrogate), nesting deeper than [`MAX_DEPTH`] or
//! more than [`MAX_NODES`] values is refused, naming the member as the
//! caller spelled it.
//!
//! Every value is read exactly once, by the walk that bounds it: a getter
//! cannot hand the bound a small value and the conversion a huge one. A
//! getter (or a Proxy's trap) that throws leaves no exception pending: its
//! error becomes the refusal's, so `build()` rejects rather than throws.

use napi::bindgen_prelude::*;
use napi::sys;
use proem::binding::{Members, Refusal, Spelling, MAX_DEPTH, MAX_NODES};
use serde_json::{Map, Number, Value};
use std::ptr;

/// The most characters of a thrown value's text a refusal quotes.
const MAX_THROWN_CHARS: usize = 200;

/// The members of `turn` (a plain object, or null or undefined: no member),
/// named as the body names them.
pub fn members(env: &Env, turn: Option<Unknown<'_>>) -> std::result::Result<Members, Refusal> {
    let mut reader = Reader { env: env.raw(), nodes: MAX_NODES };
    let read = match turn {
        Some(turn) => reader.turn(turn.raw()),
        None => Ok(Members::default()),
    };
    match (read, reader.take_exception()) {
        (read, None) => read,
        (Err(mut refusal), Some(thrown)) => {
            refusal.message.push_str(&format!(" (it threw {thrown})"));
            Err(refusal)
        }
        (Ok(_), Some(thrown)) => Err(Refusal::of_turn(format!("reading it threw {thrown}"))),
    }
}

/// A walk over a JS value, [`MAX_NODES`] values at most in all.
struct Reader {
    env: sys::napi_env,
    nodes: usize,
}

/// A napi call that failed (an exception may be pending: see
/// [`Reader::take_exception`]).
fn ok(status: sys::napi_status) -> std::result::Result<(), String> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err("could not be read".into())
    }
}

impl Reader {
    /// The turn's members.
    fn turn(&mut self, turn: sys::napi_value) -> std::result::Result<Members, Refusal> {
        let mut members = Members::default();
        match self.type_of(turn).map_err(Refusal::of_turn)? {
            sys::ValueType::napi_undefined | sys::ValueType::napi_null => return Ok(members),
            sys::ValueType::napi_object if self.is_plain(turn).map_err(Refusal::of_turn)? => {}
            _ => {
                let kind = self.kind(turn);
                return Err(Refusal::of_turn(format!(
                    "expected a plain object of turn fields ({{ channel: \"slack\", … }}), not {kind}"
                )));
            }
        }
        for key in self.own_keys(turn).map_err(Refusal::of_turn)? {
            let spelled = self.string(key).map_err(|why| Refusal::of_turn(format!("a member's name {why}")))?;
            let field = Spelling::Camel.to_body(&spelled);
            let member = self.property(turn, key).and_then(|value| self.value(value, MAX_DEPTH));
            match member.map_err(|why| Refusal::of_member(&spelled, &field, why))? {
                None | Some(Value::Null) => members.remove(&field),
                Some(value) => members.insert(&spelled, field, value),
            }
        }
        Ok(members)
    }

    /// `value` as JSON (`None`: undefined), at most `depth` levels deep.
    fn value(&mut self, value: sys::napi_value, depth: u32) -> std::result::Result<Option<Value>, String> {
        self.nodes = self.nodes.checked_sub(1).ok_or_else(|| format!("more than {MAX_NODES} values"))?;
        Ok(Some(match self.type_of(value)? {
            sys::ValueType::napi_undefined => return Ok(None),
            sys::ValueType::napi_null => Value::Null,
            sys::ValueType::napi_boolean => Value::Bool(self.boolean(value)?),
            sys::ValueType::napi_number => Value::Number(number(self.number(value)?)?),
            sys::ValueType::napi_string => Value::String(self.string(value)?),
            sys::ValueType::napi_object => {
                let deeper = depth.checked_sub(1).ok_or_else(|| format!("nested deeper than {MAX_DEPTH} levels"))?;
                self.object(value, deeper)?
            }
            _ => return Err(format!("{} is not a JSON value", self.kind(value))),
        }))
    }

    /// An array or a plain object, its members read at `depth`.
    fn object(&mut self, object: sys::napi_value, depth: u32) -> std::result::Result<Value, String> {
        if let Some(length) = self.array_length(object)? {
            // Counted before an element is read: a sparse array of length
            // 2³²−1 is refused, never walked.
            let charge = usize::try_from(length).unwrap_or(usize::MAX);
            self.nodes = self.nodes.checked_sub(charge).ok_or_else(|| format!("more than {MAX_NODES} values"))?;
            let mut items = Vec::with_capacity(charge);
            for index in 0..length {
                let item = self.element(object, index)?;
                items.push(self.value(item, depth)?.unwrap_or(Value::Null));
            }
            return Ok(Value::Array(items));
        }
        if !self.is_plain(object)? {
            return Err(format!("{} is not a JSON value (a plain object or an array)", self.kind(object)));
        }
        let mut map = Map::new();
        for key in self.own_keys(object)? {
            let name = self.string(key).map_err(|why| format!("a member's name {why}"))?;
            let member = self.property(object, key)?;
            if let Some(value) = self.value(member, depth)? {
                map.insert(name, value);
            }
        }
        Ok(Value::Object(map))
    }

    fn type_of(&self, value: sys::napi_value) -> std::result::Result<sys::napi_valuetype, String> {
        let mut kind = sys::ValueType::napi_undefined;
        // SAFETY: `value` is a live handle of this env's current scope.
        ok(unsafe { sys::napi_typeof(self.env, value, &mut kind) })?;
        Ok(kind)
    }

    fn boolean(&self, value: sys::napi_value) -> std::result::Result<bool, String> {
        let mut out = false;
        // SAFETY: as in `type_of`; `value` is a boolean.
        ok(unsafe { sys::napi_get_value_bool(self.env, value, &mut out) })?;
        Ok(out)
    }

    fn number(&self, value: sys::napi_value) -> std::result::Result<f64, String> {
        let mut out = 0.0;
        // SAFETY: as in `type_of`; `value` is a number.
        ok(unsafe { sys::napi_get_value_double(self.env, value, &mut out) })?;
        Ok(out)
    }

    /// A JS string as Rust text, read as UTF-16 so that a lone surrogate
    /// is refused, not replaced by U+FFFD (the prompt is UTF-8 text, and
    /// `proem serve` refuses such a body).
    fn string(&self, value: sys::napi_value) -> std::result::Result<String, String> {
        let mut length = 0;
        // SAFETY: as in `type_of`; a null buffer asks for the length.
        ok(unsafe { sys::napi_get_value_string_utf16(self.env, value, ptr::null_mut(), 0, &mut length) })?;
        let mut units = vec![0u16; length.saturating_add(1)];
        let mut written = 0;
        // SAFETY: `units` has room for `length` units and the final NUL.
        ok(unsafe {
            sys::napi_get_value_string_utf16(self.env, value, units.as_mut_ptr(), units.len(), &mut written)
        })?;
        units.truncate(written);
        String::from_utf16(&units).map_err(|_| proem::binding::NOT_UNICODE.into())
    }

    /// The length of an array (`None`: not an array).
    fn array_length(&self, value: sys::napi_value) -> std::result::Result<Option<u32>, String> {
        let mut is_array = false;
        // SAFETY: as in `type_of`.
        ok(unsafe { sys::napi_is_array(self.env, value, &mut is_array) })?;
        if !is_array {
            return Ok(None);
        }
        let mut length = 0;
        // SAFETY: as in `type_of`; `value` is an array.
        ok(unsafe { sys::napi_get_array_length(self.env, value, &mut length) })?;
        Ok(Some(length))
    }

    fn element(&self, array: sys::napi_value, index: u32) -> std::result::Result<sys::napi_value, String> {
        let mut out = ptr::null_mut();
        // SAFETY: as in `type_of`; a getter may run, and throw.
        ok(unsafe { sys::napi_get_element(self.env, array, index, &mut out) })?;
        Ok(out)
    }

    fn property(&self, object: sys::napi_value, key: sys::napi_value) -> std::result::Result<sys::napi_value, String> {
        let mut out = ptr::null_mut();
        // SAFETY: as in `type_of`; a getter may run, and throw.
        ok(unsafe { sys::napi_get_property(self.env, object, key, &mut out) })?;
        Ok(out)
    }

    /// An object's own enumerable string keys (an inherited one, say from
    /// a polluted `Object.prototype`, is not a member), at most the values
    /// left to read.
    fn own_keys(&mut self, object: sys::napi_value) -> std::result::Result<Vec<sys::napi_value>, String> {
        let mut names = ptr::null_mut();
        let filter = sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols;
        let (own, strings) = (sys::KeyCollectionMode::own_only, sys::KeyConversion::numbers_to_strings);
        // SAFETY: as in `type_of`; a Proxy's `ownKeys` trap may run, and throw.
        ok(unsafe { sys::napi_get_all_property_names(self.env, object, own, filter, strings, &mut names) })?;
        let count = self.array_length(names)?.unwrap_or(0);
        let charge = usize::try_from(count).unwrap_or(usize::MAX);
        self.nodes = self.nodes.checked_sub(charge).ok_or_else(|| format!("more than {MAX_NODES} values"))?;
        (0..count).map(|index| self.element(names, index)).collect()
    }

    /// Whether `object` is a plain object: its prototype is null, or has
    /// none itself (`Object.prototype`, of this realm or another).
    fn is_plain(&self, object: sys::napi_value) -> std::result::Result<bool, String> {
        let Some(prototype) = self.prototype(object)? else { return Ok(true) };
        Ok(self.prototype(prototype)?.is_none())
    }

    fn prototype(&self, object: sys::napi_value) -> std::result::Result<Option<sys::napi_value>, String> {
        let mut out = ptr::null_mut();
        // SAFETY: as in `type_of`; a Proxy's `getPrototypeOf` trap may run.
        ok(unsafe { sys::napi_get_prototype(self.env, object, &mut out) })?;
        Ok((self.type_of(out)? == sys::ValueType::napi_object).then_some(out))
    }

    /// What `value` is, for a refusal: `an array`, `a function`, `an
    /// object of class Map`.
    fn kind(&self, value: sys::napi_value) -> String {
        let simple = match self.type_of(value) {
            Ok(sys::ValueType::napi_object) if matches!(self.array_length(value), Ok(Some(_))) => "an array",
            Ok(sys::ValueType::napi_object) => "",
            Ok(sys::ValueType::napi_string) => "a string",
            Ok(sys::ValueType::napi_number) => "a number",
            Ok(sys::ValueType::napi_boolean) => "a boolean",
            Ok(sys::ValueType::napi_function) => "a function",
            Ok(sys::ValueType::napi_symbol) => "a symbol",
            Ok(sys::ValueType::napi_bigint) => "a bigint",
            _ => "a value that is not JSON",
        };
        if !simple.is_empty() {
            return simple.into();
        }
        match self.class_name(value) {
            Some(class) => format!("an object of class {class}"),
            None => "an object that is not a plain one (a Map, a Set, a class instance)".into(),
        }
    }

    /// The name of an object's class (`Map`, `Date`), read from its
    /// prototype's `constructor`; `None` when it cannot be read (what
    /// threw is left pending, and taken by [`members`]).
    fn class_name(&self, value: sys::napi_value) -> Option<String> {
        let prototype = self.prototype(value).ok()??;
        let constructor = self.named(prototype, c"constructor")?;
        let name = self.named(constructor, c"name")?;
        if self.type_of(name).ok()? != sys::ValueType::napi_string {
            return None;
        }
        let name: String = self.string(name).ok()?.chars().take(64).collect();
        (!name.is_empty()).then_some(name)
    }

    fn named(&self, object: sys::napi_value, name: &std::ffi::CStr) -> Option<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: as in `type_of`; `name` is NUL-terminated.
        ok(unsafe { sys::napi_get_named_property(self.env, object, name.as_ptr(), &mut out) }).ok()?;
        Some(out)
    }

    /// The exception a getter or trap threw, if one is pending: cleared
    /// (so the call returns normally), as text for the refusal.
    fn take_exception(&self) -> Option<String> {
        let mut pending = false;
        // SAFETY: `self.env` is the env of the current call.
        if unsafe { sys::napi_is_exception_pending(self.env, &mut pending) } != sys::Status::napi_ok || !pending {
            return None;
        }
        let mut thrown = ptr::null_mut();
        // SAFETY: as above; an exception is pending.
        ok(unsafe { sys::napi_get_and_clear_last_exception(self.env, &mut thrown) }).ok()?;
        let mut text = ptr::null_mut();
        // SAFETY: as above; `String(thrown)` may run its `toString`, which
        // may throw again: that one is cleared too.
        let shown = match ok(unsafe { sys::napi_coerce_to_string(self.env, thrown, &mut text) }) {
            Ok(()) => self.string(text).ok(),
            Err(_) => None,
        };
        let mut again = ptr::null_mut();
        // SAFETY: as above (clears an exception `toString` threw, if any).
        let _ = unsafe { sys::napi_get_and_clear_last_exception(self.env, &mut again) };
        let shown = shown.unwrap_or_else(|| "a value that cannot be shown".into());
        let mut quoted: String = shown.chars().take(MAX_THROWN_CHARS).collect();
        if quoted.len() < shown.len() {
            quoted.push('…');
        }
        Some(quoted)
    }
}

/// A JS number as JSON: an integer when it is one (so `budget: 3000` is a
/// whole number of tokens), else a float; NaN and the infinities refused.
fn number(n: f64) -> std::result::Result<Number, String> {
    const SAFE: f64 = 9_007_199_254_740_991.0; // 2^53 - 1
    if n.is_finite() && n.fract() == 0.0 && n.abs() <= SAFE {
        return Ok(Number::from(n as i64));
    }
    Number::from_f64(n).ok_or_else(|| format!("{n} is not a JSON number"))
}
