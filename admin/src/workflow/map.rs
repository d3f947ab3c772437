//! Map nodes (docs/workflows.md, "Map over data"): the rules a map node is saved under, the items
//! it takes from the context when it starts, and the output it ends with. Pure; the engine's
//! `workflow_map.rs` stores and fires the items.
//!
//! Items are the elements of the array a JSON Pointer (RFC 6901, as `serde_json` resolves it)
//! names in the context: a pointer, not an expression, because it only *selects* — the data
//! a map fans out over is what an earlier node produced or the start was given.

use serde_json::Value;

use super::graph::{Graph, GraphError};
use super::node::NodeKind;

/// The most items one map node runs: beyond it the node fails when it starts (the context, at
/// most 1 MiB, holds at most this many small items anyway).
pub const MAX_MAP_ITEMS: usize = 100_000;
/// The most items of one map node running at once.
pub const MAX_PARALLELISM: u32 = 1000;
/// A map node's parallelism when it names none.
pub const DEFAULT_PARALLELISM: u32 = 10;

/// A map node's parallelism (its own, else [`DEFAULT_PARALLELISM`]).
pub fn parallelism(node: &super::Node) -> u32 {
    node.parallelism.unwrap_or(DEFAULT_PARALLELISM).clamp(1, MAX_PARALLELISM)
}

/// Whether a map node hands its items' outputs on (else only their counts).
pub fn collects(node: &super::Node) -> bool {
    node.collect.unwrap_or(true)
}

impl Graph {
    /// A map node names its job and its items (a JSON Pointer) with a parallelism of 1 to
    /// [`MAX_PARALLELISM`]; `items`, `parallelism` and `collect` belong to map nodes only.
    pub(super) fn check_maps(&self) -> Result<(), GraphError> {
        for node in &self.nodes {
            let bad = |why: &str| Err(GraphError::Map(node.name.clone(), why.to_owned()));
            if node.kind != NodeKind::Map {
                if node.items.is_some() || node.parallelism.is_some() || node.collect.is_some() {
                    return bad("items, parallelism and collect are for map nodes only");
                }
                continue;
            }
            if node.job_id <= 0 {
                return bad("a map node needs the jobId of the job each item runs");
            }
            match node.items.as_deref() {
                None | Some("") => {
                    return bad("a map node needs items: a JSON Pointer into the context, e.g. /load/files");
                }
                Some(pointer) if !pointer.starts_with('/') => {
                    return bad(&format!(
                        "items {pointer:?} is not a JSON Pointer: it starts with '/', e.g. /load/files"
                    ));
                }
                Some(pointer) if pointer.len() > 1024 => return bad("items is longer than 1024 bytes"),
                Some(_) => {}
            }
            if node.parallelism.is_some_and(|p| p == 0 || p > MAX_PARALLELISM) {
                return bad(&format!("parallelism is 1 to {MAX_PARALLELISM}"));
            }
        }
        Ok(())
    }
}

/// The items at `pointer` in `context`, each as its JSON text, or why there are none to run.
pub fn items_at(context: &serde_json::Map<String, Value>, pointer: &str) -> Result<Vec<String>, String> {
    let Some((first, rest)) = pointer.strip_prefix('/').map(|p| p.split_once('/').unwrap_or((p, ""))) else {
        return Err(format!("items {pointer:?} is not a JSON Pointer"));
    };
    let key = first.replace("~1", "/").replace("~0", "~");
    let found = match context.get(&key) {
        Some(value) if rest.is_empty() => Some(value),
        Some(value) => value.pointer(&format!("/{rest}")),
        None => None,
    };
    match found {
        None => Err(format!("the context has nothing at {pointer}")),
        Some(Value::Array(items)) if items.len() > MAX_MAP_ITEMS => {
            Err(format!("{pointer} holds {} items, over the limit of {MAX_MAP_ITEMS}", items.len()))
        }
        Some(Value::Array(items)) => Ok(items.iter().map(Value::to_string).collect()),
        Some(other) => Err(format!("{pointer} is not an array but {}", kind(other))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What an item is handed as the job's parameter when the node sets none: a string item as
/// itself, anything else as its JSON text (what an upstream executor's job reads).
pub fn item_param(item: &str) -> String {
    match serde_json::from_str::<Value>(item) {
        Ok(Value::String(text)) => text,
        _ => item.to_owned(),
    }
}

/// A map's output: the items' outputs (JSON text, `None` for an item that reported none) as a
/// JSON array in item order, or `None` once it would pass `limit` bytes.
pub fn collected_output(outputs: impl IntoIterator<Item = Option<String>>, limit: usize) -> Option<String> {
    let mut text = String::from("[");
    for (n, output) in outputs.into_iter().enumerate() {
        if n > 0 {
            text.push(',');
        }
        text.push_str(output.as_deref().unwrap_or("null"));
        if text.len() + 1 > limit {
            return None;
        }
    }
    text.push(']');
    Some(text)
}

/// A map's output when it does not collect: its counts.
pub fn counted_output(total: usize, failed: usize) -> Value {
    serde_json::json!({ "items": total, "succeeded": total - failed, "failed": failed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context(value: Value) -> serde_json::Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    #[test]
    fn items_are_found_by_pointer_and_refused_with_the_reason() {
        let ctx = context(json!({"load": {"files": ["a", {"b": 1}, 3]}, "a/b": [1]}));
        assert_eq!(items_at(&ctx, "/load/files"), Ok(vec!["\"a\"".into(), "{\"b\":1}".into(), "3".into()]));
        assert_eq!(items_at(&ctx, "/a~1b"), Ok(vec!["1".into()]));
        assert_eq!(items_at(&ctx, "/load"), Err("/load is not an array but an object".into()));
        assert_eq!(items_at(&ctx, "/nope/x"), Err("the context has nothing at /nope/x".into()));
        let big = context(json!({"many": vec![0; MAX_MAP_ITEMS + 1]}));
        assert!(items_at(&big, "/many").unwrap_err().contains("over the limit of 100000"));
    }

    #[test]
    fn the_output_keeps_item_order_and_stops_at_its_limit() {
        let outputs = vec![Some("1".to_owned()), None, Some("{\"x\":2}".to_owned())];
        assert_eq!(collected_output(outputs.clone(), 100).as_deref(), Some("[1,null,{\"x\":2}]"));
        assert_eq!(collected_output(outputs, 10), None);
        assert_eq!(collected_output(Vec::new(), 10).as_deref(), Some("[]"));
        assert_eq!(item_param("\"s3://x\""), "s3://x");
        assert_eq!(item_param("{\"a\":1}"), "{\"a\":1}");
    }
}
