//! Gson-like lenient field decoders: upstream peers send `null`, omit fields, or quote numbers.
//!
//! Gson fills missing primitives with 0 and missing strings with `null`, and coerces between
//! numbers and numeric strings. Peers written against Gson rely on that, so a strict decoder
//! would reject real traffic. Each function here is used through `deserialize_with` together with
//! `#[serde(default)]` (which covers the "field absent" case).

use serde::de::{Deserialize, Deserializer, Error};
use serde_json::Value;

/// Decodes an integer from a JSON number, a numeric string, or `null` (→ 0).
pub(crate) fn int<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + Default,
{
    let value = Value::deserialize(deserializer)?;
    let wide: i64 = match &value {
        Value::Null => return Ok(T::default()),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i,
            // Gson truncates a fractional number assigned to an int field.
            (None, Some(f)) if f.is_finite() => f as i64,
            _ => return Err(D::Error::custom(format!("number {n} is out of range"))),
        },
        Value::String(s) if s.trim().is_empty() => return Ok(T::default()),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| D::Error::custom(format!("expected an integer, got string {s:?}")))?,
        other => return Err(D::Error::custom(format!("expected an integer, got {other}"))),
    };
    T::try_from(wide).map_err(|_| D::Error::custom(format!("integer {wide} is out of range")))
}

/// Decodes a string from a JSON string, a number or boolean (stringified), or `null` (→ "").
pub(crate) fn string<'de, D>(deserializer: D) -> Result<String, D::Error>
where
    D: Deserializer<'de>,
{
    match Value::deserialize(deserializer)? {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(D::Error::custom(format!("expected a string, got {other}"))),
    }
}

/// Decodes an optional integer, keeping "absent or null" distinguishable from 0.
pub(crate) fn opt_int<'de, D>(deserializer: D) -> Result<Option<i64>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Value::deserialize(deserializer)?;
    if value.is_null() {
        return Ok(None);
    }
    int(value).map(Some).map_err(D::Error::custom)
}

/// Decodes a boolean from `true`/`false`, `"true"`/`"false"`, 0/1, or `null` (→ false).
pub(crate) fn boolean<'de, D>(deserializer: D) -> Result<bool, D::Error>
where
    D: Deserializer<'de>,
{
    match Value::deserialize(deserializer)? {
        Value::Null => Ok(false),
        Value::Bool(b) => Ok(b),
        Value::Number(n) => Ok(n.as_i64().unwrap_or(0) != 0),
        Value::String(s) => match s.trim() {
            "true" | "1" => Ok(true),
            "false" | "0" | "" => Ok(false),
            _ => Err(D::Error::custom(format!("expected a boolean, got string {s:?}"))),
        },
        other => Err(D::Error::custom(format!("expected a boolean, got {other}"))),
    }
}
