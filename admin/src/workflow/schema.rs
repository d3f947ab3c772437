//! Typed step data: the JSON Schemas a node declares for its input (the context it is sent)
//! and its output, and a workflow for its start input (docs/workflows.md, "Typed step data").
//! Checked as schemas when the workflow is saved; the data is checked against them when it
//! crosses — a start before the instance exists, a node's input before its `/run` is sent, its
//! output when it arrives — and a mismatch names where, as JSON Pointers into the data and into
//! the schema.
//!
//! The validator is built without remote or file `$ref` resolution (see the workspace's
//! `Cargo.toml`): a schema naming `https://…` is refused when saved, never fetched.

use serde_json::Value;

/// The largest schema, in bytes of JSON.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// Why a schema is refused when saved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// Over [`MAX_SCHEMA_BYTES`].
    #[error("a schema has at most {MAX_SCHEMA_BYTES} bytes")]
    TooLarge,
    /// Not a JSON Schema (or one naming what cannot be resolved).
    #[error("not a valid JSON Schema at {path}: {message}")]
    Invalid {
        /// Where in the schema (a JSON Pointer; empty: the whole).
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// Checks `schema` as a JSON Schema: its size, the meta-schema of its draft, and that a
/// validator can be built from it (every `$ref` resolvable inside it).
pub fn check(schema: &Value) -> Result<(), SchemaError> {
    if serde_json::to_vec(schema).map_or(usize::MAX, |b| b.len()) > MAX_SCHEMA_BYTES {
        return Err(SchemaError::TooLarge);
    }
    jsonschema::meta::validate(schema).map_err(|e| SchemaError::Invalid {
        path: pointer(&e.instance_path().to_string()),
        message: e.masked().to_string(),
    })?;
    jsonschema::validator_for(schema).map_err(|e| SchemaError::Invalid {
        path: pointer(&e.schema_path().to_string()),
        message: e.masked().to_string(),
    })?;
    Ok(())
}

/// Where `value` breaks `schema`, if it does: the first mismatch as `at <data pointer>
/// (schema <schema pointer>): <what>`, without the data's own values (they may be sensitive).
pub fn mismatch(schema: &Value, value: &Value) -> Option<String> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(validator) => validator,
        Err(error) => return Some(format!("the schema cannot be used: {}", error.masked())),
    };
    validator.iter_errors(value).next().map(|error| {
        format!(
            "at {} (schema {}): {}",
            pointer(&error.instance_path().to_string()),
            pointer(&error.schema_path().to_string()),
            error.masked()
        )
    })
}

/// A JSON Pointer as shown: `/` for the whole document.
fn pointer(text: &str) -> String {
    if text.is_empty() { "/".to_owned() } else { text.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_is_checked_and_the_mismatch_says_where_without_the_value() {
        let schema = json!({
            "type": "object",
            "required": ["rows"],
            "properties": {"rows": {"type": "integer", "minimum": 0}, "kind": {"enum": ["x", "y"]}}
        });
        assert_eq!(check(&schema), Ok(()));
        assert_eq!(mismatch(&schema, &json!({"rows": 3, "kind": "x"})), None);
        let why = mismatch(&schema, &json!({"rows": "secret-looking-text"})).expect("a mismatch");
        assert!(why.starts_with("at /rows (schema /properties/rows/type)"), "{why}");
        assert!(!why.contains("secret-looking-text"), "the value is not repeated: {why}");
        let why = mismatch(&schema, &json!({})).expect("a mismatch");
        assert!(why.starts_with("at / (schema /required)"), "{why}");
    }

    #[test]
    fn bad_schemas_and_remote_references_are_refused() {
        let err = check(&json!({"type": "objekt"})).unwrap_err().to_string();
        assert!(err.contains("not a valid JSON Schema at /type"), "{err}");
        let err = check(&json!({"$ref": "https://example.com/schema.json"})).unwrap_err().to_string();
        assert!(err.contains("not a valid JSON Schema"), "a remote $ref is not fetched: {err}");
        let big = json!({"description": "x".repeat(MAX_SCHEMA_BYTES)});
        assert_eq!(check(&big), Err(SchemaError::TooLarge));
        assert_eq!(check(&json!({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"})), Ok(()));
    }
}
