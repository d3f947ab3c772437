//! How a fired node run (or one attempt of a map item) ended, from its log rows: what the
//! runner stores as the run's end. Pure, so every admin settles a run alike.

use serde_json::Value;

use super::MAX_NODE_OUTPUT;
use crate::store::{RunEnd, RunLog, RunStatus};

/// How a fired run ended, from its shards' log rows: succeeded when every shard did. Its
/// output is the one the executor reported with the result, else the executor's message —
/// JSON when it parses as JSON, else a string; a broadcast gives an array of its shards' — and
/// is refused over [`MAX_NODE_OUTPUT`].
pub fn settle(logs: &[&RunLog], now_ms: i64) -> RunEnd {
    let ok = logs.iter().all(|l| l.succeeded());
    let outputs: Vec<Value> =
        logs.iter().map(|l| output_value(l.output.as_deref().or(l.handle_msg.as_deref()))).collect();
    let output = match outputs.as_slice() {
        [one] => one.clone(),
        many => Value::Array(many.to_vec()),
    };
    let text = output.to_string();
    if text.len() > MAX_NODE_OUTPUT {
        let message =
            format!("the node's output is {} bytes, over the limit of {MAX_NODE_OUTPUT}", text.len());
        return RunEnd { status: RunStatus::Failed, output: None, message: Some(message), end_ms: now_ms };
    }
    // A failure says why: the first failed shard's message, or its trigger's code when the
    // trigger itself failed (the run page and the workflow's alarm show it).
    let message = logs.iter().find(|l| !l.succeeded()).map(|l| match l.handle_msg.as_deref() {
        Some(msg) if !msg.trim().is_empty() => msg.to_owned(),
        _ if l.handle_code == 0 => format!("the trigger failed (code {})", l.trigger_code),
        _ => format!("the run failed (code {})", l.handle_code),
    });
    RunEnd {
        status: if ok { RunStatus::Succeeded } else { RunStatus::Failed },
        output: Some(text),
        message,
        end_ms: now_ms,
    }
}

fn output_value(message: Option<&str>) -> Value {
    match message.map(str::trim) {
        None | Some("") => Value::Null,
        Some(text) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())),
    }
}
